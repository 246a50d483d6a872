//! The sandbox's tests: its mounts, the private entries' search, and what a command in it
//! sees.

use super::*;
use crate::execution::process::run_shell;
use std::time::Duration;

/// The bubblewrap sandbox, or `None` (with a note) where this machine has none. Under
/// `FOLDBENCH_REQUIRE_SANDBOX=1` (set by CI) a missing sandbox fails the test instead.
fn bwrap() -> Option<Sandbox> {
    match Sandbox::detect(SandboxMode::Bwrap) {
        Ok(s) => Some(s),
        Err(e) if std::env::var("FOLDBENCH_REQUIRE_SANDBOX").as_deref() == Ok("1") => {
            panic!("FOLDBENCH_REQUIRE_SANDBOX=1 but {e}")
        }
        Err(e) => {
            // On the process's stderr itself, which the test harness does not capture:
            // `cargo test` shows that the test did not run.
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("skipped: {e}\n").as_bytes(),
            );
            None
        }
    }
}

async fn sh(sb: &Sandbox, root: &Path, script: &str) -> String {
    let run = run_shell(root, script, Duration::from_secs(20), 100_000, sb)
        .await
        .expect("shell starts");
    run.output
}

#[test]
fn modes_parse_and_print() {
    for m in ["auto", "bwrap", "none"] {
        assert_eq!(m.parse::<SandboxMode>().unwrap().to_string(), m);
    }
    let err = "docker".parse::<SandboxMode>().unwrap_err().to_string();
    assert!(err.contains("auto, bwrap or none"), "{err}");
    assert!(!Sandbox::detect(SandboxMode::None).unwrap().is_isolated());
}

fn entry(path: &str, dir: bool) -> PrivateEntry {
    PrivateEntry {
        path: PathBuf::from(path),
        dir,
    }
}

/// The argument pairs of `args` (`--tmpfs X`, `--ro-bind A B`, ...) as strings.
fn words(args: &[std::ffi::OsString]) -> Vec<String> {
    args.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

#[test]
fn private_files_are_covered_and_private_folders_above_a_bind_stay_traversable() {
    let private = [
        entry("/etc/shadow", false),
        entry("/srv/keys", true),
        entry("/work/private", true),
        entry("/work/private/ws/secret.key", false),
        entry("/opt/agent/home/private", true),
        entry("/opt/tool/private", true),
    ];
    let (home, tool) = (PathBuf::from("/opt/agent/home"), PathBuf::from("/opt/tool"));
    let ws = Path::new("/work/private/ws");
    let args = words(&bwrap_args_from(
        ws,
        ws,
        false,
        &[],
        &[(home.as_path(), true), (tool.as_path(), false)],
        &[PathBuf::from("/tmp")],
        &private,
    ));
    let at = |w: &[&str]| args.windows(w.len()).position(|x| x == w);
    assert!(at(&["--cap-drop", "ALL"]).is_some(), "{args:?}");
    assert!(
        at(&["--ro-bind", "/dev/null", "/etc/shadow"]).is_some(),
        "{args:?}"
    );
    assert!(
        at(&["--perms", "0000", "--tmpfs", "/srv/keys"]).is_some(),
        "{args:?}"
    );
    // Above the workspace: an empty folder the workspace's mount point is made in.
    let above = at(&["--tmpfs", "/work/private"]).expect("the private folder is covered");
    assert_ne!(args[above - 1], "0000", "{args:?}");
    let ws = at(&["--bind", "/work/private/ws", "/work/private/ws"]).unwrap();
    assert!(
        above < ws,
        "the workspace is bound after the cover: {args:?}"
    );
    // Inside the workspace or a folder bound writable: shown as it is there.
    assert!(!args.iter().any(|a| a.contains("secret.key")), "{args:?}");
    assert!(
        !args.iter().any(|a| a == "/opt/agent/home/private"),
        "{args:?}"
    );
    // A folder bound read-only shows through the read-only root, its private folder covered.
    assert!(!args.iter().any(|a| a == "/opt/tool"), "{args:?}");
    assert!(
        at(&["--perms", "0000", "--tmpfs", "/opt/tool/private"]).is_some(),
        "{args:?}"
    );
}

/// The mounts of `args` after the read-only root, as `(flag, path)`.
fn mounts(args: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut k = args.iter().position(|a| a == "--new-session").unwrap() + 4;
    while k < args.len() {
        let n = match args[k].as_str() {
            "--bind" | "--ro-bind" => 3,
            "--perms" => {
                k += 2;
                continue;
            }
            _ => 2,
        };
        out.push((args[k].clone(), args[k + n - 1].clone()));
        k += n;
    }
    out
}

/// Where `(flag, path)` is among the mounts.
fn mount_at(m: &[(String, String)], flag: &str, path: &str) -> Option<usize> {
    m.iter().position(|(f, p)| f == flag && p == path)
}

#[test]
fn a_working_folder_bound_in_never_uncovers_what_the_sandbox_hides() {
    let hidden = [
        PathBuf::from("/tmp"),
        PathBuf::from("/run"),
        PathBuf::from("/home/me"),
    ];
    let private = [entry("/etc/shadow", false), entry("/srv/keys", true)];
    let ws = Path::new("/dev/shm/ws");
    let of = |cwd: &str| {
        let cwd = PathBuf::from(cwd);
        mounts(&words(&bwrap_args_from(
            ws,
            ws,
            false,
            &[],
            &[(cwd.as_path(), false)],
            &hidden,
            &private,
        )))
    };
    // Whatever the folder, every cover is made, after any bind above it.
    for cwd in [
        "/",
        "/home",
        "/home/me",
        "/home/me/project",
        "/tmp/policies",
        "/proc/1",
        "/dev",
        "/etc",
        "/srv/keys/x",
        "/work/checkout",
    ] {
        let m = of(cwd);
        let covers = [
            ("--tmpfs", "/tmp"),
            ("--tmpfs", "/run"),
            ("--tmpfs", "/home/me"),
            ("--ro-bind", "/etc/shadow"),
            ("--tmpfs", "/srv/keys"),
            ("--proc", "/proc"),
            ("--dev", "/dev"),
        ];
        for (flag, path) in covers {
            let c = mount_at(&m, flag, path).unwrap_or_else(|| panic!("{cwd}: {m:?}"));
            for (k, (f, p)) in m.iter().enumerate() {
                if f.ends_with("bind") && Path::new(path).starts_with(p) && p != path {
                    assert!(k < c, "{cwd}: {p} bound after {path}: {m:?}");
                }
            }
        }
        // The workspace in /dev/shm is bound after the sandbox's /dev.
        let dev = mount_at(&m, "--dev", "/dev").unwrap();
        assert!(
            mount_at(&m, "--bind", "/dev/shm/ws").unwrap() > dev,
            "{m:?}"
        );
        let bound = m.iter().any(|(f, p)| f == "--ro-bind" && p == cwd);
        // Bound only where a hidden folder or a private one covers it.
        let want = matches!(cwd, "/home/me/project" | "/tmp/policies" | "/srv/keys/x");
        assert_eq!(bound, want, "{cwd}: {m:?}");
        if want {
            let bind = mount_at(&m, "--ro-bind", cwd).unwrap();
            let cover = m
                .iter()
                .position(|(_, p)| Path::new(cwd).starts_with(p) && p != cwd && p != "/")
                .unwrap();
            assert!(cover < bind, "{cwd}: shown through its cover: {m:?}");
        }
    }
}

#[test]
fn a_folder_reached_through_a_link_is_bound_as_the_folder_it_is() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("real");
    std::fs::create_dir(&target).unwrap();
    let link = d.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let args = words(&bwrap_args_with(&link, false, false, &[(&link, false)]));
    let real = std::fs::canonicalize(&target).unwrap();
    let real = real.display().to_string();
    assert!(
        args.windows(3)
            .any(|w| w[0] == "--bind" && w[1] == real && w[2] == real),
        "{args:?}"
    );
    assert_eq!(args.last().map(String::as_str), link.to_str(), "{args:?}");
}

#[test]
fn the_search_finds_private_entries_without_entering_them_and_hides_crowded_folders_whole() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let at = |p: &str| d.path().join(p);
    let mode = |p: &str, m: u32| {
        std::fs::set_permissions(at(p), std::fs::Permissions::from_mode(m)).unwrap()
    };
    for dir in ["open/deeper", "closed", "logs", "unlisted"] {
        std::fs::create_dir_all(at(dir)).unwrap();
    }
    for f in [
        "a.key",
        "pub.txt",
        "open/b.key",
        "open/deeper/c.key",
        "closed/d.key",
    ] {
        std::fs::write(at(f), "secret").unwrap();
    }
    for n in 0..=COLLAPSE_OVER {
        std::fs::write(at(&format!("logs/{n}.log")), "log").unwrap();
        mode(&format!("logs/{n}.log"), 0o640);
    }
    std::fs::write(at("logs/public.log"), "log").unwrap();
    std::os::unix::fs::symlink("/etc/shadow", at("link")).unwrap();
    mode("a.key", 0o600);
    mode("open/b.key", 0o640);
    mode("open/deeper/c.key", 0o600);
    mode("closed", 0o700);
    mode("unlisted", 0o711);
    let mut found = Vec::new();
    let mut budget = SEARCH_LIMIT;
    find_private(d.path(), 0, &[], &mut found, &mut budget);
    let rel: Vec<(String, bool)> = found
        .iter()
        .map(|e| {
            let p = e.path.strip_prefix(d.path()).unwrap();
            (p.display().to_string(), e.dir)
        })
        .collect();
    let want: Vec<(String, bool)> = [
        ("a.key", false),
        ("closed", true),
        ("logs", true),
        ("open/b.key", false),
        ("unlisted", true),
    ]
    .iter()
    .map(|(p, dir)| (p.to_string(), *dir))
    .collect();
    assert_eq!(rel, want);
    // The budget stops the search.
    let mut found = Vec::new();
    let mut budget = 1;
    find_private(d.path(), 0, &[], &mut found, &mut budget);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(budget, 0);
}

#[test]
fn the_hosts_shadow_file_is_private() {
    let shadow = Path::new("/etc/shadow");
    let open_to_all = std::fs::metadata(shadow).map(|m| {
        use std::os::unix::fs::PermissionsExt;
        m.permissions().mode() & 0o004 != 0
    });
    if let Ok(false) = open_to_all {
        assert!(
            private_entries().contains(&entry("/etc/shadow", false)),
            "{:?}",
            private_entries()
        );
    }
    assert!(private_entries()
        .iter()
        .all(|e| !hidden_folders().iter().any(|h| e.path.starts_with(h))));
}

#[tokio::test]
async fn the_agent_cannot_read_foldbenchs_environment_through_proc() {
    let Some(sb) = bwrap() else { return };
    std::env::set_var("FOLDBENCH_TEST_LEAK_API_KEY", "sk-proc-leak-canary");
    let dir = tempfile::tempdir().unwrap();
    let out = sh(
        &sb,
        dir.path(),
        "tr '\\0' '\\n' < /proc/$PPID/environ; echo ---; \
         for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done; echo ---; \
         ls /proc | grep -c '^[0-9]'",
    )
    .await;
    assert!(!out.contains("sk-proc-leak-canary"), "{out}");
    assert!(out.contains("PATH="), "the read itself worked: {out}");
    // Only the sandbox's own processes: its init, `sh`, and the pipeline.
    let count: usize = out.lines().last().unwrap().trim().parse().unwrap();
    assert!(count <= 6, "{count} processes visible: {out}");
}

#[tokio::test]
async fn the_sandbox_hides_home_and_tmp_and_writes_only_the_workspace() {
    let Some(sb) = bwrap() else { return };
    let home = std::env::var("HOME").unwrap();
    let canary = std::path::PathBuf::from(&home).join(".foldbench-sandbox-canary");
    std::fs::write(&canary, "home-canary").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = sh(
        &sb,
        dir.path(),
        &format!(
            "cat {} 2>&1; ls /tmp | wc -l; touch /usr/foldbench-x 2>&1; echo ok > made.txt; \
             python3 -c 'print(6 * 7)'",
            canary.display()
        ),
    )
    .await;
    let _ = std::fs::remove_file(&canary);
    assert!(!out.contains("home-canary"), "{out}");
    assert!(out.contains("Read-only file system"), "{out}");
    assert!(out.contains("42"), "python3 runs in the sandbox: {out}");
    assert!(!Path::new("/usr/foldbench-x").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("made.txt")).unwrap(),
        "ok\n"
    );
}

#[tokio::test]
async fn setsid_children_die_with_the_call() {
    let Some(sb) = bwrap() else { return };
    let dir = tempfile::tempdir().unwrap();
    // `sleep 4242.5` is the marker: a setsid child in a session of its own, which a kill
    // of the call's process group does not reach.
    sh(
        &sb,
        dir.path(),
        "setsid -f sleep 4242.5 >/dev/null 2>&1; echo started",
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let ps = std::process::Command::new("sh")
        // `[.]` so the search does not find its own command line.
        .args(["-c", "grep -l '4242[.]5' /proc/[0-9]*/cmdline"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&ps.stdout).trim().is_empty(),
        "a setsid child outlived the call: {}",
        String::from_utf8_lossy(&ps.stdout)
    );
}

#[tokio::test]
async fn the_network_is_off_unless_the_task_asks() {
    let Some(sb) = bwrap() else { return };
    let dir = tempfile::tempdir().unwrap();
    let probe = "python3 -c \"import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); \
                 print('net', len([l for l in open('/proc/net/dev')][2:]))\"";
    let off = sh(&sb, dir.path(), probe).await;
    let on = sh(&sb.for_task(true, &[]), dir.path(), probe).await;
    // A new network namespace has the loopback device only.
    assert!(off.contains("net 1"), "{off}");
    assert_ne!(
        off, on,
        "the task's network flag changes nothing: {off} / {on}"
    );
}
