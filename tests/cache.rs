//! The tool cache changes nothing but time: a run with it and a run without it write the same
//! records and leave the same workspaces (the same diff per cell), and the cache really answers
//! (its hits are marked) — calls that change files included, whose changes a hit replays.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

use crate::helpers::{binary, root};

/// The cell records of a run folder by id, without their times.
fn records(dir: &std::path::Path) -> BTreeMap<String, Value> {
    let text = std::fs::read_to_string(dir.join("cells.jsonl")).unwrap();
    text.lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            let obj = v.as_object_mut().unwrap();
            obj.remove("wall_ms");
            obj.remove("model_ms");
            (obj["id"].as_str().unwrap().to_string(), v)
        })
        .collect()
}

/// Each cell's `diff.patch` (the workspace against the fixture, after the checks) by folder.
fn diffs(dir: &std::path::Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir.join("cells"))
        .unwrap()
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (
                name,
                std::fs::read_to_string(e.path().join("diff.patch")).unwrap(),
            )
        })
        .collect()
}

/// The shell calls of a run answered by the cache, as `(cell folder, command)`.
fn hits(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir.join("cells")).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path().join("events.jsonl")).unwrap();
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let call = v.get("tool_call").unwrap_or(&v);
            if call["name"] == "shell" && call["cached"] == true {
                let args: Value = match &call["args"] {
                    Value::String(s) => serde_json::from_str(s).unwrap_or(Value::Null),
                    other => other.clone(),
                };
                out.push((
                    e.file_name().to_string_lossy().into_owned(),
                    args["command"].as_str().unwrap_or_default().to_string(),
                ));
            }
        }
    }
    out
}

/// The tasks and policies of the first test: reads and edits, under a folding policy too.
const READS: &[&str] = &[
    "--tasks",
    "tasks/trim-rerun.yaml",
    "--tasks",
    "tasks/docs-and-code.yaml",
    "--policy",
    "none",
    "--policy",
    "trim",
    "--policy",
    "fold",
];

/// The tasks of the second test, whose shell calls change files: snapshots and a migration of
/// the data (`snapshot-rollback`), logs written by the setup (`large-logs`), under a folding
/// policy too (its results quote the sha256 of archives that hold the calls' output).
const WRITES: &[&str] = &[
    "--tasks",
    "tasks/snapshot-rollback.yaml",
    "--tasks",
    "tasks/large-logs.yaml",
    "--policy",
    "none",
    "--policy",
    "trim",
    "--policy",
    "fold",
];

fn run(out: &std::path::Path, matrix: &[&str], extra: &[&str]) {
    let status = Command::new(binary())
        .current_dir(root())
        .arg("run")
        .args(matrix)
        .args(["--seeds", "1-2", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    // 100: `docs-and-code` fails under `trim`, which loses the old limit.
    assert!(
        matches!(status.status.code(), Some(0 | 100)),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
}

/// Runs `matrix` with an on-disk cache, without a cache, and again from the disk cache alone;
/// checks that the three wrote the same records and left the same workspaces. Returns the run
/// folders (cached, uncached).
fn same_with_and_without(
    dir: &std::path::Path,
    matrix: &[&str],
    cells: usize,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let disk = dir.join("tool-cache");
    let (cached, uncached, again) = (dir.join("cached"), dir.join("uncached"), dir.join("again"));
    run(&cached, matrix, &["--tool-cache", disk.to_str().unwrap()]);
    run(&uncached, matrix, &["--no-tool-cache"]);
    let (a, b) = (records(&cached), records(&uncached));
    assert_eq!(a.len(), cells);
    assert_eq!(a, b);
    assert_eq!(diffs(&cached), diffs(&uncached));
    assert!(!hits(&cached).is_empty(), "the cache answered nothing");
    assert!(hits(&uncached).is_empty());
    // The cache was used: entries on disk, and a second run answers from them alone.
    let stored = std::fs::read_dir(&disk).unwrap().count();
    assert!(stored > 0, "nothing was stored");
    run(&again, matrix, &["--tool-cache", disk.to_str().unwrap()]);
    assert_eq!(records(&again), b);
    assert_eq!(diffs(&again), diffs(&uncached));
    (cached, uncached)
}

#[test]
fn a_run_with_the_tool_cache_writes_the_records_of_a_run_without_it() {
    let dir = tempfile::tempdir().unwrap();
    same_with_and_without(dir.path(), READS, 12);
}

#[test]
fn calls_that_change_files_are_answered_by_the_cache_and_leave_the_same_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let (cached, _) = same_with_and_without(dir.path(), WRITES, 12);
    // Calls that change the workspace were answered by the cache (their changes replayed).
    let hit = hits(&cached);
    for command in ["python3 tools/snapshot.py", "python3 tools/migrate.py"] {
        assert!(
            hit.iter().any(|(_, c)| c == command),
            "{command} never answered by the cache: {hit:?}"
        );
    }
}
