//! The `delegate` tool of a `+delegate` arm: the child sees only its brief, its requests are
//! in the records (marked) and in tokens per task, and a brief that leaves out a fact the child
//! needs fails the task's check.

use std::sync::{Arc, Mutex};

use harness_core::judge::Judge;
use harness_core::sim::Sim;
use harness_core::Status;
use harness_core::{Event, RequestRecord};
use harness_core::{Purpose, Request};
use harness_runner::backends::{Model, ModelFuture, SimModel};
use harness_runner::cell::{CellOptions, CellOutput, CHILD_SYSTEM_PROMPT};
use harness_runner::tasks::LoadedTask;

use crate::helpers::{binary, root, run_one, run_plan, sim_config, sim_plan, task};

/// The sim, keeping the text of every child request it answered.
struct Watching {
    inner: SimModel,
    children: Mutex<Vec<(String, Vec<String>)>>,
}

impl Model for Watching {
    fn name(&self) -> String {
        "sim".into()
    }

    fn respond<'a>(&'a self, req: &'a Request, cell: &'a str) -> ModelFuture<'a> {
        if req.purpose == Purpose::Child {
            let texts = req.messages.iter().map(|m| m.visible_text()).collect();
            self.children
                .lock()
                .unwrap()
                .push((req.system.to_string(), texts));
        }
        self.inner.respond(req, cell)
    }
}

fn run_watched(t: &LoadedTask, policy: &str) -> (CellOutput, Vec<(String, Vec<String>)>) {
    let sim = Sim::new(Arc::clone(&t.spec), sim_config(Judge::Oracle));
    let model = Watching {
        inner: SimModel::new(sim),
        children: Mutex::new(Vec::new()),
    };
    let out = run_plan(&sim_plan(t, policy), &CellOptions::default(), &model);
    let seen = model.children.into_inner().unwrap();
    (out, seen)
}

fn requests(out: &CellOutput) -> Vec<&RequestRecord> {
    out.events
        .iter()
        .filter_map(|e| match e {
            Event::Request(r) => Some(r),
            _ => None,
        })
        .collect()
}

#[test]
fn the_childs_requests_are_recorded_marked_and_counted_in_tokens_per_task() {
    let t = task("delegate-staging-port");
    let (out, seen) = run_watched(&t, "none+delegate");
    assert_eq!(
        out.record.status,
        Status::Success,
        "{:?}",
        out.record.checks
    );
    let reqs = requests(&out);
    let child: Vec<&&RequestRecord> = reqs
        .iter()
        .filter(|r| r.purpose == Purpose::Child)
        .collect();
    assert!(!child.is_empty(), "no child request recorded");
    for r in &child {
        assert_eq!(r.agent.as_deref(), Some("child-1"), "{r:?}");
        assert_eq!(r.turn, 2, "recorded under the parent's turn in progress");
    }
    assert!(reqs
        .iter()
        .filter(|r| r.purpose == Purpose::Turn)
        .all(|r| r.agent.is_none()));
    // The child's workspace calls are in the records, marked; the parent's turn 2 made none.
    let calls: Vec<_> = out
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall(c) if c.turn == 2 => Some(c),
            _ => None,
        })
        .collect();
    assert!(calls
        .iter()
        .any(|c| c.agent.as_deref() == Some("child-1") && c.name == "edit_file"));
    assert!(calls
        .iter()
        .filter(|c| c.agent.is_none())
        .all(|c| c.name == "delegate"));
    let m = &out.record.metrics;
    let child_tokens: u64 = child.iter().map(|r| r.tokens).sum();
    let parent_tokens: u64 = reqs
        .iter()
        .filter(|r| r.purpose == Purpose::Turn)
        .map(|r| r.tokens)
        .sum();
    assert_eq!(m.child_requests, child.len());
    assert_eq!(m.child_input_tokens, child_tokens);
    assert_eq!(m.request_tokens.total, parent_tokens);
    assert_eq!(
        m.tokens_per_task(),
        parent_tokens + m.compaction_input_tokens + child_tokens
    );
    assert_eq!(m.delegations, 1);
    // The child saw its own system prompt, the brief and its own work: never the parent's turns.
    let (system, first) = &seen[0];
    assert_eq!(system, CHILD_SYSTEM_PROMPT);
    assert_eq!(first.len(), 1, "the brief alone: {first:?}");
    assert!(first[0].contains("moved to port 6543"));
    for (_, texts) in &seen {
        assert!(!texts.iter().any(|x| x.contains("Point app/settings.py")));
    }
}

#[test]
fn each_way_of_the_detour_leaves_its_own_trace_in_the_parents_context() {
    let t = task("delegate-staging-port");
    let opts = CellOptions::default;
    let (inline, _) = run_one(&t, "none", Judge::Oracle, opts());
    let (errand, _) = run_one(&t, "fold+strategies", Judge::Oracle, opts());
    let (delegated, _) = run_one(&t, "none+delegate", Judge::Oracle, opts());
    for o in [&inline, &errand, &delegated] {
        assert_eq!(o.record.status, Status::Success, "{}", o.record.arm);
    }
    let names = |o: &CellOutput| o.record.metrics.tool_calls_by_name.clone();
    assert_eq!(inline.record.metrics.delegations, 0);
    assert_eq!(inline.record.metrics.child_requests, 0);
    assert!(names(&errand).contains_key("strategy_report"));
    assert_eq!(names(&delegated).get("delegate"), Some(&1));
    // The parent's last request: the detour's work inline, its report, or the receipt alone.
    let last = |o: &CellOutput| o.record.metrics.request_tokens.last;
    assert!(
        last(&delegated) < last(&inline),
        "{} vs {}",
        last(&delegated),
        last(&inline)
    );
}

/// The task with a brief that does not say the new port.
fn brief_without_the_port() -> LoadedTask {
    let file = root().join("tasks/delegate-staging-port.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    let variant = text
        .replace(
            "      - needs: [{ fact: \"port 6543\", guess: \"port 5433\" }]\n        delegate:",
            "      - delegate:",
        )
        .replace(
            "The staging database moved to port 6543.",
            "The staging database moved to a new port.",
        );
    assert_ne!(variant, text);
    let spec = harness_config::spec::load("brief-without-the-port.yaml", &variant)
        .unwrap_or_else(|p| panic!("{p:?}"));
    assert!(!spec.turns[1]
        .delegations()
        .next()
        .unwrap()
        .brief
        .contains("6543"));
    LoadedTask {
        spec: Arc::new(spec),
        file,
        dir: root().join("tasks"),
    }
}

#[test]
fn a_brief_that_leaves_out_a_needed_fact_fails_the_check_under_the_delegate_arm() {
    let t = brief_without_the_port();
    let (delegated, seen) = run_watched(&t, "none+delegate");
    assert_eq!(delegated.record.status, Status::Failure);
    let failed: Vec<&str> = delegated
        .record
        .checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| c.label.as_str())
        .collect();
    assert!(
        failed.iter().any(|l| l.contains("DB_PORT=6543")),
        "{failed:?}"
    );
    assert!(delegated.record.metrics.lost_facts >= 1);
    // The child wrote its guess, having never seen the port.
    assert!(
        delegated.diff.contains("DB_PORT=5433"),
        "{}",
        delegated.diff
    );
    // It never saw the fact: re-exploring, it may read app/settings.py, where the parent wrote
    // `"port": 6543`, but not the words "port 6543" the step needs.
    assert!(seen
        .iter()
        .all(|(_, texts)| !texts.iter().any(|x| x.contains("port 6543"))));
    // Inline the same detour sees the user's words and succeeds.
    let (inline, _) = run_one(&t, "none", Judge::Oracle, CellOptions::default());
    assert_eq!(
        inline.record.status,
        Status::Success,
        "{:?}",
        inline.record.checks
    );
}

#[test]
fn the_ab_table_shows_the_three_ways_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(binary())
        .current_dir(root())
        .args([
            "ab",
            "--task",
            "delegate-flaky-ci",
            "--arms",
            "none,fold+strategies,none+delegate",
            "--runs",
            "1",
            "--view",
            "all",
            "--out",
        ])
        .arg(dir.path().join("run"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let header = text
        .lines()
        .find(|l| l.starts_with("│ metric"))
        .unwrap_or_else(|| panic!("{text}"));
    for arm in ["none", "fold+strategies", "none+delegate"] {
        assert!(header.contains(&format!(" {arm}: runs")), "{header}");
    }
    for row in [
        "tokens per task",
        "lost facts",
        "success",
        "median request tokens",
    ] {
        let row = format!("│ {row} ");
        assert!(text.lines().any(|l| l.starts_with(&row)), "{row}: {text}");
    }
}
