//! `judge run --answer text` against a model on loopback: a wiremock server plays an
//! OpenAI-compatible model that answers each card with one line (some of them unparsable); the
//! requests carry no tools and, with `--grammar`, the GBNF grammar (with `--temperature`, the
//! temperature); the records say the mode and are judged as the core judges the text; the
//! cassette replays the same records and says how its answers were asked.

mod common;

use common::{binary, chat_server, offered_in_request, repo, write_dataset};

use std::path::Path;

use harness_core::judge::{judge_text, AnswerMode, Item, JudgedRecord, GRAMMAR, TEXT_INSTRUCTION};
use harness_runner::judge;
use serde_json::{json, Value};
use wiremock::{Respond, ResponseTemplate};

async fn dataset() -> Vec<Item> {
    let sources =
        judge::classify(&[repo().join("tasks/short-continuations.yaml")]).expect("sources");
    judge::build(&sources, 2_000, 1, &|_: &str| {})
        .await
        .expect("the dataset builds")
}

/// The fake model's line for a card offering `offered`.
fn line_for(offered: &[u32]) -> String {
    let (first, last) = (offered[0], offered[offered.len() - 1]);
    match offered.len() {
        1 => "ignore".into(),
        2 => format!("fold {first}-{first}\n"),
        3 => format!("Fold {first}-{last}."),
        _ => format!("fold {first}-{last}"),
    }
}

/// Answers with [`line_for`] the card of the last user message.
struct LineAnswerer;

impl Respond for LineAnswerer {
    fn respond(&self, req: &wiremock::Request) -> ResponseTemplate {
        let offered = offered_in_request(req);
        if offered.is_empty() {
            return ResponseTemplate::new(400).set_body_string("no card in the last message");
        }
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-text", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": line_for(&offered)}}],
            "usage": {"prompt_tokens": 800, "completion_tokens": 4}
        }))
    }
}

fn foldbench(args: &[&str], base: Option<&str>) -> (Option<i32>, String, String) {
    let mut cmd = std::process::Command::new(binary());
    cmd.args(args).env_remove("OPENAI_API_KEY");
    match base {
        Some(b) => cmd.env("OPENAI_BASE_URL", b),
        None => cmd.env_remove("OPENAI_BASE_URL"),
    };
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn model_records(file: &Path, model: &str) -> Vec<JudgedRecord> {
    let text = std::fs::read_to_string(file).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<JudgedRecord>(l).unwrap())
        .filter(|r| r.model == model)
        .collect()
}

/// The CSV row of `model`, by header.
fn csv_row(stdout: &str, model: &str) -> Vec<(String, String)> {
    let mut lines = stdout.lines();
    let headers: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_string)
        .collect();
    let row = lines
        .find(|l| l.starts_with(&format!("{model},")))
        .unwrap_or_else(|| panic!("no row for {model} in\n{stdout}"));
    headers
        .into_iter()
        .zip(row.split(',').map(str::to_string))
        .collect()
}

fn cell(row: &[(String, String)], header: &str) -> String {
    row.iter()
        .find(|(h, _)| h == header)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no column {header} in {row:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_answers_are_parsed_strictly_recorded_and_replayed() {
    let items = dataset().await;
    let dir = tempfile::tempdir().unwrap();
    let data = write_dataset(dir.path(), &items);
    let server = chat_server(LineAnswerer).await;
    let base = format!("{}/v1", server.uri());
    let data_s = data.display().to_string();
    let cassette = dir.path().join("cassette");
    let cassette_s = cassette.display().to_string();
    let records = dir.path().join("r.jsonl");
    let records_s = records.display().to_string();

    // Without --grammar: text mode, no grammar in the body.
    let plain = dir.path().join("plain.jsonl");
    let text_run = |more: &[&str]| {
        let mut args = vec![
            "judge",
            "run",
            "--dataset",
            &data_s,
            "--model",
            "openai:fake",
            "--answer",
            "text",
            "--format",
            "csv",
        ];
        args.extend_from_slice(more);
        tokio::task::block_in_place(|| foldbench(&args, Some(&base)))
    };
    let plain_s = plain.display().to_string();
    let (code, stdout, stderr) = text_run(&["-o", &plain_s]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert_eq!(cell(&csv_row(&stdout, "openai:fake"), "answer"), "text");
    assert_eq!(cell(&csv_row(&stdout, "oracle"), "answer"), "–");
    let first = server.received_requests().await.unwrap();
    assert_eq!(first.len(), items.len());
    for r in &first {
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        assert!(body.get("grammar").is_none(), "no grammar unless asked");
        assert!(
            body.get("temperature").is_none(),
            "no temperature unless asked"
        );
        assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    }

    // A temperature the providers do not take is refused before any request.
    let (code, _, stderr) = text_run(&["--temperature", "3"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("3 is outside 0 to 2"), "{stderr}");
    assert_eq!(server.received_requests().await.unwrap().len(), items.len());

    // With --grammar, --temperature 0 and --record.
    let (code, stdout, stderr) = text_run(&[
        "--grammar",
        "--temperature",
        "0",
        "--record",
        &cassette_s,
        "-o",
        &records_s,
    ]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let seen = server.received_requests().await.unwrap();
    assert_eq!(seen.len(), 2 * items.len());
    check_text_bodies(&seen[items.len()..]);

    // Each record is the core's judgement of the line, and says how it was asked.
    let got = check_records(&records, &items, &stdout, &cassette);

    // The cassette replays the same records with no flag, and refuses contradicting flags.
    check_replay_and_refusals(dir.path(), &data_s, &cassette_s, &base, got);
}

/// Every text-mode request with `--grammar --temperature 0`: the grammar and the temperature, no
/// tools, a system prompt then alternating user and assistant turns, the one-line instruction
/// last.
fn check_text_bodies(seen: &[wiremock::Request]) {
    for r in seen {
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(body["grammar"], GRAMMAR);
        assert_eq!(body["temperature"], json!(0.0));
        assert!(body.get("tools").is_none(), "text mode sends no tools");
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(msgs[0]["role"], "system");
        let roles: Vec<&str> = msgs[1..]
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert!(
            roles.iter().all(|r| *r == "user" || *r == "assistant"),
            "{roles:?}"
        );
        assert!(
            roles.windows(2).all(|w| w[0] != w[1]),
            "roles alternate: {roles:?}"
        );
        let last = msgs.last().unwrap()["content"].as_str().unwrap();
        assert!(last.contains(TEXT_INSTRUCTION) && !last.contains("fold_unit"));
    }
}

/// Each record is the core's judgement of the line and says how it was asked; the table counts
/// the unparsable ones; the cassette says the answers were constrained.
fn check_records(
    records: &Path,
    items: &[Item],
    stdout: &str,
    cassette: &Path,
) -> Vec<JudgedRecord> {
    let got = model_records(records, "openai:fake");
    assert_eq!(got.len(), items.len());
    let mut unparsable = 0;
    for (r, it) in got.iter().zip(items) {
        assert_eq!(r.item, it.id);
        assert_eq!((r.answer_mode, r.constrained), (AnswerMode::Text, true));
        assert_eq!(r.text, line_for(&it.offered()));
        let (want, _) = judge_text(it, &it.context(), &r.text);
        assert_eq!(r.score, want.score, "{}", it.id);
        assert_eq!(r.calls, want.calls, "{}", it.id);
        assert_eq!(r.score.unparsable, it.offered().len() == 3, "{}", it.id);
        unparsable += usize::from(r.score.unparsable);
    }
    assert!(unparsable > 0, "the dataset has a card of three turns");
    let row = csv_row(stdout, "openai:fake");
    assert_eq!(cell(&row, "answer"), "text+grammar");
    assert!(cell(&row, "unparsable").starts_with(&format!("{unparsable} (")));
    assert_eq!(cell(&csv_row(stdout, "oracle"), "unparsable"), "–");
    let marker = std::fs::read_to_string(cassette.join("answer.json")).unwrap();
    assert!(marker.contains("\"constrained\":true"), "{marker}");
    got
}

/// The cassette replays the same records with no flag, and refuses contradicting flags.
fn check_replay_and_refusals(
    dir: &Path,
    data_s: &str,
    cassette_s: &str,
    base: &str,
    got: Vec<JudgedRecord>,
) {
    let again = dir.join("again.jsonl");
    let spec = format!("replay:{cassette_s}");
    let (code, stdout, stderr) = foldbench(
        &[
            "judge",
            "run",
            "--dataset",
            data_s,
            "--model",
            &spec,
            "--format",
            "csv",
            "-o",
            &again.display().to_string(),
        ],
        None,
    );
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert_eq!(cell(&csv_row(&stdout, &spec), "answer"), "text+grammar");
    let strip = |mut r: JudgedRecord| {
        r.latency_ms = 0;
        r.model = String::new();
        r
    };
    let a: Vec<JudgedRecord> = got.into_iter().map(strip).collect();
    let b: Vec<JudgedRecord> = model_records(&again, &spec)
        .into_iter()
        .map(strip)
        .collect();
    assert_eq!(a, b);
    let (code, _, stderr) = foldbench(
        &[
            "judge",
            "run",
            "--dataset",
            data_s,
            "--model",
            &spec,
            "--answer",
            "tool",
        ],
        None,
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("drop --answer"), "{stderr}");
    let (code, _, stderr) = foldbench(
        &[
            "judge",
            "run",
            "--dataset",
            data_s,
            "--model",
            "openai:fake",
            "--grammar",
        ],
        Some(base),
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--answer text"), "{stderr}");
}
