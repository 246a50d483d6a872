//! What foldbench writes when the output cannot take it: standard output on a full disk
//! (`/dev/full`) or a closed pipe, files on a disk that fills (a file-size limit stands in for
//! the full disk: the same failed `write`, without needing a small file system).

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::helpers::{binary, root};

/// Runs the binary in `cwd` with standard output on `/dev/full` (every write fails with
/// ENOSPC, as on a full disk).
fn to_full_disk(cwd: &Path, args: &[&str]) -> Output {
    let full = File::options().write(true).open("/dev/full").unwrap();
    Command::new(binary())
        .current_dir(cwd)
        .args(args)
        .stdout(Stdio::from(full))
        .output()
        .unwrap()
}

/// Exit 1 and a message that says standard output could not be written; no panic.
fn assert_write_error(out: &Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{what}: {err}");
    assert!(
        err.contains("error: cannot write to standard output\ncaused by: No space left on device"),
        "{what}: {err}"
    );
    assert!(!err.contains("panicked"), "{what}: {err}");
}

fn real_sessions() -> String {
    root()
        .join("tests/fixtures/real-sessions")
        .display()
        .to_string()
}

#[test]
fn every_command_that_prints_fails_with_exit_1_when_standard_output_is_full() {
    let baseline = root().join("results/baselines/ci").display().to_string();
    let init = tempfile::tempdir().unwrap();
    let sessions = real_sessions();
    let cases: Vec<Vec<&str>> = vec![
        vec!["tasks"],
        vec!["list"],
        vec!["list", "--json"],
        vec!["validate"],
        vec!["report", &baseline],
        vec!["report", &baseline, "--format", "json"],
        vec!["compare", &baseline, &baseline],
        vec!["replay", &sessions, "--policy", "none", "--policy", "fold"],
        vec!["replay", &sessions, "--policy", "none", "--format", "json"],
        vec!["analyze", &sessions],
        vec!["analyze", &sessions, "--format", "csv"],
        vec!["completions", "bash"],
        vec!["policies"],
        vec!["policies", "--markdown"],
        vec!["--help"],
        vec!["--version"],
        vec!["init", init.path().to_str().unwrap()],
    ];
    for args in &cases {
        let out = to_full_disk(&root(), args);
        assert_write_error(&out, &args.join(" "));
    }
}

/// Runs the binary in `cwd` with standard output closed (`>&-`), bounded: a command that does
/// not end by itself within two minutes is killed and reported as hanging.
fn with_stdout_closed(cwd: &Path, args: &[&str]) -> Output {
    let child = Command::new("sh")
        .current_dir(cwd)
        .arg("-c")
        .arg("exec \"$0\" \"$@\" >&-")
        .arg(binary())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(120)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("{args:?} with its standard output closed did not end")
        }
    }
}

#[test]
fn every_command_that_prints_fails_with_exit_1_when_standard_output_is_closed() {
    let baseline = root().join("results/baselines/ci").display().to_string();
    let init = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run");
    let records = d.path().join("proxy-run");
    let sessions = real_sessions();
    let cases: Vec<Vec<&str>> = vec![
        vec!["tasks"],
        vec!["list"],
        vec!["validate"],
        vec!["report", &baseline],
        vec!["compare", &baseline, &baseline],
        vec!["replay", &sessions, "--policy", "none", "--policy", "fold"],
        vec!["replay", &sessions, "--policy", "none", "--format", "json"],
        vec!["analyze", &sessions],
        vec!["completions", "bash"],
        vec!["policies"],
        vec!["--help"],
        vec!["--version"],
        vec!["init", init.path().to_str().unwrap()],
        vec![
            "run",
            "--tasks",
            "tasks/trim-rerun.yaml",
            "--policy",
            "none",
            "--seeds",
            "1",
            "--out",
            run.to_str().unwrap(),
        ],
        vec![
            "serve",
            "--sim",
            "--task",
            "tasks/trim-rerun.yaml",
            "--listen",
            "127.0.0.1:0",
        ],
        vec![
            "proxy",
            "--policy",
            "none",
            "--upstream",
            "http://127.0.0.1:9",
            "--listen",
            "127.0.0.1:0",
            "--out",
            records.to_str().unwrap(),
        ],
    ];
    for args in &cases {
        let out = with_stdout_closed(&root(), args);
        let err = String::from_utf8_lossy(&out.stderr);
        let what = args.join(" ");
        assert_eq!(out.status.code(), Some(1), "{what}: {err}");
        assert!(
            err.contains(
                "error: cannot write to standard output\ncaused by: it was closed when foldbench started"
            ),
            "{what}: {err}"
        );
        assert!(!err.contains("panicked"), "{what}: {err}");
    }
}

#[test]
fn run_and_fold_fail_with_exit_1_when_standard_output_is_full() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let out = to_full_disk(
        &root(),
        &[
            "run",
            "--tasks",
            "tasks/trim-rerun.yaml",
            "--policy",
            "none",
            "--seeds",
            "1",
            "--out",
            run.to_str().unwrap(),
        ],
    );
    assert_write_error(&out, "run");
    // The cell's record was written before the table failed to print: the run is complete.
    let records = fs::read_to_string(run.join("cells.jsonl")).unwrap();
    assert_eq!(records.lines().count(), 1, "{records}");
    let transcript = run
        .join("cells")
        .join(harness_runner::cell_folder("trim-rerun/none/sim/1"))
        .join("transcript.jsonl");
    let out = to_full_disk(
        &root(),
        &[
            "fold",
            transcript.to_str().unwrap(),
            "--from",
            "1",
            "--to",
            "1",
        ],
    );
    assert_write_error(&out, "fold");
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    for args in [
        vec!["tasks"],
        vec!["report", "results/baselines/ci"],
        vec!["analyze", "tests/fixtures/real-sessions"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(binary())
            .current_dir(root())
            .args(&args)
            .stdout(writer)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("error") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
        // Ended by SIGPIPE, as `cat` is, or (SIGPIPE ignored) with the write error ignored.
        use std::os::unix::process::ExitStatusExt as _;
        assert!(
            out.status.signal() == Some(13) || out.status.code() == Some(0),
            "{args:?}: {:?}",
            out.status
        );
    }
}

/// A device that answers every write with ENOSPC, as `/dev/full` does. As root, a node of our
/// own (`mknod DIR/full c 1 7`), so that a regression that renames a file over the device named
/// (as `--requests-out /dev/full` once did) replaces that node and not the machine's
/// `/dev/full`; elsewhere `/dev/full` itself, which a user other than root cannot replace.
fn full_device(dir: &Path) -> PathBuf {
    let own = dir.join("full");
    let made = Command::new("mknod")
        .args(["-m", "666"])
        .arg(&own)
        .args(["c", "1", "7"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if made {
        own
    } else {
        PathBuf::from("/dev/full")
    }
}

#[test]
fn requests_out_to_a_full_device_is_an_error_not_a_success() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let full = full_device(dir.path());
    let full = full.to_str().unwrap();
    for command in ["replay", "analyze"] {
        let out = Command::new(binary())
            .current_dir(root())
            .args([
                command,
                "tests/fixtures/real-sessions",
                "--requests-out",
                full,
            ])
            .stdout(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{command}: {err}");
        assert!(
            err.contains(&format!(
                "error: cannot write {full}\ncaused by: No space left on device"
            )),
            "{command}: {err}"
        );
        assert!(!err.contains("request records in"), "{command}: {err}");
        use std::os::unix::fs::FileTypeExt as _;
        assert!(
            fs::metadata(full).unwrap().file_type().is_char_device(),
            "{full} was replaced"
        );
    }
    // A device is written in place: the records reach /dev/stdout.
    let out = Command::new(binary())
        .current_dir(root())
        .args([
            "analyze",
            "tests/fixtures/real-sessions",
            "--requests-out",
            "/dev/stdout",
            "--format",
            "csv",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l.starts_with("{\"version\":1")),
        "{}",
        &text[..text.len().min(500)]
    );
}

/// Runs the binary with a file-size limit of `blocks` 512-byte blocks and SIGXFSZ ignored, so a
/// write past the limit fails with EFBIG as a write to a full disk fails with ENOSPC.
fn with_file_limit(cwd: &Path, blocks: u32, args: &[&str]) -> Output {
    Command::new("sh")
        .current_dir(cwd)
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" \"$@\""
        ))
        .arg(binary())
        .args(args)
        .output()
        .unwrap()
}

/// The names in a folder, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn an_output_file_that_cannot_be_written_whole_is_not_written_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("report.md");
    fs::write(&old, "the report of last week\n").unwrap();
    let baseline = root().join("results/baselines/ci").display().to_string();
    for file in ["report.md", "new.json", "page.html"] {
        let out = with_file_limit(
            dir.path(),
            2,
            &["report", &baseline, "-o", file, "--format", "csv"],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{file}: {err}");
        assert!(
            err.contains(&format!(
                "error: cannot write {file}\ncaused by: File too large"
            )),
            "{file}: {err}"
        );
    }
    // No half-written file and no temporary one; the old report is as it was.
    assert_eq!(names(dir.path()), vec!["report.md"]);
    assert_eq!(
        fs::read_to_string(&old).unwrap(),
        "the report of last week\n"
    );
}

#[test]
fn a_run_whose_disk_fills_leaves_no_temporary_matrix() {
    // 40 cells: a matrix.json larger than the limit.
    let dir = tempfile::tempdir().unwrap();
    let run: PathBuf = dir.path().join("run");
    let out = with_file_limit(
        &root(),
        2,
        &[
            "run",
            "--tasks",
            "tasks/trim-rerun.yaml",
            "--policy",
            "none",
            "--seeds",
            "1-40",
            "--out",
            run.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot write") && err.contains("matrix.json\ncaused by: File too large"),
        "{err}"
    );
    let left = names(&run);
    assert!(
        left.iter()
            .all(|n| !n.contains("tmp") && n != "matrix.json"),
        "{left:?}"
    );
}
