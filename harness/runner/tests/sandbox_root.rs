//! The bubblewrap sandbox against an agent that runs as root (as CI and most containers run
//! foldbench): no capability, no mount or unmount, no host `/proc`, no file that only its owner
//! or group may read, no write outside the workspace. Each test runs the attack in the sandbox
//! and looks at the host afterwards.
//!
//! Without bubblewrap the tests say so and pass, except under `FOLDBENCH_REQUIRE_SANDBOX=1` (set
//! by CI), where a missing sandbox fails them.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use harness_runner::execution::{Sandbox, SandboxMode};

/// The bubblewrap sandbox, or `None` (with a note) where this machine has none.
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

/// Runs `script` in the sandbox in workspace `root`: its output (stderr merged) and exit code.
async fn sh(sb: &Sandbox, root: &Path, script: &str) -> (String, Option<i32>) {
    let out = sb
        .command(root, &format!("exec 2>&1\n{script}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .expect("the sandbox starts");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code(),
    )
}

/// The folders the sandbox replaces by empty ones.
fn hidden() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = ["/tmp", "/var/tmp", "/run"].map(PathBuf::from).to_vec();
    v.extend(std::env::var_os("HOME").map(PathBuf::from));
    v
}

/// A folder on the host that the sandbox shows (read-only), outside the workspace: where a
/// write that escaped would land.
fn visible_host_folder() -> tempfile::TempDir {
    let candidates = [env!("CARGO_TARGET_TMPDIR"), "/var/lib", "/opt", "/srv"];
    for c in candidates {
        let c = Path::new(c);
        if c.is_dir() && !hidden().iter().any(|h| c.starts_with(h)) {
            if let Ok(d) = tempfile::Builder::new()
                .prefix("foldbench-sandbox-")
                .tempdir_in(c)
            {
                return d;
            }
        }
    }
    panic!("no folder outside the hidden ones to test writes in: {candidates:?}");
}

/// Whether this process runs as root (the case these tests are about; as another user the
/// kernel already refuses most of it).
fn root_user() -> bool {
    rustix::process::geteuid().is_root()
}

#[tokio::test]
async fn the_agent_has_no_capability_and_no_new_privileges() {
    let Some(sb) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let (out, _) = sh(
        &sb,
        ws.path(),
        "grep -E '^(Cap|NoNewPrivs)' /proc/self/status",
    )
    .await;
    for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert!(
            out.contains(&format!("{set}:\t0000000000000000")),
            "{set} is not empty: {out}"
        );
    }
    assert!(out.contains("NoNewPrivs:\t1"), "{out}");
}

#[tokio::test]
async fn remounting_the_host_writable_is_refused_and_nothing_outside_the_workspace_is_written() {
    let Some(sb) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let outside = visible_host_folder();
    let victim = outside.path().join("victim.txt");
    let (out, _) = sh(
        &sb,
        ws.path(),
        &format!(
            "command -v mount || echo no-mount-program; test -d {dir} && echo visible; \
             echo direct > {victim}; mount -o remount,rw,bind / && echo REMOUNTED; \
             mount -o remount,rw,bind {dir} && echo REMOUNTED-DIR; \
             echo remounted > {victim}; mount -t tmpfs none {dir} && echo MOUNTED",
            dir = outside.path().display(),
            victim = victim.display()
        ),
    )
    .await;
    assert!(
        !out.contains("no-mount-program"),
        "the attack needs mount: {out}"
    );
    assert!(
        out.contains("visible"),
        "the host folder is not in the sandbox: {out}"
    );
    assert!(!out.contains("REMOUNTED"), "{out}");
    assert!(!out.contains("MOUNTED"), "{out}");
    assert!(
        !victim.exists(),
        "written outside the workspace: {:?}\n{out}",
        std::fs::read_to_string(&victim)
    );
}

#[tokio::test]
async fn unmounting_tmp_home_or_proc_is_refused() {
    let Some(sb) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set"));
    let tag = format!("{}-{}", std::process::id(), "umount");
    let tmp_canary = Path::new("/tmp").join(format!("foldbench-canary-{tag}"));
    let home_canary = home.join(format!(".foldbench-canary-{tag}"));
    std::fs::write(&tmp_canary, "host-tmp-canary").unwrap();
    std::fs::write(&home_canary, "host-home-canary").unwrap();
    // A host process with a command line of its own, for `/proc` to show.
    let marker = format!("4243.{}", std::process::id());
    let mut host = std::process::Command::new("sleep")
        .arg(&marker)
        .spawn()
        .unwrap();
    let (out, _) = sh(
        &sb,
        ws.path(),
        &format!(
            "command -v umount || echo no-umount-program; \
             umount -l /tmp && echo UNMOUNTED-TMP; cat {tmp} 2>/dev/null; \
             umount -l {home} && echo UNMOUNTED-HOME; cat {homec} 2>/dev/null; \
             umount -l /proc && echo UNMOUNTED-PROC; \
             grep -l '^sleep.{marker}' /proc/[0-9]*/cmdline 2>/dev/null && echo HOST-PROCESS; \
             echo done",
            tmp = tmp_canary.display(),
            home = home.display(),
            homec = home_canary.display(),
            marker = marker.replace('.', "[.]"),
        ),
    )
    .await;
    let _ = host.kill();
    let _ = host.wait();
    let _ = std::fs::remove_file(&tmp_canary);
    let _ = std::fs::remove_file(&home_canary);
    assert!(out.contains("done"), "{out}");
    assert!(
        !out.contains("no-umount-program"),
        "the attack needs umount: {out}"
    );
    for leak in [
        "UNMOUNTED-TMP",
        "host-tmp-canary",
        "UNMOUNTED-HOME",
        "host-home-canary",
        "UNMOUNTED-PROC",
        "HOST-PROCESS",
    ] {
        assert!(!out.contains(leak), "{leak}: {out}");
    }
}

#[tokio::test]
async fn host_processes_are_not_visible() {
    let Some(sb) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let marker = format!("4244.{}", std::process::id());
    let mut host = std::process::Command::new("sleep")
        .arg(&marker)
        .spawn()
        .unwrap();
    let (out, _) = sh(
        &sb,
        ws.path(),
        &format!(
            "grep -l '^sleep.{}' /proc/[0-9]*/cmdline 2>/dev/null && echo HOST-PROCESS; \
             ls /proc | grep -c '^[0-9]'",
            marker.replace('.', "[.]")
        ),
    )
    .await;
    let _ = host.kill();
    let _ = host.wait();
    assert!(!out.contains("HOST-PROCESS"), "{out}");
    let count: usize = out.trim().lines().last().unwrap().trim().parse().unwrap();
    assert!(count <= 6, "{count} processes visible: {out}");
}

#[tokio::test]
async fn files_only_their_owner_or_group_may_read_are_unreadable() {
    let Some(sb) = bwrap() else { return };
    let ws = tempfile::tempdir().unwrap();
    let shadow = Path::new("/etc/shadow");
    let secret = std::fs::read_to_string(shadow).ok();
    if root_user() {
        assert!(secret.is_some(), "root reads /etc/shadow on the host");
    }
    // Every file and folder of /etc and /var that others may not read, as the agent sees it.
    let (out, _) = sh(
        &sb,
        ws.path(),
        "cat /etc/shadow; echo \"cat: $?\"; cat /etc/gshadow >/dev/null; echo \"gcat: $?\"; \
         echo readable:; find /etc /var \\( -type f ! -perm -o=r -readable \\) -o \
         \\( -type d ! -perm -o=rx -readable \\) -print 2>/dev/null; echo end",
    )
    .await;
    if let Some(secret) = secret.as_deref() {
        let first = secret.lines().next().unwrap_or_default();
        assert!(first.is_empty() || !out.contains(first), "{out}");
        assert!(out.contains("Permission denied"), "{out}");
        assert!(!out.contains("cat: 0"), "{out}");
    }
    if Path::new("/etc/gshadow").exists() {
        assert!(!out.contains("gcat: 0"), "{out}");
    }
    let listed = out
        .split("readable:\n")
        .nth(1)
        .and_then(|r| r.strip_suffix("end\n"))
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(listed, "", "private host files readable in the sandbox");
}

#[tokio::test]
async fn a_real_agents_process_gets_the_same_sandbox() {
    use harness_runner::agents::{isolated_command, Isolation, Launch};
    use harness_runner::agents::{Agent, Exec, TurnCommand};
    let Some(sb) = bwrap() else { return };
    let (ws, home, sock) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let agent = Agent {
        kind: Exec::leak("sh"),
        program: PathBuf::from("/bin/sh"),
        version: "unknown".into(),
    };
    let turn = TurnCommand {
        program: PathBuf::from("sh"),
        args: vec![
            "-c".into(),
            "exec 2>&1; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; \
             cat /etc/shadow; echo \"cat: $?\"; umount -l /tmp && echo UNMOUNTED"
                .into(),
        ],
        env: Vec::new(),
    };
    let launch = Launch {
        workspace: ws.path(),
        home: home.path(),
        socket_dir: sock.path(),
        sandbox: &sb,
        isolation: &Isolation::SharedNetwork,
    };
    let out = isolated_command(&agent, &turn, &launch)
        .output()
        .await
        .unwrap();
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(out.contains("CapEff:\t0000000000000000"), "{out}");
    assert!(out.contains("NoNewPrivs:\t1"), "{out}");
    assert!(!out.contains("cat: 0"), "{out}");
    assert!(!out.contains("UNMOUNTED"), "{out}");
}
