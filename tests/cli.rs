//! The command line as a user meets it: validation errors, exit codes, resume after a kill.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::helpers::{binary, root};

#[test]
fn validate_reports_every_problem_with_positions_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let spec = r#"name: broken
description: three problems
repo: fixtures/nowhere
colour: red
turns:
  - user: "look"
    unit: a
    script:
      - read_file: { path: a.py }
        expect: "A = 1"
      - say: "seen"
  - user: "use it"
    unit: a
    needs: ["B = 2"]
    script:
      - say: "done"
checks:
  - shell: "true"
"#;
    std::fs::write(dir.path().join("broken.yaml"), spec).unwrap();
    let out = Command::new(binary())
        .arg("validate")
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let file = dir.path().join("broken.yaml").display().to_string();
    assert!(
        err.contains(&format!(
            "{file}:3:1: fixture folder `fixtures/nowhere` does not exist"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("{file}:4:1: unknown field `colour`")),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{file}:14:13: turn 2 `needs` \"B = 2\", but no earlier step `expect`s it"
        )),
        "{err}"
    );
}

#[test]
fn the_suite_validates_and_bad_usage_exits_2() {
    let ok = Command::new(binary())
        .current_dir(root())
        .args(["validate", "tasks"])
        .output()
        .unwrap();
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let bad = Command::new(binary())
        .current_dir(root())
        .args(["run", "--policy", "nonsense"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown policy `nonsense`"));
    let garbage = Command::new(binary())
        .current_dir(root())
        .args(["report", "/nonexistent/run"])
        .output()
        .unwrap();
    assert_eq!(garbage.status.code(), Some(2));
}

#[test]
fn a_killed_run_resumes_without_torn_lines_or_duplicates() {
    let out = tempfile::tempdir().unwrap();
    let args = |o: &std::path::Path| {
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
                "1-4",
                "--jobs",
                "1",
                "--out",
            ])
            .arg(o)
            .env("CI", "true");
        c
    };
    let mut child = args(out.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let cells = out.path().join("cells.jsonl");
    let start = Instant::now();
    while std::fs::read_to_string(&cells)
        .map(|s| s.lines().count())
        .unwrap_or(0)
        < 2
        && start.elapsed() < Duration::from_secs(120)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = std::fs::read_to_string(&cells).unwrap().lines().count();
    assert!(
        (2..8).contains(&before),
        "killed mid-matrix: {before} cells done"
    );
    // A torn last line, as a kill in the middle of a write leaves it.
    let mut text = std::fs::read_to_string(&cells).unwrap();
    text.push_str("{\"version\":1,\"id\":\"trim-re");
    std::fs::write(&cells, text).unwrap();
    let again = args(out.path()).output().unwrap();
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let lines: Vec<String> = std::fs::read_to_string(&cells)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let mut ids: Vec<String> = lines
        .iter()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("no torn line")["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids.len(), 8);
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 8, "no duplicate cell");
}

#[test]
fn sandbox_bwrap_without_bubblewrap_exits_2_and_says_what_to_do() {
    // A PATH with `sh` but no `bwrap`.
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/bin/sh", bin.path().join("sh")).unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new(binary())
        .current_dir(root())
        .env("PATH", bin.path())
        .args([
            "run",
            "--tasks",
            "tasks/trim-rerun.yaml",
            "--policy",
            "none",
        ])
        .args(["--seeds", "1", "--sandbox", "bwrap", "--out"])
        .arg(out_dir.path().join("run"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--sandbox bwrap"), "{err}");
    assert!(err.contains("apt install bubblewrap"), "{err}");
    assert!(
        !err.contains("warning: no sandbox"),
        "a fallback warning first: {err}"
    );
    assert!(
        !out_dir.path().join("run").exists(),
        "a run folder was made"
    );
}

/// `foldbench run` of `task` with `extra` flags, a PATH with `sh` but no `bwrap`, and the
/// OpenAI-compatible server at a port nothing listens on: the exit code and standard error.
fn run_without_bwrap(task: &str, extra: &[&str]) -> (Option<i32>, String, bool) {
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/bin/sh", bin.path().join("sh")).unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let out = Command::new(binary())
        .current_dir(root())
        .env("PATH", bin.path())
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", base)
        .env("CI", "true")
        .args(["run", "--tasks", task, "--policy", "none", "--seeds", "1"])
        .args(["--retries", "0", "--request-timeout", "5"])
        .args(extra)
        .arg("--out")
        .arg(out_dir.path().join("run"))
        .output()
        .unwrap();
    let made = out_dir.path().join("run").exists();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        made,
    )
}

#[test]
fn a_real_model_without_bubblewrap_is_refused_unless_sandbox_none() {
    let (code, err, made) = run_without_bwrap(
        "tasks/trim-rerun.yaml",
        &["--model", "openai:gpt-test", "--sandbox", "auto"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--sandbox auto"), "{err}");
    assert!(err.contains("apt install bubblewrap"), "{err}");
    assert!(err.contains("--sandbox none"), "{err}");
    assert!(!err.contains("warning: no sandbox"), "{err}");
    assert!(!made, "a run folder was made");
    // Knowingly without one: the run starts (and its cells meet the closed port).
    let (code, err, made) = run_without_bwrap(
        "tasks/trim-rerun.yaml",
        &["--model", "openai:gpt-test", "--sandbox", "none"],
    );
    assert_ne!(code, Some(2), "{err}");
    assert!(!err.contains("apt install bubblewrap"), "{err}");
    assert!(made, "no run folder: {err}");
}

#[test]
fn the_sim_without_bubblewrap_falls_back_with_a_warning() {
    let (code, err, made) = run_without_bwrap("tasks/trim-rerun.yaml", &["--sandbox", "auto"]);
    assert!(
        err.contains("warning: no sandbox for shell commands"),
        "{err}"
    );
    assert!(err.contains("apt install bubblewrap"), "{err}");
    assert_ne!(code, Some(2), "{err}");
    assert!(made, "no run folder: {err}");
}

#[test]
fn failed_cells_are_the_finding_exit_0_unless_fail_on_failure() {
    // trim drops the snapshot listing turn 3 needs: the cell fails its checks, which is what the
    // benchmark measures, so `run` exits 0 and says so; --fail-on-failure makes it exit 100.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = |extra: &[&str]| {
        let o = Command::new(binary())
            .current_dir(root())
            .args(["run", "--tasks", "tasks/snapshot-rollback.yaml"])
            .args(["--policy", "none", "--policy", "trim", "--seeds", "1"])
            .args(extra)
            .arg("--out")
            .arg(&out)
            .env("CI", "true")
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, err) = run(&[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("failure snapshot-rollback/trim/sim/1:"),
        "{err}"
    );
    assert!(
        err.contains("1 of 2 cells failed a check: what the policy lost, the benchmark's finding (exit 0; --fail-on-failure exits 100 on it)"),
        "{err}"
    );
    // The same folder again: every cell is done, and the flag judges the recorded verdicts.
    let (code, err) = run(&["--fail-on-failure"]);
    assert_eq!(code, Some(100), "{err}");
    assert!(
        err.contains("error: 1 of 2 cells failed a check (exit 100: --fail-on-failure)"),
        "{err}"
    );
}

#[test]
fn ab_and_report_give_a_verdict_line_per_arm_with_intervals() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ab");
    // Agents that always re-run what they can see (the essay's observation), not the shipped
    // profile's draws.
    let profile = dir.path().join("reruns.json");
    let reruns = harness_core::behaviour::Profile::uniform(
        "reruns",
        1.0,
        harness_core::behaviour::Means {
            rerun: 1.0,
            ..Default::default()
        },
    );
    std::fs::write(&profile, reruns.to_json()).unwrap();
    let ab = Command::new(binary())
        .current_dir(root())
        .args([
            "ab",
            "--task",
            "tasks/trim-rerun.yaml",
            "--arms",
            "none,trim:mode=placeholder",
        ])
        .args(["--runs", "2", "--out"])
        .arg(&out)
        .arg("--behaviour")
        .arg(&profile)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&ab.stdout);
    assert!(
        ab.status.success(),
        "{}",
        String::from_utf8_lossy(&ab.stderr)
    );
    // The output opens with the verdict: a heading, then one line per arm.
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("Verdict against none: tokens incl. recovery Σ×"),
        "{text}"
    );
    let line = *lines
        .iter()
        .find(|l| l.starts_with("  trim:mode=placeholder: "))
        .unwrap_or_else(|| panic!("no verdict line: {text}"));
    assert!(
        lines.iter().position(|l| *l == line).unwrap()
            < lines.iter().position(|l| l.starts_with('╭')).unwrap(),
        "the verdict before the table: {text}"
    );
    // Placeholder trim re-runs turn 1's four calls (it still sees them), so the task costs it
    // more input tokens than none.
    assert!(line.contains(" costs "), "{line}");
    let ratio: f64 = line[line.find("(tokens Σ× ").unwrap() + "(tokens Σ× ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(ratio > 1.0, "{line}");
    assert!(line.contains(", med× "), "both ratios, each named: {line}");
    // The frontier table, its cost the verdict's Σ×.
    let row = lines
        .iter()
        .find(|l| l.starts_with("│ trim:mode=placeholder"))
        .unwrap_or_else(|| panic!("no frontier row: {text}"));
    assert!(row.contains(&format!("{ratio:.2}")), "{row}");
    let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let verdict = flat(line.split(" · ").next().unwrap());
    for format in ["table", "md"] {
        let r = Command::new(binary())
            .args(["report", "--format", format])
            .arg(&out)
            .output()
            .unwrap();
        let text = flat(&String::from_utf8_lossy(&r.stdout));
        assert!(text.contains(&verdict), "{format}: {verdict} in {text}");
        let table = text.find("| arm |").or(text.find("│ arm")).unwrap();
        assert!(
            text.find("Verdict against none").unwrap() < table,
            "{format}: the verdict first: {text}"
        );
    }
    let r = Command::new(binary())
        .args(["report", "--baseline", "trim:mode=placeholder"])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(
        text.starts_with("Verdict against trim:mode=placeholder:") && text.contains("\n  none: "),
        "{text}"
    );
}

#[test]
fn what_a_user_trips_on_gets_a_clear_answer() {
    let run = |args: &[&str]| {
        let o = Command::new(binary())
            .current_dir(root())
            .args(args)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    // `ab --policy` used to run only the arms, silently.
    let (code, _, err) = run(&[
        "ab",
        "--task",
        "tasks/trim-rerun.yaml",
        "--arms",
        "none,trim",
        "--policy",
        "fold",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--arms none,trim,fold"), "{err}");
    // Did you mean, for policies, models and task files.
    let (code, _, err) = run(&["run", "--policy", "fodl", "--seeds", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("(did you mean `fold`?)"), "{err}");
    let (_, _, err) = run(&["run", "--model", "simm", "--seeds", "1"]);
    assert!(err.contains("(did you mean `sim`?)"), "{err}");
    let (code, _, err) = run(&["run", "--tasks", "tasks/trim-reruns.yaml"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("(did you mean `tasks/trim-rerun.yaml`?)"),
        "{err}"
    );
    // Completions, and a --help that says what the tool is for, with examples.
    let (code, out, _) = run(&["completions", "bash"]);
    assert_eq!(code, Some(0));
    assert!(
        out.contains("_foldbench()") && out.contains("replay"),
        "{out}"
    );
    let (_, out, _) = run(&["--help"]);
    assert!(out.contains("decide how your coding agent"), "{out}");
    assert!(out.contains("Examples:\n  foldbench run"), "{out}");
}

#[test]
fn ab_run_and_fold_take_what_a_user_types() {
    let run = |args: &[&str]| {
        let o = Command::new(binary())
            .current_dir(root())
            .args(args)
            .env("CI", "true")
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ab");
    let out_s = out.to_str().unwrap();
    // A task's name, as `list --task` takes it; `-o` for the run folder, as `merge -o`; the
    // last line says where the records are.
    let (code, _, err) = run(&[
        "ab",
        "--task",
        "trim-rerun",
        "--arms",
        "none",
        "--runs",
        "1",
        "-o",
        out_s,
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(&format!("records in {out_s}/cells.jsonl")),
        "{err}"
    );
    let (code, _, err) = run(&["ab", "--task", "trim-rrun", "--arms", "none"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("no task named `trim-rrun` in tasks (did you mean `trim-rerun`?)")
            && !err.contains(":1:1:"),
        "{err}"
    );
    // The suggestion is for the bad arm alone.
    let (code, _, err) = run(&["ab", "--task", "trim-rerun", "--arms", "none,trmi"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("unknown policy `trmi` (did you mean `trim`?)") && !err.contains("none,trmi"),
        "{err}"
    );
    // `ab --help` lists no --policy (it only says to use --arms).
    let (_, help, _) = run(&["ab", "--help"]);
    assert!(
        help.contains("--arms") && !help.contains("--policy"),
        "{help}"
    );
    fold_takes_a_range_of_the_transcript(
        &run,
        dir.path(),
        &out.join("cells/trim-rerun_none_sim_1/transcript.jsonl"),
    );
}

/// The output of a command: exit code, stdout, stderr.
type Ran = (Option<i32>, String, String);

/// fold: a range past the transcript's turns, or reversed, is refused with the real range; the
/// result escapes what it quotes; a FIFO is refused unopened.
fn fold_takes_a_range_of_the_transcript(
    run: &dyn Fn(&[&str]) -> Ran,
    dir: &Path,
    transcript: &Path,
) {
    let t = transcript.to_str().unwrap();
    let (code, _, err) = run(&["fold", t, "--from", "1", "--to", "99"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("has turns 1–2, not 1–99; give --from and --to within 1–2"),
        "{err}"
    );
    let (code, _, err) = run(&["fold", t, "--from", "2", "--to", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--from 2 --to 1 is reversed (--from is greater than --to)")
            && err.contains("has turns 1–2"),
        "{err}"
    );
    let (code, folded, err) = run(&["fold", t, "--from", "1", "--to", "2"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(folded.starts_with("[fold] turns 1–2 folded"), "{folded}");
    // The result quotes the model's closing message: a terminal escape planted there is shown, not sent.
    let planted = dir.join("planted.jsonl");
    // The closing message is the last assistant text: plant the escape in every assistant text.
    let mut lines = String::new();
    let mut done = false;
    for line in std::fs::read_to_string(transcript).unwrap().lines() {
        let mut m: serde_json::Value = serde_json::from_str(line).unwrap();
        if m["role"] == "assistant" && m["text"].as_str().is_some_and(|t| !t.is_empty()) {
            let text = m["text"].as_str().unwrap().to_string();
            m["text"] = format!("\u{1b}]0;owned\u{7}\u{1b}[2J{text}").into();
            done = true;
        }
        lines.push_str(&m.to_string());
        lines.push('\n');
    }
    assert!(done, "the transcript has an assistant text");
    std::fs::write(&planted, lines).unwrap();
    let (code, folded, err) = run(&[
        "fold",
        planted.to_str().unwrap(),
        "--from",
        "1",
        "--to",
        "2",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        !folded.contains('\u{1b}') && folded.contains("\\x1b]0;owned\\x07"),
        "{folded}"
    );
    // A FIFO is refused without being opened for reading (it would block).
    let fifo = dir.join("fifo.jsonl");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let (code, _, err) = run(&["fold", fifo.to_str().unwrap(), "--from", "1", "--to", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot read"), "{err}");
}

#[test]
fn run_and_ab_write_the_report_files_named_with_o() {
    // `-o report.html -o r.md` beside a run folder: each file is written from the folder when
    // the run ends, with the bytes `report DIR -o FILE` gives; with no folder, the run goes to
    // results/<run-id> under the working folder.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let task = root().join("tasks/trim-rerun.yaml");
    let fb = |args: &[&str]| {
        let o = Command::new(binary())
            .current_dir(d)
            .args(args)
            .env("CI", "true")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        (o.status.code(), err)
    };
    let task = task.to_str().unwrap();
    let (code, err) = fb(&[
        "run",
        "--tasks",
        task,
        "--policy",
        "none",
        "--seeds",
        "1",
        "-o",
        "report.html",
        "-o",
        "r.md",
        "-o",
        "r1",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("wrote report.html") && err.contains("wrote r.md"),
        "{err}"
    );
    let (code, err) = fb(&["report", "r1", "-o", "again.html", "-o", "again.md"]);
    assert_eq!(code, Some(0), "{err}");
    for (a, b) in [("report.html", "again.html"), ("r.md", "again.md")] {
        let (a, b) = (
            std::fs::read(d.join(a)).unwrap(),
            std::fs::read(d.join(b)).unwrap(),
        );
        assert!(!a.is_empty() && a == b, "{}", String::from_utf8_lossy(&a));
    }
    let md = std::fs::read_to_string(d.join("r.md")).unwrap();
    assert!(
        md.starts_with("## foldbench: r1\n\n1 cells: 1 success, 0 failure, 0 error"),
        "{md}"
    );
    // ab, a report alone: the records in results/<run-id>, the report from them.
    let (code, err) = fb(&[
        "ab", "--task", task, "--arms", "none", "--runs", "1", "-o", "ab.json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let runs: Vec<_> = std::fs::read_dir(d.join("results"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(runs.len(), 1, "{err}");
    assert!(runs[0].path().join("cells.jsonl").is_file());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("ab.json")).unwrap()).unwrap();
    assert!(json.to_string().contains("none"), "{json}");
    // Two folders, or the records file, are refused before anything runs.
    for (args, said) in [
        (["-o", "a", "-o", "b"], "a run has one folder"),
        (
            ["-o", "x.jsonl", "-o", "y"],
            "a run writes its records into its folder",
        ),
    ] {
        let (code, err) = fb(&[&["run", "--tasks", task, "--seeds", "1"][..], &args[..]].concat());
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(said) && !err.contains("[1/"), "{err}");
    }
}

#[test]
fn replay_gives_a_verdict_line_per_policy_paired_by_session() {
    let out = Command::new(binary())
        .current_dir(root())
        .args(["replay", "tests/fixtures/real-sessions"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("Verdict against none: tokens incl. recovery Σ×"),
        "the verdict first: {text}"
    );
    let head = &text[..text.find("\n  none: ").expect("none's line")];
    // Three sessions, and the subagent fixture's parent with its six children.
    assert!(head.ends_with("(10 sessions)"), "{text}");
    let table = lines.iter().position(|l| l.starts_with('╭')).unwrap();
    for policy in ["none", "trim", "compact", "fold"] {
        let at = lines
            .iter()
            .position(|l| l.starts_with(&format!("  {policy}: ")))
            .unwrap_or_else(|| panic!("no verdict for {policy}: {text}"));
        assert!(at < table, "{policy}'s line before the table: {text}");
    }
    assert!(
        text.contains("Σ× = ratio of summed totals"),
        "the legend: {text}"
    );
    // trim drops tool results, so it sends fewer tokens than none, and what it hides is gone
    // unless the agent fetches it back, as the behaviour profile the heading names says it
    // does (re-reading what the workspace still holds).
    let at = lines
        .iter()
        .position(|l| l.starts_with("  trim: "))
        .unwrap();
    let trim = lines[at];
    let ratio: f64 = trim[trim.find("(tokens Σ× ").unwrap() + "(tokens Σ× ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(ratio < 1.0, "{trim}");
    assert!(trim.contains(" saves "), "{trim}");
    let whole = format!("{trim} {}", lines[at + 1].trim());
    assert!(
        text.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains("recovery as the behaviour profile `fixtures` says"),
        "{text}"
    );
    // Of the references trim hid, some are gone, not all: the profile's agents fetch some back.
    let counts = whole
        .split("refs gone/100 resp (")
        .nth(1)
        .and_then(|t| t.split(" hidden)").next())
        .unwrap_or_else(|| panic!("no hidden count: {whole}"));
    let (gone, hidden) = counts.split_once(" of ").unwrap();
    let hidden: usize = hidden.split(' ').next().unwrap().parse().unwrap();
    let gone: usize = gone.parse().unwrap();
    assert!(gone > 0 && gone <= hidden, "{whole}");
}
