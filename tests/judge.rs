//! Boundary judgement end to end: `judge build` from the task suite and from a hand-made
//! labelled Claude Code session, a Codex session labelled by turn number, the four baselines'
//! scores, and the command line.

use std::process::Command;

use harness_core::judge::{aggregate, dataset_stats, Aggregate, Gold, Item, BASELINES};
use harness_core::MessageKind;
use harness_runner::judge::baseline_records;

use crate::helpers::{all_tasks, binary, judge_build, real_sessions, root};

fn aggregates(items: &[Item]) -> Vec<Aggregate> {
    let records = baseline_records(items, None);
    BASELINES
        .iter()
        .map(|j| aggregate(j.name(), &records))
        .collect()
}

fn fixture() -> std::path::PathBuf {
    root().join("tests/fixtures/judge")
}

#[test]
fn the_suite_gives_an_item_per_turn_boundary_and_baselines_rank_as_expected() {
    let items = judge_build(&[root().join("tasks")]);
    let boundaries: usize = all_tasks().iter().map(|t| t.spec.turns.len() - 1).sum();
    assert_eq!(items.len(), boundaries, "one item per turn ≥ 2");
    for it in &items {
        it.check().unwrap();
        assert_eq!(it.source, "task");
    }
    // tool-heavy's 21 calls bring a card at the default threshold, at turn 3; the oracle folds
    // 1–2 there, so turn 4's card offers turn 3 only.
    let th = |id: &str| items.iter().find(|i| i.id == id).unwrap();
    let card = th("task:tool-heavy/3");
    assert!(card.threshold);
    assert_eq!(card.gold.closed, vec![(1, 2)]);
    assert_eq!(th("task:tool-heavy/4").offered(), vec![3]);
    assert!(th("task:tool-heavy/4")
        .messages
        .iter()
        .any(|m| matches!(m.kind, MessageKind::FoldResult { from: 1, to: 2, .. })));
    // The essay's session: "ok, turn it off" continues build; login returns at turn 5.
    let t3 = th("task:build-then-turn-off/3");
    assert_eq!(
        (t3.gold.continues, t3.gold.boundary),
        (Some(true), Some(false))
    );
    assert!(t3.gold.closed.is_empty());
    let t5 = th("task:build-then-turn-off/5");
    assert_eq!(t5.gold.closed, vec![(2, 4)]);
    assert_eq!(t5.gold.open, vec![1]);

    let a = aggregates(&items);
    let (oracle, lexical, eager, never) = (&a[0], &a[1], &a[2], &a[3]);
    assert_eq!(
        oracle.exact,
        items.len(),
        "the oracle answers every item exactly"
    );
    assert_eq!(oracle.folded_units, oracle.closed_units);
    assert_eq!((oracle.premature, oracle.illegal, oracle.errors), (0, 0, 0));
    assert_eq!(oracle.ignored_when_nothing_closed, oracle.nothing_closed);
    assert!(never.closed_units > 0);
    assert_eq!(never.folded_units, 0, "never misses every closed unit");
    assert_eq!(never.missed_units, never.closed_units);
    for mid in [lexical, eager] {
        assert!(
            mid.folded_units > 0 && mid.folded_units < oracle.folded_units,
            "{}: {} of {} units",
            mid.model,
            mid.folded_units,
            mid.closed_units
        );
        assert!(mid.exact < oracle.exact, "{}", mid.model);
        assert!(mid.premature > 0, "{} folds too early somewhere", mid.model);
    }
}

#[test]
fn a_labelled_claude_code_session_gives_hand_checked_gold() {
    let items = judge_build(&[fixture()]);
    let ids: Vec<(u32, bool)> = items.iter().map(|i| (i.current, i.threshold)).collect();
    // 12 + 10 tool calls: the counting threshold shows a card at turn 3 only.
    assert_eq!(ids, vec![(2, false), (3, true), (4, false), (5, false)]);
    type Closed = Vec<(u32, u32)>;
    let g: Vec<(Closed, Vec<u32>)> = items
        .iter()
        .map(|i| (i.gold.closed.clone(), i.gold.open.clone()))
        .collect();
    assert_eq!(
        g,
        vec![
            (vec![(1, 1)], vec![]),
            (vec![(1, 1)], vec![2]),
            (vec![(2, 3)], vec![]),
            (vec![(2, 3)], vec![4]),
        ]
    );
    // The oracle folded turn 1 at the card of turn 3; turn 4's card starts after it.
    assert_eq!(items[2].offered(), vec![2, 3]);
    assert!(items[2]
        .messages
        .iter()
        .any(|m| matches!(m.kind, MessageKind::FoldResult { from: 1, to: 1, .. })));
    assert!(items[2].messages.iter().any(|m| m.card.is_some()));
    // "ok, turn it off" (short) continues build; the /cost wrapper is not a prompt.
    assert_eq!(items[1].user, "ok, turn it off");
    assert_eq!(items[1].gold.continues, Some(true));
    assert_eq!(items[0].since_fold.tool_calls, 12);
    assert_eq!(items[1].since_fold.tool_calls, 22);
    let a = aggregates(&items);
    assert_eq!(a[0].exact, 4);
    assert_eq!(a[3].missed_units, a[3].closed_units);
    let stats = dataset_stats(&items);
    assert_eq!((stats[0].kept_away, stats[0].kept_boundary), (3, 2));
    assert_eq!(stats[0].lexical_wrong, 0);
}

#[test]
fn judge_commands_write_the_dataset_tables_and_records() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d.jsonl");
    let out = Command::new(binary())
        .current_dir(root())
        .args(["judge", "build", "--from", "tasks/short-continuations.yaml"])
        .arg("--from")
        .arg(fixture())
        .arg("-o")
        .arg(&data)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("The host's filter"));
    let n = std::fs::read_to_string(&data).unwrap().lines().count();
    assert_eq!(n, 7 + 4, "{err}");

    let records = dir.path().join("r.jsonl");
    let run = Command::new(binary())
        .args(["judge", "run", "--format", "md", "--dataset"])
        .arg(&data)
        .arg("-o")
        .arg(&records)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    for row in ["| oracle |", "| lexical |", "| eager |", "| never |"] {
        assert!(stdout.contains(row), "{stdout}");
    }
    assert!(stdout.contains("### The lexical rule at labelled turn boundaries"));
    let lines = std::fs::read_to_string(&records).unwrap();
    assert_eq!(lines.lines().count(), 4 * n);
    let first: serde_json::Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(first["model"], "oracle");
    assert_eq!(first["version"], 2);
    assert_eq!(first["answer_mode"], "tool");

    let csv = Command::new(binary())
        .args([
            "judge",
            "run",
            "--format",
            "csv",
            "--threshold-only",
            "--dataset",
        ])
        .arg(&data)
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&csv.stdout);
    assert!(csv.starts_with("model,answer,items,exact,"), "{csv}");
    assert!(
        csv.contains("\noracle,–,1,"),
        "one item has a card at the threshold: {csv}"
    );

    // Bad input: a dataset line that is not an item, the sim as a model.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"version\": 7}\n").unwrap();
    let r = Command::new(binary())
        .args(["judge", "run", "--dataset"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("bad.jsonl:1: dataset version 7"));
    let r = Command::new(binary())
        .args(["judge", "run", "--model", "sim", "--dataset"])
        .arg(&data)
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("always in the table"));
}

#[test]
fn labelled_real_sessions_build_items_with_gold_the_oracle_matches() {
    for data in real_sessions() {
        let items = judge_build(std::slice::from_ref(&data));
        assert!(!items.is_empty(), "{}: no items", data.display());
        let a = aggregates(&items);
        assert_eq!(a[0].exact, items.len(), "{}", data.display());
        let stats = dataset_stats(&items);
        eprintln!(
            "{}\n{}\n{}",
            data.display(),
            harness_runner::judge::filter_table(&stats).to_terminal(),
            harness_runner::judge::lexical_table(&stats).to_terminal()
        );
        assert!(stats[0].boundaries > 0, "{}", data.display());
    }
}

#[test]
fn a_codex_session_labelled_by_turn_number_gives_gold_from_its_turns() {
    const ID: &str = "019ba1f0-504b-7643-82d5-364d9e886114";
    const ROLLOUT: &str = "codex/dsissoko_atelier/rollout-2026-01-09T09-47-19-019ba1f0-504b-7643-82d5-364d9e886114.jsonl";
    let real = root().join("tests/fixtures/real-sessions");
    let labels = real.join(format!("labels/codex/{ID}.yaml"));
    let items = judge_build(std::slice::from_ref(&labels));
    assert!(items.iter().all(|i| i.source == "codex" && i.session == ID));
    let currents: Vec<u32> = items.iter().map(|i| i.current).collect();
    assert_eq!(currents, (2..=8).collect::<Vec<u32>>(), "a prompt ≥ 2 each");
    let units: Vec<Option<&str>> = items[0].labels.iter().map(|u| u.as_deref()).collect();
    let want: Vec<Option<&str>> = "aabbbbaa"
        .chars()
        .map(|c| Some(if c == 'a' { "a" } else { "b" }))
        .collect();
    assert_eq!(units, want, "the units of turns 1-8, by turn number");
    let at = |c: u32| items.iter().find(|i| i.current == c).unwrap();
    // Turn 3 starts b beside a unit the user comes back to at turn 7: nothing is closed.
    assert!(at(3).gold.closed.is_empty());
    assert_eq!(at(3).gold.continues, Some(false));
    assert_eq!(at(3).gold.boundary, Some(false));
    // Back to a at turn 7: b is closed, a is open.
    let closed: Vec<&str> = at(7).gold.units.iter().map(|u| u.unit.as_str()).collect();
    assert_eq!(closed, ["b"]);
    assert_eq!(at(7).gold.boundary, Some(true));
    assert!(at(7).gold.open.contains(&1));
    assert_eq!(
        aggregates(&items)[0].exact,
        items.len(),
        "the oracle is exact"
    );

    // The same file in a data folder's labels-by-turn/ gives the same items; in both places,
    // the one in labels/ is read once.
    let d = tempfile::tempdir().unwrap();
    let rollout = d.path().join(ROLLOUT);
    std::fs::create_dir_all(rollout.parent().unwrap()).unwrap();
    std::fs::copy(real.join(ROLLOUT), &rollout).unwrap();
    let by_turn = d.path().join("labels-by-turn/codex");
    std::fs::create_dir_all(&by_turn).unwrap();
    std::fs::copy(&labels, by_turn.join(format!("{ID}.yaml"))).unwrap();
    let gold = |items: &[Item]| -> Vec<(String, Gold)> {
        items
            .iter()
            .map(|i| (i.id.clone(), i.gold.clone()))
            .collect()
    };
    let again = judge_build(&[d.path().to_path_buf()]);
    assert_eq!(gold(&again), gold(&items));
    let moved = d.path().join("labels/codex");
    std::fs::create_dir_all(&moved).unwrap();
    std::fs::copy(&labels, moved.join(format!("{ID}.yaml"))).unwrap();
    assert_eq!(gold(&judge_build(&[d.path().to_path_buf()])), gold(&items));
}
