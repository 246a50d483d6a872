//! The proxy's memory over days: a conversation idle past the limit leaves memory (its state is
//! in `cells/<cell>/state.json`) and comes back from it when the agent resumes it, and the
//! upstream receives byte for byte what it would have without the eviction.

mod answering;

use std::path::Path;
use std::time::Duration;

use answering::*;
use bytes::Bytes;
use harness_core::message::ToolCall;
use harness_runner::proxy::{MemoryLimits, Proxy, ProxyConfig};
use serde_json::{json, Value};

/// A proxy under `policy` whose conversations leave memory after `idle`.
async fn proxy_with(
    policy: &str,
    up: &Upstream,
    out: &Path,
    work: &Path,
    memory: MemoryLimits,
) -> Proxy {
    let mut cfg = ProxyConfig::new(
        policies::parse_policy(policy).unwrap(),
        &up.url(),
        "127.0.0.1:0".parse().unwrap(),
        out,
    );
    cfg.workdir = Some(work.to_path_buf());
    cfg.memory = memory;
    Proxy::start(cfg).await.unwrap()
}

/// The lines of `exchanges.jsonl` of `kind`.
fn exchanges(out: &Path, kind: &str) -> Vec<Value> {
    std::fs::read_to_string(out.join("exchanges.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["kind"] == kind)
        .collect()
}

/// Waits (up to a minute: the machine may be slow) until `n` evictions are recorded.
async fn evicted(out: &Path, n: usize) {
    for _ in 0..6000 {
        if exchanges(out, "evicted").len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "{n} evictions expected, the log has {:?}",
        exchanges(out, "evicted")
    );
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        args,
    }
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

/// A long tool output, different per step.
fn output(step: usize) -> String {
    (0..60)
        .map(|i| format!("line {i} of step {step}: let value_{i} = compute({step}, {i});\n"))
        .collect()
}

/// A conversation of five turns (tool calls, their results, a fold's card answered in turn 2
/// and in turn 4 under `fold`) sent request by request, streamed; with `evict`, the proxy lets
/// it leave memory before each next request. Returns what the upstream received, the run
/// folder and the agent's folder.
async fn conversation(
    policy: &str,
    evict: bool,
) -> (Vec<Bytes>, tempfile::TempDir, tempfile::TempDir) {
    let fold = policy.starts_with("fold");
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let memory = if evict {
        MemoryLimits {
            idle: Duration::from_millis(1),
            ..MemoryLimits::default()
        }
    } else {
        MemoryLimits::default()
    };
    let p = proxy_with(policy, &up, out.path(), work.path(), memory).await;
    let mut body = two_turns(true);
    body["messages"][2]["content"][0]["content"] = json!(output(1));
    let mut requests = 0;
    let mut send = |body: Value| {
        requests += 1;
        let n = requests;
        let p = &p;
        let out = out.path().to_path_buf();
        async move {
            if evict && n > 1 {
                // Let it leave memory: the next request brings it back.
                evicted(&out, n - 1).await;
            }
            let (status, _, text) = post(p, "/v1/messages", &body).await;
            assert_eq!(status, 200, "{text}");
            read_stream(harness_wire::Api::Anthropic, &text)
        }
    };
    // Turn 2: under fold the card is answered (a fold of turn 1), then the model closes it.
    if fold {
        up.push(Reply::Answer(
            "folding first",
            vec![call("f1", "fold_unit", json!({"from": 1, "to": 1}))],
        ));
    }
    up.push(Reply::Answer("turn two done", vec![]));
    let a = send(body.clone()).await;
    let m = body["messages"].as_array_mut().unwrap();
    let closing: Vec<Value> = if fold {
        vec![text("folding first"), text("turn two done")]
    } else {
        vec![text(&a.text)]
    };
    m.push(json!({"role": "assistant", "content": closing}));
    m.push(json!({"role": "user", "content": [text("third turn")]}));
    // Turn 3 (turn 1 spliced under fold, its archive written): two calls of the agent's.
    for (step, (id, name, args)) in [
        ("c2", "Bash", json!({"command": "cat b.py"})),
        ("c3", "Edit", json!({"file_path": "b.py"})),
    ]
    .into_iter()
    .enumerate()
    {
        let said = if step == 0 { "reading" } else { "editing" };
        up.push(Reply::Answer(said, vec![call(id, name, args.clone())]));
        send(body.clone()).await;
        if fold && step == 0 {
            assert!(
                work.path()
                    .join(".foldbench/archive/fold-turns-001-001.txt")
                    .exists(),
                "turn 1's archive is written before the conversation leaves memory"
            );
        }
        let m = body["messages"].as_array_mut().unwrap();
        m.push(json!({"role": "assistant", "content": [text(said),
            {"type": "tool_use", "id": id, "name": name, "input": args}]}));
        m.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": output(3 + step)}]}));
    }
    up.push(Reply::Answer("turn three done", vec![]));
    send(body.clone()).await;
    let m = body["messages"].as_array_mut().unwrap();
    m.push(json!({"role": "assistant", "content": [text("turn three done")]}));
    m.push(json!({"role": "user", "content": [text("fourth turn")]}));
    // Turn 4: the card is answered after the evictions (a fold of turn 3, made at turn 5).
    if fold {
        up.push(Reply::Answer(
            "folding three",
            vec![call("f2", "fold_unit", json!({"from": 3, "to": 3}))],
        ));
    }
    up.push(Reply::Answer("turn four done", vec![]));
    send(body.clone()).await;
    let m = body["messages"].as_array_mut().unwrap();
    let closing: Vec<Value> = if fold {
        vec![text("folding three"), text("turn four done")]
    } else {
        vec![text("turn four done")]
    };
    m.push(json!({"role": "assistant", "content": closing}));
    m.push(json!({"role": "user", "content": [text("fifth turn")]}));
    // Turn 5, sent twice (an agent's retry): turn 3 spliced, the same request again.
    send(body.clone()).await;
    send(body.clone()).await;
    let sent = requests;
    if evict {
        // The last request's too: at its stop the proxy records it from its files.
        evicted(out.path(), sent).await;
    }
    p.stop().await.unwrap();
    check_evictions(out.path(), evict, sent);
    (up.raw_bodies(), out, work)
}

/// Each request after the first brought the conversation back (with `evict`), or none left.
fn check_evictions(out: &Path, evict: bool, sent: usize) {
    if evict {
        let reloaded = exchanges(out, "reloaded");
        assert_eq!(
            reloaded.len(),
            sent - 1,
            "each request after the first brought the conversation back: {reloaded:?}"
        );
        assert!(
            reloaded.iter().all(|r| r["cell"].is_string()),
            "{reloaded:?}"
        );
    } else {
        assert!(exchanges(out, "evicted").is_empty());
    }
}

async fn same_with_and_without_eviction(policy: &str) {
    let (kept, kept_out, kept_work) = conversation(policy, false).await;
    let (evicted, evicted_out, evicted_work) = conversation(policy, true).await;
    assert_eq!(kept.len(), evicted.len(), "as many requests upstream");
    for (i, (a, b)) in kept.iter().zip(&evicted).enumerate() {
        assert!(
            a == b,
            "{policy}: request {i} upstream differs after the eviction:\nkept:    {}\nevicted: {}",
            String::from_utf8_lossy(a),
            String::from_utf8_lossy(b)
        );
    }
    // The same records: folds, requests, the archives.
    let a = harness_runner::results::read_records(kept_out.path()).unwrap();
    let b = harness_runner::results::read_records(evicted_out.path()).unwrap();
    assert_eq!(a.len(), 1);
    assert_eq!(b.len(), 1, "one conversation, evicted or not");
    assert_eq!(
        serde_json::to_value(&a[0].metrics).unwrap(),
        serde_json::to_value(&b[0].metrics).unwrap(),
        "{policy}: the same metrics"
    );
    assert_eq!(
        all_files(&kept_work.path().join(".foldbench"))
            .into_iter()
            .map(|(p, b)| (p.replace(&kept_work.path().display().to_string(), ""), b))
            .collect::<Vec<_>>(),
        all_files(&evicted_work.path().join(".foldbench"))
            .into_iter()
            .map(|(p, b)| (p.replace(&evicted_work.path().display().to_string(), ""), b))
            .collect::<Vec<_>>(),
        "{policy}: the same archives"
    );
}

#[tokio::test]
async fn none_sends_the_same_bytes_after_an_eviction() {
    same_with_and_without_eviction("none").await;
}

#[tokio::test]
async fn trim_sends_the_same_bytes_after_an_eviction() {
    same_with_and_without_eviction("trim").await;
}

#[tokio::test]
async fn fold_sends_the_same_bytes_after_an_eviction_its_archives_and_cards_kept() {
    same_with_and_without_eviction("fold:card_after_tool_calls=1").await;
    let (bodies, out, work) = conversation("fold:card_after_tool_calls=1", true).await;
    let all: Vec<String> = bodies
        .iter()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect();
    // The fold made before the evictions stays applied, the one answered after them is made.
    let last = all.last().unwrap();
    assert!(!last.contains("line 3 of step 1"), "turn 1 folded: {last}");
    assert!(!last.contains("line 3 of step 3"), "turn 3 folded: {last}");
    assert_eq!(last.matches("[fold]").count(), 2, "{last}");
    assert!(work
        .path()
        .join(".foldbench/archive/fold-turns-003-003.txt")
        .exists());
    let records = harness_runner::results::read_records(out.path()).unwrap();
    assert_eq!(records[0].metrics.folds, 2);
}

/// Two sessions sent A, B, A (each a few requests), with at most `held` conversations in memory:
/// what the upstream received and the run folder.
async fn two_sessions(held: usize) -> (Vec<Bytes>, tempfile::TempDir) {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let memory = MemoryLimits {
        conversations: held,
        ..MemoryLimits::default()
    };
    let p = proxy_with("trim", &up, out.path(), work.path(), memory).await;
    let session = |name: &str, turns: usize| {
        let mut b = two_turns(false);
        b["metadata"] = json!({"user_id": name});
        b["messages"][2]["content"][0]["content"] = json!(output(turns));
        let m = b["messages"].as_array_mut().unwrap();
        for t in 0..turns {
            m.push(json!({"role": "assistant", "content": [text("ok")]}));
            m.push(json!({"role": "user", "content": [text(&format!("turn {t} of {name}"))]}));
        }
        b
    };
    for (name, turns) in [("a", 0), ("b", 0), ("a", 1), ("b", 1), ("a", 2)] {
        let (status, _, text) = post(&p, "/v1/messages", &session(name, turns)).await;
        assert_eq!(status, 200, "{text}");
    }
    p.stop().await.unwrap();
    (up.raw_bodies(), out)
}

#[tokio::test]
async fn past_the_count_held_the_least_recently_used_leaves_and_comes_back_the_same() {
    let (kept, kept_out) = two_sessions(10).await;
    let (evicted, out) = two_sessions(1).await;
    assert!(exchanges(kept_out.path(), "evicted").is_empty());
    assert_eq!(kept, evicted, "the same requests upstream");
    let left = exchanges(out.path(), "evicted");
    assert_eq!(left.len(), 4, "each request of the other session: {left:?}");
    assert!(
        left.iter()
            .all(|x| x["note"].as_str().unwrap().contains("2 conversations held")),
        "{left:?}"
    );
    assert_eq!(exchanges(out.path(), "reloaded").len(), 3);
    let records = harness_runner::results::read_records(out.path()).unwrap();
    assert_eq!(records.len(), 2, "two conversations");
    // The saved state is in order: the same state is the same file.
    for (path, bytes) in all_files(&out.path().join("cells")) {
        if path.ends_with("state.json") {
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            let seen: Vec<&str> = v["seen"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap())
                .collect();
            let mut sorted = seen.clone();
            sorted.sort_unstable();
            assert_eq!(seen, sorted, "{path}");
        }
    }
}
