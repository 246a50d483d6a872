//! Runs that collide, are killed or stopped, or meet a bad folder, a silent server or a missing
//! key: what the run folder and the temp folder hold afterwards, and the exit codes.

use std::collections::HashMap;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::{binary, root, run_matrix, task};

/// `foldbench run` of `trim-rerun` under `none` and `trim` with `seeds`, into `out`, with a
/// private temp folder `tmp` (so its workspaces can be counted).
fn run_cmd(out: &Path, tmp: &Path, seeds: &str) -> Command {
    let mut c = Command::new(binary());
    c.current_dir(root())
        .args([
            "run",
            "--tasks",
            "tasks/trim-rerun.yaml",
            "--policy",
            "none",
            "--policy",
            "trim",
            "--seeds",
            seeds,
            "--jobs",
            "2",
            "--out",
        ])
        .arg(out)
        .env("CI", "true")
        .env("TMPDIR", tmp);
    c
}

fn workspaces(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.starts_with("foldbench-"))
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until `ready` holds (up to two minutes).
fn wait_for(mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() && start.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn spawn_quiet(mut c: Command) -> Child {
    c.stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn rows_per_cell(dir: &Path) -> HashMap<String, usize> {
    let mut n = HashMap::new();
    for l in lines(&dir.join("requests.jsonl")) {
        let v: serde_json::Value = serde_json::from_str(&l).unwrap();
        *n.entry(v["cell"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    n
}

#[test]
fn a_second_run_on_a_busy_folder_exits_2_and_writes_nothing() {
    let out = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut first = spawn_quiet(run_cmd(out.path(), tmp.path(), "1-40"));
    wait_for(|| out.path().join("matrix.json").exists());
    let second = run_cmd(out.path(), tmp.path(), "1-40").output().unwrap();
    let still_running = first.try_wait().unwrap().is_none();
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(still_running, "the first run ended before the second began");
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(
        err.contains("in use by another foldbench run") && err.contains("run.lock"),
        "{err}"
    );
    let mut ids: Vec<String> = lines(&out.path().join("cells.jsonl"))
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v["id"].as_str().unwrap().to_string())
        .collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "a cell was recorded twice");
}

#[test]
fn report_and_merge_refuse_a_cell_recorded_twice() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run");
    run_matrix(vec![task("trim-rerun")], &["none"], "sim", &[1, 2], &run);
    let cells = run.join("cells.jsonl");
    let mut text = std::fs::read_to_string(&cells).unwrap();
    let first = lines(&cells)[0].clone();
    let id = serde_json::from_str::<serde_json::Value>(&first).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    text.push_str(&first);
    text.push('\n');
    std::fs::write(&cells, text).unwrap();
    let report = Command::new(binary())
        .arg("report")
        .arg(&run)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&report.stderr);
    assert_eq!(report.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("the cell {id} is recorded twice (also at line 1)")),
        "{err}"
    );
    assert!(err.contains("cells.jsonl:3"), "{err}");
    let merge = Command::new(binary())
        .arg("merge")
        .arg(&run)
        .arg("-o")
        .arg(d.path().join("merged"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&merge.stderr);
    assert_eq!(merge.status.code(), Some(2), "{err}");
    assert!(err.contains("recorded twice"), "{err}");
}

#[test]
fn a_kill_between_request_rows_and_the_record_does_not_duplicate_rows() {
    let d = tempfile::tempdir().unwrap();
    let t = || vec![task("trim-rerun")];
    run_matrix(t(), &["none", "trim"], "sim", &[1], d.path());
    let want = rows_per_cell(d.path());
    // The state a kill after the last cell's rows and before its record leaves.
    let cells = d.path().join("cells.jsonl");
    let mut kept = lines(&cells);
    kept.pop();
    std::fs::write(&cells, kept.join("\n") + "\n").unwrap();
    let records = run_matrix(t(), &["none", "trim"], "sim", &[1], d.path());
    assert_eq!(records.len(), 2);
    assert_eq!(rows_per_cell(d.path()), want);
}

#[test]
fn a_corrupt_record_line_is_moved_aside_and_its_cell_runs_again() {
    let d = tempfile::tempdir().unwrap();
    let t = || vec![task("trim-rerun")];
    run_matrix(t(), &["none"], "sim", &[1, 2], d.path());
    let cells = d.path().join("cells.jsonl");
    let mut l = lines(&cells);
    let lost = serde_json::from_str::<serde_json::Value>(&l[0]).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    l[0] = "{\"version\":1,\"id\": garbage".to_string();
    std::fs::write(&cells, l.join("\n") + "\n").unwrap();
    let records = run_matrix(t(), &["none"], "sim", &[1, 2], d.path());
    assert_eq!(records.len(), 2);
    assert!(records.iter().any(|r| r.id == lost));
    let bad = std::fs::read_to_string(d.path().join("cells.jsonl.bad")).unwrap();
    assert_eq!(bad, "{\"version\":1,\"id\": garbage\n");
    assert_eq!(rows_per_cell(d.path()).len(), 2);
}

#[test]
fn a_killed_run_leaves_no_workspace_after_resume() {
    let out = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut child = spawn_quiet(run_cmd(out.path(), tmp.path(), "1-6"));
    wait_for(|| !workspaces(tmp.path()).is_empty());
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    let left = workspaces(tmp.path());
    let again = run_cmd(out.path(), tmp.path(), "1-6").output().unwrap();
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(!left.is_empty(), "the kill came when no cell was in flight");
    assert_eq!(workspaces(tmp.path()), Vec::<String>::new());
}

#[test]
fn sigterm_stops_a_run_and_removes_its_workspaces() {
    let out = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut child = spawn_quiet(run_cmd(out.path(), tmp.path(), "1-40"));
    wait_for(|| !workspaces(tmp.path()).is_empty());
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert_eq!(workspaces(tmp.path()), Vec::<String>::new());
}

#[test]
fn a_missing_api_key_exits_2_naming_it_before_creating_the_run_folder() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("new-run");
    let o = Command::new(binary())
        .current_dir(root())
        .args([
            "run",
            "--tasks",
            "tasks/trim-rerun.yaml",
            "--policy",
            "none",
            "--model",
            "anthropic:claude-test",
            "--seeds",
            "1",
            "--out",
        ])
        .arg(&out)
        .env_remove("ANTHROPIC_API_KEY")
        .env("CI", "true")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("ANTHROPIC_API_KEY"), "{err}");
    assert!(!out.exists(), "the run folder was created");
}

/// A server on 127.0.0.1 that accepts connections, reads the request and never answers.
fn silent_server() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in l.incoming().flatten() {
            let mut s = s;
            let mut buf = [0u8; 4096];
            let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
            let _ = s.read(&mut buf);
            held.push(s);
        }
    });
    format!("http://{addr}/v1")
}

/// A server on 127.0.0.1 that keeps the bytes of the first request it is sent and never
/// answers.
fn capturing_server() -> (String, std::sync::mpsc::Receiver<String>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in l.incoming().flatten() {
            let mut s = s;
            let _ = s.set_read_timeout(Some(Duration::from_millis(300)));
            let mut got = Vec::new();
            let mut buf = [0u8; 65536];
            loop {
                match s.read(&mut buf) {
                    Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
                    _ => break,
                }
            }
            let _ = tx.send(String::from_utf8_lossy(&got).into_owned());
            held.push(s);
        }
    });
    (format!("http://{addr}/v1"), rx)
}

#[test]
fn the_temperature_flag_is_sent_to_the_model() {
    let (base, requests) = capturing_server();
    let d = tempfile::tempdir().unwrap();
    let extra = [
        "--temperature",
        "0.5",
        "--request-timeout",
        "2",
        "--retries",
        "0",
    ];
    let (code, err, _) = run_against(&base, &extra, &d.path().join("t"));
    assert_eq!(code, Some(100), "{err}");
    let first = requests
        .recv_timeout(Duration::from_secs(30))
        .expect("the run sent a request");
    assert!(first.starts_with("POST /v1/chat/completions"), "{first}");
    assert!(first.contains("\"temperature\":0.5"), "{first}");
    let (code, err, _) = run_against(&base, &["--temperature", "2.5"], &d.path().join("u"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("2.5 is outside 0 to 2"), "{err}");
}

fn run_against(base: &str, extra: &[&str], out: &PathBuf) -> (Option<i32>, String, String) {
    let o = Command::new(binary())
        .current_dir(root())
        .args([
            "run",
            "--tasks",
            "tasks/trim-rerun.yaml",
            "--policy",
            "none",
            "--model",
            "openai:silent",
            "--seeds",
            "1",
            "--jobs",
            "1",
        ])
        .args(extra)
        .arg("--out")
        .arg(out)
        .env("OPENAI_BASE_URL", base)
        .env("CI", "true")
        .output()
        .unwrap();
    let cells = std::fs::read_to_string(out.join("cells.jsonl")).unwrap_or_default();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).to_string(),
        cells,
    )
}

#[test]
fn request_timeout_and_retries_flags_bound_a_silent_server() {
    let base = silent_server();
    let d = tempfile::tempdir().unwrap();
    let (code, err, cells) = run_against(
        &base,
        &["--request-timeout", "1", "--retries", "1"],
        &d.path().join("r"),
    );
    assert_eq!(code, Some(100), "{err}");
    assert!(
        cells.contains("timed out after 1.0s") && cells.contains("gave up after 2 attempts"),
        "{cells}"
    );
}

#[test]
fn the_cell_timeout_ends_a_cell_that_runs_too_long() {
    let base = silent_server();
    let d = tempfile::tempdir().unwrap();
    let (code, err, cells) = run_against(
        &base,
        &["--request-timeout", "600", "--cell-timeout", "1"],
        &d.path().join("c"),
    );
    assert_eq!(code, Some(100), "{err}");
    assert!(
        cells.contains("the cell timed out after 1s (--cell-timeout)"),
        "{cells}"
    );
}

#[test]
fn the_tool_timeout_limits_setup_commands() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("fx")).unwrap();
    std::fs::write(d.path().join("fx/a.txt"), "A = 1\n").unwrap();
    let spec = "name: slow-setup\ndescription: setup that sleeps\nrepo: fx\nsetup:\n  - \"sleep 30\"\nturns:\n  - user: \"look\"\n    unit: a\n    script:\n      - read_file: { path: a.txt }\n        expect: \"A = 1\"\n      - say: \"seen\"\nchecks:\n  - answer_contains: { turn: 1, text: \"seen\" }\n";
    std::fs::write(d.path().join("slow-setup.yaml"), spec).unwrap();
    let out = d.path().join("run");
    let o = Command::new(binary())
        .args(["run", "--tasks"])
        .arg(d.path().join("slow-setup.yaml"))
        .args(["--policy", "none", "--seeds", "1", "--tool-timeout", "1"])
        .arg("--out")
        .arg(&out)
        .env("CI", "true")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(100), "{err}");
    let cells = std::fs::read_to_string(out.join("cells.jsonl")).unwrap();
    assert!(cells.contains("timed out after 1s"), "{cells}");
}

/// A model that answers the first request of each turn with `calls`, and every other request
/// with a closing message.
struct Scripted {
    calls: Vec<harness_core::ToolCall>,
}

impl harness_runner::backends::Model for Scripted {
    fn name(&self) -> String {
        "scripted".into()
    }

    fn respond<'a>(
        &'a self,
        req: &'a harness_core::Request,
        _cell: &'a str,
    ) -> harness_runner::backends::ModelFuture<'a> {
        let first = matches!(
            req.messages.last().map(|m| m.role),
            Some(harness_core::Role::User)
        );
        let calls = if first {
            self.calls.clone()
        } else {
            Vec::new()
        };
        Box::pin(async move { Ok(harness_core::Response::new("done", calls, None)) })
    }
}

/// Runs one cell of `t` under `none` with `model`.
fn run_scripted(
    t: &harness_runner::tasks::LoadedTask,
    model: &Scripted,
    opts: harness_runner::cell::CellOptions,
) -> harness_runner::cell::CellOutput {
    let plan = harness_runner::cell::CellPlan {
        id: format!("{}/none/scripted/1", t.spec.name),
        task: std::sync::Arc::clone(&t.spec),
        task_dir: t.dir.clone(),
        arm: "none".into(),
        policy: policies::parse_policy("none").unwrap(),
        model_name: "scripted".into(),
        seed: 1,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let on_event = |_: &str, _: &harness_core::Event| {};
    let out = rt.block_on(harness_runner::cell::run_cell(
        &plan, &opts, model, &on_event,
    ));
    // A tool call abandoned at its limit may still hold a blocking thread; do not wait for it.
    rt.shutdown_timeout(Duration::from_millis(100));
    out
}

#[test]
fn a_tool_call_on_a_pipe_nobody_writes_is_answered_not_hung() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("fx")).unwrap();
    std::fs::write(d.path().join("fx/a.txt"), "A = 1\n").unwrap();
    let spec = "name: fifo\ndescription: a named pipe nobody writes to\nrepo: fx\nsetup:\n  - \"mkfifo pipe\"\nturns:\n  - user: \"look\"\n    unit: a\n    script:\n      - read_file: { path: a.txt }\n        expect: \"A = 1\"\n      - say: \"seen\"\nchecks:\n  - answer_contains: { turn: 1, text: \"done\" }\n";
    std::fs::write(d.path().join("fifo.yaml"), spec).unwrap();
    let t = harness_runner::tasks::load_tasks(&[d.path().join("fifo.yaml")])
        .unwrap()
        .remove(0);
    let model = Scripted {
        calls: vec![harness_core::ToolCall {
            id: "p".into(),
            name: "read_file".into(),
            args: serde_json::json!({"path": "pipe"}),
        }],
    };
    let mut opts = harness_runner::cell::CellOptions::default();
    opts.tool_limits.shell_timeout = Duration::from_secs(1);
    let out = run_scripted(&t, &model, opts);
    assert_eq!(out.record.error, None, "the cell must not end in error");
    assert_eq!(
        out.record.status,
        harness_core::Status::Success,
        "{:?}",
        out.record.checks
    );
    let result = out
        .transcript
        .iter()
        .find(|m| m.role == harness_core::Role::Tool)
        .expect("a tool result");
    assert!(result.is_error, "{}", result.text);
    // Refused before opening (a FIFO is not a regular file); were it opened, the tool time limit
    // would answer it.
    assert!(
        result.text.contains("not a regular file") || result.text.contains("did not finish"),
        "{}",
        result.text
    );
}

#[test]
fn unnamed_and_unreadable_tool_calls_get_tool_errors_and_the_cell_goes_on() {
    use harness_core::ToolCall;
    let t = task("trim-rerun");
    let model = Scripted {
        calls: vec![
            ToolCall {
                id: "a".into(),
                name: String::new(),
                args: serde_json::json!({}),
            },
            ToolCall {
                id: "b".into(),
                name: "read_file".into(),
                args: harness_runner::backends::parse_arguments("{\"path\": docs"),
            },
        ],
    };
    let out = run_scripted(&t, &model, harness_runner::cell::CellOptions::default());
    assert_eq!(out.record.error, None, "the cell must not end in error");
    let results: Vec<(String, bool)> = out
        .transcript
        .iter()
        .filter(|m| m.role == harness_core::Role::Tool)
        .map(|m| (m.text.to_string(), m.is_error))
        .collect();
    assert_eq!(results.len(), 4, "two calls in each of two turns");
    assert!(
        results[0].1 && results[0].0.contains("no tool name"),
        "{results:?}"
    );
    assert!(
        results[1].1
            && results[1]
                .0
                .contains("arguments of `read_file` are not valid JSON")
            && results[1].0.contains("{\\\"path\\\": docs"),
        "{results:?}"
    );
}

/// The pids of live processes whose command line is exactly `words`.
fn processes(words: &[&str]) -> Vec<u32> {
    let want: Vec<u8> = words
        .iter()
        .flat_map(|w| [w.as_bytes(), b"\0"].concat())
        .collect();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let zombie = std::fs::read_to_string(e.path().join("stat"))
            .map(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if !zombie && std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == want) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn sigterm_ends_the_calls_in_flight_setsid_children_included() {
    let d = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // Numbers no other process uses, so the test finds exactly its own sleeps.
    let n = 700_000 + std::process::id() % 100_000;
    let (escaped, waiting) = (n.to_string(), (n + 1).to_string());
    std::fs::create_dir_all(d.path().join("fx")).unwrap();
    std::fs::write(d.path().join("fx/a.txt"), "A = 1\n").unwrap();
    let spec = format!("name: sleepy\ndescription: setup that leaves a setsid child\nrepo: fx\nsetup:\n  - \"setsid sleep {escaped} </dev/null >/dev/null 2>&1 & sleep {waiting}\"\nturns:\n  - user: \"look\"\n    unit: a\n    script:\n      - read_file: {{ path: a.txt }}\n        expect: \"A = 1\"\n      - say: \"seen\"\nchecks:\n  - answer_contains: {{ turn: 1, text: \"seen\" }}\n");
    std::fs::write(d.path().join("sleepy.yaml"), spec).unwrap();
    let mut c = Command::new(binary());
    c.args(["run", "--tasks"])
        .arg(d.path().join("sleepy.yaml"))
        .args(["--policy", "none", "--seeds", "1", "--tool-timeout", "600"])
        .arg("--out")
        .arg(d.path().join("run"))
        .env("CI", "true")
        .env("TMPDIR", tmp.path());
    let mut child = spawn_quiet(c);
    wait_for(|| {
        !processes(&["sleep", &escaped]).is_empty() && !processes(&["sleep", &waiting]).is_empty()
    });
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = child.wait().unwrap();
    let start = Instant::now();
    let mut left = Vec::new();
    while start.elapsed() < Duration::from_secs(5) {
        left = processes(&["sleep", &escaped]);
        left.extend(processes(&["sleep", &waiting]));
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in &left {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert!(left.is_empty(), "processes outlived the run: {left:?}");
    assert_eq!(workspaces(tmp.path()), Vec::<String>::new());
}

#[test]
fn a_resume_runs_cells_that_ended_in_error_again_unless_told_not_to() {
    for retry in [true, false] {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("run");
        let go = |extra: &[&str]| {
            let o = Command::new(binary())
                .current_dir(root())
                .args([
                    "run",
                    "--tasks",
                    "tasks/trim-rerun.yaml",
                    "--policy",
                    "none",
                ])
                .args(["--seeds", "1-2", "--out"])
                .arg(&out)
                .args(extra)
                .output()
                .unwrap();
            (
                o.status.code(),
                String::from_utf8_lossy(&o.stderr).into_owned(),
            )
        };
        let (code, err) = go(&[]);
        assert_eq!(code, Some(0), "{err}");
        // The state an infrastructure error leaves: the first cell's record says `error`.
        let cells = out.join("cells.jsonl");
        let mut l = lines(&cells);
        let mut first: serde_json::Value = serde_json::from_str(&l[0]).unwrap();
        let id = first["id"].as_str().unwrap().to_string();
        first["status"] = "error".into();
        first["error"] = "model: connection reset".into();
        l[0] = first.to_string();
        std::fs::write(&cells, l.join("\n") + "\n").unwrap();
        let (code, err) = go(if retry { &[] } else { &["--no-retry-errors"] });
        // Run again, the cell succeeds: exit 0. Kept, the infrastructure error is the run's
        // outcome: exit 100, said with the cell and what to do.
        if retry {
            assert_eq!(code, Some(0), "{err}");
        } else {
            assert_eq!(code, Some(100), "{err}");
            assert!(
                err.contains(&format!("error   {id}: model: connection reset"))
                    && err.contains(
                        "error: 1 of 2 cells ended in an infrastructure error (exit 100; the \
                         same command runs them again)"
                    ),
                "{err}"
            );
        }
        let now: Vec<serde_json::Value> = lines(&cells)
            .iter()
            .map(|x| serde_json::from_str(x).unwrap())
            .collect();
        assert_eq!(now.len(), 2, "one record per cell");
        let status = now.iter().find(|r| r["id"] == id.as_str()).unwrap()["status"].clone();
        let retried = out.join("cells.jsonl.retried");
        if retry {
            assert_eq!(status, "success");
            assert!(std::fs::read_to_string(&retried)
                .unwrap()
                .contains("connection reset"));
        } else {
            assert_eq!(status, "error");
            assert!(!retried.exists());
        }
    }
}

#[test]
fn a_signal_stops_a_run_whose_every_worker_thread_is_busy() {
    // A `file_contains` check reads a sparse file of 1 TiB on a worker thread for minutes. With
    // twice as many cells as cores, every worker of the runtime is busy. The signal must end the
    // run anyway.
    let cells = 2 * std::thread::available_parallelism().map_or(2, |n| n.get());
    for (signal, code) in [("-TERM", 143), ("-INT", 130)] {
        let d = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("tasks/fx")).unwrap();
        std::fs::write(d.path().join("tasks/fx/a.txt"), "A = 1\n").unwrap();
        for k in 1..=cells {
            let spec = format!("name: busy-{k}\ndescription: a huge sparse file under a check\nrepo: fx\nsetup:\n  - \"truncate -s 1T big.bin && echo {k}\"\nturns:\n  - user: \"look\"\n    unit: a\n    script:\n      - say: \"seen\"\nchecks:\n  - file_contains: {{ path: big.bin, text: \"NEEDLE\" }}\n");
            std::fs::write(d.path().join(format!("tasks/busy-{k}.yaml")), spec).unwrap();
        }
        let mut c = Command::new(binary());
        c.args(["run", "--tasks"])
            .arg(d.path().join("tasks"))
            .args(["--policy", "none", "--seeds", "1"])
            .args(["--jobs", &cells.to_string(), "--out"])
            .arg(d.path().join("run"))
            .env("CI", "true")
            .env("TMPDIR", tmp.path());
        let mut child = spawn_quiet(c);
        let with_big_file = || {
            workspaces(tmp.path())
                .iter()
                .filter(|w| tmp.path().join(w).join("big.bin").exists())
                .count()
        };
        wait_for(|| with_big_file() >= cells);
        assert_eq!(
            with_big_file(),
            cells,
            "the cells did not all run their setup"
        );
        // Their checks are under way.
        std::thread::sleep(Duration::from_millis(1000));
        let sent = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let start = Instant::now();
        let mut ended = false;
        while !ended && start.elapsed() < Duration::from_secs(60) {
            ended = child.try_wait().unwrap().is_some();
            std::thread::sleep(Duration::from_millis(20));
        }
        if !ended {
            let _ = child.kill();
        }
        let status = child.wait().unwrap();
        assert!(ended, "{signal} did not end the run in a minute");
        assert_eq!(status.code(), Some(code), "{signal}: {status:?}");
        assert_eq!(workspaces(tmp.path()), Vec::<String>::new(), "{signal}");
    }
}
