//! Tests of the judgement dataset, gold and scores.

use super::*;
use crate::message::ToolCall;

fn labels(units: &[&str]) -> Vec<Option<String>> {
    units.iter().map(|u| Some(u.to_string())).collect()
}

/// A session of `units.len()` turns, one read per turn, users from `users`.
fn session(users: &[&str], turns: u32) -> Vec<Arc<Message>> {
    let mut out = Vec::new();
    for t in 1..=turns {
        out.push(Message::user(t, users[t as usize - 1], None));
        let k = ToolCall {
            id: format!("c{t}"),
            name: "read_file".into(),
            args: json!({"path": format!("f{t}.py")}),
        };
        out.push(Message::assistant(t, "", vec![k.clone()]));
        out.push(Message::tool_result(t, &k, "x".repeat(50), false));
        out.push(Message::assistant(t, format!("done {t}"), vec![]));
    }
    out
}

fn item(users: &[&str], units: &[&str], current: u32) -> Item {
    let l = labels(units);
    let msgs = session(users, current - 1);
    build_item(
        Origin {
            source: SOURCE_TASK,
            session: "hand",
            file: "hand.yaml",
            labels: &l,
            words: &[],
        },
        &msgs,
        current,
        users[current as usize - 1],
        false,
        20,
    )
    .unwrap()
}

const USERS: [&str; 6] = [
    "the login test fails now and then, find out why, it is annoying everyone on the team",
    "the build takes ages, why? look at the build script and the CI config please",
    "ok, turn it off",
    "now a different thing: the README is outdated, update the install section for us",
    "and the changelog",
    "something else entirely, a long message that starts a brand new unit of work here",
];

#[test]
fn gold_closes_units_no_later_turn_continues() {
    // login, build, build | readme (current 4): login and build are closed.
    let it = item(&USERS, &["login", "build", "build", "readme", "readme"], 4);
    assert_eq!(it.gold.closed, vec![(1, 3)]);
    assert_eq!(
        it.gold.units,
        vec![
            GoldUnit {
                unit: "login".into(),
                turns: vec![1]
            },
            GoldUnit {
                unit: "build".into(),
                turns: vec![2, 3]
            }
        ]
    );
    assert!(it.gold.open.is_empty());
    assert_eq!(it.gold.boundary, Some(true));
    assert_eq!(it.gold.continues, Some(false));
    // At turn 3 ("ok, turn it off") build continues: only login is closed, turn 2 is open.
    let it = item(&USERS, &["login", "build", "build", "readme"], 3);
    assert_eq!(it.gold.closed, vec![(1, 1)]);
    assert_eq!(it.gold.open, vec![2]);
    assert_eq!(it.gold.boundary, Some(false));
    assert_eq!(it.gold.continues, Some(true));
}

#[test]
fn a_unit_that_returns_later_stays_open() {
    // a, b, a, c: at turn 3 unit a returns, b is closed, a (turn 1) is open.
    let it = item(&USERS, &["a", "b", "a", "c"], 3);
    assert_eq!(it.gold.closed, vec![(2, 2)]);
    assert_eq!(it.gold.open, vec![1]);
    assert_eq!(it.gold.boundary, Some(true), "b ended with turn 2");
    assert_eq!(it.gold.continues, Some(false));
    // Unlabelled turns are never closed.
    let l = vec![Some("a".to_string()), None, Some("c".to_string())];
    let g = gold(&[1, 2], 3, &l);
    assert_eq!(g.closed, vec![(1, 1)]);
    assert_eq!(g.open, vec![2]);
    assert_eq!(g.boundary, None);
    assert_eq!(g.continues, None);
}

#[test]
fn build_item_counts_and_cuts() {
    let it = item(&USERS, &["login", "build", "build", "readme"], 4);
    assert_eq!(it.offered(), vec![1, 2, 3]);
    assert_eq!(it.turns[0].paths, vec!["f1.py"]);
    assert_eq!(it.turns[0].closing, "done 1");
    assert_eq!(it.since_fold.tool_calls, 3);
    assert_eq!(it.truncated, 3, "three 50-character outputs cut to 20");
    assert!(it.messages[2].text.contains("characters cut"));
    assert!(
        it.turns[0].tokens > u64::from(it.messages[0].tokens + it.messages[2].tokens),
        "sizes are measured before the cut"
    );
    assert_eq!(card_turns_of(&it), vec![1, 2, 3]);
    assert!(it.check().is_ok());
    let mut bad = it.clone();
    bad.gold.closed = vec![(1, 1)];
    assert!(bad
        .check()
        .unwrap_err()
        .to_string()
        .contains("does not follow"));
}

fn card_turns_of(it: &Item) -> Vec<u32> {
    fold::card_turns(&it.card())
}

fn call(args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: "x".into(),
        name: "fold_unit".into(),
        args,
    }
}

#[test]
fn scores_exact_partial_premature_illegal_and_ignore() {
    // login, build, build | readme: closed units login (1) and build (2-3).
    let it = item(&USERS, &["login", "build", "build", "readme"], 4);
    let ctx = it.context();
    let j = judge_calls(&it, &ctx, &[call(json!({"from": 1, "to": 3}))]);
    assert!(j.score.exact);
    assert_eq!((j.score.folded_units, j.score.missed_units), (2, 0));
    assert_eq!(j.calls[0].verdict, Verdict::Exact);

    let j = judge_calls(&it, &ctx, &[call(json!({"from": 1, "to": 2}))]);
    assert!(!j.score.exact);
    assert_eq!(j.calls[0].verdict, Verdict::Partial);
    assert_eq!((j.score.folded_units, j.score.missed_units), (1, 1));

    let j = judge_calls(&it, &ctx, &[]);
    assert!(j.score.ignored && !j.score.exact);
    assert_eq!(j.score.missed_units, 2);

    // Illegal: reversed, the turn in progress, overlap with a fold of the same answer,
    // unreadable arguments. Strings of digits are read as the policy reads them.
    let j = judge_calls(
        &it,
        &ctx,
        &[
            call(json!({"from": 3, "to": 1})),
            call(json!({"from": 2, "to": 4})),
            call(json!({"from": "1", "to": "1"})),
            call(json!({"from": 1, "to": 2})),
            call(json!({"from": "x"})),
        ],
    );
    let v: Vec<Verdict> = j.calls.iter().map(|c| c.verdict).collect();
    assert_eq!(
        v,
        vec![
            Verdict::Illegal,
            Verdict::Illegal,
            Verdict::Exact,
            Verdict::Illegal,
            Verdict::Illegal
        ]
    );
    assert!(j.calls[0].reason.contains("reversed"));
    assert!(j.calls[1].reason.contains("in progress"));
    assert!(j.calls[3].reason.contains("already folded"));
    assert_eq!(j.score.illegal, 4);
    assert_eq!(j.score.folded_units, 1);

    // Premature: at turn 3 build is open.
    let it3 = item(&USERS, &["login", "build", "build", "readme"], 3);
    let j = judge_calls(&it3, &it3.context(), &[call(json!({"from": 1, "to": 2}))]);
    assert_eq!(j.calls[0].verdict, Verdict::Premature);
    assert_eq!(j.score.premature, 1);
    assert_eq!(
        j.score.folded_units, 0,
        "a closed unit in a premature fold is missed"
    );
}

#[test]
fn baselines_and_aggregates() {
    let it = item(&USERS, &["login", "build", "build", "readme"], 3);
    assert_eq!(baseline_ranges(Judge::Oracle, &it), vec![(1, 1)]);
    assert_eq!(baseline_ranges(Judge::Eager, &it), vec![(1, 2)]);
    assert_eq!(baseline_ranges(Judge::Lexical, &it), vec![(1, 1)]);
    assert!(baseline_ranges(Judge::Never, &it).is_empty());
    let nothing = item(&USERS, &["login", "login", "login"], 3);
    let items = [it, nothing];
    let mut records = Vec::new();
    for j in BASELINES {
        for i in &items {
            records.push(baseline_record(j, i, &i.context()));
        }
    }
    let aggs: Vec<Aggregate> = BASELINES
        .iter()
        .map(|j| aggregate(j.name(), &records))
        .collect();
    let oracle = &aggs[0];
    assert_eq!(
        (oracle.exact, oracle.folded_units, oracle.closed_units),
        (2, 1, 1)
    );
    assert_eq!(oracle.ignored_when_nothing_closed, 1);
    let eager = &aggs[2];
    assert_eq!(
        (eager.premature, eager.items_premature, eager.exact),
        (2, 2, 0)
    );
    let never = &aggs[3];
    assert_eq!(
        (never.folded_units, never.missed_units, never.exact),
        (0, 1, 1)
    );
    assert!(oracle.mean_card_tokens > 50.0);
    assert_eq!((oracle.exact, oracle.items - oracle.errors), (2, 2));
}

#[test]
fn dataset_round_trips_and_rejects_other_versions() {
    let it = item(&USERS, &["login", "build", "build", "readme"], 4);
    let text = format!(
        "{}\n\n{}\n",
        to_line(&it),
        to_line(&{
            let mut b = item(&USERS, &["login", "build", "build", "readme"], 3);
            b.id = "task:hand/3".into();
            b
        })
    );
    let back = parse_dataset("d.jsonl", &text).unwrap();
    assert_eq!(back.len(), 2);
    assert_eq!(back[0].card(), it.card());
    assert_eq!(back[0].messages.len(), it.messages.len());
    let v2 = text.replacen("\"version\":1", "\"version\":2", 1);
    assert!(parse_dataset("d.jsonl", &v2)
        .unwrap_err()
        .to_string()
        .contains("d.jsonl:1: dataset version 2 is not supported"));
    assert!(parse_dataset("d.jsonl", "{}")
        .unwrap_err()
        .to_string()
        .contains("no `version`"));
    assert!(parse_dataset("d.jsonl", "nope")
        .unwrap_err()
        .to_string()
        .contains("d.jsonl:1"));
    let twice = format!("{}\n{}\n", to_line(&it), to_line(&it));
    assert!(parse_dataset("d.jsonl", &twice)
        .unwrap_err()
        .to_string()
        .contains("appears twice"));
}

#[test]
fn stats_count_the_filter_and_the_lexical_rule() {
    let units = ["login", "build", "build", "readme", "readme", "new"];
    let items: Vec<Item> = (2..=6).map(|c| item(&USERS, &units, c)).collect();
    let s = dataset_stats(&items);
    assert_eq!(s.len(), 1);
    let s = &s[0];
    assert_eq!((s.items, s.kept_away, s.shown), (5, 5, 0));
    // Boundaries at 2 (login ended), 4 (build ended), 6 (readme ended).
    assert_eq!(s.kept_boundary, 3);
    // Lexical: 2 long new (right), 3 short continues (right), 4 long new (right),
    // 5 short continues (right), 6 long new (right).
    assert_eq!((s.boundaries, s.lexical_wrong), (5, 0));
    let other = ["a", "a", "b", "b", "b", "b"];
    let items: Vec<Item> = (2..=6).map(|c| item(&USERS, &other, c)).collect();
    let s = &dataset_stats(&items)[0];
    // 2 long continues (wrong), 3 short new (wrong), 4 long continues (wrong), 5 short
    // continues (right), 6 long continues (wrong).
    assert_eq!(
        (s.lexical_wrong, s.short, s.short_wrong, s.long_wrong),
        (4, 2, 1, 3)
    );
    assert_eq!(s.boundaries, 5);
}

#[test]
fn cost_prefers_the_providers_usage() {
    let p = Price::default();
    assert!((cost(1_000_000, 0, None, &p) - 3.0).abs() < 1e-9);
    let u = Usage {
        input_tokens: 0,
        cache_read_tokens: 1_000_000,
        cache_write_tokens: 0,
        output_tokens: 0,
    };
    assert!((cost(5, 5, Some(u), &p) - 0.3).abs() < 1e-9);
    assert_eq!(truncate_output("abc", 3), None);
    assert_eq!(
        truncate_output("abcdefgh", 4).unwrap(),
        "ab\n[… 4 characters cut by foldbench judge …]\ngh"
    );
}
