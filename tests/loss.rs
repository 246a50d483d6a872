//! Loss decides the outcome: a fact that is neither visible nor recovered is written as the
//! task's guess (its checks fail), and no cell succeeds with a lost fact.

use harness_core::judge::Judge;
use harness_core::Role;
use harness_core::Status;
use harness_runner::cell::CellOptions;

use std::sync::Arc;

use harness_core::sim::Sim;
use harness_core::Event;

use crate::helpers::{run_matrix, run_one, run_one_with, sim_config, task};

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
const LOSSES: [(&str, &str, u32, &str, &str); 2] = [
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
    // A sim that always tries to get a fact back still loses the two a re-read cannot bring
    // back under `trim`: docs-and-code's old limit (the file was edited since) and
    // snapshot-rollback's id (the tool numbers snapshots).
    let lost = records.iter().filter(|r| r.metrics.lost_facts > 0).count();
    assert!(
        lost >= 2,
        "the loss tasks lose facts under some arm: {lost}"
    );
    // Every recovery of every cell was built from what its request showed.
    let mut cells = 0;
    for dir in std::fs::read_dir(out.path().join("cells")).unwrap() {
        let events = std::fs::read_to_string(dir.unwrap().path().join("events.jsonl")).unwrap();
        assert!(!events.contains("\"unseen_arguments\""), "{events}");
        cells += 1;
    }
    assert_eq!(cells, 20);
}

/// The calls the harness found built from text their request did not show: (turn, tool,
/// arguments).
fn unseen(out: &harness_runner::cell::CellOutput) -> Vec<(u32, String, Vec<String>)> {
    out.events
        .iter()
        .filter_map(|e| match e {
            Event::UnseenArguments {
                turn,
                name,
                arguments,
                ..
            } => Some((*turn, name.clone(), arguments.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_sim_with_the_old_private_map_fails_the_visible_arguments_check() {
    // Under trim (drop) turn 1's calls are gone from turn 2's requests; the old sim re-ran them
    // from its memory of where each fact was.
    let t = task("trim-rerun");
    let old = Sim::remembering_sources(Arc::clone(&t.spec), sim_config(Judge::Oracle));
    let (out, _) = run_one_with(&t, "trim", old, CellOptions::default());
    let found = unseen(&out);
    assert!(
        found.iter().any(|(turn, name, args)| *turn == 2
            && name == "read_file"
            && args == &["docs/pricing.md"]),
        "{found:?}"
    );
    assert!(found.len() >= 3, "{found:?}");
    // The sim of today, on the same cell and on the incident under fold, builds every
    // recovery from what it sees.
    for arm in ["trim", "trim:mode=placeholder", "fold", "compact"] {
        let (out, _) = run_one(&t, arm, Judge::Oracle, CellOptions::default());
        assert_eq!(unseen(&out), Vec::new(), "trim-rerun/{arm}");
    }
    let (out, _) = run_one(
        &task("incident-quote"),
        "fold",
        Judge::Oracle,
        CellOptions::default(),
    );
    assert_eq!(unseen(&out), Vec::new(), "incident-quote/fold");
}

#[test]
fn fold_greps_the_archive_for_the_cue_and_reads_every_line_that_has_it() {
    let t = task("incident-quote");
    let (out, _) = run_one(&t, "fold", Judge::Oracle, CellOptions::default());
    let greps: Vec<&harness_core::ToolCallRecord> = out
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall(c) if c.turn == 6 && c.archive_read => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(greps.len(), 1, "{greps:?}");
    let args: serde_json::Value = serde_json::from_str(&greps[0].args).unwrap();
    assert_eq!(
        args["pattern"], "batch_size",
        "a grep for the cue, not for the fact"
    );
    let result = out
        .transcript
        .iter()
        .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(greps[0].id.as_str()))
        .unwrap();
    let fact = "importer.config.ConfigError: batch_size must be a whole number, got 'fifty' (config/importer.ini, line 3)";
    assert!(result.text.contains(fact), "{}", result.text);
    let lines = result.text.lines().count();
    assert!(
        lines > 1,
        "the cue matches more than the fact's line: {}",
        result.text
    );
    assert_eq!(greps[0].result_tokens, result.tokens);
    assert!(
        result.tokens > 48,
        "every matching line counted: {} tokens",
        result.tokens
    );
}

#[test]
fn without_an_archive_the_cue_finds_the_quoted_error_in_the_workspace() {
    // Under trim and compact the error's output is gone and no archive exists, but turn 2's
    // closing message still names `batch_size`, and the support tickets in the workspace quote
    // the error: a grep of the workspace for the cue brings it back.
    let t = task("incident-quote");
    for arm in ["trim", "compact"] {
        let (out, _) = run_one(&t, arm, Judge::Oracle, CellOptions::default());
        assert_eq!(
            out.record.status,
            Status::Success,
            "{arm}: {:?}",
            out.record.checks
        );
        assert_eq!(out.record.metrics.lost_facts, 0, "{arm}");
        let grep = out
            .events
            .iter()
            .find_map(|e| match e {
                Event::ToolCall(c) if c.turn == 6 && c.name == "grep" => Some(c),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{arm}: no grep in turn 6"));
        assert_eq!(grep.args, r#"{"pattern":"batch_size"}"#, "{arm}");
        let result = out
            .transcript
            .iter()
            .find(|m| m.tool_call_id.as_deref() == Some(grep.id.as_str()))
            .unwrap();
        assert!(
            result.text.contains("support/tickets.txt:2:"),
            "{arm}: {}",
            result.text
        );
        assert!(
            written(&out, 6).contains("got 'fifty' (config/importer.ini, line 3)"),
            "{arm}"
        );
    }
}
