//! Hidden references and probes on a hand-built session whose later turns use what earlier
//! tool results showed, so each policy's loss is known in advance:
//!
//! 1. read `shop/discount.py` → `MEMBER_RATE = 0.15` (and `TAX_CODE_77` nobody uses again)
//! 2. another task: read `README.md`
//! 3. back to it: the answer edits `MEMBER_RATE = 0.15` in `shop/discount.py` (from turn 1)
//! 4. a prompt that names `MEMBER_RATE` itself: not a hidden reference

use std::sync::Arc;

use harness_core::{Message, ToolCall};
use harness_import::{Format, HumanTurn, ImportedSession, RecordedRequest};
use harness_replay::hidden::Source;
use harness_replay::{JudgeKind, ReplayConfig, Replayer, SessionReplay};
use serde_json::json;

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
    prompt(
        1,
        "members say their discount is wrong at checkout, please look into it for me",
        &mut messages,
    );
    let read = ToolCall {
        id: "c1".into(),
        name: "Read".into(),
        args: json!({"file_path": "shop/discount.py"}),
    };
    answer(&mut messages, Message::assistant(1, "", vec![read.clone()]));
    messages.push(Message::tool_result(
        1,
        &read,
        "MEMBER_RATE = 0.15\nTAX_CODE_77 = 'x'\n",
        false,
    ));
    answer(
        &mut messages,
        Message::assistant(
            1,
            "The member rate in the code is below the documented one.",
            vec![],
        ),
    );
    prompt(
        2,
        "separately, can you check what the readme says about installing this whole thing",
        &mut messages,
    );
    let readme = ToolCall {
        id: "c0".into(),
        name: "Read".into(),
        args: json!({"file_path": "README.md"}),
    };
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
    let edit = ToolCall {
        id: "c2".into(),
        name: "Edit".into(),
        args: json!({"file_path": "shop/discount.py", "old_string": "MEMBER_RATE = 0.15", "new_string": "MEMBER_RATE = 0.20"}),
    };
    answer(&mut messages, Message::assistant(3, "", vec![edit.clone()]));
    messages.push(Message::tool_result(3, &edit, "ok", false));
    answer(&mut messages, Message::assistant(3, "Fixed.", vec![]));
    prompt(
        4,
        "now explain MEMBER_RATE in the README in a sentence or two, that would be great",
        &mut messages,
    );
    answer(
        &mut messages,
        Message::assistant(4, "MEMBER_RATE is the member discount.", vec![]),
    );
    ImportedSession {
        id: "hidden".into(),
        format: Format::ClaudeCode,
        source: "hidden.jsonl".into(),
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

fn replay(policies: &[&str]) -> SessionReplay {
    Replayer::new(ReplayConfig {
        policies: policies
            .iter()
            .map(|p| policies::parse_policy(p).unwrap())
            .collect(),
        judge: JudgeKind::Lexical,
        ..ReplayConfig::default()
    })
    .unwrap()
    .replay(&session(), None)
}

fn hidden(r: &SessionReplay, policy: &str) -> Vec<(usize, String, Source)> {
    r.policy(policy)
        .unwrap()
        .requests
        .iter()
        .flat_map(|q| {
            q.hidden
                .iter()
                .map(move |h| (q.request.unwrap(), h.text.clone(), h.source))
        })
        .collect()
}

const FOLD: &str = "fold:card_after_tool_calls=1";

#[test]
fn none_hides_nothing_and_passes_every_probe() {
    let r = replay(&["none", "trim", FOLD, "compact:window=200"]);
    let none = r.policy("none").unwrap();
    assert_eq!(none.hidden.total(), 0);
    assert_eq!(none.responses_with_hidden, 0);
    let p = none.probes;
    assert_eq!(p.requests, 7);
    assert_eq!(
        (p.decision, p.artifact, p.recall, p.continuation),
        (7, 7, 7, 7),
        "none keeps everything by construction"
    );
    assert!(none.requests.iter().all(|q| q.probes.is_some()));
}

#[test]
fn trim_hides_what_the_edit_took_from_turn_one_and_nothing_else() {
    let r = replay(&["none", "trim"]);
    assert_eq!(
        hidden(&r, "trim"),
        [
            (4, "shop/discount.py".to_string(), Source::None),
            (4, "MEMBER_RATE".into(), Source::None),
            (4, "0.15".into(), Source::None)
        ],
        "trim drops turn 1's result and its call: gone; turn 4's prompt names MEMBER_RATE itself"
    );
    let t = r.policy("trim").unwrap();
    assert_eq!(t.responses_with_hidden, 1);
    assert_eq!(t.probes.recall, 6);
    assert_eq!(
        t.probes.decision, 7,
        "trim keeps every prompt word for word"
    );
    assert_eq!(
        t.probes.artifact, 6,
        "in turn 4 the edit call of turn 3 is trimmed: its path is named nowhere"
    );
}

#[test]
fn a_placeholder_keeps_the_call_so_a_rerun_could_bring_it_back() {
    let r = replay(&["none", "trim:mode=placeholder"]);
    let h = hidden(&r, "trim:mode=placeholder");
    assert_eq!(
        h.iter().map(|x| x.1.as_str()).collect::<Vec<_>>(),
        ["MEMBER_RATE", "0.15"],
        "the placeholder keeps the call, and the call names the path"
    );
    assert!(h.iter().all(|(_, _, s)| *s == Source::Rerun), "{h:?}");
}

#[test]
fn a_fold_holds_it_in_its_archive_and_is_needed_one_turn_later() {
    let r = replay(&["none", FOLD]);
    let f = r.policy(FOLD).unwrap();
    assert!(!f.folds.is_empty(), "turn 1 is folded at turn 2's card");
    let h = hidden(&r, FOLD);
    assert_eq!(
        h.iter().map(|x| x.1.as_str()).collect::<Vec<_>>(),
        ["MEMBER_RATE", "0.15"],
        "the fold result's index names the path; the values are in the archive only"
    );
    assert!(
        h.iter().all(|(k, _, s)| *k == 4 && *s == Source::Archive),
        "{h:?}"
    );
    let first = &f.folds[0];
    assert_eq!((first.from, first.to, first.turn), (1, 1, 2));
    assert_eq!(
        first.needed_after,
        Some(1),
        "turn 3 needs what the fold made at the end of turn 2 holds"
    );
    assert!(
        f.folds[1..].iter().all(|x| x.needed_after.is_none()),
        "nothing later needs turn 2"
    );
    assert_eq!(
        f.probes.decision, f.probes.requests,
        "a fold result keeps the prompts word for word"
    );
}

#[test]
fn records_keep_the_first_references_and_the_full_count() {
    let r = replay(&["none", "trim"]);
    let q = &r.policy("trim").unwrap().requests;
    let row = q.iter().find(|q| q.request == Some(4)).unwrap();
    let v = serde_json::to_value(row).unwrap();
    assert_eq!(v["hidden_references"], 3);
    assert_eq!(v["hidden"][1]["text"], "MEMBER_RATE");
    assert_eq!(v["probes"]["recall"], false);
}

#[test]
fn the_summary_carries_the_hidden_reference_fields() {
    let policies: Vec<String> = ["none", "trim", FOLD].map(String::from).to_vec();
    let r = replay(&["none", "trim", FOLD]);
    let rows = harness_replay::report::summarize(std::slice::from_ref(&r), &policies);
    let v = serde_json::to_value(&rows).unwrap();
    assert_eq!(v[0]["hidden_references"], 0);
    assert_eq!(v[1]["hidden_references"], 3);
    assert_eq!(v[1]["responses_with_hidden_references"], 1);
    assert_eq!(v[1]["hidden_by_source"]["none"], 3);
    assert_eq!(v[2]["hidden_by_source"]["archive"], 2);
    assert_eq!(v[2]["folds_needed_later"]["needed"], 1);
    assert_eq!(v[2]["folds_needed_later"]["delays"][1], 1);
    for row in v.as_array().unwrap() {
        for probe in ["decision", "artifact", "recall", "continuation"] {
            let x = row["probes"][probe].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&x), "{probe} = {x}");
        }
    }
    assert_eq!(v[0]["probes"]["recall"], 1.0);
    let table = harness_replay::report::policy_table(&rows, false);
    assert!(table.headers.iter().any(|h| h == "hidden refs"));
    assert!(table.headers.iter().any(|h| h == "continuation"));
}
