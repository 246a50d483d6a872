//! What the runner's test files share: the repository root, the `foldbench` binary, a judge
//! dataset written to a file and a mock OpenAI-compatible chat server.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The local model server's URL (`FOLDBENCH_LOCAL_MODEL_URL`), or `None` after saying
/// `skipped: …` where `cargo test` shows it — written to the process's stderr itself, which
/// the test harness does not capture, so a test that did not run does not pass as `ok` unseen.
/// Under `FOLDBENCH_REQUIRE_LOCAL_MODEL=1` (set by `.ci/run`, which starts the models) a
/// missing URL fails the test instead. `start` is the command that starts the server.
pub fn local_model_url(start: &str) -> Option<String> {
    use std::io::Write;
    match std::env::var("FOLDBENCH_LOCAL_MODEL_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ if std::env::var("FOLDBENCH_REQUIRE_LOCAL_MODEL").as_deref() == Ok("1") => panic!(
            "FOLDBENCH_REQUIRE_LOCAL_MODEL=1 but FOLDBENCH_LOCAL_MODEL_URL is not set: the \
             local model did not start (start it with `{start}`)"
        ),
        _ => {
            let line = format!(
                "skipped: FOLDBENCH_LOCAL_MODEL_URL is not set, this test did not run (start a \
                 server with `{start}`)\n"
            );
            let _ = std::io::stderr().write_all(line.as_bytes());
            None
        }
    }
}

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `foldbench` binary of this build (`target/<profile>/foldbench`, beside `deps/`); it is
/// another package's (`harness/cli`), so `cargo test --workspace` builds it.
pub fn binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    dir.join("foldbench")
}

/// Writes `items` as a judge dataset (`d.jsonl`, one item per line) in `dir`.
pub fn write_dataset(dir: &Path, items: &[harness_core::judge::Item]) -> PathBuf {
    let data = dir.join("d.jsonl");
    let text: String = items
        .iter()
        .map(|i| harness_core::judge::to_line(i) + "\n")
        .collect();
    std::fs::write(&data, text).expect("write the dataset");
    data
}

/// A mock OpenAI-compatible server whose `/v1/chat/completions` answers with `answer`.
pub async fn chat_server(answer: impl wiremock::Respond + 'static) -> wiremock::MockServer {
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .and(wiremock::matchers::path("/v1/chat/completions"))
        .respond_with(answer)
        .mount(&server)
        .await;
    server
}

/// The turns offered by the card of the last user message of a chat-completions request (empty
/// when it has none): what a fake model reads before it answers.
pub fn offered_in_request(req: &wiremock::Request) -> Vec<u32> {
    let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap_or_default();
    let last_user = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or("");
    harness_core::fold::card_turns(last_user)
}
