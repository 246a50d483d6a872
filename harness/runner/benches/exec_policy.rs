//! What a policy process (`exec:COMMAND`, docs/policy-protocol.md) costs foldbench beyond the
//! built-in policy it stands for, with `examples/policies/none.py` against `none`:
//!
//! - `exec/start_and_end/{bwrap,unconfined}`: a process started in the sandbox (or without
//!   one), its handshake and a session opened and closed, and its end (standard input closed,
//!   its group and marked processes killed, reaped) — once per process: per thread in protocol
//!   2, per cell or session and policy in protocol 1.
//! - `exec/next_session/{bwrap,unconfined}`: a session served by a kept process (protocol 2):
//!   `open` and `close`, the process taken from the pool and put back.
//! - `exec/session/{exec,none}`: a session of 100 requests, each after an assistant message and
//!   a tool result of about 200 tokens were appended: the context sent as deltas, the answer
//!   read and resolved. The difference over 100 is the per-request figure.
//!
//! Run with `cargo bench -p harness-runner --bench exec_policy`; the whole-process figure (the
//! replay of the in-repository sessions) is in docs/performance.md.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use criterion::{criterion_main, Criterion};
use harness_core::driver::{Driver, Next};
use harness_core::policy::Policy;
use harness_core::Context;
use harness_core::{Message, ToolCall};
use harness_runner::exec_policy::{end_idle, set_sandbox, ExecPolicy, ExecText};
use harness_runner::execution::Sandbox;

const REQUESTS: usize = 100;

fn none_py() -> ExecText {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/policies/none.py");
    ExecText::parse(&format!("python3 {}", script.display())).expect("a command")
}

/// A copy of `m` with an id of its own (the view tells messages apart by id), its count kept.
fn fresh(m: &Arc<Message>, next: &mut u64) -> Arc<Message> {
    let mut c = (**m).clone();
    *next += 1;
    c.id = *next;
    Arc::new(c)
}

/// One session of [`REQUESTS`] requests under the driver's policy, from an empty context.
fn session(driver: &mut Driver, parts: &[Arc<Message>; 3], next: &mut u64) -> usize {
    *driver.context_mut() = Context {
        turn: 1,
        ..Context::default()
    };
    driver.push(fresh(&parts[0], next));
    let mut sent = 0;
    for _ in 0..REQUESTS {
        driver.push(fresh(&parts[1], next));
        driver.push(fresh(&parts[2], next));
        match driver.next_request() {
            Next::Send { messages, .. } => sent += messages.len(),
            Next::Summarise(_) => unreachable!("none never compacts"),
        }
    }
    assert!(driver.failed().is_none(), "{:?}", driver.failed());
    sent
}

fn bench_exec(c: &mut Criterion) {
    let text = none_py();
    let mut g = c.benchmark_group("exec");
    g.sample_size(20);
    for (label, sandbox) in [
        ("bwrap", Sandbox::default()),
        ("unconfined", Sandbox::unconfined()),
    ] {
        set_sandbox(sandbox);
        g.bench_function(format!("start_and_end/{label}"), |b| {
            b.iter(|| {
                let p = ExecPolicy::start(text.clone(), 200_000);
                assert!(p.failed().is_none(), "{:?}", p.failed());
                drop(p);
                end_idle();
            })
        });
        g.bench_function(format!("next_session/{label}"), |b| {
            b.iter(|| {
                let p = ExecPolicy::start(text.clone(), 200_000);
                assert!(p.failed().is_none(), "{:?}", p.failed());
            })
        });
        end_idle();
    }
    let call = ToolCall {
        id: "c1".into(),
        name: "read_file".into(),
        args: serde_json::json!({"path": "src/app.py"}),
    };
    let parts = [
        Message::user(1, "fix the failing test in src/app.py", None),
        Message::assistant(1, "Reading the file.", vec![call.clone()]),
        Message::tool_result(
            1,
            &call,
            "x = compute(1, 2)  # a line of code\n".repeat(20),
            false,
        ),
    ];
    let mut next = 1 << 40;
    let mut exec = Driver::new(Box::new(ExecPolicy::start(text, 200_000)), 1_000);
    let mut none = Driver::new(Box::new(policies::NonePolicy::new(200_000)), 1_000);
    g.bench_function("session/exec", |b| {
        b.iter(|| black_box(session(&mut exec, &parts, &mut next)))
    });
    g.bench_function("session/none", |b| {
        b.iter(|| black_box(session(&mut none, &parts, &mut next)))
    });
    g.finish();
}

/// The group `criterion_main!` runs, in a private module: `criterion_group!` makes an
/// undocumented public function.
mod group {
    use criterion::criterion_group;

    criterion_group!(benches, super::bench_exec);
}

criterion_main!(group::benches);
