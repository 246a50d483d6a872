//! What the scripted upstream reads in a request: its conversation in neutral form, and what
//! the real API would refuse in it.

use serde_json::Value;

use super::*;

/// One entry of a conversation in neutral form.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// User-side text.
    User(String),
    /// Model-side text.
    Said(String),
    /// A call (id, tool).
    Call(String, String),
    /// A result (call id, text).
    Result(String, String),
}

/// The text of a content value (a string, or text parts).
pub(super) fn content_text(c: &Value) -> String {
    match c {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A request's conversation in neutral form.
pub fn history(dialect: Dialect, body: &Value) -> Vec<Entry> {
    let mut out = Vec::new();
    match dialect {
        Dialect::Anthropic => {
            for m in body["messages"].as_array().into_iter().flatten() {
                let assistant = m["role"] == "assistant";
                match &m["content"] {
                    Value::String(s) if assistant => out.push(Entry::Said(s.clone())),
                    Value::String(s) => out.push(Entry::User(s.clone())),
                    Value::Array(blocks) => {
                        for b in blocks {
                            match b["type"].as_str().unwrap_or("") {
                                "text" if assistant => {
                                    out.push(Entry::Said(b["text"].as_str().unwrap_or("").into()))
                                }
                                "text" => {
                                    out.push(Entry::User(b["text"].as_str().unwrap_or("").into()))
                                }
                                "tool_use" => out.push(Entry::Call(
                                    b["id"].as_str().unwrap_or("").into(),
                                    b["name"].as_str().unwrap_or("").into(),
                                )),
                                "tool_result" => out.push(Entry::Result(
                                    b["tool_use_id"].as_str().unwrap_or("").into(),
                                    content_text(&b["content"]),
                                )),
                                _ => {}
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        Dialect::Chat => {
            for m in body["messages"].as_array().into_iter().flatten() {
                match m["role"].as_str().unwrap_or("") {
                    "user" => out.push(Entry::User(content_text(&m["content"]))),
                    "assistant" => {
                        let t = content_text(&m["content"]);
                        if !t.is_empty() {
                            out.push(Entry::Said(t));
                        }
                        for c in m["tool_calls"].as_array().into_iter().flatten() {
                            out.push(Entry::Call(
                                c["id"].as_str().unwrap_or("").into(),
                                c["function"]["name"].as_str().unwrap_or("").into(),
                            ));
                        }
                    }
                    "tool" => out.push(Entry::Result(
                        m["tool_call_id"].as_str().unwrap_or("").into(),
                        content_text(&m["content"]),
                    )),
                    _ => {}
                }
            }
        }
        Dialect::Responses => {
            for it in body["input"].as_array().into_iter().flatten() {
                match it["type"].as_str().unwrap_or("message") {
                    "message" if it["role"] == "assistant" => {
                        out.push(Entry::Said(content_text(&it["content"])))
                    }
                    "message" if it["role"] == "user" => {
                        out.push(Entry::User(content_text(&it["content"])))
                    }
                    "function_call" => out.push(Entry::Call(
                        it["call_id"].as_str().unwrap_or("").into(),
                        it["name"].as_str().unwrap_or("").into(),
                    )),
                    "function_call_output" => out.push(Entry::Result(
                        it["call_id"].as_str().unwrap_or("").into(),
                        it["output"]
                            .as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| content_text(&it["output"])),
                    )),
                    _ => {}
                }
            }
        }
    }
    out
}

/// What the real API refuses in a request: a tool call not answered right after the message
/// that made it, or a result whose call is not right before it.
pub fn check(dialect: Dialect, body: &Value) -> Option<String> {
    match dialect {
        Dialect::Anthropic => check_anthropic(body),
        Dialect::Chat => check_chat(body),
        Dialect::Responses => check_responses(body),
    }
}

/// What the Anthropic API refuses in a request.
fn check_anthropic(body: &Value) -> Option<String> {
    let msgs = body["messages"].as_array()?;
    let blocks = |m: &Value| -> Vec<Value> {
        match &m["content"] {
            Value::Array(b) => b.clone(),
            _ => Vec::new(),
        }
    };
    let mut open: Vec<String> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        if m["role"] == "system" {
            continue;
        }
        let b = blocks(m);
        if m["role"] == "assistant" {
            if !open.is_empty() {
                return Some(format!(
                    "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                    open.join(", ")
                ));
            }
            open = b
                .iter()
                .filter(|x| x["type"] == "tool_use")
                .filter_map(|x| x["id"].as_str().map(str::to_string))
                .collect();
            continue;
        }
        let results: Vec<String> = b
            .iter()
            .filter(|x| x["type"] == "tool_result")
            .filter_map(|x| x["tool_use_id"].as_str().map(str::to_string))
            .collect();
        for r in &results {
            if !open.contains(r) {
                return Some(format!(
                    "messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: {r}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                ));
            }
        }
        let missing: Vec<String> = open
            .iter()
            .filter(|o| !results.contains(o))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Some(format!(
                "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                missing.join(", ")
            ));
        }
        // Results first, then any text.
        let first_other = b.iter().position(|x| x["type"] != "tool_result");
        let last_result = b.iter().rposition(|x| x["type"] == "tool_result");
        if let (Some(o), Some(r)) = (first_other, last_result) {
            if o < r {
                return Some(format!(
                    "messages.{i}: `tool_result` blocks must come first in the content"
                ));
            }
        }
        open.clear();
    }
    None
}

/// What the Chat API refuses in a request.
fn check_chat(body: &Value) -> Option<String> {
    let msgs = body["messages"].as_array()?;
    let mut open: Vec<String> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or("");
        if role == "tool" {
            let id = m["tool_call_id"].as_str().unwrap_or("");
            match open.iter().position(|o| o == id) {
                Some(p) => {
                    open.remove(p);
                }
                None => {
                    return Some(format!(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (messages[{i}])."
                    ))
                }
            }
            continue;
        }
        if !open.is_empty() {
            return Some(format!(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                open.join(", ")
            ));
        }
        if role == "assistant" {
            open = m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["id"].as_str().map(str::to_string))
                .collect();
        }
    }
    (!open.is_empty()).then(|| format!(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
        open.join(", ")
    ))
}

/// What the Responses API refuses in a request.
fn check_responses(body: &Value) -> Option<String> {
    let items = body["input"].as_array()?;
    let mut calls: Vec<String> = Vec::new();
    let mut outputs: Vec<String> = Vec::new();
    for it in items {
        match it["type"].as_str().unwrap_or("") {
            "function_call" => calls.push(it["call_id"].as_str().unwrap_or("").into()),
            "function_call_output" => {
                let id = it["call_id"].as_str().unwrap_or("").to_string();
                if !calls.contains(&id) {
                    return Some(format!(
                        "No tool call found for function call output with call_id {id}."
                    ));
                }
                outputs.push(id);
            }
            _ => {}
        }
    }
    calls
        .iter()
        .find(|c| !outputs.contains(c))
        .map(|c| format!("No tool output found for function call {c}."))
}
