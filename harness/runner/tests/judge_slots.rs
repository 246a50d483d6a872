//! `judge run --jobs N` against a server with one slot, like llama-cpp-python's: it answers one
//! request at a time and the others wait in its queue (here: the listen backlog of a server that
//! accepts the next connection only after answering the last). A request waiting in the
//! server's queue is on its client's clock, so without foldbench queueing them itself the later
//! ones time out; with it, every item is answered and the latency recorded is the answering
//! attempt's, not the time queued.

mod common;

use common::repo;

use std::sync::Arc;
use std::time::Duration;

use harness_core::judge::Item;
use harness_runner::backends::SharedModel;
use harness_runner::backends::{BackendOptions, OpenAiModel};
use harness_runner::judge::{self, JudgeOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How long the fake server takes per answer.
const ANSWER_MS: u64 = 300;

async fn items() -> Vec<Item> {
    let sources =
        judge::classify(&[repo().join("tasks/short-continuations.yaml")]).expect("sources");
    judge::build(&sources, 2_000, 1, &|_: &str| {})
        .await
        .expect("the dataset builds")
}

/// Reads one HTTP request (headers and a Content-Length body).
async fn read_request(sock: &mut tokio::net::TcpStream) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = sock.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = sock.read(&mut chunk).await?;
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            return Ok(());
        }
    }
}

/// A server with one slot: accepts a connection, takes [`ANSWER_MS`], answers, closes, and only
/// then accepts the next. Returns its base URL.
async fn one_slot_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            if read_request(&mut sock).await.is_err() {
                continue;
            }
            tokio::time::sleep(Duration::from_millis(ANSWER_MS)).await;
            let body = serde_json::json!({
                "id": "x", "object": "chat.completion",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "Nothing is finished."}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 4}
            })
            .to_string();
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(answer.as_bytes()).await;
            let _ = sock.shutdown().await;
        }
    });
    format!("http://{addr}/v1")
}

/// A time-out shorter than the whole queue of `n` requests and longer than one answer.
fn timeout_for(n: usize) -> Duration {
    Duration::from_millis(ANSWER_MS * (n as u64) / 2)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_server_with_one_slot_gets_one_request_at_a_time_and_none_times_out() {
    let items: Vec<Item> = items().await.into_iter().take(8).collect();
    assert!(items.len() >= 6, "the dataset has items");
    let url = one_slot_server().await;
    let jobs = items.len();
    let opts = BackendOptions {
        timeout: timeout_for(jobs),
        max_retries: 0,
        in_flight: jobs,
        ..BackendOptions::default()
    };
    let model = OpenAiModel::new("one-slot", &url, None, &opts).expect("model");
    let models: Vec<SharedModel> = vec![Arc::new(model)];
    let jopts = JudgeOptions {
        jobs,
        max_tool_output: None,
        price: harness_core::metrics::Price::default(),
        progress: false,
        max_context: None,
    };
    let records = judge::judge_models(&items, &models, &jopts).await;
    assert_eq!(records.len(), items.len());
    for r in &records {
        assert_eq!(r.error, None, "{}: queued, not timed out", r.item);
        assert!(r.score.ignored, "{}: the answer was judged", r.item);
        // The attempt's own time: about one answer, not the queue before it.
        assert!(
            r.latency_ms < timeout_for(jobs).as_millis() as u64,
            "{}: latency {} ms counts the time queued",
            r.item,
            r.latency_ms
        );
    }
}

/// The control: the same server and time-out with all requests sent at once (the engine with
/// an in-flight cap of 8, as a remote provider gets): the later ones time out in its queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sent_at_once_the_requests_queued_in_the_server_time_out() {
    use harness_runner::backends::{self, provider_semaphore, Engine, RetryPolicy};
    let url = one_slot_server().await;
    let n = 8;
    let policy = RetryPolicy {
        max_retries: 0,
        base_delay: Duration::from_millis(10),
        timeout: timeout_for(n),
        max_retry_wait: backends::DEFAULT_MAX_RETRY_WAIT,
    };
    let engine = Arc::new(
        Engine::new(
            "control",
            provider_semaphore(&format!("control {url}"), n),
            policy,
            vec![],
        )
        .expect("engine"),
    );
    let body = serde_json::json!({"model": "one-slot", "messages": []});
    let mut handles = Vec::new();
    for _ in 0..n {
        let (engine, url, body) = (Arc::clone(&engine), url.clone(), body.clone());
        handles.push(tokio::spawn(async move {
            engine
                .post_json(&format!("{url}/chat/completions"), &[], &body)
                .await
                .is_err()
        }));
    }
    let mut timed_out = 0;
    for h in handles {
        timed_out += usize::from(h.await.expect("task"));
    }
    assert!(
        timed_out > 0,
        "with {n} requests in the server's queue, the later ones wait past the time-out"
    );
}
