//! Importer benchmarks: a generated 2,000-record Claude Code session (responses split over two
//! lines, parallel tool results, a few abandoned branches), imported whole (parsing, branch
//! following, merging and tokenizing every message once), and format detection on it.

// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use serde_json::json;

/// A Claude Code session of `records` JSONL records.
fn session(records: usize) -> String {
    let mut out = String::new();
    let mut n = 0usize;
    let mut parent: Option<String> = None;
    let push = |v: serde_json::Value, out: &mut String, n: &mut usize| {
        out.push_str(&v.to_string());
        out.push('\n');
        *n += 1;
    };
    let base = |kind: &str, uuid: &str, parent: &Option<String>| {
        json!({
            "parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": "/home/dev/proj",
            "sessionId": "bench-session", "version": "2.0.0", "type": kind, "uuid": uuid,
            "timestamp": "2025-09-01T10:00:00.000Z"
        })
    };
    let mut step = 0usize;
    while n < records {
        step += 1;
        // A prompt every 25 steps.
        if step % 25 == 1 {
            let uuid = format!("u-{step}");
            let mut v = base("user", &uuid, &parent);
            v["message"] = json!({"role": "user", "content": format!("Step {step}: please continue with the refactoring of module {}.", step / 25)});
            push(v, &mut out, &mut n);
            parent = Some(uuid);
        }
        // An answer split over three lines: text and two parallel calls.
        let usage = json!({"input_tokens": 4, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 20000 + step * 150, "output_tokens": 120});
        let mid = format!("msg_{step}");
        let mut last = parent.clone();
        let lines = [
            json!({"type": "text", "text": format!("Looking at src/module_{step}.rs and its tests to see what calls `parse_{step}`.")}),
            json!({"type": "tool_use", "id": format!("toolu_{step}_a"), "name": "Read", "input": {"file_path": format!("src/module_{step}.rs")}}),
            json!({"type": "tool_use", "id": format!("toolu_{step}_b"), "name": "Grep", "input": {"pattern": format!("parse_{step}"), "path": "src"}}),
        ];
        let mut call_lines = Vec::new();
        for (k, block) in lines.into_iter().enumerate() {
            let uuid = format!("a-{step}-{k}");
            let mut v = base("assistant", &uuid, &last);
            v["requestId"] = json!(format!("req_{step}"));
            v["message"] = json!({"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4", "content": [block], "usage": usage});
            push(v, &mut out, &mut n);
            if k > 0 {
                call_lines.push(uuid.clone());
            }
            last = Some(uuid);
        }
        // Results, each under its own call's line, the second written first.
        let body = "fn parse(input: &str) -> Result<Ast, Error> {\n    let tokens = lex(input)?;\n    Parser::new(tokens).parse()\n}\n".repeat(12);
        let mut result_uuid = String::new();
        for (k, which) in [(1usize, "b"), (0usize, "a")] {
            let uuid = format!("r-{step}-{which}");
            let mut v = base("user", &uuid, &Some(call_lines[k].clone()));
            v["message"] = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{step}_{which}"), "content": body}]});
            v["toolUseResult"] = json!({"stdout": body});
            push(v, &mut out, &mut n);
            result_uuid = uuid;
        }
        parent = Some(result_uuid);
        // Now and then an abandoned branch: an edited prompt whose first version is left behind.
        if step.is_multiple_of(40) {
            let uuid = format!("x-{step}");
            let mut v = base("user", &uuid, &parent);
            v["message"] = json!({"role": "user", "content": "an abandoned prompt"});
            push(v, &mut out, &mut n);
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let text = session(2000);
    let records = text.lines().count();
    let sessions =
        harness_import::import("bench.jsonl", &text, None).expect("the generated session imports");
    assert!(
        sessions[0].requests.len() > 300,
        "{} requests",
        sessions[0].requests.len()
    );

    let mut g = c.benchmark_group("import");
    g.throughput(Throughput::Elements(records as u64));
    g.bench_function("claude_code_2000_records", |b| {
        b.iter(|| harness_import::import("bench.jsonl", black_box(&text), None).map(|s| s.len()))
    });
    g.bench_function("detect_2000_records", |b| {
        b.iter(|| harness_import::detect("bench.jsonl", black_box(&text)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
