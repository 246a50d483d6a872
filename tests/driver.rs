//! One policy driver for every mode: a policy defined here, in the test file (not in
//! `policies/`), registered beside the built-in ones, runs under the live runner, under replay
//! and in the judgement replay with no change to any of them, and the three make the same folds
//! of the same recorded turns.

use std::sync::{Arc, Once};

use harness_core::fold;
use harness_core::judge::Judge;
use harness_core::judge::{replay_items, Origin, Recorded, ReplayOptions};
use harness_core::policy::{ArchiveRef, Plan, Policy, Splice, SpliceKind};
use harness_core::Context;
use harness_core::Event;
use harness_core::{Message, MessageKind};
use harness_replay::session_of_transcript;
use harness_replay::{ReplayConfig, Replayer};
use harness_runner::cell::CellOptions;
use policies::registry::{self, Entry, Registry};

use crate::helpers::{run_one, task};

/// Folds every odd turn when the next one begins; sends the context as it is.
struct FoldOdd;

impl Policy for FoldOdd {
    fn name(&self) -> String {
        "test-fold-odd".into()
    }

    fn plan(&mut self, ctx: &Context, _prefix_tokens: u32) -> Plan {
        Plan::Send {
            messages: ctx.messages.clone(),
            action: None,
        }
    }

    fn end_turn(&mut self, ctx: &Context, next_user: Option<&str>) -> Vec<Splice> {
        let t = ctx.turn;
        if next_user.is_none() || t.is_multiple_of(2) {
            return Vec::new();
        }
        let Some((start, end)) = ctx.turn_range(t, t) else {
            return Vec::new();
        };
        vec![Splice {
            from: t,
            to: t,
            messages: ctx.messages[start..end].to_vec(),
            kind: SpliceKind::Fold,
        }]
    }

    fn apply_splice(
        &mut self,
        ctx: &mut Context,
        splice: &Splice,
        archive: &ArchiveRef,
    ) -> Option<Arc<Message>> {
        fold::splice_fold(ctx, splice.from, splice.to, &archive.path, &archive.sha256)
    }
}

/// Registers `test-fold-odd` (once per test process) in the registry the program uses (the
/// built-in policies and `exec:`, as the binary installs them), so every other name still parses.
fn register() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let mut r = harness_runner::exec_policy::with_exec(Registry::builtin());
        r.register(
            Entry::new("test-fold-odd", |_params, _build| {
                Ok(Box::new(FoldOdd) as Box<dyn Policy>)
            })
            .summary("folds every odd turn when the next begins (a test's own policy)")
            .source("tests/driver.rs"),
        )
        .expect("a new name registers");
        registry::install(r);
    });
}

/// A fold: its range, the archive's sha256, the tokens folded and the result's.
type FoldKey = (u32, u32, String, u64, u64);

#[test]
fn a_policy_of_the_test_file_folds_the_same_turns_live_in_replay_and_in_the_judgement_replay() {
    register();
    let t = task("return-to-login");
    assert!(t.spec.turns.len() >= 4, "the task has turns to fold");
    let (live, _) = run_one(&t, "test-fold-odd", Judge::Eager, CellOptions::default());
    assert_eq!(live.record.error, None);
    assert_eq!(live.record.policy, "test-fold-odd");
    let live_folds: Vec<FoldKey> = live
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Fold {
                from,
                to,
                sha256,
                folded_tokens,
                result_tokens,
                ..
            } => Some((*from, *to, sha256.clone(), *folded_tokens, *result_tokens)),
            _ => None,
        })
        .collect();
    let odd: Vec<u32> = (1..t.spec.turns.len() as u32)
        .filter(|t| !t.is_multiple_of(2))
        .collect();
    assert_eq!(
        live_folds.iter().map(|f| f.0).collect::<Vec<_>>(),
        odd,
        "live: every odd turn with a turn after it is folded"
    );
    assert_eq!(live.archives.len(), odd.len(), "each fold archived");

    // The recorded transcript of the live cell, without the messages the policy made (its fold
    // results): what the model and the tools did, as a recording holds it.
    let recorded: Vec<Arc<Message>> = live
        .transcript
        .iter()
        .filter(|m| !matches!(m.kind, MessageKind::FoldResult { .. }))
        .cloned()
        .collect();
    let session = session_of_transcript("live-cell", recorded.clone());
    let replayer = Replayer::new(ReplayConfig {
        policies: vec![policies::parse_policy("test-fold-odd").expect("registered")],
        ..ReplayConfig::default()
    })
    .expect("the policy builds");
    let replayed = replayer.replay(&session, None);
    let under = replayed.policy("test-fold-odd").expect("replayed");
    assert_eq!(under.error, None);
    let replay_folds: Vec<FoldKey> = under
        .folds
        .iter()
        .map(|f| {
            (
                f.from,
                f.to,
                f.sha256.clone(),
                f.folded_tokens,
                f.result_tokens,
            )
        })
        .collect();
    assert_eq!(
        replay_folds, live_folds,
        "replay folds what the live cell folded"
    );

    // The judgement replay: each item's context holds the folds made before its turn, with the
    // live archives' sha256.
    let no_labels: Vec<Option<String>> = Vec::new();
    let origin = Origin {
        source: "task",
        session: "live-cell",
        file: "transcript.jsonl",
        labels: &no_labels,
        words: &no_labels,
    };
    let items = replay_items(
        Recorded {
            origin,
            messages: &recorded,
        },
        policies::build(&policies::parse_policy("test-fold-odd").unwrap(), 200_000).unwrap(),
        &ReplayOptions {
            prefix_tokens: 0,
            max_tool_output: 10_000,
            archive_dir: harness_core::ARCHIVE_DIR.to_string(),
        },
    );
    assert!(!items.is_empty(), "even turns stay on offer");
    for item in &items {
        let folded: Vec<String> = item
            .messages
            .iter()
            .filter_map(|m| match &m.kind {
                MessageKind::FoldResult { sha256, .. } => Some(sha256.clone()),
                _ => None,
            })
            .collect();
        let expected: Vec<String> = live_folds
            .iter()
            .filter(|f| f.1 < item.current)
            .map(|f| f.2.clone())
            .collect();
        assert_eq!(folded, expected, "item at turn {}", item.current);
        assert!(
            item.turns.iter().all(|x| x.turn.is_multiple_of(2)),
            "only even turns stay on offer at turn {}: {:?}",
            item.current,
            item.turns.iter().map(|x| x.turn).collect::<Vec<_>>()
        );
    }
}
