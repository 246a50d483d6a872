//! OpenAI's Chat Completions and Responses requests and answers, as mini-swe-agent (through
//! LiteLLM) and Codex send them.

mod common;

use harness_core::Role;
use harness_wire::Api;
use harness_wire::{parse_answer, prepend_parts, without_calls, write_answer};
use serde_json::json;

#[test]
fn a_chat_request_becomes_turns_and_comes_back_unchanged() {
    let body = json!({
        "model": "gpt-4.1", "stream": false, "user": "conv-7",
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "find the port"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":\"grep -rn PORT .\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "src/app.py:1:PORT = 8080"},
            {"role": "assistant", "content": "PORT is 8080."},
            {"role": "user", "content": [{"type": "text", "text": "change it"}, {"type": "image_url", "image_url": {"url": "data:"}}]}
        ],
        "tools": [{"type": "function", "function": {"name": "shell", "description": "run", "parameters": {"type": "object"}}}]
    });
    let (env, units, pieces, g) = common::decode(Api::Chat, &body);
    assert_eq!(env.system, "You are a coding agent.");
    assert_eq!(env.hint.as_deref(), Some("conv-7"));
    assert_eq!(env.tools[0].name, "shell");
    let m: Vec<_> = pieces.iter().filter_map(|p| p.message.clone()).collect();
    assert_eq!(m.len(), 5);
    assert_eq!(
        m[1].tool_calls[0].args,
        json!({"command": "grep -rn PORT ."})
    );
    assert_eq!(
        (m[2].role, m[2].tool_name.as_deref()),
        (Role::Tool, Some("shell"))
    );
    assert_eq!((m[4].turn, m[4].text.as_str()), (2, "change it\n[image]"));
    assert_eq!(common::from_units(Api::Chat, &env, &units, &pieces), body);
    let rendered = common::from_messages(Api::Chat, &env, &pieces, &g);
    let r = rendered["messages"].as_array().unwrap();
    assert_eq!(r.len(), 5, "the system message is pinned, not rendered");
    assert_eq!(
        r[1]["tool_calls"][0]["function"]["arguments"],
        "{\"command\":\"grep -rn PORT .\"}"
    );
    assert_eq!(
        r[2],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "src/app.py:1:PORT = 8080"})
    );
}

#[test]
fn a_codex_responses_request_becomes_turns_and_comes_back_unchanged() {
    let body = json!({
        "model": "gpt-5-codex", "instructions": "You are Codex.", "stream": true, "store": false,
        "prompt_cache_key": "019a-session",
        "tools": [{"type": "function", "name": "shell", "description": "run", "parameters": {"type": "object"}},
                  {"type": "custom", "name": "apply_patch", "description": "patch", "format": {"type": "grammar"}}],
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions>"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the port"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "xyz"},
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{\"command\":[\"cat\",\"app.py\"]}"},
            {"type": "function_call_output", "call_id": "c1", "output": "PORT = 8080"},
            {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "*** Begin Patch"},
            {"type": "custom_tool_call_output", "call_id": "c2", "output": "Done!"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Fixed."}]},
            {"role": "user", "content": "thanks"}
        ]
    });
    let (env, units, pieces, g) = common::decode(Api::Responses, &body);
    assert_eq!(env.system, "You are Codex.\n\n<permissions>");
    assert_eq!(env.hint.as_deref(), Some("019a-session"));
    assert_eq!(env.tools[1].name, "apply_patch");
    let m: Vec<_> = pieces.iter().filter_map(|p| p.message.clone()).collect();
    assert_eq!(
        m[0].text, "<environment_context>\n\nfix the port",
        "consecutive user items are one prompt"
    );
    assert_eq!(m[1].tool_calls[0].name, "shell");
    assert_eq!(
        pieces[2].units.len(),
        2,
        "reasoning and the call are one assistant message"
    );
    assert_eq!(m[2].text, "PORT = 8080");
    assert_eq!(m[3].tool_calls[0].args, json!({"input": "*** Begin Patch"}));
    assert_eq!(m[4].tool_name.as_deref(), Some("apply_patch"));
    assert_eq!((m[6].turn, m[6].text.as_str()), (2, "thanks"));
    assert_eq!(
        common::from_units(Api::Responses, &env, &units, &pieces),
        body
    );
    let rendered = common::from_messages(Api::Responses, &env, &pieces, &g);
    let items = rendered["input"].as_array().unwrap();
    assert_eq!(
        items[1]["type"], "function_call",
        "reasoning is not rendered"
    );
    assert_eq!(
        items[3]["type"], "custom_tool_call",
        "a rendered call keeps its form"
    );
    assert_eq!(items[4]["type"], "custom_tool_call_output");
}

#[test]
fn chat_and_responses_answers_read_write_and_lose_a_hosts_call() {
    let chat = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": "Folding.",
            "tool_calls": [{"id": "f1", "type": "function", "function": {"name": "fold_unit", "arguments": "{\"from\":1,\"to\":1}"}}]}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105, "prompt_tokens_details": {"cached_tokens": 60}}
    });
    let a = parse_answer(Api::Chat, chat.to_string().as_bytes()).unwrap();
    assert_eq!(a.calls[0].args, json!({"from": 1, "to": 1}));
    assert_eq!(a.usage.unwrap().cache_read_tokens, 60);
    assert_eq!(a.usage.unwrap().input_tokens, 40);
    assert_eq!(write_answer(Api::Chat, &a), chat);
    let left = without_calls(Api::Chat, &chat, &["f1".into()]);
    assert_eq!(left["choices"][0]["finish_reason"], "stop");
    assert!(left["choices"][0]["message"].get("tool_calls").is_none());
    let second = json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": " Done."}}]});
    let joined = prepend_parts(Api::Chat, &second, &chat, &["f1".into()]);
    assert_eq!(joined["choices"][0]["message"]["content"], "Folding. Done.");

    let resp = json!({
        "id": "resp_1", "object": "response", "created_at": 0, "status": "completed", "model": "gpt-5",
        "output": [
            {"type": "reasoning", "id": "rs", "summary": []},
            {"type": "function_call", "id": "fc", "call_id": "f2", "name": "fold_unit", "arguments": "{\"from\":1,\"to\":2}"},
            {"type": "message", "id": "m", "role": "assistant", "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
        "usage": {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 10}, "output_tokens": 3,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 53}
    });
    let a = parse_answer(Api::Responses, resp.to_string().as_bytes()).unwrap();
    assert_eq!(
        (a.text.as_str(), a.calls[0].name.as_str()),
        ("ok", "fold_unit")
    );
    assert_eq!(write_answer(Api::Responses, &a), resp);
    assert_eq!(
        without_calls(Api::Responses, &resp, &["f2".into()])["output"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}
