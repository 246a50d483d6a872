//! Replays, analyses and checks against recorded usage the real sessions: the in-repository
//! subset, and the full corpus when `FOLDBENCH_DATA` names it. Run with `--nocapture` to see the
//! tables.

use harness_import::import_paths;
use harness_replay::report;
use harness_replay::{analyze_session, session_truth, JudgeKind, Labels, ReplayConfig, Replayer};
use harness_replay::{estimate_prefix, none_context, sum_tokens};

#[path = "../../import/tests/support/mod.rs"]
mod support;
use support::data_dirs;

/// Every labels file of a data folder: `labels/<format>/` and `labels-by-turn/<format>/` (the
/// Codex files keyed by turn number, where the corpus kept them first).
fn labels(dir: &std::path::Path) -> Option<Labels> {
    let mut l = Labels::new();
    for folder in ["labels", "labels-by-turn"] {
        let Ok(formats) = std::fs::read_dir(dir.join(folder)) else {
            continue;
        };
        for f in formats.flatten() {
            let Ok(entries) = std::fs::read_dir(f.path()) else {
                continue;
            };
            for e in entries.flatten() {
                let text = std::fs::read_to_string(e.path()).expect("a labels file reads");
                l.add_file(&e.path().display().to_string(), &text)
                    .expect("the labels are valid");
            }
        }
    }
    (!l.is_empty()).then_some(l)
}

#[test]
fn replays_analyses_and_checks_everything_in_the_real_sessions() {
    for dir in data_dirs() {
        println!("== {}", dir.display());
        check_folder(&dir);
    }
}

fn check_folder(dir: &std::path::Path) {
    let report = import_paths(&[dir.to_path_buf()], None).expect("the folder can be walked");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let sessions = report.sessions;
    assert!(!sessions.is_empty());
    let labels = labels(dir);
    // Codex sessions are labelled by turn number: each labels file finds its session.
    let codex_files: std::collections::BTreeSet<std::ffi::OsString> = ["labels", "labels-by-turn"]
        .iter()
        .filter_map(|f| std::fs::read_dir(dir.join(f).join("codex")).ok())
        .flat_map(|d| d.flatten().map(|e| e.file_name()))
        .collect();
    let codex_labelled = sessions
        .iter()
        .filter(|s| s.format == harness_import::Format::Codex)
        .filter(|s| labels.as_ref().is_some_and(|l| l.units_of(s).is_some()))
        .count();
    assert_eq!(codex_labelled, codex_files.len(), "{}", dir.display());

    let replayer = Replayer::new(ReplayConfig {
        judge: if labels.is_some() {
            JudgeKind::Oracle
        } else {
            JudgeKind::Lexical
        },
        ..ReplayConfig::default()
    })
    .unwrap();
    let replays = replayer.replay_all(&sessions, labels.as_ref(), 2);
    let names = replayer.labels();
    for (s, r) in sessions.iter().zip(&replays) {
        let none = r.policy("none").unwrap();
        let trim = r.policy("trim").unwrap();
        assert_eq!(none.sizes().len(), s.requests.len(), "{}", s.id);
        let prefix = u64::from(estimate_prefix(s).tokens);
        for (k, req) in none.requests.iter().enumerate() {
            assert_eq!(
                req.tokens,
                prefix + sum_tokens(&none_context(s, k)),
                "{} request {k}",
                s.id
            );
        }
        for (a, b) in none.requests.iter().zip(&trim.requests) {
            assert!(b.tokens <= a.tokens, "{}: trim sent more than none", s.id);
        }
        for p in &r.policies {
            assert_eq!(p.sizes().len(), s.requests.len(), "{} {}", s.id, p.policy);
        }
    }
    let summary = report::summarize(&replays, &names);
    println!(
        "{}",
        report::policy_table(&summary, labels.is_some()).to_terminal()
    );
    println!(
        "{}",
        report::session_table(&replays, &names, 2).to_terminal()
    );

    let compositions: Vec<_> = sessions
        .iter()
        .map(|s| analyze_session(s, JudgeKind::Lexical, None))
        .collect();
    for (c, r) in compositions.iter().zip(&replays) {
        let none = r.policy("none").unwrap();
        for (k, part) in c.requests.iter().enumerate() {
            assert_eq!(
                part.total(),
                none.requests[k].tokens,
                "{} request {k}",
                c.session.id
            );
        }
    }
    println!(
        "{}",
        report::composition_table(&compositions, 2).to_terminal()
    );

    let truths: Vec<_> = sessions.iter().filter_map(session_truth).collect();
    let (table, all) = report::truth_table(&truths);
    println!("{}", table.to_terminal());
    assert!(all.requests > 0, "the Claude Code files record usage");
    assert!(
        all.median_abs < 0.25,
        "the reconstruction is far from the recorded sizes: {all:?}"
    );
}
