//! The net cost after recovery on a hand-built session whose later responses use what turn 1's
//! tool result showed, so every recovery can be worked out by hand:
//!
//! 1. read `shop/discount.py` → `MEMBER_RATE = 0.15`, `TAX_CODE_77 = 'x'`,
//!    `SHIPPING_ZONE_9 = 'north'`
//! 2. another task: read `README.md`
//! 3. an edit that copies `MEMBER_RATE = 0.15` (C1), then a closing message naming
//!    `TAX_CODE_77` (C2)
//! 4. a closing message naming `SHIPPING_ZONE_9` (D1); turn 4 has no tool result
//!
//! Every prompt is longer than 60 characters, so the lexical judge starts a new unit at each and
//! `fold:card_after_tool_calls=1` folds turn 1 at the end of turn 2 and turn 2 at the end of
//! turn 3.

use std::sync::Arc;

use harness_core::behaviour::{Means, Profile};
use harness_core::{Message, ToolCall};
use harness_import::{Format, HumanTurn, ImportedSession, RecordedRequest};
use harness_replay::{JudgeKind, PolicyReplay, ReplayConfig, Replayer, SessionReplay};
use serde_json::json;

const R1: &str = "MEMBER_RATE = 0.15\nTAX_CODE_77 = 'x'\nSHIPPING_ZONE_9 = 'north'\n";

fn session() -> ImportedSession {
    let mut messages: Vec<Arc<Message>> = Vec::new();
    let mut requests = Vec::new();
    let mut human_turns = Vec::new();
    let mut prompt = |t: u32, text: &str, m: &mut Vec<Arc<Message>>| {
        human_turns.push(HumanTurn {
            turn: t,
            message: m.len(),
            id: None,
            text: text.into(),
        });
        m.push(Message::user(t, text, None));
    };
    let mut answer = |m: &mut Vec<Arc<Message>>, msg: Arc<Message>| {
        requests.push(RecordedRequest {
            message: m.len(),
            context: m.len(),
            context_start: 0,
            response_id: None,
            usage: None,
            model: None,
        });
        m.push(msg);
    };
    let call = |id: &str, name: &str, args: serde_json::Value| ToolCall {
        id: id.into(),
        name: name.into(),
        args,
    };
    prompt(
        1,
        "members say their discount is wrong at checkout, please look into it for me",
        &mut messages,
    );
    let read = call("c1", "Read", json!({"file_path": "shop/discount.py"}));
    answer(&mut messages, Message::assistant(1, "", vec![read.clone()]));
    messages.push(Message::tool_result(1, &read, R1, false));
    answer(&mut messages, Message::assistant(1, "I read it.", vec![]));
    prompt(
        2,
        "separately, can you check what the readme says about installing this whole thing",
        &mut messages,
    );
    let readme = call("c2", "Read", json!({"file_path": "README.md"}));
    answer(
        &mut messages,
        Message::assistant(2, "", vec![readme.clone()]),
    );
    messages.push(Message::tool_result(2, &readme, "pip install shop", false));
    answer(
        &mut messages,
        Message::assistant(2, "It says pip install.", vec![]),
    );
    prompt(
        3,
        "yes, fix the discount now and go by the documentation, twenty percent is what we promised",
        &mut messages,
    );
    let edit = call(
        "c3",
        "Edit",
        json!({"file_path": "shop/discount.py", "old_string": "MEMBER_RATE = 0.15", "new_string": "MEMBER_RATE = 0.20"}),
    );
    answer(&mut messages, Message::assistant(3, "", vec![edit.clone()]));
    messages.push(Message::tool_result(3, &edit, "ok", false));
    answer(
        &mut messages,
        Message::assistant(3, "Fixed; TAX_CODE_77 stays as it is.", vec![]),
    );
    prompt(
        4,
        "and which shipping zone does the same file configure, just tell me, no change please",
        &mut messages,
    );
    answer(
        &mut messages,
        Message::assistant(4, "SHIPPING_ZONE_9 is the north zone.", vec![]),
    );
    ImportedSession {
        id: "recovery".into(),
        format: Format::ClaudeCode,
        source: "recovery.jsonl".into(),
        parent: None,
        system: None,
        messages,
        requests,
        events: Vec::new(),
        human_turns,
        dropped_prefix: 0,
        warnings: Vec::new(),
        started_ms: None,
        ended_ms: None,
        cwd: None,
        message_ms: Vec::new(),
    }
}

const FOLD: &str = "fold:card_after_tool_calls=1";
const PLACEHOLDER: &str = "trim:mode=placeholder";

/// The replay under a profile in which agents always recover, by `means` alone.
fn replay_with(recover: f64, means: Means) -> SessionReplay {
    Replayer::new(ReplayConfig {
        policies: ["none", "trim", PLACEHOLDER, FOLD]
            .iter()
            .map(|p| policies::parse_policy(p).unwrap())
            .collect(),
        judge: JudgeKind::Lexical,
        behaviour: Arc::new(Profile::uniform("test", recover, means)),
        ..ReplayConfig::default()
    })
    .unwrap()
    .replay(&session(), None)
}

/// Re-reads only (what the placeholder's cleared results need).
fn rereads() -> Means {
    Means {
        reread: 1.0,
        ..Means::default()
    }
}

/// Archive reads only (what a fold's archive allows).
fn archive_reads() -> Means {
    Means {
        archive: 1.0,
        ..Means::default()
    }
}

/// The size of a policy's request for recorded request `k` (C1 = 4, C2 = 5, D1 = 6).
fn size(p: &PolicyReplay, k: usize) -> u64 {
    p.requests
        .iter()
        .find(|r| r.request == Some(k))
        .unwrap()
        .tokens
}

/// The tokens of a recovery as the model defines it: the call message and its result message.
fn recovery_tokens(call: ToolCall, result: &str) -> u64 {
    let result = Message::tool_result(3, &call, result, false);
    let asked = Message::assistant(3, "", vec![call]);
    u64::from(asked.tokens) + u64::from(result.tokens)
}

fn grep(id: &str, pattern: &str, output: &str) -> u64 {
    recovery_tokens(
        ToolCall {
            id: id.into(),
            name: "grep".into(),
            args: json!({"pattern": pattern, "path": ".foldbench/archive"}),
        },
        output,
    )
}

#[test]
fn none_and_trim_pay_nothing_and_trim_loses_every_reference_when_agents_never_recover() {
    let r = replay_with(0.0, rereads());
    let none = r.policy("none").unwrap();
    assert_eq!(none.recovery, Default::default());
    assert_eq!(none.tokens_incl_recovery(), none.total_input());
    let trim = r.policy("trim").unwrap();
    assert_eq!(
        trim.recovery.gone, 5,
        "C1: shop/discount.py, MEMBER_RATE, 0.15; C2: TAX_CODE_77; D1: SHIPPING_ZONE_9"
    );
    assert_eq!(
        (trim.recovery.recovered, trim.recovery.tokens()),
        (0, 0),
        "a loss, not a cost"
    );
    assert_eq!(trim.tokens_incl_recovery(), trim.total_input());
}

#[test]
fn a_reread_is_carried_while_its_turn_keeps_its_results() {
    let r = replay_with(1.0, rereads());
    let p = r.policy(PLACEHOLDER).unwrap();
    let rec = p.recovery;
    // C1: MEMBER_RATE is hidden (turn 1's result is cleared, its call kept): re-run c1, whose
    // output also shows 0.15 (covered). C2: TAX_CODE_77 is in the re-run's output, still carried
    // (anchored to the edit's result, turn 3's): covered. D1: turn 4 clears turn 3's results,
    // the re-run goes with them, and SHIPPING_ZONE_9 needs a second re-run.
    let rerun = |id: &str| {
        recovery_tokens(
            ToolCall {
                id: id.into(),
                name: "Read".into(),
                args: json!({"file_path": "shop/discount.py"}),
            },
            R1,
        )
    };
    let (x, y) = (rerun("recovery-1"), rerun("recovery-2"));
    // The call: 4 (a message) + 4 (a call) + 1 (`Read`) + 9 (its arguments) = 18; the result:
    // 4 + 27 (R1's text) = 31.
    assert_eq!(x, 18 + 31);
    assert_eq!(y, x);
    assert_eq!(
        (
            rec.round_trips,
            rec.rereads,
            rec.recovered,
            rec.covered,
            rec.gone
        ),
        (2, 2, 2, 2, 0)
    );
    assert_eq!(rec.fetched_tokens, x + y);
    assert_eq!(rec.carried_tokens, x + x + y, "x in C1 and C2, y in D1");
    assert_eq!(
        rec.round_trip_tokens,
        size(p, 4) + size(p, 6),
        "a request as large as C1's and one as large as D1's; nothing carried before either"
    );
    assert_eq!((size(p, 4), size(p, 6)), (129, 215));
    assert_eq!(rec.round_trip_tokens, 129 + 215);
    assert_eq!(
        p.tokens_incl_recovery(),
        p.total_input() + (129 + 215) + 3 * 49
    );
    // In dollars at the default price ($3 input, write ×1.25, read ×0.1): the round trips read
    // their prefixes from the cache; x is written in C1 and read in C2, y written in D1.
    let dollars = 3e-6 * ((129.0 + 215.0) * 0.1 + 49.0 * 1.25 + 49.0 * 0.1 + 49.0 * 1.25);
    assert!((rec.cost - dollars).abs() < 1e-12, "{} {dollars}", rec.cost);
    assert!(
        (p.cost_incl_recovery_at(harness_core::behaviour::End::Point) - (p.cost() + dollars)).abs()
            < 1e-12
    );
}

#[test]
fn an_archive_grep_shows_its_lines_and_rides_along_until_its_turn_is_folded() {
    let r = replay_with(1.0, archive_reads());
    let p = r.policy(FOLD).unwrap();
    let rec = p.recovery;
    let file = ".foldbench/archive/fold-turns-001-001.txt";
    // C1: MEMBER_RATE and 0.15 are in turn 1's archive; the grep for MEMBER_RATE shows both.
    let g1 = grep(
        "recovery-1",
        "MEMBER_RATE",
        &format!("{file}:1:MEMBER_RATE = 0.15\n"),
    );
    // C2: TAX_CODE_77 is not in g1's line: a second grep, one more round trip.
    let g2 = grep(
        "recovery-2",
        "TAX_CODE_77",
        &format!("{file}:2:TAX_CODE_77 = 'x'\n"),
    );
    // D1: turn 3 is not folded yet, so g1 and g2 are still there; SHIPPING_ZONE_9 needs a third.
    let g3 = grep(
        "recovery-3",
        "SHIPPING_ZONE_9",
        &format!("{file}:3:SHIPPING_ZONE_9 = 'north'\n"),
    );
    // Each call: 4 + 4 + 1 (`grep`) + its arguments (14, 16, 16 tokens); each result: 4 + its
    // line (24, 23, 24).
    assert_eq!((g1, g2, g3), (9 + 14 + 28, 9 + 16 + 27, 9 + 16 + 28));
    assert_eq!(
        (
            rec.round_trips,
            rec.archive_greps,
            rec.recovered,
            rec.covered,
            rec.gone
        ),
        (3, 3, 3, 1, 0)
    );
    assert_eq!(rec.fetched_tokens, g1 + g2 + g3);
    assert_eq!(
        rec.carried_tokens,
        g1 + (g1 + g2) + (g1 + g2 + g3),
        "C1 carries g1, C2 g1 and g2, D1 all three"
    );
    assert_eq!(rec.carried_tokens, 51 + (51 + 52) + (51 + 52 + 53));
    assert_eq!((size(p, 4), size(p, 5), size(p, 6)), (550, 597, 717));
    assert_eq!(
        rec.round_trip_tokens,
        550 + (597 + 51) + (717 + 51 + 52),
        "each round trip is the policy's request with what is carried before it"
    );
    assert_eq!(
        p.tokens_incl_recovery(),
        p.total_input() + rec.round_trip_tokens + rec.carried_tokens
    );
}

#[test]
fn the_table_the_verdict_and_the_frontier_count_recovery() {
    let r = replay_with(1.0, rereads());
    let labels: Vec<String> = ["none", "trim", PLACEHOLDER, FOLD]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let rows = harness_replay::report::summarize(std::slice::from_ref(&r), &labels);
    let none = r.policy("none").unwrap().total_input();
    let p = r.policy(PLACEHOLDER).unwrap();
    // The placeholder's recovery, worked out above: two round trips (129 + 215 tokens) and the
    // re-run (49 tokens) carried in three requests.
    let incl = p.total_input() + (129 + 215) + 3 * 49;
    let row = rows.iter().find(|x| x.policy == PLACEHOLDER).unwrap();
    assert_eq!(row.tokens_incl_recovery, incl);
    assert_eq!(row.incl_recovery_ratio, Some(incl as f64 / none as f64));
    // trim (drop), whose calls are gone, re-explores: C1's MEMBER_RATE by a re-read of
    // shop/discount.py (its 0.15 then covered), C2's TAX_CODE_77 covered by it (turn 3 keeps its
    // results), D1's SHIPPING_ZONE_9 by a second re-read (turn 4 dropped turn 3's); only C1's
    // `shop/discount.py`, which no tool result showed (the call's own argument), is gone: 1 of
    // 5 over 7 responses. The placeholder's are all recovered.
    let trim = rows.iter().find(|x| x.policy == "trim").unwrap();
    assert_eq!(
        (
            trim.recovery.recovered,
            trim.recovery.covered,
            trim.recovery.gone
        ),
        (2, 2, 1)
    );
    assert!((trim.gone_per_100_responses - 100.0 / 7.0).abs() < 1e-9);
    assert_eq!(row.gone_per_100_responses, 0.0);
    // The table shows both figures side by side, each with its Σ× none (input, incl. recovery).
    let t = harness_replay::report::policy_table(&rows, false);
    let col = |h: &str, nth: usize| {
        t.headers
            .iter()
            .enumerate()
            .filter(|(_, x)| *x == h)
            .nth(nth)
            .unwrap()
            .0
    };
    let line = t.rows.iter().find(|x| x[0] == PLACEHOLDER).unwrap();
    assert_eq!(col("tokens incl. recovery", 0), col("total input", 0) + 2);
    assert_eq!(
        line[col("tokens incl. recovery", 0)],
        harness_core::fold::group_thousands(incl)
    );
    assert_eq!(
        line[col("incl. recovery Σ× none", 0)],
        format!("{:.2}×", incl as f64 / none as f64)
    );
    // The verdict's cost is the same Σ× (one session: no spread), and its frontier is the
    // arms no other beats: the placeholder loses nothing; trim loses 14.3 per 100 responses.
    let answers = harness_replay::headline::answers(std::slice::from_ref(&r), &rows);
    let a = answers.iter().find(|a| a.arm == PLACEHOLDER).unwrap();
    assert_eq!(a.tokens.point, incl as f64 / none as f64);
    assert_eq!(
        a.before_recovery,
        Some(p.total_input() as f64 / none as f64)
    );
    let points = harness_replay::headline::points(&answers);
    for pt in &points {
        let beaten = points.iter().any(|q| {
            q.arm != pt.arm
                && q.cost <= pt.cost
                && q.loss <= pt.loss
                && (q.cost < pt.cost || q.loss < pt.loss)
        });
        assert_eq!(pt.frontier, !beaten, "{pt:?} in {points:?}");
    }
    let lines = harness_report::headline::lines(&answers);
    assert!(lines[0].starts_with("none:"), "{lines:?}");
    assert!(
        lines.iter().any(|l| l.starts_with("trim:")
            && l.contains("loses 14.3 refs gone/100 resp (1 of 5 hidden; 4 recovered)")),
        "{lines:?}"
    );
}

#[test]
fn the_low_and_high_ends_of_the_profile_bracket_the_point_with_the_same_draws() {
    let mut profile = Profile::uniform("range", 0.5, rereads());
    for k in [&mut profile.summary, &mut profile.none]
        .into_iter()
        .flatten()
    {
        k.recover = harness_core::behaviour::Rate {
            point: 0.5,
            lo: 0.0,
            hi: 1.0,
        };
    }
    let r = Replayer::new(ReplayConfig {
        policies: vec![policies::parse_policy(PLACEHOLDER).unwrap()],
        judge: JudgeKind::Lexical,
        behaviour: Arc::new(profile),
        ..ReplayConfig::default()
    })
    .unwrap()
    .replay(&session(), None);
    let p = r.policy(PLACEHOLDER).unwrap();
    let (lo, hi) = (p.recovery_range.low, p.recovery_range.high);
    // At the low end nobody recovers: every hidden reference is gone, nothing is paid.
    assert_eq!((lo.recovered, lo.covered, lo.tokens()), (0, 0, 0));
    assert_eq!(lo.gone, p.hidden.total());
    // At the high end it is the always-recovering replay above.
    let always = replay_with(1.0, rereads());
    assert_eq!(hi, always.policy(PLACEHOLDER).unwrap().recovery);
    // The point lies between, on each count.
    let pt = p.recovery;
    assert!(
        lo.gone >= pt.gone && pt.gone >= hi.gone,
        "{lo:?} {pt:?} {hi:?}"
    );
    assert!(lo.tokens() <= pt.tokens() && pt.tokens() <= hi.tokens());
    assert_eq!(
        p.tokens_incl_recovery_at(harness_core::behaviour::End::High),
        p.total_input() + hi.tokens()
    );
}
