//! Without a sandbox (`--sandbox none`), a process a shell call leaves behind dies with the call,
//! even one in a session of its own with a cleared environment (`setsid env -i`), which neither
//! the process-group kill nor the environment marker reaches: foldbench is the child subreaper,
//! and ending a call kills the orphans it left.
//!
//! The tests of this binary take turns (no other process of theirs makes calls), so no call is
//! in flight when a call ends except the ones a test makes on purpose: a call still in flight
//! that began earlier may own the orphan, and defers its end to its own.

use std::path::Path;
use std::time::Duration;

use harness_core::ToolCall;
use harness_runner::execution::Sandbox;
use harness_runner::tools::{execute, ToolLimits};

/// The pids of live processes (zombies excluded) whose command line is exactly `words`.
fn processes(words: &[&str]) -> Vec<u32> {
    let want: Vec<u8> = words
        .iter()
        .flat_map(|w| [w.as_bytes(), b"\0"].concat())
        .collect();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let zombie = std::fs::read_to_string(e.path().join("stat"))
            .map(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if !zombie && std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == want) {
            out.push(pid);
        }
    }
    out
}

/// Held by each test: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn shell(root: &Path, command: &str) -> String {
    let limits = ToolLimits {
        sandbox: Sandbox::unconfined(),
        shell_timeout: Duration::from_secs(60),
        ..ToolLimits::default()
    };
    let call = ToolCall {
        id: "c1".into(),
        name: "shell".into(),
        args: serde_json::json!({ "command": command }),
    };
    execute(root, &call, &limits).await.text
}

#[tokio::test]
async fn orphans_in_a_session_of_their_own_with_no_environment_die_with_the_call() {
    let _turn = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let n = 800_000 + std::process::id() % 100_000;
    let (direct, nested, bystander) = (n.to_string(), (n + 1).to_string(), (n + 2).to_string());
    // Not a call's: this process's own child, in a session of its own, started before the call.
    let mut other = std::process::Command::new("setsid")
        .args(["sleep", &bystander])
        .spawn()
        .unwrap();
    // Start times are in clock ticks (10 ms): the call begins a few ticks later.
    std::thread::sleep(Duration::from_millis(50));
    let out = shell(
        dir.path(),
        &format!(
            "setsid env -i sleep {direct} </dev/null >/dev/null 2>&1 &\n\
             (setsid env -i sh -c 'sleep {nested} & wait' </dev/null >/dev/null 2>&1 &)\n\
             count() {{ for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' <$f 2>/dev/null; echo; \
               done | grep -cE '^sleep ({direct}|{nested}) $'; }}\n\
             while [ $(count) -lt 2 ]; do sleep 0.01; done; echo started"
        ),
    )
    .await;
    let left: Vec<u32> = [&direct, &nested]
        .iter()
        .flat_map(|w| processes(&["sleep", w]))
        .collect();
    for pid in &left {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let bystander_alive = !processes(&["sleep", &bystander]).is_empty();
    let _ = other.kill();
    let _ = other.wait();
    assert!(out.contains("started"), "{out}");
    assert!(left.is_empty(), "processes outlived their call: {left:?}");
    assert!(
        bystander_alive,
        "a process the call did not start was killed"
    );
}

#[tokio::test]
async fn an_orphan_born_while_an_earlier_call_runs_dies_when_that_call_ends() {
    let _turn = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let orphan = (900_000 + std::process::id() % 90_000).to_string();
    let go = dir.path().join("go");
    // The earlier call: runs until the file `go` appears.
    let wait_for_go = format!(
        "while [ ! -e {} ]; do sleep 0.01; done; echo earlier",
        go.display()
    );
    let earlier = shell(dir.path(), &wait_for_go);
    let later = async {
        // Let the earlier call begin first (it is in flight once its `sh` runs).
        tokio::time::sleep(Duration::from_millis(50)).await;
        let out = shell(
            dir.path(),
            &format!(
                "setsid env -i sleep {orphan} </dev/null >/dev/null 2>&1 &\n\
                 until for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' <$f 2>/dev/null; echo; \
                   done | grep -q '^sleep {orphan} $'; do sleep 0.01; done; echo later"
            ),
        )
        .await;
        // The later call has ended; the earlier one, which may own the orphan, has not.
        let deferred = !processes(&["sleep", &orphan]).is_empty();
        std::fs::write(&go, "").unwrap();
        (out, deferred)
    };
    let (first, (second, deferred)) = tokio::join!(earlier, later);
    let left = processes(&["sleep", &orphan]);
    for pid in &left {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert!(
        first.contains("earlier") && second.contains("later"),
        "{first} / {second}"
    );
    assert!(
        deferred,
        "the orphan was killed while a call that may own it ran"
    );
    assert!(left.is_empty(), "the orphan outlived every call: {left:?}");
}
