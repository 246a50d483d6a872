//! Tests of the tools: paths, caps, the shell, the sandbox.

use super::*;
use serde_json::json;
use std::os::unix::fs::symlink;
use std::time::Duration;

use crate::execution::reap::kill_process_group;

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: "c1".to_string(),
        name: name.to_string(),
        args,
    }
}

fn ws() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("foldbench-test-")
        .tempdir()
        .expect("tempdir");
    fs::create_dir_all(dir.path().join("src")).expect("mkdir");
    fs::write(
        dir.path().join("src/a.py"),
        "PORT = 8080\nHOST = 'x'\n\ndef f():\n    return PORT\n",
    )
    .expect("write");
    fs::write(dir.path().join("src/b.py"), "import a\nPORT = a.PORT\n").expect("write");
    fs::write(dir.path().join("README.md"), "hello\n").expect("write");
    fs::create_dir_all(dir.path().join(".git/objects")).expect("mkdir");
    fs::write(dir.path().join(".git/config"), "PORT = 1\n").expect("write");
    dir
}

async fn run(root: &Path, name: &str, args: Value) -> ToolOutput {
    execute(root, &call(name, args), &ToolLimits::default()).await
}

fn limits(timeout_s: u64, cap: usize) -> ToolLimits {
    ToolLimits {
        shell_timeout: Duration::from_secs(timeout_s),
        output_cap: cap,
        ..ToolLimits::default()
    }
}

/// Processes of the process group `pgid` that are alive (not zombies), read from /proc.
fn live_members(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir("/proc") else {
        return out;
    };
    for e in entries.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // fields[0] = state, fields[1] = ppid, fields[2] = pgrp
        if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" {
            out.push(pid);
        }
    }
    out
}

async fn assert_group_gone(pgid: u32) {
    for _ in 0..40 {
        if live_members(pgid).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "process group {pgid} still has members: {:?}",
        live_members(pgid)
    );
}

#[tokio::test]
async fn live_members_sees_a_running_group() {
    // Checks the helper the kill tests rely on, so that they cannot pass vacuously.
    let mut child = tokio::process::Command::new("sleep")
        .arg("100")
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .expect("spawn sleep");
    let pgid = child.id().expect("pid");
    assert_eq!(live_members(pgid), vec![pgid]);
    kill_process_group(pgid);
    let _ = child.wait().await;
    assert_group_gone(pgid).await;
}

fn first_line_pid(text: &str) -> u32 {
    text.lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .expect("pid on the first line")
}

#[test]
fn normalize_paths() {
    assert_eq!(normalize("src/./a.py").as_deref(), Ok("src/a.py"));
    assert_eq!(normalize("src/../README.md").as_deref(), Ok("README.md"));
    assert_eq!(normalize("").as_deref(), Ok("."));
    assert_eq!(normalize("./").as_deref(), Ok("."));
    assert!(normalize("..").is_err());
    assert!(normalize("/etc").is_err());
}

#[test]
fn resolve_refuses_parent_escape() {
    let dir = ws();
    let err = resolve(dir.path(), "../../etc/passwd").expect_err("must be refused");
    assert!(
        matches!(err, ResolveError::Path(PathError::Outside { .. })),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "error: path `../../etc/passwd` is outside the workspace; use a path relative to the \
         workspace root"
    );
    assert!(resolve(dir.path(), "src/../../x").is_err());
}

#[test]
fn resolve_refuses_absolute() {
    let dir = ws();
    let err = resolve(dir.path(), "/etc/passwd").expect_err("must be refused");
    assert!(err.to_string().contains("outside the workspace"), "{err}");
}

#[test]
fn resolve_allows_inside_and_archive() {
    let dir = ws();
    let root = dir.path().canonicalize().expect("canon");
    assert_eq!(
        resolve(dir.path(), "src/a.py").expect("ok"),
        root.join("src/a.py")
    );
    assert_eq!(
        resolve(dir.path(), "new/dir/file.txt").expect("ok"),
        root.join("new/dir/file.txt")
    );
    assert_eq!(
        resolve(dir.path(), ".foldbench/archive/fold-1.md").expect("ok"),
        root.join(".foldbench/archive/fold-1.md")
    );
    assert_eq!(resolve(dir.path(), ".").expect("ok"), root);
    // A symlink that stays inside is fine.
    symlink(root.join("src"), root.join("srclink")).expect("symlink");
    assert_eq!(
        resolve(dir.path(), "srclink/a.py").expect("ok"),
        root.join("src/a.py")
    );
}

#[tokio::test]
async fn symlink_to_outside_is_refused() {
    let dir = ws();
    symlink("/etc", dir.path().join("etc")).expect("symlink");
    let err = resolve(dir.path(), "etc/passwd").expect_err("must be refused");
    assert!(matches!(err, ResolveError::SymlinkOutside { .. }), "{err}");
    assert!(
        err.to_string().contains("symlink to outside the workspace"),
        "{err}"
    );
    assert!(resolve(dir.path(), "etc").is_err());

    let out = run(dir.path(), "read_file", json!({"path": "etc/passwd"})).await;
    assert!(out.is_error);
    assert!(out.text.contains("outside the workspace"), "{}", out.text);
    assert!(!out.text.contains("root:"));

    let out = run(dir.path(), "list_files", json!({"path": "etc"})).await;
    assert!(out.is_error, "{}", out.text);

    // Walking the root does not follow the symlink either.
    let out = run(dir.path(), "grep", json!({"pattern": "root"})).await;
    assert_eq!(out.text, "no matches");

    // A dangling symlink cannot be written through.
    symlink(
        "/tmp/foldbench-should-not-exist",
        dir.path().join("dangling"),
    )
    .expect("symlink");
    let out = run(
        dir.path(),
        "write_file",
        json!({"path": "dangling", "content": "x"}),
    )
    .await;
    assert!(out.is_error, "{}", out.text);
    assert!(!Path::new("/tmp/foldbench-should-not-exist").exists());
}

#[tokio::test]
async fn tools_refuse_escapes() {
    let dir = ws();
    for (tool, args) in [
        ("read_file", json!({"path": "../../etc/passwd"})),
        ("read_file", json!({"path": "/etc/passwd"})),
        ("list_files", json!({"path": ".."})),
        ("grep", json!({"pattern": "root", "path": "/etc"})),
        (
            "edit_file",
            json!({"path": "/etc/passwd", "old": "a", "new": "b"}),
        ),
        ("write_file", json!({"path": "../x.txt", "content": "x"})),
    ] {
        let out = run(dir.path(), tool, args).await;
        assert!(out.is_error, "{tool}: {}", out.text);
        assert!(out.text.contains("outside the workspace"), "{}", out.text);
        assert_eq!(out.target, None);
    }
    assert!(!dir.path().parent().expect("parent").join("x.txt").exists());
}

#[tokio::test]
async fn read_file_format_offset_limit() {
    let dir = ws();
    let out = run(dir.path(), "read_file", json!({"path": "src/a.py"})).await;
    assert!(!out.is_error);
    assert_eq!(
        out.text,
        "     1\tPORT = 8080\n     2\tHOST = 'x'\n     3\t\n     4\tdef f():\n     5\t    return PORT"
    );
    assert_eq!(out.target.as_deref(), Some("src/a.py"));

    let out = run(
        dir.path(),
        "read_file",
        json!({"path": "./src/a.py", "offset": 2, "limit": 2}),
    )
    .await;
    assert_eq!(out.text, "     2\tHOST = 'x'\n     3\t");
    assert_eq!(out.target.as_deref(), Some("src/a.py"));

    let out = run(
        dir.path(),
        "read_file",
        json!({"path": "src/a.py", "offset": 5}),
    )
    .await;
    assert_eq!(out.text, "     5\t    return PORT");

    let out = run(
        dir.path(),
        "read_file",
        json!({"path": "src/a.py", "offset": 9}),
    )
    .await;
    assert!(!out.is_error);
    assert!(out.text.contains("past the end"), "{}", out.text);

    let out = run(dir.path(), "read_file", json!({"path": "src/nope.py"})).await;
    assert!(out.is_error);
    assert_eq!(out.text, "error: no such file: src/nope.py");

    let out = run(dir.path(), "read_file", json!({"path": "src"})).await;
    assert!(out.is_error);
    assert!(out.text.contains("is a directory"), "{}", out.text);
}

#[tokio::test]
async fn argument_errors() {
    let dir = ws();
    let out = run(dir.path(), "read_file", json!({})).await;
    assert!(out.is_error);
    assert_eq!(out.text, "error: read_file needs a string argument `path`");

    let out = run(dir.path(), "read_file", json!({"path": 3})).await;
    assert_eq!(out.text, "error: read_file needs a string argument `path`");

    let out = run(
        dir.path(),
        "read_file",
        json!({"path": "src/a.py", "offset": "x"}),
    )
    .await;
    assert!(out.is_error);
    assert!(out.text.contains("`offset`"), "{}", out.text);

    let out = run(
        dir.path(),
        "edit_file",
        json!({"path": "src/a.py", "old": "x"}),
    )
    .await;
    assert_eq!(out.text, "error: edit_file needs a string argument `new`");

    let out = run(dir.path(), "shell", json!({"cmd": "ls"})).await;
    assert_eq!(out.text, "error: shell needs a string argument `command`");

    let out = run(dir.path(), "list_files", json!({"path": 1})).await;
    assert_eq!(
        out.text,
        "error: list_files argument `path` must be a string"
    );

    let out = run(dir.path(), "delete_everything", json!({})).await;
    assert!(out.is_error);
    assert!(out
        .text
        .starts_with("error: unknown tool `delete_everything`"));

    // Arguments passed as a JSON string are accepted.
    let out = run(
        dir.path(),
        "read_file",
        Value::String(r#"{"path":"README.md"}"#.into()),
    )
    .await;
    assert_eq!(out.text, "     1\thello");
}

#[tokio::test]
async fn list_files_format() {
    let dir = ws();
    fs::create_dir_all(dir.path().join(".foldbench/archive")).expect("mkdir");
    fs::write(dir.path().join(".foldbench/archive/fold-1.md"), "x").expect("write");
    let out = run(dir.path(), "list_files", json!({})).await;
    assert!(!out.is_error);
    assert_eq!(out.text, "README.md\nsrc/a.py\nsrc/b.py");
    assert_eq!(out.target.as_deref(), Some("."));

    let out = run(dir.path(), "list_files", json!({"path": "src/"})).await;
    assert_eq!(out.text, "src/a.py\nsrc/b.py");
    assert_eq!(out.target.as_deref(), Some("src"));

    let out = run(
        dir.path(),
        "list_files",
        json!({"path": ".foldbench/archive"}),
    )
    .await;
    assert_eq!(out.text, ".foldbench/archive/fold-1.md");

    let out = run(dir.path(), "list_files", json!({"path": "nope"})).await;
    assert!(out.is_error);
    assert_eq!(out.text, "error: no such file or directory: nope");
}

#[tokio::test]
async fn grep_format() {
    let dir = ws();
    let out = run(dir.path(), "grep", json!({"pattern": "PORT\\s*="})).await;
    assert!(!out.is_error);
    assert_eq!(out.text, "src/a.py:1:PORT = 8080\nsrc/b.py:2:PORT = a.PORT");
    assert_eq!(out.target.as_deref(), Some("."));

    let out = run(
        dir.path(),
        "grep",
        json!({"pattern": "PORT", "path": "src/a.py"}),
    )
    .await;
    assert_eq!(
        out.text,
        "src/a.py:1:PORT = 8080\nsrc/a.py:5:    return PORT"
    );
    assert_eq!(out.target.as_deref(), Some("src/a.py"));

    let out = run(dir.path(), "grep", json!({"pattern": "nothing-like-this"})).await;
    assert!(!out.is_error);
    assert_eq!(out.text, "no matches");

    let out = run(dir.path(), "grep", json!({"pattern": "("})).await;
    assert!(out.is_error);
    assert!(
        out.text.starts_with("error: invalid regex `(`"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn edit_file_unique_zero_many() {
    let dir = ws();
    let out = run(
        dir.path(),
        "edit_file",
        json!({"path": "src/a.py", "old": "PORT = 8080", "new": "PORT = 0"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, "edited src/a.py");
    let text = fs::read_to_string(dir.path().join("src/a.py")).expect("read");
    assert!(text.starts_with("PORT = 0\n"));

    let out = run(
        dir.path(),
        "edit_file",
        json!({"path": "src/a.py", "old": "PORT = 8080", "new": "x"}),
    )
    .await;
    assert!(out.is_error);
    assert_eq!(out.text, "error: `old` not found in src/a.py");

    let out = run(
        dir.path(),
        "edit_file",
        json!({"path": "src/a.py", "old": "PORT", "new": "P"}),
    )
    .await;
    assert!(out.is_error);
    assert_eq!(
        out.text,
        "error: `old` occurs 2 times in src/a.py; give more context so it is unique"
    );
    let after = fs::read_to_string(dir.path().join("src/a.py")).expect("read");
    assert_eq!(after, text, "a refused edit changes nothing");

    let out = run(
        dir.path(),
        "edit_file",
        json!({"path": "nope.py", "old": "a", "new": "b"}),
    )
    .await;
    assert_eq!(out.text, "error: no such file: nope.py");
}

#[tokio::test]
async fn write_file_creates_parents() {
    let dir = ws();
    let out = run(
        dir.path(),
        "write_file",
        json!({"path": "new/deep/f.txt", "content": "héllo\n"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, "wrote 7 bytes to new/deep/f.txt");
    assert_eq!(out.target.as_deref(), Some("new/deep/f.txt"));
    let text = fs::read_to_string(dir.path().join("new/deep/f.txt")).expect("read");
    assert_eq!(text, "héllo\n");

    let out = run(
        dir.path(),
        "write_file",
        json!({"path": ".foldbench/archive/fold-1.md", "content": "x"}),
    )
    .await;
    assert!(out.is_error);
    assert!(out.text.contains("read-only"), "{}", out.text);
}

#[tokio::test]
async fn shell_runs_in_workspace_with_exit_code() {
    let dir = ws();
    let out = run(
        dir.path(),
        "shell",
        json!({"command": "cat README.md; echo oops >&2; exit 3"}),
    )
    .await;
    assert!(!out.is_error, "a failing command is a normal result");
    assert_eq!(out.text, "hello\noops\n\n[exit code: 3]");
    assert_eq!(out.target, None);

    let out = run(
        dir.path(),
        "shell",
        json!({"command": "echo \"$HOME\"; pwd"}),
    )
    .await;
    let root = dir.path().canonicalize().expect("canon");
    let expected = format!("{}\n{}\n", dir.path().display(), root.display());
    assert_eq!(out.text, expected);
}

#[tokio::test]
async fn a_file_name_with_a_newline_is_listed_as_one_quoted_entry() {
    let dir = ws();
    fs::write(dir.path().join("src/evil\nREADME.md"), "PORT = 1\n").expect("write");
    let out = run(dir.path(), "list_files", json!({"path": "src"})).await;
    let lines: Vec<&str> = out.text.lines().collect();
    assert_eq!(
        lines,
        ["src/a.py", "src/b.py", "\"src/evil\\nREADME.md\""],
        "{}",
        out.text
    );
    let out = run(
        dir.path(),
        "grep",
        json!({"pattern": "PORT = 1", "path": "src"}),
    )
    .await;
    assert_eq!(out.text, "\"src/evil\\nREADME.md\":1:PORT = 1");
}

#[tokio::test]
async fn a_shell_limit_past_what_an_instant_holds_is_no_limit_not_a_panic() {
    let dir = ws();
    let lim = ToolLimits {
        shell_timeout: Duration::MAX,
        cache: None,
        ..ToolLimits::default()
    };
    let out = execute(
        dir.path(),
        &call("shell", json!({"command": "echo hi"})),
        &lim,
    )
    .await;
    assert_eq!(out.text, "hi\n");
}

#[tokio::test]
async fn shell_timeout_kills_process_group() {
    let dir = ws();
    let start = std::time::Instant::now();
    let out = execute(
        dir.path(),
        &call("shell", json!({"command": "echo $$; sleep 100"})),
        &limits(1, 50_000),
    )
    .await;
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "returned promptly"
    );
    assert!(out.is_error);
    assert!(
        out.text.ends_with("\n[killed: timed out after 1s]"),
        "{}",
        out.text
    );
    let pgid = first_line_pid(&out.text);
    assert_group_gone(pgid).await;
}

#[tokio::test]
async fn shell_timeout_kills_background_children() {
    let dir = ws();
    let start = std::time::Instant::now();
    let out = execute(
        dir.path(),
        &call(
            "shell",
            json!({"command": "echo $$; sleep 100 & sleep 100"}),
        ),
        &limits(1, 50_000),
    )
    .await;
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(
        out.text.contains("[killed: timed out after 1s]"),
        "{}",
        out.text
    );
    let pgid = first_line_pid(&out.text);
    assert_group_gone(pgid).await;
}

#[tokio::test]
async fn shell_background_child_does_not_block_or_survive() {
    let dir = ws();
    let start = std::time::Instant::now();
    let out = execute(
        dir.path(),
        &call(
            "shell",
            json!({"command": "echo $$; sleep 100 & echo started"}),
        ),
        &limits(10, 50_000),
    )
    .await;
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.ends_with("started\n"), "{}", out.text);
    let pgid = first_line_pid(&out.text);
    assert_group_gone(pgid).await;
}

#[tokio::test]
async fn file_tools_keep_out_of_git() {
    let dir = ws();
    fs::create_dir_all(dir.path().join(".git/hooks")).expect("mkdir");
    let hook = json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\nrm -rf ~\n"});
    let out = run(dir.path(), "write_file", hook).await;
    assert!(
        out.is_error && out.text.contains("inside `.git`"),
        "{}",
        out.text
    );
    assert!(!dir.path().join(".git/hooks/pre-commit").exists());
    let cfg = json!({"path": ".git/config", "old": "PORT = 1", "new": "PORT = 2"});
    let out = run(dir.path(), "edit_file", cfg).await;
    assert!(
        out.is_error && out.text.contains("inside `.git`"),
        "{}",
        out.text
    );
    let out = run(
        dir.path(),
        "read_file",
        json!({"path": "src/../.git/config"}),
    )
    .await;
    assert!(
        out.is_error && out.text.contains("inside `.git`"),
        "{}",
        out.text
    );
    // Through a symlink inside the workspace.
    symlink(".git", dir.path().join("g")).expect("symlink");
    let out = run(
        dir.path(),
        "write_file",
        json!({"path": "g/hooks/pre-commit", "content": "x"}),
    )
    .await;
    assert!(
        out.is_error && out.text.contains("inside `.git`"),
        "{}",
        out.text
    );
    assert!(!dir.path().join(".git/hooks/pre-commit").exists());
    assert_eq!(
        fs::read_to_string(dir.path().join(".git/config")).unwrap(),
        "PORT = 1\n"
    );
}

#[tokio::test]
async fn writes_to_a_hard_linked_file_are_refused() {
    let outside = tempfile::tempdir().expect("tempdir");
    let victim = outside.path().join("victim.txt");
    fs::write(&victim, "PORT = 8080\n").expect("write");
    let dir = ws();
    fs::hard_link(&victim, dir.path().join("linked.txt")).expect("hard link");
    let edit = json!({"path": "linked.txt", "old": "8080", "new": "6666"});
    let out = run(dir.path(), "edit_file", edit).await;
    assert!(
        out.is_error && out.text.contains("hard links"),
        "{}",
        out.text
    );
    let write = json!({"path": "linked.txt", "content": "owned"});
    let out = run(dir.path(), "write_file", write).await;
    assert!(
        out.is_error && out.text.contains("hard links"),
        "{}",
        out.text
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "PORT = 8080\n");
    // Reading it is fine, and so is writing a file with one link.
    let out = run(dir.path(), "read_file", json!({"path": "linked.txt"})).await;
    assert!(!out.is_error, "{}", out.text);
    let out = run(
        dir.path(),
        "edit_file",
        json!({"path": "src/a.py", "old": "8080", "new": "1"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
}

#[tokio::test]
async fn shell_env_is_an_allow_list() {
    // Secrets a deny-list let through, and one it caught.
    let secrets = [
        ("AZURE_OPENAI_KEY", "azure-s3cret"),
        ("GEMINI_KEY", "gemini-s3cret"),
        ("SECRET_KEY", "django-s3cret"),
        ("PGPASSWORD", "pg-s3cret"),
        ("DATABASE_URL", "postgres://u:db-s3cret@h/db"),
        ("SLACK_WEBHOOK_URL", "https://hooks.example/slack-s3cret"),
        ("FOO_API_KEY", "foo-s3cret"),
    ];
    for (k, v) in secrets {
        std::env::set_var(k, v);
    }
    std::env::set_var("TZ", "Europe/Berlin");
    let dir = ws();
    let out = run(dir.path(), "shell", json!({"command": "env"})).await;
    assert!(!out.is_error, "{}", out.text);
    assert!(!out.text.contains("s3cret"), "{}", out.text);
    let names: Vec<&str> = out
        .text
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    for want in [
        "HOME",
        "LANG",
        "PATH",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONHASHSEED",
        "SOURCE_DATE_EPOCH",
        "TERM",
        "TZ",
    ] {
        assert!(names.contains(&want), "{want} missing: {}", out.text);
    }
    // Nothing else but what the shell itself sets (PWD, SHLVL, `_`) and the call's marker
    // (`crate::execution::reap`).
    for name in &names {
        assert!(
            [
                "HOME",
                "LANG",
                "PATH",
                "PYTHONDONTWRITEBYTECODE",
                "PYTHONHASHSEED",
                "SOURCE_DATE_EPOCH",
                "TERM",
                "TZ",
                "PWD",
                "SHLVL",
                "_",
                "OLDPWD",
                crate::execution::reap::CALL_ENV
            ]
            .contains(name),
            "{name} passed through: {}",
            out.text
        );
    }
    assert!(out.text.contains("LANG=C.UTF-8"));
    // The host's zone is not passed on: what a command prints about time is the same on every
    // machine.
    assert!(out.text.contains("TZ=UTC\n"), "{}", out.text);
    assert!(!out.text.contains("Berlin"), "{}", out.text);
    assert!(out.text.contains(&format!(
        "SOURCE_DATE_EPOCH={}\n",
        crate::execution::workspace::FILE_TIME
    )));
    assert!(out.text.contains(&format!("HOME={}", dir.path().display())));
}

#[test]
fn a_tasks_own_variables_join_the_allow_list_and_win() {
    let env = crate::execution::sandbox::allowed_env(&[
        ("APP_MODE".to_string(), "test".to_string()),
        ("LANG".to_string(), "de_DE.UTF-8".to_string()),
    ]);
    assert!(env.contains(&("APP_MODE".to_string(), "test".to_string())));
    assert!(env.contains(&("LANG".to_string(), "de_DE.UTF-8".to_string())));
    assert_eq!(env.iter().filter(|(k, _)| k == "LANG").count(), 1);
}

#[tokio::test]
async fn shell_python_sees_the_standard_library_only() {
    let dir = ws();
    // The one site-packages folder is the bare environment's own, and it holds foldbench's
    // unittest clock and nothing else.
    let probe = "import os, sys; print(sys.prefix != sys.base_prefix); \
                 s = [p for p in sys.path if 'packages' in p]; \
                 print(len(s), all(p.startswith(sys.prefix) for p in s)); \
                 print(sorted(n for p in s for n in os.listdir(p)))";
    for exe in ["python3", "python"] {
        let command = format!("{exe} -c \"{probe}\"");
        let out = run(dir.path(), "shell", json!({ "command": command })).await;
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(
            out.text,
            "True\n1 True\n['__pycache__', 'foldbench_unittest_clock.pth', \
             'foldbench_unittest_clock.py']\n",
            "{exe}"
        );
    }
}

#[tokio::test]
async fn unittest_prints_the_same_run_time_on_every_run() {
    let dir = ws();
    fs::create_dir_all(dir.path().join("tests")).unwrap();
    fs::write(dir.path().join("tests/__init__.py"), "").unwrap();
    // A test that takes a measurable while, and whose own clock still moves.
    fs::write(
        dir.path().join("tests/test_slow.py"),
        "import time, unittest\n\n\nclass Slow(unittest.TestCase):\n    \
         def test_slow(self):\n        t = time.perf_counter()\n        \
         time.sleep(0.03)\n        self.assertGreater(time.perf_counter(), t)\n",
    )
    .unwrap();
    let mut outputs = Vec::new();
    for command in [
        "python3 -m unittest",
        "python3 -m unittest -v tests.test_slow",
        "python3 -c 'import unittest; unittest.main(module=None, argv=[\"x\"])'",
    ] {
        let out = run(dir.path(), "shell", json!({ "command": command })).await;
        assert!(!out.is_error, "{command}: {}", out.text);
        assert!(
            out.text.contains("Ran 1 test in 0.000s\n\nOK"),
            "{command}: {}",
            out.text
        );
        outputs.push(out.text);
    }
    let again = run(
        dir.path(),
        "shell",
        json!({ "command": "python3 -m unittest" }),
    )
    .await;
    assert_eq!(again.text, outputs[0]);
    // Every other clock is the real one.
    let clock = "python3 -c 'import time; t = time.perf_counter(); time.sleep(0.01); \
                 print(time.perf_counter() > t)'";
    let out = run(dir.path(), "shell", json!({ "command": clock })).await;
    assert_eq!(out.text, "True\n");
}

#[test]
fn a_bare_environment_is_made_once_and_an_unwritable_folder_is_an_error() {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import os, sys; print(os.path.realpath(sys.executable)); \
             print('%d.%d.%d' % sys.version_info[:3])",
        ])
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let (exe, version) = text.trim().split_once('\n').expect("two lines");
    let exe = PathBuf::from(exe);
    let home = exe.parent().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let bin =
        crate::execution::sandbox::bare_python_in(cache.path(), "py", &exe, home, version).unwrap();
    assert_eq!(bin, cache.path().join("py/bin"));
    let cfg = fs::read_to_string(cache.path().join("py/pyvenv.cfg")).unwrap();
    assert!(
        cfg.contains("include-system-site-packages = false"),
        "{cfg}"
    );
    // The unittest clock, compiled once (commands write no bytecode).
    let minor: Vec<&str> = version.split('.').take(2).collect();
    let site = cache
        .path()
        .join(format!("py/lib/python{}/site-packages", minor.join(".")));
    assert_eq!(
        fs::read_to_string(site.join("foldbench_unittest_clock.py")).unwrap(),
        crate::execution::sandbox::UNITTEST_CLOCK
    );
    assert_eq!(fs::read_dir(site.join("__pycache__")).unwrap().count(), 1);
    // Made once: a second call finds it, and no temp folder is left behind.
    assert_eq!(
        crate::execution::sandbox::bare_python_in(cache.path(), "py", &exe, home, version).unwrap(),
        bin
    );
    let names: Vec<_> = fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("py")]);
    // Checked once: the stamp the check left stands for it (a hook that no longer loads is not
    // seen while it is there); without it, the interpreter is started and the check fails.
    assert!(cache.path().join("py/checked").is_file());
    fs::write(site.join("foldbench_unittest_clock.pth"), "\n").unwrap();
    let again =
        || crate::execution::sandbox::bare_python_in(cache.path(), "py", &exe, home, version);
    assert_eq!(again().unwrap(), bin, "the stamp stands for the check");
    fs::remove_file(cache.path().join("py/checked")).unwrap();
    assert!(again().is_err(), "without the stamp, the check runs");
    // A file the check made sure of gone (the compiled hook): checked again.
    fs::write(
        site.join("foldbench_unittest_clock.pth"),
        "import foldbench_unittest_clock\n",
    )
    .unwrap();
    assert!(again().is_ok());
    fs::remove_dir_all(site.join("__pycache__")).unwrap();
    assert_eq!(again().unwrap(), bin);
    assert_eq!(
        fs::read_dir(site.join("__pycache__")).unwrap().count(),
        1,
        "compiled again"
    );
    assert!(crate::execution::sandbox::bare_python_in(
        Path::new("/proc/foldbench"),
        "py",
        &exe,
        home,
        version
    )
    .is_err());
}

#[test]
fn what_a_python3_program_reports_is_kept_and_a_script_is_asked_every_time() {
    use crate::execution::sandbox::interpreter_key_of;
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import os, sys; print(os.path.realpath(sys.executable))",
        ])
        .output()
        .expect("python3 runs");
    let exe = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let dir = tempfile::tempdir().unwrap();
    // A program (a link to the interpreter): a key, the same each time, another with
    // PYTHONHOME or beside a pyvenv.cfg.
    let bin = dir.path().join("env/bin");
    fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(&exe, bin.join("python3")).unwrap();
    let key = interpreter_key_of(&bin.join("python3"), None).expect("a program has a key");
    assert_eq!(
        interpreter_key_of(&bin.join("python3"), None),
        Some(key.clone())
    );
    assert_ne!(
        interpreter_key_of(&bin.join("python3"), Some("/opt/py".into())),
        Some(key.clone())
    );
    fs::write(dir.path().join("env/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    assert_ne!(interpreter_key_of(&bin.join("python3"), None), Some(key));
    // A script (a shim that chooses its interpreter at every start): no key.
    let shim = dir.path().join("python3");
    fs::write(&shim, "#!/bin/sh\nexec python3 \"$@\"\n").unwrap();
    assert_eq!(interpreter_key_of(&shim, None), None);
}

#[tokio::test]
async fn output_cap_keeps_head_and_tail() {
    let dir = ws();
    // 20 lines "line-NN\n", 8 bytes each = 160 bytes; cap 40 keeps 20 + 20.
    let out = execute(
        dir.path(),
        &call(
            "shell",
            json!({"command": "i=10; while [ $i -lt 30 ]; do echo line-$i; i=$((i+1)); done"}),
        ),
        &limits(10, 40),
    )
    .await;
    assert!(!out.is_error);
    assert_eq!(
        out.text,
        "line-10\nline-11\nline\n[… 120 bytes cut from the middle of the output …]\n\
         -27\nline-28\nline-29\n"
    );

    let capped = cap_output(&"é".repeat(100), 41);
    // 20 bytes of head = 10 chars; 21 bytes of tail -> 20 bytes after skipping a partial char.
    assert_eq!(
        capped,
        format!(
            "{}\n[… 160 bytes cut from the middle of the output …]\n{}",
            "é".repeat(10),
            "é".repeat(10)
        )
    );
    assert_eq!(cap_output("short", 40), "short");

    let limits = limits(10, 30);
    let out = execute(
        dir.path(),
        &call("read_file", json!({"path": "src/a.py"})),
        &limits,
    )
    .await;
    assert!(out.text.starts_with("     1\tPORT = 8"), "{}", out.text);
    assert!(out.text.contains("bytes cut from the middle of the output"));
    assert!(out.text.ends_with("return PORT"));
}

#[test]
fn specs_cover_the_tools() {
    let specs = tool_specs();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, harness_core::tools::names());
    for s in &specs {
        assert_eq!(s.parameters["type"], "object");
        assert!(!s.description.is_empty());
    }
    assert_eq!(specs[0].parameters["required"], json!(["path"]));
    assert_eq!(
        specs[3].parameters["required"],
        json!(["path", "old", "new"])
    );
}
