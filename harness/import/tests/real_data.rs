//! Imports every transcript in the real sessions: the in-repository subset, and the full corpus
//! when `FOLDBENCH_DATA` names it.

use std::collections::{BTreeMap, HashMap};

use harness_import::import_paths;
use harness_import::{Format, ImportedSession};

mod support;
use support::data_dirs;

/// One labelled user record of a labels file.
struct Label {
    uuid: String,
    /// `n` is not null: the record is a prompt.
    prompt: bool,
    /// The prompt's length in characters, when given.
    chars: Option<usize>,
}

/// The labelled user records of a labels file, in order.
fn labels(text: &str) -> Vec<Label> {
    let mut out: Vec<Label> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(u) = t.strip_prefix("- uuid:") {
            out.push(Label {
                uuid: u.trim().trim_matches('"').to_string(),
                prompt: false,
                chars: None,
            });
        } else if let (Some(n), Some(last)) = (t.strip_prefix("n:"), out.last_mut()) {
            last.prompt = n.trim() != "null";
        } else if let (Some(c), Some(last)) = (t.strip_prefix("chars:"), out.last_mut()) {
            last.chars = c.trim().parse().ok();
        }
    }
    out
}

#[derive(Default)]
struct Row {
    files: usize,
    sessions: usize,
    turns: usize,
    requests: usize,
    with_usage: usize,
    messages: usize,
    tokens: u64,
    warnings: usize,
}

#[test]
fn imports_everything_in_the_real_sessions() {
    for dir in data_dirs() {
        println!("== {}", dir.display());
        check_folder(&dir);
    }
}

fn check_folder(dir: &std::path::Path) {
    let report = import_paths(&[dir.to_path_buf()], None).expect("the folder can be walked");
    for (path, e) in &report.errors {
        println!("error: {}: {e}", path.display());
    }
    assert!(
        report.errors.is_empty(),
        "{} files failed",
        report.errors.len()
    );

    let rows = print_rows(&report);

    // No warnings explode: at most one per file read.
    let warnings: usize = rows.values().map(|r| r.warnings).sum();
    assert!(
        warnings <= report.files,
        "{warnings} warnings for {} files",
        report.files
    );

    // Every session has requests that point at assistant messages inside it.
    for s in &report.sessions {
        check_invariants(s);
    }

    // Claude Code: every main session whose file has two or more human prompts by the data
    // README's rule (counted here over all records, whatever the branch) has human turns,
    // requests, and usage on every request.
    let claude_main: Vec<&ImportedSession> = report
        .sessions
        .iter()
        .filter(|s| s.format == Format::ClaudeCode && s.parent.is_none())
        .collect();
    let mut multi = 0;
    for s in &claude_main {
        let text = std::fs::read_to_string(&s.source).expect("session file reads");
        if readme_prompts(&text) < 2 {
            continue;
        }
        multi += 1;
        assert!(!s.human_turns.is_empty(), "{}: no human turn", s.id);
        assert!(
            !s.requests.is_empty(),
            "{}: human turns but no requests",
            s.id
        );
        assert!(
            s.requests.iter().all(|r| r.usage.is_some()),
            "{}: a request without usage",
            s.id
        );
    }
    let strict = claude_main
        .iter()
        .filter(|s| s.human_turns.len() >= 2)
        .count();
    println!(
        "claude code: {} main sessions, {multi} with two or more prompts in the file, {strict} with two or more human turns imported",
        claude_main.len()
    );
    assert!(multi > 0);

    check_labels(dir, &claude_main);
    check_codex_labels(dir, &report.sessions);
}

/// Counts per format (files, sessions, turns, requests, usage, messages, tokens, warnings),
/// printed as a table.
fn print_rows(report: &harness_import::ImportReport) -> BTreeMap<&'static str, Row> {
    let mut rows: BTreeMap<&str, Row> = BTreeMap::new();
    let mut files_seen: HashMap<&str, Vec<&str>> = HashMap::new();
    for s in &report.sessions {
        let r = rows.entry(s.format.name()).or_default();
        r.sessions += 1;
        r.turns += s.human_turns.len();
        r.requests += s.requests.len();
        r.with_usage += s.requests.iter().filter(|q| q.usage.is_some()).count();
        r.messages += s.messages.len();
        r.tokens += s.messages.iter().map(|m| u64::from(m.tokens)).sum::<u64>();
        r.warnings += s.warnings.len();
        files_seen
            .entry(s.format.name())
            .or_default()
            .push(&s.source);
        for w in &s.warnings {
            println!("warning: {w}");
        }
    }
    for (fmt, files) in &mut files_seen {
        files.sort_unstable();
        files.dedup();
        if let Some(r) = rows.get_mut(fmt) {
            r.files = files.len();
        }
    }
    println!("{} files read", report.files);
    println!("format          files sessions turns requests usage messages   tokens warnings");
    for (fmt, r) in &rows {
        println!(
            "{fmt:<15} {:>5} {:>8} {:>5} {:>8} {:>5} {:>8} {:>8} {:>8}",
            r.files,
            r.sessions,
            r.turns,
            r.requests,
            r.with_usage,
            r.messages,
            r.tokens,
            r.warnings
        );
    }

    rows
}

/// Where labels exist, the human turns are exactly the labelled prompts, in order.
fn check_labels(dir: &std::path::Path, claude_main: &[&ImportedSession]) {
    let labels_dir = dir.join("labels/claude-code");
    let mut checked = 0;
    if let Ok(entries) = std::fs::read_dir(&labels_dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(id) = name.strip_suffix(".yaml") else {
                continue;
            };
            let Some(s) = claude_main.iter().find(|s| s.id == id) else {
                continue;
            };
            let text = std::fs::read_to_string(e.path()).expect("labels file reads");
            let want: Vec<Label> = labels(&text).into_iter().filter(|l| l.prompt).collect();
            let got: Vec<&str> = s
                .human_turns
                .iter()
                .filter_map(|t| t.id.as_deref())
                .collect();
            let want_ids: Vec<&str> = want.iter().map(|l| l.uuid.as_str()).collect();
            assert_eq!(got, want_ids, "{id}: human turns differ from the labels");
            // The prompt's words are as long as the labels say.
            for (t, l) in s.human_turns.iter().zip(&want) {
                if let Some(chars) = l.chars {
                    assert_eq!(t.text.chars().count(), chars, "{id}: turn {} text", t.turn);
                }
            }
            checked += 1;
        }
    }
    println!("human turns match the labels of {checked} sessions");
}

/// Codex: where labels exist (`labels/codex/`, or `labels-by-turn/codex/` where the corpus kept
/// them first), keyed by the importer's turn number, the session's human turns are exactly the
/// labelled turns (a resumed session's numbers start after its replayed parent history), and
/// each prompt is as long as the labels say.
fn check_codex_labels(dir: &std::path::Path, sessions: &[ImportedSession]) {
    let mut checked = 0;
    for folder in ["labels/codex", "labels-by-turn/codex"] {
        let Ok(entries) = std::fs::read_dir(dir.join(folder)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.path().display().to_string();
            let text = std::fs::read_to_string(e.path()).expect("labels file reads");
            let labels = harness_config::parse_labels(&name, &text)
                .unwrap_or_else(|p| panic!("{name}: {p:?}"));
            assert_eq!(
                labels.key,
                harness_core::judge::LabelKey::Turn,
                "{name}: Codex labels are keyed by turn number"
            );
            let s = sessions
                .iter()
                .find(|s| s.format == Format::Codex && labels.names_session(&s.id, &s.source))
                .unwrap_or_else(|| panic!("{name}: no imported Codex session it names"));
            let got: Vec<u32> = s.human_turns.iter().map(|t| t.turn).collect();
            let want: Vec<u32> = labels.by_turn.keys().copied().collect();
            assert_eq!(got, want, "{name}: human turns differ from the labels");
            // The prompt's words are as long as the labels say.
            let doc = harness_config::yaml::parse(&name, &text).expect("parsed above");
            let chars: BTreeMap<u64, u64> = doc["turns"]
                .as_sequence()
                .into_iter()
                .flatten()
                .filter_map(|t| Some((t.get("n")?.as_u64()?, t.get("chars")?.as_u64()?)))
                .collect();
            for t in &s.human_turns {
                if let Some(c) = chars.get(&u64::from(t.turn)) {
                    assert_eq!(
                        t.text.chars().count() as u64,
                        *c,
                        "{name}: turn {} text",
                        t.turn
                    );
                }
            }
            checked += 1;
        }
    }
    println!("codex human turns match the labels of {checked} sessions");
}

/// Prompts by the data README's rule: `type: user` records whose content has text (not only
/// `tool_result` blocks), not `isMeta`, not `isSidechain`, not `isCompactSummary`, whose text is
/// not only slash-command wrappers, bash-mode records or interruption notices.
fn readme_prompts(text: &str) -> usize {
    const NOT_PROMPTS: &[&str] = &[
        "<command-name>",
        "<command-message>",
        "<local-command-stdout>",
        "<local-command-caveat>",
        "<bash-input>",
        "<bash-stdout>",
        "[Request interrupted by user",
    ];
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| {
            r["type"] == "user"
                && r["isMeta"] != true
                && r["isSidechain"] != true
                && r["isCompactSummary"] != true
        })
        .filter(|r| {
            let texts: Vec<String> = match &r["message"]["content"] {
                serde_json::Value::String(t) => vec![t.clone()],
                serde_json::Value::Array(b) => b
                    .iter()
                    .filter(|b| b["type"] != "tool_result")
                    .map(|b| b["text"].as_str().unwrap_or("[image]").to_string())
                    .collect(),
                _ => Vec::new(),
            };
            !texts.is_empty()
                && !texts
                    .iter()
                    .all(|t| NOT_PROMPTS.iter().any(|p| t.trim_start().starts_with(p)))
        })
        .count()
}

fn check_invariants(s: &ImportedSession) {
    use harness_core::Role;
    for r in &s.requests {
        assert_eq!(
            s.messages[r.message].role,
            Role::Assistant,
            "{}: a request's message is not the model's",
            s.id
        );
        assert!(r.context_start <= r.context && r.context == r.message);
    }
    for (i, t) in s.human_turns.iter().enumerate() {
        assert_eq!(t.turn as usize, i + 1 + s.human_turns[0].turn as usize - 1);
        assert_eq!(s.messages[t.message].turn, t.turn);
    }
    for e in &s.events {
        assert!(e.message <= s.messages.len());
    }
    // Tool results answer calls made before them.
    let mut calls = std::collections::HashSet::new();
    for m in &s.messages {
        for c in &m.tool_calls {
            calls.insert(c.id.clone());
        }
        if let Some(id) = &m.tool_call_id {
            assert!(
                calls.contains(id) || m.tool_name.as_deref() == Some("unknown"),
                "{}: result before its call",
                s.id
            );
        }
    }
}
