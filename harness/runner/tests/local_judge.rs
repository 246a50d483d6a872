//! End to end: `foldbench judge run` against the real local models, in both answer modes.
//!
//! Runs only when `FOLDBENCH_LOCAL_MODEL_URL` is set (`.ci/run` starts SmolLM2-135M and Gemma 3
//! 270M with `FOLDBENCH_LLM_MODELS=smollm2,gemma3 tests/local-model.sh`); otherwise it prints
//! `skipped: …` and passes, or fails under `FOLDBENCH_REQUIRE_LOCAL_MODEL=1`. The models are
//! `FOLDBENCH_LOCAL_MODELS` (comma-separated). For every model and mode (`--answer tool`, and
//! `--answer text --grammar`), the binary judges a few task items with the answers recorded to a
//! cassette, then replays the cassette offline. The models' choices are close to coin flips: the
//! test asserts on the harness (every item answered and judged, the records say the mode, the
//! grammar reached the server so every text answer parses, the replay reproduces the records
//! exactly — latency included, from the cassette), never on the models' quality.

mod common;

use common::{binary, repo};

use std::path::Path;
use std::process::Command;

use harness_core::judge::JudgedRecord;

fn foldbench(args: &[&str], base_url: &str) -> std::process::Output {
    let out = Command::new(binary())
        .args(args)
        .current_dir(repo())
        .env("OPENAI_BASE_URL", base_url)
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("foldbench runs");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    out
}

fn records(path: &Path, model: &str) -> Vec<JudgedRecord> {
    std::fs::read_to_string(path)
        .expect("records")
        .lines()
        .map(|l| serde_json::from_str::<JudgedRecord>(l).expect("a record"))
        .filter(|r| r.model == model)
        .collect()
}

#[test]
fn each_local_model_judges_cards_in_both_answer_modes_and_the_cassettes_replay() {
    let Some(url) = common::local_model_url(
        "export $(FOLDBENCH_LLM_MODELS=smollm2,gemma3 tests/local-model.sh)",
    ) else {
        return;
    };
    let names = std::env::var("FOLDBENCH_LOCAL_MODELS")
        .or_else(|_| std::env::var("FOLDBENCH_LOCAL_MODEL"))
        .unwrap_or_else(|_| "smollm2-135m-instruct".to_string());
    let dir = tempfile::tempdir().expect("tempdir");
    let dataset = dir.path().join("items.jsonl");
    let ds = dataset.to_str().expect("utf-8 path");
    let out = foldbench(
        &[
            "judge",
            "build",
            "--from",
            "tasks/short-continuations.yaml",
            "-o",
            ds,
        ],
        &url,
    );
    assert!(out.status.success(), "judge build");
    let modes: [(&str, &[&str]); 2] = [
        ("tool", &["--answer", "tool"]),
        ("text", &["--answer", "text", "--grammar"]),
    ];
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        for (mode, flags) in modes {
            let cassette = dir.path().join(format!("{name}-{mode}"));
            let live = dir.path().join(format!("{name}-{mode}.jsonl"));
            let replayed = dir.path().join(format!("{name}-{mode}-replay.jsonl"));
            let model = format!("openai:{name}");
            let common = [
                "judge",
                "run",
                "--dataset",
                ds,
                "--limit",
                "2",
                "--max-tool-output",
                "300",
                "--max-context",
                "3000",
                "--max-answer-tokens",
                "64",
                "--jobs",
                "2",
                "--timeout",
                "600",
                "--retries",
                "1",
                "--format",
                "md",
            ];
            let mut args: Vec<&str> = common.to_vec();
            args.extend_from_slice(&["--model", &model, "--record"]);
            args.push(cassette.to_str().expect("utf-8"));
            args.extend_from_slice(&["-o", live.to_str().expect("utf-8")]);
            args.extend_from_slice(flags);
            let t = std::time::Instant::now();
            let out = foldbench(&args, &url);
            eprintln!(
                "{name} {mode}: {:.1}s\n{}",
                t.elapsed().as_secs_f64(),
                String::from_utf8_lossy(&out.stdout)
            );
            assert!(out.status.success(), "{name} {mode}: judge run");
            let got = records(&live, &model);
            assert_eq!(got.len(), 2, "{name} {mode}: a record per item");
            for r in &got {
                assert_eq!(r.error, None, "{name} {mode} {}", r.item);
                assert_eq!(r.answer_mode.name(), mode, "{name} {}", r.item);
                assert!(r.prompt_tokens > 0 && r.latency_ms > 0, "{r:?}");
                if mode == "text" {
                    assert!(
                        r.constrained,
                        "{name}: the record says the grammar was sent"
                    );
                    assert!(
                        !r.score.unparsable,
                        "{name} {}: a grammar-constrained answer parses: {:?}",
                        r.item, r.text
                    );
                }
            }
            let replay = format!("replay:{}", cassette.display());
            let mut args: Vec<&str> = common.to_vec();
            args.extend_from_slice(&["--model", &replay, "-o", replayed.to_str().expect("utf-8")]);
            let out = foldbench(&args, &url);
            assert!(out.status.success(), "{name} {mode}: the replay");
            let again = records(&replayed, &replay);
            assert_eq!(again.len(), got.len());
            for (a, b) in got.iter().zip(&again) {
                let mut b = b.clone();
                b.model = a.model.clone();
                assert_eq!(
                    a, &b,
                    "{name} {mode}: the replayed record equals the live one"
                );
            }
        }
    }
}
