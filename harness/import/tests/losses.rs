//! The points where a recorded agent lost its context, as each format records them: what the
//! replay's "After real compactions" section starts from.

use harness_core::MessageKind;
use harness_import::{import, EventKind, Format};

fn cc_line(uuid: &str, parent: &str, body: &str) -> String {
    format!(
        r#"{{"type":"user","uuid":"{uuid}","parentUuid":{parent},"sessionId":"s1","timestamp":"2026-01-01T00:00:00Z","message":{{"role":"user","content":{body}}}}}"#
    )
}

#[test]
fn a_claude_code_file_that_begins_with_a_summary_is_a_loss_before_it() {
    let text = [
        cc_line(
            "u1",
            "null",
            r#""This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\nWe were fixing src/app.rs.""#,
        ),
        cc_line("u2", r#""u1""#, r#""go on""#),
    ]
    .join("\n");
    let s = &import("s1.jsonl", &text, Some(Format::ClaudeCode)).unwrap()[0];
    assert_eq!(s.events.len(), 1);
    assert_eq!(s.events[0].kind, EventKind::Continued);
    assert_eq!(s.events[0].message, 0);
    assert_eq!(s.messages[0].kind, MessageKind::Summary);
    // The summary is not a prompt; the next message is.
    assert_eq!(s.human_turns.len(), 1);
    assert_eq!(s.human_turns[0].text, "go on");
}

fn codex(lines: &[&str]) -> String {
    let mut out = vec![
        r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"c1","cwd":"/w"}}"#.to_string(),
    ];
    out.extend(lines.iter().map(|l| l.to_string()));
    out.join("\n")
}

#[test]
fn a_codex_compaction_with_an_encrypted_summary_says_so_and_its_event_is_the_same_point() {
    let text = codex(&[
        r#"{"timestamp":"2026-01-01T00:00:01Z","type":"event_msg","payload":{"type":"user_message","message":"fix the build"}}"#,
        r#"{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the build"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"on it"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:03Z","type":"compacted","payload":{"message":"","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the build"}]},{"type":"compaction","encrypted_content":"AAAABBBBCCCC"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:03Z","type":"event_msg","payload":{"type":"context_compacted"}}"#,
        r#"{"timestamp":"2026-01-01T00:00:04Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}"#,
    ]);
    let s = &import("r.jsonl", &text, Some(Format::Codex)).unwrap()[0];
    assert_eq!(s.events.len(), 1, "{:?}", s.events);
    assert_eq!(s.events[0].kind, EventKind::Compacted);
    assert_eq!(s.events[0].opaque_summary_bytes, Some(12));
}

#[test]
fn a_codex_context_compacted_event_alone_is_a_compaction_point() {
    let text = codex(&[
        r#"{"timestamp":"2026-01-01T00:00:01Z","type":"event_msg","payload":{"type":"user_message","message":"fix the build"}}"#,
        r#"{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the build"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"on it"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:03Z","type":"event_msg","payload":{"type":"context_compacted"}}"#,
        r#"{"timestamp":"2026-01-01T00:00:04Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}"#,
    ]);
    let s = &import("r.jsonl", &text, Some(Format::Codex)).unwrap()[0];
    assert_eq!(s.events.len(), 1);
    assert_eq!(s.events[0].kind, EventKind::Compacted);
    assert_eq!(s.events[0].opaque_summary_bytes, None);
    assert_eq!(
        s.events[0].message, 2,
        "after the prompt and the first answer"
    );
}

#[test]
fn an_openhands_condensation_is_a_compaction_point_with_its_summary() {
    let history = r#"[
        {"id":1,"source":"user","action":"message","args":{"content":"fix the parser"}},
        {"id":2,"source":"agent","action":"message","args":{"content":"looking"}},
        {"id":3,"source":"agent","action":"condensation","args":{"forgotten_event_ids":[2],"summary":"The agent was reading parser.py."}},
        {"id":4,"source":"agent","action":"message","args":{"content":"done"}}
    ]"#;
    let line = format!(
        r#"{{"instance_id":"i1","history":{}}}"#,
        history.replace('\n', " ")
    );
    let s = &import("output.jsonl", &line, Some(Format::OpenHands)).unwrap()[0];
    assert_eq!(s.events.len(), 1);
    assert_eq!(s.events[0].kind, EventKind::Condensation);
    let m = &s.messages[s.events[0].message];
    assert_eq!(m.kind, MessageKind::Summary);
    assert_eq!(m.text, "The agent was reading parser.py.");
}

#[test]
fn a_claude_code_boundary_whose_logical_parent_is_not_in_the_file_keeps_what_came_before() {
    let text = [
        cc_line("u1", "null", r#""fix the build""#),
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s1","timestamp":"2026-01-01T00:00:00Z","requestId":"q1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"fixed"}]}}"#.to_string(),
        r#"{"type":"system","subtype":"compact_boundary","uuid":"c1","parentUuid":null,"logicalParentUuid":"not-in-this-file","sessionId":"s1","timestamp":"2026-01-01T00:00:00Z","compactMetadata":{"trigger":"auto","preTokens":150000}}"#.to_string(),
        r#"{"type":"user","uuid":"c2","parentUuid":"c1","isCompactSummary":true,"sessionId":"s1","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"This session is being continued from a previous conversation. We fixed the build."}}"#.to_string(),
        cc_line("u2", r#""c2""#, r#""now the docs""#),
    ]
    .join("\n");
    let s = &import("s1.jsonl", &text, Some(Format::ClaudeCode)).unwrap()[0];
    assert_eq!(
        s.human_turns.len(),
        2,
        "the prompt before the boundary is kept"
    );
    assert_eq!(s.events[0].kind, EventKind::CompactBoundary);
    assert_eq!(s.events[0].message, 2);
}
