//! The peers' arms through the binary: `run --profile peers` runs every peer policy beside
//! foldbench's own, a summarising peer's summary is asked of the part it replaces, `replay`
//! takes the peers (and the profile's arms with `--profile peers`), and a bad parameter of one in the matrix file is an error at its position.

use std::collections::BTreeSet;
use std::path::Path;

use harness_core::Status;
use harness_runner::read_records;

use crate::helpers::{fb, root, text};

#[test]
fn the_peers_profile_runs_every_peer_arm_beside_the_built_ins() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("peers");
    let o = fb(&[
        "run",
        "--profile",
        "peers",
        "--tasks",
        "trim-rerun",
        "--seeds",
        "1",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let records = read_records(&out).unwrap();
    let arms: BTreeSet<&str> = records.iter().map(|r| r.arm.as_str()).collect();
    for p in policies::POLICIES.iter().chain(policies::PEERS.iter()) {
        assert!(arms.contains(p), "no `{p}` arm in {arms:?}");
    }
    assert!(
        records.iter().any(|r| r.policy.contains('|')),
        "a pipeline arm: {arms:?}"
    );
    assert_eq!(
        records.len(),
        arms.len(),
        "one task, one seed: a cell per arm"
    );
    for r in &records {
        assert_ne!(r.status, Status::Error, "{}: {:?}", r.id, r.error);
        assert!(r.turns > 0, "{}", r.id);
    }
}

/// `(purpose, messages)` of every request in a cell's events, in order.
fn requests(events: &Path) -> Vec<(String, u64)> {
    std::fs::read_to_string(events)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "request")
        .map(|e| {
            (
                e["purpose"].as_str().unwrap_or_default().to_string(),
                e["messages"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn a_summarising_peer_asks_its_summary_of_the_part_it_replaces() {
    // `compact` asks for a summary of the whole context: its compaction request holds more
    // messages than the request before it. `llm-summarizing` and `hybrid` keep a tail, and ask
    // for the summary of what comes before it only: fewer.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = fb(&[
        "run",
        "--tasks",
        "tool-heavy",
        "--seeds",
        "1",
        "--policy",
        "llm-summarizing:max_size=20",
        "--policy",
        "hybrid:summarize_every=12,keep_last=4",
        "--policy",
        "compact:window=3000",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let records = read_records(&out).unwrap();
    assert_eq!(records.len(), 3);
    for r in &records {
        assert!(r.metrics.compactions > 0, "{} compacted", r.id);
    }
    for cell in std::fs::read_dir(out.join("cells")).unwrap() {
        let cell = cell.unwrap().path();
        let name = cell.file_name().unwrap().to_string_lossy().to_string();
        let reqs = requests(&cell.join("events.jsonl"));
        let pairs: Vec<(u64, u64)> = reqs
            .windows(2)
            .filter(|w| w[0].0 == "turn" && w[1].0 == "compaction")
            .map(|w| (w[0].1, w[1].1))
            .collect();
        assert!(!pairs.is_empty(), "{name}: {reqs:?}");
        for (before, summary) in pairs {
            if name.starts_with("tool-heavy_compact") {
                assert!(summary > before, "{name}: the whole context, {reqs:?}");
            } else {
                assert!(summary < before, "{name}: the part replaced, {reqs:?}");
            }
        }
    }
}

#[test]
fn replay_takes_the_peers() {
    let sessions = root().join("tests/fixtures/real-sessions");
    let o = fb(&[
        "replay",
        "--policy",
        "clear-tool-uses",
        "--policy",
        "claude-code",
        "--policy",
        "llm-summarizing:max_size=20",
        "--policy",
        "hybrid:summarize_every=4,keep_last=2",
        "--format",
        "json",
        sessions.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = doc["policies"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|p| p["policy"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "clear-tool-uses",
            "claude-code",
            "llm-summarizing:max_size=20",
            "hybrid:keep_last=2,summarize_every=4"
        ]
    );
    for p in rows {
        assert_eq!(p["requests"], doc["requests"], "{}", p["policy"]);
    }
    for p in &rows[2..] {
        assert!(p["compactions"].as_u64().unwrap() > 0, "{}", p["policy"]);
    }
    // `--profile peers` replays the profile's arms, in its order.
    let o = fb(&[
        "replay",
        "--profile",
        "peers",
        "--format",
        "json",
        sessions.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = doc["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["policy"].as_str().unwrap())
        .collect();
    let mut want: Vec<&str> = policies::POLICIES.to_vec();
    want.extend(policies::PEERS);
    want.push("swe-agent|compact");
    want.push("clear-thinking|clear-tool-uses");
    assert_eq!(names, want);
    let o = fb(&["replay", "--profile", "weekly", sessions.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("has no profile `weekly`; it defines: default, ci, nightly, peers"),
        "{}",
        text(&o)
    );
}

#[test]
fn replay_shows_clear_thinking_on_a_session_that_records_thinking() {
    // A Claude Opus 4.5 session (that model keeps earlier turns' thinking in its context):
    // `clear-thinking` sends less than `none`, by the thinking of all but the last turn, and
    // with `keep=all` exactly as much.
    let session = root().join("harness/import/fixtures/claude-code/thinking.jsonl");
    let o = fb(&[
        "replay",
        "--policy",
        "none",
        "--policy",
        "clear-thinking",
        "--policy",
        "clear-thinking:keep=all",
        "--policy",
        "clear-thinking|clear-tool-uses",
        "--format",
        "json",
        session.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let total = |i: usize| doc["policies"][i]["total_input"].as_u64().unwrap();
    assert!(total(1) < total(0), "{} < {}", total(1), total(0));
    assert_eq!(total(2), total(0));
    assert_eq!(
        total(3),
        total(1),
        "clear-tool-uses under its trigger changes nothing"
    );
}

#[test]
fn a_bad_peer_parameter_in_the_matrix_file_is_an_error_at_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    std::fs::write(
        &file,
        "version: 1\nprofiles:\n  default:\n    arms:\n      - none\n      - { label: h, policy: \"hybrid:window=0\" }\n      - \"llm-summarizing:max_size=6\"\n",
    )
    .unwrap();
    let f = file.display().to_string();
    let o = fb(&["list", "--config", &f]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "{f}:6:21: policy `hybrid`: parameter `window` must be at least 1, not 0"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{f}:7:7: policy `llm-summarizing`: `keep_first` (2) must be less than `max_size` / 2 - 1 (2)"
        )),
        "{err}"
    );
}
