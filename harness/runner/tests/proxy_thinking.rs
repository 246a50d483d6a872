//! Anthropic's thinking blocks through the proxy: read into the answer's thinking, so
//! `clear-thinking` (Anthropic's `clear_thinking_20251015` edit) drops the thinking of all but
//! the last turns that carry it, and written back as they came (signature and all) where they
//! stay.

mod answering;

use answering::*;
use serde_json::{json, Value};

fn thinking(text: &str, signature: &str) -> Value {
    json!({"type": "thinking", "thinking": text, "signature": signature})
}

/// A conversation of three turns whose answers carry thinking (the first a redacted block as
/// well), in a tool loop: turn 3's answer called a tool, its result is the last message.
fn with_thinking() -> Value {
    json!({
        "model": "claude-x", "max_tokens": 2000,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "system": [{"type": "text", "text": "You are an agent."}],
        "tools": tools(),
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "read a"}]},
            {"role": "assistant", "content": [
                thinking("I should read a.py first.", "c2lnLW9uZQ=="),
                {"type": "redacted_thinking", "data": "RW5jcnlwdGVkIHJlYXNvbmluZw=="},
                {"type": "tool_use", "id": "c1", "name": "Read", "input": {"file_path": "a.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": BIG}]},
            {"role": "assistant", "content": [
                thinking("a.py sets A to 1.", "c2lnLXR3bw=="),
                {"type": "text", "text": "seen"}]},
            {"role": "user", "content": [{"type": "text", "text": "now use it"}]},
            {"role": "assistant", "content": [
                thinking("Run it to check.", "c2lnLXRocmVl"),
                {"type": "tool_use", "id": "c2", "name": "Bash", "input": {"command": "python a.py"},
                 "cache_control": {"type": "ephemeral"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c2", "content": "1"}]},
        ],
    })
}

#[tokio::test]
async fn under_none_the_thinking_goes_upstream_byte_for_byte() {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let p = proxy("none", &up, out.path(), None).await;
    let sent = with_thinking();
    let (status, _, text) = post(&p, "/v1/messages", &sent).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        up.raw_bodies()[0],
        serde_json::to_vec(&sent).unwrap(),
        "the body as the agent sent it"
    );
    p.stop().await.unwrap();
}

#[tokio::test]
async fn clear_thinking_drops_the_thinking_of_earlier_turns_and_keeps_the_last_as_it_came() {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let p = proxy("clear-thinking", &up, out.path(), None).await;
    let sent = with_thinking();
    let (status, _, text) = post(&p, "/v1/messages", &sent).await;
    assert_eq!(status, 200, "{text}");
    let got = &up.bodies()[0];
    let msgs = got["messages"].as_array().unwrap();
    let orig = sent["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), orig.len(), "no message is dropped: {got}");
    // The first two answers lose their thinking (the redacted block too), nothing else.
    assert_eq!(
        msgs[1]["content"],
        json!([orig[1]["content"][2]]),
        "only the call stays"
    );
    assert_eq!(msgs[3]["content"], json!([orig[3]["content"][1]]));
    // The last answer keeps its thinking and its signature, its call its cache breakpoint.
    assert_eq!(msgs[5], orig[5], "the last turn's answer as it came");
    for i in [0, 2, 4, 6] {
        assert_eq!(msgs[i], orig[i], "message {i} as it came");
    }
    // Every other field as the agent wrote it.
    assert_eq!(got["thinking"], sent["thinking"]);
    assert_eq!(got["tools"], sent["tools"]);
    // The request's record says what the policy did.
    p.stop().await.unwrap();
    let rows = std::fs::read_to_string(out.path().join("requests.jsonl")).unwrap();
    assert!(rows.contains("cleared the thinking of 2 turns"), "{rows}");
}

#[tokio::test]
async fn clear_thinking_with_keep_all_sends_the_request_unchanged() {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let p = proxy("clear-thinking:keep=all", &up, out.path(), None).await;
    let sent = with_thinking();
    let (status, _, text) = post(&p, "/v1/messages", &sent).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(up.raw_bodies()[0], serde_json::to_vec(&sent).unwrap());
    p.stop().await.unwrap();
}
