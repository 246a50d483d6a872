//! The offline upstream over real HTTP on loopback: requests as Claude Code, Codex and
//! mini-swe-agent send them, answered in each one's API and vocabulary.

use std::sync::Arc;

use harness_core::judge::Judge;
use harness_core::sim::SimConfig;
use harness_runner::SimServer;
use harness_wire::Api;
use harness_wire::SseParser;
use harness_wire::StreamDecoder;
use serde_json::{json, Value};

const SPEC: &str = r#"name: two
repo: fixtures/x
turns:
  - user: "look at a"
    unit: a
    script:
      - read_file: { path: a.py }
        expect: "A = 1"
      - say: "seen"
  - user: "now use it"
    unit: a
    needs: ["A = 1"]
    script:
      - edit_file: { path: a.py, old: "A = 1", new: "A = 2" }
      - say: "done"
checks:
  - file_contains: { path: a.py, text: "A = 2" }
"#;

async fn server() -> SimServer {
    let spec = harness_config::spec::load("t.yaml", SPEC).expect("spec");
    SimServer::start(
        Arc::new(spec),
        SimConfig {
            seed: 1,
            recheck: 0.0,
            judge: Judge::Oracle,
            behaviour: Default::default(),
        },
        "127.0.0.1:0".parse().expect("addr"),
        None,
    )
    .await
    .expect("start")
}

async fn post(s: &SimServer, path: &str, body: &Value) -> (u16, String) {
    let r = reqwest::Client::new()
        .post(format!("http://{}{path}", s.addr()))
        .json(body)
        .send()
        .await
        .expect("send");
    let status = r.status().as_u16();
    (status, r.text().await.expect("body"))
}

/// The answer a stream carries, read as the proxy reads streams.
fn read_stream(api: Api, text: &str) -> harness_wire::Answer {
    let mut p = SseParser::new();
    let mut d = StreamDecoder::new(api);
    for ev in p.feed(text.as_bytes()).expect("events") {
        d.decode(&ev).expect("decode");
    }
    assert!(d.done(), "the stream ends: {text}");
    d.answer()
}

#[tokio::test]
async fn claude_code_gets_a_streamed_read_with_its_absolute_path() {
    let s = server().await;
    let tools: Vec<Value> = ["Agent", "Bash", "Edit", "Read", "Write"]
        .iter()
        .map(|n| json!({"name": n, "description": "", "input_schema": {"type": "object"}}))
        .collect();
    let body = json!({
        "model": "claude-opus-5-5", "max_tokens": 128000, "stream": true,
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "tools": tools,
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>git status: clean</system-reminder>"},
                {"type": "text", "text": "look at a"}]},
            {"role": "system", "content": "# Environment\n - Primary working directory: /w/repo\n"},
        ],
    });
    let (status, text) = post(&s, "/v1/messages?beta=true", &body).await;
    assert_eq!(status, 200, "{text}");
    let a = read_stream(Api::Anthropic, &text);
    assert_eq!(a.calls.len(), 1, "{text}");
    assert_eq!(a.calls[0].name, "Read");
    assert_eq!(a.calls[0].args, json!({"file_path": "/w/repo/a.py"}));
    let usage = a.usage.expect("usage");
    assert!(usage.input_tokens > 0, "the request's size is reported");
    s.stop().await;
}

#[tokio::test]
async fn mini_swe_agent_gets_its_command_in_text() {
    let s = server().await;
    let body = json!({
        "model": "foldbench",
        "messages": [
            {"role": "system", "content": "Your response must contain exactly ONE bash code block: ```mswea_bash_command"},
            {"role": "user", "content": "Please solve this issue: look at a\n\nYou can execute bash commands"},
        ],
    });
    let (status, text) = post(&s, "/v1/chat/completions", &body).await;
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).expect("json");
    let content = v["choices"][0]["message"]["content"]
        .as_str()
        .expect("content");
    assert!(
        content.ends_with("```mswea_bash_command\ncat -- 'a.py'\n```"),
        "{content}"
    );
    assert_eq!(s.exchanges()[0].calls, vec!["bash".to_string()]);
    s.stop().await;
}

#[tokio::test]
async fn codex_gets_apply_patch_as_a_custom_call_once_it_read_the_file() {
    let s = server().await;
    let tools = json!([
        {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
        {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
    ]);
    let mut input = vec![
        json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]}),
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>/w/repo</cwd>\n</environment_context>"}]}),
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "look at a"}]}),
    ];
    let ask = |input: &Vec<Value>| json!({"model": "gpt-5.5", "stream": true, "tools": tools, "input": input});
    let (_, text) = post(&s, "/v1/responses", &ask(&input)).await;
    let a = read_stream(Api::Responses, &text);
    assert_eq!(a.calls[0].name, "exec_command", "{text}");
    assert_eq!(a.calls[0].args, json!({"cmd": "cat -- 'a.py'"}));
    let id = a.calls[0].id.clone();
    input.push(json!({"type": "function_call", "call_id": id, "name": "exec_command", "arguments": "{\"cmd\":\"cat -- 'a.py'\"}"}));
    input.push(json!({"type": "function_call_output", "call_id": id, "output": "Chunk ID: 1\nWall time: 0 seconds\nProcess exited with code 0\nOriginal token count: 3\nOutput:\nA = 1\n"}));
    let (_, text) = post(&s, "/v1/responses", &ask(&input)).await;
    let a = read_stream(Api::Responses, &text);
    assert_eq!(a.text, "seen");
    input.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "seen"}]}));
    input.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "now use it"}]}));
    let (_, text) = post(&s, "/v1/responses", &ask(&input)).await;
    assert!(text.contains("\"type\":\"custom_tool_call\""), "{text}");
    let a = read_stream(Api::Responses, &text);
    assert_eq!(a.calls[0].name, "apply_patch");
    assert_eq!(
        a.calls[0].args["input"],
        json!("*** Begin Patch\n*** Update File: a.py\n@@\n-A = 1\n+A = 2\n*** End Patch\n")
    );
    s.stop().await;
}

#[tokio::test]
async fn bad_requests_are_refused_with_what_is_wrong() {
    let s = server().await;
    let client = reqwest::Client::new();
    let url = |p: &str| format!("http://{}{p}", s.addr());
    let r = client
        .post(url("/v1/messages"))
        .body("{\"model\": \"m\", \"messages\": [")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 400);
    let msg = r.text().await.expect("body");
    assert!(
        msg.contains("not a JSON object") && msg.contains("line 1"),
        "{msg}"
    );
    let (status, msg) = post(&s, "/v1/messages", &json!({"model": "m"})).await;
    assert_eq!(status, 400);
    assert!(msg.contains("no `messages`"), "{msg}");
    let (status, msg) = post(&s, "/v1/models", &json!({})).await;
    assert_eq!(status, 404);
    assert!(
        msg.contains("/v1/messages, /v1/chat/completions and /v1/responses"),
        "{msg}"
    );
    let r = client
        .post(url("/v1/responses"))
        .header("content-encoding", "zstd")
        .body(vec![0x28, 0xb5, 0x2f, 0xfd])
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 415);
    assert!(s.exchanges().is_empty(), "nothing was answered");
    s.stop().await;
}
