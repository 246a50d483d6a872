//! The comparison in docs/judge.md cannot drift from what the models answered: the committed
//! cassettes (`results/judge/cassettes/`, recorded by `tests/judge-comparison.sh`) are replayed
//! offline over the committed items, and the records and the table must equal the committed
//! ones (`results/judge/records.jsonl`, `results/judge/table.md`), latency included (the
//! cassettes keep each answer's recorded time).

mod common;

use common::{binary, repo};

use std::process::Command;

/// The `--model replay:…` flags of the comparison, in its order.
fn replay_models() -> Vec<String> {
    let mut out = Vec::new();
    for alias in ["smollm2-135m-instruct", "gemma-3-270m"] {
        for mode in ["tool", "text"] {
            out.push("--model".to_string());
            out.push(format!("replay:results/judge/cassettes/{alias}-{mode}"));
        }
    }
    out
}

#[test]
fn the_committed_cassettes_replay_to_the_committed_records_and_table() {
    let results = repo().join("results/judge");
    let dir = tempfile::tempdir().expect("tempdir");
    let records = dir.path().join("records.jsonl");
    let out = Command::new(binary())
        .current_dir(repo())
        .args([
            "judge",
            "run",
            "--dataset",
            "results/judge/items.jsonl",
            "--max-context",
            "2048",
            "--format",
            "md",
            "-o",
        ])
        .arg(&records)
        .args(replay_models())
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("foldbench runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Exit 100 when an item got no answer: those are in the committed records as errors too.
    assert!(
        matches!(out.status.code(), Some(0) | Some(100)),
        "the replay runs: {stderr}"
    );
    assert!(
        !stderr.contains("no recorded answer"),
        "every request has its recorded answer (a change to the requests changes their keys): {stderr}"
    );
    let want = std::fs::read_to_string(results.join("records.jsonl")).expect("committed records");
    let got = std::fs::read_to_string(&records).expect("replayed records");
    let (want, got): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    assert_eq!(got.len(), want.len(), "as many records as committed");
    for (g, w) in got.iter().zip(&want) {
        let g: serde_json::Value = serde_json::from_str(g).expect("a replayed record");
        let w: serde_json::Value = serde_json::from_str(w).expect("a committed record");
        assert_eq!(g, w, "the replayed record equals the committed one");
    }
    let table = std::fs::read_to_string(results.join("table.md")).expect("committed table");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        table,
        "the replayed table equals results/judge/table.md"
    );
}
