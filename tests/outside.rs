//! Numbers and bytes from outside: what a server sends (a `Retry-After`, usage figures, error
//! bodies with terminal escapes) and what a user types (flag values past any real limit) are
//! checked before foldbench acts on them or prints them.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::helpers::{binary, root};

/// A server on 127.0.0.1 that answers every request with `answer` (raw bytes, then closes);
/// returns its base URL (`http://…/v1`) and the count of requests it took.
fn answering_server(answer: Vec<u8>) -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let mut s = s;
            read_request(&mut s);
            seen.fetch_add(1, Ordering::SeqCst);
            let _ = s.write_all(&answer);
            let _ = s.flush();
        }
    });
    (format!("http://{addr}/v1"), count)
}

/// Reads one HTTP request (head and a `Content-Length` body).
fn read_request(s: &mut std::net::TcpStream) {
    let mut buf = vec![0u8; 1 << 16];
    let mut got = Vec::new();
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got);
        if let Some(end) = text.find("\r\n\r\n") {
            let len = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            if got.len() >= end + 4 + len {
                break;
            }
        }
    }
}

/// An HTTP answer with `status`, extra header lines and `body`.
fn http(status: &str, headers: &[&str], body: &[u8]) -> Vec<u8> {
    let mut head = format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    let mut v = head.into_bytes();
    v.extend_from_slice(body);
    v
}

/// `foldbench run` of `trim-rerun` under `none` on `openai:outside` at `base`, one seed, one
/// job, with `extra` flags; returns the exit code, standard error and `cells.jsonl`.
fn run_against(base: &str, extra: &[&str], out: &Path) -> (Option<i32>, String, String) {
    let o = Command::new(binary())
        .current_dir(root())
        .args([
            "run",
            "--tasks",
            "tasks/trim-rerun.yaml",
            "--policy",
            "none",
            "--model",
            "openai:outside",
            "--seeds",
            "1",
            "--jobs",
            "1",
            "--sandbox",
            "none",
        ])
        .args(extra)
        .arg("--out")
        .arg(out)
        .env("OPENAI_BASE_URL", base)
        .env_remove("OPENAI_API_KEY")
        .env("CI", "true")
        .output()
        .unwrap();
    let cells = std::fs::read_to_string(out.join("cells.jsonl")).unwrap_or_default();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        cells,
    )
}

#[test]
fn a_retry_after_of_100000_seconds_waits_only_the_max_retry_wait_and_says_so() {
    let (base, count) = answering_server(http(
        "429 Too Many Requests",
        &["retry-after: 100000", "content-type: text/plain"],
        b"slow down",
    ));
    let d = tempfile::tempdir().unwrap();
    let (code, err, cells) = run_against(
        &base,
        &[
            "--retries",
            "1",
            "--max-retry-wait",
            "1",
            "--request-timeout",
            "5",
        ],
        &d.path().join("r"),
    );
    assert_eq!(code, Some(100), "{err}");
    assert!(
        err.contains("the server asked for 100000s (Retry-After), more than --max-retry-wait 1s; retrying in 1.00s"),
        "{err}"
    );
    assert!(cells.contains("gave up after 2 attempts"), "{cells}");
    assert_eq!(count.load(Ordering::SeqCst), 2);
}

/// `foldbench ARGS` in the repository root; returns the exit code and standard error.
fn foldbench(args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(binary())
        .current_dir(root())
        .args(args)
        .env("CI", "true")
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn duration_and_count_flags_past_their_maximum_are_refused_with_what_to_give() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("r");
    let out = out.to_str().unwrap();
    let huge = "18446744073709551615";
    let run = [
        "run",
        "--tasks",
        "tasks/trim-rerun.yaml",
        "--policy",
        "none",
        "--seeds",
        "1",
    ];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--tool-timeout", huge],
            "more than 86400 seconds (a day), the most --tool-timeout takes; give 1 to 86400",
        ),
        (
            vec!["--cell-timeout", huge],
            "the most --cell-timeout takes; give 1 to 604800",
        ),
        (
            vec!["--request-timeout", "99999999999999999999999"],
            "the most --request-timeout takes; give 1 to 86400",
        ),
        (
            vec!["--max-retry-wait", huge],
            "the most --max-retry-wait takes; give 0 to 3600",
        ),
        (
            vec!["--retries", huge],
            "the most --retries takes; give 0 to 100",
        ),
        (
            vec!["--max-steps", huge],
            "the most --max-steps takes; give 1 to 100000",
        ),
        (
            vec!["--jobs", huge],
            "the most --jobs takes; give 1 to 1024",
        ),
        (
            vec!["--jobs", "0"],
            "0 is less than 1, the least --jobs takes; give 1 to 1024",
        ),
        (
            vec!["--max-output-tokens", huge],
            "the most --max-output-tokens takes; give 1 to 10000000",
        ),
    ];
    for (flag, said) in cases {
        let mut args = run.to_vec();
        args.extend(&flag);
        args.extend(["--out", out]);
        let (code, err) = foldbench(&args);
        assert_eq!(code, Some(2), "{flag:?}: {err}");
        assert!(err.contains(said), "{flag:?}: {err}");
        assert!(!err.contains("panicked"), "{flag:?}: {err}");
        assert!(
            !Path::new(out).exists(),
            "{flag:?}: the run folder was created"
        );
    }
    let others: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "ab",
                "--task",
                "tasks/trim-rerun.yaml",
                "--arms",
                "none",
                "--runs",
                huge,
                "--out",
                out,
            ],
            "the most --runs takes; give 1 to 10000",
        ),
        (
            vec!["replay", "--window", huge, "."],
            "the most --window takes; give 1 to 10000000",
        ),
        (
            vec!["replay", "--jobs", huge, "."],
            "the most --jobs takes; give 1 to 1024",
        ),
        (
            vec!["judge", "run", "--dataset", "x.jsonl", "--timeout", huge],
            "the most --timeout takes; give 1 to 86400",
        ),
        (
            vec![
                "judge",
                "run",
                "--dataset",
                "x.jsonl",
                "--max-context",
                huge,
            ],
            "the most --max-context takes; give 1 to 10000000",
        ),
        (
            vec!["judge", "run", "--dataset", "x.jsonl", "--price", "inf"],
            "inf is outside 0 to 10000",
        ),
        (
            vec!["judge", "build", "--max-tool-output", huge],
            "the most --max-tool-output takes",
        ),
    ];
    for (args, said) in others {
        let (code, err) = foldbench(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
    }
}

#[test]
fn a_server_body_with_terminal_escapes_is_shown_escaped_and_gzip_is_described() {
    let evil = "\x1b]0;owned\x07\x1b[2J\r[1/1] trim-rerun/none/openai:outside/1 ok 0.1 s\n";
    let (base, _) = answering_server(http(
        "500 Internal Server Error",
        &["content-type: text/plain"],
        evil.as_bytes(),
    ));
    let d = tempfile::tempdir().unwrap();
    let (code, err, cells) = run_against(&base, &["--retries", "1"], &d.path().join("e"));
    assert_eq!(code, Some(100), "{err}");
    assert!(
        !err.contains('\x1b') && !err.contains('\x07') && !err.contains('\r'),
        "{err:?}"
    );
    assert!(
        err.contains("http 500 Internal Server Error: \\x1b]0;owned\\x07\\x1b[2J\\r[1/1]"),
        "{err}"
    );
    // The fake progress line is not a line of its own.
    assert!(
        !err.lines()
            .any(|l| l.starts_with("[1/1] trim-rerun") && l.contains(" ok ")),
        "{err}"
    );
    assert!(!cells.contains("\\u001b"), "{cells}");

    let gz: &[u8] = &[
        0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0x4b, 0xcb, 0xcf, 7, 0, 0x21, 0x65, 0x73, 0x8c, 3, 0,
        0, 0,
    ];
    let (base, _) = answering_server(http(
        "503 Service Unavailable",
        &["content-type: application/json", "content-encoding: gzip"],
        gz,
    ));
    let (code, err, _) = run_against(&base, &["--retries", "0"], &d.path().join("g"));
    assert_eq!(code, Some(100), "{err}");
    assert!(
        err.contains("http 503 Service Unavailable: (a gzip body of 23 bytes, not shown)"),
        "{err}"
    );
    assert!(!err.contains('\u{fffd}'), "{err}");
}

#[test]
fn a_usage_of_2_pow_64_minus_1_tokens_is_a_warning_not_a_figure() {
    let answer = br#"{"id": "x", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Done."}}], "usage": {"prompt_tokens": 18446744073709551615, "completion_tokens": 18446744073709551615, "total_tokens": 18446744073709551615}}"#;
    let (base, count) =
        answering_server(http("200 OK", &["content-type: application/json"], answer));
    let d = tempfile::tempdir().unwrap();
    let (code, err, cells) = run_against(&base, &[], &d.path().join("u"));
    assert!(code == Some(0) || code == Some(100), "{err}");
    assert!(count.load(Ordering::SeqCst) > 0);
    assert!(
        err.contains("the server's usage says input_tokens = 18446744073709551615, more than any real context window (10000000 tokens); not counted"),
        "{err}"
    );
    // Said once, though every answer carries it.
    assert!(count.load(Ordering::SeqCst) > 1);
    assert_eq!(err.matches("the server's usage says").count(), 1, "{err}");
    let record: serde_json::Value =
        serde_json::from_str(cells.lines().next().expect("a cell")).unwrap();
    let m = &record["metrics"];
    let cost = m["cost"].as_f64().expect("a cost");
    assert!(cost < 1.0, "cost {cost}: {m}");
    assert!(!cells.contains("1844674407370955161"), "{cells}");
}

/// `foldbench ARGS` without the capabilities that let root read what its permissions refuse
/// (`setpriv --bounding-set -dac_override,-dac_read_search`), so a folder of mode 000 is
/// unreadable to it as it is to a user; plain `foldbench` when not root.
fn foldbench_without_dac_override(args: &[&str]) -> (Option<i32>, String) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root_user = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        == Some("0");
    let mut c = if root_user {
        let mut c = Command::new("setpriv");
        c.args(["--bounding-set", "-dac_override,-dac_read_search"])
            .arg(binary());
        c
    } else {
        Command::new(binary())
    };
    let o = c
        .current_dir(root())
        .args(args)
        .env("CI", "true")
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn unreadable_entries_of_a_replay_tree_are_named_and_counted_and_an_unreadable_path_is_an_error() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let tree = d.path().join("tree");
    let session = root().join("harness/import/fixtures/claude-code/parallel.jsonl");
    std::fs::create_dir_all(tree.join("ok")).unwrap();
    std::fs::create_dir_all(tree.join("locked")).unwrap();
    std::fs::copy(&session, tree.join("ok/s.jsonl")).unwrap();
    std::fs::copy(&session, tree.join("locked/t.jsonl")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/foldbench-target", tree.join("dangling")).unwrap();
    std::fs::set_permissions(tree.join("locked"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let t = tree.to_str().unwrap();
    let (code, err) = foldbench_without_dac_override(&["replay", t, "--format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "warning: cannot read {t}/dangling: No such file or directory"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "warning: cannot read {t}/locked: Permission denied"
        )),
        "{err}"
    );

    let locked = tree.join("locked");
    let (code, err) = foldbench_without_dac_override(&["replay", locked.to_str().unwrap()]);
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("the folder cannot be listed (Permission denied") && !err.contains("0 files"),
        "{err}"
    );
}

#[test]
fn fifos_and_devices_named_like_transcripts_are_named_and_counted_as_a_walk_skips_them() {
    let d = tempfile::tempdir().unwrap();
    let tree = d.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let session = root().join("harness/import/fixtures/claude-code/parallel.jsonl");
    std::fs::copy(&session, tree.join("s.jsonl")).unwrap();
    let mkfifo = std::process::Command::new("mkfifo")
        .arg(tree.join("pipe.jsonl"))
        .status()
        .unwrap();
    assert!(mkfifo.success());
    // A device node needs root; elsewhere the FIFO alone is checked.
    let device = std::process::Command::new("mknod")
        .arg(tree.join("dev.jsonl"))
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success());
    for k in 0..6 {
        std::process::Command::new("mkfifo")
            .arg(tree.join(format!("more-{k}.jsonl")))
            .status()
            .unwrap();
    }
    let t = tree.to_str().unwrap();
    let (code, err) = foldbench(&["replay", t, "--format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    if device {
        assert!(
            err.contains(&format!(
                "warning: cannot read {t}/dev.jsonl: a device, not a regular file; not replayed"
            )),
            "{err}"
        );
    }
    let fifos = 7;
    let all = fifos + usize::from(device);
    assert!(
        err.contains(&format!(
            "warning: … and {} more entries that cannot be read ({all} in all)",
            all - 5
        )),
        "{err}"
    );
    let only = tree.join("fifo-only");
    std::fs::create_dir_all(&only).unwrap();
    std::fs::copy(&session, only.join("s.jsonl")).unwrap();
    std::fs::rename(tree.join("pipe.jsonl"), only.join("pipe.jsonl")).unwrap();
    let o = only.to_str().unwrap();
    let (code, err) = foldbench(&["replay", o, "--format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "warning: cannot read {o}/pipe.jsonl: a FIFO, not a regular file; not replayed"
        )),
        "{err}"
    );
}

#[test]
fn validate_of_a_folder_without_a_spec_exits_2_saying_no_task_was_found() {
    let d = tempfile::tempdir().unwrap();
    let (code, err) = foldbench(&["validate", d.path().to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no task spec found in"), "{err}");
}

#[test]
fn a_body_cut_short_is_retried_with_the_model_named_once() {
    let (base, _) = answering_server(http(
        "200 OK",
        &["content-type: application/json"],
        b"{\"id\": \"x\", \"choices\": [",
    ));
    let d = tempfile::tempdir().unwrap();
    let (code, err, _) = run_against(&base, &["--retries", "1"], &d.path().join("t"));
    assert_eq!(code, Some(100), "{err}");
    assert!(
        err.contains(
            "model openai:outside: malformed response: the response body is truncated JSON"
        ),
        "{err}"
    );
    assert!(
        !err.contains("model openai:outside: model openai:outside:"),
        "{err}"
    );
}

#[test]
fn thousands_of_skipped_files_print_the_first_five_and_a_count() {
    let d = tempfile::tempdir().unwrap();
    let good = root().join("harness/import/fixtures/claude-code/parallel.jsonl");
    std::fs::copy(&good, d.path().join("good.jsonl")).unwrap();
    for i in 0..40 {
        std::fs::write(d.path().join(format!("bad-{i:03}.jsonl")), "{nope\n").unwrap();
    }
    let (code, err) = foldbench(&["replay", d.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err.matches("warning: skipped").count(), 5, "{err}");
    assert!(
        err.contains("warning: … and 35 more files skipped (40 of 41 files in all)"),
        "{err}"
    );
}
