//! What a policy author needs of `exec:` (docs/policy-protocol.md): a policy keyed on what a
//! call does acts in `run` and in `replay`, sweeps and pipeline steps written in the command,
//! the one-turn lag of a fold at a topic boundary, a script the sandbox hides named with the
//! way to show it, and a policy that fails on some sessions compared on the others only.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::exec_policy::{foldbench, json_lines, text};
use crate::helpers::root;

#[test]
fn a_policy_script_in_a_hidden_folder_is_named_with_the_way_to_show_it() {
    // The script in a folder of the host's /tmp, foldbench started elsewhere: the sandbox
    // hides /tmp, so the interpreter cannot open it.
    let hidden = tempfile::Builder::new()
        .prefix("foldbench-hidden-policy-")
        .tempdir_in("/tmp")
        .unwrap();
    let script = hidden.path().join("p.py");
    std::fs::copy(root().join("examples/policies/none.py"), &script).unwrap();
    let session = root().join("tests/fixtures/real-sessions/codex/Hoper-J_cpolar-connect");
    let replay = |policy: &str| {
        let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        foldbench(
            tmp.path(),
            &tmp.path().join("log"),
            &["replay", session.to_str().unwrap(), "--policy", policy],
        )
    };
    let dir = hidden.path().display().to_string();
    let o = replay(&format!("exec:python3 {}", script.display()));
    if o.status.code() == Some(0) {
        // No sandbox on this machine: nothing is hidden.
        assert!(std::env::var("FOLDBENCH_REQUIRE_SANDBOX").as_deref() != Ok("1"));
        return;
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(100), "{err}");
    assert!(
        err.contains(&format!(
            "{} is not visible in the sandbox (/tmp is replaced by an empty folder in the sandbox); show it with exec:read={dir} python3 {}",
            script.display(),
            script.display()
        )),
        "{err}"
    );
    // The way it names works.
    let o = replay(&format!("exec:read={dir} python3 {}", script.display()));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // A folder the sandbox hides whole cannot be shown: the error says what to name instead.
    let o = replay(&format!("exec:read=/tmp python3 {}", script.display()));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("read=/tmp: /tmp is replaced by an empty folder in the sandbox; name a folder inside it"),
        "{err}"
    );
}

/// `examples/policies/none.py` that exits at its first request of turn 2: it fails on the
/// sessions with two human turns or more and completes the others.
fn crashing_at_turn_2() -> String {
    std::fs::read_to_string(root().join("examples/policies/none.py"))
        .unwrap()
        .replace(
            "    answers = {",
            "    if req.get(\"turn\", 0) >= 2:\n        sys.stderr.write(\"broken at turn 2\\n\")\n        sys.exit(5)\n    answers = {",
        )
}

#[test]
fn a_policy_that_fails_on_some_sessions_is_compared_on_the_sessions_both_completed() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("broken.py"), crashing_at_turn_2()).unwrap();
    let sessions = root().join("tests/fixtures/real-sessions");
    let policy = "exec:python3 broken.py";
    let run = |format: &str| {
        foldbench(
            tmp.path(),
            &tmp.path().join("log"),
            &[
                "replay",
                sessions.to_str().unwrap(),
                "--policy",
                "none",
                "--policy",
                policy,
                "--format",
                format,
            ],
        )
    };
    let o = run("json");
    assert_eq!(o.status.code(), Some(100), "{}", text(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = doc["policies"].as_array().unwrap();
    let (none, exec) = (&rows[0], &rows[1]);
    assert_eq!(exec["policy"], policy);
    // The three sessions with two human turns or more are left out for both: the rest are
    // the same sessions under both, and this policy sends what none sends.
    assert_eq!(doc["sessions"], 7, "{}", doc["left_out"]);
    assert_eq!(exec["sessions"], none["sessions"]);
    assert_eq!(exec["requests"], none["requests"]);
    assert_eq!(exec["total_input"], none["total_input"]);
    assert_eq!(exec["total_ratio"], 1.0);
    assert_eq!(exec["incl_recovery_ratio"], 1.0);
    assert_eq!(exec["cost"], none["cost"]);
    let left = doc["left_out"]["sessions"].as_array().unwrap();
    assert_eq!(left.len(), 3, "{left:?}");
    assert!(
        left.iter()
            .all(|s| s["failed"] == serde_json::json!([policy])),
        "{left:?}"
    );

    let o = run("table");
    assert_eq!(o.status.code(), Some(100), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("3 of 10 sessions are left out of the tables, the verdict and the frontier"),
        "{out}"
    );
    assert!(out.contains("(7 sessions; 3 left out"), "{out}");
    assert!(
        out.contains(
            "Replay of 7 sessions (3 more left out: a policy failed on them) from 10 files"
        ),
        "{out}"
    );
    assert!(out.contains("no saving (tokens Σ× 1.00"), "{out}");
    assert!(!out.contains("0.41"), "{out}");
}

#[test]
fn a_policy_that_fails_on_every_session_is_left_out_and_the_others_compared() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("dead.py"), "import sys\nsys.exit(7)\n").unwrap();
    let sessions = root().join("tests/fixtures/real-sessions");
    let o = foldbench(
        tmp.path(),
        &tmp.path().join("log"),
        &[
            "replay",
            sessions.to_str().unwrap(),
            "--policy",
            "none",
            "--policy",
            "trim",
            "--policy",
            "exec:python3 dead.py",
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(100), "{}", text(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["sessions"], 10);
    let names: Vec<&str> = doc["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["policy"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["none", "trim"]);
    assert_eq!(
        doc["left_out"]["policies"],
        serde_json::json!(["exec:python3 dead.py"])
    );
}

/// A policy keyed on what a call does, not on its name: every read result of an earlier turn
/// is cleared, and the request's action says how many.
const CLEAR_READS_PY: &str = r#"
import json, sys
view, store = [], {}
for line in sys.stdin:
    req = json.loads(line)
    ctx = req.get("context")
    if ctx is not None:
        del view[ctx["keep"]:]
        for m in ctx["append"]:
            m = store[m["ref"]] if "ref" in m else m
            store[m["id"]] = m
            view.append(m)
    t = req["type"]
    if t == "hello":
        ans = {"type": "hello", "protocol": 1}
    elif t == "plan":
        send, n = [], 0
        for i, m in enumerate(view):
            if m["role"] == "tool" and m.get("tool_category") == "read" and m["turn"] < req["turn"]:
                send.append({"like": i, "text": "[read result cleared]", "cleared": True})
                n += 1
            else:
                send.append(i)
        ans = {"type": "send", "messages": send}
        if n:
            ans["action"] = "cleared %d read results" % n
    elif t == "card":
        ans = {"type": "card", "card": None}
    elif t == "end_turn":
        ans = {"type": "splices", "splices": []}
    else:
        ans = {"type": "ok"}
    ans["re"] = req["id"]
    sys.stdout.write(json.dumps(ans) + "\n")
    sys.stdout.flush()
"#;

#[test]
fn a_policy_keyed_on_reads_acts_in_run_and_in_replay() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("clear_reads.py"), CLEAR_READS_PY).unwrap();
    let policy = "exec:python3 clear_reads.py";
    let log = tmp.path().join("log");
    let cleared = |lines: &[Value]| {
        lines
            .iter()
            .filter(|r| {
                r["policy"] == policy
                    && r["action"]
                        .as_str()
                        .is_some_and(|a| a.starts_with("cleared "))
            })
            .count()
    };
    // In run, the calls are foldbench's (`read_file`).
    let out = tmp.path().join("run");
    let task = root().join("tasks/trim-rerun.yaml");
    let o = foldbench(
        tmp.path(),
        &log,
        &[
            "run",
            "--tasks",
            task.to_str().unwrap(),
            "--seeds",
            "1",
            "--policy",
            policy,
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let requests: Vec<Value> = json_lines(&out.join("requests.jsonl"))
        .into_iter()
        .map(|mut r| {
            r["policy"] = policy.into();
            r
        })
        .collect();
    assert!(cleared(&requests) > 0, "run: nothing cleared");
    let hello = std::fs::read_to_string(&log).unwrap();
    assert!(hello.contains(r#""mode":"run""#), "{hello}");
    // In replay, the recorded agent's (Claude Code's `Read{file_path}`).
    std::fs::remove_file(&log).unwrap();
    let sessions = root().join("tests/fixtures/real-sessions");
    let lines = tmp.path().join("requests.jsonl");
    let o = foldbench(
        tmp.path(),
        &log,
        &[
            "replay",
            sessions.to_str().unwrap(),
            "--policy",
            "none",
            "--policy",
            policy,
            "--requests-out",
            lines.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(cleared(&json_lines(&lines)) > 0, "replay: nothing cleared");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let ratio = doc["policies"][1]["total_ratio"].as_f64().unwrap();
    assert!(ratio < 1.0, "replay: Σ× {ratio}");
    let hello = std::fs::read_to_string(&log).unwrap();
    assert!(hello.contains(r#""mode":"replay""#), "{hello}");
}

#[test]
fn a_sweep_in_an_exec_command_makes_arms_that_match_the_built_in_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = root().join("tests/fixtures/real-sessions");
    let o = foldbench(
        &root(),
        &tmp.path().join("log"),
        &[
            "replay",
            sessions.to_str().unwrap(),
            "--policy",
            "trim:keep=[0,3]",
            "--policy",
            "exec:python3 examples/policies/trim.py keep=[0,3]",
            "--policy",
            "exec:python3 examples/policies/none.py|trim:keep=0",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows: BTreeMap<String, u64> = doc["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["policy"].as_str().unwrap().to_string(),
                p["total_input"].as_u64().unwrap(),
            )
        })
        .collect();
    for keep in [0, 3] {
        let exec = format!("exec:python3 examples/policies/trim.py keep={keep}");
        assert_eq!(
            rows.get(&exec),
            rows.get(&format!("trim:keep={keep}")),
            "{rows:?}"
        );
    }
    // A step after the command: none.py's messages, then trim's.
    assert_eq!(
        rows.get("exec:python3 examples/policies/none.py|trim:keep=0"),
        rows.get("trim:keep=0"),
        "{rows:?}"
    );
    assert_ne!(rows.get("trim:keep=0"), rows.get("trim:keep=3"), "{rows:?}");
}

#[test]
fn the_topic_example_folds_each_topic_at_the_end_of_the_turn_after_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, log) = (tmp.path().join("run"), tmp.path().join("log"));
    let task = root().join("tasks/return-to-login.yaml");
    let o = foldbench(
        &root(),
        &log,
        &[
            "run",
            "--tasks",
            task.to_str().unwrap(),
            "--seeds",
            "1",
            "--policy",
            "exec:python3 examples/policies/fold_on_topic_change.py",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    // Each end_turn request's turn, with the splices answered to it.
    let lines: Vec<(bool, Value)> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| (l.starts_with("> "), serde_json::from_str(&l[2..]).unwrap()))
        .collect();
    let mut folds = Vec::new();
    for w in lines.windows(2) {
        if let [(true, req), (false, ans)] = w {
            if req["type"] == "end_turn" {
                for s in ans["splices"].as_array().unwrap() {
                    folds.push((
                        req["turn"].as_u64().unwrap(),
                        s["from"].clone(),
                        s["to"].clone(),
                    ));
                }
            }
        }
    }
    // Turns 1–2 are the lockout, 3–4 the reset mail (turn 5 returns to the lockout with a long
    // message): each topic is folded whole, at the end of the turn after its last.
    assert_eq!(
        folds,
        [(3, 1.into(), 2.into()), (5, 3.into(), 4.into())],
        "{folds:?}"
    );
    let applied = lines
        .iter()
        .filter(|(to, v)| *to && v["type"] == "spliced" && v["applied"] == true)
        .count();
    assert_eq!(applied, 2);
}
