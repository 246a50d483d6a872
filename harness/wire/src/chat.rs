//! OpenAI's Chat Completions: `messages` of `{role, content}` (`system`, `developer`, `user`,
//! `assistant` with `tool_calls`, `tool` with `tool_call_id`); answers with `choices[0].message`;
//! streams of `chat.completion.chunk` data lines ending with `[DONE]`. A unit is a message.

use harness_core::Usage;
use harness_core::{Message, Role, ToolCall};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::answer::{parse_arguments, u64_at, Answer};
use crate::sse::SseEvent;
use crate::stream::EventRole;
use crate::units::{Unit, UnitKind};
use crate::{err, raw, WireError};

/// The text of a content value: a string, or its text parts (images as `[image]`).
fn content_text(c: Option<&Value>) -> String {
    match c {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| match p.get("type").and_then(Value::as_str) {
                Some("image_url" | "input_image" | "image") => "[image]".to_string(),
                Some("input_audio") => "[audio]".to_string(),
                _ => p
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn calls_of(v: &Value) -> Result<Vec<ToolCall>, WireError> {
    let Some(list) = v.get("tool_calls").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    list.iter()
        .enumerate()
        .map(|(i, c)| {
            let f = c.get("function").unwrap_or(&Value::Null);
            Ok(ToolCall {
                id: c
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| err(format!("tool_calls[{i}] needs an `id`")))?
                    .to_string(),
                name: f
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| err(format!("tool_calls[{i}] needs a `function.name`")))?
                    .to_string(),
                args: parse_arguments(f.get("arguments").and_then(Value::as_str).unwrap_or("")),
            })
        })
        .collect()
}

/// The unit of one message.
pub(crate) fn decode_item(item: &RawValue) -> Result<Vec<Unit>, WireError> {
    let v: Value = serde_json::from_str(item.get()).map_err(|e| err(e.to_string()))?;
    let role = v
        .get("role")
        .and_then(Value::as_str)
        .ok_or_else(|| err("a message needs a `role`"))?;
    let (kind, form) = match role {
        "system" | "developer" => (UnitKind::Pinned, None),
        "user" => (UnitKind::UserText(content_text(v.get("content"))), None),
        "assistant" => (
            UnitKind::Assistant {
                text: content_text(v.get("content")),
                calls: calls_of(&v)?,
            },
            Some("function".to_string()),
        ),
        "tool" | "function" => {
            let id = v
                .get("tool_call_id")
                .or_else(|| v.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(|| err("a `tool` message needs a `tool_call_id`"))?;
            (
                UnitKind::ToolResult {
                    call_id: id.to_string(),
                    text: content_text(v.get("content")),
                    is_error: false,
                },
                Some(role.to_string()),
            )
        }
        other => {
            return Err(err(format!(
                "the role `{other}` is not one of system, developer, user, assistant, tool"
            )))
        }
    };
    Ok(vec![Unit {
        raw: item.to_owned(),
        kind,
        form,
    }])
}

pub(crate) fn calls_json(calls: &[ToolCall]) -> Value {
    Value::Array(
        calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": c.args.to_string()}})
            })
            .collect(),
    )
}

/// A core message as a Chat message.
pub(crate) fn render(m: &Message) -> Vec<Box<RawValue>> {
    let v = match m.role {
        Role::Tool => json!({
            "role": "tool", "tool_call_id": m.tool_call_id.clone().unwrap_or_default(),
            "content": m.text,
        }),
        Role::User => json!({"role": "user", "content": m.visible_text()}),
        Role::Assistant if m.tool_calls.is_empty() => {
            json!({"role": "assistant", "content": m.text})
        }
        Role::Assistant => json!({
            "role": "assistant",
            "content": if m.text.is_empty() { Value::Null } else { json!(m.text) },
            "tool_calls": calls_json(&m.tool_calls),
        }),
    };
    vec![raw(&v)]
}

fn usage_of(u: &Value) -> Usage {
    let prompt = u64_at(u, &["prompt_tokens"]);
    let cached = u64_at(u, &["prompt_tokens_details", "cached_tokens"]);
    Usage {
        input_tokens: prompt.saturating_sub(cached),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
        output_tokens: u64_at(u, &["completion_tokens"]),
    }
}

/// Reads a non-streamed answer.
pub(crate) fn read_answer(v: &Value) -> Result<Answer, WireError> {
    let choice = v
        .pointer("/choices/0")
        .ok_or_else(|| err("the answer has no `choices`"))?;
    let m = choice
        .get("message")
        .ok_or_else(|| err("the answer's choice has no `message`"))?;
    Ok(Answer {
        id: v
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        model: v
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        text: content_text(m.get("content")),
        calls: calls_of(m)?,
        usage: v.get("usage").filter(|u| !u.is_null()).map(usage_of),
        stop: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
        parts: vec![m.clone()],
    })
}

fn usage_json(u: Option<Usage>) -> Value {
    let u = u.unwrap_or_default();
    let prompt = u.prompt_tokens();
    json!({"prompt_tokens": prompt, "completion_tokens": u.output_tokens,
        "total_tokens": prompt + u.output_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens}})
}

/// Writes a non-streamed answer.
pub(crate) fn write_answer(a: &Answer) -> Value {
    let message = a
        .parts
        .first()
        .cloned()
        .unwrap_or_else(|| json!({"role": "assistant", "content": a.text}));
    json!({
        "id": a.id, "object": "chat.completion", "created": 0, "model": a.model,
        "choices": [{"index": 0, "message": message, "finish_reason": a.stop}],
        "usage": usage_json(a.usage),
    })
}

/// The answer without the named calls; `finish_reason` becomes `stop` when none is left.
pub(crate) fn without_calls(body: &Value, ids: &[String]) -> Value {
    let mut v = body.clone();
    if let Some(choice) = v.pointer_mut("/choices/0") {
        let mut left = 0;
        if let Some(m) = choice.get_mut("message").and_then(Value::as_object_mut) {
            if let Some(Value::Array(calls)) = m.get_mut("tool_calls") {
                calls.retain(|c| {
                    !c.get("id")
                        .and_then(Value::as_str)
                        .is_some_and(|id| ids.iter().any(|i| i == id))
                });
                left = calls.len();
            }
            if left == 0 {
                m.remove("tool_calls");
            }
        }
        if left == 0 && choice.get("finish_reason").and_then(Value::as_str) == Some("tool_calls") {
            choice["finish_reason"] = json!("stop");
        }
    }
    v
}

/// `body` with the text of `first` before its own.
pub(crate) fn prepend(body: &Value, first: &Value) -> Value {
    let mut v = body.clone();
    let before = content_text(first.pointer("/choices/0/message/content"));
    if let Some(m) = v.pointer_mut("/choices/0/message") {
        let after = content_text(m.get("content"));
        if !before.is_empty() {
            m["content"] = json!(format!("{before}{after}"));
        }
    }
    v
}

/// The state of a stream being read.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    id: String,
    model: String,
    text: String,
    /// (id, name, arguments so far) per tool-call index.
    calls: Vec<(String, String, String)>,
    stop: Option<String>,
    usage: Option<Usage>,
    pub(crate) done: bool,
}

impl Stream {
    pub(crate) fn decode(&mut self, data: &str) -> Result<EventRole, WireError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(EventRole::Finish);
        }
        let v: Value = serde_json::from_str(data)
            .map_err(|e| err(format!("a stream chunk is not JSON: {e}")))?;
        if let Some(e) = v.get("error") {
            return Ok(EventRole::Error(
                e.get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("an error chunk")
                    .to_string(),
            ));
        }
        if self.id.is_empty() {
            self.id = v
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            self.model = v
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
        }
        if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
            self.usage = Some(usage_of(u));
        }
        let Some(choice) = v.pointer("/choices/0") else {
            return Ok(EventRole::Finish);
        };
        let delta = choice.get("delta").cloned().unwrap_or(Value::Null);
        if let Some(t) = delta.get("content").and_then(Value::as_str) {
            self.text.push_str(t);
        }
        let mut first_call = None;
        for c in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let i = c.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
            if self.calls.len() <= i {
                self.calls.resize_with(i + 1, Default::default);
            }
            let entry = &mut self.calls[i];
            if let Some(id) = c.get("id").and_then(Value::as_str) {
                entry.0 = id.to_string();
            }
            if let Some(n) = c.pointer("/function/name").and_then(Value::as_str) {
                entry.1.push_str(n);
            }
            if let Some(a) = c.pointer("/function/arguments").and_then(Value::as_str) {
                entry.2.push_str(a);
            }
            first_call.get_or_insert(i);
        }
        if let Some(r) = choice.get("finish_reason").and_then(Value::as_str) {
            self.stop = Some(r.to_string());
            return Ok(EventRole::Finish);
        }
        Ok(match first_call {
            Some(i) => EventRole::Part(i),
            None if delta
                .get("content")
                .and_then(Value::as_str)
                .is_some_and(|t| !t.is_empty()) =>
            {
                EventRole::Text
            }
            None => EventRole::Start,
        })
    }

    pub(crate) fn call(&self, part: usize) -> Option<(&str, &str)> {
        self.calls
            .get(part)
            .filter(|c| !c.1.is_empty())
            .map(|c| (c.0.as_str(), c.1.as_str()))
    }

    pub(crate) fn answer(&self) -> Answer {
        let calls: Vec<ToolCall> = self
            .calls
            .iter()
            .map(|(id, name, args)| ToolCall {
                id: id.clone(),
                name: name.clone(),
                args: parse_arguments(args),
            })
            .collect();
        let mut message = json!({"role": "assistant", "content": self.text});
        if !calls.is_empty() {
            message["tool_calls"] = Value::Array(
                self.calls
                    .iter()
                    .map(|(id, name, args)| {
                        json!({"id": id, "type": "function",
                        "function": {"name": name, "arguments": args}})
                    })
                    .collect(),
            );
        }
        Answer {
            id: self.id.clone(),
            model: self.model.clone(),
            text: self.text.clone(),
            calls,
            usage: self.usage,
            stop: self.stop.clone(),
            parts: vec![message],
        }
    }
}

/// The chunk with its tool-call indexes mapped.
pub(crate) fn reindex(v: &mut Value, map: &dyn Fn(usize) -> usize) {
    if let Some(Value::Array(calls)) = v.pointer_mut("/choices/0/delta/tool_calls") {
        for c in calls {
            if let Some(i) = c.get("index").and_then(Value::as_u64) {
                c["index"] = json!(map(i as usize));
            }
        }
    }
}

fn chunk(a: &Answer, delta: Value, finish: Option<&str>) -> SseEvent {
    SseEvent {
        event: None,
        data: json!({"id": a.id, "object": "chat.completion.chunk", "created": 0, "model": a.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string(),
    }
}

/// A whole answer as the chunks of a stream.
pub(crate) fn write_stream(a: &Answer) -> Vec<SseEvent> {
    let mut out = vec![chunk(a, json!({"role": "assistant", "content": ""}), None)];
    if !a.text.is_empty() {
        out.push(chunk(a, json!({"content": a.text}), None));
    }
    for (i, c) in a.calls.iter().enumerate() {
        out.push(chunk(
            a,
            json!({"tool_calls": [{"index": i, "id": c.id, "type": "function",
                "function": {"name": c.name, "arguments": c.args.to_string()}}]}),
            None,
        ));
    }
    out.push(chunk(
        a,
        json!({}),
        Some(a.stop.as_deref().unwrap_or("stop")),
    ));
    if a.usage.is_some() {
        out.push(SseEvent {
            event: None,
            data: json!({"id": a.id, "object": "chat.completion.chunk", "created": 0,
                "model": a.model, "choices": [], "usage": usage_json(a.usage)})
            .to_string(),
        });
    }
    out.push(SseEvent {
        event: None,
        data: "[DONE]".into(),
    });
    out
}

/// The chunk an agent receives when the answer could not be completed.
pub(crate) fn error_event(kind: &str, message: &str) -> SseEvent {
    SseEvent {
        event: None,
        data: json!({"error": {"message": message, "type": kind, "code": null}}).to_string(),
    }
}
