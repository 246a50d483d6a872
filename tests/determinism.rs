//! Determinism: the same matrix run twice, in two processes, gives the same records apart from
//! their times, byte-identical transcripts and archives, and a `compare` of the two reports no
//! change in any metric. The tasks are ones whose commands print what a clock or the file
//! times decide when the environment lets them: `python3 -m unittest`'s run time
//! (`Ran 2 tests in 0.001s`) and `ls -l`'s modification times (long-session), under folds whose
//! archives carry that text's sha256 into the next requests' token counts.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::helpers::{fb, text};

/// A JSON value without its times — every key ending in `_ms` (a record's `wall_ms` and
/// `model_ms`, an event's `model_ms`) — and without a tool call's `cached` (whether this cell
/// ran the command or took the result of another cell of the run that ran it first: a matter of
/// which was scheduled first, with the same output either way).
fn timeless(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(k, _)| !k.ends_with("_ms") && k != "cached")
                .map(|(k, v)| (k, timeless(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(timeless).collect()),
        other => other,
    }
}

/// The lines of a JSON Lines file, without their times.
fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| timeless(serde_json::from_str(l).expect("a JSON line")))
        .collect()
}

/// Every file below `dir` by its path relative to it, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        for e in std::fs::read_dir(&p).expect("read_dir") {
            let path = e.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

#[test]
fn a_rerun_gives_the_same_records_and_compare_reports_no_change() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = [tmp.path().join("a"), tmp.path().join("b")];
    for out in &runs {
        let o = fb(&[
            "run",
            "--tasks",
            "long-session",
            "--tasks",
            "triage-failing-tests",
            "--tasks",
            "trim-rerun",
            "--policy",
            "none",
            "--policy",
            "fold",
            "--policy",
            "fold+strategies",
            "--seeds",
            "1",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    let [a, b] = &runs;
    let (ra, rb) = (jsonl(&a.join("cells.jsonl")), jsonl(&b.join("cells.jsonl")));
    assert_eq!(ra.len(), 9, "3 tasks × 3 policies × 1 seed");
    let by_id = |rs: &[Value]| -> BTreeMap<String, Value> {
        rs.iter()
            .map(|r| (r["id"].as_str().unwrap().to_string(), r.clone()))
            .collect()
    };
    let (ma, mb) = (by_id(&ra), by_id(&rb));
    assert_eq!(ma.keys().collect::<Vec<_>>(), mb.keys().collect::<Vec<_>>());
    for (id, r) in &ma {
        assert_eq!(
            r, &mb[id],
            "{id}: the records differ apart from their times"
        );
    }
    // What each cell saw and archived, byte for byte; its events apart from their times.
    let (fa, fb_) = (files(&a.join("cells")), files(&b.join("cells")));
    assert_eq!(
        fa.keys().collect::<Vec<_>>(),
        fb_.keys().collect::<Vec<_>>()
    );
    let mut archives = 0;
    for (rel, bytes) in &fa {
        if rel.ends_with("events.jsonl") {
            assert_eq!(
                jsonl(&a.join("cells").join(rel)),
                jsonl(&b.join("cells").join(rel)),
                "{rel}"
            );
        } else {
            assert!(bytes == &fb_[rel], "{rel} differs between the two runs");
        }
        archives += usize::from(rel.contains("/archive/"));
    }
    assert!(archives > 0, "the fold arms archived turns");
    // The text that used to differ is there, now the same on every run.
    let transcripts: String = fa
        .iter()
        .filter(|(rel, _)| rel.ends_with("transcript.jsonl"))
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .collect();
    assert!(
        transcripts.contains(" tests in 0.000s"),
        "unittest's run time"
    );
    assert!(
        transcripts.contains("May  3  2024 api-2024-04-30.log"),
        "ls -l"
    );
    // And `compare` says so in every metric.
    let o = fb(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        "json",
        "--fail-on-regression",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("compare prints JSON");
    assert_eq!(v["pairs"], 9, "{v}");
    assert_eq!(v["only_base"], Value::Array(vec![]), "{v}");
    assert_eq!(v["only_new"], Value::Array(vec![]), "{v}");
    let metrics = v["metrics"].as_array().expect("metrics");
    assert!(metrics.len() >= 10, "{v}");
    for m in metrics {
        assert_eq!(
            (&m["increased"], &m["decreased"]),
            (&Value::from(0), &Value::from(0)),
            "{m}"
        );
        assert_eq!(m["base"], m["new"], "{m}");
    }
}
