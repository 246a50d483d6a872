//! The proxy's limits, against the scripted upstream of `scripted/`: an upstream answer that
//! never ends is cut at the cap (the proxy run under a memory limit, so a proxy that held it
//! would die, never fill the machine), one that stalls is cut at the time limit, and the agent
//! is told why in each case; the proxy goes on serving.

mod common;
mod scripted;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use scripted::{text, Dialect, Reply, Upstream};

/// The memory the proxy may hold: its writable data (`prlimit --data`), 256 MiB.
const DATA_LIMIT: u64 = 256 << 20;

/// `foldbench proxy` in front of `up` under the memory limit, with `flags`; its URL.
fn proxy(up: &Upstream, out: &std::path::Path, flags: &[&str]) -> (Child, String) {
    let mut child = Command::new("prlimit")
        .arg(format!("--data={DATA_LIMIT}:{DATA_LIMIT}"))
        .arg("--")
        .arg(common::binary())
        .args(["proxy", "--policy", "trim", "--listen", "127.0.0.1:0"])
        .arg("--upstream")
        .arg(up.url())
        .arg("--out")
        .arg(out)
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("prlimit (util-linux) runs the proxy under a memory limit");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("http://"), "the proxy printed {line:?}");
    (child, line.trim().to_string())
}

/// The most memory the proxy process held (`VmHWM`), in bytes.
fn peak(child: &Child) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .expect("VmHWM")
}

/// Stops the proxy as a user does (SIGINT) and waits for it.
fn stop(mut child: Child) -> std::process::ExitStatus {
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    child.wait().unwrap()
}

#[tokio::test]
async fn an_endless_answer_is_cut_at_the_cap_under_a_memory_limit_and_the_agent_is_told_why() {
    for dialect in Dialect::ALL {
        for stream in [true, false] {
            let what = format!("{dialect:?} stream={stream}");
            let up = Upstream::scripted(vec![Reply::Endless, Reply::Parts(vec![text("ok")])]).await;
            let out = tempfile::tempdir().unwrap();
            let (child, url) = proxy(&up, out.path(), &["--answer-cap-mib", "8"]);
            let body = scripted::first_body(dialect, stream, "go");
            let got = scripted::ask(&url, dialect, &body).await;
            let error = got.error.clone().unwrap_or_default();
            assert!(
                error.contains("passed 8 MiB"),
                "{what}: the agent is told why: {}",
                &got.raw[got.raw.len().saturating_sub(600)..]
            );
            if stream {
                assert_eq!(got.status, 200, "{what}: the stream began");
            } else {
                assert_eq!(got.status, 502, "{what}");
            }
            // The proxy is alive and held about the cap, not the answer.
            let next = scripted::ask(&url, dialect, &body).await;
            assert_eq!(next.status, 200, "{what}: the proxy goes on: {}", next.raw);
            assert_eq!(next.text, "ok", "{what}");
            let held = peak(&child);
            assert!(
                held < 160 << 20,
                "{what}: the proxy held {} MiB",
                held >> 20
            );
            let sent = up.endless_bytes.load(std::sync::atomic::Ordering::Relaxed);
            assert!(
                sent < 1 << 30,
                "{what}: the upstream stopped writing: {} MiB",
                sent >> 20
            );
            assert!(stop(child).success(), "{what}");
            let log = std::fs::read_to_string(out.path().join("exchanges.jsonl")).unwrap();
            assert!(
                log.contains("passed 8 MiB"),
                "{what}: the record says so: {log}"
            );
        }
    }
}

#[tokio::test]
async fn an_answer_that_stalls_is_cut_at_the_time_limit_and_the_agent_is_told_why() {
    for stream in [true, false] {
        let up = Upstream::scripted(vec![Reply::Stall, Reply::Parts(vec![text("ok")])]).await;
        let out = tempfile::tempdir().unwrap();
        let (child, url) = proxy(&up, out.path(), &["--answer-time", "1"]);
        let body = scripted::first_body(Dialect::Anthropic, stream, "go");
        let got = scripted::ask(&url, Dialect::Anthropic, &body).await;
        let error = got.error.clone().unwrap_or_default();
        assert!(
            error.contains("took longer than 1 s"),
            "stream={stream}: {}",
            got.raw
        );
        let next = scripted::ask(&url, Dialect::Anthropic, &body).await;
        assert_eq!(next.text, "ok", "stream={stream}: the proxy goes on");
        assert!(stop(child).success());
    }
}

/// A proxy in this process with a header timeout and a connection cap.
async fn small_proxy(
    up: &Upstream,
    out: &std::path::Path,
    header_timeout: std::time::Duration,
    max_connections: usize,
) -> harness_runner::proxy::Proxy {
    let mut cfg = harness_runner::proxy::ProxyConfig::new(
        policies::parse_policy("trim").unwrap(),
        &up.url(),
        "127.0.0.1:0".parse().unwrap(),
        out,
    );
    cfg.header_timeout = header_timeout;
    cfg.max_connections = max_connections;
    harness_runner::proxy::Proxy::start(cfg).await.unwrap()
}

/// A connection that sends half a request's head and then nothing.
async fn trickle(addr: std::net::SocketAddr) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-ty")
        .await
        .unwrap();
    s
}

#[tokio::test]
async fn a_client_that_trickles_its_headers_is_cut_off() {
    use tokio::io::AsyncReadExt;
    let up = Upstream::scripted(vec![]).await;
    let out = tempfile::tempdir().unwrap();
    let p = small_proxy(&up, out.path(), std::time::Duration::from_secs(1), 16).await;
    let mut s = trickle(p.addr()).await;
    let mut buf = Vec::new();
    // Closed by the proxy (a guard of a minute keeps a proxy that never closes from hanging
    // the test).
    let read =
        tokio::time::timeout(std::time::Duration::from_secs(60), s.read_to_end(&mut buf)).await;
    assert!(
        matches!(read, Ok(Ok(_)) | Ok(Err(_))),
        "the proxy closed the connection"
    );
    p.stop().await.unwrap();
}

#[tokio::test]
async fn connections_past_the_cap_wait_and_are_served_when_one_closes() {
    let up = Upstream::scripted(vec![Reply::Parts(vec![text("ok")])]).await;
    let out = tempfile::tempdir().unwrap();
    let p = small_proxy(&up, out.path(), std::time::Duration::from_secs(600), 4).await;
    let mut idle = Vec::new();
    for _ in 0..10 {
        idle.push(trickle(p.addr()).await);
    }
    let settle = || async {
        for _ in 0..500 {
            if p.connections() >= 4 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        // Room for any further accept to happen, had there been no cap.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        p.connections()
    };
    assert_eq!(settle().await, 4, "four served, six waiting");
    // A real request waits its turn; it is served once the idle connections go.
    let url = p.base_url();
    let asked = tokio::spawn(async move {
        scripted::ask(
            &url,
            Dialect::Anthropic,
            &scripted::first_body(Dialect::Anthropic, false, "go"),
        )
        .await
    });
    drop(idle);
    let got = tokio::time::timeout(std::time::Duration::from_secs(60), asked)
        .await
        .expect("served once the idle connections closed")
        .unwrap();
    assert_eq!(got.text, "ok");
    p.stop().await.unwrap();
}

#[tokio::test]
async fn an_endless_answer_to_a_side_request_is_cut_at_the_cap_too() {
    let up = Upstream::scripted(vec![
        Reply::Parts(vec![text("ok")]),
        Reply::Endless,
        Reply::Parts(vec![text("still here")]),
    ])
    .await;
    let out = tempfile::tempdir().unwrap();
    let (child, url) = proxy(&up, out.path(), &["--answer-cap-mib", "8"]);
    let main = scripted::first_body(Dialect::Anthropic, true, "go");
    assert_eq!(
        scripted::ask(&url, Dialect::Anthropic, &main).await.text,
        "ok"
    );
    // Another model's request: passed through, relayed as it comes, nothing held.
    let mut side = main.clone();
    side["model"] = serde_json::json!("a-small-model");
    let r = reqwest::Client::new()
        .post(format!("{url}/v1/messages"))
        .json(&side)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(
        r.bytes().await.is_err(),
        "the body ends with an error, never as if it were whole"
    );
    let next = scripted::ask(&url, Dialect::Anthropic, &main).await;
    assert_eq!(next.text, "still here", "the proxy goes on");
    assert!(peak(&child) < 160 << 20, "{} MiB", peak(&child) >> 20);
    assert!(stop(child).success());
    let log = std::fs::read_to_string(out.path().join("exchanges.jsonl")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("\"kind\":\"side\"") && l.contains("passed 8 MiB")),
        "{log}"
    );
}
