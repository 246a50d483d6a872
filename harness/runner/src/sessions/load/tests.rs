//! Tests of `load.rs`: the import warnings, the labels and what is said on the way.

use std::cell::RefCell;

use super::*;

const SESSION: &str = include_str!("../../../../replay/fixtures/claude-code/five-turns.jsonl");

/// What a sink was told.
type Said = RefCell<Vec<String>>;

fn keep(said: &Said, line: &str) {
    said.borrow_mut().push(line.to_string());
}

#[test]
fn import_warnings_name_the_first_skipped_lines_and_what_is_left() {
    // Lines 3, 9, 15, 19 and 23 (tool results) cut short in each file: a header per file with
    // the count and what the session kept — its 5 human turns (lines 1, 7, 13, 17, 21) and its
    // 12 recorded requests (the 12 assistant lines, none damaged) — then the first three
    // lines, a count of the other two, and the records joined across the damage; past 20
    // files, one line for the rest.
    let damaged: String = SESSION
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if [2, 8, 14, 18, 22].contains(&i) {
                &l[..l.len() / 2]
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let sessions: Vec<ImportedSession> = (0..22)
        .map(|i| {
            harness_import::import_bytes(&format!("f{i:02}.jsonl"), damaged.as_bytes(), None)
                .expect("imports")
                .remove(0)
        })
        .collect();
    let lines = warning_lines(&sessions);
    assert_eq!(lines.len(), 6 * 20 + 1, "{lines:#?}");
    assert_eq!(
        lines[0],
        "warning: f00.jsonl: 5 lines skipped while importing; what is left: 1 session · 5 human \
         turns · 12 recorded requests"
    );
    for (k, n) in [(1, 3), (2, 9), (3, 15)] {
        assert!(
            lines[k].starts_with(&format!("  line {n}: malformed json (")),
            "{lines:#?}"
        );
    }
    assert_eq!(lines[4], "  … and 2 more skipped lines");
    assert!(
        lines[5].starts_with("warning: f00.jsonl: ")
            && lines[5].contains("whose parent was on a skipped line"),
        "{lines:#?}"
    );
    assert!(
        lines[6].starts_with("warning: f01.jsonl: 5 lines skipped"),
        "{lines:#?}"
    );
    assert_eq!(
        lines[120],
        "warning: 2 more files with warnings (10 lines skipped in all)"
    );
    assert!(warning_lines(&sessions[..0]).is_empty());
}

#[test]
fn labels_are_read_and_every_problem_is_said_then_counted() {
    let said = Said::default();
    let say = |l: &str| keep(&said, l);
    let good = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../replay/fixtures/labels"
    ));
    let files = load_labels(std::slice::from_ref(&good), &say).expect("the labels read");
    assert_eq!(files.len(), 1);
    assert!(files[0].labels.prompts() > 0);
    assert!(said.borrow().is_empty(), "{said:?}");

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "turns:\n  - n: 1\n    unit: a\n").unwrap();
    let e = load_labels(&[good, bad.clone()], &say).unwrap_err();
    assert!(
        matches!(e, SessionsError::LabelProblems { count: 1 }),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "1 problem in the labels");
    let said = said.borrow();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].starts_with(&bad.display().to_string()), "{said:?}");

    let missing = dir.path().join("nope");
    let e = load_labels(std::slice::from_ref(&missing), &|_| {}).unwrap_err();
    assert!(
        harness_core::one_line(&e)
            .starts_with(&format!("cannot read labels {}: ", missing.display())),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        format!("cannot read labels {}", missing.display()),
        "the message does not repeat its cause"
    );
    assert!(
        std::error::Error::source(&e).is_some(),
        "the IO error is kept"
    );
}

#[test]
fn a_folder_without_sessions_says_what_it_expected() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("other.jsonl"), br#"{"name": "left-pad"}"#).unwrap();
    let said = Said::default();
    let paths = [dir.path().to_path_buf()];
    let e = load_sessions(&paths, "auto", &Filter::default(), "replay", &|l| {
        keep(&said, l)
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "no session found in 1 file under {}; expected {}",
            dir.path().display(),
            harness_import::EXPECTED
        )
    );
    assert!(
        said.borrow()[0].starts_with("warning: skipped "),
        "{said:?}"
    );
    let e = load_sessions(&paths, "nope", &Filter::default(), "replay", &|_| {}).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("--input-format: unknown format `nope`")
            && e.to_string().ends_with(" or auto"),
        "{e}"
    );
}

#[test]
fn the_filters_say_what_they_kept() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.jsonl"), SESSION).unwrap();
    let said = Said::default();
    let say = |l: &str| keep(&said, l);
    let paths = [dir.path().to_path_buf()];
    let keep_all = Filter::new(None, None, None, Some("")).unwrap();
    let loaded = load_sessions(&paths, "auto", &keep_all, "replay", &say).unwrap();
    assert_eq!(loaded.sessions.len(), 1);
    assert_eq!(loaded.files, 1);
    assert!(
        said.borrow().is_empty(),
        "an empty filter is no filter: {said:?}"
    );
    // A Claude Code file is not ruled out unread by `--until`: imported, then filtered out.
    let before = Filter::new(None, Some("2000-01-01"), None, None).unwrap();
    let e = load_sessions(&paths, "auto", &before, "replay", &say).unwrap_err();
    assert!(matches!(e, SessionsError::NoMatch), "{e:?}");
    assert_eq!(*said.borrow(), ["0 of 1 session selected by the filters"]);
}
