//! `judge run` against a model on loopback: a wiremock server plays an OpenAI-compatible model
//! that answers each card with `fold_unit` calls (or none), and the answers are judged exactly as
//! the core judges them. Recording to a cassette and replaying it gives the same records, and
//! the `foldbench` binary puts the model beside the baselines.

mod common;

use common::{binary, chat_server, offered_in_request, repo, write_dataset};

use std::sync::Arc;
use std::time::Duration;

use harness_core::fold::CARD_HEADER;
use harness_core::judge::{judge_calls, Item, Judged, JudgedRecord, Verdict};
use harness_core::ToolCall;
use harness_runner::backends::SharedModel;
use harness_runner::backends::{with_recording, BackendOptions, OpenAiModel, ReplayModel};
use harness_runner::cell::SYSTEM_PROMPT;
use harness_runner::judge::{self, JudgeOptions};
use serde_json::{json, Value};
use wiremock::{Respond, ResponseTemplate};

async fn dataset() -> Vec<Item> {
    let sources =
        judge::classify(&[repo().join("tasks/short-continuations.yaml")]).expect("sources");
    judge::build(&sources, 2_000, 1, &|_: &str| {})
        .await
        .expect("the dataset builds")
}

/// What the fake model does with a card offering `n` turns `offered`.
fn answer_for(offered: &[u32]) -> (String, Vec<(String, String)>) {
    let first = offered[0];
    let last = offered[offered.len() - 1];
    match offered.len() {
        1 => ("Nothing behind me is finished.".into(), vec![]),
        2 => (
            String::new(),
            vec![(
                "fold_unit".into(),
                json!({"from": first, "to": first}).to_string(),
            )],
        ),
        3 => (
            String::new(),
            vec![("fold_unit".into(), "{\"from\": \"x\"".into())],
        ),
        _ => (
            String::new(),
            vec![
                (
                    "fold_unit".into(),
                    json!({"from": first, "to": last}).to_string(),
                ),
                ("read_file".into(), json!({"path": "README.md"}).to_string()),
            ],
        ),
    }
}

/// The fake model: reads the card from the last user message and answers by [`answer_for`].
struct CardAnswerer;

impl Respond for CardAnswerer {
    fn respond(&self, req: &wiremock::Request) -> ResponseTemplate {
        let offered = offered_in_request(req);
        if offered.is_empty() {
            return ResponseTemplate::new(400).set_body_string("no card in the last user message");
        }
        let (text, calls) = answer_for(&offered);
        let calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({"id": format!("call_{i}"), "type": "function",
                       "function": {"name": name, "arguments": args}})
            })
            .collect();
        let mut message = json!({"role": "assistant", "content": text});
        if !calls.is_empty() {
            message["tool_calls"] = Value::Array(calls);
        }
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-judge", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 10}
        }))
    }
}

fn opts() -> BackendOptions {
    BackendOptions {
        base_delay: Duration::from_millis(10),
        timeout: Duration::from_secs(10),
        max_retries: 1,
        in_flight: 3,
        ..BackendOptions::default()
    }
}

fn judge_opts() -> JudgeOptions {
    JudgeOptions {
        jobs: 3,
        max_tool_output: None,
        price: harness_core::metrics::Price::default(),
        progress: false,
        max_context: None,
    }
}

/// What the core makes of the fake model's answer at an item.
fn expected(item: &Item) -> Judged {
    let (_, calls) = answer_for(&item.offered());
    let calls: Vec<ToolCall> = calls
        .into_iter()
        .enumerate()
        .map(|(i, (name, args))| ToolCall {
            id: format!("call_{i}"),
            name,
            args: serde_json::from_str(&args)
                .unwrap_or_else(|_| json!({ harness_runner::backends::INVALID_ARGUMENTS: args })),
        })
        .collect();
    judge_calls(item, &item.context(), &calls)
}

fn strip(mut r: JudgedRecord) -> JudgedRecord {
    r.latency_ms = 0;
    r.model = String::new();
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loopback_model_is_judged_like_the_core_judges_it_and_replays() {
    let items = dataset().await;
    assert_eq!(items.len(), 7);
    let server = chat_server(CardAnswerer).await;
    let cassette = tempfile::tempdir().unwrap();
    let rec_opts = BackendOptions {
        record: Some(cassette.path().to_path_buf()),
        ..opts()
    };
    let live: SharedModel = Arc::new(
        OpenAiModel::new("fake", &format!("{}/v1", server.uri()), None, &rec_opts).unwrap(),
    );
    let live = with_recording(live, &rec_opts).unwrap();
    let records = judge::judge_models(&items, &[live], &judge_opts()).await;
    assert_eq!(records.len(), items.len());
    let mut verdicts = std::collections::BTreeSet::new();
    for (r, it) in records.iter().zip(&items) {
        assert_eq!(r.error, None, "{}", r.item);
        assert_eq!(r.model, "openai:fake");
        let want = expected(it);
        assert_eq!(r.calls, want.calls, "{}", it.id);
        assert_eq!(r.score, want.score, "{}", it.id);
        assert_eq!(r.other_calls, want.other_calls);
        assert_eq!(r.prompt_tokens, 1000, "the provider's count");
        assert!(r.cost > 0.0);
        verdicts.extend(r.calls.iter().map(|c| c.verdict));
        if it.offered().len() == 1 {
            assert!(r.score.ignored && r.text.contains("Nothing"));
        }
    }
    assert!(
        verdicts.contains(&Verdict::Illegal),
        "unreadable arguments are an illegal call"
    );

    // The requests carried the session's system prompt, the workspace tools and fold_unit, and
    // the card on the last user message.
    let seen = server.received_requests().await.unwrap();
    assert_eq!(seen.len(), items.len());
    let body: Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][0]["content"], SYSTEM_PROMPT);
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"fold_unit") && tools.contains(&"read_file"),
        "{tools:?}"
    );
    let last = body["messages"].as_array().unwrap().last().unwrap();
    assert!(last["content"].as_str().unwrap().contains(CARD_HEADER));

    // Replaying the cassette gives the same records without the server.
    let replay: SharedModel = Arc::new(ReplayModel::open(cassette.path(), 0).unwrap());
    let again = judge::judge_models(&items, &[replay], &judge_opts()).await;
    assert_eq!(server.received_requests().await.unwrap().len(), items.len());
    let a: Vec<JudgedRecord> = records.into_iter().map(strip).collect();
    let b: Vec<JudgedRecord> = again.into_iter().map(strip).collect();
    assert_eq!(a, b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_puts_a_loopback_model_beside_the_baselines() {
    let items = dataset().await;
    let dir = tempfile::tempdir().unwrap();
    let data = write_dataset(dir.path(), &items);
    let server = chat_server(CardAnswerer).await;
    let records = dir.path().join("r.jsonl");
    let out = tokio::process::Command::new(binary())
        .args([
            "judge",
            "run",
            "--model",
            "openai:fake",
            "--jobs",
            "2",
            "--format",
            "csv",
        ])
        .arg("--dataset")
        .arg(&data)
        .arg("-o")
        .arg(&records)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.uri()))
        .env_remove("OPENAI_API_KEY")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<&str> = stdout
        .lines()
        .map(|l| l.split(',').next().unwrap_or(""))
        .collect();
    assert_eq!(
        rows,
        vec![
            "model",
            "oracle",
            "lexical",
            "eager",
            "never",
            "openai:fake"
        ]
    );
    let lines = std::fs::read_to_string(&records).unwrap();
    assert_eq!(lines.lines().count(), 5 * items.len());
    assert!(lines
        .lines()
        .last()
        .unwrap()
        .contains("\"model\":\"openai:fake\""));
}
