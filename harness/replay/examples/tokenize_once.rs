//! The floor of `foldbench replay PATHS`: the work a replay cannot avoid, and nothing else.
//!
//! It reads and imports the transcripts under PATHS with the importer `replay` uses
//! (`harness_import::import_paths`: the walk, every file read and hashed, every line parsed,
//! every message built), and counts in o200k, once each, the distinct texts a replay counts:
//! every message's text, card, thinking, and each tool call's name and canonical arguments, and
//! the system prompt of a session whose requests have no recorded usage (the replay's fixed
//! prefix comes from that prompt then). The count is `harness_core::tokens::count`, the entry
//! point `replay` counts with; the importer already counts each message as it builds it through
//! that entry point, whose memo encodes each distinct text once, so the second pass here finds
//! the messages' texts counted and encodes only the system prompts.
//!
//! It prints the sessions, the texts, the distinct texts and their tokens, and on stderr how
//! long the import and the counting pass took. Nothing is replayed: no policy, cache
//! simulation, analysis or report. docs/performance.md, "Replay against tokenizing once".
//!
//! ```sh
//! cargo build --release -p harness-replay --example tokenize_once
//! target/release/examples/tokenize_once $FOLDBENCH_DATA/claude-code
//! ```

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use harness_core::tokens;

fn main() -> ExitCode {
    let paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if paths.is_empty() {
        eprintln!("usage: tokenize_once PATH...  (the paths `foldbench replay` is given)");
        return ExitCode::from(2);
    }
    let began = Instant::now();
    let report = match harness_import::import_paths(&paths, None) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot read the paths: {e}");
            return ExitCode::from(2);
        }
    };
    let imported = began.elapsed();
    let began = Instant::now();
    let mut texts = 0usize;
    let mut distinct: HashSet<&str> = HashSet::new();
    let mut calls: Vec<String> = Vec::new();
    for s in &report.sessions {
        for m in &s.messages {
            let own = [Some(&m.text), m.card.as_ref(), m.thinking.as_ref()];
            for t in own.into_iter().flatten() {
                texts += 1;
                distinct.insert(t);
            }
            for c in &m.tool_calls {
                texts += 1;
                distinct.insert(&c.name);
                calls.push(c.canonical_args());
            }
        }
    }
    for s in &report.sessions {
        if s.requests.iter().all(|r| r.usage.is_none()) {
            if let Some(system) = &s.system {
                texts += 1;
                distinct.insert(system);
            }
        }
    }
    texts += calls.len();
    distinct.extend(calls.iter().map(String::as_str));
    distinct.remove("");
    let tokens: u64 = distinct.iter().map(|t| u64::from(tokens::count(t))).sum();
    let counted = began.elapsed();
    let messages: usize = report.sessions.iter().map(|s| s.messages.len()).sum();
    println!(
        "{} files, {} sessions, {messages} messages; {texts} texts, {} distinct, {tokens} tokens",
        report.files,
        report.sessions.len(),
        distinct.len()
    );
    eprintln!(
        "import (read, parse, build and count each message) {:.3} s; distinct texts counted {:.3} s",
        imported.as_secs_f64(),
        counted.as_secs_f64()
    );
    ExitCode::SUCCESS
}
