//! The proxy's memory over days: a conversation idle past the limit leaves memory (its state is
//! in `cells/<cell>/state.json`) and comes back from it when the agent resumes it, and the
//! upstream receives byte for byte what it would have without the eviction.

mod answering;

use std::path::Path;
use std::time::Duration;

use answering::*;
use bytes::Bytes;
use harness_core::ToolCall;
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

/// The memory limits of a run: with `evict`, a conversation leaves memory a millisecond after
/// its request (so before the next one); else the defaults (it never leaves).
fn limits(evict: bool) -> MemoryLimits {
    if evict {
        MemoryLimits {
            idle: Duration::from_millis(1),
            ..MemoryLimits::default()
        }
    } else {
        MemoryLimits::default()
    }
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
    let p = proxy_with(policy, &up, out.path(), work.path(), limits(evict)).await;
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

/// A run: what the upstream received, the run folder, the agent's folder.
type Run = (Vec<Bytes>, tempfile::TempDir, tempfile::TempDir);

/// The upstream received the same bytes, the records and the agent's files (archives, files
/// the policy wrote) are the same, without and with the evictions.
fn same_runs(policy: &str, kept: &Run, evicted: &Run) {
    let (kept, kept_out, kept_work) = kept;
    let (evicted, evicted_out, evicted_work) = evicted;
    assert_eq!(
        kept.len(),
        evicted.len(),
        "{policy}: as many requests upstream"
    );
    for (i, (a, b)) in kept.iter().zip(evicted).enumerate() {
        assert!(
            a == b,
            "{policy}: request {i} upstream differs after the eviction:\nkept:    {}\nevicted: {}",
            String::from_utf8_lossy(a),
            String::from_utf8_lossy(b)
        );
    }
    // The same records: folds, requests, compactions.
    let a = harness_runner::read_records(kept_out.path()).unwrap();
    let b = harness_runner::read_records(evicted_out.path()).unwrap();
    assert_eq!(a.len(), 1);
    assert_eq!(b.len(), 1, "one conversation, evicted or not");
    assert_eq!(
        serde_json::to_value(&a[0].metrics).unwrap(),
        serde_json::to_value(&b[0].metrics).unwrap(),
        "{policy}: the same metrics"
    );
    let files = |w: &tempfile::TempDir| {
        all_files(&w.path().join(".foldbench"))
            .into_iter()
            .map(|(p, b)| (p.replace(&w.path().display().to_string(), ""), b))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        files(kept_work),
        files(evicted_work),
        "{policy}: the same archives and files"
    );
}

async fn same_with_and_without_eviction(policy: &str) {
    let kept = conversation(policy, false).await;
    let evicted = conversation(policy, true).await;
    same_runs(policy, &kept, &evicted);
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
    let records = harness_runner::read_records(out.path()).unwrap();
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
    let records = harness_runner::read_records(out.path()).unwrap();
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

/// A shell output of `lines` lines, different per step.
fn shell_output(step: usize, lines: usize) -> String {
    (0..lines)
        .map(|i| format!("step {step} line {i}: cargo test output, test_{i} ok in {step}.{i}s\n"))
        .collect()
}

/// A conversation that works: turn 1 as [`two_turns`] has it, then `turns` turns of `calls`
/// shell calls each (outputs of `lines` lines, every third a sixth of that), sent request by
/// request; with `evict`, the proxy lets it leave memory before each next request. The upstream
/// answers every request (summaries included) with "ok".
async fn working(policy: &str, evict: bool, turns: usize, calls: usize, lines: usize) -> Run {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let p = proxy_with(policy, &up, out.path(), work.path(), limits(evict)).await;
    let mut body = two_turns(true);
    body["messages"][2]["content"][0]["content"] = json!(shell_output(0, lines));
    let mut sent = 0;
    let mut step = 0;
    let mut send = |body: Value| {
        sent += 1;
        let n = sent;
        let (p, out) = (&p, out.path().to_path_buf());
        async move {
            if evict && n > 1 {
                evicted(&out, n - 1).await;
            }
            let (status, _, said) = post(p, "/v1/messages", &body).await;
            assert_eq!(status, 200, "{said}");
            n
        }
    };
    for turn in 2..2 + turns {
        for call in 0..calls {
            send(body.clone()).await;
            step += 1;
            let id = format!("s{step}");
            let args = json!({"command": format!("cargo test --step {step}")});
            let n = if step % 3 == 0 { lines / 6 } else { lines };
            let m = body["messages"].as_array_mut().unwrap();
            m.push(json!({"role": "assistant", "content": [
                text(&format!("running step {step} of turn {turn} (call {call})")),
                {"type": "tool_use", "id": id, "name": "Bash", "input": args}]}));
            m.push(json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": shell_output(step, n)}]}));
        }
        send(body.clone()).await;
        let m = body["messages"].as_array_mut().unwrap();
        m.push(json!({"role": "assistant", "content": [text(&format!("turn {turn} done"))]}));
        m.push(json!({"role": "user", "content": [text(&format!("turn {} please", turn + 1))]}));
    }
    let sent = send(body.clone()).await;
    if evict {
        evicted(out.path(), sent).await;
    }
    p.stop().await.unwrap();
    check_evictions(out.path(), evict, sent);
    (up.raw_bodies(), out, work)
}

/// [`working`] under `policy` with and without evictions: the same bytes upstream, the same
/// records and files. Returns the run without evictions.
async fn works_the_same_after_evictions(
    policy: &str,
    turns: usize,
    calls: usize,
    lines: usize,
) -> Run {
    let kept = working(policy, false, turns, calls, lines).await;
    let evicted = working(policy, true, turns, calls, lines).await;
    same_runs(policy, &kept, &evicted);
    kept
}

/// How many requests upstream hold more of `marker` than the one before.
fn more_of(bodies: &[Bytes], marker: &str) -> usize {
    let n: Vec<usize> = bodies
        .iter()
        .map(|b| String::from_utf8_lossy(b).matches(marker).count())
        .collect();
    n.windows(2).filter(|w| w[1] > w[0]).count()
}

/// How many requests upstream were summary requests (the proxy's compactions).
fn summaries(out: &Path) -> usize {
    exchanges(out, "compaction").len()
}

#[tokio::test]
async fn claude_code_keeps_its_cleared_results_across_evictions() {
    let policy = "claude-code:micro_keep=1,micro_trigger=2";
    let (bodies, ..) = works_the_same_after_evictions(policy, 3, 3, 60).await;
    // Cleared at several requests: two results, then two more every two new ones.
    let n = more_of(&bodies, policies::CLAUDE_CODE_CLEARED);
    assert!(n >= 3, "{policy}: results cleared at {n} requests");
}

#[tokio::test]
async fn amortized_keeps_its_forgotten_events_across_evictions() {
    for policy in [
        "amortized:max_size=8",
        "amortized:max_size=8,view=foldbench",
    ] {
        let (bodies, ..) = works_the_same_after_evictions(policy, 3, 3, 60).await;
        // Forgotten at several requests: the request shrinks each time.
        let shrank = bodies
            .windows(2)
            .filter(|w| w[1].len() < w[0].len())
            .count();
        assert!(shrank >= 3, "{policy}: forgot at {shrank} requests");
    }
}

#[tokio::test]
async fn cursor_keeps_its_files_across_evictions() {
    let policy = "cursor:output_tokens=500,window=3000,threshold=0.5";
    let (bodies, out, work) = works_the_same_after_evictions(policy, 4, 3, 60).await;
    let n = more_of(&bodies, "was written to .foldbench/archive/tool-outputs/");
    assert!(n >= 3, "{policy}: outputs to files at {n} requests");
    assert!(summaries(out.path()) >= 2, "{policy}: two summaries");
    for history in ["history-1.jsonl", "history-2.jsonl"] {
        assert!(work
            .path()
            .join(".foldbench/archive")
            .join(history)
            .exists());
    }
}

#[tokio::test]
async fn gemini_cli_keeps_what_it_decided_across_evictions() {
    let policy = "gemini-cli:window=10000,compression_threshold=0.3,truncate_tool_output_threshold=2000,function_response_budget=1000";
    let (bodies, out, _) = works_the_same_after_evictions(policy, 4, 3, 60).await;
    let n = more_of(&bodies, "Output too large.");
    assert!(n >= 3, "{policy}: outputs cut at {n} requests");
    assert!(summaries(out.path()) >= 2, "{policy}: two compressions");
}

#[tokio::test]
async fn inspect_edit_keeps_the_input_it_sent_across_evictions() {
    let policy = "inspect-edit:threshold=4000,keep_tool_uses=1";
    let (bodies, ..) = works_the_same_after_evictions(policy, 3, 3, 60).await;
    let n = more_of(&bodies, policies::INSPECT_TOOL_RESULT_REMOVED);
    assert!(n >= 2, "{policy}: results removed at {n} requests");
}

#[tokio::test]
async fn hybrid_needs_no_state_across_evictions() {
    // Hybrid reads what it masks and when it summarises from the context: nothing to save.
    let policy = "hybrid:window=2,summarize_every=3,keep_last=2";
    let (bodies, out, _) = works_the_same_after_evictions(policy, 3, 3, 60).await;
    let n = more_of(&bodies, "Old environment output");
    assert!(n >= 2, "{policy}: outputs masked at {n} requests");
    assert!(summaries(out.path()) >= 2, "{policy}: two summaries");
}

/// `tests/policies/stateful.py ARGS` as a policy (counts its plans, clears the tool results but
/// the last at every third, keeps what it cleared by fingerprint), the registry given `exec:`.
fn stateful(args: &str) -> String {
    policies::registry::install(harness_runner::exec_policy::with_exec(
        policies::registry::Registry::builtin(),
    ));
    format!("exec:python3 tests/policies/stateful.py {args}")
        .trim_end()
        .to_string()
}

/// What stateful.py writes in place of a result it cleared.
const CLEARED_BY_PROCESS: &str = "[cleared by stateful.py]";

#[tokio::test]
async fn an_exec_policy_that_saves_its_state_sends_the_same_bytes_after_evictions() {
    for args in ["", "--protocol=1"] {
        let policy = stateful(args);
        let (bodies, out, _) = works_the_same_after_evictions(&policy, 3, 3, 60).await;
        let n = more_of(&bodies, CLEARED_BY_PROCESS);
        assert!(n >= 2, "{policy}: results cleared at {n} requests");
        // Its state is in the conversation's state.json, as the process gave it.
        let (_, state) = all_files(&out.path().join("cells"))
            .into_iter()
            .find(|(p, _)| p.ends_with("state.json"))
            .expect("a state");
        let state: Value = serde_json::from_slice(&state).unwrap();
        assert!(
            state["policy"]["plans"].as_u64() > Some(3),
            "{policy}: {state}"
        );
        assert!(state.get("failed").is_none(), "{policy}: {state}");
    }
}

#[tokio::test]
async fn an_exec_policy_that_does_not_save_its_state_works_after_evictions_and_starts_again() {
    // A process that does not declare `saves_state` is never sent `save` or `restore` (it
    // would fail on either): it starts again at each reload, so after an eviction it clears
    // other results than it would have. So does one that declares it and ignores what it is
    // given back: the check above sees a state that was not restored.
    for args in ["--no-save", "--forget"] {
        let policy = stateful(args);
        let kept = working(&policy, false, 3, 3, 60).await;
        let evicted = working(&policy, true, 3, 3, 60).await;
        for (run, label) in [(&kept, "kept"), (&evicted, "evicted")] {
            let records = harness_runner::read_records(run.1.path()).unwrap();
            assert_eq!(records.len(), 1, "{policy} {label}");
            assert!(
                records[0].error.is_none(),
                "{policy} {label}: {:?}",
                records[0].error
            );
        }
        assert_eq!(kept.0.len(), evicted.0.len(), "{policy}");
        assert_ne!(
            kept.0, evicted.0,
            "{policy}: started again at each reload, it sends other requests"
        );
        assert!(more_of(&evicted.0, CLEARED_BY_PROCESS) < more_of(&kept.0, CLEARED_BY_PROCESS));
    }
}

#[tokio::test]
async fn an_exec_policy_that_answers_save_out_of_protocol_fails_its_conversation_across_an_eviction(
) {
    let policy = stateful("--bad-save");
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let memory = MemoryLimits {
        idle: Duration::from_millis(1),
        ..MemoryLimits::default()
    };
    let p = proxy_with(&policy, &up, out.path(), work.path(), memory).await;
    let mut body = two_turns(false);
    up.push(Reply::Answer("done", vec![]));
    let (status, _, said) = post(&p, "/v1/messages", &body).await;
    assert_eq!(status, 200, "{said}");
    // Its state asked as it left memory (or as the request's state was written): out of
    // protocol, the policy failed, and it stays failed when the conversation comes back.
    evicted(out.path(), 1).await;
    let m = body["messages"].as_array_mut().unwrap();
    m.push(json!({"role": "assistant", "content": [text("done")]}));
    m.push(json!({"role": "user", "content": [text("next turn please")]}));
    let (status, _, said) = post(&p, "/v1/messages", &body).await;
    assert_eq!(status, 500, "{said}");
    assert!(said.contains("the policy failed: policy process"), "{said}");
    assert!(said.contains("answering the `save` request"), "{said}");
    assert_eq!(
        up.bodies().len(),
        1,
        "nothing the policy did not decide went upstream"
    );
    // Left memory again, failed: its record says why.
    evicted(out.path(), 2).await;
    p.stop().await.unwrap();
    let records = harness_runner::read_records(out.path()).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].status, harness_core::Status::Error);
    let error = records[0].error.clone().unwrap_or_default();
    assert!(
        error.contains("answering the `save` request, which is answered with \"state\""),
        "{error}"
    );
}

/// A conversation of one turn working (seven requests, a shell call and its output between
/// each) sent to a proxy under `policy`, started again on its folder before each request with
/// `restart`: what the upstream received.
async fn restarted(policy: &str, restart: bool) -> Vec<Bytes> {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let start = || {
        proxy_with(
            policy,
            &up,
            out.path(),
            work.path(),
            MemoryLimits::default(),
        )
    };
    let mut p = start().await;
    let mut body = two_turns(false);
    body["messages"][2]["content"][0]["content"] = json!(shell_output(0, 60));
    for step in 1..=7 {
        if restart && step > 1 {
            p.stop().await.unwrap();
            p = start().await;
        }
        let (status, _, said) = post(&p, "/v1/messages", &body).await;
        assert_eq!(status, 200, "{said}");
        let id = format!("s{step}");
        let args = json!({"command": format!("cargo test --step {step}")});
        let m = body["messages"].as_array_mut().unwrap();
        m.push(
            json!({"role": "assistant", "content": [text(&format!("step {step}")),
            {"type": "tool_use", "id": id, "name": "Bash", "input": args}]}),
        );
        m.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": shell_output(step, 60)}]}));
    }
    p.stop().await.unwrap();
    up.raw_bodies()
}

#[tokio::test]
async fn an_exec_policy_that_saves_its_state_sends_the_same_bytes_after_restarts() {
    // Within a turn the turn, edits and cards do not change: the state the proxy writes as it
    // stops is what carries the process's count across the restart.
    let policy = stateful("");
    let kept = restarted(&policy, false).await;
    let again = restarted(&policy, true).await;
    assert!(
        more_of(&kept, CLEARED_BY_PROCESS) >= 2,
        "{policy}: cleared twice"
    );
    assert_eq!(kept.len(), again.len(), "{policy}");
    for (i, (a, b)) in kept.iter().zip(&again).enumerate() {
        assert!(
            a == b,
            "{policy}: request {i} upstream differs after the restart"
        );
    }
    let policy = stateful("--no-save");
    assert_ne!(
        restarted(&policy, false).await,
        restarted(&policy, true).await,
        "{policy}: started again at each restart"
    );
}
