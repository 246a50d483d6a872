//! Tests of the workspace: the copy, the commit, setup, the fingerprint, the diff and the file times.

use super::*;
use crate::execution::dirs::{owner_of, pid_namespace, shm_usable, sweep};
use git2::Repository;
use std::os::unix::fs::{symlink, PermissionsExt};

fn fixture() -> TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    fs::create_dir_all(p.join("src/pkg")).expect("mkdir");
    fs::write(p.join("src/session.py"), "PORT = 8080\n").expect("write");
    fs::write(p.join("src/pkg/__init__.py"), "").expect("write");
    fs::write(p.join("README.md"), "# fixture\n").expect("write");
    fs::write(p.join("run.sh"), "#!/bin/sh\necho hi\n").expect("write");
    fs::set_permissions(p.join("run.sh"), fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

fn write_archive(ws: &Workspace) {
    fs::create_dir_all(ws.archive_dir()).expect("mkdir");
    fs::write(ws.archive_dir().join("x"), "archived turn\n").expect("write");
}

#[test]
fn a_snapshot_gives_the_workspace_fingerprint() {
    let fx = fixture();
    let ws = Workspace::create(fx.path(), false).expect("create");
    let snap = || crate::execution::snapshot::Snapshot::take(ws.path()).expect("snapshot");
    assert_eq!(snap().fingerprint(), ws.fingerprint().expect("fp"));
    let before = ws.fingerprint().expect("fp");
    fs::write(ws.path().join("src/session.py"), "PORT = 9090\n").expect("write");
    assert_ne!(ws.fingerprint().expect("fp"), before);
    assert_eq!(snap().fingerprint(), ws.fingerprint().expect("fp"));
    // Modes and empty folders are the cache's business, not the fingerprint's.
    let fp = ws.fingerprint().expect("fp");
    fs::create_dir(ws.path().join("empty")).expect("mkdir");
    fs::set_permissions(
        ws.path().join("README.md"),
        fs::Permissions::from_mode(0o600),
    )
    .expect("chmod");
    assert_eq!(ws.fingerprint().expect("fp"), fp);
    assert_eq!(snap().fingerprint(), fp);
}

#[test]
fn the_archive_set_aside_is_out_of_the_tree_until_the_guard_drops() {
    let fx = fixture();
    let ws = Workspace::create(fx.path(), false).expect("create");
    assert!(
        ws.set_archive_aside().expect("aside").is_none(),
        "no archive yet"
    );
    write_archive(&ws);
    let before = crate::execution::snapshot::Snapshot::take(ws.path()).expect("snapshot");
    let guard = ws.set_archive_aside().expect("aside").expect("an archive");
    assert!(!ws.path().join(".foldbench").exists());
    let during = crate::execution::snapshot::Snapshot::take(ws.path()).expect("snapshot");
    let plain = Workspace::create(fx.path(), false).expect("create");
    let fresh = crate::execution::snapshot::Snapshot::take(plain.path()).expect("snapshot");
    assert_eq!(
        during.state(),
        fresh.state(),
        "the state of a workspace without archive"
    );
    assert_ne!(before.state(), fresh.state());
    drop(guard);
    assert_eq!(
        fs::read_to_string(ws.archive_dir().join("x")).expect("back"),
        "archived turn\n"
    );
    let after = crate::execution::snapshot::Snapshot::take(ws.path()).expect("snapshot");
    assert_eq!(after.state(), before.state());
}

#[test]
fn create_commits_the_fixture() {
    let fx = fixture();
    let ws = Workspace::create(fx.path(), false).expect("create");
    assert!(ws
        .path()
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("foldbench-")));
    let repo = Repository::open(ws.path()).expect("open");
    let head = repo.head().expect("head").peel_to_commit().expect("commit");
    assert_eq!(head.id().to_string(), ws.base_commit());
    assert_eq!(head.parent_count(), 0);
    assert_eq!(head.author().name(), Some("foldbench"));
    assert_eq!(head.author().email(), Some("foldbench@localhost"));
    assert_eq!(head.time().seconds(), 0);
    let tree = head.tree().expect("tree");
    for path in [
        "src/session.py",
        "src/pkg/__init__.py",
        "README.md",
        "run.sh",
    ] {
        assert!(tree.get_path(Path::new(path)).is_ok(), "{path} committed");
    }
    let run = tree.get_path(Path::new("run.sh")).expect("run.sh");
    assert_eq!(run.filemode(), 0o100755, "executable bit kept");
    let mode = fs::metadata(ws.path().join("run.sh"))
        .expect("stat")
        .permissions()
        .mode();
    assert_ne!(mode & 0o111, 0);
    assert_eq!(
        fs::read_to_string(ws.path().join("src/session.py")).expect("read"),
        "PORT = 8080\n"
    );
    // Same fixture, same commit id.
    let ws2 = Workspace::create(fx.path(), false).expect("create");
    assert_eq!(ws.base_commit(), ws2.base_commit());
    assert_eq!(
        ws.fingerprint().expect("fp"),
        ws2.fingerprint().expect("fp")
    );
    assert!(ws.diff().expect("diff").is_empty());
}

#[test]
fn archive_is_invisible_to_git_fingerprint_and_diff() {
    let fx = fixture();
    let ws = Workspace::create(fx.path(), false).expect("create");
    let before = ws.fingerprint().expect("fp");
    write_archive(&ws);
    let repo = Repository::open(ws.path()).expect("open");
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true);
    let statuses = repo.statuses(Some(&mut opts)).expect("status");
    assert_eq!(statuses.len(), 0, "git status is clean");
    assert_eq!(ws.diff().expect("diff"), "");
    assert_eq!(ws.fingerprint().expect("fp"), before);
    let exclude = fs::read_to_string(ws.path().join(".git/info/exclude")).expect("read exclude");
    assert!(exclude.lines().any(|l| l == ".foldbench/"));
}

#[test]
fn fingerprint_changes_with_files() {
    let fx = fixture();
    let ws = Workspace::create(fx.path(), false).expect("create");
    let a = ws.fingerprint().expect("fp");
    assert_eq!(a.len(), 64);
    fs::write(ws.path().join("src/session.py"), "PORT = 0\n").expect("write");
    let b = ws.fingerprint().expect("fp");
    assert_ne!(a, b);
    fs::write(ws.path().join("src/session.py"), "PORT = 8080\n").expect("write");
    assert_eq!(
        ws.fingerprint().expect("fp"),
        a,
        "same files, same fingerprint"
    );
    fs::write(ws.path().join("new.txt"), "").expect("write");
    assert_ne!(ws.fingerprint().expect("fp"), a);
}

#[test]
fn diff_shows_edits_and_new_files() {
    let fx = fixture();
    let ws = Workspace::create(fx.path(), false).expect("create");
    write_archive(&ws);
    fs::write(ws.path().join("src/session.py"), "PORT = 0\n").expect("write");
    fs::write(ws.path().join("notes.txt"), "new file\n").expect("write");
    let diff = ws.diff().expect("diff");
    assert!(
        diff.contains("diff --git a/src/session.py b/src/session.py"),
        "{diff}"
    );
    assert!(diff.contains("-PORT = 8080\n"), "{diff}");
    assert!(diff.contains("+PORT = 0\n"), "{diff}");
    assert!(diff.contains("b/notes.txt"), "{diff}");
    assert!(diff.contains("+new file\n"), "{diff}");
    assert!(!diff.contains("archived turn"), "{diff}");
    assert!(!diff.contains(".foldbench"), "{diff}");
}

/// `n` bytes of text lines.
fn text_of(n: usize) -> String {
    let line = "the quick brown fox jumps over the lazy dog 0123456789\n";
    line.repeat(n / line.len() + 1)[..n].to_string()
}

#[test]
fn a_large_new_file_is_named_in_the_diff_not_copied() {
    let fx = fixture();
    let ws = Workspace::create(fx.path(), false).expect("create");
    fs::write(
        ws.path().join("big.log"),
        text_of(3 * DIFF_FILE_CAP as usize),
    )
    .expect("write");
    fs::write(ws.path().join("notes.txt"), "new file\n").expect("write");
    let diff = ws.diff().expect("diff");
    assert!(diff.len() < 4096, "{} bytes", diff.len());
    assert!(diff.contains("b/big.log"), "{diff}");
    assert!(
        diff.contains(&format!("larger than {DIFF_FILE_CAP} bytes")),
        "{diff}"
    );
    assert!(diff.contains("+new file\n"), "{diff}");
}

#[test]
fn the_whole_diff_is_capped_with_a_note() {
    let fx = fixture();
    let ws = Workspace::create(fx.path(), false).expect("create");
    let each = DIFF_FILE_CAP as usize - 1000;
    let files = DIFF_CAP / each + 3;
    for i in 0..files {
        fs::write(ws.path().join(format!("f{i:02}.txt")), text_of(each)).expect("write");
    }
    let diff = ws.diff().expect("diff");
    assert!(diff.len() <= DIFF_CAP + 200, "{} bytes", diff.len());
    let note = diff.lines().last().unwrap_or("");
    assert!(
        note.starts_with("[… the diff is cut at ")
            && note.contains("files left out")
            && note.ends_with(" …]"),
        "{note}"
    );
}

#[test]
fn fixture_symlink_is_refused() {
    let fx = fixture();
    symlink("/etc/passwd", fx.path().join("passwd")).expect("symlink");
    let err = Workspace::create(fx.path(), false).expect_err("must fail");
    assert!(matches!(err, WorkspaceError::Fixture { .. }), "{err}");
    assert!(err.to_string().contains("symlink"), "{err}");
}

#[test]
fn missing_fixture_is_an_error() {
    let fx = fixture();
    let err = Workspace::create(&fx.path().join("nope"), false).expect_err("must fail");
    assert!(matches!(err, WorkspaceError::Io { .. }), "{err}");
}

#[test]
fn workspaces_of_dead_runs_are_swept_and_live_or_kept_ones_stay() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // A pid that surely belongs to no process any more: a child that has exited and been
    // reaped.
    let mut child = std::process::Command::new("true").spawn().expect("spawn");
    let dead = child.id();
    child.wait().expect("wait");
    let dead_ws = tmp.path().join(format!("{}abc", owned_prefix(dead)));
    let live_ws = tmp
        .path()
        .join(format!("{}abc", owned_prefix(std::process::id())));
    let kept_ws = tmp.path().join(format!("{KEPT_PREFIX}abc"));
    let other = tmp.path().join("foldbench-pnotapid-x");
    // The same dead pid in another PID namespace (a container sharing the folder): not
    // this namespace's process, so not swept.
    let ns = pid_namespace().expect("a PID namespace");
    let foreign = tmp
        .path()
        .join(format!("foldbench-p{dead}-n{}-abc", ns + 1));
    // A name from before the namespace was written counts as this namespace's.
    let legacy = tmp.path().join(format!("foldbench-p{dead}-legacy"));
    for d in [&dead_ws, &live_ws, &kept_ws, &other, &foreign, &legacy] {
        fs::create_dir_all(d.join("src")).expect("mkdir");
    }
    assert_eq!(sweep_stale(tmp.path()), 2);
    assert!(!dead_ws.exists() && !legacy.exists());
    assert!(live_ws.exists() && kept_ws.exists() && other.exists() && foreign.exists());
    let me = std::process::id();
    assert_eq!(sweep(tmp.path(), |pid| pid == me), 1);
    assert!(!live_ws.exists() && kept_ws.exists());
}

#[test]
fn workspaces_are_named_after_their_process() {
    let fx = fixture();
    let ws = Workspace::create(fx.path(), false).expect("create");
    let name = ws.path().file_name().unwrap().to_string_lossy().to_string();
    assert_eq!(owner_of(&name), Some(std::process::id()), "{name}");
    let kept = Workspace::create(fx.path(), true).expect("create");
    let path = kept.path().to_path_buf();
    assert!(path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with(KEPT_PREFIX));
    fs::remove_dir_all(&path).expect("cleanup");
}

#[test]
fn keep_leaves_the_dir() {
    let fx = fixture();
    let ws = Workspace::create(fx.path(), true).expect("create");
    let path = ws.path().to_path_buf();
    drop(ws);
    assert!(path.join("src/session.py").exists());
    fs::remove_dir_all(&path).expect("cleanup");

    let ws = Workspace::create(fx.path(), false).expect("create");
    let path = ws.path().to_path_buf();
    drop(ws);
    assert!(!path.exists());
}

#[test]
fn dev_shm_is_used_when_it_is_a_large_enough_tmpfs() {
    let host = "sysfs /sys sysfs rw 0 0\ntmpfs /dev/shm tmpfs rw,nosuid,nodev,size=24684084k 0 0\n";
    assert!(shm_usable(host));
    assert!(shm_usable("tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n"));
    // A container's default, a disk, none, and a small tmpfs mounted over a large one.
    assert!(!shm_usable(
        "shm /dev/shm tmpfs rw,nosuid,size=65536k 0 0\n"
    ));
    assert!(!shm_usable("/dev/vda /dev/shm ext4 rw 0 0\n"));
    assert!(!shm_usable("proc /proc proc rw 0 0\n"));
    assert!(!shm_usable(&format!(
        "{host}shm /dev/shm tmpfs rw,size=65536k 0 0\n"
    )));
}

#[test]
fn archive_paths() {
    assert!(is_archive_path(".foldbench/archive"));
    assert!(is_archive_path(".foldbench/archive/fold-1-2.md"));
    assert!(is_archive_path("./.foldbench/archive/x"));
    assert!(is_archive_path("src/../.foldbench/archive/x"));
    assert!(!is_archive_path(".foldbench/archived"));
    assert!(!is_archive_path(".foldbench"));
    assert!(!is_archive_path("src/.foldbench/archive/x"));
    assert!(!is_archive_path("../.foldbench/archive/x"));
    assert_eq!(Workspace::ARCHIVE_DIR, ".foldbench/archive");
}

fn secs(n: u64) -> ToolLimits {
    ToolLimits {
        shell_timeout: std::time::Duration::from_secs(n),
        ..ToolLimits::default()
    }
}

#[tokio::test]
async fn setup_runs_and_reports_failures() {
    let fx = fixture();
    let ws = Workspace::create(fx.path(), false).expect("create");
    ws.run_setup(
        &[
            "echo made > made.txt".to_string(),
            "test -f made.txt".to_string(),
        ],
        &secs(10),
    )
    .await
    .expect("setup ok");
    assert!(ws.path().join("made.txt").exists());

    let err = ws
        .run_setup(
            &[
                "true".to_string(),
                "echo broken-step; exit 4".to_string(),
                "touch never.txt".to_string(),
            ],
            &secs(10),
        )
        .await
        .expect_err("must fail");
    let text = err.to_string();
    assert!(text.contains("`echo broken-step; exit 4`"), "{text}");
    assert!(text.contains("exit code 4"), "{text}");
    assert!(text.contains("broken-step"), "{text}");
    assert!(!ws.path().join("never.txt").exists());

    let err = ws
        .run_setup(&["sleep 100".to_string()], &secs(1))
        .await
        .expect_err("must time out");
    assert!(err.to_string().contains("timed out"), "{err}");
}

#[tokio::test]
async fn after_setup_every_file_folder_and_link_has_the_fixed_time() {
    use std::os::unix::fs::MetadataExt;
    let fx = fixture();
    let ws = Workspace::create(fx.path(), false).expect("create");
    ws.run_setup(
        &[
            "mkdir -p logs".to_string(),
            "echo one > logs/a.log && ln -s a.log logs/current".to_string(),
        ],
        &secs(10),
    )
    .await
    .expect("setup ok");
    let root = ws.path();
    let mut seen = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let m = fs::symlink_metadata(&p).expect("metadata");
        assert_eq!(m.mtime(), FILE_TIME, "{} modified", p.display());
        seen += 1;
        if m.is_dir() && p != root.join(".git") {
            stack.extend(fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        }
    }
    // The fixture's files, the folder and files setup made, the link itself, the root, `.git`.
    assert!(seen >= 8, "{seen}");
    let link = fs::symlink_metadata(root.join("logs/current")).unwrap();
    assert!(link.file_type().is_symlink());
    // What `.git` holds keeps its own times: git's index is not touched.
    let index = fs::metadata(root.join(".git/index")).unwrap();
    assert_ne!(index.mtime(), FILE_TIME);
    // And the listing a shell command prints is the same in a second workspace made later.
    let second = Workspace::create(fx.path(), false).expect("create");
    second
        .run_setup(
            &["mkdir -p logs && echo one > logs/a.log && ln -s a.log logs/current".to_string()],
            &secs(10),
        )
        .await
        .expect("setup ok");
    let list = |w: &Workspace| {
        std::process::Command::new("ls")
            .args(["-l", "--time-style=+%F %T", "logs", "."])
            .current_dir(w.path())
            .env("TZ", "UTC")
            .output()
            .expect("ls runs")
            .stdout
    };
    let first = list(&ws);
    assert!(
        String::from_utf8_lossy(&first).contains("2024-05-03 00:00:00 a.log"),
        "{}",
        String::from_utf8_lossy(&first)
    );
    assert_eq!(first, list(&second));
}
