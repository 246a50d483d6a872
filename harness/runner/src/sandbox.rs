//! The sandbox every shell command of a cell runs in: the agent's `shell` calls, the task's
//! `setup` commands and its shell checks.
//!
//! With bubblewrap (`bwrap`, Debian package `bubblewrap`, the sandbox Claude Code uses on Linux)
//! each command gets:
//!
//! - new namespaces for PIDs, IPC, UTS, cgroups, users and (unless the task sets
//!   `network: true`) the network, with its own `/proc`: no process of the host is visible, so
//!   `/proc/$PPID/environ` shows the sandbox's own allowed environment, never foldbench's;
//! - the host's file system read-only, with the host's home folder, `/tmp`, `/var/tmp` and
//!   `/run` replaced by empty private folders (the interpreter and the bare Python environment
//!   are bound back read-only when they live there), and the workspace bound read-write;
//! - a cleared environment plus the allow-list of [`allowed_env`];
//! - `--die-with-parent` and a PID namespace: when the call ends, every process it started,
//!   `setsid` and double-forked ones included, is killed with it.
//!
//! Without bubblewrap ([`SandboxMode::Auto`] on a machine where `bwrap` is missing or cannot
//! create namespaces, or [`SandboxMode::None`]) the command runs as a plain `sh` in its own
//! process group with the same allowed environment; `/proc` then still shows the host's
//! processes, which [`Sandbox::detect`] says once on standard error.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::OnceLock;

/// Which sandbox `--sandbox` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// bubblewrap when it works on this machine, else no sandbox with a warning (the default).
    #[default]
    Auto,
    /// bubblewrap, and its absence is an error.
    Bwrap,
    /// No sandbox: a plain `sh` with the allowed environment.
    None,
}

impl FromStr for SandboxMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(SandboxMode::Auto),
            "bwrap" => Ok(SandboxMode::Bwrap),
            "none" => Ok(SandboxMode::None),
            other => Err(format!(
                "unknown sandbox `{other}`; use auto, bwrap or none"
            )),
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SandboxMode::Auto => "auto",
            SandboxMode::Bwrap => "bwrap",
            SandboxMode::None => "none",
        })
    }
}

/// How a cell's shell commands are run: with or without bubblewrap, with or without the
/// network, and the task's own environment variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    bwrap: Option<PathBuf>,
    network: bool,
    task_env: Vec<(String, String)>,
}

impl Default for Sandbox {
    /// The `auto` sandbox: bubblewrap when this machine has a working one.
    fn default() -> Self {
        Sandbox::detect(SandboxMode::Auto).unwrap_or_else(|_| Sandbox::unconfined())
    }
}

impl Sandbox {
    /// No sandbox: a plain `sh` with the allowed environment.
    pub fn unconfined() -> Sandbox {
        Sandbox {
            bwrap: None,
            network: false,
            task_env: Vec::new(),
        }
    }

    /// The sandbox `mode` asks for on this machine. `Auto` falls back to no sandbox (and says
    /// so once per process on standard error) when `bwrap` is missing or cannot create its
    /// namespaces; `Bwrap` makes that an error that says why and what to do.
    pub fn detect(mode: SandboxMode) -> Result<Sandbox, String> {
        let probed = match mode {
            SandboxMode::None => return Ok(Sandbox::unconfined()),
            SandboxMode::Auto | SandboxMode::Bwrap => probe_bwrap(),
        };
        match (probed, mode) {
            (Ok(path), _) => Ok(Sandbox {
                bwrap: Some(path.clone()),
                network: false,
                task_env: Vec::new(),
            }),
            (Err(why), SandboxMode::Bwrap) => Err(format!(
                "--sandbox bwrap: {why}; install bubblewrap (Debian: apt-get install bubblewrap) \
                 or pass --sandbox auto"
            )),
            (Err(why), _) => {
                static WARNED: OnceLock<()> = OnceLock::new();
                WARNED.get_or_init(|| {
                    crate::progress::warn(&format!(
                        "warning: no sandbox for shell commands ({why}): they run as plain `sh` \
                         and can read other processes' environments through /proc; install \
                         bubblewrap (Debian: apt-get install bubblewrap), or pass --sandbox \
                         none to run without one knowingly"
                    ));
                });
                Ok(Sandbox::unconfined())
            }
        }
    }

    /// This sandbox for one task: with the network when the task asks for it, and the task's
    /// own environment variables added to the allow-list.
    pub fn for_task(&self, network: bool, env: &[(String, String)]) -> Sandbox {
        Sandbox {
            bwrap: self.bwrap.clone(),
            network,
            task_env: env.to_vec(),
        }
    }

    /// bubblewrap's path, when commands run in it.
    pub(crate) fn bwrap_path(&self) -> Option<&Path> {
        self.bwrap.as_deref()
    }

    /// Whether commands run inside bubblewrap.
    pub fn is_isolated(&self) -> bool {
        self.bwrap.is_some()
    }

    /// The environment a command sees in a workspace rooted at `root`.
    pub fn env(&self, root: &Path) -> Vec<(String, String)> {
        let mut env = allowed_env(&self.task_env);
        env.push(("HOME".to_string(), root.display().to_string()));
        env.sort();
        env
    }

    /// The command that runs `script` with `sh -c` in `root` under this sandbox, with a cleared
    /// environment plus [`Sandbox::env`] and `stdin` from `/dev/null`. The caller sets the pipes
    /// and the process group.
    pub fn command(&self, root: &Path, script: &str) -> tokio::process::Command {
        let mut cmd = match &self.bwrap {
            Some(bwrap) => {
                let mut cmd = tokio::process::Command::new(bwrap);
                cmd.args(bwrap_args(root, self.network, true)).arg("--");
                cmd.arg("sh");
                cmd
            }
            None => tokio::process::Command::new("sh"),
        };
        cmd.arg("-c")
            .arg(script)
            .current_dir(root)
            .env_clear()
            .envs(self.env(root))
            .stdin(std::process::Stdio::null());
        cmd
    }
}

/// The arguments of `bwrap` for a workspace at `root` (before `--` and the command).
/// With `python`, the bare Python environment is bound in (finding it runs the host's `python3`
/// once per process; the probe, which runs no Python, leaves it out so a run without a shell
/// command never pays for it).
fn bwrap_args(root: &Path, network: bool, python: bool) -> Vec<std::ffi::OsString> {
    bwrap_args_with(root, network, python, &[])
}

/// [`bwrap_args`] with more folders bound after the workspace, each `(path, writable)`: a real
/// agent's home, its install folder, the folder of its socket (`agents::isolate`).
pub(crate) fn bwrap_args_with(
    root: &Path,
    network: bool,
    python: bool,
    extra: &[(&Path, bool)],
) -> Vec<std::ffi::OsString> {
    let mut a: Vec<std::ffi::OsString> = Vec::new();
    let mut push = |parts: &[&std::ffi::OsStr]| a.extend(parts.iter().map(|p| p.to_os_string()));
    push(&["--unshare-all".as_ref()]);
    if network {
        push(&["--share-net".as_ref()]);
    }
    push(&[
        "--die-with-parent".as_ref(),
        "--new-session".as_ref(),
        "--ro-bind".as_ref(),
        "/".as_ref(),
        "/".as_ref(),
    ]);
    let hidden = hidden_folders();
    for dir in &hidden {
        push(&["--tmpfs".as_ref(), dir.as_os_str()]);
    }
    // The interpreter and the bare environment, when a hidden folder holds them.
    for dir in if python { python_binds() } else { Vec::new() } {
        if hidden.iter().any(|h| dir.starts_with(h)) {
            push(&["--ro-bind".as_ref(), dir.as_os_str(), dir.as_os_str()]);
        }
    }
    push(&[
        "--proc".as_ref(),
        "/proc".as_ref(),
        "--dev".as_ref(),
        "/dev".as_ref(),
        "--bind".as_ref(),
        root.as_os_str(),
        root.as_os_str(),
    ]);
    for (dir, writable) in extra {
        let flag: &std::ffi::OsStr = if *writable {
            "--bind".as_ref()
        } else {
            "--ro-bind".as_ref()
        };
        push(&[flag, dir.as_os_str(), dir.as_os_str()]);
    }
    push(&["--chdir".as_ref(), root.as_os_str()]);
    a
}

/// Folders replaced by empty private ones inside the sandbox: the host's home (keys, tokens
/// and credentials live there), `/tmp`, `/var/tmp` and `/run`.
fn hidden_folders() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ["/tmp", "/var/tmp", "/run"]
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .collect();
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        if home.is_absolute() && home != Path::new("/") && home.is_dir() {
            out.push(home);
        }
    }
    out
}

/// Finds `bwrap` on the PATH and checks that it can create its namespaces here, once per
/// process.
fn probe_bwrap() -> Result<PathBuf, String> {
    static PROBE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            let path = find_on_path("bwrap").ok_or("`bwrap` is not on the PATH")?;
            // The temp folder itself stands in for a workspace: the probe writes nothing, and
            // a folder made for it could be left behind by a kill.
            let out = std::process::Command::new(&path)
                .args(bwrap_args(&std::env::temp_dir(), false, false))
                .args(["--", "sh", "-c", "test -d /proc/self && echo ok"])
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .stdin(std::process::Stdio::null())
                .output()
                .map_err(|e| format!("cannot run {}: {e}", path.display()))?;
            if out.status.success() && out.stdout.starts_with(b"ok") {
                Ok(path)
            } else {
                let err = String::from_utf8_lossy(&out.stderr);
                Err(format!(
                    "{} cannot create its namespaces here ({})",
                    path.display(),
                    err.trim()
                ))
            }
        })
        .clone()
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Variables every command gets whatever the host has.
const FIXED_ENV: [(&str, &str); 4] = [
    ("LANG", "C.UTF-8"),
    ("TERM", "dumb"),
    ("PYTHONDONTWRITEBYTECODE", "1"),
    ("PYTHONHASHSEED", "0"),
];

/// Host variables passed through as they are, when set.
const PASSED_ENV: [&str; 1] = ["TZ"];

/// The environment every shell command runs with, except `HOME` (the workspace root): an
/// allow-list, never a copy of the host's environment. `PATH` (the host's, or a default, with
/// the bare Python environment first), `TZ` when the host sets it, `LANG=C.UTF-8`, `TERM=dumb`,
/// `PYTHONDONTWRITEBYTECODE=1`, `PYTHONHASHSEED=0`, then the task's own variables (which win).
/// Sorted by name.
pub fn allowed_env(task_env: &[(String, String)]) -> Vec<(String, String)> {
    let mut path = std::env::var("PATH")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".to_string());
    if let Some(bin) = python_bin().and_then(|b| b.to_str()) {
        if path.split(':').next() != Some(bin) {
            path = format!("{bin}:{path}");
        }
    }
    let mut env: Vec<(String, String)> = vec![("PATH".to_string(), path)];
    for name in PASSED_ENV {
        if let Ok(v) = std::env::var(name) {
            env.push((name.to_string(), v));
        }
    }
    env.extend(
        FIXED_ENV
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    for (k, v) in task_env {
        env.retain(|(name, _)| name != k);
        env.push((k.clone(), v.clone()));
    }
    env.sort();
    env
}

// ---------------------------------------------------------------------------------------------
// The bare Python environment

/// What the bare environment was made from: its `bin` folder and the interpreter's prefix.
struct BarePython {
    bin: PathBuf,
    prefix: PathBuf,
}

/// The `bin` folder of a bare virtual environment over the host's `python3`, put first on the
/// shell's PATH, so `python3` and `python` in a task run the host's interpreter with the standard
/// library and no site-packages. Made once per process; `None` (the host's PATH as it is) when
/// there is no `python3` or the environment cannot be made.
///
/// Two reasons. Tasks are specified against the standard library, and a task whose checks pass
/// or fail with what a machine happens to have installed is not reproducible. And a `python3`
/// start is most of a matrix's CPU time: a pyenv shim costs ~100 ms per start, and site hooks in
/// the host's site-packages (on the reference machine a `.pth` that imports certifi) ~30 ms more,
/// against ~10 ms for the bare interpreter.
pub(crate) fn python_bin() -> Option<&'static Path> {
    bare_python().map(|p| p.bin.as_path())
}

fn bare_python() -> Option<&'static BarePython> {
    static BARE: OnceLock<Option<BarePython>> = OnceLock::new();
    BARE.get_or_init(|| make_bare_python().ok()).as_ref()
}

/// Folders the sandbox binds back read-only when they sit in a hidden folder: the bare
/// environment (its `bin` folder's parent) and the interpreter's installation prefix.
fn python_binds() -> Vec<PathBuf> {
    match bare_python() {
        Some(p) => [
            p.bin.parent().map(Path::to_path_buf),
            Some(p.prefix.clone()),
        ]
        .into_iter()
        .flatten()
        .collect(),
        None => Vec::new(),
    }
}

/// Resolves the host's `python3` (through any shim) and writes a virtual environment for it
/// under the user's cache folder (the temp folder when that fails): `pyvenv.cfg` and symlinks,
/// which is all a venv without pip is. The folder is keyed by the interpreter's path and
/// version, built aside and renamed into place, and checked by running it once.
fn make_bare_python() -> io::Result<BarePython> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import os, sys; print(os.path.realpath(sys.executable)); \
             print('%d.%d.%d' % sys.version_info[:3]); print(sys.base_prefix)",
        ])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let (Some(exe), Some(version), Some(prefix), true) = (
        lines.next(),
        lines.next(),
        lines.next(),
        out.status.success(),
    ) else {
        return Err(io::Error::other("python3 did not report its interpreter"));
    };
    let exe = PathBuf::from(exe);
    let home = exe
        .parent()
        .ok_or_else(|| io::Error::other("python3 interpreter has no folder"))?;
    let key = harness_core::digest::sha256_hex(format!("{}\n{version}", exe.display()).as_bytes());
    let name = format!("python-{version}-{}", &key[..12]);
    let user_cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    // The user's cache folder, or the temp folder when that cannot be written.
    let mut last = io::Error::other("no folder to write the environment in");
    for parent in user_cache.into_iter().chain([std::env::temp_dir()]) {
        match bare_python_in(&parent.join("foldbench"), &name, &exe, home, version) {
            Ok(bin) => {
                return Ok(BarePython {
                    bin,
                    prefix: PathBuf::from(prefix),
                })
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Writes (unless it is there) and checks the environment `cache/name` for interpreter `exe`.
pub(crate) fn bare_python_in(
    cache: &Path,
    name: &str,
    exe: &Path,
    home: &Path,
    version: &str,
) -> io::Result<PathBuf> {
    let dir = cache.join(name);
    let bin = dir.join("bin");
    if !bin.join("python3").exists() {
        std::fs::create_dir_all(cache)?;
        let tmp = tempfile::Builder::new()
            .prefix(".python-")
            .tempdir_in(cache)?;
        std::fs::write(
            tmp.path().join("pyvenv.cfg"),
            format!(
                "home = {}\ninclude-system-site-packages = false\nversion = {version}\n",
                home.display()
            ),
        )?;
        let tmp_bin = tmp.path().join("bin");
        std::fs::create_dir(&tmp_bin)?;
        for exe_name in ["python3", "python"] {
            std::os::unix::fs::symlink(exe, tmp_bin.join(exe_name))?;
        }
        // Another process may have made it first; either copy is the same, and the loser's
        // temp folder is removed on drop.
        if std::fs::rename(tmp.path(), &dir).is_ok() {
            let _ = tmp.keep();
        }
    }
    let check = std::process::Command::new(bin.join("python3"))
        .args(["-c", "import sys; assert sys.prefix != sys.base_prefix"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()?;
    if !check.success() {
        return Err(io::Error::other(
            "the bare python3 environment does not start",
        ));
    }
    Ok(bin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::run_shell;
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
                eprintln!("skipped: {e}");
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
        let err = "docker".parse::<SandboxMode>().unwrap_err();
        assert!(err.contains("auto, bwrap or none"), "{err}");
        assert!(!Sandbox::detect(SandboxMode::None).unwrap().is_isolated());
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
}
