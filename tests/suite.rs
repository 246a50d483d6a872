//! The task suite solves itself under the sim, and its checks fail when the work is skipped.

use std::collections::HashMap;

use harness_core::spec::Action;
use harness_core::Status;
use harness_runner::cell::run_checks;
use harness_runner::execution::Workspace;
use harness_runner::tools::ToolLimits;

use crate::helpers::{all_tasks, run_matrix, task};

#[test]
fn every_task_succeeds_under_none_with_the_oracle() {
    let out = tempfile::tempdir().unwrap();
    let records = run_matrix(all_tasks(), &["none"], "sim", &[1], out.path());
    assert!(
        records.len() >= 12,
        "at least twelve tasks, found {}",
        records.len()
    );
    for r in &records {
        assert_eq!(
            r.status,
            Status::Success,
            "{}: {:?} {:?}",
            r.id,
            r.error,
            r.checks.iter().filter(|c| !c.passed).collect::<Vec<_>>()
        );
    }
}

#[test]
fn every_task_fails_its_checks_when_its_edits_are_skipped() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for t in all_tasks() {
        let ws = Workspace::create(&t.dir.join(&t.spec.repo), false).unwrap();
        rt.block_on(ws.run_setup(
            &t.spec.setup,
            &harness_runner::tools::ToolLimits {
                shell_timeout: std::time::Duration::from_secs(60),
                ..Default::default()
            },
        ))
        .unwrap();
        // The closing messages as scripted, so only the skipped edits can make a check fail.
        let closings: HashMap<u32, String> = t
            .spec
            .turns
            .iter()
            .enumerate()
            .map(|(i, turn)| (i as u32 + 1, turn.say().to_string()))
            .collect();
        let edits = t
            .spec
            .turns
            .iter()
            .flat_map(|x| &x.script)
            .filter(|s| {
                matches!(&s.action, Action::Tool { name, .. }
                    if harness_core::tools::find(name).is_some_and(|t| t.writes_its_path()))
            })
            .count();
        assert!(
            edits > 0,
            "{}: a task with no edits cannot be broken",
            t.spec.name
        );
        let checks = rt.block_on(run_checks(&ws, &t.spec, &closings, &ToolLimits::default()));
        assert!(
            checks.iter().any(|c| !c.passed),
            "{}: every check passed without the task's edits: {checks:?}",
            t.spec.name
        );
    }
}

#[test]
fn trim_reruns_the_four_turn_one_calls_it_can_see_and_none_does_not() {
    // The essay's A/B. Under `trim:mode=placeholder` turn 1's calls stay in view with their
    // results cleared, and turn 2 re-runs all four; under `trim` (drop) they vanish, nothing in
    // view names a file, so nothing can be re-run and the turn stops for want of the facts.
    let out = tempfile::tempdir().unwrap();
    let records = run_matrix(
        vec![task("trim-rerun")],
        &["none", "trim:mode=placeholder", "trim"],
        "sim",
        &[1, 2, 3],
        out.path(),
    );
    assert_eq!(records.len(), 9);
    for r in &records {
        match r.arm.as_str() {
            "trim:mode=placeholder" => {
                assert_eq!(r.status, Status::Success, "{}", r.id);
                assert_eq!(
                    r.metrics.reruns, 4,
                    "{}: placeholder trim re-runs every turn-1 call",
                    r.id
                );
                assert_eq!(r.metrics.reruns_hidden, 4, "{}", r.id);
            }
            "trim" => {
                // Nothing in view to re-run: the agent re-explores (a listing, then the listed
                // files whose names the request shares), which reads again docs/pricing.md and
                // shop/discount.py, two of turn 1's calls; the failing test's output needs a
                // command nothing in view shows, so that fact is lost and the turn stops.
                assert_eq!(r.status, Status::Failure, "{}", r.id);
                assert_eq!(r.metrics.reruns, 2, "{}: two reads again", r.id);
                assert!(r.metrics.lost_facts >= 1, "{}", r.id);
            }
            _ => {
                assert_eq!(r.status, Status::Success, "{}", r.id);
                assert!(
                    r.metrics.reruns <= 1,
                    "{}: none re-runs at most one call",
                    r.id
                );
            }
        }
    }
}

#[test]
fn a_small_window_compacts_and_counts_the_summary() {
    let out = tempfile::tempdir().unwrap();
    let records = run_matrix(
        vec![task("large-logs")],
        &["none", "compact:window=4000"],
        "sim",
        &[1],
        out.path(),
    );
    let c = records
        .iter()
        .find(|r| r.arm.starts_with("compact"))
        .unwrap();
    assert!(c.metrics.compactions >= 1);
    assert!(c.metrics.compaction_output_tokens > 0 && c.metrics.compaction_input_tokens > 0);
    let n = records.iter().find(|r| r.arm == "none").unwrap();
    assert_eq!(n.metrics.compactions, 0);
    assert!(c.metrics.request_tokens.max < n.metrics.request_tokens.max);
    assert!(
        c.metrics.reruns_hidden >= 1,
        "a fact the summary dropped is fetched again: {:?}",
        c.metrics
    );
}
