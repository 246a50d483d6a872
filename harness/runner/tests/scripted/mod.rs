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

mod agent;
mod answers;
mod requests;

// Each test file uses some of these.
#[allow(unused_imports)]
pub use agent::{ask, first_body, Agent, Got};
pub use answers::{events, whole};
pub use requests::{check, history, Entry};

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
