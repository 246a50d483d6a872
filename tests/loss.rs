//! Loss decides the outcome: a fact that is neither visible nor recovered is written as the
//! task's guess (its checks fail), and no cell succeeds with a lost fact.

use harness_core::judge::Judge;
use harness_core::message::Role;
use harness_core::record::Status;
use harness_runner::cell::CellOptions;

use crate::helpers::{run_matrix, run_one, task};

/// What the agent wrote in turn `turn`: tool-call arguments and closing text.
fn written(out: &harness_runner::cell::CellOutput, turn: u32) -> String {
    out.transcript
        .iter()
        .filter(|m| m.role == Role::Assistant && m.turn == turn)
        .map(|m| {
            let args: Vec<String> = m.tool_calls.iter().map(|c| c.args.to_string()).collect();
            format!("{} {}", m.text, args.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// (task, losing arm, turn, the value as JSON-escaped in arguments, the guess)
const LOSSES: [(&str, &str, u32, &str, &str); 4] = [
    (
        "docs-and-code",
        "trim",
        5,
        "raised from 60 to 120",
        "raised to 120",
    ),
    (
        "snapshot-rollback",
        "trim",
        3,
        "restore.py snap-0001",
        "restore.py snap-0002",
    ),
    (
        "incident-quote",
        "trim",
        6,
        "got 'fifty' (config/importer.ini, line 3)",
        "ConfigError: the batch size in config/importer.ini was written as a word",
    ),
    (
        "incident-quote",
        "compact",
        6,
        "got 'fifty' (config/importer.ini, line 3)",
        "ConfigError: the batch size in config/importer.ini was written as a word",
    ),
];

#[test]
fn a_lost_fact_is_written_as_the_guess_and_a_kept_one_as_the_truth() {
    for (name, arm, turn, value, guess) in LOSSES {
        let t = task(name);
        let (none, _) = run_one(&t, "none", Judge::Oracle, CellOptions::default());
        let w = written(&none, turn);
        assert_eq!(none.record.status, Status::Success, "{name}/none: {w}");
        assert!(w.contains(value) && !w.contains(guess), "{name}/none: {w}");
        assert_eq!(none.record.metrics.lost_facts, 0, "{name}/none");

        let (lost, _) = run_one(&t, arm, Judge::Oracle, CellOptions::default());
        let w = written(&lost, turn);
        assert!(w.contains(guess) && !w.contains(value), "{name}/{arm}: {w}");
        assert_eq!(lost.record.status, Status::Failure, "{name}/{arm}");
        assert!(lost.record.metrics.lost_facts >= 1, "{name}/{arm}");
    }
}

#[test]
fn fold_reads_the_fact_back_from_its_archive() {
    let t = task("incident-quote");
    let (out, _) = run_one(&t, "fold", Judge::Oracle, CellOptions::default());
    let m = &out.record.metrics;
    assert_eq!(
        out.record.status,
        Status::Success,
        "{:?}",
        out.record.checks
    );
    assert!(m.folds >= 1 && m.recovered_facts.archive >= 1, "{m:?}");
    assert_eq!(m.lost_facts, 0);
    assert!(written(&out, 6).contains("got 'fifty' (config/importer.ini, line 3)"));
}

#[test]
fn a_fold_result_keeps_the_users_words() {
    // A card after every 3 calls: the retention unit is folded before the changelog turn, and
    // its fold result quotes the user's message, ticket number included.
    let t = task("retention-window");
    let (out, _) = run_one(
        &t,
        "fold:card_after_tool_calls=3",
        Judge::Oracle,
        CellOptions::default(),
    );
    let m = &out.record.metrics;
    assert_eq!(
        out.record.status,
        Status::Success,
        "{:?}",
        out.record.checks
    );
    assert!(m.folds >= 1, "{m:?}");
    assert_eq!(m.lost_facts, 0, "{m:?}");
    assert!(written(&out, 4).contains("LEGAL-2291"));
}

#[test]
fn no_cell_succeeds_with_a_lost_fact() {
    let out = tempfile::tempdir().unwrap();
    let tasks = [
        "docs-and-code",
        "snapshot-rollback",
        "incident-quote",
        "retention-window",
    ]
    .into_iter()
    .map(task)
    .collect();
    let records = run_matrix(
        tasks,
        &["none", "trim", "compact", "fold", "fold+strategies"],
        "sim",
        &[1],
        out.path(),
    );
    assert_eq!(records.len(), 20);
    for r in &records {
        assert!(
            !(r.status == Status::Success && r.metrics.lost_facts > 0),
            "{} succeeded with {} lost facts",
            r.id,
            r.metrics.lost_facts
        );
        assert_ne!(r.status, Status::Error, "{}: {:?}", r.id, r.error);
    }
    let lost = records.iter().filter(|r| r.metrics.lost_facts > 0).count();
    assert!(
        lost >= 3,
        "the loss tasks lose facts under some arm: {lost}"
    );
}
