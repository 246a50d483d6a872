//! `foldbench proxy`: a model API proxy between a real agent and its model that applies a
//! context policy to every request and records what it did as a run folder.
//!
//! The proxy serves the Anthropic Messages API (`/v1/messages`) and OpenAI's Chat Completions
//! (`/v1/chat/completions`) and Responses (`/v1/responses`), streamed and not. For each request
//! of a conversation it reads the agent's history (`conversation`), re-applies what the policy
//! did before (splices, compactions, cards, by message identity), lets the policy plan the
//! request, relays it to the upstream with the agent's own headers (its key included, never
//! written anywhere) and relays the answer back in the form it came (a stream stays a stream).
//!
//! - A call of the policy's own tool (`fold_unit`) in the answer is answered by the proxy, which
//!   asks the model again; the agent never sees the call, only the answer that follows it.
//! - A splice's archive is written under the agent's working folder (`.foldbench/archive/`, with
//!   its sha256) before the splice is applied, so the agent's own tools can read it back.
//! - Compaction asks the upstream for the summary (a real call, recorded as one).
//! - Requests outside the main conversation pass through unchanged and are recorded as such: a
//!   path of no conversation API (count-tokens, model lists), a stateful Responses call, and a
//!   request that matches no conversation while the proxy carries one of another model, or one
//!   with tools when it has none (a title, a quota probe). A conversation without tools
//!   (mini-swe-agent's, whose commands are text) is a conversation like any other.
//! - Upstream errors are passed through as they came (status and body); a malformed request gets
//!   a 400 saying what is wrong; an upstream that cuts a stream gives the agent an error event;
//!   an agent that disconnects ends the upstream call. Each is recorded in `exchanges.jsonl`.
//! - A conversation idle past a limit, or the least recently used past the conversations or
//!   bytes held ([`MemoryLimits`]), leaves memory and comes back from its saved state when the
//!   agent resumes it, the same requests going upstream.
//!
//! The library API ([`Proxy::start`], [`Proxy::addr`], [`Proxy::stop`]) is what `run --agent`
//! uses to put one proxy in front of each cell; `record` says what the run folder holds.

pub(crate) mod conversation;
pub use conversation::{
    decode, decode_after, BodySlot, Conversation, Decode, DecodeError, Decoded, Kept, Outgoing,
    Prefixes, Step,
};
mod error;
mod forward;
mod memory;
pub(crate) mod record;
mod relay;
mod upstream;
mod workdir;

pub(crate) use error::AnswerError;
pub use error::ProxyError;
use memory::Slot;
pub use memory::{MemoryLimits, IDLE, MAX_HELD, MAX_HELD_BYTES};
use upstream::{agent_head, error_chain, malformed, pass_through, read_whole, send_upstream};
use workdir::archive_root;
pub(crate) use workdir::Root;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::Instant;

use bytes::Bytes;
use harness_core::{Message, ToolCall};
use harness_wire::Api;
use harness_wire::{error_event, rewrite, EventRole, StreamDecoder};
use harness_wire::{parse_answer, prepend_parts};
use harness_wire::{write_event, SseEvent, SseParser};
use http_body_util::BodyExt as _;
use hyper::body::{Frame, Incoming};
use hyper::{HeaderMap, Request, Response, StatusCode};
use policies::PolicySpec;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

use record::{Exchange, Recorder};

/// The largest request body the proxy reads (a long session's history is a few MiB).
pub(crate) const MAX_BODY_BYTES: usize = 64 << 20;

/// The most bytes of one upstream answer the proxy reads by default (32 MiB, as `run` reads of a
/// provider's answer; a long answer is a few MiB even streamed).
pub const ANSWER_CAP: usize = 32 << 20;

/// The longest one upstream answer may take by default, head to end (20 minutes: a model's
/// longest answers take a few).
pub const ANSWER_TIME: std::time::Duration = std::time::Duration::from_secs(20 * 60);

/// How long a client may take to send a request's headers before the proxy closes the
/// connection (one that trickles its headers would otherwise hold it forever).
pub(crate) const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The most connections the proxy serves at once; more wait until one closes.
pub(crate) const MAX_CONNECTIONS: usize = 256;

/// The limits on one upstream answer: a stream is relayed as it comes, and what the proxy
/// holds of it (the answer it adds up, an event not yet whole) is within the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerLimits {
    /// The most bytes read of one answer.
    pub bytes: usize,
    /// The longest one answer may take, from the request sent to its last byte.
    pub time: std::time::Duration,
}

impl Default for AnswerLimits {
    fn default() -> Self {
        AnswerLimits {
            bytes: ANSWER_CAP,
            time: ANSWER_TIME,
        }
    }
}

/// A piece of a streamed answer for the agent; an error ends the connection mid-body (the
/// agent sees an incomplete answer, never a truncated one that looks whole).
pub(crate) type Piece = Result<Bytes, std::io::Error>;

/// How many times in a row the proxy answers its policy's tool and asks the model again before
/// it gives the agent the answer as it is.
pub(crate) const MAX_POLICY_ROUNDS: usize = 4;

/// What a proxy runs with.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// The policy applied to every conversation.
    pub(crate) policy: PolicySpec,
    /// The upstream's base URL (`https://api.anthropic.com`, `http://127.0.0.1:8787`); the
    /// agent's request path is appended (a `/v1` at the end of both is not doubled).
    pub(crate) upstream: String,
    /// Where to listen (port 0: any free port).
    pub(crate) listen: SocketAddr,
    /// The run folder the records go to.
    pub(crate) out: PathBuf,
    /// The agent's working folder, where archives go (`.foldbench/archive/`); `None`: the
    /// folder the agent's system prompt names (Claude Code's "Primary working directory", a
    /// `<cwd>`: the top-level system prompt or a `system`/`developer` entry, never a user's
    /// text or a tool's result) when it is under `archives_under`, else a splice fails with
    /// that reason.
    pub workdir: Option<PathBuf>,
    /// The folder archives may be written under when no `workdir` is given; `None`: the
    /// folder the proxy starts in.
    pub archives_under: Option<PathBuf>,
    /// The model's context window the policy assumes (compaction thresholds).
    pub window: u64,
    /// The arm label records carry (the policy as the user wrote it).
    pub(crate) arm: String,
    /// The task name records carry (`proxy`, or the task a cell of `run --agent` runs).
    pub(crate) task: String,
    /// The task whose needed facts the harness watches in each conversation (`run --agent`):
    /// each turn's facts, visible in its first request or brought back by a tool result, as
    /// `needs` events (the `lost` column).
    pub(crate) needs: Option<Arc<harness_core::spec::TaskSpec>>,
    /// The cap and the time limit on every upstream answer.
    pub limits: AnswerLimits,
    /// How long a client may take to send a request's headers before its connection is
    /// closed.
    pub header_timeout: std::time::Duration,
    /// The most connections served at once; more wait until one closes.
    pub max_connections: usize,
    /// When conversations leave memory (idle, too many held); they come back from their
    /// state when the agent resumes them.
    pub memory: MemoryLimits,
}

impl ProxyConfig {
    /// A configuration with the defaults: the arm named after the policy, task `proxy`, a
    /// 200,000-token window, archives in the folder the agent's requests name.
    pub fn new(policy: PolicySpec, upstream: &str, listen: SocketAddr, out: &Path) -> ProxyConfig {
        ProxyConfig {
            arm: policy.label(),
            policy,
            upstream: upstream.trim_end_matches('/').to_string(),
            listen,
            out: out.to_path_buf(),
            workdir: None,
            archives_under: None,
            window: 200_000,
            task: "proxy".into(),
            needs: None,
            limits: AnswerLimits::default(),
            header_timeout: HEADER_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
            memory: MemoryLimits::default(),
        }
    }
}

/// A running proxy.
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// Connections being served.
    open: Arc<std::sync::atomic::AtomicUsize>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// Takes idle conversations out of memory.
    sweeper: Option<tokio::task::JoinHandle<()>>,
}

/// What a stopped proxy leaves: one entry per conversation, as written to the run folder.
#[derive(Debug, Clone, Serialize)]
pub struct ProxySummary {
    /// The run folder.
    pub out: PathBuf,
    /// Each conversation's cell id, in the order they began.
    pub cells: Vec<String>,
    /// Requests the proxy answered (main, side and pass-through).
    pub requests: u64,
    /// Of them, the side and pass-through requests (outside any conversation).
    pub side_requests: u64,
    /// Requests the model answered in the folder's conversations, as `report` counts them
    /// (every record's `requests`: the proxy's own requests after a policy call included,
    /// compaction calls and failed requests not).
    pub model_requests: u64,
    /// The folder's conversations (its records).
    pub conversations: usize,
}

struct Shared {
    cfg: ProxyConfig,
    /// The folder archives may go under (canonical), when no `workdir` is given.
    archives_under: PathBuf,
    client: reqwest::Client,
    convs: Mutex<Convs>,
    /// Each conversation's last body, decoded, found by the bytes a request shares with it.
    prefixes: conversation::Prefixes,
    recorder: Arc<Mutex<Recorder>>,
    answered: std::sync::atomic::AtomicU64,
    side: std::sync::atomic::AtomicU64,
}

#[derive(Default)]
struct Convs {
    /// Every conversation, in memory or not, in the order they began.
    list: Vec<Slot>,
    /// Hint (session id) or first message → conversation.
    by_key: HashMap<String, usize>,
    /// The conversations a session id names.
    hinted: std::collections::HashSet<usize>,
    /// The number the next new conversation gets.
    next: u64,
}

/// A conversation and its place in the records.
pub(crate) struct Entry {
    pub(crate) cell: String,
    pub(crate) model: String,
    /// Whether its requests carry tools (a later request without them is a side request).
    pub(crate) tools: bool,
    pub(crate) conv: Conversation,
    pub(crate) written_events: usize,
    /// The keys requests are routed to it by (kept in its state for a restart).
    pub(crate) keys: Vec<String>,
    /// The generation of its state last written ([`Conversation::generation`]).
    pub(crate) saved: Option<(u32, usize, usize, u32)>,
    /// Where its archives go, as its last request said.
    pub(crate) root: Root,
    /// Whether the archive folder was left out of the agent's `git status` this run.
    pub(crate) excluded: bool,
    /// Its last request's body, decoded: the next is read from where it differs.
    pub(crate) prefix: Arc<conversation::BodySlot>,
}

impl Proxy {
    /// Starts a proxy: opens (or reopens, continuing it) the run folder `cfg.out`, listens on
    /// `cfg.listen`. An error when the policy does not build, the folder cannot be written or
    /// the address cannot be listened on.
    pub async fn start(cfg: ProxyConfig) -> Result<Proxy, ProxyError> {
        policies::build(&cfg.policy, cfg.window)?;
        let mut recorder = Recorder::open(&cfg)?;
        let mut convs = Convs {
            next: recorder.next_number(),
            ..Convs::default()
        };
        let prefixes = conversation::Prefixes::default();
        // The conversations of an earlier proxy on this folder continue where they were: out
        // of memory until a request of theirs comes.
        for saved in recorder.take_restored() {
            let i = convs.list.len();
            for k in &saved.keys {
                convs.by_key.insert(k.clone(), i);
                if k.starts_with("h:") {
                    convs.hinted.insert(i);
                }
            }
            convs.list.push(Slot {
                cell: saved.cell,
                model: saved.model,
                tools: saved.tools,
                live: None,
                used: Instant::now(),
                held: 0,
                left: None,
            });
        }
        let listener = tokio::net::TcpListener::bind(cfg.listen)
            .await
            .map_err(|source| ProxyError::Listen {
                addr: cfg.listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(ProxyError::Address)?;
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .tcp_nodelay(true)
            .build()
            .map_err(ProxyError::HttpClient)?;
        let under = match &cfg.archives_under {
            Some(d) => d.clone(),
            None => std::env::current_dir().map_err(ProxyError::io("read", Path::new(".")))?,
        };
        let archives_under =
            std::fs::canonicalize(&under).map_err(ProxyError::io("open", &under))?;
        let shared = Arc::new(Shared {
            archives_under,
            cfg,
            client,
            convs: Mutex::new(convs),
            prefixes,
            recorder: Arc::new(Mutex::new(recorder)),
            answered: std::sync::atomic::AtomicU64::new(0),
            side: std::sync::atomic::AtomicU64::new(0),
        });
        let (stop, mut stopped) = oneshot::channel::<()>();
        let sweeper = memory::spawn_sweeper(&shared);
        let serving = Arc::clone(&shared);
        let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&open);
        // At most `max_connections` are served: the next is accepted when one closes (until
        // then it waits in the listener's backlog), and a client gets `header_timeout` to send
        // its request's headers.
        let permits = Arc::new(tokio::sync::Semaphore::new(
            serving.cfg.max_connections.max(1),
        ));
        let header_timeout = serving.cfg.header_timeout;
        let task = tokio::spawn(async move {
            // The connections' tasks: when the proxy stops they are ended with it, so no idle
            // keep-alive connection keeps the run folder (and its lock) after `stop` returns.
            let mut conns = tokio::task::JoinSet::new();
            loop {
                while conns.try_join_next().is_some() {}
                let permit = tokio::select! {
                    _ = &mut stopped => break,
                    p = Arc::clone(&permits).acquire_owned() => match p {
                        Ok(p) => p,
                        Err(_) => break,
                    },
                };
                let accepted = tokio::select! {
                    _ = &mut stopped => break,
                    a = listener.accept() => a,
                };
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let shared = Arc::clone(&serving);
                let counted = Arc::clone(&counted);
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                conns.spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let shared = Arc::clone(&shared);
                        async move { Ok::<_, Infallible>(handle(shared, req).await) }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .timer(hyper_util::rt::TokioTimer::new())
                        .header_read_timeout(header_timeout)
                        .serve_connection(io, service)
                        .await;
                    counted.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    drop(permit);
                });
            }
            conns.shutdown().await;
        });
        Ok(Proxy {
            addr,
            open,
            shared,
            stop: Some(stop),
            task: Some(task),
            sweeper: Some(sweeper),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The connections being served now (at most the configuration's `max_connections`).
    pub fn connections(&self) -> usize {
        self.open.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The URL an agent is pointed at (`http://127.0.0.1:PORT`, no path).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The events of every conversation so far (cell id, events), in the order they began.
    pub async fn events(&self) -> Vec<(String, Vec<harness_core::Event>)> {
        let list = self.shared.slots();
        let mut out = Vec::new();
        for (cell, live) in list {
            match live {
                Some(e) => {
                    let e = e.lock().await;
                    out.push((e.cell.clone(), e.conv.events.clone()));
                }
                None => {
                    let events = self
                        .shared
                        .recorder
                        .lock()
                        .ok()
                        .and_then(|r| r.load_cell(&cell).ok())
                        .map(|(_, events)| events)
                        .unwrap_or_default();
                    out.push((cell, events));
                }
            }
        }
        out
    }

    /// Stops listening, waits for the requests in progress, and writes every conversation's
    /// record (`cells.jsonl`); returns what was written.
    pub async fn stop(mut self) -> Result<ProxySummary, ProxyError> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
        if let Some(t) = self.sweeper.take() {
            t.abort();
        }
        let list = self.shared.slots();
        let mut cells = Vec::new();
        for (cell, live) in &list {
            let Some(e) = live else {
                // Out of memory: its record from its files (its last turn ended when it left).
                let rec = Arc::clone(&self.shared.recorder);
                let mut r = rec.lock().map_err(|_| ProxyError::Poisoned("recorder"))?;
                let (saved, events) = r.load_cell(cell)?;
                let policy = policies::build(&self.shared.cfg.policy, self.shared.cfg.window)?;
                r.finish(
                    &self.shared.cfg,
                    record::Finished {
                        cell,
                        model: &saved.model,
                        policy: &policy.name(),
                        failed: saved.failed().map(str::to_string),
                        turns: saved.turn(),
                        events: &events,
                    },
                )?;
                cells.push(cell.clone());
                continue;
            };
            let mut e = e.lock().await;
            // The agent is done: its last turn ends, with the policy's splices of that end.
            let splices = e.conv.end_last_turn();
            if !splices.is_empty() {
                let (turn, root) = (e.conv.turn(), e.root.clone());
                relay::apply_splices(&self.shared, &mut e, &splices, turn, &root);
            }
            let rec = Arc::clone(&self.shared.recorder);
            let mut r = rec.lock().map_err(|_| ProxyError::Poisoned("recorder"))?;
            // Its state written again whatever changed: what the policy remembers may have
            // changed without the turn, edits or cards (a policy process's counters), and a
            // proxy started again on the folder brings the conversation back from it.
            e.saved = None;
            r.flush_entry(&mut e)?;
            r.finish_entry(&self.shared.cfg, &e)?;
            cells.push(e.cell.clone());
        }
        let mut r = self
            .shared
            .recorder
            .lock()
            .map_err(|_| ProxyError::Poisoned("recorder"))?;
        r.write_records()?;
        r.release();
        let (conversations, model_requests) = r.recorded();
        let load = |n: &std::sync::atomic::AtomicU64| n.load(std::sync::atomic::Ordering::Relaxed);
        Ok(ProxySummary {
            out: self.shared.cfg.out.clone(),
            cells,
            requests: load(&self.shared.answered),
            side_requests: load(&self.shared.side),
            model_requests,
            conversations,
        })
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(t) = &self.task {
            t.abort();
        }
        if let Some(t) = &self.sweeper {
            t.abort();
        }
    }
}

/// A response body: whole, or a stream fed by a task.
pub(crate) enum ProxyBody {
    /// All of it.
    Full(Option<Bytes>),
    /// Pieces as they come.
    Stream(mpsc::Receiver<Piece>),
}

impl hyper::body::Body for ProxyBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        match self.get_mut() {
            ProxyBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            ProxyBody::Stream(rx) => rx.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data))),
        }
    }
}

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<ProxyBody> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(ProxyBody::Full(Some(body.into())))
        .unwrap_or_else(|_| Response::new(ProxyBody::Full(None)))
}

/// An error in the shape the APIs use (`{"type":"error","error":{"type":…,"message":…}}`).
fn error(status: StatusCode, message: &str) -> Response<ProxyBody> {
    let kind = if status == StatusCode::BAD_REQUEST {
        "invalid_request_error"
    } else {
        "api_error"
    };
    full(
        status,
        "application/json",
        serde_json::json!({"type": "error", "error": {"type": kind, "message": message}})
            .to_string(),
    )
}

/// The session id an agent's headers carry (Claude Code's, Codex's), if any.
fn header_hint(h: &HeaderMap) -> Option<String> {
    [
        "x-claude-code-session-id",
        "session-id",
        "thread-id",
        "conversation-id",
    ]
    .iter()
    .find_map(|n| h.get(*n).and_then(|v| v.to_str().ok()).map(str::to_string))
}

/// One request of the agent.
async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Response<ProxyBody> {
    shared
        .answered
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (parts, body) = req.into_parts();
    let path_q = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let path = parts.uri.path().to_string();
    let body = match http_body_util::Limited::new(body, MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            let msg = format!("cannot read the request body (at most {MAX_BODY_BYTES} bytes): {e}");
            shared.log(Exchange::new("refused", &path).status(413).note(&msg));
            return error(StatusCode::PAYLOAD_TOO_LARGE, &msg);
        }
    };
    let api = Api::from_path(&path).filter(|_| parts.method == hyper::Method::POST);
    let Some(api) = api else {
        return pass_through(
            &shared,
            &parts,
            &path_q,
            body,
            "passthrough",
            "not a conversation API path",
        )
        .await;
    };
    if let Some(enc) = parts
        .headers
        .get(hyper::header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .filter(|e| !e.eq_ignore_ascii_case("identity"))
    {
        let msg = format!("the request body is {enc}-encoded; the proxy reads plain JSON (send it without Content-Encoding)");
        shared.log(Exchange::new("refused", &path).status(415).note(&msg));
        return error(StatusCode::UNSUPPORTED_MEDIA_TYPE, &msg);
    }
    // Read from where the body differs from a conversation's last one (the same result as
    // decoding it whole).
    let conversation::Decode { decoded, kept, .. } = match shared.prefixes.decode(api, &body) {
        Ok(d) => d,
        Err(e) => {
            let msg = format!(
                "malformed {} request: {}",
                api.name(),
                harness_core::one_line(&e)
            );
            shared.log(Exchange::new("refused", &path).status(400).note(&msg));
            return error(StatusCode::BAD_REQUEST, &msg);
        }
    };
    if decoded.env.stateful {
        return pass_through(
            &shared,
            &parts,
            &path_q,
            body,
            "side",
            "a stateful Responses call (previous_response_id): its history is upstream",
        )
        .await;
    }
    let hint = header_hint(&parts.headers).or_else(|| decoded.env.hint.clone());
    let entry = match shared.conversation(hint.as_deref(), &decoded, body.len()) {
        Ok(Found::Side(reason)) => {
            return pass_through(&shared, &parts, &path_q, body, "side", &reason).await
        }
        Ok(Found::Entry(e)) => e,
        Err(e) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &harness_core::one_line(&e),
            )
        }
    };
    let guard = entry.lock_owned().await;
    if let Some(kept) = kept {
        guard.prefix.keep(kept);
    }
    relay::main_request(shared, guard, api, &parts, &path_q, decoded).await
}

enum Found {
    Entry(Arc<tokio::sync::Mutex<Entry>>),
    Side(String),
}

impl Shared {
    /// Every conversation's cell and, when it is in memory, the conversation.
    fn slots(&self) -> Vec<(String, Option<Arc<tokio::sync::Mutex<Entry>>>)> {
        self.convs
            .lock()
            .map(|c| {
                c.list
                    .iter()
                    .map(|s| (s.cell.clone(), s.live.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The conversation of a slot, brought back into memory from its files when it left.
    fn bring_back(&self, slot: &mut Slot) -> Result<Arc<tokio::sync::Mutex<Entry>>, ProxyError> {
        if let Some(e) = &slot.live {
            return Ok(Arc::clone(e));
        }
        let (saved, events) = self
            .recorder
            .lock()
            .map_err(|_| ProxyError::Poisoned("recorder"))?
            .load_cell(&slot.cell)?;
        let policy = self.cfg.policy.clone();
        let window = self.cfg.window;
        let mut conv = Conversation::new(Box::new(move || policies::build(&policy, window)))?;
        if let Some(spec) = &self.cfg.needs {
            conv.watch_needs(Arc::clone(spec));
        }
        let written = events.len();
        conv.restore(&saved, events);
        let generation = conv.generation();
        let entry = Arc::new(tokio::sync::Mutex::new(Entry {
            cell: saved.cell.clone(),
            model: saved.model.clone(),
            tools: saved.tools,
            conv,
            written_events: written,
            root: Root::Unknown,
            excluded: false,
            keys: saved.keys.clone(),
            saved: Some(generation),
            prefix: self.prefixes.slot(),
        }));
        slot.live = Some(Arc::clone(&entry));
        let note = match slot.left.take() {
            Some(t) => format!(
                "brought back from its state after {} s out of memory",
                t.elapsed().as_secs()
            ),
            None => "brought back from its state (an earlier proxy's conversation)".into(),
        };
        self.log(Exchange::new("reloaded", "").cell(&slot.cell).note(&note));
        Ok(entry)
    }

    fn log(&self, e: Exchange) {
        if let Ok(mut r) = self.recorder.lock() {
            r.exchange(&e);
        }
    }

    /// The conversation a request belongs to: by the agent's session id when it sends one, else
    /// by its first message; a new one otherwise. A request of another model than the
    /// conversation's is a side request.
    fn conversation(
        &self,
        hint: Option<&str>,
        req: &Decoded,
        size: usize,
    ) -> Result<Found, ProxyError> {
        let first = first_route(req);
        let hint = hint.map(|h| format!("h:{h}"));
        let mut convs = self
            .convs
            .lock()
            .map_err(|_| ProxyError::Poisoned("proxy's state"))?;
        let by_hint = hint.as_ref().and_then(|h| convs.by_key.get(h)).copied();
        // A session id not seen before is a new conversation even when its first message is
        // another session's (agents begin every session with the same reminder), unless that
        // conversation has no session id of its own.
        let by_first = first
            .as_ref()
            .and_then(|f| convs.by_key.get(f))
            .copied()
            .filter(|i| hint.is_none() || !convs.hinted.contains(i));
        if let Some(i) = by_hint.or(by_first) {
            let slot = &convs.list[i];
            if slot.live.is_none()
                && !slot.model.is_empty()
                && !req.env.model.is_empty()
                && slot.model != req.env.model
            {
                return Ok(Found::Side(format!(
                    "another model ({}) than the conversation's ({})",
                    req.env.model, slot.model
                )));
            }
            let e = self.bring_back(&mut convs.list[i])?;
            convs.list[i].used = Instant::now();
            convs.list[i].held = size;
            // The model is read without waiting: a conversation's own requests come one at a
            // time, and a side model's request would otherwise wait for the main one.
            if let Ok(mut g) = e.try_lock() {
                if !g.model.is_empty() && !req.env.model.is_empty() && g.model != req.env.model {
                    return Ok(Found::Side(format!(
                        "another model ({}) than the conversation's ({})",
                        req.env.model, g.model
                    )));
                }
                if let Some(h) = hint.as_ref().filter(|_| by_hint.is_none()) {
                    if !g.keys.contains(h) {
                        g.keys.push(h.clone());
                    }
                }
            }
            if let Some(h) = hint.filter(|_| by_hint.is_none()) {
                convs.by_key.insert(h, i);
                convs.hinted.insert(i);
            }
            if let Some(f) = first {
                convs.by_key.insert(f, i);
            }
            self.sweep(&mut convs.list);
            return Ok(Found::Entry(e));
        }
        // Not a conversation seen before: a side request, or a new conversation.
        if let Some(why) = side_reason(&convs.list, req) {
            return Ok(Found::Side(why));
        }
        let n = convs.next;
        convs.next += 1;
        let policy = self.cfg.policy.clone();
        let window = self.cfg.window;
        let mut conv = Conversation::new(Box::new(move || policies::build(&policy, window)))?;
        if let Some(spec) = &self.cfg.needs {
            conv.watch_needs(Arc::clone(spec));
        }
        let model = if req.env.model.is_empty() {
            "unknown".to_string()
        } else {
            req.env.model.clone()
        };
        let cell = harness_core::cell_id(&self.cfg.task, &self.cfg.arm, &model, n);
        let entry = Arc::new(tokio::sync::Mutex::new(Entry {
            cell: cell.clone(),
            model: req.env.model.clone(),
            tools: !req.env.tools.is_empty(),
            conv,
            written_events: 0,
            root: Root::Unknown,
            excluded: false,
            keys: hint.iter().chain(first.iter()).cloned().collect(),
            saved: None,
            prefix: self.prefixes.slot(),
        }));
        let mut slot = Slot::live(Arc::clone(&entry), &cell, &req.env.model);
        slot.tools = !req.env.tools.is_empty();
        slot.held = size;
        let i = convs.list.len();
        convs.list.push(slot);
        if let Some(h) = hint {
            convs.by_key.insert(h, i);
            convs.hinted.insert(i);
        }
        if let Some(f) = first {
            convs.by_key.insert(f, i);
        }
        self.sweep(&mut convs.list);
        Ok(Found::Entry(entry))
    }
}

/// The key a request is routed by its first message (`m:` and the start of its identity).
pub(crate) fn first_route(req: &Decoded) -> Option<String> {
    req.first_key().map(|k| format!("m:{k:?}"))
}

fn ms_since(t: Instant) -> u64 {
    u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Why a request of no conversation seen before is a side request: the proxy already carries a
/// conversation of another model (a title, a quota probe of a small model), or one with tools
/// while this request has none. A first request without tools is a conversation:
/// mini-swe-agent sends none, its commands are text.
fn side_reason(slots: &[Slot], req: &Decoded) -> Option<String> {
    for slot in slots {
        let (model, tools) = match &slot.live {
            Some(e) => {
                let Ok(g) = e.try_lock() else { continue };
                (g.model.clone(), g.tools)
            }
            None => (slot.model.clone(), slot.tools),
        };
        if !model.is_empty() && !req.env.model.is_empty() && model != req.env.model {
            return Some(format!(
                "another model ({}) than the proxy's conversation ({})",
                req.env.model, model
            ));
        }
        if tools && req.env.tools.is_empty() {
            return Some("no tools, beside a conversation that has them (a title, a probe)".into());
        }
    }
    None
}
