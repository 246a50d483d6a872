//! Hidden references against the live runner: the task suite's `none` transcripts replayed
//! under `trim` flag the facts the live `trim` cells had to fetch again.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use harness_core::spec::TurnSpec;
use harness_core::{Message, Role};
use harness_replay::session_of_transcript;
use harness_replay::{JudgeKind, ReplayConfig, Replayer};
use harness_runner::cell_folder;

use crate::helpers::{all_tasks, run_matrix};

/// The facts a turn needs (its own and its steps'), read through the spec.
fn needed(turn: &TurnSpec) -> Vec<String> {
    turn.needs
        .iter()
        .chain(turn.script.iter().flat_map(|s| &s.needs))
        .map(|f| f.fact.clone())
        .collect()
}

fn transcript(run: &Path, cell: &str) -> Vec<Arc<Message>> {
    let path = run
        .join("cells")
        .join(cell_folder(cell))
        .join("transcript.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Message>(l).unwrap().sealed())
        .collect()
}

/// The facts turn `n` of a live transcript fetched again: the fact is in the result of a call
/// of an earlier turn, and turn `n` makes the same call (same tool, same arguments) again.
fn fetched_again(messages: &[Arc<Message>], n: u32, fact: &str) -> bool {
    let call_of = |m: &Message| {
        let id = m.tool_call_id.as_deref()?;
        messages
            .iter()
            .flat_map(|a| &a.tool_calls)
            .find(|c| c.id == id)
            .map(|c| (c.name.clone(), c.canonical_args()))
    };
    let sources: HashSet<(String, String)> = messages
        .iter()
        .filter(|m| m.role == Role::Tool && m.turn < n && m.text.contains(fact))
        .filter_map(|m| call_of(m))
        .collect();
    messages
        .iter()
        .filter(|m| m.role == Role::Assistant && m.turn == n)
        .flat_map(|m| &m.tool_calls)
        .any(|c| sources.contains(&(c.name.clone(), c.canonical_args())))
}

#[test]
fn replayed_trim_flags_the_facts_live_trim_fetched_again() {
    let out = tempfile::tempdir().unwrap();
    let tasks = all_tasks();
    let specs: Vec<_> = tasks.iter().map(|t| Arc::clone(&t.spec)).collect();
    // The live cells trim with a placeholder: the calls stay in view, so the sim can re-run the
    // ones whose results it lost (under `drop` it sees no call to repeat, and fetches few facts
    // again).
    run_matrix(
        tasks,
        &["none", "trim:mode=placeholder"],
        "sim",
        &[1],
        out.path(),
    );
    let replayer = Replayer::new(ReplayConfig {
        policies: vec![
            policies::parse_policy("none").unwrap(),
            policies::parse_policy("trim:mode=placeholder").unwrap(),
        ],
        judge: JudgeKind::Lexical,
        ..ReplayConfig::default()
    })
    .unwrap();
    let (mut facts, mut flagged) = (0usize, 0usize);
    let mut missed = Vec::new();
    for spec in &specs {
        let none = transcript(out.path(), &format!("{}/none/sim/1", spec.name));
        let trim = transcript(
            out.path(),
            &format!("{}/trim:mode=placeholder/sim/1", spec.name),
        );
        let replay = replayer.replay(&session_of_transcript(&spec.name, none.clone()), None);
        let base = replay.policy("none").unwrap();
        assert_eq!(base.hidden.total(), 0, "{}: none hides nothing", spec.name);
        let hidden = replay.policy("trim:mode=placeholder").unwrap();
        for (i, turn) in spec.turns.iter().enumerate() {
            let n = i as u32 + 1;
            for fact in needed(turn) {
                if !fetched_again(&trim, n, &fact) {
                    continue;
                }
                facts += 1;
                // Flagged: a hidden reference of the turn is part of the fact, or comes from an
                // earlier tool result that shows the fact (the result the live cell re-ran).
                let hit = hidden
                    .requests
                    .iter()
                    .filter(|r| r.turn == n)
                    .flat_map(|r| &r.hidden)
                    .any(|h| {
                        fact.contains(&h.text)
                            || none.iter().any(|m| {
                                m.role == Role::Tool
                                    && m.turn < n
                                    && m.text.contains(&h.text)
                                    && m.text.contains(&fact)
                            })
                    });
                if hit {
                    flagged += 1;
                } else {
                    missed.push(format!("{} turn {n}: {fact:?}", spec.name));
                }
            }
        }
    }
    assert!(
        facts >= 10,
        "the live trim cells fetch facts again: {facts}"
    );
    let recall = flagged as f64 / facts as f64;
    eprintln!("suite recall: {flagged}/{facts} = {recall:.3}; missed: {missed:#?}");
    // Measured: 39 of 51 (0.765; 45 of 58 under `drop` before issue 31). The misses are facts the
    // answers use as one- or two-digit values, derive rather than copy, or copy after the turn
    // shows them again or from a message trim keeps, while the sim needs the whole scripted line
    // (docs/replay.md, "Recall against the live runner", classifies them). Before the shell's
    // environment kept clocks out of the commands' output (README, "Determinism") the figure
    // moved between runs (36 of 51 and 37 of 48 in a loaded CI container); the bound sits below
    // those, so it catches a judge that stops seeing re-fetched facts.
    assert!(
        recall >= 0.65,
        "recall {flagged}/{facts} = {recall:.2} < 0.65; missed: {missed:#?}"
    );
}
