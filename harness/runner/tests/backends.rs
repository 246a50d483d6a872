//! Loopback tests of the HTTP backends and cassettes against wiremock servers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use harness_core::{Message, ToolCall, ToolSpec};
use harness_core::{Purpose, Request, Response, Usage};
use harness_runner::backends::{
    anthropic_body, cassette_key, openai_body, parse_model, AnthropicModel, BackendOptions,
    OpenAiModel, Recorder, ReplayModel,
};
use harness_runner::backends::{Model, ModelError};
use serde_json::{json, Value};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, Respond, ResponseTemplate};

const KEY: &str = "sk-test-0123456789abcdef";

fn opts() -> BackendOptions {
    BackendOptions {
        base_delay: Duration::from_millis(10),
        timeout: Duration::from_secs(5),
        max_retries: 3,
        ..BackendOptions::default()
    }
}

fn request() -> Request {
    let c = ToolCall {
        id: "call_1".into(),
        name: "read_file".into(),
        args: json!({"path": "README.md"}),
    };
    let tools: Arc<[ToolSpec]> = Arc::from(harness_runner::tools::tool_specs());
    Request::new(
        Arc::from("You are a careful coding agent."),
        tools,
        0,
        vec![
            Message::user(1, "what does the readme say?", Some("[card]".into())),
            Message::assistant(1, "", vec![c.clone()]),
            Message::tool_result(1, &c, "1\t# demo", false),
        ],
        Purpose::Turn,
    )
}

fn openai_answer() -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Let me grep.",
            "tool_calls": [{"id": "call_2", "type": "function",
                            "function": {"name": "grep", "arguments": "{\"pattern\": \"demo\"}"}}]}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129,
                  "prompt_tokens_details": {"cached_tokens": 100}}
    })
}

fn anthropic_answer() -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": "Done."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 5, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 2000, "output_tokens": 3}
    })
}

fn openai_model(server: &MockServer, o: &BackendOptions) -> OpenAiModel {
    OpenAiModel::new(
        "test-model",
        &format!("{}/v1", server.uri()),
        Some(KEY.to_string()),
        o,
    )
    .unwrap()
}

async fn mount_ok(server: &MockServer, priority: u8) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(openai_answer()))
        .with_priority(priority)
        .mount(server)
        .await;
}

#[tokio::test]
async fn openai_request_shape_headers_and_usage() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .and(header("content-type", "application/json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(openai_answer()))
        .expect(1)
        .mount(&server)
        .await;
    let req = request();
    let r = openai_model(&server, &opts())
        .respond(&req, "cell-a")
        .await
        .unwrap();
    assert_eq!(r.text, "Let me grep.");
    assert_eq!(
        r.tool_calls,
        vec![ToolCall {
            id: "call_2".into(),
            name: "grep".into(),
            args: json!({"pattern": "demo"})
        }]
    );
    assert_eq!(
        r.usage,
        Some(Usage {
            input_tokens: 20,
            cache_read_tokens: 100,
            cache_write_tokens: 0,
            output_tokens: 9
        })
    );
    assert!(r.output_tokens > 0);

    let sent: Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert_eq!(sent, openai_body(&req, "test-model"));
    assert_eq!(sent["tool_choice"], "auto");
    assert_eq!(
        sent["messages"][2]["content"], "",
        "assistant tool-call content must be \"\", not null"
    );
    assert_eq!(
        sent["messages"][1]["content"],
        "what does the readme say?\n\n[card]"
    );
    assert_eq!(
        sent["tools"].as_array().unwrap().len(),
        harness_runner::tools::tool_specs().len()
    );
}

#[tokio::test]
async fn anthropic_request_shape_headers_and_usage() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(ResponseTemplate::new(200).set_body_json(anthropic_answer()))
        .expect(1)
        .mount(&server)
        .await;
    let req = request();
    let m = AnthropicModel::new("claude-test", &server.uri(), KEY, &opts()).unwrap();
    let r = m.respond(&req, "cell-a").await.unwrap();
    assert_eq!(r.text, "Done.");
    assert_eq!(
        r.usage,
        Some(Usage {
            input_tokens: 5,
            cache_read_tokens: 2000,
            cache_write_tokens: 10,
            output_tokens: 3
        })
    );
    let received = server.received_requests().await.unwrap();
    assert!(received[0].headers.get("authorization").is_none());
    let sent: Value = received[0].body_json().unwrap();
    assert_eq!(sent, anthropic_body(&req, "claude-test"));
    assert_eq!(sent["system"][0]["cache_control"]["type"], "ephemeral");
    let tools = sent["tools"].as_array().unwrap();
    assert_eq!(tools.last().unwrap()["cache_control"]["type"], "ephemeral");
    assert!(tools[0].get("cache_control").is_none());
    // user, assistant (tool_use), user (tool_result with the last breakpoint)
    assert_eq!(sent["messages"].as_array().unwrap().len(), 3);
    assert_eq!(sent["messages"][2]["content"][0]["type"], "tool_result");
    assert_eq!(
        sent["messages"][2]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
    assert_eq!(
        sent["messages"][0]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
}

#[tokio::test]
async fn retries_429_honouring_retry_after() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_string("slow down"),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    mount_ok(&server, 2).await;
    let t = Instant::now();
    let r = openai_model(&server, &opts())
        .respond(&request(), "c")
        .await
        .unwrap();
    assert_eq!(r.text, "Let me grep.");
    assert!(
        t.elapsed() >= Duration::from_millis(950),
        "waited only {:?}",
        t.elapsed()
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn retries_500_then_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_string("boom"))
        .up_to_n_times(2)
        .with_priority(1)
        .mount(&server)
        .await;
    mount_ok(&server, 2).await;
    let r = openai_model(&server, &opts())
        .respond(&request(), "c")
        .await
        .unwrap();
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn anthropic_retries_overloaded_529() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(529)
                .set_body_string(r#"{"type":"error","error":{"type":"overloaded_error"}}"#),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(anthropic_answer()))
        .with_priority(2)
        .mount(&server)
        .await;
    let m = AnthropicModel::new("claude-test", &server.uri(), KEY, &opts()).unwrap();
    assert_eq!(m.respond(&request(), "c").await.unwrap().text, "Done.");
}

#[tokio::test]
async fn gives_up_after_500s_naming_status_and_attempts() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_string("internal error"))
        .expect(3)
        .mount(&server)
        .await;
    let o = BackendOptions {
        max_retries: 2,
        ..opts()
    };
    let err = openai_model(&server, &o)
        .respond(&request(), "c")
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ModelError::Transport { .. }), "{err:?}");
    assert!(
        text.contains("3 attempts") && text.contains("500") && text.contains("internal error"),
        "{text}"
    );
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(400).set_body_string("{\"error\":{\"message\":\"bad tools\"}}"),
        )
        .expect(1)
        .mount(&server)
        .await;
    let err = openai_model(&server, &opts())
        .respond(&request(), "c")
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Transport { .. }), "{err:?}");
    assert!(
        err.to_string().contains("400") && err.to_string().contains("not retried"),
        "{err}"
    );
}

#[tokio::test]
async fn connection_refused_is_retried_then_transport() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let o = BackendOptions {
        max_retries: 1,
        ..opts()
    };
    let m = OpenAiModel::new("m", &format!("http://127.0.0.1:{port}/v1"), None, &o).unwrap();
    let err = m.respond(&request(), "c").await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ModelError::Transport { .. }), "{err:?}");
    assert!(
        text.contains("2 attempts") && text.contains("connection failed"),
        "{text}"
    );
    assert!(
        !text.contains("127.0.0.1"),
        "the url must not appear: {text}"
    );
}

#[tokio::test]
async fn malformed_json_is_malformed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("<html>oops</html>"))
        .mount(&server)
        .await;
    let err = openai_model(&server, &opts())
        .respond(&request(), "c")
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Malformed { .. }), "{err:?}");
    assert!(err.to_string().contains("not JSON"), "{err}");
}

#[tokio::test]
async fn truncated_bodies_are_retried_then_malformed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_string(r#"{"choices": [{"message": {"content": "hel"#),
        )
        .mount(&server)
        .await;
    let err = openai_model(&server, &opts())
        .respond(&request(), "c")
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Malformed { .. }), "{err:?}");
    assert!(err.to_string().contains("truncated"), "{err}");
    assert_eq!(server.received_requests().await.unwrap().len(), 4);
}

#[tokio::test]
async fn a_truncated_body_is_retried_then_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_string(r#"{"choices": [{"message": {"content": "hel"#),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    mount_ok(&server, 2).await;
    let r = openai_model(&server, &opts())
        .respond(&request(), "c")
        .await
        .unwrap();
    assert_eq!(r.text, "Let me grep.");
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

/// A server on 127.0.0.1 that answers connection `i` with `answers[i]` (raw bytes, then closes);
/// returns its base URL and the count of connections it took.
fn raw_server(answers: Vec<Vec<u8>>) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    std::thread::spawn(move || {
        for (i, s) in l.incoming().flatten().enumerate() {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut s = s;
            let mut buf = vec![0u8; 1 << 16];
            let mut got = Vec::new();
            // Read the request head and body (the client sends a Content-Length).
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got);
                if let Some(end) = text.find("\r\n\r\n") {
                    let len = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if got.len() >= end + 4 + len {
                        break;
                    }
                }
            }
            let answer = answers
                .get(i)
                .or(answers.last())
                .cloned()
                .unwrap_or_default();
            let _ = s.write_all(&answer);
            let _ = s.flush();
        }
    });
    (format!("http://{addr}/v1"), count)
}

fn http_ok(body: &[u8]) -> Vec<u8> {
    let mut v = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    v.extend_from_slice(body);
    v
}

#[tokio::test]
async fn a_body_cut_short_by_a_closed_connection_is_retried() {
    let good = serde_json::to_vec(&openai_answer()).unwrap();
    let mut cut = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        good.len()
    )
    .into_bytes();
    cut.extend_from_slice(&good[..good.len() / 2]);
    let (base, count) = raw_server(vec![cut, http_ok(&good)]);
    let m = OpenAiModel::new("m", &base, None, &opts()).unwrap();
    let r = m.respond(&request(), "c").await.unwrap();
    assert_eq!(r.text, "Let me grep.");
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_oversized_body_is_refused_naming_the_cap() {
    use harness_runner::backends::MAX_RESPONSE_BYTES;
    // Announced by its length.
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{{\"choices\": [",
        200 * 1024 * 1024
    );
    let (base, count) = raw_server(vec![head.into_bytes()]);
    let m = OpenAiModel::new("m", &base, None, &opts()).unwrap();
    let err = m.respond(&request(), "c").await.unwrap_err();
    assert!(matches!(err, ModelError::Malformed { .. }), "{err:?}");
    assert!(err.to_string().contains("larger than 32 MiB"), "{err}");
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 1);
    // Streamed without a length.
    let mut chunked = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n".to_vec();
    let piece = vec![b' '; 1024 * 1024];
    for _ in 0..=(MAX_RESPONSE_BYTES / piece.len()) {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(&piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let (base, _) = raw_server(vec![chunked]);
    let m = OpenAiModel::new("m", &base, None, &opts()).unwrap();
    let err = m.respond(&request(), "c").await.unwrap_err();
    assert!(err.to_string().contains("larger than 32 MiB"), "{err}");
}

#[tokio::test]
async fn duplicate_tool_call_ids_are_made_unique_and_empty_names_kept() {
    let server = MockServer::start().await;
    let answer = json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"a\"}"}},
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"b\"}"}},
        {"id": "c1", "type": "function", "function": {"name": "", "arguments": "{}"}}
    ]}}]});
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(&server)
        .await;
    let r = openai_model(&server, &opts())
        .respond(&request(), "c")
        .await
        .unwrap();
    let ids: Vec<&str> = r.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, vec!["c1", "c1-2", "c1-3"]);
    assert_eq!(r.tool_calls[2].name, "");

    let a = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
        "type": "message", "usage": {},
        "content": [
            {"type": "tool_use", "id": "t", "name": "grep", "input": {"pattern": "x"}},
            {"type": "tool_use", "id": "t", "name": "", "input": {}}
        ]})))
        .mount(&a)
        .await;
    let m = AnthropicModel::new("claude-test", &a.uri(), KEY, &opts()).unwrap();
    let r = m.respond(&request(), "c").await.unwrap();
    let ids: Vec<&str> = r.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, vec!["t", "t-2"]);
}

#[tokio::test]
async fn missing_field_is_malformed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"id": "x", "usage": {}})))
        .mount(&server)
        .await;
    let err = openai_model(&server, &opts())
        .respond(&request(), "c")
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Malformed { .. }), "{err:?}");
    assert!(err.to_string().contains("missing field `choices`"), "{err}");

    let a = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"type": "message", "usage": {}})),
        )
        .mount(&a)
        .await;
    let m = AnthropicModel::new("claude-test", &a.uri(), KEY, &opts()).unwrap();
    let err = m.respond(&request(), "c").await.unwrap_err();
    assert!(err.to_string().contains("missing field `content`"), "{err}");
}

#[tokio::test]
async fn slow_response_times_out_is_retried_then_transport() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(openai_answer())
                .set_delay(Duration::from_secs(2)),
        )
        .mount(&server)
        .await;
    let o = BackendOptions {
        timeout: Duration::from_millis(300),
        max_retries: 1,
        ..opts()
    };
    let t = Instant::now();
    let err = openai_model(&server, &o)
        .respond(&request(), "c")
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ModelError::Transport { .. }), "{err:?}");
    assert!(
        text.contains("timed out") && text.contains("2 attempts"),
        "{text}"
    );
    assert!(
        t.elapsed() < Duration::from_millis(1900),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn invalid_tool_arguments_become_invalid_arguments() {
    let server = MockServer::start().await;
    let answer = json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
        {"id": "c9", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"a.rs\""}}
    ]}}]});
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(&server)
        .await;
    let r = openai_model(&server, &opts())
        .respond(&request(), "c")
        .await
        .unwrap();
    assert_eq!(r.text, "");
    assert_eq!(
        r.tool_calls[0].args,
        json!({"__invalid_arguments": "{\"path\": \"a.rs\""})
    );
    assert_eq!(r.tool_calls[0].str_arg("path"), None);
    assert!(r.usage.is_none());
}

#[tokio::test]
async fn in_flight_cap_limits_concurrency() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(openai_answer())
                .set_delay(Duration::from_millis(200)),
        )
        .mount(&server)
        .await;
    let o = BackendOptions {
        in_flight: 1,
        ..opts()
    };
    // Two models on one endpoint share the cap.
    let a = openai_model(&server, &o);
    let b = OpenAiModel::new("other-model", &format!("{}/v1", server.uri()), None, &o).unwrap();
    let req = request();
    let t = Instant::now();
    let (x, y, z) = tokio::join!(
        a.respond(&req, "1"),
        b.respond(&req, "2"),
        a.respond(&req, "3")
    );
    assert!(x.is_ok() && y.is_ok() && z.is_ok());
    assert!(
        t.elapsed() >= Duration::from_millis(590),
        "ran concurrently: {:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn cassette_records_then_replays_the_same_response() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(openai_answer()))
        .expect(1) // the second identical request is answered from the recording
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let inner: Arc<dyn Model> = Arc::new(openai_model(&server, &opts()));
    let rec = Recorder::new(inner, dir.path(), 7, vec![KEY.to_string()], false).unwrap();
    let req = request();
    let recorded = rec.respond(&req, "task/none/0").await.unwrap();
    let again = rec.respond(&request(), "task/fold/0").await.unwrap();
    assert_eq!(recorded, again);

    let key = cassette_key(&req, 7);
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(files, vec![std::ffi::OsString::from(format!("{key}.json"))]);
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(format!("{key}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(file["version"], 1);
    assert_eq!(file["key"], key.as_str());
    assert_eq!(file["model"], "openai:test-model");
    assert_eq!(file["cell"], "task/none/0");
    assert_eq!(
        file["request"],
        harness_runner::backends::canonical_request(&req)
    );
    assert_eq!(
        serde_json::from_value::<Response>(file["response"].clone()).unwrap(),
        recorded
    );

    let replay = ReplayModel::open(dir.path(), 7).unwrap();
    assert_eq!(
        replay.respond(&request(), "task/none/0").await.unwrap(),
        recorded
    );
}

/// A mock server that must be asked exactly once (checked when it is dropped), with `answer`.
async fn answering_once(answer: Value) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .expect(1)
        .mount(&server)
        .await;
    server
}

/// A recorder of an OpenAI-compatible mock into `dir` at epoch 0.
fn recorder(server: &MockServer, dir: &std::path::Path, resume: bool) -> Recorder {
    Recorder::new(
        Arc::new(openai_model(server, &opts())),
        dir,
        0,
        vec![],
        resume,
    )
    .unwrap()
}

/// A request whose text differs from `request()`'s, so it has another cassette key.
fn other_request() -> Request {
    let mut req = request();
    req.system = format!("{} (another request)", req.system).into();
    req
}

#[tokio::test]
async fn a_resumed_recording_asks_only_what_the_cassette_lacks() {
    let dir = tempfile::tempdir().unwrap();
    // The first recording: one exchange, then "interrupted".
    let first = answering_once(openai_answer()).await;
    let rec = recorder(&first, dir.path(), false);
    let recorded = rec.respond(&request(), "item/1").await.unwrap();
    let recorded_file = dir
        .path()
        .join(format!("{}.json", cassette_key(&request(), 0)));
    let before = std::fs::read_to_string(&recorded_file).unwrap();

    // Resumed against a server that must be asked exactly once: for the missing request.
    let mut answer = openai_answer();
    answer["choices"][0]["message"]["content"] = Value::from("a new answer");
    let second = answering_once(answer).await;
    let resumed = recorder(&second, dir.path(), true);
    assert_eq!(
        resumed.respond(&request(), "item/1").await.unwrap(),
        recorded
    );
    let fresh = resumed.respond(&other_request(), "item/2").await.unwrap();
    assert_ne!(fresh, recorded);
    assert_eq!(
        std::fs::read_to_string(&recorded_file).unwrap(),
        before,
        "not rewritten"
    );
    let replay = ReplayModel::open(dir.path(), 0).unwrap();
    assert_eq!(
        replay.respond(&other_request(), "item/2").await.unwrap(),
        fresh
    );

    // Without resuming, the same folder is asked again (and overwritten).
    let third = answering_once(openai_answer()).await;
    let again = recorder(&third, dir.path(), false);
    again.respond(&request(), "item/1").await.unwrap();
}

/// One request to an OpenAI-compatible model on `openai` and one to a Claude model on
/// `anthropic` (the same server may play both), built with `o`.
async fn ask_both(openai: &MockServer, anthropic: &MockServer, o: &BackendOptions) {
    openai_model(openai, o)
        .respond(&request(), "c")
        .await
        .unwrap();
    AnthropicModel::new("claude-test", &anthropic.uri(), KEY, o)
        .unwrap()
        .respond(&request(), "c")
        .await
        .unwrap();
}

#[tokio::test]
async fn max_output_tokens_is_sent_as_max_tokens_to_both_providers() {
    let server = MockServer::start().await;
    for (endpoint, answer) in [
        ("/v1/chat/completions", openai_answer()),
        ("/v1/messages", anthropic_answer()),
    ] {
        Mock::given(method("POST"))
            .and(path(endpoint))
            .and(body_partial_json(json!({"max_tokens": 77})))
            .respond_with(ResponseTemplate::new(200).set_body_json(answer))
            .expect(1)
            .mount(&server)
            .await;
    }
    let capped = BackendOptions {
        max_output_tokens: Some(77),
        ..opts()
    };
    ask_both(&server, &server, &capped).await;
    // Uncapped: no `max_tokens` for an OpenAI-compatible server (none of the mocks above match).
    let requests = server.received_requests().await.unwrap_or_default();
    let uncapped_server = MockServer::start().await;
    mount_ok(&uncapped_server, 1).await;
    openai_model(&uncapped_server, &opts())
        .respond(&request(), "c")
        .await
        .unwrap();
    let sent: Value = uncapped_server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert!(sent.get("max_tokens").is_none(), "{sent}");
    assert_eq!(requests.len(), 2);
}

#[tokio::test]
async fn temperature_is_sent_to_both_providers_only_when_given() {
    let server = MockServer::start().await;
    mount_ok(&server, 2).await;
    let anthropic = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(anthropic_answer()))
        .expect(2)
        .mount(&anthropic)
        .await;
    for temperature in [Some(0.0), None] {
        let o = BackendOptions {
            temperature,
            ..opts()
        };
        ask_both(&server, &anthropic, &o).await;
    }
    for srv in [&server, &anthropic] {
        let sent: Vec<Value> = srv
            .received_requests()
            .await
            .unwrap()
            .iter()
            .map(|r| r.body_json().unwrap())
            .collect();
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[0]["temperature"], json!(0.0), "{}", sent[0]);
        assert!(sent[1].get("temperature").is_none(), "{}", sent[1]);
    }
    // Over the Messages API's 1: refused when the model is built, before any request.
    let hot = BackendOptions {
        temperature: Some(1.5),
        ..opts()
    };
    let err = AnthropicModel::new("claude-test", &anthropic.uri(), KEY, &hot)
        .err()
        .expect("1.5 is refused for anthropic");
    assert!(
        err.to_string().contains("--temperature 1.5 is over 1"),
        "{err}"
    );
    openai_model(&server, &hot)
        .respond(&request(), "c")
        .await
        .unwrap();
    let last: Value = server.received_requests().await.unwrap()[2]
        .body_json()
        .unwrap();
    assert_eq!(last["temperature"], json!(1.5));
}

#[tokio::test]
async fn errors_are_never_recorded() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let o = BackendOptions {
        max_retries: 0,
        ..opts()
    };
    let rec = Recorder::new(
        Arc::new(openai_model(&server, &o)),
        dir.path(),
        0,
        vec![],
        false,
    )
    .unwrap();
    assert!(rec.respond(&request(), "c").await.is_err());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn replay_without_recording_names_key_and_cell() {
    let dir = tempfile::tempdir().unwrap();
    let replay = ReplayModel::open(dir.path(), 1).unwrap();
    let req = request();
    let err = replay
        .respond(&req, "trim-rerun/fold/e0")
        .await
        .unwrap_err();
    let key = cassette_key(&req, 1);
    match &err {
        ModelError::MissingRecording { key: k, cell, .. } => {
            assert_eq!(k, &key);
            assert_eq!(cell, "trim-rerun/fold/e0");
        }
        other => panic!("unexpected {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains(&key) && text.contains("trim-rerun/fold/e0"),
        "{text}"
    );
    // Another epoch is another key.
    assert_ne!(cassette_key(&req, 2), key);
}

/// Answers 500 with the request's authorization header in the body.
struct EchoAuth;

impl Respond for EchoAuth {
    fn respond(&self, req: &wiremock::Request) -> ResponseTemplate {
        let auth = req
            .headers
            .get("authorization")
            .or_else(|| req.headers.get("x-api-key"))
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        ResponseTemplate::new(500)
            .set_body_string(format!("bad request, you sent {auth} {}", "z".repeat(2000)))
    }
}

#[tokio::test]
async fn keys_never_appear_in_errors() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(EchoAuth)
        .mount(&server)
        .await;
    let o = BackendOptions {
        max_retries: 1,
        ..opts()
    };
    let err = openai_model(&server, &o)
        .respond(&request(), "c")
        .await
        .unwrap_err()
        .to_string();
    assert!(!err.contains(KEY), "{err}");
    assert!(err.contains("[redacted]"), "{err}");
    assert!(err.len() < 900, "the body must be cut: {} chars", err.len());

    let a = AnthropicModel::new("claude-test", &server.uri(), KEY, &o).unwrap();
    let err = a.respond(&request(), "c").await.unwrap_err().to_string();
    assert!(!err.contains(KEY) && err.contains("[redacted]"), "{err}");
}

/// Answers 200 with the request's authorization header inside the model's text.
struct EchoAuthOk;

impl Respond for EchoAuthOk {
    fn respond(&self, req: &wiremock::Request) -> ResponseTemplate {
        let auth = req
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"message": {"role": "assistant", "content": format!("your header was {auth}")}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4}
        }))
    }
}

// The only test in this binary that reads or writes OPENAI_* environment variables.
#[tokio::test]
async fn keys_never_appear_in_cassettes() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(EchoAuthOk)
        .mount(&server)
        .await;
    std::env::set_var("OPENAI_BASE_URL", format!("{}/v1", server.uri()));
    std::env::set_var("OPENAI_API_KEY", KEY);
    let dir = tempfile::tempdir().unwrap();
    let o = BackendOptions {
        record: Some(dir.path().to_path_buf()),
        ..opts()
    };
    let m = parse_model("openai:env-model", &o).unwrap();
    std::env::remove_var("OPENAI_BASE_URL");
    std::env::remove_var("OPENAI_API_KEY");
    let r = m.respond(&request(), "c").await.unwrap();
    assert!(
        r.text.contains(KEY),
        "the live answer is the model's business"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(!text.contains(KEY), "{text}");
        assert!(text.contains("[redacted]"));
        assert!(
            !text.contains(&server.uri()),
            "the base url must not be recorded"
        );
    }
}
