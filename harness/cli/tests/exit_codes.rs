//! The binary's exit codes, end to end: `main` maps each command's result to one code and prints
//! the error once. (Being an integration test of this package, it also makes `cargo test
//! --workspace` build the `foldbench` binary that the workspace's other test crates run.)

use std::process::{Command, Output};

fn foldbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_foldbench"))
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn success_usage_and_input_errors_map_to_their_codes() {
    let ok = foldbench(&["--version"]);
    assert_eq!(ok.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&ok.stdout).starts_with("foldbench "));

    // clap's own usage error: printed by clap, exit 2, no second message.
    let bad = foldbench(&["frob"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(err.matches("error:").count(), 1, "{err}");

    // An input problem: every problem on its own line, then one summary line; exit 2.
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("t.yaml");
    std::fs::write(&spec, "name: t\nturns: 3\n").unwrap();
    let invalid = foldbench(&["validate", spec.to_str().unwrap()]);
    assert_eq!(invalid.status.code(), Some(2));
    let err = String::from_utf8_lossy(&invalid.stderr);
    assert!(err.contains("t.yaml:"), "{err}");
    assert!(
        err.trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("error: ")
            && err.contains("problem"),
        "{err}"
    );
}
