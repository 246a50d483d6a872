//! The agent's side: a request sent through the proxy, its answer read strictly (whole or
//! streamed), and a conversation that grows as an agent's does.

use serde_json::{json, Value};

use super::requests::content_text;
use super::*;

/// An answer as the agent read it.
#[derive(Debug, Clone, Default)]
pub struct Got {
    /// The status.
    pub status: u16,
    /// Its text.
    pub text: String,
    /// Its calls (id, name, input).
    pub calls: Vec<(String, String, Value)>,
    /// The stop reason (`end_turn`, `tool_use`, `stop`, `tool_calls`, `completed`).
    pub stop: String,
    /// The assistant message (or items) to append to the history.
    pub message: Vec<Value>,
    /// What the stream broke, if anything (an index reused, a stop reason that lies).
    pub broken: Option<String>,
    /// An error event or error body's text.
    pub error: Option<String>,
    /// The raw body.
    pub raw: String,
}

/// Sends `body` to `url` + the dialect's path and reads the answer strictly.
pub async fn ask(url: &str, dialect: Dialect, body: &Value) -> Got {
    let r = reqwest::Client::new()
        .post(format!("{url}{}", dialect.path()))
        .header("x-api-key", "sk-scripted-key")
        .json(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let raw = r.text().await.unwrap_or_default();
    let mut got = Got {
        status,
        raw: raw.clone(),
        ..Got::default()
    };
    if status != 200 {
        got.error = Some(raw);
        return got;
    }
    if body["stream"].as_bool().unwrap_or(false) {
        read_stream(dialect, &raw, &mut got);
    } else {
        let v: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
        read_whole(dialect, &v, &mut got);
    }
    got
}

fn read_whole(dialect: Dialect, v: &Value, got: &mut Got) {
    match dialect {
        Dialect::Anthropic => {
            for b in v["content"].as_array().into_iter().flatten() {
                match b["type"].as_str() {
                    Some("text") => got.text.push_str(b["text"].as_str().unwrap_or("")),
                    Some("tool_use") => got.calls.push((
                        b["id"].as_str().unwrap_or("").into(),
                        b["name"].as_str().unwrap_or("").into(),
                        b["input"].clone(),
                    )),
                    _ => {}
                }
            }
            got.stop = v["stop_reason"].as_str().unwrap_or("").into();
            got.message = vec![json!({"role": "assistant", "content": v["content"].clone()})];
        }
        Dialect::Chat => {
            let m = &v["choices"][0]["message"];
            got.text = content_text(&m["content"]);
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                got.calls.push((
                    c["id"].as_str().unwrap_or("").into(),
                    c["function"]["name"].as_str().unwrap_or("").into(),
                    serde_json::from_str(c["function"]["arguments"].as_str().unwrap_or("{}"))
                        .unwrap_or(Value::Null),
                ));
            }
            got.stop = v["choices"][0]["finish_reason"]
                .as_str()
                .unwrap_or("")
                .into();
            got.message = vec![m.clone()];
        }
        Dialect::Responses => {
            for it in v["output"].as_array().into_iter().flatten() {
                match it["type"].as_str() {
                    Some("message") => got.text.push_str(&content_text(&it["content"])),
                    Some("function_call") => got.calls.push((
                        it["call_id"].as_str().unwrap_or("").into(),
                        it["name"].as_str().unwrap_or("").into(),
                        serde_json::from_str(it["arguments"].as_str().unwrap_or("{}"))
                            .unwrap_or(Value::Null),
                    )),
                    _ => {}
                }
            }
            got.stop = v["status"].as_str().unwrap_or("").into();
            got.message = v["output"].as_array().cloned().unwrap_or_default();
        }
    }
    let calls = !got.calls.is_empty();
    let lying = match dialect {
        Dialect::Anthropic => calls != (got.stop == "tool_use"),
        Dialect::Chat => calls != (got.stop == "tool_calls"),
        Dialect::Responses => got.stop != "completed",
    };
    if lying {
        got.broken = Some(format!(
            "stop reason `{}` with {} call(s)",
            got.stop,
            got.calls.len()
        ));
    }
}

/// The events of an SSE text (name, data).
pub fn sse(raw: &str) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    for block in raw.split("\n\n") {
        let mut name = None;
        let mut data = Vec::new();
        for line in block.lines() {
            if let Some(n) = line.strip_prefix("event:") {
                name = Some(n.trim().to_string());
            } else if let Some(d) = line.strip_prefix("data:") {
                data.push(d.trim_start().to_string());
            }
        }
        if !data.is_empty() {
            out.push((name, data.join("\n")));
        }
    }
    out
}

fn read_stream(dialect: Dialect, raw: &str, got: &mut Got) {
    let mut broken: Vec<String> = Vec::new();
    match dialect {
        Dialect::Anthropic => read_anthropic_stream(raw, got, &mut broken),
        Dialect::Chat => read_chat_stream(raw, got, &mut broken),
        Dialect::Responses => read_responses_stream(raw, got, &mut broken),
    }
    if !broken.is_empty() {
        got.broken = Some(broken.join("; "));
    }
}

/// A streamed Anthropic answer read strictly into `got`; what the stream broke into `broken`.
fn read_anthropic_stream(raw: &str, got: &mut Got, broken: &mut Vec<String>) {
    let dialect = Dialect::Anthropic;
    let mut blocks: Vec<Value> = Vec::new();
    let mut json_of: Vec<String> = Vec::new();
    let mut closed: Vec<bool> = Vec::new();
    let mut stopped = false;
    for (_, data) in sse(raw) {
        let v: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
        let idx = v["index"].as_u64().map(|i| i as usize);
        match v["type"].as_str().unwrap_or("") {
            "content_block_start" => {
                let i = idx.unwrap_or(usize::MAX);
                if i != blocks.len() {
                    broken.push(format!(
                        "content_block_start index {i}, expected {}",
                        blocks.len()
                    ));
                }
                blocks.push(v["content_block"].clone());
                json_of.push(String::new());
                closed.push(false);
            }
            "content_block_delta" => {
                let i = idx.unwrap_or(usize::MAX);
                match blocks.get_mut(i) {
                    Some(b) if !closed[i] => {
                        let d = &v["delta"];
                        match d["type"].as_str() {
                            Some("text_delta") => {
                                let t = format!(
                                    "{}{}",
                                    b["text"].as_str().unwrap_or(""),
                                    d["text"].as_str().unwrap_or("")
                                );
                                b["text"] = json!(t);
                            }
                            Some("input_json_delta") => {
                                json_of[i].push_str(d["partial_json"].as_str().unwrap_or(""))
                            }
                            _ => {}
                        }
                    }
                    _ => broken.push(format!("a delta for block {i}, which is not open")),
                }
            }
            "content_block_stop" => {
                let i = idx.unwrap_or(usize::MAX);
                match closed.get_mut(i) {
                    Some(c) if !*c => *c = true,
                    _ => broken.push(format!("a stop for block {i}, which is not open")),
                }
            }
            "message_delta" => got.stop = v["delta"]["stop_reason"].as_str().unwrap_or("").into(),
            "message_stop" => stopped = true,
            "error" => {
                got.error = Some(v["error"].to_string());
            }
            _ => {}
        }
    }
    for (b, j) in blocks.iter_mut().zip(&json_of) {
        if b["type"] == "tool_use" {
            b["input"] =
                serde_json::from_str(if j.is_empty() { "{}" } else { j }).unwrap_or(Value::Null);
        }
    }
    if got.error.is_none() && !stopped {
        broken.push("no message_stop".into());
    }
    let whole = json!({"content": blocks, "stop_reason": got.stop});
    read_whole(dialect, &whole, got);
}

/// A streamed Chat answer read strictly into `got`; what the stream broke into `broken`.
fn read_chat_stream(raw: &str, got: &mut Got, broken: &mut Vec<String>) {
    let dialect = Dialect::Chat;
    let mut text = String::new();
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let mut done = false;
    for (_, data) in sse(raw) {
        if data == "[DONE]" {
            done = true;
            continue;
        }
        let v: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
        if v.get("error").is_some() {
            got.error = Some(v["error"].to_string());
            continue;
        }
        let ch = &v["choices"][0];
        if let Some(t) = ch["delta"]["content"].as_str() {
            text.push_str(t);
        }
        for c in ch["delta"]["tool_calls"].as_array().into_iter().flatten() {
            let i = c["index"].as_u64().unwrap_or(u64::MAX) as usize;
            if let Some(id) = c["id"].as_str() {
                if i != calls.len() {
                    broken.push(format!("tool call index {i}, expected {}", calls.len()));
                }
                calls.push((
                    id.into(),
                    c["function"]["name"].as_str().unwrap_or("").into(),
                    String::new(),
                ));
            }
            match calls.get_mut(i) {
                Some(e) => {
                    e.2.push_str(c["function"]["arguments"].as_str().unwrap_or(""))
                }
                None => broken.push(format!("arguments for call {i}, never started")),
            }
        }
        if let Some(f) = ch["finish_reason"].as_str() {
            got.stop = f.into();
        }
    }
    if got.error.is_none() && !done {
        broken.push("no [DONE]".into());
    }
    let mut message = json!({"role": "assistant",
        "content": if text.is_empty() { Value::Null } else { json!(text) }});
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .iter()
            .map(|(id, n, a)| {
                json!({"id": id, "type": "function",
                "function": {"name": n, "arguments": a}})
            })
            .collect();
    }
    let whole = json!({"choices": [{"message": message, "finish_reason": got.stop}]});
    read_whole(dialect, &whole, got);
}

/// A streamed Responses answer read strictly into `got`; what the stream broke into `broken`.
fn read_responses_stream(raw: &str, got: &mut Got, broken: &mut Vec<String>) {
    let dialect = Dialect::Responses;
    let mut items: Vec<Value> = Vec::new();
    let mut last_seq: Option<u64> = None;
    let mut completed: Option<Value> = None;
    for (_, data) in sse(raw) {
        let v: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
        if let Some(s) = v["sequence_number"].as_u64() {
            if last_seq.is_some_and(|l| s <= l) {
                broken.push(format!("sequence_number {s} after {last_seq:?}"));
            }
            last_seq = Some(s);
        }
        let i = v["output_index"].as_u64().map(|i| i as usize);
        match v["type"].as_str().unwrap_or("") {
            "response.output_item.added" => {
                let i = i.unwrap_or(usize::MAX);
                if i != items.len() {
                    broken.push(format!("output_index {i} added, expected {}", items.len()));
                }
                items.push(v["item"].clone());
            }
            "response.output_item.done" => {
                let i = i.unwrap_or(usize::MAX);
                match items.get_mut(i) {
                    Some(it) => *it = v["item"].clone(),
                    None => broken.push(format!("output_index {i} done, never added")),
                }
            }
            "response.completed" => completed = Some(v["response"].clone()),
            "response.failed" | "error" => got.error = Some(v.to_string()),
            _ => {}
        }
    }
    if got.error.is_none() && completed.is_none() {
        broken.push("no response.completed".into());
    }
    let whole = json!({"output": items, "status": completed
        .as_ref()
        .and_then(|c| c["status"].as_str())
        .unwrap_or("")});
    read_whole(dialect, &whole, got);
}

/// A first request's body: a system prompt, the agent's tools (`Bash`, `Read`), `messages`.
pub fn first_body(dialect: Dialect, stream: bool, prompt: &str) -> Value {
    let tools = ["Bash", "Read"];
    match dialect {
        Dialect::Anthropic => json!({
            "model": "scripted-model", "max_tokens": 1000, "stream": stream,
            "system": [{"type": "text", "text": "You are an agent."}],
            "tools": tools.iter().map(|n| json!({"name": n, "description": "",
                "input_schema": {"type": "object"}})).collect::<Vec<_>>(),
            "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
        }),
        Dialect::Chat => json!({
            "model": "scripted-model", "stream": stream,
            "tools": tools.iter().map(|n| json!({"type": "function", "function": {"name": n,
                "description": "", "parameters": {"type": "object"}}})).collect::<Vec<_>>(),
            "messages": [{"role": "system", "content": "You are an agent."},
                {"role": "user", "content": prompt}],
        }),
        Dialect::Responses => json!({
            "model": "scripted-model", "stream": stream, "store": false,
            "instructions": "You are an agent.",
            "tools": tools.iter().map(|n| json!({"type": "function", "name": n,
                "description": "", "parameters": {"type": "object"}})).collect::<Vec<_>>(),
            "input": [{"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": prompt}]}],
        }),
    }
}

/// The agent's conversation: its history in the dialect's form, appended to as it goes.
pub struct Agent {
    /// The dialect.
    pub dialect: Dialect,
    /// The request body (its history grows).
    pub body: Value,
    /// Answers read, in order.
    pub answers: Vec<Got>,
}

impl Agent {
    /// An agent whose first prompt is `prompt`.
    pub fn new(dialect: Dialect, stream: bool, prompt: &str) -> Agent {
        Agent {
            dialect,
            body: first_body(dialect, stream, prompt),
            answers: Vec::new(),
        }
    }

    fn items(&mut self) -> &mut Vec<Value> {
        let f = if self.dialect == Dialect::Responses {
            "input"
        } else {
            "messages"
        };
        self.body[f].as_array_mut().expect("the history")
    }

    /// A new user prompt.
    pub fn prompt(&mut self, prompt: &str) {
        let m = match self.dialect {
            Dialect::Anthropic => {
                json!({"role": "user", "content": [{"type": "text", "text": prompt}]})
            }
            Dialect::Chat => json!({"role": "user", "content": prompt}),
            Dialect::Responses => json!({"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": prompt}]}),
        };
        self.items().push(m);
    }

    /// One turn: requests until an answer calls no tool (each call answered with
    /// `result(name, input)`), at most `cap` requests. The answers of the turn.
    pub async fn turn(
        &mut self,
        url: &str,
        cap: usize,
        result: &dyn Fn(&str, &Value) -> String,
    ) -> Vec<Got> {
        let mut got = Vec::new();
        for _ in 0..cap {
            let a = ask(url, self.dialect, &self.body).await;
            got.push(a.clone());
            self.answers.push(a.clone());
            if a.status != 200 || a.error.is_some() {
                break;
            }
            let msg = a.message.clone();
            let results: Vec<Value> = a
                .calls
                .iter()
                .map(|(id, name, input)| {
                    let out = result(name, input);
                    match self.dialect {
                        Dialect::Anthropic => {
                            json!({"type": "tool_result", "tool_use_id": id, "content": out})
                        }
                        Dialect::Chat => {
                            json!({"role": "tool", "tool_call_id": id, "content": out})
                        }
                        Dialect::Responses => {
                            json!({"type": "function_call_output", "call_id": id, "output": out})
                        }
                    }
                })
                .collect();
            let d = self.dialect;
            let items = self.items();
            items.extend(msg);
            if results.is_empty() {
                break;
            }
            match d {
                Dialect::Anthropic => items.push(json!({"role": "user", "content": results})),
                _ => items.extend(results),
            }
        }
        got
    }
}
