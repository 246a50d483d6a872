//! The terminal tables fit: `run`, `ab`, `report` and `replay` print their default view within
//! 120 columns (and within `COLUMNS` when it is narrower, as far as the first columns allow),
//! `--view all` keeps every column, and an unknown view is a usage error that lists the views.
//! Replay of the in-repository sessions begins with the verdict and every line of it fits.

use std::path::Path;
use std::process::{Command, Output};

use crate::helpers::{binary, root};

/// Runs the binary from the repository's root with `COLUMNS` set (or removed).
fn foldbench(args: &[&str], columns: Option<&str>) -> Output {
    let mut c = Command::new(binary());
    c.current_dir(root()).args(args);
    match columns {
        Some(n) => c.env("COLUMNS", n),
        None => c.env_remove("COLUMNS"),
    };
    c.output().unwrap()
}

/// The widths of the table lines (box-drawing borders) of `text`, in characters.
fn table_widths(text: &str) -> Vec<usize> {
    text.lines()
        .filter(|l| l.starts_with(['╭', '├', '│', '╰']))
        .map(|l| l.chars().count())
        .collect()
}

fn stdout(out: &Output, what: &str) -> String {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        matches!(out.status.code(), Some(0 | 100)),
        "{what}: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!table_widths(&text).is_empty(), "{what}: no table\n{text}");
    text
}

fn assert_within(text: &str, width: usize, what: &str) {
    let widest = table_widths(text).into_iter().max().unwrap_or(0);
    assert!(widest <= width, "{what}: {widest} > {width}\n{text}");
}

/// A run of the default five policies on one task, and an A/B of none and trim, into `dir`.
fn run_and_ab(dir: &Path) -> (String, String) {
    let run = dir.join("run");
    let args = [
        "run",
        "--tasks",
        "tasks/trim-rerun.yaml",
        "--seeds",
        "1",
        "--cell-timeout",
        "300",
        "-o",
        run.to_str().unwrap(),
    ];
    let ab_dir = dir.join("ab");
    let ab = [
        "ab",
        "--task",
        "trim-rerun",
        "--arms",
        "none,trim,compact,fold,fold+strategies",
        "--runs",
        "3",
        "--cell-timeout",
        "300",
        "-o",
        ab_dir.to_str().unwrap(),
    ];
    (
        stdout(&foldbench(&args, None), "run"),
        stdout(&foldbench(&ab, None), "ab"),
    )
}

#[test]
fn the_default_tables_fit_120_columns_and_columns_narrows_them() {
    let dir = tempfile::tempdir().unwrap();
    let (run, ab) = run_and_ab(dir.path());
    assert_within(&run, 120, "run");
    assert_within(&ab, 120, "ab");
    for h in [
        "arm",
        "success",
        "lost",
        "tokens/task",
        "Σ× none",
        "re-runs",
    ] {
        assert!(run.contains(h), "run lacks {h}:\n{run}");
    }
    let sessions = root().join("tests/fixtures/real-sessions");
    let replay = stdout(
        &foldbench(&["replay", sessions.to_str().unwrap()], None),
        "replay",
    );
    assert_within(&replay, 120, "replay");
    let run_dir = dir.path().join("run");
    let report = stdout(
        &foldbench(&["report", run_dir.to_str().unwrap()], Some("100")),
        "report",
    );
    assert_within(&report, 100, "report, COLUMNS=100");
    let cells = stdout(
        &foldbench(&["report", run_dir.to_str().unwrap(), "--cells"], None),
        "report --cells",
    );
    assert_within(&cells, 120, "report --cells");
    for args in [
        vec!["report", run_dir.to_str().unwrap()],
        vec!["report", dir.path().join("ab").to_str().unwrap()],
        vec!["replay", sessions.to_str().unwrap()],
    ] {
        let text = stdout(&foldbench(&args, Some("80")), &args.join(" "));
        assert_within(&text, 80, &format!("{}, COLUMNS=80", args.join(" ")));
        // Narrowed, a table that shows what a policy saves still shows what it lost.
        let loss = if args[0] == "replay" {
            "gone/100"
        } else {
            "lost"
        };
        let table = text.split("more columns (").next().unwrap_or("");
        assert!(
            table.contains(loss),
            "{}, COLUMNS=80: the table left out its loss column `{loss}`\n{text}",
            args.join(" ")
        );
        // The note naming what was left out, broken to the width: read as words.
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let note = words.find("more columns (").map(|i| &words[i..]);
        assert!(
            note.is_some_and(|n| n.contains("): --view all")),
            "{}: no note naming what was left out\n{text}",
            args.join(" ")
        );
    }
    // COLUMNS wider than 120 is still 120 by default.
    let wide = stdout(
        &foldbench(&["replay", sessions.to_str().unwrap()], Some("400")),
        "replay, COLUMNS=400",
    );
    assert_within(&wide, 120, "replay, COLUMNS=400");
}

#[test]
fn view_all_keeps_every_column_and_an_unknown_view_lists_the_views() {
    let sessions = root().join("tests/fixtures/real-sessions");
    let s = sessions.to_str().unwrap();
    let all = stdout(
        &foldbench(&["replay", s, "--view", "all"], Some("80")),
        "replay --view all",
    );
    for h in [
        "requests",
        "last req",
        "cache written",
        "cards",
        "rewritten/fold",
        "folds needed later",
        "compactions needed later",
        "decision",
        "continuation",
        "trim hidden",
        "fold med×/last×",
        "max |err|",
        "p90 |err| scaled",
    ] {
        assert!(all.contains(h), "--view all lacks {h}:\n{all}");
    }
    assert!(!all.contains("more columns"), "{all}");
    let md = foldbench(&["replay", s, "--format", "md"], Some("80"));
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("| compactions needed later |") && md.contains("| p90 \\|err\\| scaled |"),
        "Markdown keeps every column:\n{md}"
    );
    let loss = stdout(&foldbench(&["replay", s, "--view", "loss"], None), "loss");
    assert!(
        (loss.contains("hidden refs") || loss.contains("│ hidden │"))
            && loss.contains("gone/100")
            && loss.contains("trim hidden"),
        "{loss}"
    );
    assert!(!loss.contains("cache written"), "{loss}");
    let out = foldbench(&["replay", s, "--view", "wide"], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("'wide'") && err.contains("default, loss, cache, essay, all"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn replay_begins_with_the_verdict_and_every_line_fits_120_columns() {
    let sessions = root().join("tests/fixtures/real-sessions");
    for columns in [None, Some("400"), Some("80")] {
        let text = stdout(
            &foldbench(&["replay", sessions.to_str().unwrap()], columns),
            "replay",
        );
        let width = if columns == Some("80") { 80 } else { 120 };
        // Every line, the note naming the columns a table left out too.
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(
            widest <= width,
            "COLUMNS={columns:?}: a line of {widest} > {width}\n{text}"
        );
        assert!(
            text.starts_with("Verdict against none: tokens incl. recovery Σ×"),
            "COLUMNS={columns:?}: the verdict first\n{text}"
        );
        let verdict_end = text.find("Replay of 10 sessions").unwrap();
        let table = text.find('╭').unwrap();
        assert!(verdict_end < table);
        for p in policies::POLICIES
            .iter()
            .filter(|p| **p != "fold+strategies")
        {
            assert!(
                text[..verdict_end].contains(&format!("\n  {p}: ")),
                "{p}'s verdict line\n{text}"
            );
        }
    }
}
