//! A scripted model API on loopback for the proxy's tests, and an agent that talks to it through
//! the proxy — both written from the providers' API documentation, not from foldbench's wire code:
//!
//! - Anthropic Messages (<https://docs.anthropic.com/en/api/messages>,
//!   <https://docs.anthropic.com/en/docs/build-with-claude/streaming>): a `message` with
//!   `content` blocks; a stream of `message_start`, `content_block_start` / `_delta` / `_stop`
//!   (one index per block, from 0), `message_delta` with the `stop_reason`, `message_stop`;
//! - OpenAI Chat Completions (<https://platform.openai.com/docs/api-reference/chat>): a
//!   `chat.completion` and `chat.completion.chunk`s with `delta.tool_calls[].index`, then
//!   `data: [DONE]`;
//! - OpenAI Responses (<https://platform.openai.com/docs/api-reference/responses>): a `response`
//!   with `output` items; `response.created`, `response.output_item.added` / `.done` per
//!   `output_index`, text and argument deltas, `response.completed`, each event with a rising
//!   `sequence_number`.
//!
//! The upstream speaks HTTP/1.1 over a plain socket (so a test can also make it answer with
//! malformed headers or an answer that never ends), checks every request the way the real APIs
//! do — every tool call of an assistant message answered right after it, no result without its
//! call — and answers a request that breaks the rule with the API's 400. The agent reads streams
//! strictly: block indexes start at 0 and are never reused, the stop reason says whether the
//! answer calls tools.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The three dialects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
    /// Chat Completions (`/v1/chat/completions`).
    Chat,
    /// Responses (`/v1/responses`).
    Responses,
}

impl Dialect {
    /// All three.
    pub const ALL: [Dialect; 3] = [Dialect::Anthropic, Dialect::Chat, Dialect::Responses];

    /// The request path.
    pub fn path(self) -> &'static str {
        match self {
            Dialect::Anthropic => "/v1/messages",
            Dialect::Chat => "/v1/chat/completions",
            Dialect::Responses => "/v1/responses",
        }
    }

    fn of(path: &str) -> Option<Dialect> {
        let p = path.split('?').next().unwrap_or("");
        Dialect::ALL.into_iter().find(|d| d.path() == p)
    }
}

/// One part of a scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Text.
    Text(String),
    /// A tool call.
    Call {
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
        /// Its arguments.
        input: Value,
    },
}

/// A text part.
pub fn text(t: &str) -> Part {
    Part::Text(t.to_string())
}

/// A call part.
pub fn call(id: &str, name: &str, input: Value) -> Part {
    Part::Call {
        id: id.to_string(),
        name: name.to_string(),
        input,
    }
}

/// What the upstream answers.
#[derive(Debug, Clone)]
pub enum Reply {
    /// An answer of these parts, streamed when the request asks.
    Parts(Vec<Part>),
    /// An error: status and the API's error body.
    Error(u16, Value),
    /// These bytes on the socket, then the connection is closed.
    Raw(Vec<u8>),
    /// An answer that never ends (a stream of text, or a JSON body), until the reader leaves.
    Endless,
    /// A stream cut after its first `n` events.
    Cut(Vec<Part>, usize),
    /// An answer whose head and first bytes come, then nothing more, ever.
    Stall,
}

/// A request the upstream received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Its dialect.
    pub dialect: Dialect,
    /// Its body.
    pub body: Value,
    /// What the real API would refuse in it, if anything.
    pub problem: Option<String>,
}

impl Seen {
    /// Whether the request asks for a stream.
    pub fn stream(&self) -> bool {
        self.body["stream"].as_bool().unwrap_or(false)
    }

    /// The conversation in neutral form.
    pub fn history(&self) -> Vec<Entry> {
        history(self.dialect, &self.body)
    }
}

/// The model: decides the reply to each request.
pub type Model = Box<dyn FnMut(&Seen) -> Reply + Send>;

/// The upstream.
pub struct Upstream {
    /// Where it listens.
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Bytes of endless answers written so far.
    pub endless_bytes: Arc<std::sync::atomic::AtomicU64>,
    _task: tokio::task::JoinHandle<()>,
}

impl Upstream {
    /// Starts an upstream answering with `model`.
    pub async fn start(model: Model) -> Upstream {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let model = Arc::new(Mutex::new(model));
        let endless_bytes = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (s, m, e) = (
            Arc::clone(&seen),
            Arc::clone(&model),
            Arc::clone(&endless_bytes),
        );
        let task = tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    continue;
                };
                let (s, m, e) = (Arc::clone(&s), Arc::clone(&m), Arc::clone(&e));
                tokio::spawn(async move {
                    let _ = serve(sock, s, m, e).await;
                });
            }
        });
        Upstream {
            addr,
            seen,
            endless_bytes,
            _task: task,
        }
    }

    /// An upstream that answers the scripted replies in order (then `done`).
    pub async fn scripted(replies: Vec<Reply>) -> Upstream {
        let mut q: std::collections::VecDeque<Reply> = replies.into();
        Upstream::start(Box::new(move |_| {
            q.pop_front()
                .unwrap_or_else(|| Reply::Parts(vec![text("done")]))
        }))
        .await
    }

    /// Its base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// How many requests it received.
    pub fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// The problems the real API would have refused requests for.
    pub fn problems(&self) -> Vec<String> {
        self.seen().into_iter().filter_map(|s| s.problem).collect()
    }
}

async fn serve(
    mut sock: TcpStream,
    seen: Arc<Mutex<Vec<Seen>>>,
    model: Arc<Mutex<Model>>,
    endless: Arc<std::sync::atomic::AtomicU64>,
) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        // The head.
        let head_end = loop {
            if let Some(i) = find(&buf, b"\r\n\r\n") {
                break i;
            }
            let mut chunk = [0u8; 65536];
            let n = sock.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let path = head
            .lines()
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .unwrap_or("/")
            .to_string();
        let len: usize = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or(0);
        let mut body = buf[head_end + 4..].to_vec();
        while body.len() < len {
            let mut chunk = [0u8; 65536];
            let n = sock.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            body.extend_from_slice(&chunk[..n]);
        }
        buf = body.split_off(len);
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let Some(dialect) = Dialect::of(&path) else {
            write_whole(&mut sock, 200, &json!({"input_tokens": 1})).await?;
            continue;
        };
        let problem = check(dialect, &body);
        let s = Seen {
            dialect,
            body,
            problem: problem.clone(),
        };
        seen.lock().unwrap().push(s.clone());
        if let Some(p) = problem {
            write_whole(
                &mut sock,
                400,
                &api_error(dialect, "invalid_request_error", &p),
            )
            .await?;
            continue;
        }
        let reply = (model.lock().unwrap())(&s);
        let stream = s.stream();
        match reply {
            Reply::Parts(parts) => {
                if stream {
                    write_stream(&mut sock, &events(dialect, &parts), None).await?;
                } else {
                    write_whole(&mut sock, 200, &whole(dialect, &parts)).await?;
                }
            }
            Reply::Cut(parts, n) => {
                write_stream(&mut sock, &events(dialect, &parts), Some(n)).await?;
                return Ok(());
            }
            Reply::Error(status, body) => write_whole(&mut sock, status, &body).await?,
            Reply::Raw(bytes) => {
                sock.write_all(&bytes).await?;
                sock.flush().await?;
                return Ok(());
            }
            Reply::Endless => {
                let _ = write_endless(&mut sock, dialect, stream, &endless).await;
                return Ok(());
            }
            Reply::Stall => {
                sock.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
                    .await?;
                chunk(&mut sock, b"{\"id\":").await?;
                // Held open until the reader leaves.
                let mut byte = [0u8; 1];
                let _ = sock.read(&mut byte).await;
                return Ok(());
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The API's error body.
pub fn api_error(dialect: Dialect, kind: &str, message: &str) -> Value {
    match dialect {
        Dialect::Anthropic => json!({"type": "error", "error": {"type": kind, "message": message}}),
        _ => json!({"error": {"message": message, "type": kind, "param": null, "code": null}}),
    }
}

async fn write_whole(sock: &mut TcpStream, status: u16, body: &Value) -> std::io::Result<()> {
    let text = body.to_string();
    let head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        text.len()
    );
    sock.write_all(head.as_bytes()).await?;
    sock.write_all(text.as_bytes()).await?;
    sock.flush().await
}

async fn chunk(sock: &mut TcpStream, data: &[u8]) -> std::io::Result<()> {
    sock.write_all(format!("{:x}\r\n", data.len()).as_bytes())
        .await?;
    sock.write_all(data).await?;
    sock.write_all(b"\r\n").await?;
    sock.flush().await
}

async fn write_stream(
    sock: &mut TcpStream,
    events: &[(Option<&'static str>, String)],
    cut: Option<usize>,
) -> std::io::Result<()> {
    sock.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
    )
    .await?;
    for (i, (name, data)) in events.iter().enumerate() {
        if cut == Some(i) {
            // The connection ends in the middle of the chunked body.
            return sock.shutdown().await;
        }
        let ev = match name {
            Some(n) => format!("event: {n}\ndata: {data}\n\n"),
            None => format!("data: {data}\n\n"),
        };
        chunk(sock, ev.as_bytes()).await?;
    }
    sock.write_all(b"0\r\n\r\n").await?;
    sock.flush().await
}

async fn write_endless(
    sock: &mut TcpStream,
    dialect: Dialect,
    stream: bool,
    written: &std::sync::atomic::AtomicU64,
) -> std::io::Result<()> {
    let piece = "x".repeat(64 << 10);
    let ct = if stream {
        "text/event-stream"
    } else {
        "application/json"
    };
    sock.write_all(
        format!("HTTP/1.1 200 OK\r\ncontent-type: {ct}\r\ntransfer-encoding: chunked\r\n\r\n")
            .as_bytes(),
    )
    .await?;
    let (start, each) = if stream {
        let evs = events(dialect, &[text("")]);
        let start: String = evs
            .iter()
            .take(2)
            .map(|(n, d)| match n {
                Some(n) => format!("event: {n}\ndata: {d}\n\n"),
                None => format!("data: {d}\n\n"),
            })
            .collect();
        let each = match dialect {
            Dialect::Anthropic => format!(
                "event: content_block_delta\ndata: {}\n\n",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}})
            ),
            Dialect::Chat => format!(
                "data: {}\n\n",
                json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]})
            ),
            Dialect::Responses => format!(
                "event: response.output_text.delta\ndata: {}\n\n",
                json!({"type": "response.output_text.delta", "sequence_number": 2, "item_id": "m", "output_index": 0, "content_index": 0, "delta": piece})
            ),
        };
        (start, each)
    } else {
        (
            "{\"id\":\"msg_endless\",\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\""
                .to_string(),
            piece,
        )
    };
    chunk(sock, start.as_bytes()).await?;
    // Never more than 8 GiB, whatever the reader does (a test that lets it run stops anyway).
    for _ in 0..(8u64 << 30) / each.len() as u64 {
        chunk(sock, each.as_bytes()).await?;
        written.fetch_add(each.len() as u64, std::sync::atomic::Ordering::Relaxed);
    }
    Ok(())
}

/// An answer's id of its own (`msg_scripted_7`), as the APIs give (an agent may join the blocks
/// of answers with one id).
fn answer_id(prefix: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{prefix}_scripted_{n}")
}

/// A whole answer of `parts`.
pub fn whole(dialect: Dialect, parts: &[Part]) -> Value {
    let calls = parts.iter().any(|p| matches!(p, Part::Call { .. }));
    let usage_a = json!({"input_tokens": 100, "output_tokens": 7});
    match dialect {
        Dialect::Anthropic => {
            let content: Vec<Value> = parts
                .iter()
                .map(|p| match p {
                    Part::Text(t) => json!({"type": "text", "text": t}),
                    Part::Call { id, name, input } => {
                        json!({"type": "tool_use", "id": id, "name": name, "input": input})
                    }
                })
                .collect();
            json!({"id": answer_id("msg"), "type": "message", "role": "assistant",
                "model": "scripted", "content": content,
                "stop_reason": if calls { "tool_use" } else { "end_turn" },
                "stop_sequence": null, "usage": usage_a})
        }
        Dialect::Chat => {
            let text: String = parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            let mut message = json!({"role": "assistant",
                "content": if text.is_empty() { Value::Null } else { json!(text) }});
            if calls {
                message["tool_calls"] = parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::Call { id, name, input } => {
                            Some(json!({"id": id, "type": "function",
                            "function": {"name": name, "arguments": input.to_string()}}))
                        }
                        _ => None,
                    })
                    .collect();
            }
            json!({"id": answer_id("chatcmpl"), "object": "chat.completion", "created": 0,
                "model": "scripted",
                "choices": [{"index": 0, "message": message,
                    "finish_reason": if calls { "tool_calls" } else { "stop" }}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107}})
        }
        Dialect::Responses => {
            json!({"id": answer_id("resp"), "object": "response", "created_at": 0,
                "status": "completed", "model": "scripted", "output": output_items(parts),
                "usage": {"input_tokens": 100, "output_tokens": 7, "total_tokens": 107}})
        }
    }
}

fn output_items(parts: &[Part]) -> Vec<Value> {
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| match p {
            Part::Text(t) => json!({"type": "message", "id": format!("msg_{i}"),
                "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": t, "annotations": []}]}),
            Part::Call { id, name, input } => json!({"type": "function_call",
                "id": format!("fc_{i}"), "call_id": id, "name": name,
                "arguments": input.to_string(), "status": "completed"}),
        })
        .collect()
}

/// The events of a streamed answer of `parts` (name, data).
pub fn events(dialect: Dialect, parts: &[Part]) -> Vec<(Option<&'static str>, String)> {
    let calls = parts.iter().any(|p| matches!(p, Part::Call { .. }));
    let id = answer_id(match dialect {
        Dialect::Anthropic => "msg",
        Dialect::Chat => "chatcmpl",
        Dialect::Responses => "resp",
    });
    let mut out: Vec<(Option<&'static str>, String)> = Vec::new();
    match dialect {
        Dialect::Anthropic => {
            let mut ev = |name: &'static str, v: Value| out.push((Some(name), v.to_string()));
            ev(
                "message_start",
                json!({"type": "message_start", "message": {"id": id,
                "type": "message", "role": "assistant", "content": [], "model": "scripted",
                "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 100, "output_tokens": 1}}}),
            );
            for (i, p) in parts.iter().enumerate() {
                match p {
                    Part::Text(t) => {
                        ev(
                            "content_block_start",
                            json!({"type": "content_block_start", "index": i,
                            "content_block": {"type": "text", "text": ""}}),
                        );
                        ev("ping", json!({"type": "ping"}));
                        ev(
                            "content_block_delta",
                            json!({"type": "content_block_delta", "index": i,
                            "delta": {"type": "text_delta", "text": t}}),
                        );
                    }
                    Part::Call { id, name, input } => {
                        ev(
                            "content_block_start",
                            json!({"type": "content_block_start", "index": i,
                            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                        );
                        // The input in two pieces of partial JSON.
                        let s = input.to_string();
                        let mid = s.len() / 2;
                        for piece in [&s[..mid], &s[mid..]] {
                            ev(
                                "content_block_delta",
                                json!({"type": "content_block_delta", "index": i,
                                "delta": {"type": "input_json_delta", "partial_json": piece}}),
                            );
                        }
                    }
                }
                ev(
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": i}),
                );
            }
            ev(
                "message_delta",
                json!({"type": "message_delta",
                "delta": {"stop_reason": if calls { "tool_use" } else { "end_turn" }, "stop_sequence": null},
                "usage": {"output_tokens": 7}}),
            );
            ev("message_stop", json!({"type": "message_stop"}));
        }
        Dialect::Chat => {
            let chunk = |delta: Value, finish: Value| {
                json!({"id": id, "object": "chat.completion.chunk",
                    "created": 0, "model": "scripted",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
                .to_string()
            };
            out.push((
                None,
                chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            ));
            let mut n = 0;
            for p in parts {
                match p {
                    Part::Text(t) => out.push((None, chunk(json!({"content": t}), Value::Null))),
                    Part::Call { id, name, input } => {
                        out.push((
                            None,
                            chunk(
                                json!({"tool_calls": [{"index": n, "id": id, "type": "function",
                                "function": {"name": name, "arguments": ""}}]}),
                                Value::Null,
                            ),
                        ));
                        out.push((
                            None,
                            chunk(
                                json!({"tool_calls": [{"index": n,
                                "function": {"arguments": input.to_string()}}]}),
                                Value::Null,
                            ),
                        ));
                        n += 1;
                    }
                }
            }
            out.push((
                None,
                chunk(json!({}), json!(if calls { "tool_calls" } else { "stop" })),
            ));
            out.push((None, "[DONE]".to_string()));
        }
        Dialect::Responses => {
            let mut seq = 0u64;
            let mut ev = |name: &'static str, mut v: Value| {
                v["type"] = json!(name);
                v["sequence_number"] = json!(seq);
                seq += 1;
                out.push((Some(name), v.to_string()));
            };
            let head = json!({"id": id, "object": "response", "created_at": 0,
                "status": "in_progress", "model": "scripted", "output": []});
            ev("response.created", json!({"response": head}));
            ev("response.in_progress", json!({"response": head}));
            let items = output_items(parts);
            for (i, (p, item)) in parts.iter().zip(&items).enumerate() {
                let id = item["id"].clone();
                match p {
                    Part::Text(t) => {
                        let mut added = item.clone();
                        added["status"] = json!("in_progress");
                        added["content"] = json!([]);
                        ev(
                            "response.output_item.added",
                            json!({"output_index": i, "item": added}),
                        );
                        ev(
                            "response.content_part.added",
                            json!({"item_id": id, "output_index": i, "content_index": 0,
                            "part": {"type": "output_text", "text": "", "annotations": []}}),
                        );
                        ev(
                            "response.output_text.delta",
                            json!({"item_id": id, "output_index": i, "content_index": 0, "delta": t}),
                        );
                        ev(
                            "response.output_text.done",
                            json!({"item_id": id, "output_index": i, "content_index": 0, "text": t}),
                        );
                        ev(
                            "response.content_part.done",
                            json!({"item_id": id, "output_index": i, "content_index": 0,
                            "part": {"type": "output_text", "text": t, "annotations": []}}),
                        );
                    }
                    Part::Call { input, .. } => {
                        let mut added = item.clone();
                        added["status"] = json!("in_progress");
                        added["arguments"] = json!("");
                        ev(
                            "response.output_item.added",
                            json!({"output_index": i, "item": added}),
                        );
                        ev(
                            "response.function_call_arguments.delta",
                            json!({"item_id": id, "output_index": i, "delta": input.to_string()}),
                        );
                        ev(
                            "response.function_call_arguments.done",
                            json!({"item_id": id, "output_index": i, "arguments": input.to_string()}),
                        );
                    }
                }
                ev(
                    "response.output_item.done",
                    json!({"output_index": i, "item": item}),
                );
            }
            let mut done = head.clone();
            done["status"] = json!("completed");
            done["output"] = Value::Array(items);
            done["usage"] = json!({"input_tokens": 100, "output_tokens": 7, "total_tokens": 107});
            ev("response.completed", json!({"response": done}));
        }
    }
    out
}

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
fn content_text(c: &Value) -> String {
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
        Dialect::Anthropic => {
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
        Dialect::Chat => {
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
        Dialect::Responses => {
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
    }
}

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
        Dialect::Anthropic => {
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
                                    Some("input_json_delta") => json_of[i]
                                        .push_str(d["partial_json"].as_str().unwrap_or("")),
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
                    "message_delta" => {
                        got.stop = v["delta"]["stop_reason"].as_str().unwrap_or("").into()
                    }
                    "message_stop" => stopped = true,
                    "error" => {
                        got.error = Some(v["error"].to_string());
                    }
                    _ => {}
                }
            }
            for (b, j) in blocks.iter_mut().zip(&json_of) {
                if b["type"] == "tool_use" {
                    b["input"] = serde_json::from_str(if j.is_empty() { "{}" } else { j })
                        .unwrap_or(Value::Null);
                }
            }
            if got.error.is_none() && !stopped {
                broken.push("no message_stop".into());
            }
            let whole = json!({"content": blocks, "stop_reason": got.stop});
            read_whole(dialect, &whole, got);
        }
        Dialect::Chat => {
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
        Dialect::Responses => {
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
                            broken
                                .push(format!("output_index {i} added, expected {}", items.len()));
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
    }
    if !broken.is_empty() {
        got.broken = Some(broken.join("; "));
    }
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
