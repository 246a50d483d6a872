//! The peers' conformance: every peer arm run on scenarios taken from the peer's own unit tests
//! and documented examples, and on scenarios of foldbench's own that reach the divergences
//! docs/policies.md lists (at least two per arm, each with an origin `ours: ...`), each compared
//! message for message with the request the peer makes.
//!
//! The scenarios are data, `tests/conformance/*.json`, one file per peer: its source
//! (repository, paths and commit, or the documentation page), how the expected requests were
//! derived (the peer's code run, or ported line by line, or its documented rule where it
//! publishes no code), and the scenarios: the policy as written, the context (`input`), what the
//! policy's summary request holds and the summary it gets back when it compacts, the files it
//! asks to be written, and the request (`expected`). A summary message is compared by the summary
//! it holds (each peer frames it in its own words and role; docs/policies.md says how foldbench
//! frames it); every other message by role, text, calls, the call it answers and its thinking (a
//! text the arm writes in its own words, as Cursor's pointer, by the part the source fixes:
//! `text_contains`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use harness_core::driver::{Driver, Next};
use harness_core::{Message, MessageKind, Role, ToolCall};
use serde_json::Value;

use crate::helpers::root;

fn files() -> Vec<PathBuf> {
    let dir = root().join("tests/conformance");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    out.sort();
    out
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn calls(v: &Value) -> Vec<ToolCall> {
    v.get("calls")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| ToolCall {
                    id: text(c, "id").to_string(),
                    name: text(c, "name").to_string(),
                    args: c.get("args").cloned().unwrap_or(Value::Null),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The context of a scenario's `input`, and the turn in progress.
fn context(input: &[Value]) -> (Vec<Arc<Message>>, u32) {
    let mut turn = 0;
    let mut out: Vec<Arc<Message>> = Vec::new();
    for m in input {
        let msg = match text(m, "role") {
            "user" if text(m, "kind") == "summary" => {
                Message::host(turn.max(1), text(m, "text"), MessageKind::Summary)
            }
            "user" => {
                if !m
                    .get("observation")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
                {
                    turn += 1;
                }
                Message::user(turn, text(m, "text"), None)
            }
            "assistant" => match m.get("thinking").and_then(Value::as_str) {
                Some(t) => Message::assistant_thinking(turn, t, text(m, "text"), calls(m)),
                None => Message::assistant(turn, text(m, "text"), calls(m)),
            },
            "tool" => {
                let call = ToolCall {
                    id: text(m, "id").to_string(),
                    name: text(m, "name").to_string(),
                    args: Value::Null,
                };
                Message::tool_result(turn, &call, text(m, "text"), false)
            }
            other => panic!("a message of role `{other}`"),
        };
        out.push(msg);
    }
    (out, turn)
}

/// Why `got` is not `want`, if it is not.
fn differs(want: &Value, got: &Message) -> Option<String> {
    if let Some(s) = want.get("summary").and_then(Value::as_str) {
        return (!got.text.contains(s))
            .then(|| format!("a summary holding {s:?}, got {:?}", got.text));
    }
    let role = match got.role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    if text(want, "role") != role {
        return Some(format!("role {} , got {role}", text(want, "role")));
    }
    // A text in the arm's own words (a pointer, a marker) is checked by the part the source
    // fixes; every other text in full.
    match want.get("text_contains").and_then(Value::as_str) {
        Some(part) if !got.text.contains(part) => {
            return Some(format!("a text holding {part:?}, got {:?}", got.text));
        }
        Some(_) => {}
        None if text(want, "text") != got.text => {
            return Some(format!(
                "text {:?}\n   got {:?}",
                text(want, "text"),
                got.text
            ));
        }
        None => {}
    }
    let wc = calls(want);
    let gc: Vec<(&str, &str, &Value)> = got
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), &c.args))
        .collect();
    let wc: Vec<(&str, &str, &Value)> = wc
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), &c.args))
        .collect();
    if wc != gc {
        return Some(format!("calls {wc:?}, got {gc:?}"));
    }
    if role == "tool" && got.tool_call_id.as_deref() != Some(text(want, "id")) {
        return Some(format!(
            "the result of {}, got {:?}",
            text(want, "id"),
            got.tool_call_id
        ));
    }
    let wt = want.get("thinking").and_then(Value::as_str);
    if wt != got.thinking.as_deref() {
        return Some(format!("thinking {wt:?}, got {:?}", got.thinking));
    }
    None
}

fn compare(what: &str, want: &[Value], got: &[Arc<Message>]) -> Vec<String> {
    let mut errors = Vec::new();
    if want.len() != got.len() {
        errors.push(format!(
            "{what}: {} messages expected, {} sent: {:?}",
            want.len(),
            got.len(),
            got.iter()
                .map(|m| (m.role, m.text.chars().take(40).collect::<String>()))
                .collect::<Vec<_>>()
        ));
    }
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        if let Some(d) = differs(w, g) {
            errors.push(format!("{what}: message {i}: {d}"));
        }
    }
    errors
}

/// Runs one scenario through the arm; the differences from the expected request.
fn run(file: &Path, s: &Value) -> Vec<String> {
    let name = format!(
        "{}::{}",
        file.file_name().unwrap().to_string_lossy(),
        text(s, "name")
    );
    let policy = text(s, "policy");
    let spec = policies::parse_policy(policy).unwrap_or_else(|e| panic!("{name}: {e}"));
    let window = s.get("window").and_then(Value::as_u64).unwrap_or(200_000);
    let built = policies::build(&spec, window).unwrap_or_else(|e| panic!("{name}: {e}"));
    let prefix = s.get("prefix_tokens").and_then(Value::as_u64).unwrap_or(0) as u32;
    let input = s["input"].as_array().unwrap();
    let (messages, turn) = context(input);
    let previous = s.get("previous_request_tokens").and_then(Value::as_u64);
    let mut d = Driver::new(built, previous.map_or(prefix, |p| p as u32));
    d.context_mut().turn = turn;
    for m in messages {
        d.push(m);
    }
    let mut errors = Vec::new();
    // The files the policy keeps for the model, written (in memory).
    let files: Vec<String> = d.offloads().into_iter().map(|f| f.path).collect();
    for f in &files {
        d.offloaded(f, true);
    }
    let want_files: Vec<String> = s
        .get("offloads")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    if files != want_files {
        errors.push(format!("{name}: files {want_files:?}, asked {files:?}"));
    }
    if previous.is_some() {
        // The request before: the one whose prompt the policy remembers.
        let _ = d.next_request();
        d.set_prefix(prefix);
        d.begin_request();
    }
    let sent = match d.next_request() {
        Next::Send { messages, .. } => {
            if s.get("summary").is_some() {
                errors.push(format!("{name}: a summary expected, the request was sent"));
            }
            messages
        }
        Next::Summarise(summary) => {
            let Some(text_of) = s.get("summary").and_then(Value::as_str) else {
                return vec![format!("{name}: compacted, no summary expected")];
            };
            if let Some(want) = s.get("expected_summary_input").and_then(Value::as_array) {
                let asked = &summary.messages[..summary.messages.len() - 1];
                errors.extend(compare(&format!("{name} (summary input)"), want, asked));
            }
            let t = d.context().turn;
            d.compacted(
                &summary.messages,
                Message::host(t, text_of, MessageKind::Summary),
            );
            match d.next_request() {
                Next::Send { messages, .. } => messages,
                Next::Summarise(_) => return vec![format!("{name}: compacted twice")],
            }
        }
    };
    if let Some(want) = s.get("expected").and_then(Value::as_array) {
        errors.extend(compare(&name, want, &sent));
    }
    if let Some(parts) = s.get("expected_contains").and_then(Value::as_object) {
        for (i, part) in parts {
            let i: usize = i.parse().unwrap();
            let part = part.as_str().unwrap();
            if !sent.get(i).is_some_and(|m| m.text.contains(part)) {
                errors.push(format!("{name}: message {i} does not hold {part:?}"));
            }
        }
    }
    errors
}

#[test]
fn every_peer_arm_does_what_its_source_does() {
    let mut errors = Vec::new();
    let mut arms: std::collections::BTreeSet<String> = Default::default();
    // Scenarios of foldbench's own (origin `ours: ...`) per arm: the issue asks two per peer
    // arm that reach the divergences (parallel calls inside the window, a task message at the
    // head, a 400-line log).
    let mut ours: std::collections::BTreeMap<String, usize> = Default::default();
    let mut count = 0;
    for file in files() {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let source = &doc["source"];
        assert!(
            source.get("docs").is_some()
                || (source.get("repository").is_some() && source.get("commit").is_some()),
            "{}: a source names its repository and commit, or its documentation page",
            file.display()
        );
        assert!(
            !text(&doc, "derived").is_empty(),
            "{}: says how the expected requests were derived",
            file.display()
        );
        for s in doc["scenarios"].as_array().unwrap() {
            let policy = text(s, "policy");
            let mut these: std::collections::BTreeSet<String> = policy
                .split('|')
                .map(|step| step.split(':').next().unwrap().trim().to_string())
                .collect();
            if policy.contains('|') {
                these.insert("pipeline".to_string());
            }
            if text(s, "origin").starts_with("ours") {
                for a in &these {
                    *ours.entry(a.clone()).or_default() += 1;
                }
            }
            arms.extend(these);
            assert!(
                !text(s, "origin").is_empty(),
                "{}: a scenario says where it comes from",
                file.display()
            );
            errors.extend(run(&file, s));
            count += 1;
        }
    }
    assert!(
        errors.is_empty(),
        "{count} scenarios, {} differences:\n{}",
        errors.len(),
        errors.join("\n")
    );
    // Every peer arm (and the pipeline) has its scenarios.
    for p in policies::PEERS.iter().chain(["pipeline"].iter()) {
        assert!(arms.contains(*p), "no conformance scenario runs `{p}`");
        let n = ours.get(*p).copied().unwrap_or(0);
        assert!(
            n >= 2,
            "`{p}` has {n} scenarios of foldbench's own (origin `ours: ...`), not two"
        );
    }
}
