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

use harness_core::record::{CellRecord, Status};

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
                .join(harness_runner::results::cell_folder(&r.id))
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
            .join(harness_runner::results::cell_folder(&fold.id))
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
        .join(harness_runner::results::cell_folder(&fold.id))
        .join("archive")
        .join(
            Path::new(folded["archive"].as_str().unwrap())
                .file_name()
                .unwrap(),
        );
    let bytes = std::fs::read(&archive).unwrap_or_else(|e| panic!("{}: {e}", archive.display()));
    assert_eq!(
        harness_core::digest::sha256_hex(&bytes),
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
