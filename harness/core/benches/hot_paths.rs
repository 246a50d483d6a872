//! Benchmarks of harness-core's hot paths.
//!
//! - `request/incremental_200` vs `request/from_scratch_200`: the token count of a request over
//!   a realistic 200-message context (user messages, assistant messages with tool calls, tool
//!   results of 1–4 KB of code- or log-like text). "Incremental" is what foldbench does: messages
//!   are `Arc<Message>` built once, each storing its o200k count ([`Message::sealed`]), and
//!   [`Request::new`] sums the stored counts. "From scratch" re-tokenizes every message
//!   ([`tokens::message_tokens`]) and the prefix ([`tokens::prefix_tokens`]) each time. Both give
//!   the same total (asserted before measuring).
//! - `tokens/count_4kb`: [`tokens::count`] on 4 KB of code-like text.
//! - `fold/splice_and_result`: [`fold::splice_fold`] of turns 1..=20 on a fresh clone of the
//!   200-message context (building the fold result, sealing it, splicing it in).
//! - `card/render`: [`fold::render_card`] of [`Context::live_turns`] for a 40-turn context.
//!
//! The contexts are generated deterministically from a fixed seed, so runs are comparable.
//!
//! Run with `cargo bench -p harness-core --bench hot_paths`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_main, BatchSize, Criterion};
use harness_core::fold;
use harness_core::tokens;
use harness_core::Context;
use harness_core::Rng;
use harness_core::{Message, ToolCall, ToolSpec};
use harness_core::{Purpose, Request};
use serde_json::json;

/// Tool-call rounds (assistant call + tool result) per turn.
const CALLS_PER_TURN: u32 = 3;
/// Messages per turn: the user message, the rounds, and the closing assistant message.
const MESSAGES_PER_TURN: u32 = 2 + 2 * CALLS_PER_TURN;

const IDENTS: &[&str] = &[
    "config", "request", "tokens", "session", "archive", "window", "policy", "result", "handler",
    "buffer", "offset", "cursor", "payload", "retries", "timeout", "parser", "entry", "cache",
    "index", "worker",
];

const PATHS: &[&str] = &[
    "src/server/handler.py",
    "src/server/config.py",
    "src/cache/lru.rs",
    "src/cache/mod.rs",
    "lib/parser/tokenizer.ts",
    "lib/parser/ast.ts",
    "tests/test_handler.py",
    "scripts/deploy.sh",
    "internal/queue/worker.go",
    "README.md",
];

const LEVELS: &[&str] = &["INFO", "DEBUG", "WARN", "ERROR", "TRACE"];

fn pick<'a>(rng: &mut Rng, items: &[&'a str]) -> &'a str {
    items[rng.below(items.len())]
}

/// A line of source code, in one of a few styles.
fn code_line(rng: &mut Rng, line: usize) -> String {
    let a = pick(rng, IDENTS);
    let b = pick(rng, IDENTS);
    let n = rng.below(10_000);
    match rng.below(6) {
        0 => format!("    def {a}_{b}(self, {b}: int = {n}) -> dict:"),
        1 => format!("        self.{a} = {b}.get(\"{a}\", {n})  # line {line}"),
        2 => format!("    let {a} = {b}.iter().filter(|x| x.{a} > {n}).count();"),
        3 => format!("        if {a} is None or len({b}) >= {n}:"),
        4 => format!("    return Err(format!(\"{a} failed for {b}: {{}}\", {n}));"),
        _ => format!("}} // end {a}::{b}"),
    }
}

/// A line of a log or a test run's output.
fn log_line(rng: &mut Rng, line: usize) -> String {
    let level = pick(rng, LEVELS);
    let a = pick(rng, IDENTS);
    let path = pick(rng, PATHS);
    let ms = rng.below(5_000);
    let id = rng.next_u64() & 0xffff_ffff;
    format!("2024-05-{:02}T12:{:02}:{:02}.{ms:03}Z {level} [{a}] req={id:08x} {path}:{line} took {ms}ms", 1 + line % 28, line % 60, (line * 7) % 60)
}

/// 1–4 KB of code- or log-like text.
fn tool_output(rng: &mut Rng, log: bool) -> String {
    let target = 1024 + rng.below(3 * 1024);
    let mut s = String::with_capacity(target + 128);
    let mut line = 1;
    while s.len() < target {
        let l = if log {
            log_line(rng, line)
        } else {
            code_line(rng, line)
        };
        s.push_str(&l);
        s.push('\n');
        line += 1;
    }
    s
}

fn tool_specs() -> Vec<ToolSpec> {
    let path =
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
    vec![
        ToolSpec {
            name: "read_file".into(),
            description: "Read a file of the workspace.".into(),
            parameters: path.clone(),
        },
        ToolSpec {
            name: "grep".into(),
            description: "Search the workspace for a regular expression.".into(),
            parameters: json!({"type": "object", "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}}, "required": ["pattern"]}),
        },
        ToolSpec {
            name: "shell".into(),
            description: "Run a shell command in the workspace.".into(),
            parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
        },
        ToolSpec {
            name: "edit_file".into(),
            description: "Replace text in a file.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}}, "required": ["path", "old", "new"]}),
        },
    ]
}

const SYSTEM: &str =
    "You are a coding agent working in a git repository. Use the tools to read, search, edit and \
                      test the code. Keep answers short; say what you changed and why.";

/// A deterministic session of `turns` turns, `MESSAGES_PER_TURN` messages each.
fn session(turns: u32) -> Context {
    let mut rng = Rng::new(0xF01D);
    let mut c = Context::default();
    let mut call_no = 0;
    for t in 1..=turns {
        c.turn = t;
        let a = pick(&mut rng, IDENTS);
        let path = pick(&mut rng, PATHS);
        c.push(Message::user(t, format!("The {a} handling in {path} breaks when the {a} is empty; fix it and run the tests."), None));
        for k in 0..CALLS_PER_TURN {
            call_no += 1;
            let id = format!("call_{call_no:04}");
            let path = pick(&mut rng, PATHS);
            let (call, log) = match (k + t) % 3 {
                0 => (
                    ToolCall {
                        id,
                        name: "read_file".into(),
                        args: json!({"path": path}),
                    },
                    false,
                ),
                1 => (
                    ToolCall {
                        id,
                        name: "grep".into(),
                        args: json!({"pattern": pick(&mut rng, IDENTS), "path": path}),
                    },
                    false,
                ),
                _ => (
                    ToolCall {
                        id,
                        name: "shell".into(),
                        args: json!({"command": format!("pytest -x {path} -q")}),
                    },
                    true,
                ),
            };
            let text = if k == 0 {
                format!("Let me look at {path} first.")
            } else {
                String::new()
            };
            c.push(Message::assistant(t, text, vec![call.clone()]));
            c.push(Message::tool_result(
                t,
                &call,
                tool_output(&mut rng, log),
                false,
            ));
        }
        c.push(Message::assistant(
            t,
            format!("Fixed: {path} now checks for an empty {a} before indexing; the tests pass (turn {t})."),
            vec![],
        ));
    }
    c
}

fn bench_request(c: &mut Criterion) {
    let ctx = session(200 / MESSAGES_PER_TURN);
    assert_eq!(ctx.messages.len(), 200);
    let messages: Vec<Arc<Message>> = ctx.messages;
    let system: Arc<str> = Arc::from(SYSTEM);
    let tools: Arc<[ToolSpec]> = Arc::from(tool_specs());
    let prefix = tokens::prefix_tokens(&system, &tools);

    let incremental = || {
        Request::new(
            Arc::clone(&system),
            Arc::clone(&tools),
            prefix,
            messages.clone(),
            Purpose::Turn,
        )
        .tokens
    };
    let from_scratch = || {
        u64::from(tokens::prefix_tokens(&system, &tools))
            + messages
                .iter()
                .map(|m| u64::from(tokens::message_tokens(m)))
                .sum::<u64>()
    };
    assert_eq!(
        incremental(),
        from_scratch(),
        "both ways must count the same tokens"
    );

    let mut g = c.benchmark_group("request");
    g.bench_function("incremental_200", |b| b.iter(|| black_box(incremental())));
    g.bench_function("from_scratch_200", |b| b.iter(|| black_box(from_scratch())));
    g.finish();
}

fn bench_tokens(c: &mut Criterion) {
    let mut rng = Rng::new(4096);
    let mut text = String::new();
    let mut line = 1;
    while text.len() < 4096 {
        text.push_str(&code_line(&mut rng, line));
        text.push('\n');
        line += 1;
    }
    text.truncate(4096);
    c.bench_function("tokens/count_4kb", |b| {
        b.iter(|| tokens::count(black_box(&text)))
    });
}

fn bench_fold(c: &mut Criterion) {
    let ctx = session(200 / MESSAGES_PER_TURN);
    let archive = ".foldbench/archive/fold-turns-001-020.txt";
    let sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    assert!(fold::splice_fold(&mut ctx.clone(), 1, 20, archive, sha).is_some());
    c.bench_function("fold/splice_and_result", |b| {
        b.iter_batched(
            || ctx.clone(),
            |mut c| {
                let msg = fold::splice_fold(&mut c, 1, 20, archive, sha);
                (c, msg)
            },
            BatchSize::SmallInput,
        )
    });
}

fn bench_card(c: &mut Criterion) {
    let ctx = session(40);
    assert_eq!(ctx.live_turns().len(), 40);
    c.bench_function("card/render", |b| {
        b.iter(|| fold::render_card(&black_box(&ctx).live_turns()))
    });
}

/// The group `criterion_main!` runs. It sits in a private module because `criterion_group!`
/// makes an undocumented `pub fn`, which the workspace's `missing_docs` lint would flag.
mod group {
    use super::{bench_card, bench_fold, bench_request, bench_tokens};
    use criterion::criterion_group;

    criterion_group!(benches, bench_request, bench_tokens, bench_fold, bench_card);
}

criterion_main!(group::benches);
