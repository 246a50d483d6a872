//! mini-swe-agent `.traj.json` and SWE-agent `.traj` trajectories (one JSON document each).
//!
//! **mini-swe-agent** (`trajectory_format: mini-swe-agent-1.x`): `messages` is the chat as
//! sent. The `system` message is [`crate::ImportedSession::system`]; the first `user` message
//! (the task) is turn 1; later `user` messages (observations in the text-action format, format
//! errors) are user messages of that turn; each `assistant` message is one request, its
//! `tool_calls` (OpenAI shape) its calls and `extra.response.usage` its usage; `tool` messages are
//! results joined on `tool_call_id`; the final `exit` message (the submission, never sent) is
//! dropped.
//!
//! **SWE-agent**: `history` is the chat as the agent kept it (`trajectory` is read only when
//! there is no `history`). The `system` message is the system prompt; `is_demo` user messages
//! (demonstrations) are user messages before turn 1; the first other `user` message is turn 1 and
//! later ones (observations of the text-action format) are user messages of that turn;
//! `assistant` messages are requests (no usage is recorded), with `tool_calls` when the
//! function-calling parser was used; `tool` messages answer `tool_call_ids`. From `trajectory`,
//! each step is an assistant message (`response`) and a user message (`observation`).

use harness_core::ToolCall;
use serde_json::{Map, Value};

use crate::builder::Builder;
use crate::error::ImportError;
use crate::json::{self, str_field};
use crate::session::{Format, ImportedSession};

/// Whether a document looks like a mini-swe-agent trajectory.
pub(crate) fn looks_like_mini(o: &Map<String, Value>) -> bool {
    if str_field(o, "trajectory_format").is_some_and(|f| f.starts_with("mini-swe-agent")) {
        return true;
    }
    o.get("messages")
        .and_then(Value::as_array)
        .is_some_and(|m| !m.is_empty() && m.iter().all(|x| x.get("role").is_some()))
        && !o.contains_key("history")
}

/// Whether a document looks like a SWE-agent trajectory.
pub(crate) fn looks_like_swe(o: &Map<String, Value>) -> bool {
    let role_items = |k: &str| {
        o.get(k)
            .and_then(Value::as_array)
            .is_some_and(|h| h.first().is_some_and(|x| x.get("role").is_some()))
    };
    let steps = o
        .get("trajectory")
        .and_then(Value::as_array)
        .is_some_and(|t| {
            t.first()
                .is_some_and(|x| x.get("action").is_some() || x.get("response").is_some())
        });
    role_items("history") || (steps && !o.contains_key("messages"))
}

/// The file name without folders and the trajectory extensions.
fn stem(file: &str) -> String {
    let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
    [".traj.json", ".traj", ".json"]
        .iter()
        .find_map(|e| base.strip_suffix(e))
        .unwrap_or(base)
        .to_string()
}

/// OpenAI-shaped tool calls (`[{id, function: {name, arguments}}]`).
pub(crate) fn openai_calls(v: Option<&Value>) -> Vec<ToolCall> {
    let Some(Value::Array(calls)) = v else {
        return Vec::new();
    };
    calls
        .iter()
        .filter_map(|c| {
            let id = c.get("id").and_then(Value::as_str)?.to_string();
            let f = c.get("function");
            let name = f
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let args = match f.and_then(|f| f.get("arguments")) {
                Some(Value::String(a)) => {
                    serde_json::from_str(a).unwrap_or_else(|_| Value::String(a.clone()))
                }
                Some(other) => other.clone(),
                None => Value::Object(Map::new()),
            };
            Some(ToolCall { id, name, args })
        })
        .collect()
}

/// Imports a mini-swe-agent trajectory.
pub(crate) fn import_mini(file: &str, text: &str) -> Result<Vec<ImportedSession>, ImportError> {
    let doc = json::json_document(file, text)?;
    let wrong = |detail: &str| ImportError::WrongShape {
        file: file.to_string(),
        format: Format::MiniSweAgent,
        detail: detail.to_string(),
    };
    let o = doc
        .as_object()
        .ok_or_else(|| wrong("the document is not an object"))?;
    let messages = o
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| wrong("no `messages` list"))?;
    let id = str_field(o, "instance_id")
        .map(str::to_string)
        .unwrap_or_else(|| stem(file));
    let mut b = Builder::new(id, Format::MiniSweAgent, file);
    for (i, m) in messages.iter().enumerate() {
        let Some(m) = m.as_object() else {
            b.warn(0, format!("messages[{i}]: skipped: not an object"));
            continue;
        };
        let content = json::content_text(m.get("content").unwrap_or(&Value::Null));
        match str_field(m, "role").unwrap_or("") {
            "system" if b.is_empty() => b.set_system(Some(content)),
            "system" => b.user(content),
            "user" if b.turns() == 0 => b.human(content.clone(), content, None),
            "user" => b.user(content),
            "assistant" => {
                let calls = openai_calls(m.get("tool_calls"));
                let response = m.get("extra").and_then(|e| e.get("response"));
                let usage = response.and_then(|r| r.get("usage")).and_then(json::usage);
                let rid = response
                    .and_then(|r| r.get("id"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
                b.assistant(content, calls, rid, usage);
            }
            "tool" => {
                let call = str_field(m, "tool_call_id").unwrap_or("").to_string();
                b.tool_result(0, &call, content, false);
            }
            "exit" => {}
            other => b.warn(0, format!("messages[{i}]: skipped: unknown role `{other}`")),
        }
    }
    Ok(vec![b.finish()])
}

/// Imports a SWE-agent trajectory.
pub(crate) fn import_swe(file: &str, text: &str) -> Result<Vec<ImportedSession>, ImportError> {
    let doc = json::json_document(file, text)?;
    let wrong = |detail: &str| ImportError::WrongShape {
        file: file.to_string(),
        format: Format::SweAgent,
        detail: detail.to_string(),
    };
    let o = doc
        .as_object()
        .ok_or_else(|| wrong("the document is not an object"))?;
    let mut b = Builder::new(stem(file), Format::SweAgent, file);
    if let Some(history) = o.get("history").and_then(Value::as_array) {
        for (i, m) in history.iter().enumerate() {
            let Some(m) = m.as_object() else {
                b.warn(0, format!("history[{i}]: skipped: not an object"));
                continue;
            };
            let content = json::content_text(m.get("content").unwrap_or(&Value::Null));
            match str_field(m, "role").unwrap_or("") {
                "system" if b.is_empty() => b.set_system(Some(content)),
                "system" => b.user(content),
                "user" if json::bool_field(m, "is_demo") || b.turns() > 0 => b.user(content),
                "user" => b.human(content.clone(), content, None),
                "assistant" => {
                    let calls = openai_calls(m.get("tool_calls"));
                    b.assistant(content, calls, None, None);
                }
                "tool" => {
                    let ids = m.get("tool_call_ids").and_then(Value::as_array);
                    let id = ids
                        .and_then(|a| a.first())
                        .and_then(Value::as_str)
                        .or_else(|| str_field(m, "tool_call_id"))
                        .unwrap_or("")
                        .to_string();
                    b.tool_result(0, &id, content, false);
                }
                other => b.warn(0, format!("history[{i}]: skipped: unknown role `{other}`")),
            }
        }
    } else if let Some(steps) = o.get("trajectory").and_then(Value::as_array) {
        b.warn(
            0,
            "no `history`: read from `trajectory`, which does not record the task prompt",
        );
        for (i, st) in steps.iter().enumerate() {
            let Some(st) = st.as_object() else {
                b.warn(0, format!("trajectory[{i}]: skipped: not an object"));
                continue;
            };
            let response = str_field(st, "response")
                .or_else(|| str_field(st, "thought"))
                .unwrap_or("")
                .to_string();
            b.assistant(response, Vec::new(), None, None);
            if let Some(obs) = st.get("observation") {
                b.user(json::content_text(obs));
            }
        }
    } else {
        return Err(wrong("neither a `history` nor a `trajectory` list"));
    }
    Ok(vec![b.finish()])
}
