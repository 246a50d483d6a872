//! The proxy's memory over many conversations: `PM_CONVS` conversations (default 10,000) of
//! about `PM_KB` KB each (default 100) go through one `foldbench proxy` process, `PM_AT_ONCE`
//! at a time (default 8), each `PM_REQUESTS` requests (default 4) in the Anthropic Messages
//! API as Claude Code sends them (a system prompt, tools, the whole history every time: tool
//! calls and results growing to the final size, a session id per conversation). A loopback
//! upstream in this process answers each at once.
//!
//! Printed every 1,000 finished conversations: the proxy's resident memory (`/proc/PID/status`
//! VmRSS) and, at the end, its growth per finished conversation after the first
//! `PM_WARM` (default 1,000), the request time as the client sees it (median, p99) and the
//! proxy's CPU time per request (user + system, `/proc/PID/stat`).
//!
//! The proxy is the release binary next to this bench's (`cargo build --release -p foldbench`)
//! or `FOLDBENCH_BIN` (another build: main's, to compare); `PM_POLICY` is its policy (default
//! `none`) and `PM_ARGS` more flags for it (`--idle-secs 60`). Its run folder is made under
//! `PM_TMP` (default: the system's temporary folder).
//!
//! Run: `cargo bench -p harness-runner --bench proxy_memory`.

use std::convert::Infallible;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use serde_json::{json, Value};

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const ANSWER: &str = r#"{"id":"msg_mem","type":"message","role":"assistant","model":"claude-bench","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_next","name":"Read","input":{"file_path":"/repo/src/next.rs"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":25000,"output_tokens":20}}"#;

/// A loopback upstream that reads each body whole and answers at once with one tool call.
async fn upstream() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the upstream");
    let addr = listener.local_addr().expect("the upstream's address");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    |req: hyper::Request<hyper::body::Incoming>| async move {
                        let _ = req.into_body().collect().await;
                        Ok::<_, Infallible>(
                            hyper::Response::builder()
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from_static(ANSWER.as_bytes())))
                                .expect("a response"),
                        )
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// A tool output of about `bytes` bytes, different for every conversation and step.
fn output(conv: usize, step: usize, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 100);
    let mut i = 0usize;
    while s.len() < bytes {
        s.push_str(&format!(
            "{i:>5}\t    let value_{conv}_{step} = self.handler_{i}.result_for(&context, {step})?;\n"
        ));
        i += 1;
    }
    s
}

/// The body of request `step` of conversation `conv`: a prompt, then per earlier step a call
/// and its result (each result a share of the final size).
fn body(conv: usize, step: usize, steps: usize, kb: usize, tools: &Value) -> Vec<u8> {
    let share = kb * 1000 / steps.max(1);
    let mut m = vec![json!({"role": "user", "content": [
        {"type": "text", "text": format!("Conversation {conv}: read the sources and fix the failing test.")},
    ]})];
    for k in 0..step {
        let id = format!("toolu_{conv}_{k}");
        m.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("I will read file {k}.")},
            {"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": format!("/repo/src/f{k}.rs")}},
        ]}));
        m.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": output(conv, k, share)},
        ]}));
    }
    json!({
        "model": "claude-bench",
        "max_tokens": 8192,
        "system": [{"type": "text", "text": format!("You are Claude Code.\n{}", "Follow the user's instructions. ".repeat(100))}],
        "tools": tools,
        "metadata": {"user_id": format!("session-{conv}")},
        "messages": m,
    })
    .to_string()
    .into_bytes()
}

fn tools() -> Value {
    Value::Array(
        ["Bash", "Edit", "Read", "Write"]
            .iter()
            .map(|n| json!({"name": n, "description": format!("{n} does what its name says."), "input_schema": {"type": "object"}}))
            .collect(),
    )
}

fn foldbench_bin() -> PathBuf {
    if let Ok(p) = std::env::var("FOLDBENCH_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("this bench's path");
    exe.parent()
        .and_then(|d| d.parent())
        .expect("target/release")
        .join("foldbench")
}

/// A field of `/proc/PID/status`, KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// User + system CPU seconds of a process so far.
fn cpu_s(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / 100.0
}

fn start_proxy(up: SocketAddr, policy: &str, out: &std::path::Path) -> (Child, String) {
    let bin = foldbench_bin();
    let extra: Vec<String> = std::env::var("PM_ARGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let mut child = Command::new(&bin)
        .args(["proxy", "--policy", policy, "--listen", "127.0.0.1:0"])
        .arg("--upstream")
        .arg(format!("http://{up}"))
        .arg("--out")
        .arg(out.join("run"))
        .arg("--workdir")
        .arg(out)
        .args(&extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (build it: cargo build --release -p foldbench)",
                bin.display()
            )
        });
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("the proxy's stdout"))
        .read_line(&mut line)
        .expect("the proxy prints its URL");
    (child, line.trim().to_string())
}

fn main() {
    let convs = env_num("PM_CONVS", 10_000);
    let requests = env_num("PM_REQUESTS", 4).max(1);
    let kb = env_num("PM_KB", 100);
    let at_once = env_num("PM_AT_ONCE", 8).max(1);
    let warm = env_num("PM_WARM", 1_000).min(convs);
    let policy = std::env::var("PM_POLICY").unwrap_or_else(|_| "none".into());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let out = match std::env::var("PM_TMP") {
        Ok(dir) => tempfile::tempdir_in(dir),
        Err(_) => tempfile::tempdir(),
    }
    .expect("a run folder");
    rt.block_on(async {
        let up = upstream().await;
        let (mut child, url) = start_proxy(up, &policy, out.path());
        let pid = child.id();
        let url = format!("{url}/v1/messages");
        println!(
            "proxy_memory: {} ({policy}{}), {convs} conversations of {requests} requests growing to about {kb} KB, {at_once} at a time",
            foldbench_bin().display(),
            std::env::var("PM_ARGS").map(|a| format!(", {a}")).unwrap_or_default()
        );
        let rss0 = rss_kib(pid);
        let cpu0 = cpu_s(pid);
        println!("  start: RSS {rss0} KiB");
        let client = reqwest::Client::builder()
            .tcp_nodelay(true)
            .build()
            .expect("a client");
        let tools = Arc::new(tools());
        let next = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let times: Arc<Mutex<Vec<Duration>>> = Arc::default();
        let marks: Arc<Mutex<Vec<(usize, u64)>>> = Arc::default();
        let mut tasks = Vec::new();
        for _ in 0..at_once {
            let (client, url, tools) = (client.clone(), url.clone(), Arc::clone(&tools));
            let (next, done, times, marks) = (
                Arc::clone(&next),
                Arc::clone(&done),
                Arc::clone(&times),
                Arc::clone(&marks),
            );
            tasks.push(tokio::spawn(async move {
                loop {
                    let c = next.fetch_add(1, Ordering::SeqCst);
                    if c >= convs {
                        break;
                    }
                    for s in 0..requests {
                        let b = body(c, s + 1, requests, kb, &tools);
                        let t = Instant::now();
                        let r = client
                            .post(&url)
                            .header("content-type", "application/json")
                            .header("x-api-key", "sk-bench")
                            .body(b)
                            .send()
                            .await
                            .expect("the request is answered");
                        let status = r.status();
                        let _ = r.bytes().await.expect("the answer is read");
                        assert!(status.is_success(), "status {status}");
                        times.lock().expect("times").push(t.elapsed());
                    }
                    let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                    if n % 1000 == 0 || n == warm {
                        let rss = rss_kib(pid);
                        marks.lock().expect("marks").push((n, rss));
                        if n % 1000 == 0 {
                            println!("  {n:>6} conversations: RSS {rss} KiB");
                        }
                    }
                }
            }));
        }
        for t in tasks {
            t.await.expect("a client task");
        }
        let rss_end = rss_kib(pid);
        let cpu = cpu_s(pid) - cpu0;
        let mut times = std::mem::take(&mut *times.lock().expect("times"));
        times.sort();
        let at = |q: f64| {
            let i = ((q * times.len() as f64).ceil() as usize).clamp(1, times.len()) - 1;
            times[i].as_secs_f64() * 1e3
        };
        let warm_rss = marks
            .lock()
            .expect("marks")
            .iter()
            .find(|(n, _)| *n == warm)
            .map(|(_, r)| *r)
            .unwrap_or(rss0);
        let after = convs.saturating_sub(warm).max(1);
        println!(
            "  end: RSS {rss_end} KiB; growth after the first {warm}: {:.1} KiB per finished conversation",
            (rss_end as f64 - warm_rss as f64) / after as f64
        );
        println!(
            "  requests: {} — client time median {:.2} ms, p99 {:.2} ms; proxy CPU {:.2} ms per request",
            times.len(),
            at(0.5),
            at(0.99),
            cpu * 1e3 / times.len() as f64
        );
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_child(&child),
            rustix::process::Signal::TERM,
        );
        let _ = child.wait();
    });
}
