//! Replay benchmarks.
//!
//! - `replay/synthetic_*`: a generated 40-turn session (each turn: a prompt, 10 tool calls with
//!   1–3 KB results, a closing message; 820 messages, 440 requests) replayed under `none` only
//!   and under all five policies, and analysed. Tokens were counted when the session was built,
//!   so these measure the replay itself: plans, cache simulation, cards, folds (with their
//!   archive text and sha256).
//! - `corpus/*` (only when the full corpus is there: `FOLDBENCH_DATA`, or the data folder beside
//!   the checkout): the phases of `foldbench replay $FOLDBENCH_DATA` with all five policies — import (reading,
//!   parsing and tokenizing every message once), tokenizing alone (every imported message
//!   counted again: the tokenizer's share of the import), replay on one thread, and analyze.
//!
//! - `long_message/*`: a three-turn session whose second prompt is one long pasted log (10 KB,
//!   100 KB, 1 MB, 10 MB; 8 tool calls a turn) replayed under `fold`, which compacts around it.
//!   Time must grow linearly with the size (it grew quadratically while the compaction summary
//!   quoted the prompt whole).
//!
//! Run with `cargo bench -p harness-replay --bench replay`.

// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use harness_core::tokens;
use harness_core::Rng;
use harness_core::{Message, ToolCall};
use harness_import::{Format, HumanTurn, ImportedSession, RecordedRequest};
use harness_replay::hidden::{Candidates, Common, Observer, SessionIndex};
use harness_replay::none_context;
use harness_replay::{analyze_session, JudgeKind, ReplayConfig, Replayer};
use serde_json::json;

const TURNS: u32 = 40;
const CALLS: u32 = 10;

const WORDS: &[&str] = &[
    "config", "request", "tokens", "session", "archive", "window", "policy", "result", "handler",
    "buffer", "offset", "cursor", "payload", "retries", "timeout", "parser", "entry", "cache",
];

fn text(rng: &mut Rng, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 16);
    while s.len() < bytes {
        let w = WORDS[rng.below(WORDS.len())];
        s.push_str(&format!(
            "let {w}_{} = {w}.get({});\n",
            rng.below(100),
            rng.below(1000)
        ));
    }
    s
}

/// A recorded session built directly in the import model.
fn synthetic() -> ImportedSession {
    let mut rng = Rng::new(7);
    let mut messages: Vec<Arc<Message>> = Vec::new();
    let mut requests = Vec::new();
    let mut human_turns = Vec::new();
    for t in 1..=TURNS {
        let prompt = if t % 3 == 0 {
            "ok, go on".to_string()
        } else {
            format!("Turn {t}: please look at module {t} and fix the failing test in it, then tell me what it was.")
        };
        human_turns.push(HumanTurn {
            turn: t,
            message: messages.len(),
            id: Some(format!("u{t}")),
            text: prompt.clone(),
        });
        messages.push(Message::user(t, prompt, None));
        for c in 0..CALLS {
            let call = ToolCall {
                id: format!("c{t}-{c}"),
                name: "Read".into(),
                args: json!({ "file_path": format!("src/m{t}/f{c}.rs") }),
            };
            requests.push(RecordedRequest {
                message: messages.len(),
                context: messages.len(),
                context_start: 0,
                response_id: None,
                usage: None,
                model: None,
            });
            messages.push(Message::assistant(t, "", vec![call.clone()]));
            let n = 1024 + rng.below(2048);
            messages.push(Message::tool_result(t, &call, text(&mut rng, n), false));
        }
        requests.push(RecordedRequest {
            message: messages.len(),
            context: messages.len(),
            context_start: 0,
            response_id: None,
            usage: None,
            model: None,
        });
        messages.push(Message::assistant(
            t,
            format!("Fixed module {t}: the test read a stale cache entry."),
            Vec::new(),
        ));
    }
    ImportedSession {
        id: "synthetic".into(),
        format: Format::ClaudeCode,
        source: "synthetic".into(),
        parent: None,
        system: Some("You are a coding agent.".into()),
        messages,
        requests,
        events: Vec::new(),
        human_turns,
        dropped_prefix: 0,
        warnings: Vec::new(),
        started_ms: None,
        ended_ms: None,
        cwd: None,
        message_ms: Vec::new(),
    }
}

/// Three turns; turn 2 opens with a `bytes`-long pasted log; 8 tool calls a turn.
fn long_message(bytes: usize) -> ImportedSession {
    let mut messages: Vec<Arc<Message>> = Vec::new();
    let mut requests = Vec::new();
    let mut human_turns = Vec::new();
    let request = |messages: &Vec<Arc<Message>>| RecordedRequest {
        message: messages.len(),
        context: messages.len(),
        context_start: 0,
        response_id: None,
        usage: None,
        model: None,
    };
    for t in 1..=3u32 {
        let prompt = if t == 2 {
            let line = "ERROR worker 17: connection reset by peer (retrying in 250 ms)\n";
            line.repeat(bytes / line.len() + 1)[..bytes].to_string()
        } else {
            format!("Turn {t}: please look at module {t} and fix the failing test in it.")
        };
        human_turns.push(HumanTurn {
            turn: t,
            message: messages.len(),
            id: Some(format!("u{t}")),
            text: prompt.clone(),
        });
        messages.push(Message::user(t, prompt, None));
        for c in 0..8 {
            let call = ToolCall {
                id: format!("c{t}-{c}"),
                name: "Read".into(),
                args: json!({ "file_path": format!("src/m{t}/f{c}.rs") }),
            };
            requests.push(request(&messages));
            messages.push(Message::assistant(t, "", vec![call.clone()]));
            messages.push(Message::tool_result(
                t,
                &call,
                "fn main() {}\n".repeat(20),
                false,
            ));
        }
        requests.push(request(&messages));
        messages.push(Message::assistant(
            t,
            format!("Done with turn {t}."),
            Vec::new(),
        ));
    }
    ImportedSession {
        id: "long-message".into(),
        format: Format::ClaudeCode,
        source: "synthetic".into(),
        parent: None,
        system: Some("You are a coding agent.".into()),
        messages,
        requests,
        events: Vec::new(),
        human_turns,
        dropped_prefix: 0,
        warnings: Vec::new(),
        started_ms: None,
        ended_ms: None,
        cwd: None,
        message_ms: Vec::new(),
    }
}

fn long_message_benches(c: &mut Criterion) {
    let fold = Replayer::new(ReplayConfig {
        policies: vec![policies::parse_policy("fold").unwrap()],
        ..ReplayConfig::default()
    })
    .unwrap();
    let mut g = c.benchmark_group("long_message");
    g.sample_size(10);
    for (label, bytes) in [
        ("10KB", 10_000),
        ("100KB", 100_000),
        ("1MB", 1_000_000),
        ("10MB", 10_000_000),
    ] {
        let s = long_message(bytes);
        g.throughput(Throughput::Bytes(bytes as u64));
        g.bench_with_input(BenchmarkId::new("fold", label), &s, |b, s| {
            b.iter(|| fold.replay(black_box(s), None))
        });
    }
    g.finish();
}

fn data_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("FOLDBENCH_DATA")?);
    dir.is_dir().then_some(dir)
}

fn synthetic_benches(c: &mut Criterion) {
    let s = synthetic();
    let all = Replayer::new(ReplayConfig::default()).unwrap();
    let none = Replayer::new(ReplayConfig {
        policies: vec![policies::parse_policy("none").unwrap()],
        ..ReplayConfig::default()
    })
    .unwrap();
    let r = all.replay(&s, None);
    assert!(
        !r.policy("fold").unwrap().folds.is_empty(),
        "the synthetic session folds"
    );
    let mut g = c.benchmark_group("replay");
    g.bench_function("synthetic_none", |b| {
        b.iter(|| none.replay(black_box(&s), None))
    });
    g.bench_function("synthetic_five_policies", |b| {
        b.iter(|| all.replay(black_box(&s), None))
    });
    g.bench_function("synthetic_analyze", |b| {
        b.iter(|| analyze_session(black_box(&s), JudgeKind::Lexical, None))
    });
    g.finish();
}

fn corpus_benches(c: &mut Criterion) {
    let Some(dir) = data_dir() else {
        println!("corpus benchmarks skipped: FOLDBENCH_DATA does not name the real-session corpus");
        return;
    };
    let paths = vec![dir];
    let sessions = harness_import::import_paths(&paths, None)
        .expect("the data folder can be read")
        .sessions;
    let all = Replayer::new(ReplayConfig::default()).unwrap();
    let mut g = c.benchmark_group("corpus");
    g.sample_size(10);
    g.bench_function("import_and_tokenize", |b| {
        b.iter(|| harness_import::import_paths(black_box(&paths), None).map(|r| r.sessions.len()))
    });
    g.bench_function("tokenize_only", |b| {
        b.iter(|| {
            sessions
                .iter()
                .flat_map(|s| &s.messages)
                .map(|m| u64::from(tokens::message_tokens(m)))
                .sum::<u64>()
        })
    });
    g.bench_function("replay_five_policies_1_thread", |b| {
        b.iter(|| all.replay_all(black_box(&sessions), None, 1).len())
    });
    g.bench_function("hidden_analysis_1_thread", |b| {
        b.iter(|| hidden_analysis(black_box(&sessions)))
    });
    g.bench_function("analyze_1_thread", |b| {
        b.iter(|| {
            sessions
                .iter()
                .map(|s| analyze_session(s, JudgeKind::Lexical, None).requests.len())
                .sum::<usize>()
        })
    });
    g.finish();
}

/// The hidden-reference analysis alone, on one thread: every session indexed, the corpus's
/// common tokens, every response's candidates, and one observer over every `none` request (the
/// largest request of any policy; the replay runs one observer per policy).
fn hidden_analysis(sessions: &[ImportedSession]) -> usize {
    let indexes: Vec<SessionIndex> = sessions.iter().map(SessionIndex::new).collect();
    let common = Common::of(
        sessions
            .iter()
            .zip(&indexes)
            .map(|(s, ix)| (harness_replay::hidden::project(&s.source), ix)),
    );
    let mut hidden = 0;
    for (s, ix) in sessions.iter().zip(&indexes) {
        let cands = Candidates::new(s, ix, &common);
        let units = vec![0; s.human_turns.len() + 2];
        let ws = harness_replay::hidden::Workspace::new(s, ix);
        let profile = harness_core::behaviour::Profile::shipped();
        let mut obs = Observer::new(s, ix, &cands, units, &ws, profile);
        let price = harness_core::metrics::Price::default();
        for k in 0..s.requests.len() {
            let ctx = none_context(s, k);
            let tokens = harness_replay::sum_tokens(&ctx);
            hidden += obs
                .observe(k, &ctx, tokens, &price, &mut [], &mut [])
                .0
                .len();
        }
    }
    hidden
}

criterion_group!(
    benches,
    synthetic_benches,
    long_message_benches,
    corpus_benches
);
criterion_main!(benches);
