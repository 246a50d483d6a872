//! `replay` states its caveats where the numbers are (terminal, Markdown and the HTML page):
//! fold+strategies on recorded sessions, compact's mechanical summary, the lexical judge against
//! the labels, and that one session's hidden references depend on the sessions replayed with it.

use serde_json::Value;

use crate::helpers::on_real_sessions;

const LABELS: &str = "tests/fixtures/real-sessions/labels";

/// `text` as one run of words: the terminal's notes are broken to its width.
fn words(text: String) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn replay(args: &[&str]) -> String {
    on_real_sessions("replay", args)
}

#[test]
fn fold_strategies_is_left_out_unless_named_and_then_the_output_says_why() {
    let default = replay(&[]);
    assert!(
        !default.contains("fold+strategies"),
        "no row, no verdict, no note by default:\n{default}"
    );
    assert!(default.contains("× 4 policies"), "{default}");
    let named = replay(&[
        "--policy",
        "none",
        "--policy",
        "fold",
        "--policy",
        "fold+strategies",
    ]);
    // Notes are broken to the terminal's width: read the note as one run of words.
    let flat = words(named.clone());
    let at = flat
        .find("fold+strategies: a recorded session contains no strategy")
        .unwrap_or_else(|| panic!("no note:\n{named}"));
    let note = &flat[at..];
    assert!(
        note.contains("more input tokens than fold in all"),
        "{note}"
    );
}

#[test]
fn compact_and_the_lexical_judge_say_what_their_numbers_rest_on() {
    for format in ["table", "md"] {
        let out = words(replay(&["--format", format]));
        assert!(
            out.contains("compact: had it fired, its summary would be the mechanical one"),
            "{format}:\n{out}"
        );
        assert!(
            out.contains("which is wrong at about half of the labelled boundaries measured (docs/judge.md); --judge labels --labels DIR"),
            "{format}:\n{out}"
        );
    }
    // With the fixtures' labels, the figure is measured. By hand from the two label files:
    // 937c (Claude Code) has one boundary, a 5,825-character prompt that continues unit a
    // (the rule says new: wrong); 019ba1f0 (Codex) has seven, prompts of 284, 60, 11, 3, 69,
    // 64 and 86 characters over units a a b b b b a a — wrong at the 284 (continues), the 60
    // (short but new work), the 69 (continues) and the 86 (continues): 5 of 8.
    let out = words(replay(&["--labels", LABELS]));
    assert!(
        out.contains(
            "which is wrong at 5 of the 8 labelled boundaries of these 2 labelled sessions (62.5%)"
        ),
        "{out}"
    );
    // Judged by the labels, there is no lexical caveat to state.
    let labelled = replay(&["--labels", LABELS, "--judge", "labels"]);
    assert!(
        !labelled.contains("Fold points are the lexical judge's"),
        "{labelled}"
    );
}

/// trim's hidden references of session 937c in a replay of `args`.
fn trim_hidden_of_937c(args: &[&str]) -> u64 {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    let v: Value = serde_json::from_str(&replay(&all)).unwrap();
    let s = v["per_session"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"].as_str().is_some_and(|x| x.starts_with("937c")))
        .unwrap_or_else(|| panic!("no 937c in {v}"));
    s["policies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["policy"] == "trim")
        .unwrap()["hidden_references"]
        .as_u64()
        .unwrap()
}

#[test]
fn one_sessions_hidden_references_depend_on_the_sessions_replayed_with_it_and_the_output_says_so() {
    // Alone, nothing is common to a corpus; with the other two projects, the strings the
    // projects share are left out: 7 against 6 when this was written. The rule is the
    // documented one; the output says so beside the numbers.
    let alone = trim_hidden_of_937c(&["--session", "937c"]);
    let with_all = trim_hidden_of_937c(&[]);
    assert!(
        alone > with_all,
        "alone {alone}, with the others {with_all}"
    );
    let out = words(replay(&["--session", "937c"]));
    assert!(
        out.contains(
            "Hidden references: with 1 project replayed no string counts as common to the corpus"
        ),
        "{out}"
    );
    let out = words(replay(&[]));
    assert!(
        out.contains("Hidden references leave out strings common to the 4 projects replayed together (in 2 or more of them and 10% or more), so one session's counts depend on the sessions replayed with it"),
        "{out}"
    );
}
