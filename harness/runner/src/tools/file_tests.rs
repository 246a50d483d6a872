//! The file tools on inputs that must not hang them or flood the model: FIFOs, binary files.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::{execute, ToolLimits, ToolOutput};
use harness_core::ToolCall;

/// Runs one tool call on its own thread and runtime, waiting at most 20 s: a call that blocks
/// fails the test instead of hanging it.
fn call_within(root: &Path, name: &str, args: Value) -> ToolOutput {
    let (tx, rx) = std::sync::mpsc::channel();
    let root = root.to_path_buf();
    let call = ToolCall {
        id: "c1".to_string(),
        name: name.to_string(),
        args,
    };
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let _ = tx.send(rt.block_on(execute(&root, &call, &ToolLimits::default())));
    });
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("`{name}` did not return within 20 s"))
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.txt"), "PORT = 8080\n").expect("write");
    let status = std::process::Command::new("mkfifo")
        .arg(dir.path().join("pipe"))
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend((0..4000u32).map(|i| (i * 7919 % 251) as u8));
    std::fs::write(dir.path().join("logo.png"), png).expect("write");
    dir
}

#[test]
fn read_file_refuses_a_fifo_without_blocking() {
    let ws = workspace();
    let out = call_within(ws.path(), "read_file", json!({ "path": "pipe" }));
    assert!(out.is_error, "{out:?}");
    assert_eq!(
        out.text,
        "error: pipe is not a regular file (a FIFO, socket or device); the file tools read regular files only"
    );
}

#[test]
fn grep_refuses_a_fifo_and_skips_one_in_a_folder() {
    let ws = workspace();
    let out = call_within(
        ws.path(),
        "grep",
        json!({ "pattern": "PORT", "path": "pipe" }),
    );
    assert!(out.is_error, "{out:?}");
    assert!(out.text.contains("pipe is not a regular file"), "{out:?}");
    let out = call_within(ws.path(), "grep", json!({ "pattern": "PORT" }));
    assert_eq!(out.text, "a.txt:1:PORT = 8080");
}

#[test]
fn read_file_refuses_a_binary_file() {
    let ws = workspace();
    let out = call_within(ws.path(), "read_file", json!({ "path": "logo.png" }));
    assert!(out.is_error, "{out:?}");
    assert_eq!(
        out.text,
        "error: logo.png is a binary file (4016 bytes); read_file shows text files only"
    );
}

#[test]
fn grep_refuses_a_binary_file_named_directly() {
    let ws = workspace();
    let out = call_within(
        ws.path(),
        "grep",
        json!({ "pattern": "IHDR", "path": "logo.png" }),
    );
    assert!(out.is_error, "{out:?}");
    assert_eq!(
        out.text,
        "error: logo.png is a binary file; grep searches text files"
    );
}

#[test]
fn text_with_a_few_odd_bytes_is_still_text() {
    let ws = workspace();
    let mut latin1 = b"caf\xe9 = 1\n".to_vec();
    latin1.extend(b"x = 2\n".repeat(20));
    std::fs::write(ws.path().join("l.txt"), latin1).expect("write");
    let out = call_within(ws.path(), "read_file", json!({ "path": "l.txt" }));
    assert!(!out.is_error, "{out:?}");
    assert!(out.text.starts_with("     1\tcaf\u{fffd} = 1"), "{out:?}");
}

/// `file_contains` (the checks `file_contains` and `file_lacks`) finds a text wherever it lies:
/// in a small file read in one piece, at either end, and across the boundary of two pieces of a
/// file larger than one.
#[test]
fn file_contains_finds_a_text_in_small_files_and_across_pieces_of_large_ones() {
    let d = tempfile::tempdir().expect("tempdir");
    let small = d.path().join("small.py");
    std::fs::write(&small, "MEMBER_RATE = 0.20\nend").expect("write");
    for (text, want) in [
        ("MEMBER_RATE = 0.20", true),
        ("end", true),
        ("0.20\nend", true),
        ("0.25", false),
        ("MEMBER_RATE = 0.20\nend!", false),
    ] {
        assert_eq!(
            super::file_contains(&small, text).expect("read"),
            want,
            "{text:?}"
        );
    }
    // Three MiB of filler with the needle across the first MiB's end.
    let large = d.path().join("large.log");
    let mut bytes = vec![b'.'; 3 << 20];
    let needle = b"NEEDLE-ACROSS";
    let at = (1 << 20) - 6;
    bytes[at..at + needle.len()].copy_from_slice(needle);
    std::fs::write(&large, &bytes).expect("write");
    assert!(super::file_contains(&large, "NEEDLE-ACROSS").expect("read"));
    assert!(!super::file_contains(&large, "NEEDLE-ELSEWHERE").expect("read"));
    bytes[(3 << 20) - 4..].copy_from_slice(b"LAST");
    std::fs::write(&large, &bytes).expect("write");
    assert!(super::file_contains(&large, ".LAST").expect("read"));
}
