//! The tool cache changes nothing but time: a run with it and a run without it write the same
//! records, and the cache really answers (its hits are marked).

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

fn run(out: &std::path::Path, extra: &[&str]) {
    let status = Command::new(binary())
        .current_dir(root())
        .args(["run", "--tasks", "tasks/trim-rerun.yaml", "--tasks"])
        .args([
            "tasks/docs-and-code.yaml",
            "--policy",
            "none",
            "--policy",
            "trim",
        ])
        .args(["--policy", "fold", "--seeds", "1-2", "--out"])
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

#[test]
fn a_run_with_the_tool_cache_writes_the_records_of_a_run_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("tool-cache");
    run(
        &dir.path().join("cached"),
        &["--tool-cache", disk.to_str().unwrap()],
    );
    run(&dir.path().join("uncached"), &["--no-tool-cache"]);
    let (a, b) = (
        records(&dir.path().join("cached")),
        records(&dir.path().join("uncached")),
    );
    assert_eq!(a.len(), 12);
    assert_eq!(a, b);
    // The cache was used: entries on disk, and a second run answers from them alone.
    let stored = std::fs::read_dir(&disk).unwrap().count();
    assert!(stored > 0, "nothing was stored");
    run(
        &dir.path().join("again"),
        &["--tool-cache", disk.to_str().unwrap()],
    );
    assert_eq!(records(&dir.path().join("again")), b);
}
