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
