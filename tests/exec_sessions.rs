//! Protocol 2 of `exec:` (docs/policy-protocol.md, "Sessions"): one policy process serves
//! session after session, each opened (`open`) and closed (`close`) in turn, with the results
//! of a process per session; a policy that answers protocol 1 still gets a process per
//! session; a process that crashes in a session fails that session alone, and the next session
//! gets a fresh process.

use std::path::Path;

use serde_json::Value;

use crate::exec_policy::{foldbench, json_lines, text};
use crate::helpers::root;

/// An example policy with the version it answers pinned at 1: a policy written for protocol 1.
fn version_1(script: &str) -> String {
    let pinned = script.replace(r#"min(req.get("protocol", 1), 2)"#, "1");
    assert_ne!(
        pinned, script,
        "the example answers the version it is offered"
    );
    pinned
}

/// The lines of an exchange log: (a request, the message).
fn exchange(log: &Path) -> Vec<(bool, Value)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let (dir, json) = l.split_at(2);
            let v = serde_json::from_str(json).unwrap_or_else(|e| panic!("{l}: {e}"));
            (dir == "> ", v)
        })
        .collect()
}

/// How many requests of type `ty` the log holds.
fn requests_of(lines: &[(bool, Value)], ty: &str) -> usize {
    lines
        .iter()
        .filter(|(req, v)| *req && v["type"] == ty)
        .count()
}

/// The request records and per-session figures of a replay of the in-repository sessions on
/// one thread (so the log is in order), the policy's label left out.
fn replay(dir: &Path, log: &Path, policy: &str) -> (Vec<Value>, Value) {
    let rows = dir.join("requests.jsonl");
    let sessions = root().join("tests/fixtures/real-sessions");
    let o = foldbench(
        dir,
        log,
        &[
            "replay",
            sessions.to_str().unwrap(),
            "--jobs",
            "1",
            "--policy",
            policy,
            "--format",
            "json",
            "--requests-out",
            rows.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{policy}: {}", text(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut per = doc["per_session"].clone();
    for s in per.as_array_mut().unwrap() {
        for p in s["policies"].as_array_mut().unwrap() {
            p.as_object_mut().unwrap().remove("policy");
        }
    }
    let rows = json_lines(&rows)
        .into_iter()
        .map(|mut r| {
            r.as_object_mut().unwrap().remove("policy");
            r
        })
        .collect();
    (rows, per)
}

#[test]
fn one_process_of_protocol_2_serves_every_session_with_the_results_of_a_process_per_session() {
    // fold_last_turn.py keeps state within a session (the turns it folded): a process that
    // serves many sessions must give each the answers a process of its own gives it.
    let tmp = tempfile::tempdir().unwrap();
    let script = std::fs::read_to_string(root().join("examples/policies/fold_last_turn.py"))
        .expect("the example");
    std::fs::write(tmp.path().join("v2.py"), &script).unwrap();
    std::fs::write(tmp.path().join("v1.py"), version_1(&script)).unwrap();
    let (log1, log2) = (tmp.path().join("v1.log"), tmp.path().join("v2.log"));
    let (rows1, per1) = replay(tmp.path(), &log1, "exec:python3 v1.py");
    let (rows2, per2) = replay(tmp.path(), &log2, "exec:python3 v2.py");
    assert!(rows1.len() > 40, "{}", rows1.len());
    assert_eq!(rows1, rows2, "the request records");
    assert_eq!(per1, per2, "the per-session figures");
    let folds: usize = per2
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["policies"][0]["folds"].as_array().unwrap().len())
        .sum();
    assert!(folds > 0, "the policy folded: {per2}");

    // Protocol 2: one process (one handshake), every session opened and closed in it, in turn.
    let lines = exchange(&log2);
    assert_eq!(requests_of(&lines, "hello"), 1, "one process");
    let sessions = requests_of(&lines, "open");
    assert!(
        sessions > 10,
        "every session (and the tool count): {sessions}"
    );
    assert_eq!(requests_of(&lines, "close"), sessions);
    let requests: Vec<&Value> = lines.iter().filter(|l| l.0).map(|l| &l.1).collect();
    let mut open: Option<u64> = None;
    for (n, r) in requests.iter().enumerate() {
        assert_eq!(
            r["id"], n as u64,
            "ids count on over the process's life: {r}"
        );
        match r["type"].as_str().unwrap() {
            "hello" => assert_eq!(r["protocol"], 2, "{r}"),
            "open" => {
                assert!(open.is_none(), "a session opened inside another: {r}");
                let last = requests[..n].iter().rev().find(|q| q["type"] == "close");
                let k = last.map_or(0, |q| q["session"].as_u64().unwrap());
                assert_eq!(r["session"], k + 1, "sessions count from 1: {r}");
                open = r["session"].as_u64();
                // The session's first context starts the view anew, its ids from 1.
                if let Some(first) = requests[n + 1..]
                    .iter()
                    .find(|q| q.get("context").is_some())
                {
                    if first["type"] != "close" {
                        assert_eq!(first["context"]["keep"], 0, "{first}");
                        let ids: Vec<u64> = first["context"]["append"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|m| m["id"].as_u64().unwrap())
                            .collect();
                        assert!(ids.is_empty() || ids[0] == 1, "{first}");
                    }
                }
            }
            "close" => {
                assert_eq!(r["session"].as_u64(), open, "the open session closes: {r}");
                open = None;
            }
            _ => assert!(open.is_some(), "a request outside a session: {r}"),
        }
    }
    assert!(open.is_none(), "the last session was closed");
    let answers = lines.iter().filter(|l| !l.0).count();
    assert_eq!(answers, requests.len(), "every request answered");

    // Protocol 1: a process per session, opened by its handshake, no `open` or `close`.
    let lines = exchange(&log1);
    assert_eq!(
        requests_of(&lines, "hello"),
        sessions,
        "a process per session"
    );
    assert_eq!(
        requests_of(&lines, "open") + requests_of(&lines, "close"),
        0
    );
    for (_, v) in lines.iter().filter(|l| !l.0 && l.1["type"] == "hello") {
        assert_eq!(v["protocol"], 1, "{v}");
    }
}

#[test]
fn a_crash_in_a_session_fails_that_session_alone_and_the_next_session_gets_a_fresh_process() {
    // none.py (protocol 2) that exits at its first request of turn 2: it crashes in the middle
    // of each session with two human turns or more.
    let tmp = tempfile::tempdir().unwrap();
    let script = std::fs::read_to_string(root().join("examples/policies/none.py"))
        .unwrap()
        .replace(
            "    answers = {",
            "    if req.get(\"turn\", 0) >= 2:\n        sys.stderr.write(\"broken at turn 2\\n\")\n        sys.exit(5)\n    answers = {",
        );
    std::fs::write(tmp.path().join("broken.py"), script).unwrap();
    let log = tmp.path().join("log");
    let policy = "exec:python3 broken.py";
    let sessions = root().join("tests/fixtures/real-sessions");
    let o = foldbench(
        tmp.path(),
        &log,
        &[
            "replay",
            sessions.to_str().unwrap(),
            "--jobs",
            "1",
            "--policy",
            "none",
            "--policy",
            policy,
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(100), "{}", text(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let left = doc["left_out"]["sessions"].as_array().unwrap();
    assert_eq!(left.len(), 3, "the three sessions of two turns: {left:?}");
    assert!(left
        .iter()
        .all(|s| s["failed"] == serde_json::json!([policy])));
    // Every other session completed, with none's figures.
    let (none, exec) = (&doc["policies"][0], &doc["policies"][1]);
    assert_eq!(doc["sessions"], 7);
    assert_eq!(exec["requests"], none["requests"]);
    assert_eq!(exec["total_input"], none["total_input"]);
    // Each failure is reported for its session, with what the process said.
    let err = String::from_utf8_lossy(&o.stderr);
    let reported = err
        .matches(
            "policy process `python3 broken.py` exited (exit status: 5) before answering the `",
        )
        .count();
    assert_eq!(reported, 3, "{err}");
    assert_eq!(err.matches("broken at turn 2").count(), 3, "{err}");

    // In the exchange: a crash ends its process (its request has no answer), and the session
    // after it is opened in a fresh process (a handshake, then its session 1).
    let lines = exchange(&log);
    let mut crashes = 0;
    for (n, (req, v)) in lines.iter().enumerate() {
        let answered = lines
            .get(n + 1)
            .is_some_and(|(r, a)| !r && a["re"] == v["id"]);
        if !req || answered {
            continue;
        }
        crashes += 1;
        assert!(
            v["turn"].as_u64() >= Some(2),
            "only the crash goes unanswered: {v}"
        );
        if let Some((_, next)) = lines.get(n + 1) {
            assert_eq!(
                next["type"], "hello",
                "a fresh process after the crash: {next}"
            );
            assert_eq!(next["id"], 0, "{next}");
            let open = &lines[n + 3].1;
            assert_eq!(
                (&open["type"], &open["session"]),
                (&"open".into(), &1.into())
            );
        }
    }
    assert_eq!(crashes, 3);
    let fresh = requests_of(&lines, "hello");
    let last_crashed = lines.last().is_some_and(|l| l.0);
    assert_eq!(
        fresh,
        1 + crashes - usize::from(last_crashed),
        "a process per crash"
    );
}
