//! Your own history with no arguments: `foldbench replay` and `analyze` with no path read
//! `~/.claude/projects` and `~/.codex/sessions` (here a temporary `HOME` holding the
//! in-repository real sessions), say which folders they read, and the filters select as
//! documented in docs/replay.md.

use std::path::Path;
use std::process::{Command, Output};

use crate::helpers::{binary, root};

const CLAUDE_ID: &str = "937c6e6b-27e7-4edd-86f1-ad28f9731841";
const CODEX_ID: &str = "613a9a68-8816-40b2-a2d4-041ade599da6";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// A home folder laid out as Claude Code and Codex write theirs: one Claude Code project folder
/// (the claude-code-log sample: one session) under `.claude/projects/`, the Codex rollout under
/// `.codex/sessions/2025/09/16/`.
fn home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let real = root().join("tests/fixtures/real-sessions");
    let project = "-Users-dain-workspace-claude-code-log-sample";
    copy_dir(
        &real.join("claude-code").join(project),
        &home.path().join(".claude/projects").join(project),
    );
    copy_dir(
        &real.join("codex/Hoper-J_cpolar-connect"),
        &home.path().join(".codex/sessions/2025/09/16"),
    );
    home
}

/// Runs foldbench with `HOME` set to `home` and the other places unset.
fn foldbench(home: &Path, args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .current_dir(home)
        .output()
        .unwrap()
}

/// `replay --format json` with `extra` filters: the ids of the sessions replayed.
fn replayed(home: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["replay", "--policy", "none", "--format", "json"];
    args.extend(extra);
    let out = foldbench(home, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{extra:?}: {err}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut ids: Vec<String> = doc["per_session"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

#[test]
fn replay_with_no_path_reads_both_default_folders_and_names_them() {
    let home = home();
    let out = foldbench(home.path(), &["replay", "--format", "json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let claude = home.path().join(".claude/projects").display().to_string();
    let codex = home.path().join(".codex/sessions").display().to_string();
    assert!(
        err.contains(&format!("reading {claude} (Claude Code), {codex} (Codex)")),
        "{err}"
    );
    let missing = home.path().join(".config/claude/projects");
    assert!(
        err.contains(&format!("not present: {}", missing.display())),
        "{err}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let sessions = doc["per_session"].as_array().unwrap();
    let ids: Vec<&str> = sessions.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert!(
        ids.contains(&CLAUDE_ID) && ids.contains(&CODEX_ID),
        "{ids:?}"
    );
    let claude_row = sessions.iter().find(|s| s["id"] == CLAUDE_ID).unwrap();
    assert_eq!(claude_row["project"], "claude-code-log");
    assert_eq!(claude_row["date"], "2025-07-17");
    assert_eq!(claude_row["model"], "claude-sonnet-4-20250514");
    assert!(claude_row["source"].as_str().unwrap().starts_with(&claude));
    let codex_row = sessions.iter().find(|s| s["id"] == CODEX_ID).unwrap();
    assert_eq!(codex_row["project"], "CpolarAutoUpdater");
    assert_eq!(codex_row["date"], "2025-09-16");
    // The requests' model is in the built-in table: none falls back to the default price.
    // (The Codex excerpt holds only the parent history its fork replays: no request of its own.)
    let models = doc["models"].as_array().unwrap();
    let names: Vec<&str> = models.iter().filter_map(|m| m["model"].as_str()).collect();
    assert_eq!(names, ["claude-sonnet-4-20250514"]);
    assert_eq!(models[0]["source"], "built_in");
    assert_eq!(models[0]["output"], 15.0);

    // The terminal table's session rows show project, date and a short id (the date in
    // `--view all`: the default view keeps to 120 columns).
    let out = foldbench(
        home.path(),
        &["replay", "--min-turns", "1", "--view", "all"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.contains("claude-code-log") && l.contains("2025-07-17")),
        "{text}"
    );
    assert!(
        text.contains("Prices per model (built-in list prices, each with its source;"),
        "{text}"
    );

    let out = foldbench(home.path(), &["analyze", "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["sessions"].as_array().unwrap().len(), sessions.len());
}

#[test]
fn with_no_default_folder_replay_says_where_it_looked_and_exits_2() {
    let empty = tempfile::tempdir().unwrap();
    for cmd in ["replay", "analyze"] {
        let out = foldbench(empty.path(), &[cmd]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("no session folder found: looked in"), "{err}");
        assert!(err.contains(".codex/sessions (Codex, from HOME)"), "{err}");
        assert!(
            err.contains(&format!("foldbench {cmd} path/to/sessions")),
            "{err}"
        );
    }
}

#[test]
fn claude_config_dir_and_codex_home_replace_the_home_folders() {
    let home = home();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::rename(home.path().join(".claude"), elsewhere.path().join("claude")).unwrap();
    let out = Command::new(binary())
        .args(["replay", "--policy", "none", "--format", "json"])
        .env("HOME", home.path())
        .env(
            "CLAUDE_CONFIG_DIR",
            format!("/nonexistent,{}", elsewhere.path().join("claude").display()),
        )
        .env("CODEX_HOME", elsewhere.path().join("no-codex"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let read = elsewhere
        .path()
        .join("claude/projects")
        .display()
        .to_string();
    assert!(
        err.contains(&format!("reading {read} (Claude Code)\n")),
        "{err}"
    );
    assert!(err.contains("not present: /nonexistent/projects"), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = doc["per_session"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [CLAUDE_ID],
        "the home's .codex is not read under CODEX_HOME"
    );
}

#[test]
fn filters_select_by_date_project_and_session() {
    let home = home();
    let h = home.path();
    let both = replayed(h, &[]);
    assert_eq!(both.len(), 2, "{both:?}");
    // Dates: the Claude Code session is of 2025-07-17, the Codex one of 2025-09-16 (UTC).
    assert_eq!(replayed(h, &["--since", "2025-08-01"]), [CODEX_ID]);
    assert_eq!(replayed(h, &["--until", "2025-08-01"]), [CLAUDE_ID]);
    assert_eq!(
        replayed(h, &["--since", "2025-07-17", "--until", "2025-07-17"]),
        [CLAUDE_ID]
    );
    assert_eq!(replayed(h, &["--since", "2025-09-16"]), [CODEX_ID]);
    assert_eq!(replayed(h, &["--until", "2025-09-16"]), both);
    // Project: a substring of the cwd or of the Claude Code project folder, any case.
    assert_eq!(replayed(h, &["--project", "cpolar"]), [CODEX_ID]);
    assert_eq!(replayed(h, &["--project", "log-sample"]), [CLAUDE_ID]);
    assert_eq!(replayed(h, &["--project", "/Users/"]), both);
    // Session: an id prefix.
    assert_eq!(replayed(h, &["--session", "937c"]), [CLAUDE_ID]);
    assert_eq!(replayed(h, &["--session", "613a9a68-8816"]), [CODEX_ID]);
    // Filters combine; nothing left is an error that says so.
    let out = foldbench(h, &["replay", "--session", "937c", "--since", "2025-08-01"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no session matches"), "{err}");
    // A bad date says what is expected.
    let out = foldbench(h, &["replay", "--since", "2025-02-30"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("expected a date YYYY-MM-DD"), "{err}");
    // analyze filters the same way.
    let out = foldbench(h, &["analyze", "--format", "json", "--project", "cpolar"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [CODEX_ID]);
}

#[test]
fn a_filter_leaves_an_unrelated_damaged_codex_file_unread_with_the_same_output() {
    let home = home();
    let h = home.path();
    let args = [
        "replay", "--policy", "none", "--policy", "trim", "--format", "json",
    ];
    let with = |extra: &[&str]| {
        let mut a = args.to_vec();
        a.extend(extra);
        foldbench(h, &a)
    };
    let before = with(&["--session", "937c"]);
    assert_eq!(before.status.code(), Some(0));
    // A damaged rollout of another session beside them: lines cut short.
    let codex = h.join(".codex/sessions/2025/09/16");
    let text = std::fs::read_to_string(
        codex.join(format!("rollout-2025-09-16T14-12-31-{CODEX_ID}.jsonl")),
    )
    .unwrap();
    let damaged: Vec<String> = text
        .replace(CODEX_ID, "7e57da7a-0000-4000-8000-00000000dead")
        .lines()
        .map(|l| l.chars().take(l.chars().count() / 3).collect())
        .collect();
    std::fs::write(codex.join("rollout-damaged.jsonl"), damaged.join("\n")).unwrap();
    // Unfiltered, it is read and warned about.
    let all = with(&[]);
    let err = String::from_utf8_lossy(&all.stderr);
    assert!(err.contains("rollout-damaged.jsonl"), "{err}");
    // With a filter on one session: not read, nothing said of it, the same output.
    let after = with(&["--session", "937c"]);
    let err = String::from_utf8_lossy(&after.stderr);
    assert_eq!(after.status.code(), Some(0), "{err}");
    assert!(!err.contains("rollout-damaged.jsonl"), "{err}");
    assert!(
        err.contains("2 of 3 files left unread by the filters"),
        "{err}"
    );
    // The same replay, but for the count of files found.
    let doc = |o: &Output| -> serde_json::Value { serde_json::from_slice(&o.stdout).unwrap() };
    let (mut a, mut b) = (doc(&after), doc(&before));
    assert_eq!((a["files"].take(), b["files"].take()), (3.into(), 2.into()));
    assert!(a == b, "the output changed with the damaged file beside");
}

#[test]
fn a_price_flag_overrides_one_model_and_unknown_models_are_listed() {
    let home = home();
    let out = foldbench(
        home.path(),
        &[
            "replay",
            "--policy",
            "none",
            "--format",
            "json",
            "--price",
            "claude-sonnet-4=2",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let models = doc["models"].as_array().unwrap();
    let claude = models
        .iter()
        .find(|m| m["model"] == "claude-sonnet-4-20250514")
        .unwrap();
    assert_eq!(
        (claude["source"].as_str(), claude["input"].as_f64()),
        (Some("override"), Some(2.0))
    );
    // Costs follow the price: the override's cost is 2/3 of the table's.
    let cost = |doc: &serde_json::Value| {
        doc["per_session"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == CLAUDE_ID)
            .unwrap()["policies"][0]["cost"]
            .as_f64()
            .unwrap()
    };
    let table: serde_json::Value = serde_json::from_slice(
        &foldbench(
            home.path(),
            &["replay", "--policy", "none", "--format", "json"],
        )
        .stdout,
    )
    .unwrap();
    assert!((cost(&doc) / cost(&table) - 2.0 / 3.0).abs() < 1e-9);

    // A model the table does not know: the session's records renamed.
    let dir = home
        .path()
        .join(".claude/projects/-Users-dain-workspace-claude-code-log-sample");
    let file = dir.join(format!("{CLAUDE_ID}.jsonl"));
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace("claude-sonnet-4-20250514", "local-llama-70b"),
    )
    .unwrap();
    let out = foldbench(
        home.path(),
        &["replay", "--policy", "none", "--session", "937c"],
    );
    // The notes are broken to the terminal's width: read as one run of words.
    let text = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text.contains("Unknown models, costed at the default price ($3 in / $3.75 cache write / $0.3 cache read / $15 out per M; set one with --price MODEL=PRICE, e.g. --price MODEL=openai:1.75): local-llama-70b ("),
        "{text}"
    );
}

/// The session's notes, its words joined by single spaces (the notes are broken to the
/// terminal's width).
fn words(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn sessions_that_record_no_model_are_named_with_how_to_price_them() {
    let home = home();
    let file = home.path().join(format!(
        ".claude/projects/-Users-dain-workspace-claude-code-log-sample/{CLAUDE_ID}.jsonl"
    ));
    let text = std::fs::read_to_string(&file).unwrap();
    let cut = text.replace("\"model\":\"claude-sonnet-4-20250514\",", "");
    assert_ne!(cut, text, "the fixture names its model");
    std::fs::write(&file, cut).unwrap();
    let args = ["replay", "--policy", "none", "--session", "937c"];
    let out = foldbench(home.path(), &args);
    assert_eq!(out.status.code(), Some(0));
    let text = words(&out);
    assert!(
        text.contains("Sessions that record no model, their requests costed at the default price ($3 in / $3.75 cache write / $0.3 cache read / $15 out per M): claude-code-log 937c6e6b (claude-code, 28 requests); price them with --price PRICE, the default (e.g. --price openai:1.75 for a Codex session"),
        "{text}"
    );
    // Priced as the note says: the default follows --price, and the JSON says `default`.
    let mut json = args.to_vec();
    json.extend(["--format", "json", "--price", "anthropic:1.5"]);
    let doc: serde_json::Value =
        serde_json::from_slice(&foldbench(home.path(), &json).stdout).unwrap();
    let m = &doc["models"][0];
    assert_eq!(
        (
            m["model"].is_null(),
            m["source"].as_str(),
            m["input"].as_f64()
        ),
        (true, Some("default"), Some(1.5)),
        "{m}"
    );
    assert_eq!(m["cache_write"].as_f64(), Some(1.875));
}

#[test]
fn the_codex_models_of_the_real_sessions_are_built_in_with_their_source() {
    let real = root().join("tests/fixtures/real-sessions");
    let out = Command::new(binary())
        .args(["replay", "--policy", "none", "--format", "json"])
        .arg(&real)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let models = doc["models"].as_array().unwrap();
    let codex = models
        .iter()
        .find(|m| m["model"] == "gpt-5.2-codex")
        .expect("the atelier rollout's model");
    assert_eq!(codex["source"], "built_in", "{codex}");
    assert_eq!(codex["listed"]["scheme"], "openai", "{codex}");
    assert!(codex["listed"]["url"]
        .as_str()
        .unwrap()
        .starts_with("https://"));
    // OpenAI's scheme: the cached input discounted, no cache-write premium.
    for (k, want) in [
        ("input", 1.75),
        ("cache_write", 1.75),
        ("cache_read", 0.175),
        ("output", 14.0),
    ] {
        let got = codex[k].as_f64().unwrap();
        assert!((got - want).abs() < 1e-9, "{k}: {got} (want {want})");
    }
    assert!(
        models.iter().all(|m| m["source"] != "default"),
        "every model of the real sessions is priced: {models:?}"
    );
}

#[test]
fn judge_build_from_history_needs_labels_beside_the_sessions_and_uses_them() {
    let home = home();
    let out = home.path().join("judge.jsonl");
    // No labels beside the sessions: a clear error, nothing written.
    let o = foldbench(
        home.path(),
        &["judge", "build", "--from", "history", "-o"]
            .iter()
            .copied()
            .chain([out.to_str().unwrap()])
            .collect::<Vec<_>>(),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no unit labels") && err.contains("labels/<format>"),
        "{err}"
    );
    assert!(!out.exists());
    // Labels beside the Claude Code sessions, their source path relative to that folder.
    let src = root().join(format!(
        "tests/fixtures/real-sessions/labels/claude-code/{CLAUDE_ID}.yaml"
    ));
    let text = std::fs::read_to_string(src)
        .unwrap()
        .replace("source_path: \"claude-code/", "source_path: \"");
    let labels = home.path().join(".claude/projects/labels/claude-code");
    std::fs::create_dir_all(&labels).unwrap();
    std::fs::write(labels.join(format!("{CLAUDE_ID}.yaml")), text).unwrap();
    let o = foldbench(
        home.path(),
        &["judge", "build", "--from", "history", "-o"]
            .iter()
            .copied()
            .chain([out.to_str().unwrap()])
            .collect::<Vec<_>>(),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains(".claude/projects (Claude Code)"), "{err}");
    let items = std::fs::read_to_string(&out).unwrap();
    assert!(
        items.lines().count() > 0,
        "no items from the labelled history"
    );
    assert!(items.contains(CLAUDE_ID), "{items}");
}
