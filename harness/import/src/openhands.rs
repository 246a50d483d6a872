//! OpenHands evaluation `output.jsonl`: one run per line, each with its event stream `history`.
//!
//! Every line becomes one session (id: `instance_id`, else `<file>#<line>`). Events:
//!
//! - the `system` action is the system prompt;
//! - a `message` action from `source: user` is a human turn (id: the event id); a `message`
//!   action from the agent without `tool_call_metadata` is an assistant message (one request);
//! - agent actions with `tool_call_metadata` are grouped by `model_response.id`: one assistant
//!   message per model response, its text the response's message content and its calls the
//!   response's `tool_calls` (or, when absent, the action's `function_name`/`tool_call_id`); the
//!   response's `usage` is the request's usage;
//! - observations with `tool_call_metadata` are the results of `tool_call_id` (an `error`
//!   observation is an error result); observations without it (errors, rejections) are user
//!   messages of the turn in progress;
//! - a `condensation` action (the condenser forgot earlier events) is a compaction point of
//!   kind [`crate::EventKind::Condensation`]; its `summary`, when it has one, the summary message;
//! - `recall` actions and observations (workspace context the prompt manager renders itself),
//!   state changes and other bookkeeping events are dropped.

use harness_core::ToolCall;
use serde_json::{Map, Value};

use crate::builder::Builder;
use crate::error::ImportError;
use crate::json::{self, json_lines, str_field};
use crate::session::{EventKind, Format, ImportedSession, Warning};
use crate::swe::openai_calls;

/// Whether a line looks like an OpenHands run.
pub(crate) fn looks_like(o: &Map<String, Value>) -> bool {
    o.get("history").and_then(Value::as_array).is_some_and(|h| {
        h.first().is_none_or(|e| {
            e.get("source").is_some() || e.get("action").is_some() || e.get("observation").is_some()
        })
    }) && (o.contains_key("instance_id")
        || o.contains_key("instruction")
        || o.contains_key("metadata"))
}

/// Imports an OpenHands `output.jsonl`.
pub(crate) fn import(file: &str, text: &str) -> Result<Vec<ImportedSession>, ImportError> {
    let (lines, mut warnings) = json_lines(file, text)?;
    let mut sessions = Vec::new();
    for l in &lines {
        let Some(history) = l.v.get("history").and_then(Value::as_array) else {
            warnings.push(Warning {
                file: file.to_string(),
                line: l.no,
                message: "skipped: a run without a `history` list".into(),
            });
            continue;
        };
        let id = str_field(&l.v, "instance_id")
            .map(str::to_string)
            .unwrap_or_else(|| format!("{file}#{}", l.no));
        let mut b = Builder::new(id, Format::OpenHands, file);
        run(&mut b, l.no, history);
        sessions.push(b.finish());
    }
    if sessions.is_empty() {
        return Err(ImportError::WrongShape {
            file: file.to_string(),
            format: Format::OpenHands,
            detail: "no line holds a run with a `history` list".into(),
        });
    }
    if let Some(first) = sessions.first_mut() {
        warnings.append(&mut first.warnings);
        first.warnings = warnings;
    }
    Ok(sessions)
}

fn run(b: &mut Builder, line: usize, history: &[Value]) {
    let mut last_response: Option<String> = None;
    for (i, e) in history.iter().enumerate() {
        let Some(e) = e.as_object() else {
            b.warn(line, format!("history[{i}]: skipped: not an object"));
            continue;
        };
        let source = str_field(e, "source").unwrap_or("");
        let tcm = e.get("tool_call_metadata").and_then(Value::as_object);
        let args = e.get("args").and_then(Value::as_object);
        if let Some(action) = str_field(e, "action") {
            let arg_text = |k: &str| args.and_then(|a| str_field(a, k)).map(str::to_string);
            match (action, tcm) {
                ("system", _) => b.set_system(
                    arg_text("content").or_else(|| str_field(e, "message").map(str::to_string)),
                ),
                ("recall", _) => {}
                ("condensation", _) => {
                    match arg_text("summary").filter(|t| !t.trim().is_empty()) {
                        Some(summary) => b.summary(summary, EventKind::Condensation),
                        None => b.compaction(EventKind::Condensation, None, None),
                    }
                    last_response = None;
                }
                ("message", None) if source == "user" => {
                    let text = arg_text("content")
                        .or_else(|| str_field(e, "message").map(str::to_string))
                        .unwrap_or_default();
                    let id = e
                        .get("id")
                        .map(|v| v.to_string().trim_matches('"').to_string());
                    b.human(text.clone(), text, id);
                    last_response = None;
                }
                (_, Some(tcm)) => {
                    let response = tcm.get("model_response");
                    let rid = response
                        .and_then(|r| r.get("id"))
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    if rid.is_some() && rid == last_response {
                        continue; // another action of the same response: its calls are in already
                    }
                    last_response = rid.clone();
                    let msg = response
                        .and_then(|r| r.get("choices"))
                        .and_then(|c| c.get(0))
                        .and_then(|c| c.get("message"));
                    let text = msg
                        .and_then(|m| m.get("content"))
                        .map(json::content_text)
                        .unwrap_or_default();
                    let mut calls = openai_calls(msg.and_then(|m| m.get("tool_calls")));
                    if calls.is_empty() {
                        if let Some(id) = str_field(tcm, "tool_call_id") {
                            calls.push(ToolCall {
                                id: id.to_string(),
                                name: str_field(tcm, "function_name").unwrap_or("").to_string(),
                                args: args
                                    .cloned()
                                    .map(Value::Object)
                                    .unwrap_or(Value::Object(Map::new())),
                            });
                        }
                    }
                    let usage = response.and_then(|r| r.get("usage")).and_then(json::usage);
                    b.assistant(text, calls, rid, usage);
                }
                (_, None) if source == "agent" => {
                    let text = arg_text("content")
                        .or_else(|| arg_text("thought"))
                        .or_else(|| str_field(e, "message").map(str::to_string))
                        .unwrap_or_default();
                    b.assistant(text, Vec::new(), None, None);
                    last_response = None;
                }
                _ => {}
            }
        } else if let Some(obs) = str_field(e, "observation") {
            let content = json::content_text(e.get("content").unwrap_or(&Value::Null));
            match (obs, tcm) {
                ("recall" | "agent_state_changed" | "null" | "agent_condensation", _) => {}
                (_, Some(tcm)) => {
                    let id = str_field(tcm, "tool_call_id").unwrap_or("").to_string();
                    b.tool_result(line, &id, content, obs == "error");
                }
                (_, None) => {
                    if !content.is_empty() {
                        b.user(content);
                    }
                }
            }
        }
    }
}
