use serde_json::json;

use super::*;
use crate::judge::dataset::{build_item, Origin, Verdict, SOURCE_TASK};
use crate::message::ToolCall;

/// An item at turn `current` of a session whose turns belong to `units`; each turn reads a
/// file and closes.
fn item(units: &[&str], current: u32) -> Item {
    let labels: Vec<Option<String>> = units.iter().map(|u| Some(u.to_string())).collect();
    let mut msgs = Vec::new();
    for t in 1..current {
        msgs.push(Message::user(
            t,
            format!("request number {t}, long enough not to be short"),
            None,
        ));
        let k = ToolCall {
            id: format!("c{t}"),
            name: "read_file".into(),
            args: json!({"path": format!("f{t}.py")}),
        };
        msgs.push(Message::assistant(t, "", vec![k.clone()]));
        msgs.push(Message::tool_result(t, &k, format!("contents {t}"), t == 2));
        msgs.push(Message::assistant(t, format!("done {t}"), vec![]));
    }
    build_item(
        Origin {
            source: SOURCE_TASK,
            session: "hand",
            file: "hand.yaml",
            labels: &labels,
            words: &[],
        },
        &msgs,
        current,
        "the current request",
        false,
        2_000,
    )
    .expect("an item")
}

#[test]
fn the_parser_accepts_exactly_the_three_forms() {
    assert_eq!(parse_text_answer("ignore"), Ok(TextAnswer::Ignore));
    assert_eq!(
        parse_text_answer("fold 2-4"),
        Ok(TextAnswer::Fold(vec![(2, 4)]))
    );
    assert_eq!(
        parse_text_answer("fold 2-4 and 6-7"),
        Ok(TextAnswer::Fold(vec![(2, 4), (6, 7)]))
    );
    assert_eq!(
        parse_text_answer("fold 1-1 and 3-3 and 10-12"),
        Ok(TextAnswer::Fold(vec![(1, 1), (3, 3), (10, 12)]))
    );
    // White space around the whole line is not part of the answer.
    assert_eq!(
        parse_text_answer(" fold 3-3\n"),
        Ok(TextAnswer::Fold(vec![(3, 3)]))
    );
    assert_eq!(parse_text_answer("ignore\n"), Ok(TextAnswer::Ignore));
    // A reversed range is parsable: the host's legality check rejects it, not the parser.
    assert_eq!(
        parse_text_answer("fold 4-2"),
        Ok(TextAnswer::Fold(vec![(4, 2)]))
    );
}

#[test]
fn the_parser_rejects_near_misses() {
    for bad in [
        "",
        "Ignore",
        "IGNORE",
        "ignore.",
        "ignore this card",
        "Fold 2-4",
        "fold 2-4.",
        "fold 2 - 4",
        "fold 2 -4",
        "fold  2-4",
        "fold 2-4,6-7",
        "fold 2-4, 6-7",
        "fold 2-4 & 6-7",
        "fold 2-4 and",
        "fold 2-4 and ",
        "fold 2-4  and 6-7",
        "fold 3",
        "fold 2-4-6",
        "fold turns 2-4",
        "fold 02-4",
        "fold 0-1",
        "fold -2-4",
        "fold 2–4",
        "fold 99999999999-2",
        "`fold 2-4`",
        "fold 2-4\nignore",
        "I think: fold 2-4",
        "fold_unit(2, 4)",
    ] {
        assert!(
            parse_text_answer(bad).is_err(),
            "{bad:?} must be unparsable, got {:?}",
            parse_text_answer(bad)
        );
    }
}

#[test]
fn the_text_card_replaces_only_the_instruction() {
    let it = item(&["a", "a", "b", "c"], 4);
    let card = it.card();
    let text = text_card(&card).expect("the policy's card ends with the question");
    assert!(text.contains(TEXT_INSTRUCTION), "{text}");
    assert!(!text.contains("fold_unit"), "{text}");
    // Everything before the question is the policy's card, word for word.
    let head = &card[..card.find(QUESTION).unwrap()];
    assert!(text.starts_with(head));
    assert!(text.ends_with("</fold-card>"));
    assert_eq!(text.matches(QUESTION).count(), 1);
    assert_eq!(crate::fold::card_turns(&text), it.offered());
    assert_eq!(text_card("no card here"), None);
}

#[test]
fn a_text_answer_is_judged_like_the_same_fold_calls() {
    // a a b | c (current 4): a and b are closed, turns 1-3.
    let it = item(&["a", "a", "b", "c"], 4);
    let ctx = it.context();
    let (j, why) = judge_text(&it, &ctx, "fold 1-2 and 3-3");
    assert_eq!(why, None);
    assert!(j.score.exact && !j.score.unparsable && !j.score.ignored);
    assert_eq!(j.score.folded_units, 2);
    assert_eq!(j, judge_calls(&it, &ctx, &fold_calls(&[(1, 2), (3, 3)])));
    // Legality is the host's: a reversed range and an overlap are illegal.
    let (j, _) = judge_text(&it, &ctx, "fold 3-1");
    assert_eq!(j.calls[0].verdict, Verdict::Illegal);
    let (j, _) = judge_text(&it, &ctx, "fold 1-2 and 2-3");
    assert_eq!(j.calls[1].verdict, Verdict::Illegal);
    assert!(!j.score.exact);
    // `ignore` is the ignored card.
    let (j, _) = judge_text(&it, &ctx, "ignore");
    assert!(j.score.ignored && !j.score.unparsable);
    assert_eq!(j, judge_calls(&it, &ctx, &[]));
}

#[test]
fn an_unparsable_answer_is_neither_ignore_nor_a_fold() {
    let it = item(&["a", "a", "b", "c"], 4);
    let ctx = it.context();
    let (j, why) = judge_text(&it, &ctx, "Fold 1-3.");
    assert!(why.is_some());
    assert!(j.score.unparsable);
    assert!(!j.score.ignored, "an unparsable answer is not `ignore`");
    assert!(!j.score.exact);
    assert_eq!(j.score.folds, 0);
    assert_eq!(j.score.missed_units, j.score.closed_units);
    assert!(j.calls.is_empty());
    // Even where nothing is closed (ignoring would be exact), it is not exact.
    let open = item(&["a", "a", "a"], 3);
    let (j, _) = judge_text(&open, &open.context(), "nothing to fold");
    assert!(j.score.unparsable && !j.score.exact && !j.score.ignored);
}

#[test]
fn records_say_the_mode_and_the_table_counts_unparsable() {
    let it = item(&["a", "a", "b", "c"], 4);
    let ctx = it.context();
    let rec = |text: &str, constrained: bool| {
        JudgedRecord::new("openai:m", &it, 10).answered_text(
            &it,
            &ctx,
            &Response::new(text, vec![], None),
            constrained,
        )
    };
    let records = vec![
        rec("fold 1-3", true),
        rec("ignore", true),
        rec("fold it all", true),
    ];
    assert!(records
        .iter()
        .all(|r| r.answer_mode == AnswerMode::Text && r.constrained));
    let line = serde_json::to_string(&records[2]).unwrap();
    assert!(line.contains("\"answer_mode\":\"text\""), "{line}");
    assert!(line.contains("\"unparsable\":true"), "{line}");
    let a = crate::judge::dataset::aggregate("openai:m", &records);
    assert_eq!((a.items, a.exact, a.unparsable), (3, 1, 1));
    assert_eq!(a.answer, "text+grammar");
    // A tool-mode record keeps the default and shows no unparsable count.
    let tool = JudgedRecord::new("openai:m", &it, 10).answered(
        &it,
        &ctx,
        &Response::new("fold 1-3", vec![], None),
    );
    assert_eq!(tool.answer_mode, AnswerMode::Tool);
    assert!(tool.score.ignored && !tool.score.unparsable);
}

#[test]
fn the_plain_conversation_alternates_and_keeps_the_work() {
    let it = item(&["a", "a", "b", "c"], 4);
    let msgs = text_request_messages(&it, None);
    for w in msgs.windows(2) {
        assert_ne!(w[0].role, w[1].role, "roles alternate");
    }
    assert!(msgs
        .iter()
        .all(|m| m.tool_calls.is_empty() && m.role != Role::Tool));
    assert_eq!(msgs[0].role, Role::User);
    let all: String = msgs
        .iter()
        .map(|m| m.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        all.contains("[tool call] read_file {\"path\":\"f1.py\"}"),
        "{all}"
    );
    assert!(
        all.contains("[tool result: read_file]\ncontents 1"),
        "{all}"
    );
    assert!(all.contains("[tool error: read_file]\ncontents 2"), "{all}");
    assert!(all.contains("done 3"));
    let last = msgs.last().unwrap();
    assert_eq!(last.role, Role::User);
    assert!(last.text.starts_with("the current request\n\n<fold-card>"));
    assert!(last.text.contains(TEXT_INSTRUCTION));
    assert_eq!(last.turn, 4);
}

#[test]
fn modes_are_read_by_their_names() {
    assert_eq!(AnswerMode::parse("text"), Some(AnswerMode::Text));
    assert_eq!(AnswerMode::parse("tool"), Some(AnswerMode::Tool));
    assert_eq!(AnswerMode::parse("Text"), None);
    assert_eq!(AnswerMode::default(), AnswerMode::Tool);
    assert_eq!(AnswerMode::Text.name(), "text");
}
