//! The Messages API as Claude Code sends it: a system-role entry inside `messages`, tool use,
//! results beside a reminder, cache breakpoints.

mod common;

use harness_core::Role;
use harness_wire::{canonical_key, item_key, Api};
use harness_wire::{parse_answer, without_calls, write_answer};
use serde_json::json;

fn claude_code_request() -> serde_json::Value {
    json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "stream": true,
        "metadata": {"user_id": "user_abc_account__session_1234"},
        "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}},
                  {"name": "Bash", "description": "Run", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "system", "content": "Environment: linux"},
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>context</system-reminder>"},
                {"type": "text", "text": "read src/app.py"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I will read it", "signature": "sig"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/w/src/app.py"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "PORT = 8080"}]},
                {"type": "text", "text": "<system-reminder>todo list</system-reminder>", "cache_control": {"type": "ephemeral"}}]}
        ]
    })
}

#[test]
fn a_claude_code_request_becomes_turns_and_comes_back_unchanged() {
    let body = claude_code_request();
    let (env, units, pieces, g) = common::decode(Api::Anthropic, &body);
    assert!(env.stream);
    assert_eq!(env.system, "You are Claude Code.");
    assert_eq!(env.hint.as_deref(), Some("user_abc_account__session_1234"));
    assert_eq!(
        env.tools
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["Read", "Bash"]
    );
    let messages: Vec<_> = pieces.iter().map(|p| p.message.as_ref()).collect();
    assert!(messages[0].is_none(), "the system entry is pinned");
    let user = messages[1].unwrap();
    assert_eq!((user.role, user.turn), (Role::User, 1));
    assert!(user.text.ends_with("read src/app.py"));
    let answer = messages[2].unwrap();
    assert_eq!(answer.text, "Reading.");
    assert_eq!(answer.tool_calls[0].name, "Read");
    assert_eq!(
        pieces[2].units.len(),
        3,
        "thinking, text and the call are one message"
    );
    let result = messages[3].unwrap();
    assert_eq!(result.role, Role::Tool);
    assert_eq!(result.text, "PORT = 8080");
    assert_eq!(result.tool_name.as_deref(), Some("Read"));
    assert_eq!(
        messages[4].unwrap().turn,
        1,
        "a reminder beside a result stays in the turn"
    );
    // Written back from the units, the request is what the agent sent.
    assert_eq!(
        common::from_units(Api::Anthropic, &env, &units, &pieces),
        body
    );
    // From the messages alone: the same conversation, less what the core does not read.
    let rendered = common::from_messages(Api::Anthropic, &env, &pieces, &g);
    let m = rendered["messages"].as_array().unwrap();
    assert_eq!(
        m.len(),
        3,
        "the pinned entry is not a message, results and reminder merge"
    );
    assert_eq!(m[1]["content"][1]["type"], "tool_use");
    assert_eq!(m[2]["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(m[2]["content"][0]["content"], "PORT = 8080");
}

#[test]
fn keys_follow_the_bytes_and_canonical_keys_ignore_moved_breakpoints() {
    let body = claude_code_request();
    let (env, ..) = common::decode(Api::Anthropic, &body);
    let mut moved = body.clone();
    moved["messages"][3]["content"][1]
        .as_object_mut()
        .unwrap()
        .remove("cache_control");
    let (env2, ..) = common::decode(Api::Anthropic, &moved);
    assert_eq!(item_key(&env.items[1]), item_key(&env2.items[1]));
    assert_ne!(item_key(&env.items[3]), item_key(&env2.items[3]));
    assert_eq!(canonical_key(&env.items[3]), canonical_key(&env2.items[3]));
}

#[test]
fn bad_messages_say_where() {
    let bad = json!({"role": "user", "content": [{"type": "tool_result", "content": "x"}]});
    let raw = serde_json::value::to_raw_value(&bad).unwrap();
    let e = harness_wire::decode_item(Api::Anthropic, &raw).unwrap_err();
    assert!(
        e.0.contains("content[0]") && e.0.contains("tool_use_id"),
        "{e}"
    );
    let raw = serde_json::value::to_raw_value(&json!({"role": "robot", "content": "x"})).unwrap();
    let e = harness_wire::decode_item(Api::Anthropic, &raw).unwrap_err();
    assert!(e.0.contains("robot"), "{e}");
}

#[test]
fn answers_read_write_and_lose_a_hosts_call() {
    let body = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
        "content": [{"type": "text", "text": "Folding."},
                    {"type": "tool_use", "id": "t1", "name": "fold_unit", "input": {"from": 1, "to": 2}},
                    {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}}],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 90, "cache_creation_input_tokens": 5, "output_tokens": 7}
    });
    let a = parse_answer(Api::Anthropic, body.to_string().as_bytes()).unwrap();
    assert_eq!(a.text, "Folding.");
    assert_eq!(a.calls.len(), 2);
    let u = a.usage.unwrap();
    assert_eq!(
        (
            u.input_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
            u.output_tokens
        ),
        (10, 90, 5, 7)
    );
    assert_eq!(write_answer(Api::Anthropic, &a), body);
    let left = without_calls(Api::Anthropic, &body, &["t1".into()]);
    assert_eq!(left["content"].as_array().unwrap().len(), 2);
    assert_eq!(left["stop_reason"], "tool_use");
    let none = without_calls(Api::Anthropic, &body, &["t1".into(), "t2".into()]);
    assert_eq!(none["stop_reason"], "end_turn");
    let e = parse_answer(Api::Anthropic, b"{\"id\":1}").unwrap_err();
    assert!(e.0.contains("no `content`"), "{e}");
}
