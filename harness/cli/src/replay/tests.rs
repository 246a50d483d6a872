//! Tests of `replay`.

use super::*;
use crate::error::{code_of, EXIT_OK, EXIT_USAGE};
use clap::Parser;

const SESSION: &str = include_str!("../../../replay/fixtures/claude-code/five-turns.jsonl");

#[derive(Parser)]
struct R {
    #[command(flatten)]
    a: ReplayArgs,
}

#[derive(Parser)]
struct A {
    #[command(flatten)]
    a: AnalyzeArgs,
}

fn replay_with(args: &[&str]) -> u8 {
    let argv = std::iter::once("foldbench").chain(args.iter().copied());
    code_of(&replay(
        R::try_parse_from(argv).expect("the arguments parse").a,
    ))
}

fn analyze_with(args: &[&str]) -> u8 {
    let argv = std::iter::once("foldbench").chain(args.iter().copied());
    code_of(&analyze(
        A::try_parse_from(argv).expect("the arguments parse").a,
    ))
}

/// A folder with one good session and every kind of bad file.
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let w = |name: &str, bytes: &[u8]| std::fs::write(dir.path().join(name), bytes).unwrap();
    w("good.jsonl", SESSION.as_bytes());
    w("empty.jsonl", b"");
    w("binary.jsonl", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0");
    w(
        "truncated.traj.json",
        br#"{"trajectory_format": "mini-swe-agent-1.1", "messages": [{"role": "sys"#,
    );
    w(
        "other.jsonl",
        br#"{"name": "left-pad", "version": "1.0.0"}"#,
    );
    let cut = &SESSION[..SESSION.len() / 2];
    w("cut.jsonl", cut.as_bytes());
    dir
}

#[test]
fn bad_files_are_skipped_with_a_warning_and_good_ones_replayed() {
    let dir = folder();
    let d = dir.path().to_str().unwrap();
    let out = dir.path().join("requests.jsonl");
    assert_eq!(
        replay_with(&[d, "--requests-out", out.to_str().unwrap()]),
        EXIT_OK
    );
    let lines = std::fs::read_to_string(&out).unwrap();
    let first: serde_json::Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(first["version"], 1);
    assert_eq!(first["policy"], "none");
    assert!(first["recorded_tokens"].as_u64().is_some());
    assert_eq!(first["hidden_references"], 0, "none hides nothing");
    assert_eq!(first["probes"]["recall"], true);
    for format in ["md", "csv", "json"] {
        assert_eq!(replay_with(&[d, "--format", format]), EXIT_OK);
    }
    assert_eq!(analyze_with(&[d]), EXIT_OK);
    assert_eq!(analyze_with(&[d, "--format", "json"]), EXIT_OK);
}

#[test]
fn nothing_readable_is_a_usage_error_never_a_panic() {
    let dir = folder();
    for bad in [
        "empty.jsonl",
        "binary.jsonl",
        "truncated.traj.json",
        "other.jsonl",
    ] {
        let p = dir.path().join(bad);
        let p = p.to_str().unwrap();
        assert_eq!(replay_with(&[p]), EXIT_USAGE, "{bad}");
        assert_eq!(analyze_with(&[p]), EXIT_USAGE, "{bad}");
    }
    let cut = dir.path().join("cut.jsonl");
    assert_eq!(
        replay_with(&[cut.to_str().unwrap()]),
        EXIT_OK,
        "a cut file keeps its whole lines"
    );
    assert_eq!(replay_with(&["/nonexistent/foldbench"]), EXIT_USAGE);
    assert_eq!(
        replay_with(&[dir.path().to_str().unwrap(), "--input-format", "nope"]),
        EXIT_USAGE
    );
}

#[test]
fn judges_that_need_labels_ask_for_them() {
    let dir = folder();
    let d = dir.path().to_str().unwrap();
    assert_eq!(replay_with(&[d, "--judge", "oracle"]), EXIT_USAGE);
    let bad = dir.path().join("labels.yaml");
    std::fs::write(&bad, "turns:\n  - n: 1\n    unit: a\n").unwrap();
    assert_eq!(
        replay_with(&[d, "--judge", "labels", "--labels", bad.to_str().unwrap()]),
        EXIT_USAGE
    );
    let good = concat!(env!("CARGO_MANIFEST_DIR"), "/../replay/fixtures/labels");
    assert_eq!(
        replay_with(&[d, "--judge", "oracle", "--labels", good]),
        EXIT_OK
    );
    assert_eq!(
        analyze_with(&[d, "--judge", "labels", "--labels", good]),
        EXIT_OK
    );
    assert_eq!(replay_with(&[d, "--policy", "nope"]), EXIT_USAGE);
    assert_eq!(replay_with(&[d, "--price", "x=cheap"]), EXIT_USAGE);
}
