//! The HTML pages end to end: `report -o FILE.html` of a run with a fold and a compaction,
//! `replay -o` of the real-session fixtures and `judge run -o` of the judge fixtures, read back
//! as text (the Chromium check of how they look is `tests/html-check.sh`).

use std::path::Path;
use std::process::Command;

use harness_core::Event;
use harness_core::{Message, MessageKind};
use harness_report::html::escape;

use crate::helpers::{binary, root, run_matrix, task};

const ARMS: [&str; 4] = [
    "none",
    "trim",
    "compact:window=2500",
    "fold:card_after_tool_calls=2",
];

fn run(args: &[&str], files: &[&Path]) -> std::process::Output {
    Command::new(binary())
        .current_dir(root())
        .args(args)
        .args(files)
        .output()
        .unwrap()
}

fn ok(o: &std::process::Output) {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn series_of(page: &str, policy: &str) -> usize {
    page.matches(&format!(
        "class=\"series\" data-policy=\"{}\"",
        escape(policy)
    ))
    .count()
}

#[test]
fn report_html_has_one_line_per_arm_the_marks_and_what_each_fold_archived() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    run_matrix(vec![task("build-then-turn-off")], &ARMS, "sim", &[1], &out);
    let page_path = dir.path().join("report.html");
    ok(&run(&["report", "-o"], &[&page_path, &out]));
    let page = std::fs::read_to_string(&page_path).unwrap();
    assert_eq!(
        page.matches("<figure class=\"chart\"").count(),
        1,
        "one task, model and seed"
    );
    assert_eq!(page.matches("class=\"series\"").count(), ARMS.len());
    for arm in ARMS {
        assert_eq!(series_of(&page, arm), 1, "{arm}");
    }
    let at = |arm: &str| page.find(&format!("data-policy=\"{arm}\"")).unwrap();
    assert!(
        ARMS.windows(2).all(|w| at(w[0]) < at(w[1])),
        "the lines keep the matrix's arm order, whatever order the cells finished in"
    );
    assert!(page.contains("class=\"mark fold\""), "the fold is marked");
    assert!(
        page.contains("class=\"mark compaction\""),
        "the compaction is marked"
    );
    // The page opens with the verdict, one line per arm, and the frontier's chart (one point
    // per arm), before any table.
    let verdict = page
        .find("<h2>Verdict against none:")
        .expect("the verdict heading");
    let first_table = page.find("<table").unwrap();
    assert!(verdict < first_table, "the verdict comes first");
    for arm in ARMS.iter().filter(|a| **a != "none") {
        assert!(
            page.contains(&format!("<li>{}:", escape(arm))),
            "a verdict line for {arm}"
        );
    }
    assert!(page.contains("<li>none:") && page.contains("the baseline (tokens Σ× 1.00)"));
    let frontier = page
        .find(&format!(
            "<figure class=\"frontier\" data-points=\"{}\"",
            ARMS.len()
        ))
        .expect("the frontier chart, one point per arm");
    assert!(frontier < first_table);
    for arm in ARMS {
        assert_eq!(
            page.matches(&format!(
                "<circle class=\"arm\" data-arm=\"{}\"",
                escape(arm)
            ))
            .count(),
            1,
            "{arm}: one point"
        );
    }
    assert!(page.contains("class=\"frontier-line\""));
    assert!(page.contains("A/B: each run"), "one task: the A/B table");
    assert_eq!(page.matches("<details class=\"drill\">").count(), 1);
    // What the fold archived and its result message, as the cell's files hold them.
    let cell = out.join("cells/build-then-turn-off_fold_card_after_tool_calls=2_sim_1");
    let events: Vec<Event> = std::fs::read_to_string(cell.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sha = events
        .iter()
        .find_map(|e| match e {
            Event::Fold { sha256, .. } => Some(sha256.clone()),
            _ => None,
        })
        .expect("the fold arm folded");
    assert!(
        page.contains(&format!("<td>{sha}</td>")),
        "the folds table names {sha}"
    );
    let result = std::fs::read_to_string(cell.join("transcript.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Message>(l).unwrap())
        .find(|m| matches!(m.kind, MessageKind::FoldResult { .. }))
        .expect("a fold result in the transcript");
    assert!(
        page.contains(&escape(&result.text)),
        "the result message is shown"
    );
    // The same records give the same bytes.
    let again = dir.path().join("again.html");
    ok(&run(&["report", "-o"], &[&again, &out]));
    assert_eq!(std::fs::read_to_string(&again).unwrap(), page);
}

#[test]
fn replay_and_judge_run_write_their_pages() {
    let dir = tempfile::tempdir().unwrap();
    let page_path = dir.path().join("replay.html");
    ok(&run(
        &["replay", "tests/fixtures/real-sessions", "-o"],
        &[&page_path],
    ));
    let page = std::fs::read_to_string(&page_path).unwrap();
    let charts = page.matches("<figure class=\"chart\"").count();
    assert!(charts >= 2, "one chart per session");
    for p in policies::POLICIES {
        // fold+strategies only when --policy names it (a recorded session has no strategy).
        let want = if p == "fold+strategies" { 0 } else { charts };
        assert_eq!(series_of(&page, p), want, "{p}: one line per chart");
    }
    assert_eq!(page.matches("<details class=\"drill\">").count(), charts);
    // The drill-down lists what trim hid from a later response, and the verdict lines.
    assert!(
        page.contains("Hidden references (the first"),
        "no hidden references"
    );
    assert!(
        page.contains("<td>trim</td>"),
        "trim hides references in these sessions"
    );
    let first_table = page.find("<table").unwrap();
    let verdict = page
        .find("<h2>Verdict against none: tokens incl. recovery")
        .expect("the verdict heading");
    assert!(verdict < first_table, "the verdict comes first");
    assert!(
        page.contains("<li>trim:    saves "),
        "no verdict line for trim"
    );
    // fold+strategies is left out of a replay unless --policy names it.
    let n = policies::POLICIES.len() - 1;
    let frontier = page
        .find(&format!("<figure class=\"frontier\" data-points=\"{n}\""))
        .expect("the frontier chart, one point per policy");
    assert!(frontier < first_table);
    assert!(page.contains("title=\"sort by tokens incl. recovery\""));
    let bad = run(
        &["replay", "tests/fixtures/real-sessions", "-o", "x.txt"],
        &[],
    );
    assert_eq!(bad.status.code(), Some(2), "replay -o writes HTML only");

    let data = dir.path().join("judge.jsonl");
    ok(&run(
        &["judge", "build", "--from", "tests/fixtures/judge", "-o"],
        &[&data],
    ));
    let (html, records) = (
        dir.path().join("judge.html"),
        dir.path().join("records.jsonl"),
    );
    ok(&run(
        &["judge", "run", "--dataset"],
        &[&data, Path::new("-o"), &html, Path::new("-o"), &records],
    ));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Card points and answers"));
    assert!(page.contains("<h3>Boundary judgement</h3>"));
    assert!(std::fs::read_to_string(&records).unwrap().lines().count() > 0);
}
