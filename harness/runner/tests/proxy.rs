//! `foldbench proxy` over real HTTP on loopback: an agent's requests (as a test client sends
//! them) through the proxy to an upstream served in the test (`answering/`), which keeps every
//! body it received.

mod answering;

use std::sync::Arc;

use answering::*;
use harness_core::ToolCall;
use harness_wire::Api;
use harness_wire::SseParser;
use harness_wire::{write_answer, Answer};
use serde_json::{json, Value};
use tokio::sync::Notify;

#[tokio::test]
async fn trim_trims_what_the_upstream_receives_and_the_answer_comes_back_unchanged() {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let p = proxy("trim", &up, out.path(), None).await;
    let sent = two_turns(false);
    let (status, headers, text) = post(&p, "/v1/messages", &sent).await;
    assert_eq!(status, 200, "{text}");
    assert!(headers.iter().any(|(k, v)| k == "x-upstream" && v == "yes"));
    // The answer is the upstream's, byte for byte.
    let want = write_answer(
        Api::Anthropic,
        &Answer::from_parts(Api::Anthropic, "a1", "m", "ok", vec![], Some(usage())),
    )
    .to_string();
    assert_eq!(text, want);
    let got = up.bodies();
    assert_eq!(got.len(), 1);
    let msgs = got[0]["messages"].as_array().unwrap();
    let all = serde_json::to_string(msgs).unwrap();
    assert!(
        !all.contains("the long content"),
        "turn 1's result is trimmed: {all}"
    );
    assert!(!all.contains("tool_use"), "and its call: {all}");
    assert!(all.contains("read a") && all.contains("seen") && all.contains("now use it"));
    // Every other field as the agent wrote it.
    assert_eq!(got[0]["system"], sent["system"]);
    assert_eq!(got[0]["tools"], sent["tools"]);
    assert_eq!(got[0]["max_tokens"], sent["max_tokens"]);
    // The agent's key went upstream, in both headers.
    let h = up.got.lock().unwrap()[0].headers.clone();
    assert!(h.iter().any(|(k, v)| k == "x-api-key" && v == KEY));
    assert!(h
        .iter()
        .any(|(k, v)| k == "authorization" && v.ends_with(KEY)));
    // The agent's own history is untouched: it sends it whole again, and turn 1 is trimmed
    // again from it.
    let mut again = sent.clone();
    let m = again["messages"].as_array_mut().unwrap();
    m.push(json!({"role": "assistant", "content": [{"type": "text", "text": "ok"}]}));
    m.push(json!({"role": "user", "content": [{"type": "text", "text": "third"}]}));
    let (status, _, _) = post(&p, "/v1/messages", &again).await;
    assert_eq!(status, 200);
    let second = serde_json::to_string(&up.bodies()[1]["messages"]).unwrap();
    assert!(!second.contains("the long content"), "{second}");
    assert!(second.contains("third"));
    let summary = p.stop().await.unwrap();
    assert_eq!(summary.cells.len(), 1, "one conversation");
    // A run folder: records, request rows, events.
    let records = harness_runner::read_records(out.path()).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].arm, "trim");
    assert_eq!(records[0].metrics.requests, 2);
    let rows = std::fs::read_to_string(out.path().join("requests.jsonl")).unwrap();
    assert_eq!(rows.lines().count(), 2, "{rows}");
    assert!(rows.contains("trimmed"), "the action is recorded: {rows}");
    no_key_in(out.path());
}

#[tokio::test]
async fn pass_through_under_none_sends_the_body_unchanged_and_streams_stay_streams() {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let p = proxy("none", &up, out.path(), None).await;
    let sent = two_turns(true);
    let (status, headers, text) = post(&p, "/v1/messages?beta=true", &sent).await;
    assert_eq!(status, 200, "{text}");
    assert!(headers
        .iter()
        .any(|(k, v)| k == "content-type" && v.starts_with("text/event-stream")));
    let want: String = events_text(
        Api::Anthropic,
        &Answer::from_parts(Api::Anthropic, "a1", "m", "ok", vec![], Some(usage())),
    )
    .concat();
    assert_eq!(text, want, "the stream as the upstream sent it");
    assert_eq!(up.bodies()[0], sent, "nothing changed under none");
    assert_eq!(up.got.lock().unwrap()[0].path, "/v1/messages");
    p.stop().await.unwrap();
    no_key_in(out.path());
}

#[tokio::test]
async fn trim_through_a_streamed_chat_conversation() {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let p = proxy("trim", &up, out.path(), None).await;
    let tools = json!([{"type": "function", "function": {"name": "shell", "description": "", "parameters": {"type": "object"}}}]);
    let sent = json!({
        "model": "gpt-x", "stream": true, "tools": tools,
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "read a"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "k1", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":\"cat a.py\"}"}}]},
            {"role": "tool", "tool_call_id": "k1", "content": BIG},
            {"role": "assistant", "content": "seen"},
            {"role": "user", "content": "now use it"},
        ],
    });
    up.push(Reply::Answer("streamed", vec![]));
    let (status, _, text) = post(&p, "/v1/chat/completions", &sent).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(read_stream(Api::Chat, &text).text, "streamed");
    let got = &up.bodies()[0];
    let all = got["messages"].to_string();
    assert!(!all.contains("the long content"), "{all}");
    assert_eq!(
        got["messages"][0],
        json!({"role": "system", "content": "be brief"}),
        "pinned first"
    );
    p.stop().await.unwrap();
}

#[tokio::test]
async fn fold_through_the_proxy_card_intercepted_call_archive_and_splice_streamed() {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let p = proxy(
        "fold:card_after_tool_calls=1",
        &up,
        out.path(),
        Some(work.path()),
    )
    .await;
    // Turn 2 begins: the card goes on its prompt; the model folds turn 1 (its call is the
    // proxy's to answer) and then closes the turn.
    up.push(Reply::Answer(
        "folding first",
        vec![ToolCall {
            id: "f1".into(),
            name: "fold_unit".into(),
            args: json!({"from": 1, "to": 1}),
        }],
    ));
    up.push(Reply::Answer("turn two done", vec![]));
    let sent = two_turns(true);
    let (status, _, text) = post(&p, "/v1/messages", &sent).await;
    assert_eq!(status, 200, "{text}");
    let a = read_stream(Api::Anthropic, &text);
    assert!(a.calls.is_empty(), "the agent never sees fold_unit: {text}");
    assert!(!text.contains("fold_unit"), "{text}");
    assert_eq!(
        a.text, "folding firstturn two done",
        "one answer, both parts: {text}"
    );
    let got = up.bodies();
    assert_eq!(got.len(), 2, "the proxy asked again");
    let first = got[0]["messages"].to_string();
    assert!(
        first.contains("<fold-card>"),
        "the card is on turn 2's prompt: {first}"
    );
    let last_user = got[0]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(
        last_user.contains("now use it") && last_user.contains("<fold-card>"),
        "{last_user}"
    );
    assert!(
        got[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "fold_unit"),
        "fold_unit is offered beside the agent's tools"
    );
    let cont = got[1]["messages"].to_string();
    assert!(
        cont.contains("\"fold_unit\"") && cont.contains("tool_result"),
        "{cont}"
    );
    // Turn 3: turn 2 has ended, so turn 1 is spliced: archived first, then replaced.
    let mut next = sent.clone();
    let m = next["messages"].as_array_mut().unwrap();
    m.push(json!({"role": "assistant", "content": [
        {"type": "text", "text": "folding first"}, {"type": "text", "text": "turn two done"}]}));
    m.push(json!({"role": "user", "content": [{"type": "text", "text": "third turn"}]}));
    let (status, _, text) = post(&p, "/v1/messages", &next).await;
    assert_eq!(status, 200, "{text}");
    let archive = work
        .path()
        .join(".foldbench/archive/fold-turns-001-001.txt");
    let bytes = std::fs::read(&archive).expect("the archive is in the agent's folder");
    let sha = harness_core::sha256_hex(&bytes);
    assert!(String::from_utf8_lossy(&bytes).contains("the long content"));
    let spliced = up.bodies()[2]["messages"].to_string();
    assert!(
        !spliced.contains("the long content"),
        "turn 1 is folded: {spliced}"
    );
    assert!(
        spliced.contains("[fold]") && spliced.contains(&sha),
        "the result names the archive and its sha256: {spliced}"
    );
    assert!(
        spliced.contains("<fold-card>"),
        "turn 2's card stays where it was"
    );
    assert!(spliced.contains("third turn"));
    // The agent resends the same history: the same request goes upstream (re-applied).
    let (status, _, _) = post(&p, "/v1/messages", &next).await;
    assert_eq!(status, 200);
    let bodies = up.bodies();
    assert_eq!(
        bodies[3]["messages"], bodies[2]["messages"],
        "re-applied by identity"
    );
    p.stop().await.unwrap();
    // One conversation, one cell folder: task `proxy`, the arm as written, the model, number 1.
    let cell = out
        .path()
        .join("cells/proxy_fold_card_after_tool_calls=1_claude-x_1");
    let events = std::fs::read_to_string(cell.join("events.jsonl"))
        .unwrap_or_else(|e| panic!("{}: {e}: {:?}", cell.display(), all_files(out.path())));
    assert!(events.contains("\"event\":\"fold\""), "{events}");
    assert!(events.contains("fold_accepted"), "{events}");
    let copy = cell.join("archive/fold-turns-001-001.txt");
    assert_eq!(std::fs::read(copy).unwrap(), bytes);
    let records = harness_runner::read_records(out.path()).unwrap();
    assert_eq!(records[0].metrics.folds, 1);
    no_key_in(out.path());
    no_key_in(work.path());
}

#[tokio::test]
async fn upstream_errors_pass_through_as_they_came() {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let p = proxy("trim", &up, out.path(), None).await;
    up.push(Reply::Status(
        429,
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
    ));
    let (status, headers, text) = post(&p, "/v1/messages", &two_turns(true)).await;
    assert_eq!(status, 429);
    assert_eq!(
        text,
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#
    );
    assert!(headers.iter().any(|(k, v)| k == "retry-after" && v == "7"));
    p.stop().await.unwrap();
    let log = std::fs::read_to_string(out.path().join("exchanges.jsonl")).unwrap();
    assert!(
        log.contains("\"status\":429") && log.contains("passed through"),
        "{log}"
    );
}

#[tokio::test]
async fn a_malformed_request_gets_a_400_that_says_what_is_wrong() {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let p = proxy("trim", &up, out.path(), None).await;
    let (status, _, text) = post(
        &p,
        "/v1/messages",
        &json!({"model": "m", "messages": {"x": 1}}),
    )
    .await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("`messages` must be a list"), "{text}");
    let (status, _, text) = post(
        &p,
        "/v1/messages",
        &json!({"model": "m", "tools": tools(), "messages": [{"role": "robot", "content": "x"}]}),
    )
    .await;
    assert_eq!(status, 400, "{text}");
    assert!(
        text.contains("messages[0]") && text.contains("robot"),
        "{text}"
    );
    assert!(up.bodies().is_empty(), "nothing went upstream");
    p.stop().await.unwrap();
}

#[tokio::test]
async fn an_upstream_cut_mid_stream_gives_the_agent_an_error_event_and_the_record_says_so() {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let p = proxy("trim", &up, out.path(), None).await;
    up.push(Reply::Cut("half an answer", 2));
    let (status, _, text) = post(&p, "/v1/messages", &two_turns(true)).await;
    assert_eq!(status, 200);
    let events = SseParser::new().feed(text.as_bytes()).unwrap();
    let last = events.last().unwrap();
    assert_eq!(last.event.as_deref(), Some("error"), "{text}");
    assert!(last.data.contains("stream"), "{text}");
    p.stop().await.unwrap();
    let log = std::fs::read_to_string(out.path().join("exchanges.jsonl")).unwrap();
    assert!(
        log.contains("the upstream's stream broke") || log.contains("cut"),
        "{log}"
    );
}

#[tokio::test]
async fn an_agent_that_disconnects_mid_stream_is_recorded() {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let p = proxy("trim", &up, out.path(), None).await;
    let gate = Arc::new(Notify::new());
    up.push(Reply::Gated("a slow answer", Arc::clone(&gate)));
    let mut r = reqwest::Client::new()
        .post(format!("{}/v1/messages", p.base_url()))
        .json(&two_turns(true))
        .send()
        .await
        .unwrap();
    let first = r.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("message_start"));
    drop(r);
    let log = out.path().join("exchanges.jsonl");
    let mut seen = String::new();
    for _ in 0..500 {
        gate.notify_one();
        seen = std::fs::read_to_string(&log).unwrap_or_default();
        if seen.contains("disconnected") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(seen.contains("the agent disconnected"), "{seen}");
    p.stop().await.unwrap();
}

#[tokio::test]
async fn a_history_the_proxy_cannot_match_becomes_a_new_branch() {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let p = proxy("trim", &up, out.path(), None).await;
    let send = |body: Value| {
        let url = format!("{}/v1/messages", p.base_url());
        async move {
            reqwest::Client::new()
                .post(url)
                .header("x-claude-code-session-id", "s-1")
                .json(&body)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(send(two_turns(false)).await, 200);
    // The agent compacted on its own: its history now starts with its summary.
    let compacted = json!({
        "model": "claude-x", "max_tokens": 1000, "tools": tools(),
        "messages": [
            {"role": "user", "content": "This session is being continued from a previous conversation. Summary: read a."},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "go on"},
        ],
    });
    assert_eq!(send(compacted).await, 200);
    let s = p.stop().await.unwrap();
    assert_eq!(s.cells.len(), 1, "the same conversation, a new branch");
    let log = std::fs::read_to_string(out.path().join("exchanges.jsonl")).unwrap();
    assert!(log.contains("\"kind\":\"branch\""), "{log}");
    assert!(log.contains("branch 1 starts"), "{log}");
    assert!(up.bodies()[1]["messages"].to_string().contains("go on"));
}

#[tokio::test]
async fn side_requests_pass_through_and_are_recorded_as_such() {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let p = proxy("trim", &up, out.path(), None).await;
    assert_eq!(post(&p, "/v1/messages", &two_turns(false)).await.0, 200);
    let title = json!({"model": "small", "max_tokens": 20, "messages": [{"role": "user", "content": "title?"}]});
    let (status, _, _) = post(&p, "/v1/messages", &title).await;
    assert_eq!(status, 200);
    let probe = json!({"model": "claude-x", "max_tokens": 1, "messages": [{"role": "user", "content": "quota"}]});
    assert_eq!(post(&p, "/v1/messages", &probe).await.0, 200);
    let (status, _, _) = post(&p, "/v1/messages/count_tokens?beta=true", &two_turns(false)).await;
    assert_eq!(status, 200);
    let got = up.bodies();
    assert_eq!(got[1], title, "another model's request goes as it came");
    assert_eq!(
        got[2], probe,
        "a request without tools beside a conversation with them"
    );
    assert_eq!(got[3], two_turns(false), "count_tokens goes as it came");
    assert_eq!(up.got.lock().unwrap()[3].path, "/v1/messages/count_tokens");
    let s = p.stop().await.unwrap();
    assert_eq!(s.cells.len(), 1, "only the main conversation");
    let records = harness_runner::read_records(out.path()).unwrap();
    assert_eq!(
        records[0].metrics.requests, 1,
        "side requests are not the conversation's"
    );
    let log = std::fs::read_to_string(out.path().join("exchanges.jsonl")).unwrap();
    assert!(
        log.contains("\"kind\":\"side\"") && log.contains("\"kind\":\"passthrough\""),
        "{log}"
    );
    no_key_in(out.path());
}

#[tokio::test]
async fn a_conversation_without_tools_gets_the_policy_as_mini_swe_agent_sends_it() {
    // mini-swe-agent (text-based) sends only `model` and `messages`: no tools, its commands in
    // text, the observations as user messages. It is the agent's main conversation.
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let p = proxy("fold:card_after_tokens=1", &up, out.path(), None).await;
    let sent = json!({
        "model": "openai/gpt-x",
        "messages": [
            {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
            {"role": "user", "content": "read a.py"},
            {"role": "assistant", "content": "Step 1.\n```mswea_bash_command\ncat a.py\n```"},
            {"role": "user", "content": format!("<returncode>0</returncode>\n<output>\n{BIG}</output>")},
            {"role": "assistant", "content": "Seen.\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"},
            {"role": "user", "content": "The user added a new task: now use it"},
        ],
    });
    let (status, _, text) = post(&p, "/v1/chat/completions", &sent).await;
    assert_eq!(status, 200, "{text}");
    let got = &up.bodies()[0];
    let last = got["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(
        last.contains("now use it") && last.contains("<fold-card>"),
        "the card: {last}"
    );
    assert!(
        got["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "fold_unit")),
        "fold_unit is offered: {got}"
    );
    let s = p.stop().await.unwrap();
    assert_eq!(s.cells.len(), 1, "a conversation, not a side request");
    let log = std::fs::read_to_string(out.path().join("exchanges.jsonl")).unwrap();
    assert!(log.contains("\"kind\":\"main\""), "{log}");
}

#[tokio::test]
async fn a_proxy_started_again_on_its_folder_continues_it() {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let p = proxy("trim", &up, out.path(), None).await;
    assert_eq!(post(&p, "/v1/messages", &two_turns(false)).await.0, 200);
    p.stop().await.unwrap();
    let p = proxy("trim", &up, out.path(), None).await;
    let mut other = two_turns(false);
    other["messages"][0]["content"][0]["text"] = json!("another session");
    assert_eq!(post(&p, "/v1/messages", &other).await.0, 200);
    p.stop().await.unwrap();
    let records = harness_runner::read_records(out.path()).unwrap();
    let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["proxy/trim/claude-x/1", "proxy/trim/claude-x/2"]);
    let rows = std::fs::read_to_string(out.path().join("requests.jsonl")).unwrap();
    assert_eq!(rows.lines().count(), 2, "{rows}");
}

#[tokio::test]
async fn a_conversation_begun_before_a_restart_goes_on_with_its_folds_in_its_own_cell() {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let policy = "fold:card_after_tool_calls=1";
    let p = proxy(policy, &up, out.path(), Some(work.path())).await;
    up.push(Reply::Answer(
        "folding first",
        vec![ToolCall {
            id: "f1".into(),
            name: "fold_unit".into(),
            args: json!({"from": 1, "to": 1}),
        }],
    ));
    up.push(Reply::Answer("turn two done", vec![]));
    let sent = two_turns(false);
    assert_eq!(post(&p, "/v1/messages", &sent).await.0, 200);
    let mut next = sent.clone();
    let m = next["messages"].as_array_mut().unwrap();
    m.push(json!({"role": "assistant", "content": [
        {"type": "text", "text": "folding first"}, {"type": "text", "text": "turn two done"}]}));
    m.push(json!({"role": "user", "content": [{"type": "text", "text": "third turn"}]}));
    assert_eq!(post(&p, "/v1/messages", &next).await.0, 200);
    let before = up.bodies()[2]["messages"].clone();
    assert!(before.to_string().contains("[fold]"), "{before}");
    p.stop().await.unwrap();
    // Started again on the same folder: the agent goes on with the same history.
    let p = proxy(policy, &up, out.path(), Some(work.path())).await;
    assert_eq!(post(&p, "/v1/messages", &next).await.0, 200);
    let after = up.bodies()[3]["messages"].clone();
    assert_eq!(
        after, before,
        "the fold and the card are applied again after the restart"
    );
    let s = p.stop().await.unwrap();
    assert_eq!(s.cells.len(), 1, "the same conversation: {:?}", s.cells);
    let records = harness_runner::read_records(out.path()).unwrap();
    assert_eq!(records.len(), 1, "one cell");
    assert_eq!(
        records[0].metrics.folds, 1,
        "the fold made before the restart counts"
    );
    assert_eq!(
        records[0].metrics.requests, 4,
        "and the requests of both runs"
    );
}

#[tokio::test]
async fn two_sessions_that_begin_alike_are_two_conversations() {
    // Agents begin every session with the same reminder: the session id tells them apart.
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let p = proxy("none", &up, out.path(), None).await;
    for session in ["session-1", "session-2", "session-1"] {
        let mut body = two_turns(false);
        body["metadata"] = json!({"user_id": session});
        let (status, _, text) = post(&p, "/v1/messages", &body).await;
        assert_eq!(status, 200, "{text}");
    }
    let events = p.events().await;
    let requests: Vec<usize> = events
        .iter()
        .map(|(_, ev)| {
            ev.iter()
                .filter(|e| matches!(e, harness_core::Event::Request(_)))
                .count()
        })
        .collect();
    assert_eq!(requests, vec![2, 1], "one conversation per session");
    let summary = p.stop().await.unwrap();
    assert_eq!(summary.cells.len(), 2);
}

#[tokio::test]
async fn a_policy_process_that_fails_gives_the_agent_an_error_and_the_record_says_why() {
    // An `exec:` policy that answers the handshake and exits: the first request's plan finds it
    // gone. The agent gets a 500 saying so, nothing goes upstream, the record is an error.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("dies.py");
    std::fs::write(
        &script,
        "import json, sys\nhello = json.loads(sys.stdin.readline())\n\
         print(json.dumps({\"type\": \"hello\", \"re\": hello[\"id\"], \"protocol\": 1, \"tools\": []}), flush=True)\n\
         sys.stderr.write(\"giving up now\\n\")\n",
    )
    .unwrap();
    policies::registry::install(harness_runner::exec_policy::with_exec(
        policies::registry::Registry::builtin(),
    ));
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let policy = format!("exec:python3 {}", script.display());
    let p = proxy(&policy, &up, out.path(), None).await;
    let (status, _, text) = post(&p, "/v1/messages", &two_turns(false)).await;
    assert_eq!(status, 500, "{text}");
    assert!(text.contains("the policy failed"), "{text}");
    assert!(
        up.bodies().is_empty(),
        "nothing the policy did not decide went upstream"
    );
    p.stop().await.unwrap();
    let records = harness_runner::read_records(out.path()).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].status, harness_core::Status::Error);
    let why = records[0].error.clone().unwrap_or_default();
    assert!(why.contains("the policy failed"), "{why}");
}

#[tokio::test]
async fn every_peer_arm_answers_through_the_proxy() {
    // Each peer's arm, with its defaults, takes a conversation through the proxy: the request
    // goes upstream and the answer comes back.
    for name in policies::PEERS {
        let up = Upstream::start().await;
        let out = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let p = proxy(name, &up, out.path(), Some(work.path())).await;
        let (status, _, text) = post(&p, "/v1/messages", &two_turns(false)).await;
        assert_eq!(status, 200, "{name}: {text}");
        assert_eq!(up.bodies().len(), 1, "{name}");
    }
}

/// A Claude Code conversation with a long Bash output, and `extra` more messages after it.
fn long_bash(extra: &[Value]) -> Value {
    let log: String = (0..200).map(|i| format!("build line {i:03}\n")).collect();
    let mut messages = vec![
        json!({"role": "user", "content": [{"type": "text", "text": "build it"}]}),
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "make"}}]}),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": log}]}),
    ];
    messages.extend(extra.iter().cloned());
    json!({
        "model": "claude-x", "max_tokens": 1000, "stream": false,
        "system": [{"type": "text", "text": "You are an agent."}],
        "tools": tools(), "messages": messages,
    })
}

#[tokio::test]
async fn gemini_cli_saves_a_long_shell_output_in_the_agents_folder_and_points_at_it() {
    let up = Upstream::start().await;
    let out = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let p = proxy(
        "gemini-cli:truncate_tool_output_threshold=500",
        &up,
        out.path(),
        Some(work.path()),
    )
    .await;
    let (status, _, text) = post(&p, "/v1/messages", &long_bash(&[])).await;
    assert_eq!(status, 200, "{text}");
    // The output joins the context with this request: its file is written before the next.
    let more = [
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "c2", "name": "Read", "input": {"file_path": "a.py"}}]}),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c2", "content": "x = 1"}]}),
    ];
    let (status, _, text) = post(&p, "/v1/messages", &long_bash(&more)).await;
    assert_eq!(status, 200, "{text}");
    let file = work
        .path()
        .join(".foldbench/archive/tool-outputs/bash_c1.txt");
    let saved =
        std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert!(saved.starts_with("build line 000\n") && saved.ends_with("build line 199\n"));
    let got = up.bodies();
    let sent = got[1]["messages"][2]["content"][0]["content"].to_string();
    assert!(
        sent.contains("Output too large. Showing first 100 and last 400 characters. For full output see: .foldbench/archive/tool-outputs/bash_c1.txt"),
        "{sent}"
    );
}
