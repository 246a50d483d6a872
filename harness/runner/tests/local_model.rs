//! End-to-end check of the `openai` backend against a real local model server.
//!
//! Runs only when `FOLDBENCH_LOCAL_MODEL_URL` is set (start the server with
//! `export $(tests/local-model.sh)`); otherwise each test prints `skipped: …` and passes, or
//! fails under `FOLDBENCH_REQUIRE_LOCAL_MODEL=1` (`.ci/run`). The model is
//! tiny and its choices are close to coin flips: the test asserts on the harness (the request is
//! accepted, the answer parses, usage is recorded), never on the model's quality.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use harness_core::tokens::prefix_tokens;
use harness_core::{Message, ToolCall, ToolSpec};
use harness_core::{Purpose, Request};
use harness_runner::backends::Model;
use harness_runner::backends::{BackendOptions, OpenAiModel};
use harness_runner::tools::tool_specs;
use serde_json::json;

/// How the server these tests need is started.
const START: &str = "export $(tests/local-model.sh)";

const SYSTEM: &str =
    "You are a coding agent working in a small repository. Use the tools to inspect files \
                      before answering. Answer briefly.";

fn request(messages: Vec<Arc<Message>>) -> Request {
    let tools: Arc<[ToolSpec]> = Arc::from(tool_specs());
    let prefix = prefix_tokens(SYSTEM, &tools);
    Request::new(Arc::from(SYSTEM), tools, prefix, messages, Purpose::Turn)
}

#[tokio::test]
async fn local_model_answers_with_workspace_tools() {
    let Some(url) = common::local_model_url(START) else {
        return;
    };
    let name = std::env::var("FOLDBENCH_LOCAL_MODEL")
        .unwrap_or_else(|_| "smollm2-135m-instruct".to_string());
    let opts = BackendOptions {
        timeout: Duration::from_secs(300),
        max_retries: 1,
        in_flight: 1,
        max_output_tokens: Some(256),
        ..Default::default()
    };
    let model =
        OpenAiModel::new(&name, &url, std::env::var("OPENAI_API_KEY").ok(), &opts).expect("model");

    // 1. A first request with the six workspace tools.
    let user = Message::user(
        1,
        "List the files in the repository root, then read README.md.",
        None,
    );
    let first = request(vec![user.clone()]);
    let t = Instant::now();
    let r = model
        .respond(&first, "local/first")
        .await
        .expect("the first request fails");
    let secs = t.elapsed().as_secs_f64();
    let usage = r.usage.expect("the server reports usage");
    assert!(
        usage.prompt_tokens() > 0 && usage.output_tokens > 0,
        "{usage:?}"
    );
    for c in &r.tool_calls {
        assert!(
            !c.name.is_empty() && !c.id.is_empty() && c.args.is_object(),
            "{c:?}"
        );
    }
    eprintln!(
        "local model, first request: {:.2}s, prompt {} tokens (o200k estimate {}), output {} tokens ({:.1} tokens/s overall), {} tool call(s), text {:?}",
        secs,
        usage.prompt_tokens(),
        first.tokens,
        usage.output_tokens,
        usage.output_tokens as f64 / secs,
        r.tool_calls.len(),
        r.text.chars().take(120).collect::<String>()
    );

    // 2. A follow-up holding an assistant tool call (content "") and a tool result: the shapes
    //    some servers reject with HTTP 500 when written differently.
    let calls = if r.tool_calls.is_empty() {
        vec![ToolCall {
            id: "call_local_1".into(),
            name: "list_dir".into(),
            args: json!({"path": "."}),
        }]
    } else {
        r.tool_calls.clone()
    };
    let mut messages = vec![user, Message::assistant(1, "", calls.clone())];
    for c in &calls {
        messages.push(Message::tool_result(
            1,
            c,
            "README.md\nsrc/\nCargo.toml",
            false,
        ));
    }
    let second = request(messages);
    let t = Instant::now();
    let r2 = model
        .respond(&second, "local/second")
        .await
        .expect("the follow-up request fails");
    let secs = t.elapsed().as_secs_f64();
    let usage2 = r2.usage.expect("the server reports usage");
    assert!(
        usage2.prompt_tokens() > usage.prompt_tokens() / 2,
        "{usage2:?}"
    );
    eprintln!(
        "local model, follow-up: {:.2}s, prompt {} tokens (o200k estimate {}; cached {}), output {} tokens ({:.1} tokens/s overall)",
        secs,
        usage2.prompt_tokens(),
        second.tokens,
        usage2.cache_read_tokens,
        usage2.output_tokens,
        usage2.output_tokens as f64 / secs
    );
}

/// The whole pipeline with the real model: `trim-rerun` under `none` and `fold`, recorded to a
/// cassette, then replayed offline; the replayed records equal the recorded ones but for times.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_model_runs_a_task_under_none_and_fold_and_replays_it() {
    use harness_runner::cell::CellOptions;
    use harness_runner::run::{self, Arm, RunConfig};

    let Some(url) = common::local_model_url(START) else {
        return;
    };
    let name = std::env::var("FOLDBENCH_LOCAL_MODEL")
        .unwrap_or_else(|_| "smollm2-135m-instruct".to_string());
    // The backend reads the base URL the way the official SDKs do.
    std::env::set_var("OPENAI_BASE_URL", &url);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let task = harness_runner::tasks::load_task(&root.join("tasks/trim-rerun.yaml")).expect("task");
    let dir = tempfile::tempdir().expect("tempdir");
    let cassette = dir.path().join("cassette");
    let arms: Vec<Arm> = ["none", "fold"]
        .iter()
        .map(|p| Arm {
            label: p.to_string(),
            policy: policies::parse_policy(p).expect("policy"),
            sweep: None,
        })
        .collect();
    let config = |out: &str, record: bool, replay: bool| RunConfig {
        tasks: vec![task.clone()],
        arms: arms.clone(),
        models: vec![format!("openai:{name}")],
        seeds: vec![1],
        out: dir.path().join(out),
        jobs: 2,
        cell: CellOptions {
            max_steps: 3,
            ..CellOptions::default()
        },
        backend: BackendOptions {
            record: record.then(|| cassette.clone()),
            timeout: Duration::from_secs(300),
            max_retries: 2,
            // Bounds every generation of the server's function-calling format: unbounded, the
            // model can ramble until its 8,192-token context is full (minutes on one core).
            max_output_tokens: Some(256),
            ..BackendOptions::default()
        },
        progress: false,
        retry_errors: true,
        only: None,
        replay: replay.then(|| cassette.clone()),
    };
    let t = Instant::now();
    let recorded = run::run(config("live", true, false))
        .await
        .expect("live run");
    eprintln!(
        "live run: {} cells in {:.1}s",
        recorded.len(),
        t.elapsed().as_secs_f64()
    );
    assert_eq!(recorded.len(), 2);
    for r in &recorded {
        assert_ne!(
            r.status,
            harness_core::Status::Error,
            "{}: {:?}",
            r.id,
            r.error
        );
        assert!(r.metrics.requests > 0, "{}: requests were recorded", r.id);
        assert!(
            r.metrics.provider_request_tokens.is_some(),
            "{}: the provider's usage was recorded",
            r.id
        );
        eprintln!(
            "{}: {} requests, {} tool calls, o200k median {} vs provider median {:?}",
            r.id,
            r.metrics.requests,
            r.metrics.tool_calls,
            r.metrics.request_tokens.median,
            r.metrics.provider_request_tokens.map(|p| p.median)
        );
    }
    let requests =
        std::fs::read_to_string(dir.path().join("live/requests.jsonl")).expect("requests.jsonl");
    assert!(
        requests.lines().count() >= 2,
        "per-request records were written"
    );
    assert!(
        std::fs::read_dir(&cassette).expect("cassette").count() > 0,
        "exchanges were recorded"
    );
    let replayed = run::run(config("replay", false, true))
        .await
        .expect("replayed run");
    // Times are the only volatile values: the cell's wall and model time, and durations that
    // the checks' own output prints ("Ran 3 tests in 0.001s").
    let duration = regex::Regex::new(r"\b\d+\.\d+s\b").expect("regex");
    let strip = |r: &harness_core::CellRecord| {
        let mut r = r.clone();
        r.wall_ms = 0;
        r.model_ms = 0;
        for c in &mut r.checks {
            c.detail = duration.replace_all(&c.detail, "<duration>").into_owned();
        }
        serde_json::to_value(&r).expect("record")
    };
    for (a, b) in recorded.iter().zip(&replayed) {
        assert_eq!(
            strip(a),
            strip(b),
            "the replayed record equals the recorded one but for times"
        );
    }
}

/// Without a server the tests above say `skipped` where `cargo test` shows it, and fail when
/// CI requires the model: this binary runs one of them again, without the URL.
#[test]
fn without_a_server_the_tests_say_skipped_or_fail_when_the_model_is_required() {
    let again = |require: bool| {
        let mut c = std::process::Command::new(std::env::current_exe().expect("this test binary"));
        c.args(["--exact", "local_model_answers_with_workspace_tools"])
            .env_remove("FOLDBENCH_LOCAL_MODEL_URL")
            .env_remove("FOLDBENCH_REQUIRE_LOCAL_MODEL");
        if require {
            c.env("FOLDBENCH_REQUIRE_LOCAL_MODEL", "1");
        }
        let o = c.output().expect("the test binary runs");
        (
            o.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        )
    };
    let (code, out) = again(false);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("skipped: FOLDBENCH_LOCAL_MODEL_URL is not set, this test did not run"),
        "{out}"
    );
    let (code, out) = again(true);
    assert_eq!(code, Some(101), "{out}");
    assert!(
        out.contains("FOLDBENCH_REQUIRE_LOCAL_MODEL=1 but FOLDBENCH_LOCAL_MODEL_URL is not set"),
        "{out}"
    );
}
