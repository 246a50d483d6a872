//! The file-system side: discovering transcripts, pairing subagent files, importing a tree.

use std::path::{Path, PathBuf};

use harness_import::ImportError;
use harness_import::{discover, import_paths, FileError};

const S: &str = "11111111-0000-4000-8000-000000000001";
const T: &str = "22222222-0000-4000-8000-000000000002";

fn fixture(rel: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel);
    std::fs::read_to_string(path).expect("fixture reads")
}

fn put(root: &Path, rel: &str, text: &str) -> PathBuf {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
    std::fs::write(&p, text).expect("write");
    p
}

/// A `~/.claude/projects`-like tree, a Codex fork pair, and a bad file.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    put(
        root,
        &format!("proj/{S}.jsonl"),
        &fixture("claude-code/sidechain.jsonl"),
    );
    put(
        root,
        "proj/agent-a1b2c3.jsonl",
        &fixture("claude-code/agent-a1b2c3.jsonl"),
    );
    put(
        root,
        &format!("proj/{T}.jsonl"),
        &fixture("claude-code/branches.jsonl").replace(S, T),
    );
    let zz = fixture("claude-code/agent-a1b2c3.jsonl")
        .replace(S, T)
        .replace("a1b2c3", "zz");
    put(root, &format!("proj/{T}/subagents/agent-zz.jsonl"), &zz);
    put(
        root,
        &format!("proj/{T}/subagents/agent-zz.meta.json"),
        "{\"agentType\":\"general-purpose\"}",
    );
    put(
        root,
        "proj/orphans/agent-lost.jsonl",
        &fixture("claude-code/agent-a1b2c3.jsonl"),
    );
    put(root, "proj/notes.md", "not a transcript");
    put(
        root,
        "codex/2025/10/01/rollout-parent.jsonl",
        &fixture("codex/parent.jsonl"),
    );
    put(
        root,
        "codex/2025/10/03/rollout-fork.jsonl",
        &fixture("codex/fork-named.jsonl"),
    );
    put(
        root,
        "runs/demo.traj.json",
        &fixture("mini-swe-agent/demo__demo-1.traj.json"),
    );
    put(root, "runs/empty.jsonl", "");
    dir
}

#[test]
fn discover_finds_transcripts_and_pairs_subagent_files() {
    let dir = tree();
    let root = dir.path();
    let found = discover(&[root.to_path_buf()]).expect("walks");
    let rel = |p: &Path| {
        p.strip_prefix(root)
            .expect("under root")
            .display()
            .to_string()
    };
    let names: Vec<String> = found.iter().map(|d| rel(&d.path)).collect();
    assert!(
        !names
            .iter()
            .any(|n| n.ends_with(".md") || n.ends_with(".meta.json")),
        "{names:?}"
    );
    assert_eq!(found.len(), 9, "{names:?}");
    // A subagent file beside its session follows it; so does one in <session>/subagents/.
    let pos = |n: &str| {
        names
            .iter()
            .position(|x| x == n)
            .unwrap_or_else(|| panic!("{n} in {names:?}"))
    };
    let s = pos(&format!("proj/{S}.jsonl"));
    assert_eq!(names[s + 1], "proj/agent-a1b2c3.jsonl");
    assert_eq!(
        found[s + 1].subagent_of.as_deref(),
        Some(found[s].path.as_path())
    );
    let t = pos(&format!("proj/{T}.jsonl"));
    assert_eq!(names[t + 1], format!("proj/{T}/subagents/agent-zz.jsonl"));
    assert_eq!(
        found[t + 1].subagent_of.as_deref(),
        Some(found[t].path.as_path())
    );
    // A subagent file whose session is not there comes last, unpaired.
    assert_eq!(
        names.last().map(String::as_str),
        Some("proj/orphans/agent-lost.jsonl")
    );
    assert_eq!(found.last().and_then(|d| d.subagent_of.clone()), None);
    // A file named directly is taken as given.
    let one = discover(&[root.join("proj/notes.md")]).expect("a file");
    assert_eq!(one.len(), 1);
}

#[test]
fn import_paths_reads_everything_links_forks_and_reports_bad_files() {
    let dir = tree();
    let report = import_paths(&[dir.path().to_path_buf()], None).expect("walks");
    assert_eq!(report.files, 9);
    assert_eq!(report.errors.len(), 1);
    assert!(report.errors[0].0.ends_with("runs/empty.jsonl"));
    assert!(matches!(
        report.errors[0].1,
        FileError::Import(ImportError::Empty { .. })
    ));
    let ids: Vec<&str> = report.sessions.iter().map(|s| s.id.as_str()).collect();
    assert!(
        ids.contains(&S) && ids.contains(&T) && ids.contains(&"demo__demo-1"),
        "{ids:?}"
    );
    let subagents: Vec<_> = report
        .sessions
        .iter()
        .filter(|s| s.id == "agent-a1b2c3")
        .collect();
    // The same subagent file in two places (same id, same bytes) is imported once.
    assert_eq!(
        subagents.len(),
        1,
        "the same subagent fixture in two places"
    );
    assert_eq!(report.duplicates, 1);
    assert!(subagents.iter().all(|s| s.parent.as_deref() == Some(S)));
    let zz = report
        .sessions
        .iter()
        .find(|s| s.id == "agent-zz")
        .expect("the subagents/ file");
    assert_eq!(zz.parent.as_deref(), Some(T));
    let fork = report
        .sessions
        .iter()
        .find(|s| s.id == "0199c000-0000-7000-8000-00000000000c")
        .expect("the fork is imported");
    assert_eq!(
        fork.parent.as_deref(),
        Some("0199a000-0000-7000-8000-00000000000a")
    );
    assert_eq!(fork.dropped_prefix, 6);
}

#[test]
fn a_missing_path_is_an_io_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let e = discover(&[dir.path().join("nope")]).expect_err("missing");
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
}

/// Runs `f` on a thread, waiting at most 30 s: a walk or read that never ends fails the test.
fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(30))
        .expect("finished within 30 s")
}

/// The sessions of the Claude Code fixture used below (the session and its sidechain).
const FIXTURE_SESSIONS: usize = 2;

fn one_session_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    put(
        dir.path(),
        &format!("proj/{S}.jsonl"),
        &fixture("claude-code/sidechain.jsonl"),
    );
    dir
}

#[test]
fn a_fifo_among_transcripts_is_skipped_without_blocking() {
    let dir = one_session_folder();
    let fifo = dir.path().join("proj/pipe.jsonl");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    let root = dir.path().to_path_buf();
    let report = within(move || import_paths(&[root], None)).expect("walks");
    assert_eq!(report.sessions.len(), FIXTURE_SESSIONS);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    // Named directly, it is an error that says what it is.
    let err = within(move || import_paths(&[fifo], None)).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("pipe.jsonl is a FIFO, not a regular file"),
        "{err}"
    );
}

#[test]
fn symlink_loops_end_and_each_session_is_read_once() {
    let dir = one_session_folder();
    let proj = dir.path().join("proj");
    std::os::unix::fs::symlink(".", proj.join("self")).expect("symlink");
    std::os::unix::fs::symlink("..", proj.join("up")).expect("symlink");
    let root = dir.path().to_path_buf();
    let report = within(move || import_paths(&[root], None)).expect("walks");
    assert_eq!(
        report.sessions.len(),
        FIXTURE_SESSIONS,
        "once, however reached"
    );
    assert_eq!(report.files, 1);
    assert_eq!(report.loops, 2);
    assert_eq!(report.duplicates, 0);
}

#[test]
fn one_file_reached_through_two_links_is_a_counted_duplicate() {
    let dir = one_session_folder();
    std::os::unix::fs::symlink(dir.path().join("proj"), dir.path().join("again")).expect("symlink");
    let root = dir.path().to_path_buf();
    let report = within(move || import_paths(&[root], None)).expect("walks");
    assert_eq!(report.files, 2);
    assert_eq!(report.sessions.len(), FIXTURE_SESSIONS);
    assert_eq!(report.duplicates, FIXTURE_SESSIONS);
}

/// The ids of the sessions a `--session PREFIX` filter keeps (its own id or its parent's).
fn kept_by_prefix(sessions: &[harness_import::ImportedSession], prefix: &str) -> Vec<String> {
    let mut ids: Vec<String> = sessions
        .iter()
        .filter(|s| {
            s.id.starts_with(prefix) || s.parent.as_deref().is_some_and(|p| p.starts_with(prefix))
        })
        .map(|s| s.id.clone())
        .collect();
    ids.sort();
    ids
}

#[test]
fn a_prefilter_leaves_files_unread_and_keeps_the_same_sessions() {
    use harness_import::{import_paths_filtered, Prefilter};
    let dir = tree();
    let paths = [dir.path().to_path_buf()];
    let all = import_paths(&paths, None).expect("walks");
    let by_session = Prefilter {
        session: Some("2222".into()),
        ..Prefilter::default()
    };
    let some = import_paths_filtered(&paths, None, &by_session).expect("walks");
    // Left unread: the other session's file and its subagent, the orphan subagent, the
    // mini-swe-agent run, the empty file and the Codex pair (neither names the session); the
    // subagent of the kept session is imported with it.
    assert_eq!((some.files, some.left_out), (9, 7));
    assert_eq!(
        kept_by_prefix(&some.sessions, "2222"),
        kept_by_prefix(&all.sessions, "2222")
    );
    assert_eq!(kept_by_prefix(&some.sessions, "2222"), [T, "agent-zz"]);
    // A Codex fork kept: the parent it names is imported with it (and nothing else), so the
    // fork's replayed history is dropped as when everything is imported.
    let fork = "0199c000-0000-7000-8000-00000000000c";
    let by_fork = Prefilter {
        session: Some("0199c".into()),
        ..Prefilter::default()
    };
    let forked = import_paths_filtered(&paths, None, &by_fork).expect("walks");
    let ids: Vec<&str> = forked.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["0199a000-0000-7000-8000-00000000000a", fork]);
    let dropped = |ss: &[harness_import::ImportedSession]| {
        ss.iter()
            .find(|s| s.id == fork)
            .map(|s| (s.dropped_prefix, s.messages.len(), s.parent.clone()))
    };
    assert_eq!(dropped(&forked.sessions), dropped(&all.sessions));
    assert_eq!(dropped(&forked.sessions).map(|d| d.0), Some(6));

    // A project text: only files whose path or bytes hold it (any case).
    let by_project = Prefilter {
        project: Some("home/dev/proj".into()),
        ..Prefilter::default()
    };
    let proj = import_paths_filtered(&paths, None, &by_project).expect("walks");
    assert!(proj.left_out >= 2, "{}", proj.left_out);
    assert!(proj.sessions.iter().any(|s| s.id == S));

    // A file last written long before --since: left unread, unless it is the rollout a kept
    // Codex fork forks from (the parent: the fork names it).
    let old = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
    for rel in [
        format!("proj/{S}.jsonl"),
        "codex/2025/10/01/rollout-parent.jsonl".into(),
    ] {
        let f = std::fs::File::options()
            .write(true)
            .open(dir.path().join(rel))
            .expect("open");
        f.set_modified(old).expect("set the time");
    }
    let since = Prefilter {
        modified_since_ms: Some(1_700_000_000_000),
        ..Prefilter::default()
    };
    let recent = import_paths_filtered(&paths, None, &since).expect("walks");
    assert_eq!(recent.left_out, 1);
    assert!(!recent.sessions.iter().any(|s| s.id == S));
    assert!(recent
        .sessions
        .iter()
        .any(|s| s.id == "0199a000-0000-7000-8000-00000000000a"));
}

/// Codex rollouts: a fork, the parent it names, another session and a damaged copy of it.
fn rollouts() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    let a = "0199a000-0000-7000-8000-00000000000a";
    put(
        root,
        "10/01/rollout-parent.jsonl",
        &fixture("codex/parent.jsonl"),
    );
    put(
        root,
        "10/03/rollout-fork.jsonl",
        &fixture("codex/fork-named.jsonl"),
    );
    let other = fixture("codex/rollout.jsonl");
    put(
        root,
        "10/01/rollout-other.jsonl",
        &other.replace(a, "0199b000-0000-7000-8000-00000000000b"),
    );
    let damaged: Vec<String> = other
        .replace(a, "0199d000-0000-7000-8000-00000000000d")
        .lines()
        .enumerate()
        // Every fourth line loses its end (its leading time kept).
        .map(|(i, l)| {
            if i % 4 == 2 {
                l[..l.len() - 10].to_string()
            } else {
                l.to_string()
            }
        })
        .collect();
    put(root, "10/01/rollout-damaged.jsonl", &damaged.join("\n"));
    dir
}

fn ids(sessions: &[harness_import::ImportedSession]) -> Vec<&str> {
    let mut ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    ids.sort();
    ids
}

/// A filter on one Codex session reads the other rollouts' heads, not their records: an
/// unrelated damaged rollout is not imported (no warning of its lines), and what is kept is
/// what importing everything and filtering keeps, session for session.
#[test]
fn a_filter_on_one_codex_session_leaves_an_unrelated_damaged_rollout_unread() {
    use harness_import::{import_paths_filtered, Prefilter};
    let dir = rollouts();
    let paths = [dir.path().to_path_buf()];
    let all = import_paths(&paths, None).expect("walks");
    let damaged = all
        .sessions
        .iter()
        .find(|s| s.id.starts_with("0199d"))
        .expect("the damaged rollout imports, with warnings");
    assert!(!damaged.warnings.is_empty());
    let pre = Prefilter {
        session: Some("0199b".into()),
        ..Prefilter::default()
    };
    let one = import_paths_filtered(&paths, None, &pre).expect("walks");
    assert_eq!((one.files, one.left_out), (4, 3));
    assert!(one.errors.is_empty());
    assert_eq!(ids(&one.sessions), ["0199b000-0000-7000-8000-00000000000b"]);
    let full = all.sessions.iter().find(|s| s.id.starts_with("0199b"));
    let json = |s: Option<&harness_import::ImportedSession>| {
        serde_json::to_value(s.expect("the session")).expect("serializes")
    };
    assert_eq!(
        json(one.sessions.first()),
        json(full),
        "the same session as a full import gives"
    );

    // Dates from the rollouts' line timestamps (the fork's 2025-10-03, the others' 2025-10-01).
    let ms = |t: &str| harness_import::timestamp_ms(t).expect("a time");
    let kept = |since: Option<i64>, until: Option<i64>| -> Vec<&str> {
        let mut v: Vec<&str> = all
            .sessions
            .iter()
            .filter(|s| {
                let (a, b) = (s.started_ms.unwrap(), s.ended_ms.unwrap());
                since.is_none_or(|x| b >= x) && until.is_none_or(|u| a < u)
            })
            .map(|s| s.id.as_str())
            .collect();
        v.sort();
        v
    };
    let until = Prefilter {
        until_ms: Some(ms("2025-10-02")),
        ..Prefilter::default()
    };
    let early = import_paths_filtered(&paths, None, &until).expect("walks");
    assert_eq!(early.left_out, 1, "the fork, started after the last day");
    assert_eq!(ids(&early.sessions), kept(None, Some(ms("2025-10-02"))));
    let since = Prefilter {
        modified_since_ms: Some(ms("2025-10-02")),
        ..Prefilter::default()
    };
    let late = import_paths_filtered(&paths, None, &since).expect("walks");
    // The fork passes, and its parent is read with it (it ended before the first day).
    assert_eq!(
        ids(&late.sessions),
        [
            "0199a000-0000-7000-8000-00000000000a",
            "0199c000-0000-7000-8000-00000000000c"
        ]
    );
    assert_eq!(late.left_out, 2);
    let fork = |ss: &[harness_import::ImportedSession]| {
        ss.iter()
            .find(|s| s.id.starts_with("0199c"))
            .map(|s| (s.dropped_prefix, s.messages.len()))
    };
    assert_eq!(fork(&late.sessions), fork(&all.sessions));
    assert_eq!(
        kept(Some(ms("2025-10-02")), None),
        ["0199c000-0000-7000-8000-00000000000c"]
    );
}

/// Sizes before reads: a file over the transcript limit is refused before it is read, a huge
/// binary one from its first bytes, and a line over the record limit is skipped unparsed (the
/// file's other records kept). Sparse files: no disk used.
#[test]
fn huge_files_are_refused_by_their_size_or_first_bytes_and_huge_lines_skipped() {
    let d = tempfile::tempdir().expect("temp dir");
    let huge = d.path().join("huge.jsonl");
    std::fs::File::create(&huge)
        .and_then(|f| f.set_len(harness_import::MAX_TRANSCRIPT_BYTES + (100 << 20)))
        .expect("sparse");
    let binary = d.path().join("binary.jsonl");
    std::fs::File::create(&binary)
        .and_then(|f| f.set_len(900 << 20))
        .expect("sparse");
    let report = within(move || import_paths(&[huge, binary], None).expect("import"));
    let errors: Vec<String> = report
        .errors
        .iter()
        .map(|(_, e)| harness_core::one_line(e))
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].contains("binary.jsonl is a binary file (a NUL byte in its first 8192 bytes)"),
        "{errors:?}"
    );
    assert!(
        errors[1].contains("huge.jsonl is 1178599424 bytes (refused before reading it), larger than 1073741824 bytes"),
        "{errors:?}"
    );

    // One line just over the record limit, beside a good session.
    let long = format!(
        "{{\"type\":\"user\",\"pad\":\"{}\"}}\n",
        "x".repeat(harness_import::MAX_LINE_BYTES)
    );
    let mixed = d.path().join(format!("{S}.jsonl"));
    std::fs::write(
        &mixed,
        format!("{long}{}", fixture("claude-code/sidechain.jsonl")),
    )
    .expect("write");
    let only = d.path().join("only-long.jsonl");
    std::fs::write(&only, &long).expect("write");
    let plain = d.path().join("plain").join(format!("{S}.jsonl"));
    put(
        d.path(),
        &format!("plain/{S}.jsonl"),
        &fixture("claude-code/sidechain.jsonl"),
    );
    let want = import_paths(&[plain], None).expect("import").sessions.len();
    let report = within(move || import_paths(&[mixed, only], None).expect("import"));
    assert_eq!(report.sessions.len(), want, "{:?}", report.errors);
    let w = &report.sessions[0].warnings;
    assert!(
        w.iter()
            .any(|w| w.line == 1 && w.message.contains("longer than 67108864 bytes")),
        "{w:?}"
    );
    let errors: Vec<String> = report
        .errors
        .iter()
        .map(|(_, e)| harness_core::one_line(e))
        .collect();
    assert!(
        errors.len() == 1 && errors[0].contains("longer than 67108864 bytes"),
        "{errors:?}"
    );
}
