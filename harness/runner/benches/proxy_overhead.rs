//! What `foldbench proxy` adds to a request over a direct connection to the same upstream.
//!
//! A load of `PB_CONVS` conversations (default 50) at once, each `PB_REQUESTS` requests (default
//! 20) in the Anthropic Messages API, as Claude Code sends them: a system prompt, eleven tools,
//! the whole history every time (tool calls and their results of about 5,000 tokens each, a new
//! user turn every fifth request, the cache breakpoint on the last block), growing to about
//! 100,000 tokens (0.4 MB). The client and a loopback upstream (which answers every request at
//! once with a tool call) run in this process on `PB_WORKERS` tokio workers (default 2); the
//! proxy runs as a process of its own (`foldbench proxy`, the release binary next to this
//! bench's, or `FOLDBENCH_BIN`), so its CPU time and memory are its own.
//!
//! The same load goes once straight to the upstream, then through a proxy per policy of
//! `PB_POLICIES` (default `none,trim`), each in a new process. Printed per pass: each request's
//! time as the client sees it (median, p99, over all requests and over the last quarter, the
//! ones near 100,000 tokens), the proxy's CPU time per request (user + system, from
//! `/proc/PID/stat`), and the proxy's resident memory after the load less before it, per
//! conversation, beside the conversation's final body size.
//!
//! The proxy's run folder is made under `PB_TMP` (default: the system's temporary folder).
//! `PB_MODEL_MS` makes the upstream wait that long before it answers (a model's time: requests
//! then come as an agent's do, not back to back; default 0, back to back).
//!
//! Run: `cargo build --release -p foldbench && cargo bench -p harness-runner --bench
//! proxy_overhead`. `PB_ROUNDS` repeats every pass (default 1; the passes alternate direct and
//! proxy so a machine's drift is shared).

use std::convert::Infallible;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use serde_json::{json, Value};

/// The load's shape, from the environment.
#[derive(Debug, Clone)]
struct Shape {
    convs: usize,
    requests: usize,
    result_bytes: usize,
    workers: usize,
    rounds: usize,
    model_ms: u64,
    policies: Vec<String>,
}

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

impl Shape {
    fn from_env() -> Shape {
        Shape {
            convs: env_num("PB_CONVS", 50),
            requests: env_num("PB_REQUESTS", 20),
            result_bytes: env_num("PB_RESULT_BYTES", 22_500),
            workers: env_num("PB_WORKERS", 2),
            rounds: env_num("PB_ROUNDS", 1),
            model_ms: env_num("PB_MODEL_MS", 0) as u64,
            policies: std::env::var("PB_POLICIES")
                .unwrap_or_else(|_| "none,trim".into())
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
        }
    }
}

/// A tool output of about `bytes` bytes, different for every conversation and step (code-like
/// lines of words, about 3.5 bytes a token in o200k, as source files read back are).
fn tool_output(conv: usize, step: usize, bytes: usize) -> String {
    const WORDS: [&str; 16] = [
        "value", "total", "config", "request", "buffer", "result", "handler", "context", "message",
        "policy", "record", "stream", "session", "window", "archive", "token",
    ];
    let mut s = String::with_capacity(bytes + 160);
    let mut i = 0usize;
    while s.len() < bytes {
        let w = |k: usize| WORDS[(conv * 7 + step * 13 + i * 5 + k) % WORDS.len()];
        s.push_str(&format!(
            "{i:>5}\t    let {}_{conv} = self.{}.{}_for(&{}, {step})?; // keeps the {} before the {} is read\n",
            w(0), w(1), w(2), w(3), w(4), w(5)
        ));
        i += 1;
    }
    s
}

/// The tools Claude Code offers (names as it sends them; schemas shortened).
fn tools() -> Vec<Value> {
    [
        "Agent",
        "Bash",
        "Edit",
        "ListAgents",
        "Read",
        "ReportFindings",
        "ScheduleWakeup",
        "Skill",
        "ToolSearch",
        "Workflow",
        "Write",
    ]
    .iter()
    .map(|n| {
        json!({
            "name": n,
            "description": format!("{n}: {}", "Does what its name says, with care. ".repeat(20)),
            "input_schema": {
                "type": "object",
                "properties": {
                    "file_path": {"type": "string", "description": "An absolute path."},
                    "command": {"type": "string", "description": "A shell command."},
                },
            },
        })
    })
    .collect()
}

/// The messages of conversation `conv` before its request `step` (0-based): the first prompt,
/// then per earlier step a tool call and its result, or (every fifth) a closing answer and the
/// next prompt. The last block carries the cache breakpoint.
fn history(conv: usize, step: usize, result_bytes: usize) -> Vec<Value> {
    let mut m = vec![json!({"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\nAs you answer the user's questions, you can use the following context.\n</system-reminder>"},
        {"type": "text", "text": format!("Conversation {conv}: read the sources and fix the failing test.")},
    ]})];
    for k in 0..step {
        if k % 5 == 4 {
            m.push(json!({"role": "assistant", "content": [
                {"type": "text", "text": format!("Part {k} is done: the function now wraps.")},
            ]}));
            m.push(json!({"role": "user", "content": [
                {"type": "text", "text": format!("Good. Now part {}: the next file.", k + 1)},
            ]}));
        } else {
            let id = format!("toolu_{conv}_{k}");
            m.push(json!({"role": "assistant", "content": [
                {"type": "text", "text": format!("I will read file {k}.")},
                {"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": format!("/repo/src/f{k}.rs")}},
            ]}));
            m.push(json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": tool_output(conv, k, result_bytes)},
            ]}));
        }
    }
    if let Some(block) = m
        .last_mut()
        .and_then(|last| last["content"].as_array_mut())
        .and_then(|c| c.last_mut())
    {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
    m
}

/// The body of a request (`conv` names the session in `metadata.user_id`).
fn body(conv: &str, messages: Vec<Value>, tools: &[Value]) -> Bytes {
    let system = format!(
        "You are Claude Code.\nPrimary working directory: /tmp/pb-{conv}\n{}",
        "Follow the user's instructions. ".repeat(200)
    );
    Bytes::from(
        json!({
            "model": "claude-bench",
            "max_tokens": 8192,
            "stream": false,
            "system": [{"type": "text", "text": system}],
            "tools": tools,
            "metadata": {"user_id": format!("session-{conv}")},
            "messages": messages,
        })
        .to_string(),
    )
}

/// Every conversation's bodies, made before the load (the client's cost is not timed).
fn bodies(shape: &Shape, tag: &str) -> Vec<Vec<Bytes>> {
    let tools = tools();
    (0..shape.convs)
        .map(|c| {
            (0..shape.requests)
                .map(|s| {
                    body(
                        &format!("{tag}{c}"),
                        history(c, s, shape.result_bytes),
                        &tools,
                    )
                })
                .collect()
        })
        .collect()
}

const ANSWER: &str = r#"{"id":"msg_bench","type":"message","role":"assistant","model":"claude-bench","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_next","name":"Read","input":{"file_path":"/repo/src/next.rs"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":100000,"output_tokens":20}}"#;

/// A loopback upstream that reads each body whole and answers with one tool call, after
/// `model_ms` (the model's time; 0: at once).
async fn upstream(model_ms: u64) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the upstream");
    let addr = listener.local_addr().expect("the upstream's address");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| async move {
                        let _ = req.into_body().collect().await;
                        if model_ms > 0 {
                            tokio::time::sleep(Duration::from_millis(model_ms)).await;
                        }
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

/// The load: every conversation at once, each request after the previous one's answer; each
/// request's time and its step.
async fn load(base: &str, all: Arc<Vec<Vec<Bytes>>>) -> Vec<(usize, Duration)> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .tcp_nodelay(true)
        .build()
        .expect("a client");
    let url = format!("{base}/v1/messages");
    let mut tasks = Vec::new();
    for c in 0..all.len() {
        let (client, url, all) = (client.clone(), url.clone(), Arc::clone(&all));
        tasks.push(tokio::spawn(async move {
            let mut times = Vec::new();
            for (s, b) in all[c].iter().enumerate() {
                let t = Instant::now();
                let r = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("x-api-key", "sk-bench")
                    .body(b.clone())
                    .send()
                    .await
                    .expect("the request is answered");
                let status = r.status();
                let _ = r.bytes().await.expect("the answer is read");
                assert!(status.is_success(), "status {status}");
                times.push((s, t.elapsed()));
            }
            times
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.extend(t.await.expect("a conversation's task"));
    }
    out
}

/// Every string of a JSON value (the texts a model reads).
fn strings_of<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| strings_of(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings_of(x, out)),
        _ => {}
    }
}

/// Median and p99 of some times, in ms.
fn stats(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let at = |q: f64| {
        let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
        v[i].as_secs_f64() * 1e3
    };
    (at(0.5), at(0.99))
}

/// A proxy process and what /proc says of it.
struct ProxyProc {
    child: Child,
    url: String,
    _out: tempfile::TempDir,
}

fn foldbench_bin() -> PathBuf {
    if let Ok(p) = std::env::var("FOLDBENCH_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("this bench's path");
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/release");
    dir.join("foldbench")
}

impl ProxyProc {
    fn start(policy: &str, upstream: SocketAddr) -> ProxyProc {
        let out = match std::env::var("PB_TMP") {
            Ok(dir) => tempfile::tempdir_in(dir),
            Err(_) => tempfile::tempdir(),
        }
        .expect("a run folder");
        let bin = foldbench_bin();
        let mut child = Command::new(&bin)
            .args(["proxy", "--policy", policy, "--listen", "127.0.0.1:0"])
            .arg("--upstream")
            .arg(format!("http://{upstream}"))
            .arg("--out")
            .arg(out.path().join("run"))
            .arg("--workdir")
            .arg(out.path())
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
        let stdout = child.stdout.take().expect("the proxy's stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the proxy prints its URL");
        ProxyProc {
            child,
            url: line.trim().to_string(),
            _out: out,
        }
    }

    /// Resident memory, KiB.
    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// User + system CPU time so far, seconds.
    fn cpu_s(&self) -> f64 {
        cpu_s(&self.child.id().to_string())
    }

    fn stop(mut self) {
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let _ = self.child.wait();
    }
}

/// User + system CPU time of a process (`self` for this one) so far, seconds.
fn cpu_s(pid: &str) -> f64 {
    {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<f64> = after
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0.0))
            .collect();
        // Fields 14 and 15 of the stat line (utime, stime), counted after the command's `)`.
        let ticks = f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0);
        ticks / 100.0
    }
}

/// One pass's figures.
struct Pass {
    all: (f64, f64),
    last: (f64, f64),
}

fn summarise(times: &[(usize, Duration)], requests: usize) -> Pass {
    let from = requests - requests.div_ceil(4);
    Pass {
        all: stats(times.iter().map(|t| t.1).collect()),
        last: stats(times.iter().filter(|t| t.0 >= from).map(|t| t.1).collect()),
    }
}

fn print_pass(name: &str, p: &Pass, direct: Option<&Pass>) {
    let plus = |a: f64, b: Option<f64>| b.map(|b| format!(" (+{:.2})", a - b)).unwrap_or_default();
    println!(
        "{name:<14} all: median {:.2} ms{} p99 {:.2} ms{} | last quarter: median {:.2} ms{} p99 {:.2} ms{}",
        p.all.0,
        plus(p.all.0, direct.map(|d| d.all.0)),
        p.all.1,
        plus(p.all.1, direct.map(|d| d.all.1)),
        p.last.0,
        plus(p.last.0, direct.map(|d| d.last.0)),
        p.last.1,
        plus(p.last.1, direct.map(|d| d.last.1)),
    );
}

async fn run(shape: Shape) {
    let up = upstream(shape.model_ms).await;
    let warm = Arc::new(bodies(
        &Shape {
            requests: 2,
            result_bytes: 2_000,
            ..shape.clone()
        },
        "warm",
    ));
    let all = Arc::new(bodies(&shape, "c"));
    let last_body = all.iter().map(|c| c.last().map_or(0, |b| b.len())).max();
    let h = Value::Array(history(0, shape.requests - 1, shape.result_bytes));
    let mut strings = Vec::new();
    strings_of(&h, &mut strings);
    let text: usize = strings
        .iter()
        .map(|s| harness_core::tokens::count(s) as usize)
        .sum();
    let text_bytes: usize = strings.iter().map(|s| s.len()).sum();
    println!(
        "{} conversations × {} requests, the last body {} bytes (the texts of its messages: {text_bytes} bytes, {text} o200k tokens), {} client/upstream workers, model time {} ms",
        shape.convs,
        shape.requests,
        last_body.unwrap_or(0),
        shape.workers,
        shape.model_ms
    );
    for round in 0..shape.rounds {
        let base = format!("http://{up}");
        load(&base, Arc::clone(&warm)).await;
        let own = cpu_s("self");
        let direct = summarise(&load(&base, Arc::clone(&all)).await, shape.requests);
        print_pass(&format!("r{round} direct"), &direct, None);
        println!(
            "{:<14} client and upstream CPU {:.2} ms/request",
            "",
            (cpu_s("self") - own) * 1e3 / (shape.convs * shape.requests) as f64
        );
        for policy in &shape.policies {
            let p = ProxyProc::start(policy, up);
            load(&p.url, Arc::clone(&warm)).await;
            let (rss0, cpu0) = (p.rss_kib(), p.cpu_s());
            let times = load(&p.url, Arc::clone(&all)).await;
            let (rss1, cpu1) = (p.rss_kib(), p.cpu_s());
            let pass = summarise(&times, shape.requests);
            print_pass(&format!("r{round} {policy}"), &pass, Some(&direct));
            let n = (shape.convs * shape.requests) as f64;
            let per_conv = (rss1.saturating_sub(rss0) as f64) * 1024.0 / shape.convs as f64;
            println!(
                "{:<14} proxy CPU {:.2} ms/request; RSS {} → {} KiB: {:.0} KB per conversation ({:.2}× its last body, {:.2}× its text)",
                "",
                (cpu1 - cpu0) * 1e3 / n,
                rss0,
                rss1,
                per_conv / 1e3,
                per_conv / last_body.unwrap_or(1) as f64,
                per_conv / text_bytes.max(1) as f64
            );
            p.stop();
        }
    }
}

/// Resident memory of this process, KiB.
fn own_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Heap bytes in use (glibc's count of allocated blocks, mmapped ones included): what the
/// process holds, without what the allocator keeps free.
#[allow(unsafe_code)]
fn heap_in_use() -> u64 {
    // SAFETY: mallinfo2 reads the allocator's counters; it takes nothing and returns a struct.
    let m = unsafe { libc::mallinfo2() };
    (m.uordblks + m.hblkhd) as u64
}

/// The conversation's own work for each request, in this process, no HTTP: decode, read
/// (grouping, edits, the policy's turn end), plan and write the body;
/// then what the conversations hold, as this process's resident memory after them less before
/// (the first policy of `PB_POLICIES`, every conversation kept).
fn micro(shape: &Shape) {
    use harness_runner::proxy::{decode, decode_after, Conversation, Step};
    let policy = shape.policies.first().map_or("none", String::as_str);
    let spec = policies::parse_policy(policy).expect("a policy");
    let mut kept = Vec::new();
    let mut times: Vec<[Duration; 4]> = Vec::new();
    let tools = tools();
    let rss0 = own_rss_kib();
    let heap0 = heap_in_use();
    for conv in 0..shape.convs {
        let spec = spec.clone();
        let mut c = Conversation::new(Box::new(move || policies::build(&spec, 200_000)))
            .expect("a conversation");
        let mut last = None;
        for step in 0..shape.requests {
            let b = body(
                &format!("m{conv}"),
                history(conv, step, shape.result_bytes),
                &tools,
            );
            // The body decoded from where it differs from the last one (what the proxy does),
            // then whole (the check, and what the proxy did before).
            let p0 = Instant::now();
            let after =
                decode_after(last.take(), harness_wire::Api::Anthropic, &b).expect("decodes");
            let prefix = p0.elapsed();
            last = after.kept;
            drop(std::hint::black_box(after.decoded));
            let t0 = Instant::now();
            let req = decode(harness_wire::Api::Anthropic, &b).expect("decodes");
            let t1 = Instant::now();
            let _ = c.read(&req);
            let t2 = Instant::now();
            match c.plan(harness_wire::Api::Anthropic, &req.env, &req) {
                Step::Send(o) => drop(std::hint::black_box(o.body)),
                Step::Compact { .. } => {}
            }
            times.push([t1 - t0, t2 - t1, t2.elapsed(), prefix]);
        }
        // What a conversation of the proxy keeps: its state and its last body, decoded.
        kept.push((c, last));
    }
    let rss1 = own_rss_kib();
    let heap1 = heap_in_use();
    let from = shape.requests - shape.requests.div_ceil(4);
    let last: Vec<&[Duration; 4]> = times
        .iter()
        .enumerate()
        .filter(|(i, _)| i % shape.requests >= from)
        .map(|(_, t)| t)
        .collect();
    let med = |k: usize| stats(last.iter().map(|t| t[k]).collect()).0;
    println!(
        "micro {policy}: last quarter, medians: decode whole {:.3} ms, from the last body {:.3} ms, read {:.3} ms, plan and body {:.3} ms; {} conversations: {:.0} KB of heap in use each, {:.0} KB resident",
        med(0),
        med(3),
        med(1),
        med(2),
        shape.convs,
        heap1.saturating_sub(heap0) as f64 / 1e3 / shape.convs as f64,
        (rss1.saturating_sub(rss0) as f64) * 1.024 / shape.convs as f64
    );
    drop(std::hint::black_box(kept));
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is read from the command line.
    let shape = Shape::from_env();
    if std::env::var("PB_MICRO").is_ok() {
        micro(&shape);
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(shape.workers)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(run(shape));
}
