//! One very long user message (a pasted log) under `fold`: the compaction summaries stay small,
//! so replay time stays linear in the input (the bench `replay/long_message/*` measures it).

use std::sync::Arc;

use harness_core::{Message, ToolCall};
use harness_import::{Format, HumanTurn, ImportedSession, RecordedRequest};
use harness_replay::{ReplayConfig, Replayer};

/// A session of three turns; turn 2 opens with a `bytes`-long prompt; every turn makes `calls`
/// tool calls and closes with a message.
fn session(bytes: usize, calls: u32) -> ImportedSession {
    let mut messages: Vec<Arc<Message>> = Vec::new();
    let mut requests = Vec::new();
    let mut human_turns = Vec::new();
    for t in 1..=3u32 {
        let prompt = if t == 2 {
            let line = "ERROR worker 17: connection reset by peer (retrying in 250 ms)\n";
            line.repeat(bytes / line.len() + 1)[..bytes].to_string()
        } else {
            format!("Turn {t}: please look at module {t} and fix the failing test in it, then report back.")
        };
        human_turns.push(HumanTurn {
            turn: t,
            message: messages.len(),
            id: Some(format!("u{t}")),
            text: prompt.clone(),
        });
        messages.push(Message::user(t, prompt, None));
        for c in 0..calls {
            let call = ToolCall {
                id: format!("c{t}-{c}"),
                name: "Read".into(),
                args: serde_json::json!({ "file_path": format!("src/m{t}/f{c}.rs") }),
            };
            requests.push(RecordedRequest {
                message: messages.len(),
                context: messages.len(),
                context_start: 0,
                response_id: None,
                usage: None,
                model: None,
            });
            messages.push(Message::assistant(t, "", vec![call.clone()]));
            messages.push(Message::tool_result(
                t,
                &call,
                "fn main() {}\n".repeat(20),
                false,
            ));
        }
        requests.push(RecordedRequest {
            message: messages.len(),
            context: messages.len(),
            context_start: 0,
            response_id: None,
            usage: None,
            model: None,
        });
        messages.push(Message::assistant(
            t,
            format!("Done with turn {t}."),
            Vec::new(),
        ));
    }
    ImportedSession {
        id: "long".into(),
        format: Format::ClaudeCode,
        source: "synthetic".into(),
        parent: None,
        system: Some("You are a coding agent.".into()),
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

#[test]
fn a_pasted_log_larger_than_the_window_keeps_compaction_summaries_small() {
    // About 2 MB: well past the default window, so `fold` compacts.
    let s = session(2_000_000, 8);
    let fold = Replayer::new(ReplayConfig {
        policies: vec![policies::parse_policy("fold").unwrap()],
        ..ReplayConfig::default()
    })
    .unwrap();
    let r = fold.replay(&s, None);
    let p = r.policy("fold").expect("fold replayed");
    assert!(
        !p.compactions.is_empty(),
        "the long prompt forces compaction"
    );
    assert!(
        p.compactions.len() <= s.requests.len(),
        "{} compactions for {} requests",
        p.compactions.len(),
        s.requests.len()
    );
    // The summary quotes the long prompt's head, not all of it (it used to quote it whole, and
    // each later summary quoted the one before as well: 500k, 1M, 1.5M tokens…).
    for c in &p.compactions {
        assert!(c.output_tokens < 5_000, "{:#?}", p.compactions);
    }
}
