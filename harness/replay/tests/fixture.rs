//! Replay, analysis and ground truth of the hand-written five-turn Claude Code session in
//! `fixtures/claude-code/five-turns.jsonl` (labels in `fixtures/labels/five-turns.yaml`):
//!
//! 1. "The login test fails now and then; ..." (2 tool calls) — unit login
//! 2. "The build takes ages, why? ..." (2 tool calls) — unit build
//! 3. "ok, turn it off" (1 call; short, so the lexical rule continues turn 2) — unit build
//! 4. "Now write a short changelog entry ..." (1 call) — unit changelog
//! 5. "thanks, commit it" (1 call) — unit changelog

use std::sync::Arc;

use harness_core::Purpose;
use harness_import::ImportedSession;
use harness_replay::{
    analyze_session, session_truth, JudgeKind, Labels, ReplayConfig, Replayer, SessionReplay,
};
use harness_replay::{estimate_prefix, none_context, sum_tokens, PrefixSource};

const FOLD: &str = "fold:card_after_tool_calls=2";

fn session() -> ImportedSession {
    let text = include_str!("../fixtures/claude-code/five-turns.jsonl");
    let mut s =
        harness_import::import("five-turns.jsonl", text, None).expect("the fixture imports");
    assert_eq!(s.len(), 1);
    s.remove(0)
}

fn labels() -> Labels {
    let mut l = Labels::new();
    l.add_file(
        "five-turns.yaml",
        include_str!("../fixtures/labels/five-turns.yaml"),
    )
    .expect("the labels read");
    l
}

fn replay(policies: &[&str], judge: JudgeKind, labels: Option<&Labels>) -> SessionReplay {
    replay_of(&session(), policies, judge, labels)
}

fn replay_of(
    s: &ImportedSession,
    policies: &[&str],
    judge: JudgeKind,
    labels: Option<&Labels>,
) -> SessionReplay {
    let config = ReplayConfig {
        policies: policies
            .iter()
            .map(|p| policies::parse_policy(p).unwrap())
            .collect(),
        judge,
        ..ReplayConfig::default()
    };
    Replayer::new(config).unwrap().replay(s, labels)
}

#[test]
fn the_fixture_has_five_turns_and_twelve_requests_with_usage() {
    let s = session();
    assert_eq!(s.human_turns.len(), 5);
    assert_eq!(s.requests.len(), 12);
    assert!(s.requests.iter().all(|r| r.usage.is_some()));
    let p = estimate_prefix(&s);
    assert_eq!(p.source, PrefixSource::Usage);
    assert_eq!(
        u64::from(p.tokens),
        15_400 - sum_tokens(s.context(&s.requests[0])),
        "the first request calibrates the prefix"
    );
}

#[test]
fn none_requests_are_the_prefix_plus_every_message_before_the_answer() {
    let s = session();
    let r = replay(&["none"], JudgeKind::Lexical, None);
    let none = r.policy("none").unwrap();
    assert_eq!(none.requests.len(), 12);
    let prefix = u64::from(estimate_prefix(&s).tokens);
    for (k, req) in none.requests.iter().enumerate() {
        let want = prefix + sum_tokens(&s.messages[..s.requests[k].context]);
        assert_eq!(req.tokens, want, "request {k}");
        assert_eq!(req.request, Some(k));
        assert_eq!(req.cached_tokens + req.written_tokens, req.tokens);
    }
    // Nothing is ever edited, so every request after the first reads the previous one from
    // the cache.
    for w in none.requests.windows(2) {
        assert_eq!(w[1].cached_tokens, w[0].tokens);
    }
    assert!(none.folds.is_empty() && none.compactions.is_empty() && none.cards == 0);
}

#[test]
fn trim_sends_less_once_old_results_exist() {
    let r = replay(&["none", "trim"], JudgeKind::Lexical, None);
    let (none, trim) = (r.policy("none").unwrap(), r.policy("trim").unwrap());
    for (a, b) in none.requests.iter().zip(&trim.requests) {
        assert!(
            b.tokens <= a.tokens,
            "turn {}: {} > {}",
            a.turn,
            b.tokens,
            a.tokens
        );
        if a.turn == 1 {
            assert_eq!(a.tokens, b.tokens, "nothing is old in turn 1");
        } else {
            assert!(b.tokens < a.tokens, "turn {}", a.turn);
        }
    }
    assert!(trim.total_input() < none.total_input());
}

#[test]
fn fold_folds_where_the_lexical_judge_says() {
    let r = replay(&["none", FOLD], JudgeKind::Lexical, None);
    let fold = r.policy(FOLD).unwrap();
    // Turn 2's card offers turn 1 (a long prompt starts new work: fold it); turn 3's offers
    // turn 2 ("ok, turn it off" is short: it continues turn 2, nothing is folded); turn 4's
    // offers 2-3 (fold them). Splices happen when the next prompt arrives.
    let folds: Vec<(u32, u32, u32)> = fold.folds.iter().map(|f| (f.turn, f.from, f.to)).collect();
    assert_eq!(folds, vec![(2, 1, 1), (4, 2, 3)]);
    assert_eq!(fold.cards, 3);
    assert_eq!(fold.folds_rejected, 0);
    assert!(fold
        .folds
        .iter()
        .all(|f| f.premature.is_none() && f.sha256.len() == 64));
    let none = r.policy("none").unwrap();
    let last = |p: &harness_replay::PolicyReplay| p.requests.last().unwrap().tokens;
    assert!(last(fold) < last(none), "{} vs {}", last(fold), last(none));
    // A fold rewrites what followed it in the cache; the first request after it reads less.
    assert!(fold.folds.iter().all(|f| f.rewritten_tokens > 0));
}

#[test]
fn labels_and_oracle_fold_the_labelled_units() {
    let l = labels();
    for judge in [JudgeKind::Labels, JudgeKind::Oracle] {
        let r = replay(&[FOLD], judge, Some(&l));
        assert_eq!(r.judge, judge);
        assert!(r.labelled);
        let fold = r.policy(FOLD).unwrap();
        let folds: Vec<(u32, u32, u32)> =
            fold.folds.iter().map(|f| (f.turn, f.from, f.to)).collect();
        assert_eq!(folds, vec![(2, 1, 1), (4, 2, 3)], "{judge:?}");
        assert_eq!(fold.premature_folds(), 0);
        assert!(fold.folds.iter().all(|f| f.premature == Some(false)));
    }
    // Without labels for the session, the labels judge falls back to lexical.
    let r = replay(&[FOLD], JudgeKind::Oracle, Some(&Labels::new()));
    assert_eq!(r.judge, JudgeKind::Lexical);
}

#[test]
fn compact_uses_a_mechanical_summary_when_the_window_fills() {
    let r = replay(&["none", "compact:window=17000"], JudgeKind::Lexical, None);
    let c = r.policy("compact:window=17000").unwrap();
    assert!(!c.compactions.is_empty());
    assert!(c
        .compactions
        .iter()
        .all(|e| !e.recorded_summary && e.output_tokens > 0));
    let calls = c
        .requests
        .iter()
        .filter(|q| q.purpose == Purpose::Compaction)
        .count();
    assert_eq!(calls, c.compactions.len());
    assert_eq!(c.sizes().len(), 12, "one turn request per recorded request");
}

#[test]
fn every_message_is_shared_not_copied() {
    let s = session();
    let r = Replayer::new(ReplayConfig::default()).unwrap();
    let before: Vec<usize> = s.messages.iter().map(Arc::strong_count).collect();
    let _ = r.replay(&s, None);
    let after: Vec<usize> = s.messages.iter().map(Arc::strong_count).collect();
    assert_eq!(before, after, "no replay keeps a message alive");
}

#[test]
fn analyze_splits_add_up_to_the_none_request() {
    let s = session();
    let r = replay(&["none"], JudgeKind::Lexical, None);
    let none = r.policy("none").unwrap();
    let a = analyze_session(&s, JudgeKind::Lexical, None);
    assert_eq!(a.requests.len(), 12);
    assert_eq!(
        a.units, 3,
        "login; build + 'ok, turn it off'; changelog + 'thanks, commit it'"
    );
    for (k, c) in a.requests.iter().enumerate() {
        assert_eq!(c.total(), none.requests[k].tokens, "request {k}");
    }
    // Turn 1: everything is in progress.
    assert_eq!(a.requests[0].conclusions + a.requests[0].steps, 0);
    // The first request of turn 4 (request 8): turns 1 and 2-3 are finished. Their conclusions
    // are turn 1's closing message and turn 3's (the last of the build unit); turn 2's closing
    // message is a step.
    let ctx = none_context(&s, 8);
    let closing = |needle: &str| {
        ctx.iter()
            .find(|m| m.text.starts_with(needle))
            .map(|m| u64::from(m.tokens))
            .unwrap()
    };
    let c = a.requests[8];
    assert_eq!(
        c.conclusions,
        closing("Fixed: the race") + closing("Turned off")
    );
    assert_eq!(
        c.in_progress,
        sum_tokens(
            &ctx.iter()
                .filter(|m| m.turn == 4)
                .cloned()
                .collect::<Vec<_>>()
        )
    );
    assert!(c.steps > c.conclusions);
}

#[test]
fn analyze_with_labels_follows_the_units() {
    let s = session();
    let l = labels();
    let a = analyze_session(&s, JudgeKind::Labels, Some(&l));
    assert_eq!(a.judge, JudgeKind::Labels);
    assert_eq!(a.units, 3);
    let lexical = analyze_session(&s, JudgeKind::Lexical, None);
    assert_eq!(
        a.total, lexical.total,
        "the labels agree with the lexical rule here"
    );
}

#[test]
fn ground_truth_compares_every_request_after_the_first() {
    let s = session();
    let t = session_truth(&s).expect("the fixture records usage");
    assert_eq!(t.points.len(), 11);
    for p in &t.points {
        let r = &s.requests[p.request];
        assert_eq!(p.recorded, r.usage.unwrap().prompt_tokens());
        assert_eq!(
            p.reconstructed,
            u64::from(t.prefix) + sum_tokens(s.context(r))
        );
    }
}

#[test]
fn bad_policies_are_refused_before_replaying() {
    let bad = |p: &str| {
        Replayer::new(ReplayConfig {
            policies: vec![policies::parse_policy(p).unwrap()],
            ..ReplayConfig::default()
        })
        .unwrap_err()
        .to_string()
    };
    assert!(policies::parse_policy("nope")
        .unwrap_err()
        .to_string()
        .contains("unknown policy"));
    assert!(bad("trim:kep=1").contains("no parameter `kep`"));
    assert!(Replayer::new(ReplayConfig {
        policies: Vec::new(),
        ..ReplayConfig::default()
    })
    .is_err());
}

/// The importer's compaction fixture: turn 1 ends with Claude Code's own compaction (a
/// `compact_boundary` and an `isCompactSummary` record), turn 2 reads from the summary on.
fn compacted() -> ImportedSession {
    let text = include_str!("../../import/fixtures/claude-code/compaction.jsonl");
    harness_import::import("compaction.jsonl", text, None)
        .expect("the fixture imports")
        .remove(0)
}

#[test]
fn a_recorded_compaction_is_not_replayed_but_its_summary_is_reused() {
    let s = compacted();
    assert_eq!(s.requests.len(), 3);
    let summary = s
        .messages
        .iter()
        .find(|m| m.kind == harness_core::MessageKind::Summary)
        .expect("the summary is imported")
        .clone();
    let r = replay_of(&s, &["none", "compact:window=10"], JudgeKind::Lexical, None);
    // none never compacted: its last request holds turn 1 whole and not the summary.
    let none = r.policy("none").unwrap();
    let prefix = u64::from(estimate_prefix(&s).tokens);
    assert_eq!(
        none.requests[2].tokens,
        prefix + sum_tokens(&none_context(&s, 2))
    );
    assert!(none_context(&s, 2).iter().all(|m| m.id != summary.id));
    // With a window of 10 tokens compact fires at every request with more than a summary and
    // a prompt: in turn 1 it takes the transcript's own summary of that turn; in turn 2 there is
    // none left, so the summary is mechanical.
    let c = r.policy("compact:window=10").unwrap();
    let kinds: Vec<(u32, bool)> = c
        .compactions
        .iter()
        .map(|e| (e.turn, e.recorded_summary))
        .collect();
    assert_eq!(kinds, vec![(1, true), (2, false)]);
    assert_eq!(
        c.compactions[0].output_tokens,
        u64::from(summary.tokens - harness_core::tokens::MESSAGE_OVERHEAD)
    );
    // The ground truth reads what the model read: from the summary on.
    let t = session_truth(&s).unwrap();
    let last = t.points.last().unwrap();
    assert_eq!(last.request, 2);
    assert_eq!(
        last.reconstructed,
        u64::from(t.prefix) + sum_tokens(s.context(&s.requests[2]))
    );
}
