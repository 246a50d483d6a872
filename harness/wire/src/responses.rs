//! OpenAI's Responses API: `input` items (`message` with a role, `function_call`,
//! `function_call_output`, `custom_tool_call` and its output, `local_shell_call`, `reasoning`,
//! …), `instructions` as the system prompt; answers with `output` items; streams of named
//! `response.*` events (`response.created`, `response.output_item.added`,
//! `response.output_text.delta`, `response.function_call_arguments.delta`,
//! `response.output_item.done`, `response.completed`, …). A unit is an item.

use harness_core::Usage;
use harness_core::{Message, Role, ToolCall};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::answer::{parse_arguments, u64_at, Answer};
use crate::sse::SseEvent;
use crate::stream::EventRole;
use crate::units::{Grouper, Unit, UnitKind};
use crate::{err, raw, WireError};

/// Item types of the model's own calls.
const CALLS: [&str; 3] = ["function_call", "custom_tool_call", "local_shell_call"];

fn content_text(c: Option<&Value>) -> String {
    match c {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| match p.get("type").and_then(Value::as_str) {
                Some("input_image") => "[image]".to_string(),
                Some("input_file") => "[file]".to_string(),
                Some("refusal") => p
                    .get("refusal")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                _ => p
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn call_of(v: &Value, kind: &str) -> Result<ToolCall, WireError> {
    let id = v
        .get("call_id")
        .and_then(Value::as_str)
        .ok_or_else(|| err(format!("a `{kind}` item needs a `call_id`")))?;
    let name = v.get("name").and_then(Value::as_str);
    let (name, args) = match kind {
        "custom_tool_call" => (
            name.unwrap_or(""),
            json!({"input": v.get("input").cloned().unwrap_or(json!(""))}),
        ),
        "local_shell_call" => ("local_shell", v.get("action").cloned().unwrap_or(json!({}))),
        _ => (
            name.ok_or_else(|| err("a `function_call` item needs a `name`"))?,
            parse_arguments(v.get("arguments").and_then(Value::as_str).unwrap_or("")),
        ),
    };
    Ok(ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        args,
    })
}

/// The unit of one input item.
pub(crate) fn decode_item(item: &RawValue) -> Result<Vec<Unit>, WireError> {
    let v: Value = serde_json::from_str(item.get()).map_err(|e| err(e.to_string()))?;
    let kind = match v.get("type").and_then(Value::as_str) {
        Some(k) => k,
        None if v.get("role").is_some() => "message",
        None => return Err(err("an input item needs a `type` (or a `role`)")),
    };
    let unit = |kind: UnitKind, form: Option<&str>| Unit {
        raw: item.to_owned(),
        kind,
        form: form.map(str::to_string),
    };
    let out = match kind {
        "message" => match v.get("role").and_then(Value::as_str) {
            Some("user") => unit(UnitKind::UserText(content_text(v.get("content"))), None),
            Some("assistant") => unit(
                UnitKind::Assistant {
                    text: content_text(v.get("content")),
                    calls: Vec::new(),
                },
                None,
            ),
            Some("system" | "developer") => unit(UnitKind::Pinned, None),
            other => {
                return Err(err(format!(
                    "a message's role {other:?} is not one of user, assistant, system, developer"
                )))
            }
        },
        k if CALLS.contains(&k) => unit(
            UnitKind::Assistant {
                text: String::new(),
                calls: vec![call_of(&v, k)?],
            },
            Some(k),
        ),
        k if k.ends_with("_call_output") => {
            let id = v
                .get("call_id")
                .and_then(Value::as_str)
                .ok_or_else(|| err(format!("a `{k}` item needs a `call_id`")))?;
            unit(
                UnitKind::ToolResult {
                    call_id: id.to_string(),
                    text: content_text(v.get("output")),
                    is_error: false,
                },
                Some(k),
            )
        }
        // Reasoning, and the calls of hosted tools (web search, file search, …): the model's,
        // kept as they are.
        k if k == "reasoning" || k.ends_with("_call") => unit(
            UnitKind::Assistant {
                text: String::new(),
                calls: Vec::new(),
            },
            None,
        ),
        _ => unit(UnitKind::Pinned, None),
    };
    Ok(vec![out])
}

fn call_item(c: &ToolCall, form: Option<&str>) -> Value {
    match form {
        Some("custom_tool_call") => json!({"type": "custom_tool_call", "call_id": c.id,
            "name": c.name, "input": c.args.get("input").cloned().unwrap_or(json!(""))}),
        Some("local_shell_call") => json!({"type": "local_shell_call", "call_id": c.id,
            "status": "completed", "action": c.args}),
        _ => json!({"type": "function_call", "call_id": c.id, "name": c.name,
            "arguments": c.args.to_string()}),
    }
}

fn text_message(role: &str, text: &str) -> Value {
    let part = if role == "assistant" {
        "output_text"
    } else {
        "input_text"
    };
    let mut p = json!({"type": part, "text": text});
    if role == "assistant" {
        p["annotations"] = json!([]);
    }
    json!({"type": "message", "role": role, "content": [p]})
}

/// A core message as input items; the grouper names the form of each call and result.
pub(crate) fn render(m: &Message, calls: &Grouper) -> Vec<Box<RawValue>> {
    let items = match m.role {
        Role::Tool => {
            let id = m.tool_call_id.clone().unwrap_or_default();
            let form = calls
                .result_form(&id)
                .map(str::to_string)
                .unwrap_or_else(|| match calls.call(&id).and_then(|(_, f)| f) {
                    Some("custom_tool_call") => "custom_tool_call_output".into(),
                    Some("local_shell_call") => "local_shell_call_output".into(),
                    _ => "function_call_output".into(),
                });
            vec![json!({"type": form, "call_id": id, "output": m.text})]
        }
        Role::User => vec![text_message("user", &m.visible_text())],
        Role::Assistant => {
            let mut out = Vec::new();
            if !m.text.is_empty() || m.tool_calls.is_empty() {
                out.push(text_message("assistant", &m.text));
            }
            for c in &m.tool_calls {
                out.push(call_item(c, calls.call(&c.id).and_then(|(_, f)| f)));
            }
            out
        }
    };
    items.iter().map(raw).collect()
}

/// Output items of an answer with `text` and `calls` (function calls).
pub(crate) fn answer_items(id: &str, text: &str, calls: &[ToolCall]) -> Vec<Value> {
    let mut out = Vec::new();
    if !text.is_empty() || calls.is_empty() {
        let mut m = text_message("assistant", text);
        m["id"] = json!(format!("msg_{id}"));
        m["status"] = json!("completed");
        out.push(m);
    }
    for (i, c) in calls.iter().enumerate() {
        let mut f = call_item(c, None);
        f["id"] = json!(format!("fc_{id}_{i}"));
        f["status"] = json!("completed");
        out.push(f);
    }
    out
}

fn usage_of(u: &Value) -> Usage {
    let input = u64_at(u, &["input_tokens"]);
    let cached = u64_at(u, &["input_tokens_details", "cached_tokens"]);
    Usage {
        input_tokens: input.saturating_sub(cached),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
        output_tokens: u64_at(u, &["output_tokens"]),
    }
}

fn answer_from_items(v: &Value, items: Vec<Value>) -> Answer {
    let mut text = String::new();
    let mut calls = Vec::new();
    for it in &items {
        match it.get("type").and_then(Value::as_str) {
            Some("message") => text.push_str(&content_text(it.get("content"))),
            Some(k) if CALLS.contains(&k) => {
                if let Ok(c) = call_of(it, k) {
                    calls.push(c);
                }
            }
            _ => {}
        }
    }
    Answer {
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
        usage: v.get("usage").filter(|u| !u.is_null()).map(usage_of),
        stop: v.get("status").and_then(Value::as_str).map(str::to_string),
        parts: items,
    }
}

/// Reads a non-streamed answer.
pub(crate) fn read_answer(v: &Value) -> Result<Answer, WireError> {
    let items = v
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| err("the answer has no `output` list"))?
        .clone();
    Ok(answer_from_items(v, items))
}

fn usage_json(u: Option<Usage>) -> Value {
    let u = u.unwrap_or_default();
    let input = u.prompt_tokens();
    json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": u.cache_read_tokens},
        "output_tokens": u.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + u.output_tokens})
}

fn response_json(a: &Answer, status: &str, output: &[Value]) -> Value {
    json!({"id": a.id, "object": "response", "created_at": 0, "status": status,
        "model": a.model, "output": output, "usage": usage_json(a.usage)})
}

/// Writes a non-streamed answer.
pub(crate) fn write_answer(a: &Answer) -> Value {
    response_json(a, "completed", &a.parts)
}

fn named_call(it: &Value, ids: &[String]) -> bool {
    it.get("type")
        .and_then(Value::as_str)
        .is_some_and(|k| CALLS.contains(&k))
        && it
            .get("call_id")
            .and_then(Value::as_str)
            .is_some_and(|id| ids.iter().any(|i| i == id))
}

/// The answer without the named calls' items.
pub(crate) fn without_calls(body: &Value, ids: &[String]) -> Value {
    let mut v = body.clone();
    if let Some(Value::Array(items)) = v.get_mut("output") {
        items.retain(|it| !named_call(it, ids));
    }
    v
}

/// `body` with the output items of `first` before its own.
pub(crate) fn prepend(body: &Value, first: &Value) -> Value {
    let mut v = body.clone();
    let mut items = first
        .get("output")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    items.extend(
        v.get("output")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
    );
    v["output"] = Value::Array(items);
    v
}

/// The state of a stream being read.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    head: Value,
    /// Items by output index, as added and as done.
    items: Vec<Value>,
    /// Text deltas and argument deltas by output index (for items whose `done` never came).
    text: Vec<String>,
    final_response: Option<Value>,
    pub(crate) done: bool,
}

impl Stream {
    pub(crate) fn decode(&mut self, v: &Value) -> EventRole {
        let index = v
            .get("output_index")
            .and_then(Value::as_u64)
            .map(|i| i as usize);
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        if let Some(i) = index {
            if self.items.len() <= i {
                self.items.resize(i + 1, Value::Null);
                self.text.resize(i + 1, String::new());
            }
        }
        match (kind, index) {
            ("response.created" | "response.in_progress", _) => {
                self.head = v.get("response").cloned().unwrap_or(Value::Null);
                EventRole::Start
            }
            ("response.output_item.added" | "response.output_item.done", Some(i)) => {
                self.items[i] = v.get("item").cloned().unwrap_or(Value::Null);
                EventRole::Part(i)
            }
            (
                "response.output_text.delta"
                | "response.function_call_arguments.delta"
                | "response.custom_tool_call_input.delta",
                Some(i),
            ) => {
                self.text[i].push_str(v.get("delta").and_then(Value::as_str).unwrap_or(""));
                EventRole::Part(i)
            }
            ("response.completed" | "response.incomplete", _) => {
                self.done = true;
                self.final_response = v.get("response").cloned();
                EventRole::Finish
            }
            ("response.failed", _) => {
                self.done = true;
                self.final_response = v.get("response").cloned();
                EventRole::Error(
                    v.pointer("/response/error/message")
                        .and_then(Value::as_str)
                        .unwrap_or("the response failed")
                        .to_string(),
                )
            }
            ("error", _) => EventRole::Error(
                v.get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("an error event")
                    .to_string(),
            ),
            (_, Some(i)) => EventRole::Part(i),
            _ => EventRole::Ping,
        }
    }

    pub(crate) fn call(&self, part: usize) -> Option<(&str, &str)> {
        let it = self.items.get(part)?;
        let k = it.get("type").and_then(Value::as_str)?;
        CALLS.contains(&k).then(|| {
            (
                it.get("call_id").and_then(Value::as_str).unwrap_or(""),
                it.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or(if k == "local_shell_call" {
                        "local_shell"
                    } else {
                        ""
                    }),
            )
        })
    }

    pub(crate) fn answer(&self) -> Answer {
        if let Some(r) = &self.final_response {
            if let Some(items) = r
                .get("output")
                .and_then(Value::as_array)
                .filter(|o| !o.is_empty())
            {
                return answer_from_items(r, items.clone());
            }
        }
        let items: Vec<Value> = self
            .items
            .iter()
            .zip(&self.text)
            .map(|(it, t)| {
                let mut it = it.clone();
                match it.get("type").and_then(Value::as_str) {
                    Some("function_call")
                        if it
                            .get("arguments")
                            .and_then(Value::as_str)
                            .is_none_or(str::is_empty) =>
                    {
                        it["arguments"] = json!(t)
                    }
                    Some("message")
                        if content_text(it.get("content")).is_empty() && !t.is_empty() =>
                    {
                        it["content"] =
                            json!([{"type": "output_text", "text": t, "annotations": []}])
                    }
                    _ => {}
                }
                it
            })
            .collect();
        let head = self.final_response.as_ref().unwrap_or(&self.head);
        answer_from_items(head, items)
    }
}

/// The event with its output index mapped; a final `response.*` event's output without the
/// calls in `drop`.
pub(crate) fn reindex(v: &mut Value, map: &dyn Fn(usize) -> usize, drop: &[String]) {
    if let Some(i) = v.get("output_index").and_then(Value::as_u64) {
        v["output_index"] = json!(map(i as usize));
    }
    if !drop.is_empty() {
        if let Some(Value::Array(items)) = v.pointer_mut("/response/output") {
            items.retain(|it| !named_call(it, drop));
        }
    }
}

fn event(kind: &str, mut data: Value, seq: &mut u64) -> SseEvent {
    data["type"] = json!(kind);
    data["sequence_number"] = json!(*seq);
    *seq += 1;
    SseEvent {
        event: Some(kind.to_string()),
        data: data.to_string(),
    }
}

/// A whole answer as the events of a stream.
pub(crate) fn write_stream(a: &Answer) -> Vec<SseEvent> {
    let mut seq = 0;
    let mut out = vec![event(
        "response.created",
        json!({"response": response_json(a, "in_progress", &[])}),
        &mut seq,
    )];
    for (i, it) in a.parts.iter().enumerate() {
        let id = it.get("id").cloned().unwrap_or(json!(format!("item_{i}")));
        let mut added = it.clone();
        added["status"] = json!("in_progress");
        match it.get("type").and_then(Value::as_str) {
            Some("message") => {
                added["content"] = json!([]);
                out.push(event(
                    "response.output_item.added",
                    json!({"output_index": i, "item": added}),
                    &mut seq,
                ));
                let text = content_text(it.get("content"));
                let part = json!({"type": "output_text", "text": "", "annotations": []});
                out.push(event(
                    "response.content_part.added",
                    json!({"item_id": id, "output_index": i, "content_index": 0, "part": part}),
                    &mut seq,
                ));
                out.push(event(
                    "response.output_text.delta",
                    json!({"item_id": id, "output_index": i, "content_index": 0, "delta": text}),
                    &mut seq,
                ));
                out.push(event(
                    "response.output_text.done",
                    json!({"item_id": id, "output_index": i, "content_index": 0, "text": text}),
                    &mut seq,
                ));
                let part = json!({"type": "output_text", "text": text, "annotations": []});
                out.push(event(
                    "response.content_part.done",
                    json!({"item_id": id, "output_index": i, "content_index": 0, "part": part}),
                    &mut seq,
                ));
            }
            Some("function_call") => {
                added["arguments"] = json!("");
                out.push(event(
                    "response.output_item.added",
                    json!({"output_index": i, "item": added}),
                    &mut seq,
                ));
                let args = it.get("arguments").cloned().unwrap_or(json!(""));
                out.push(event(
                    "response.function_call_arguments.delta",
                    json!({"item_id": id, "output_index": i, "delta": args}),
                    &mut seq,
                ));
                out.push(event(
                    "response.function_call_arguments.done",
                    json!({"item_id": id, "output_index": i, "arguments": args}),
                    &mut seq,
                ));
            }
            _ => out.push(event(
                "response.output_item.added",
                json!({"output_index": i, "item": added}),
                &mut seq,
            )),
        }
        out.push(event(
            "response.output_item.done",
            json!({"output_index": i, "item": it}),
            &mut seq,
        ));
    }
    out.push(event(
        "response.completed",
        json!({"response": response_json(a, "completed", &a.parts)}),
        &mut seq,
    ));
    out
}

/// The event an agent receives when the answer could not be completed.
pub(crate) fn error_event(code: &str, message: &str) -> SseEvent {
    SseEvent {
        event: Some("response.failed".into()),
        data: json!({"type": "response.failed", "response": {"object": "response",
            "status": "failed", "output": [],
            "error": {"code": code, "message": message}}})
        .to_string(),
    }
}
