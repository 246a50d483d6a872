//! `foldbench run --agent`: Claude Code, Codex and mini-swe-agent, installed by
//! `tests/agents.sh`, drive two tasks each in real temp repositories under `none`, `trim` and
//! `fold` (and `native` for the two that compact on their own), their model calls through the
//! cell's proxy to the offline sim upstream. What each arm did is read from the records and
//! files the run wrote, never from what the agent printed.
//!
//! An agent that is not installed (`FOLDBENCH_CLAUDE_CODE` / `FOLDBENCH_CODEX` /
//! `FOLDBENCH_MINI_SWE_AGENT` unset, as `export $(tests/agents.sh)` sets them) says `skipped`
//! where `cargo test` shows it; with `FOLDBENCH_REQUIRE_AGENTS=1` (CI) a missing agent fails.

use std::path::Path;
use std::process::Command;

use harness_core::{CellRecord, Status};

use crate::helpers::{binary, root, skipped};

/// The fold arm offers its card after two tool calls: the tasks are short, and the default
/// threshold (the essay's) would offer none in them.
const FOLD: &str = "fold:card_after_tool_calls=2";

/// Whether the agent that `var` points to is installed; if not, the test says `skipped` where
/// `cargo test` shows it, or fails under `FOLDBENCH_REQUIRE_AGENTS=1`.
fn installed(var: &str) -> bool {
    let set = std::env::var_os(var).is_some_and(|v| !v.is_empty());
    if !set {
        skipped(
            &format!(
                "{var} is not set, this test did not run (export $(tests/agents.sh) installs the \
                 agents)"
            ),
            "FOLDBENCH_REQUIRE_AGENTS",
        );
    }
    set
}

fn records(out: &Path) -> Vec<CellRecord> {
    std::fs::read_to_string(out.join("cells.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn cell<'a>(rs: &'a [CellRecord], task: &str, arm: &str) -> &'a CellRecord {
    rs.iter()
        .find(|r| r.task == task && r.arm == arm)
        .unwrap_or_else(|| panic!("no cell {task}/{arm}"))
}

/// Runs `agent` over trim-rerun and return-to-login under `none`, `trim`, `fold` (and `native`
/// with `native`) and checks what each arm did; `off` is how the record says the agent's own
/// compaction was set on the policy arms.
fn run_agent(agent: &str, native: bool, off: &str) {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("run");
    let tasks = root().join("tasks");
    let mut cmd = Command::new(binary());
    cmd.args(["run", "--agent", agent])
        .arg("--tasks")
        .arg(tasks.join("trim-rerun.yaml"))
        .arg("--tasks")
        .arg(tasks.join("return-to-login.yaml"));
    if native {
        cmd.args(["--policy", "native"]);
    }
    let run = cmd
        .args(["--policy", "none", "--policy", "trim"])
        .args(["--policy", FOLD, "--seeds", "1", "--jobs", "2"])
        .args(["--cell-timeout", "600"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{agent}: {stderr}");
    let rs = records(&out);
    assert_eq!(rs.len(), if native { 8 } else { 6 }, "{agent}: {stderr}");
    for r in &rs {
        assert_ne!(r.status, Status::Error, "{agent} {}: {:?}", r.id, r.error);
        let a = r.agent.as_ref().expect("the record names the agent");
        assert_eq!(a.name, agent);
        assert!(
            a.version.chars().next().is_some_and(|c| c.is_ascii_digit()),
            "{a:?}"
        );
        if r.arm == "native" {
            assert_eq!(a.compaction, "the agent's own");
            assert_eq!(r.policy, "native");
        } else {
            assert!(a.compaction.starts_with(off), "{a:?}");
        }
        // Requests measured by the proxy, the agent's tool calls really run in the workspace.
        assert!(
            r.metrics.requests >= 4,
            "{}: {:?}",
            r.id,
            r.metrics.requests
        );
        let diff = std::fs::read_to_string(
            out.join("cells")
                .join(harness_runner::cell_folder(&r.id))
                .join("diff.patch"),
        )
        .unwrap();
        // Every arm but trim keeps what the edits need; its cells edit for real.
        if r.arm != "trim" {
            assert!(
                !diff.trim().is_empty(),
                "{}: the agent edited nothing",
                r.id
            );
        }
    }
    for task in ["trim-rerun", "return-to-login"] {
        let none = cell(&rs, task, "none");
        let trim = cell(&rs, task, "trim");
        assert_eq!(none.status, Status::Success, "{agent} {task} none");
        if native {
            let native = cell(&rs, task, "native");
            assert_eq!(native.status, Status::Success, "{agent} {task} native");
        }
        assert_eq!(
            none.metrics.lost_facts, 0,
            "{agent} {task}: none hides nothing"
        );
        // trim removed the results the later turn needs: the upstream read less, and the sim,
        // which answers only from what it sees, lost the fact and failed the checks.
        assert!(
            trim.metrics.request_tokens.total < none.metrics.request_tokens.total,
            "{agent} {task}: trim {} vs none {}",
            trim.metrics.request_tokens.total,
            none.metrics.request_tokens.total
        );
        assert_eq!(trim.status, Status::Failure, "{agent} {task} trim");
    }
    let trim = cell(&rs, "trim-rerun", "trim");
    assert!(
        trim.metrics.lost_facts > 0,
        "{agent}: trim's lost fact is measured"
    );
    // return-to-login comes back to the login work after an errand: fold archives the errand
    // (turns 3-4) and the archive is on disk with the sha256 the record gives.
    let fold = cell(&rs, "return-to-login", FOLD);
    assert_eq!(fold.status, Status::Success, "{agent}: {:?}", fold.checks);
    assert!(fold.metrics.folds >= 1, "{agent}: fold folded nothing");
    let events = std::fs::read_to_string(
        out.join("cells")
            .join(harness_runner::cell_folder(&fold.id))
            .join("events.jsonl"),
    )
    .unwrap();
    let folded: serde_json::Value = events
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["event"] == "fold")
        .expect("a fold event");
    let archive = out
        .join("cells")
        .join(harness_runner::cell_folder(&fold.id))
        .join("archive")
        .join(
            Path::new(folded["archive"].as_str().unwrap())
                .file_name()
                .unwrap(),
        );
    let bytes = std::fs::read(&archive).unwrap_or_else(|e| panic!("{}: {e}", archive.display()));
    assert_eq!(
        harness_core::sha256_hex(&bytes),
        folded["sha256"].as_str().unwrap()
    );
}

#[test]
fn claude_code_runs_two_tasks_under_native_none_trim_and_fold() {
    if installed("FOLDBENCH_CLAUDE_CODE") {
        run_agent("claude-code", true, "off: ");
    }
}

#[test]
fn codex_runs_two_tasks_under_native_none_trim_and_fold() {
    if installed("FOLDBENCH_CODEX") {
        run_agent("codex", true, "off: ");
    }
}

/// mini-swe-agent (text-based: its commands in its answers' text, their output back as user
/// messages) measured like the others: the proxy reads its observations as the results of its
/// commands, so turns, trim, cards, folds and the facts each turn needs are its own. It has no
/// compaction of its own, so `native` would be `none` again and is not run.
#[test]
fn mini_swe_agent_runs_two_tasks_under_none_trim_and_fold() {
    if installed("FOLDBENCH_MINI_SWE_AGENT") {
        run_agent("mini-swe-agent", false, "none: ");
    }
}

/// Without the agents, their tests say `skipped` where `cargo test` shows it (not a bare `ok`),
/// and fail when CI requires the agents: this binary runs one of them again without its
/// variable.
#[test]
fn without_an_agent_its_test_says_skipped_or_fails_when_agents_are_required() {
    let again = |require: bool| {
        let mut c = Command::new(std::env::current_exe().expect("this test binary"));
        c.args([
            "--exact",
            "agents_run::claude_code_runs_two_tasks_under_native_none_trim_and_fold",
        ])
        .env_remove("FOLDBENCH_CLAUDE_CODE")
        .env_remove("FOLDBENCH_REQUIRE_AGENTS");
        if require {
            c.env("FOLDBENCH_REQUIRE_AGENTS", "1");
        }
        let o = c.output().expect("the test binary runs");
        let out = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        (o.status.code(), out)
    };
    let (code, out) = again(false);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("skipped: FOLDBENCH_CLAUDE_CODE is not set, this test did not run")
            && out.contains("1 passed"),
        "{out}"
    );
    let (code, out) = again(true);
    assert_eq!(code, Some(101), "{out}");
    assert!(
        out.contains("FOLDBENCH_REQUIRE_AGENTS=1 but FOLDBENCH_CLAUDE_CODE is not set"),
        "{out}"
    );
}

/// `--agent exec:CMD` with the 40-line agent of `examples/agents/tiny_agent.py`, which needs no
/// install: the same measurements as for Claude Code and Codex. The script goes in the command
/// itself (the sandbox hides `/tmp` and the home folder, where a checkout may sit).
#[test]
fn an_exec_agent_of_forty_lines_runs_under_native_trim_and_fold() {
    let script = std::fs::read(root().join("examples/agents/tiny_agent.py")).unwrap();
    let hex: String = script.iter().map(|b| format!("{b:02x}")).collect();
    let agent = format!("exec:python3 -c \"exec(bytes.fromhex('{hex}').decode())\"");
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("run");
    let tasks = root().join("tasks");
    let run = Command::new(binary())
        .args(["run", "--agent", &agent])
        .arg("--tasks")
        .arg(tasks.join("trim-rerun.yaml"))
        .arg("--tasks")
        .arg(tasks.join("return-to-login.yaml"))
        .args(["--policy", "native", "--policy", "trim", "--policy", FOLD])
        .args(["--seeds", "1", "--jobs", "2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let rs = records(&out);
    assert_eq!(rs.len(), 6, "{stderr}");
    for r in &rs {
        assert_ne!(r.status, Status::Error, "{}: {:?}", r.id, r.error);
        assert_eq!(r.agent.as_ref().map(|a| a.name.as_str()), Some("exec"));
        assert!(r.metrics.requests >= 4, "{}", r.id);
    }
    for task in ["trim-rerun", "return-to-login"] {
        let native = cell(&rs, task, "native");
        let trim = cell(&rs, task, "trim");
        assert_eq!(
            native.status,
            Status::Success,
            "{task}: {:?}",
            native.checks
        );
        assert_eq!(trim.status, Status::Failure, "{task}");
        assert!(
            trim.metrics.lost_facts > 0,
            "{task}: trim's loss is measured"
        );
        assert!(trim.metrics.request_tokens.total < native.metrics.request_tokens.total);
    }
    let fold = cell(&rs, "return-to-login", FOLD);
    assert_eq!(fold.status, Status::Success, "{:?}", fold.checks);
    assert_eq!(fold.metrics.folds, 1);
}

/// A server process the test started, ended when the test ends, whatever way it ends.
struct Server(Option<std::process::Child>);

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A child process's first line of standard output (the URL a server prints).
fn first_line(child: &mut std::process::Child) -> String {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .unwrap();
    line.trim().to_string()
}

/// `git ARGS` in `work` (no system or user configuration but `home`'s); its output.
fn git_in(work: &Path, home: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(args)
        .current_dir(work)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {o:?}");
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// One turn of Claude Code (`claude -p`, the session begun or resumed) in `work` against the
/// proxy at `url`; the JSON it prints.
fn claude_turn(
    claude: &str,
    work: &Path,
    home: &Path,
    url: &str,
    turn: u32,
    session: &str,
) -> serde_json::Value {
    let o = Command::new("timeout")
        .arg("120")
        .arg(claude)
        .args(["-p", &format!("TURN {turn}: look at the project")])
        .args(["--output-format", "json"])
        .args(["--allowedTools", "Bash", "Read", "Edit", "Write"])
        .args([
            if turn == 1 {
                "--session-id"
            } else {
                "--resume"
            },
            session,
        ])
        .current_dir(work)
        .env("HOME", home)
        .env("ANTHROPIC_BASE_URL", url)
        .env("ANTHROPIC_API_KEY", "sk-ant-scripted")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_AUTO_COMPACT", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "turn {turn}: {stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap()
}

/// Claude Code from the pinned npm package runs five turns under `fold` through `foldbench
/// proxy`, against `tests/claude-upstream.py`: a scripted Anthropic Messages API written from
/// the API's documentation, whose model answers with parallel tool calls (`Bash` and `Read` in
/// one answer), answers a card with `fold_unit` in the same answer as its tool calls in even
/// turns and alone in odd ones, and would answer its card again and again if it did not see
/// its own answered call. The upstream checks every request as the real API does. No request
/// is refused (no `tool_use` without its `tool_result`), no fold is rejected, and the upstream
/// gets exactly the requests the script needs: no runaway.
#[test]
fn claude_code_runs_five_turns_under_fold_through_the_proxy_with_parallel_calls() {
    if !installed("FOLDBENCH_CLAUDE_CODE") {
        return;
    }
    let claude = std::env::var("FOLDBENCH_CLAUDE_CODE").unwrap();
    let d = tempfile::tempdir().unwrap();
    let work = d.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("README.md"), "# demo\n").unwrap();
    std::fs::write(work.join("a.py"), "x = 1\n").unwrap();
    let git = |args: &[&str]| git_in(&work, d.path(), args);
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&[
        "-c",
        "user.email=t@t",
        "-c",
        "user.name=t",
        "commit",
        "-qm",
        "init",
    ]);
    let log = d.path().join("upstream.jsonl");
    let mut upstream = Server(Some(
        Command::new("python3")
            .arg(root().join("tests/claude-upstream.py"))
            .arg(&work)
            .arg(&log)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let up = first_line(upstream.0.as_mut().unwrap());
    let out = d.path().join("proxy");
    let mut proxy = Server(Some(
        Command::new(binary())
            .args(["proxy", "--policy", "fold:card_after_tool_calls=2"])
            .args(["--listen", "127.0.0.1:0", "--upstream", &up])
            .arg("--out")
            .arg(&out)
            .arg("--workdir")
            .arg(&work)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let url = first_line(proxy.0.as_mut().unwrap());
    let home = d.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let session = "0f01dbe5-5a1e-4d2c-9a2c-2a0e9c1f0b37";
    for turn in 1..=5 {
        let result = claude_turn(&claude, &work, &home, &url, turn, session);
        assert_eq!(result["is_error"], false, "turn {turn}: {result}");
        assert_eq!(
            result["result"],
            format!("Turn {turn} done."),
            "turn {turn} closes with the model's answer: {result}"
        );
    }
    let proxy = proxy.0.take().unwrap();
    let _ = Command::new("kill")
        .args(["-INT", &proxy.id().to_string()])
        .status();
    let stopped = proxy.wait_with_output().unwrap();
    drop(upstream);
    let stderr = String::from_utf8_lossy(&stopped.stderr);
    assert!(stopped.status.success(), "{stderr}");
    let seen: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let refused: Vec<&serde_json::Value> =
        seen.iter().filter(|e| !e["problem"].is_null()).collect();
    assert!(
        refused.is_empty(),
        "requests the API would refuse: {refused:#?}"
    );
    let main = seen.iter().filter(|e| e["side"] == false).count();
    // Turns 1, 2, 4: the answer with the tool calls, then the closing one; turns 3 and 5:
    // fold_unit alone (answered by the proxy, which asks again), then those two.
    assert_eq!(main, 12, "the upstream's requests: {seen:#?}");
    let rs = records(&out);
    assert_eq!(rs.len(), 1, "one conversation");
    let m = &rs[0].metrics;
    assert_eq!(m.fold_calls_rejected, 0, "no rejected fold");
    assert_eq!(m.policy_tool_stops, 0);
    assert_eq!(m.folds, 4, "turns 1 to 4 folded, one at a time");
    assert_eq!(
        m.requests, main,
        "report counts what the upstream got: {stderr}"
    );
    assert_eq!(rs[0].status, Status::Unchecked);
    assert!(
        stderr.contains(&format!("{main} request(s) to the model")),
        "{stderr}"
    );
    let archives = std::fs::read_dir(work.join(".foldbench/archive"))
        .unwrap()
        .count();
    assert_eq!(archives, 4);
    assert!(
        !git(&["status", "--porcelain"]).contains(".foldbench"),
        "the archives are out of the agent's git status"
    );
}
