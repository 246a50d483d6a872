//! Anthropic's Messages API: `messages` of `{role, content}` where content is a string or a list
//! of blocks (`text`, `image`, `tool_use`, `tool_result`, `thinking`, …); answers with
//! `content` blocks; streams of `message_start`, `content_block_start` / `_delta` / `_stop`,
//! `message_delta`, `message_stop`, `ping` and `error` events. A unit is a content block.
//! Claude Code also sends `system`-role entries inside `messages`: those are pinned.

use std::borrow::Cow;

use harness_core::Usage;
use harness_core::{Message, Role, ToolCall};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::answer::{u64_at, Answer};
use crate::render::Out;
use crate::sse::SseEvent;
use crate::stream::EventRole;
use crate::units::{Side, Unit, UnitKind};
use crate::{err, raw, WireError};

/// The units of one message.
pub(crate) fn decode_item(item: &RawValue) -> Result<Vec<Unit>, WireError> {
    let v: Value = serde_json::from_str(item.get()).map_err(|e| err(e.to_string()))?;
    let role = v
        .get("role")
        .and_then(Value::as_str)
        .ok_or_else(|| err("a message needs a `role` (user or assistant)"))?;
    if role == "system" {
        return Ok(vec![Unit {
            raw: item.to_owned(),
            kind: UnitKind::Pinned,
            form: None,
        }]);
    }
    let assistant = match role {
        "user" => false,
        "assistant" => true,
        other => {
            return Err(err(format!(
                "the role `{other}` is not one of user, assistant, system"
            )))
        }
    };
    let text_unit = |text: &str, raw_block: Box<RawValue>| Unit {
        raw: raw_block,
        kind: if assistant {
            UnitKind::Assistant {
                text: text.to_string(),
                calls: Vec::new(),
            }
        } else {
            UnitKind::UserText(text.to_string())
        },
        form: None,
    };
    match v.get("content") {
        Some(Value::String(s)) => Ok(vec![text_unit(s, raw(&json!({"type": "text", "text": s})))]),
        Some(Value::Array(blocks)) => {
            let raws: Vec<Box<RawValue>> = serde_json::from_str::<RawContent>(item.get())
                .map(|c| c.content)
                .map_err(|e| err(e.to_string()))?;
            blocks
                .iter()
                .zip(raws)
                .enumerate()
                .map(|(i, (b, r))| {
                    block_unit(b, r, assistant).map_err(|e| err(format!("content[{i}]: {e}")))
                })
                .collect()
        }
        _ => Err(err("`content` must be a string or a list of blocks")),
    }
}

#[derive(serde::Deserialize)]
struct RawContent {
    content: Vec<Box<RawValue>>,
}

fn block_unit(b: &Value, r: Box<RawValue>, assistant: bool) -> Result<Unit, WireError> {
    let kind = b.get("type").and_then(Value::as_str).unwrap_or("");
    let s = |k: &str| b.get(k).and_then(Value::as_str);
    let unit = |kind: UnitKind, form: Option<&str>| Unit {
        raw: r,
        kind,
        form: form.map(str::to_string),
    };
    if assistant {
        return Ok(match kind {
            "text" => unit(
                UnitKind::Assistant {
                    text: s("text").unwrap_or("").to_string(),
                    calls: Vec::new(),
                },
                None,
            ),
            "tool_use" => {
                let id = s("id").ok_or_else(|| err("a `tool_use` block needs an `id`"))?;
                let name = s("name").ok_or_else(|| err("a `tool_use` block needs a `name`"))?;
                let call = ToolCall {
                    id: id.to_string(),
                    name: name.to_string(),
                    args: b.get("input").cloned().unwrap_or_else(|| json!({})),
                };
                unit(
                    UnitKind::Assistant {
                        text: String::new(),
                        calls: vec![call],
                    },
                    Some("tool_use"),
                )
            }
            // Thinking is the answer's thinking (a redacted block counted as its data).
            "thinking" => unit(UnitKind::Thinking(s("thinking").unwrap_or("").into()), None),
            "redacted_thinking" => unit(UnitKind::Thinking(s("data").unwrap_or("").into()), None),
            // Server tools and their results: kept, not read.
            _ => unit(
                UnitKind::Assistant {
                    text: String::new(),
                    calls: Vec::new(),
                },
                None,
            ),
        });
    }
    Ok(match kind {
        "tool_result" => {
            let id = s("tool_use_id")
                .ok_or_else(|| err("a `tool_result` block needs a `tool_use_id`"))?;
            unit(
                UnitKind::ToolResult {
                    call_id: id.to_string(),
                    text: content_text(b.get("content")),
                    is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                },
                Some("tool_result"),
            )
        }
        "text" => unit(
            UnitKind::UserText(s("text").unwrap_or("").to_string()),
            None,
        ),
        "image" => unit(UnitKind::UserText("[image]".into()), None),
        "document" => unit(UnitKind::UserText("[document]".into()), None),
        _ => unit(UnitKind::UserText(String::new()), None),
    })
}

/// The text of a tool result's content: a string, or its text blocks (images as `[image]`).
fn content_text(c: Option<&Value>) -> String {
    match c {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| match p.get("type").and_then(Value::as_str) {
                Some("image") => "[image]".to_string(),
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

/// A core message as content blocks.
pub(crate) fn render(m: &Message) -> Vec<Box<RawValue>> {
    match m.role {
        Role::Tool => {
            let mut b = json!({
                "type": "tool_result",
                "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                "content": m.text,
            });
            if m.is_error {
                b["is_error"] = Value::Bool(true);
            }
            vec![raw(&b)]
        }
        Role::User => vec![raw(&json!({"type": "text", "text": m.visible_text()}))],
        Role::Assistant => {
            let mut out = Vec::new();
            if !m.text.is_empty() || m.tool_calls.is_empty() {
                out.push(raw(&json!({"type": "text", "text": m.text})));
            }
            for c in &m.tool_calls {
                out.push(raw(&json!({
                    "type": "tool_use", "id": c.id, "name": c.name, "input": c.args,
                })));
            }
            out
        }
    }
}

/// Messages from entries: units of one side in a row become one message.
pub(crate) fn assemble<'a>(entries: Vec<Out<'a>>) -> Vec<Cow<'a, RawValue>> {
    let mut out: Vec<Cow<'a, RawValue>> = Vec::new();
    let mut open: Option<(Side, Vec<Cow<'a, RawValue>>)> = None;
    let close = |open: &mut Option<(Side, Vec<Cow<'a, RawValue>>)>,
                 out: &mut Vec<Cow<'a, RawValue>>| {
        if let Some((side, blocks)) = open.take() {
            let role = if side == Side::Assistant {
                "assistant"
            } else {
                "user"
            };
            let mut s =
                String::with_capacity(blocks.iter().map(|b| b.get().len() + 1).sum::<usize>() + 32);
            s.push_str("{\"role\":\"");
            s.push_str(role);
            s.push_str("\",\"content\":[");
            for (i, b) in blocks.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                s.push_str(b.get());
            }
            s.push_str("]}");
            if let Ok(r) = RawValue::from_string(s) {
                out.push(Cow::Owned(r));
            }
        }
    };
    for e in entries {
        match e {
            Out::Item(i) => {
                close(&mut open, &mut out);
                out.push(Cow::Borrowed(i));
            }
            Out::Unit(Side::Pinned, u) => {
                close(&mut open, &mut out);
                out.push(u);
            }
            Out::Unit(side, u) => {
                if open.as_ref().is_some_and(|(s, _)| *s != side) {
                    close(&mut open, &mut out);
                }
                open.get_or_insert_with(|| (side, Vec::new())).1.push(u);
            }
        }
    }
    close(&mut open, &mut out);
    out
}

fn usage_of(u: &Value) -> Usage {
    Usage {
        input_tokens: u64_at(u, &["input_tokens"]),
        cache_read_tokens: u64_at(u, &["cache_read_input_tokens"]),
        cache_write_tokens: u64_at(u, &["cache_creation_input_tokens"]),
        output_tokens: u64_at(u, &["output_tokens"]),
    }
}

fn answer_from_blocks(blocks: Vec<Value>) -> (String, Vec<ToolCall>, Vec<Value>) {
    let mut text = String::new();
    let mut calls = Vec::new();
    for b in &blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(b.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => calls.push(ToolCall {
                id: b
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                name: b
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                args: b.get("input").cloned().unwrap_or_else(|| json!({})),
            }),
            _ => {}
        }
    }
    (text, calls, blocks)
}

/// Reads a non-streamed answer.
pub(crate) fn read_answer(v: &Value) -> Result<Answer, WireError> {
    let blocks = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| err("the answer has no `content` list"))?
        .clone();
    let (text, calls, parts) = answer_from_blocks(blocks);
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
        text,
        calls,
        usage: v.get("usage").map(usage_of),
        stop: v
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
        parts,
    })
}

fn usage_json(u: Option<Usage>) -> Value {
    let u = u.unwrap_or_default();
    json!({
        "input_tokens": u.input_tokens,
        "cache_creation_input_tokens": u.cache_write_tokens,
        "cache_read_input_tokens": u.cache_read_tokens,
        "output_tokens": u.output_tokens,
    })
}

/// Writes a non-streamed answer.
pub(crate) fn write_answer(a: &Answer) -> Value {
    json!({
        "id": a.id, "type": "message", "role": "assistant", "model": a.model,
        "content": a.parts, "stop_reason": a.stop, "stop_sequence": null,
        "usage": usage_json(a.usage),
    })
}

fn is_dropped(b: &Value, ids: &[String]) -> bool {
    b.get("type").and_then(Value::as_str) == Some("tool_use")
        && b.get("id")
            .and_then(Value::as_str)
            .is_some_and(|id| ids.iter().any(|i| i == id))
}

/// The answer without the named calls' blocks; `stop_reason` becomes `end_turn` when no call
/// is left.
pub(crate) fn without_calls(body: &Value, ids: &[String]) -> Value {
    let mut v = body.clone();
    if let Some(Value::Array(blocks)) = v.get_mut("content") {
        blocks.retain(|b| !is_dropped(b, ids));
        let calls_left = blocks
            .iter()
            .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"));
        if !calls_left && v.get("stop_reason").and_then(Value::as_str) == Some("tool_use") {
            v["stop_reason"] = json!("end_turn");
        }
    }
    v
}

/// `body` with the blocks of `first` before its own.
pub(crate) fn prepend(body: &Value, first: &Value) -> Value {
    let mut v = body.clone();
    let mut blocks = first
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    blocks.extend(
        v.get("content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
    );
    v["content"] = Value::Array(blocks);
    v
}

/// The state of a stream being read.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    id: String,
    model: String,
    usage: Option<Usage>,
    stop: Option<String>,
    blocks: Vec<Block>,
    pub(crate) done: bool,
}

#[derive(Debug, Default)]
struct Block {
    start: Value,
    text: String,
    json: String,
    thinking: String,
    signature: String,
}

impl Stream {
    pub(crate) fn decode(&mut self, v: &Value) -> EventRole {
        let index = v.get("index").and_then(Value::as_u64).map(|i| i as usize);
        match v.get("type").and_then(Value::as_str).unwrap_or("") {
            "message_start" => {
                let m = v.get("message").cloned().unwrap_or(Value::Null);
                self.id = m
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                self.model = m
                    .get("model")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                self.usage = m.get("usage").map(usage_of);
                EventRole::Start
            }
            "content_block_start" => {
                let i = index.unwrap_or(self.blocks.len());
                if self.blocks.len() <= i {
                    self.blocks.resize_with(i + 1, Block::default);
                }
                self.blocks[i].start = v.get("content_block").cloned().unwrap_or(Value::Null);
                EventRole::Part(i)
            }
            "content_block_delta" => {
                let i = index.unwrap_or(0);
                if let (Some(b), Some(d)) = (self.blocks.get_mut(i), v.get("delta")) {
                    let s = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("");
                    match d.get("type").and_then(Value::as_str) {
                        Some("text_delta") => b.text.push_str(s("text")),
                        Some("input_json_delta") => b.json.push_str(s("partial_json")),
                        Some("thinking_delta") => b.thinking.push_str(s("thinking")),
                        Some("signature_delta") => b.signature.push_str(s("signature")),
                        _ => {}
                    }
                }
                EventRole::Part(i)
            }
            "content_block_stop" => EventRole::Part(index.unwrap_or(0)),
            "message_delta" => {
                if let Some(r) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(r.to_string());
                }
                if let Some(u) = v.get("usage") {
                    let mut usage = self.usage.unwrap_or_default();
                    usage.output_tokens = u64_at(u, &["output_tokens"]);
                    for (k, f) in [
                        ("input_tokens", &mut usage.input_tokens),
                        ("cache_read_input_tokens", &mut usage.cache_read_tokens),
                        ("cache_creation_input_tokens", &mut usage.cache_write_tokens),
                    ] {
                        if let Some(n) = u.get(k).and_then(Value::as_u64) {
                            *f = n;
                        }
                    }
                    self.usage = Some(usage);
                }
                EventRole::Finish
            }
            "message_stop" => {
                self.done = true;
                EventRole::Finish
            }
            "error" => EventRole::Error(
                v.pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("an error event")
                    .to_string(),
            ),
            _ => EventRole::Ping,
        }
    }

    pub(crate) fn call(&self, part: usize) -> Option<(&str, &str)> {
        let s = &self.blocks.get(part)?.start;
        (s.get("type").and_then(Value::as_str) == Some("tool_use")).then(|| {
            (
                s.get("id").and_then(Value::as_str).unwrap_or(""),
                s.get("name").and_then(Value::as_str).unwrap_or(""),
            )
        })
    }

    pub(crate) fn answer(&self) -> Answer {
        let blocks = self
            .blocks
            .iter()
            .map(|b| {
                let mut v = b.start.clone();
                match v.get("type").and_then(Value::as_str) {
                    Some("text") => v["text"] = json!(b.text),
                    Some("tool_use") => {
                        v["input"] = crate::answer::parse_arguments(&b.json);
                    }
                    Some("thinking") => {
                        v["thinking"] = json!(b.thinking);
                        v["signature"] = json!(b.signature);
                    }
                    _ => {}
                }
                v
            })
            .collect();
        let (text, calls, parts) = answer_from_blocks(blocks);
        Answer {
            id: self.id.clone(),
            model: self.model.clone(),
            text,
            calls,
            usage: self.usage,
            stop: self.stop.clone(),
            parts,
        }
    }
}

/// The event with its block index mapped.
pub(crate) fn reindex(v: &mut Value, map: &dyn Fn(usize) -> usize) {
    if let Some(i) = v.get("index").and_then(Value::as_u64) {
        v["index"] = json!(map(i as usize));
    }
}

fn event(name: &str, data: Value) -> SseEvent {
    SseEvent {
        event: Some(name.to_string()),
        data: data.to_string(),
    }
}

/// A whole answer as the events of a stream.
pub(crate) fn write_stream(a: &Answer) -> Vec<SseEvent> {
    let mut out = vec![event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": a.id, "type": "message", "role": "assistant", "model": a.model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": a.usage.map_or(0, |u| u.input_tokens),
                "cache_creation_input_tokens": a.usage.map_or(0, |u| u.cache_write_tokens),
                "cache_read_input_tokens": a.usage.map_or(0, |u| u.cache_read_tokens),
                "output_tokens": 0},
        }}),
    )];
    for (i, p) in a.parts.iter().enumerate() {
        let kind = p.get("type").and_then(Value::as_str).unwrap_or("");
        let (start, deltas) = match kind {
            "text" => (
                json!({"type": "text", "text": ""}),
                vec![
                    json!({"type": "text_delta", "text": p.get("text").cloned().unwrap_or(json!(""))}),
                ],
            ),
            "tool_use" => (
                json!({"type": "tool_use", "id": p["id"], "name": p["name"], "input": {}}),
                vec![json!({"type": "input_json_delta",
                    "partial_json": p.get("input").map(|i| i.to_string()).unwrap_or_default()})],
            ),
            "thinking" => (
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                vec![
                    json!({"type": "thinking_delta", "thinking": p.get("thinking").cloned().unwrap_or(json!(""))}),
                    json!({"type": "signature_delta", "signature": p.get("signature").cloned().unwrap_or(json!(""))}),
                ],
            ),
            _ => (p.clone(), Vec::new()),
        };
        out.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": i, "content_block": start}),
        ));
        for d in deltas {
            out.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": i, "delta": d}),
            ));
        }
        out.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": i}),
        ));
    }
    out.push(event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": a.stop, "stop_sequence": null},
            "usage": {"output_tokens": a.usage.map_or(0, |u| u.output_tokens)}}),
    ));
    out.push(event("message_stop", json!({"type": "message_stop"})));
    out
}

/// The event an agent receives when the answer could not be completed.
pub(crate) fn error_event(kind: &str, message: &str) -> SseEvent {
    event(
        "error",
        json!({"type": "error", "error": {"type": kind, "message": message}}),
    )
}
