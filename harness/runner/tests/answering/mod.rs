//! The upstream the proxy's tests in `proxy.rs` and `proxy_folders.rs` talk to: it answers in
//! the request's API (written with foldbench's own wire code: these tests look at what the
//! proxy sends, `scripted/` checks the wire itself) and keeps every body it received; and the
//! helpers those tests share.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use harness_core::ToolCall;
use harness_core::Usage;
use harness_runner::proxy::{Proxy, ProxyConfig};
use harness_wire::Api;
use harness_wire::{write_answer, Answer};
use harness_wire::{write_event, SseParser};
use harness_wire::{write_stream, StreamDecoder};
use http_body_util::BodyExt as _;
use hyper::body::Frame;
use serde_json::{json, Value};
use tokio::sync::{mpsc, Notify};

pub const KEY: &str = "sk-ant-test-SECRET-4242";

/// What the upstream answers next.
pub enum Reply {
    /// An answer in the request's API, streamed when the request asks.
    Answer(&'static str, Vec<ToolCall>),
    /// A status and a body, as an error.
    Status(u16, &'static str),
    /// A stream cut after `n` events.
    Cut(&'static str, usize),
    /// A stream whose first event goes at once and the rest after `gate` is notified.
    Gated(&'static str, Arc<Notify>),
}

pub struct Got {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// The body's bytes as they came.
    pub raw: Bytes,
}

pub struct Upstream {
    pub addr: SocketAddr,
    pub got: Arc<Mutex<Vec<Got>>>,
    pub replies: Arc<Mutex<VecDeque<Reply>>>,
    _task: tokio::task::JoinHandle<()>,
}

pub struct ChanBody(mpsc::Receiver<Result<Bytes, std::io::Error>>);

impl hyper::body::Body for ChanBody {
    type Data = Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        self.0.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data)))
    }
}

pub fn usage() -> Usage {
    Usage {
        input_tokens: 100,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        output_tokens: 5,
    }
}

pub fn events_text(api: Api, a: &Answer) -> Vec<String> {
    write_stream(api, a)
        .iter()
        .map(|e| write_event(e.event.as_deref(), &e.data))
        .collect()
}

impl Upstream {
    pub async fn start() -> Upstream {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let got: Arc<Mutex<Vec<Got>>> = Arc::default();
        let replies: Arc<Mutex<VecDeque<Reply>>> = Arc::default();
        let (g, r) = (Arc::clone(&got), Arc::clone(&replies));
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (g, r) = (Arc::clone(&g), Arc::clone(&r));
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let (g, r) = (Arc::clone(&g), Arc::clone(&r));
                        async move { Ok::<_, Infallible>(answer(&g, &r, req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Upstream {
            addr,
            got,
            replies,
            _task: task,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn push(&self, r: Reply) {
        self.replies.lock().unwrap().push_back(r);
    }

    /// Every body received, as the bytes that came.
    pub fn raw_bodies(&self) -> Vec<Bytes> {
        self.got
            .lock()
            .unwrap()
            .iter()
            .map(|g| g.raw.clone())
            .collect()
    }

    pub fn bodies(&self) -> Vec<Value> {
        self.got
            .lock()
            .unwrap()
            .iter()
            .map(|g| g.body.clone())
            .collect()
    }
}

pub async fn answer(
    got: &Mutex<Vec<Got>>,
    replies: &Mutex<VecDeque<Reply>>,
    req: hyper::Request<hyper::body::Incoming>,
) -> hyper::Response<ChanBody> {
    let path = req.uri().path().to_string();
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let bytes = req.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let api = Api::from_path(&path).unwrap_or(Api::Anthropic);
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    got.lock().unwrap().push(Got {
        path,
        headers,
        body,
        raw: bytes.clone(),
    });
    let reply = replies
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or(Reply::Answer("ok", vec![]));
    let (tx, rx) = mpsc::channel(64);
    let resp = |ct: &str, status: u16| {
        hyper::Response::builder()
            .status(status)
            .header("content-type", ct)
            .header("x-upstream", "yes")
    };
    let make = |text: &str, calls: Vec<ToolCall>| {
        Answer::from_parts(api, "a1", "m", text, calls, Some(usage()))
    };
    match reply {
        Reply::Status(status, body) => {
            tx.send(Ok(Bytes::from(body))).await.unwrap();
            resp("application/json", status)
                .header("retry-after", "7")
                .body(ChanBody(rx))
                .unwrap()
        }
        Reply::Answer(text, calls) if !stream => {
            let a = make(text, calls);
            tx.send(Ok(Bytes::from(write_answer(api, &a).to_string())))
                .await
                .unwrap();
            resp("application/json", 200).body(ChanBody(rx)).unwrap()
        }
        Reply::Answer(text, calls) => {
            for e in events_text(api, &make(text, calls)) {
                tx.send(Ok(Bytes::from(e))).await.unwrap();
            }
            resp("text/event-stream", 200).body(ChanBody(rx)).unwrap()
        }
        Reply::Cut(text, n) => {
            let evs = events_text(api, &make(text, vec![]));
            // The head and the first events go out before the cut (an error already queued
            // would make the server drop the connection before it wrote the head).
            tokio::spawn(async move {
                for e in evs.into_iter().take(n) {
                    let _ = tx.send(Ok(Bytes::from(e))).await;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                let _ = tx.send(Err(std::io::Error::other("cut"))).await;
            });
            resp("text/event-stream", 200).body(ChanBody(rx)).unwrap()
        }
        Reply::Gated(text, gate) => {
            let evs = events_text(api, &make(text, vec![]));
            tokio::spawn(async move {
                let mut evs = evs.into_iter();
                if let Some(e) = evs.next() {
                    let _ = tx.send(Ok(Bytes::from(e))).await;
                }
                gate.notified().await;
                for e in evs {
                    if tx.send(Ok(Bytes::from(e))).await.is_err() {
                        break;
                    }
                }
            });
            resp("text/event-stream", 200).body(ChanBody(rx)).unwrap()
        }
    }
}

pub async fn proxy(policy: &str, up: &Upstream, out: &Path, workdir: Option<&Path>) -> Proxy {
    let mut cfg = ProxyConfig::new(
        policies::parse_policy(policy).unwrap(),
        &up.url(),
        "127.0.0.1:0".parse().unwrap(),
        out,
    );
    cfg.workdir = workdir.map(Path::to_path_buf);
    Proxy::start(cfg).await.unwrap()
}

pub async fn post(p: &Proxy, path: &str, body: &Value) -> (u16, Vec<(String, String)>, String) {
    let r = reqwest::Client::new()
        .post(format!("{}{path}", p.base_url()))
        .header("x-api-key", KEY)
        .header("authorization", format!("Bearer {KEY}"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let headers = r
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    (status, headers, r.text().await.unwrap())
}

pub fn read_stream(api: Api, text: &str) -> Answer {
    let mut p = SseParser::new();
    let mut d = StreamDecoder::new(api);
    for ev in p.feed(text.as_bytes()).unwrap() {
        d.decode(&ev).unwrap();
    }
    assert!(d.done(), "the stream ends: {text}");
    d.answer()
}

pub fn tools() -> Vec<Value> {
    ["Bash", "Read", "Edit"]
        .iter()
        .map(|n| json!({"name": n, "description": "", "input_schema": {"type": "object"}}))
        .collect()
}

pub const BIG: &str = "A = 1\nthe long content of a.py that trim takes away\n";

/// Claude Code's history after turn 1 (a Read and its result) and the prompt of turn 2.
pub fn two_turns(stream: bool) -> Value {
    json!({
        "model": "claude-x", "max_tokens": 1000, "stream": stream,
        "system": [{"type": "text", "text": "You are an agent."}],
        "tools": tools(),
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "read a"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "c1", "name": "Read", "input": {"file_path": "a.py"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": BIG}]},
            {"role": "assistant", "content": [{"type": "text", "text": "seen"}]},
            {"role": "user", "content": [{"type": "text", "text": "now use it"}]},
        ],
    })
}

/// Every file under `dir`, read as bytes.
pub fn all_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path().display().to_string(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

pub fn no_key_in(dir: &Path) {
    for (path, bytes) in all_files(dir) {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(KEY), "{path} holds the agent's key");
        assert!(
            !text.contains("SECRET"),
            "{path} holds part of the agent's key"
        );
    }
}
