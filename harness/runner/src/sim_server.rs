//! The offline upstream (`foldbench serve --sim`, and `run --agent` with the `sim` model): an
//! HTTP server on loopback that answers the Anthropic Messages, OpenAI Chat Completions and
//! Responses APIs as a model would, from a task's script.
//!
//! Each request is read with `harness-wire` (the formats the proxy reads) into core messages,
//! answered by [`SimUpstream`] in the agent's own vocabulary, and written back in the request's
//! API: a stream when the request asked for one (`stream: true`), else one JSON body, with usage
//! counted in o200k tokens of what the request held (agents decide on their own compaction
//! from it). One server plays one conversation of one task; requests outside it (a title, a
//! quota probe) get a short text. Every exchange is kept ([`SimServer::exchanges`]) and, with a
//! log file, appended to it as a JSON line.

use std::convert::Infallible;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use harness_core::sim::SimConfig;
use harness_core::spec::TaskSpec;
use harness_core::upstream::{AgentRequest, Exchange, SimUpstream};
use harness_core::Usage;
use harness_core::{Message, ToolCall};
use harness_wire::Grouper;
use harness_wire::{decode_item, Api, Envelope, WireError};
use harness_wire::{write_answer, Answer};
use http_body_util::{BodyExt as _, Full};
use hyper::{Request, Response, StatusCode};
use tokio::sync::oneshot;

/// The largest request body the server reads (a long session's history is a few MiB).
pub(crate) const MAX_BODY_BYTES: usize = 64 << 20;

/// Why the offline upstream could not start, or a request to it could not be answered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimServerError {
    /// The listening address cannot be bound.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The socket's error.
        #[source]
        source: std::io::Error,
    },
    /// The bound socket has no address.
    #[error(transparent)]
    Address(std::io::Error),
    /// The exchange log cannot be opened.
    #[error("cannot open the log {}", path.display())]
    Log {
        /// The log file.
        path: PathBuf,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// The request's top level is not what the API accepts.
    #[error(transparent)]
    Request(WireError),
    /// An item of the request's conversation is not what the API accepts.
    #[error("{field} item {index}")]
    Item {
        /// The API's field of items (`messages`, `input`).
        field: &'static str,
        /// The item's index.
        index: usize,
        /// What is wrong with it.
        #[source]
        source: WireError,
    },
    /// An earlier answer panicked while it held the sim.
    #[error("the upstream's state was poisoned by an earlier panic")]
    Poisoned,
}

/// A running offline upstream.
pub struct SimServer {
    addr: SocketAddr,
    state: Arc<State>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

struct State {
    upstream: Mutex<SimUpstream>,
    log: Option<Mutex<std::fs::File>>,
    answered: std::sync::atomic::AtomicU64,
}

impl SimServer {
    /// Starts a server for `spec` on `listen` (port 0: any free port), logging every exchange
    /// to `log` when given.
    pub async fn start(
        spec: Arc<TaskSpec>,
        cfg: SimConfig,
        listen: SocketAddr,
        log: Option<PathBuf>,
    ) -> Result<SimServer, SimServerError> {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|source| SimServerError::Listen {
                addr: listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(SimServerError::Address)?;
        let log = match log {
            Some(path) => {
                let opened = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path);
                match opened {
                    Ok(f) => Some(Mutex::new(f)),
                    Err(source) => return Err(SimServerError::Log { path, source }),
                }
            }
            None => None,
        };
        let state = Arc::new(State {
            upstream: Mutex::new(SimUpstream::new(spec, cfg, crate::agents::vocabularies())),
            log,
            answered: std::sync::atomic::AtomicU64::new(0),
        });
        let (stop, mut stopped) = oneshot::channel::<()>();
        let serving = Arc::clone(&state);
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = &mut stopped => break,
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        let _ = stream.set_nodelay(true);
                        let state = Arc::clone(&serving);
                        tokio::spawn(async move {
                            let service = hyper::service::service_fn(move |req| {
                                let state = Arc::clone(&state);
                                async move { Ok::<_, Infallible>(handle(&state, req).await) }
                            });
                            let io = hyper_util::rt::TokioIo::new(stream);
                            let _ = hyper::server::conn::http1::Builder::new()
                                .serve_connection(io, service)
                                .await;
                        });
                    }
                }
            }
        });
        Ok(SimServer {
            addr,
            state,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every exchange so far, in order.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.state
            .upstream
            .lock()
            .map(|u| u.exchanges().to_vec())
            .unwrap_or_default()
    }

    /// Stops listening and waits for the accept loop to end.
    pub async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        if let Some(t) = &self.task {
            t.abort();
        }
    }
}

type Body = Full<Bytes>;

/// One request: 404 for a path of no API, 400 for a body the API would refuse (what is wrong),
/// else the sim's answer in the API's form.
async fn handle(state: &State, req: Request<hyper::body::Incoming>) -> Response<Body> {
    let path = req.uri().path().to_string();
    let Some(api) = Api::from_path(&path) else {
        return error(
            StatusCode::NOT_FOUND,
            &format!("no model API at {path}: the offline upstream serves /v1/messages, /v1/chat/completions and /v1/responses"),
        );
    };
    if let Some(enc) = req
        .headers()
        .get(hyper::header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .filter(|e| !e.eq_ignore_ascii_case("identity"))
    {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &format!("the request body is {enc}-encoded; the offline upstream reads plain JSON"),
        );
    }
    let body = match http_body_util::Limited::new(req.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("cannot read the request body (at most {MAX_BODY_BYTES} bytes): {e}"),
            )
        }
    };
    let answer = match answer(state, api, &body) {
        Ok(a) => a,
        Err(e) => return error(StatusCode::BAD_REQUEST, &harness_core::one_line(&e)),
    };
    let (answer, stream) = answer;
    if stream {
        let mut text = String::new();
        for ev in harness_wire::write_stream(api, &answer) {
            text.push_str(&harness_wire::write_event(ev.event.as_deref(), &ev.data));
        }
        Response::builder()
            .header("content-type", "text/event-stream")
            .header("cache-control", "no-cache")
            .body(Full::new(Bytes::from(text)))
            .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
    } else {
        json(StatusCode::OK, &write_answer(api, &answer))
    }
}

/// Reads a request and answers it; the answer, and whether it goes as a stream.
fn answer(state: &State, api: Api, body: &[u8]) -> Result<(Answer, bool), SimServerError> {
    let env = Envelope::parse(api, body).map_err(SimServerError::Request)?;
    let mut items = Vec::with_capacity(env.items.len());
    for (i, item) in env.items.iter().enumerate() {
        let units = decode_item(api, item).map_err(|source| SimServerError::Item {
            field: api.items_field(),
            index: i,
            source,
        })?;
        items.push((i, units));
    }
    let refs: Vec<(usize, &[harness_wire::Unit])> =
        items.iter().map(|(i, u)| (*i, u.as_slice())).collect();
    let pieces = Grouper::new().group(&refs);
    let mut system = env.system.clone();
    let mut messages: Vec<Arc<Message>> = Vec::new();
    for p in &pieces {
        match &p.message {
            Some(m) => messages.push(Arc::clone(m)),
            None => {
                for at in &p.units {
                    let unit = &items[at.item].1[at.unit];
                    let text = pinned_text(unit.raw.get());
                    if !text.is_empty() {
                        system.push_str("\n\n");
                        system.push_str(&text);
                    }
                }
            }
        }
    }
    let req = AgentRequest {
        system: &system,
        tools: &env.tools,
        messages: &messages,
    };
    let (reply, exchange) = {
        let mut up = state
            .upstream
            .lock()
            .map_err(|_| SimServerError::Poisoned)?;
        let reply = up.answer(&req);
        (reply, up.exchanges().last().cloned())
    };
    if let (Some(log), Some(e)) = (&state.log, &exchange) {
        if let (Ok(mut f), Ok(line)) = (log.lock(), serde_json::to_string(e)) {
            let _ = writeln!(f, "{line}");
        }
    }
    let n = state
        .answered
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let input = u64::from(harness_core::tokens::count(&system))
        + messages.iter().map(|m| u64::from(m.tokens)).sum::<u64>();
    let output = u64::from(harness_core::tokens::count(&reply.text));
    let usage = Usage {
        input_tokens: input,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        output_tokens: output,
    };
    let id = format!("sim{n}");
    let model = if env.model.is_empty() {
        "foldbench-sim".to_string()
    } else {
        env.model.clone()
    };
    let mut a = Answer::from_parts(
        api,
        &id,
        &model,
        &reply.text,
        reply.calls.clone(),
        Some(usage),
    );
    if api == Api::Responses {
        custom_calls(&mut a, &reply.calls, &env.tools);
    }
    Ok((a, env.stream))
}

/// A Responses answer's calls of the request's custom (freeform) tools, written as
/// `custom_tool_call` items with the call's `input` (Codex's `apply_patch`).
fn custom_calls(a: &mut Answer, calls: &[ToolCall], tools: &[harness_core::ToolSpec]) {
    let custom = |name: &str| {
        tools.iter().any(|t| {
            t.name == name && t.parameters.get("type").and_then(|v| v.as_str()) == Some("custom")
        })
    };
    for part in &mut a.parts {
        let (Some("function_call"), Some(id)) = (
            part.get("type").and_then(|v| v.as_str()),
            part.get("call_id")
                .and_then(|v| v.as_str())
                .map(str::to_string),
        ) else {
            continue;
        };
        let Some(c) = calls.iter().find(|c| c.id == id && custom(&c.name)) else {
            continue;
        };
        let item_id = part.get("id").cloned().unwrap_or(serde_json::Value::Null);
        *part = serde_json::json!({
            "type": "custom_tool_call", "id": item_id, "status": "completed",
            "call_id": c.id, "name": c.name,
            "input": c.args.get("input").cloned().unwrap_or(serde_json::json!("")),
        });
    }
}

/// The text of a pinned item (`system`, `developer`): its `content` or `text`, a string or the
/// `text` of each block.
fn pinned_text(raw: &str) -> String {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(raw) else {
        return String::new();
    };
    let of = |x: &serde_json::Value| match x {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
    };
    v.get("content")
        .map(of)
        .or_else(|| v.get("text").map(of))
        .unwrap_or_default()
}

fn json(status: StatusCode, v: &serde_json::Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(v.to_string())))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

/// An error in the shape both APIs use (`{"type":"error","error":{"type":…,"message":…}}`).
fn error(status: StatusCode, message: &str) -> Response<Body> {
    json(
        status,
        &serde_json::json!({
            "type": "error",
            "error": {"type": "invalid_request_error", "message": message},
        }),
    )
}
