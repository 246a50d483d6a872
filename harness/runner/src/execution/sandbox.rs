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
//! - no capability (`--cap-drop ALL`) and no-new-privileges, so an agent running as root can
//!   neither mount nor unmount (the hidden folders stay hidden, `/` stays read-only) nor read a
//!   file its mode keeps from it; and the host's files that only their owner or group may read
//!   (`/etc/shadow`, `/etc/gshadow`, private keys, …: `PrivateEntry`) covered, since root owns
//!   most of them. Why not a non-zero `--uid`: bubblewrap started by root maps the sandbox's user
//!   to root's own, so the kernel still sees the owner of those files;
//! - the same view wherever foldbench starts: the mounts are made parents first, so a folder
//!   bound in (a policy's working folder that is `/` or the home folder) never uncovers
//!   `/proc`, `/dev`, a hidden folder or a private file (`bwrap_args_with`);
//! - a cleared environment plus the allow-list of `allowed_env`;
//! - `--die-with-parent` and a PID namespace: when the call ends, every process it started,
//!   `setsid` and double-forked ones included, is killed with it.
//!
//! Without bubblewrap ([`SandboxMode::Auto`] on a machine where `bwrap` is missing or cannot
//! create namespaces, or [`SandboxMode::None`]) the command runs as a plain `sh` in its own
//! process group with the same allowed environment (its descendants are still ended with the
//! call: `crate::execution::reap`); `/proc` then still shows the host's processes, which
//! [`Sandbox::detect`] says once on standard error.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

pub use crate::execution::sandbox_error::{ProbeError, SandboxError};

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

/// A `--sandbox` value that names no mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown sandbox `{0}`; use auto, bwrap or none")]
pub struct UnknownSandbox(pub(crate) String);

impl FromStr for SandboxMode {
    type Err = UnknownSandbox;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(SandboxMode::Auto),
            "bwrap" => Ok(SandboxMode::Bwrap),
            "none" => Ok(SandboxMode::None),
            other => Err(UnknownSandbox(other.to_string())),
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
    /// bubblewrap when this machine has a working one, else no sandbox — quietly: the warning
    /// and the refusals are [`Sandbox::detect_for`]'s, which a command line calls.
    fn default() -> Self {
        match probe_bwrap() {
            Ok(path) => Sandbox::bwrap_at(path),
            Err(_) => Sandbox::unconfined(),
        }
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

    fn bwrap_at(path: PathBuf) -> Sandbox {
        Sandbox {
            bwrap: Some(path),
            network: false,
            task_env: Vec::new(),
        }
    }

    /// The sandbox `mode` asks for on this machine, for the sim's commands (the task's own):
    /// [`Sandbox::detect_for`] without a real model.
    pub fn detect(mode: SandboxMode) -> Result<Sandbox, SandboxError> {
        Sandbox::detect_for(mode, false)
    }

    /// The sandbox `mode` asks for on this machine, for a run with a real model
    /// (`real_model`: one whose shell commands are its own, not the task's) or without.
    /// `Auto` falls back to no sandbox (and says so once per process on standard error) when
    /// `bwrap` is missing or cannot create its namespaces — for the sim only: with a real model
    /// that is an error naming the package to install, unless the mode is `None`. `Bwrap` makes
    /// a missing sandbox an error that says why and what to do, with no warning before it.
    pub fn detect_for(mode: SandboxMode, real_model: bool) -> Result<Sandbox, SandboxError> {
        let probed = match mode {
            SandboxMode::None => return Ok(Sandbox::unconfined()),
            SandboxMode::Auto | SandboxMode::Bwrap => probe_bwrap(),
        };
        match (probed, mode) {
            (Ok(path), _) => Ok(Sandbox::bwrap_at(path)),
            (Err(why), SandboxMode::Bwrap) => Err(SandboxError::Bwrap(why)),
            (Err(why), _) if real_model => Err(SandboxError::RealModel(why)),
            (Err(why), _) => {
                static WARNED: OnceLock<()> = OnceLock::new();
                WARNED.get_or_init(|| {
                    crate::progress::warn(&format!(
                        "warning: no sandbox for shell commands ({}): they run as plain `sh` \
                         and can read other processes' environments through /proc; install \
                         bubblewrap (Debian: apt install bubblewrap), or pass --sandbox \
                         none to run without one knowingly",
                        harness_core::one_line(&why)
                    ));
                });
                Ok(Sandbox::unconfined())
            }
        }
    }

    /// This sandbox for one task: with the network when the task asks for it, and the task's
    /// own environment variables added to the allow-list.
    pub(crate) fn for_task(&self, network: bool, env: &[(String, String)]) -> Sandbox {
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
    pub(crate) fn env(&self, root: &Path) -> Vec<(String, String)> {
        let mut env = allowed_env(&self.task_env);
        env.push(("HOME".to_string(), root.display().to_string()));
        env.sort();
        env
    }

    /// The command that runs `script` with `sh -c` in `root` under this sandbox, with a cleared
    /// environment plus `Sandbox::env` and `stdin` from `/dev/null`. The caller sets the pipes
    /// and the process group.
    pub fn command(&self, root: &Path, script: &str) -> tokio::process::Command {
        tokio::process::Command::from(self.std_command(root, script, &[]))
    }

    /// [`Sandbox::command`] as a `std::process::Command`, with more folders bound after the
    /// workspace (each `(path, writable)`; without bubblewrap they are simply reachable): the
    /// command of a policy process (`exec:`), which foldbench talks to synchronously.
    pub(crate) fn std_command(
        &self,
        root: &Path,
        script: &str,
        extra: &[(&Path, bool)],
    ) -> std::process::Command {
        let mut cmd = match &self.bwrap {
            Some(bwrap) => {
                let mut cmd = std::process::Command::new(bwrap);
                cmd.args(bwrap_args_with(root, self.network, true, extra))
                    .arg("--");
                cmd.arg("sh");
                cmd
            }
            None => std::process::Command::new("sh"),
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

/// [`bwrap_args`] with more folders bound besides the workspace, each `(path, writable)`: a real
/// agent's home, its install folder, the folder of its socket (`agents::isolate`), the working
/// folder of a policy process (`exec_policy`). Paths are taken through their links first, so a
/// folder reached through a symbolic link is compared and bound as the folder it is.
pub(crate) fn bwrap_args_with(
    root: &Path,
    network: bool,
    python: bool,
    extra: &[(&Path, bool)],
) -> Vec<std::ffi::OsString> {
    let python_dirs: Vec<PathBuf> = if python {
        python_binds().iter().map(|d| real(d)).collect()
    } else {
        Vec::new()
    };
    let extra: Vec<(PathBuf, bool)> = extra.iter().map(|(p, w)| (real(p), *w)).collect();
    let extra: Vec<(&Path, bool)> = extra.iter().map(|(p, w)| (p.as_path(), *w)).collect();
    bwrap_args_from(
        &real(root),
        root,
        network,
        &python_dirs,
        &extra,
        &hidden_folders(),
        private_entries(),
    )
}

/// `path` with its links resolved, or as given when it cannot be (it does not exist).
fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Folders the sandbox mounts its own of: no host folder is bound at or below them.
const OWN: [&str; 1] = ["/proc"];

/// One mount of the sandbox over the read-only root, by the path it is mounted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mount<'a> {
    /// A host folder bound in at its own path (`true`: writable).
    Bind(&'a Path, bool),
    /// A host entry only its owner or group may read ([`PrivateEntry`]), covered.
    Private(&'a PrivateEntry),
    /// A hidden folder: an empty private one in its place.
    Hidden(&'a Path),
    /// The sandbox's own `/proc`.
    Proc,
    /// The sandbox's own `/dev`.
    Dev,
}

impl Mount<'_> {
    fn target(&self) -> &Path {
        match self {
            Mount::Bind(p, _) | Mount::Hidden(p) => p,
            Mount::Private(e) => &e.path,
            Mount::Proc => Path::new("/proc"),
            Mount::Dev => Path::new("/dev"),
        }
    }

    /// Whether it hides what the host has at its path.
    fn covers(&self) -> bool {
        !matches!(self, Mount::Bind(..))
    }
}

/// [`bwrap_args_with`] given the workspace's real path and the path its commands start in, the
/// bare environment's folders, the hidden folders and the host's private entries.
///
/// The mounts are made parents first (by the depth of the path they are mounted on), so a mount
/// below another is made after it and shows through it, and a mount above another never
/// undoes it: a folder bound in that holds a hidden folder, a private file, `/proc` or `/dev` (a
/// policy's working folder that is `/`, the home folder or one of its ancestors) leaves each of
/// them covered. At the same path the cover wins. A folder bound read-only is bound only when a
/// hidden folder or a private one covers it (everywhere else the read-only root shows it
/// already, with what it holds still covered); a writable one (the workspace, a real agent's
/// home: folders foldbench made) is always bound, and shows its private files as they are. No
/// host folder is bound at or below `/proc`.
fn bwrap_args_from(
    root: &Path,
    chdir: &Path,
    network: bool,
    python_dirs: &[PathBuf],
    extra: &[(&Path, bool)],
    hidden: &[PathBuf],
    private: &[PrivateEntry],
) -> Vec<std::ffi::OsString> {
    let mut a: Vec<std::ffi::OsString> = Vec::new();
    let mut push = |parts: &[&std::ffi::OsStr]| a.extend(parts.iter().map(|p| p.to_os_string()));
    push(&["--unshare-all".as_ref()]);
    if network {
        push(&["--share-net".as_ref()]);
    }
    // No capability inside, whoever runs foldbench: an agent running as root can then neither
    // mount nor unmount (the host's `/tmp`, home and `/proc` stay covered, `/` read-only), nor
    // read a file its mode keeps from it. bubblewrap also sets no-new-privileges, so no setuid
    // program gives them back.
    push(&[
        "--cap-drop".as_ref(),
        "ALL".as_ref(),
        "--die-with-parent".as_ref(),
        "--new-session".as_ref(),
        "--ro-bind".as_ref(),
        "/".as_ref(),
        "/".as_ref(),
    ]);
    let hidden_above = |dir: &Path| {
        hidden.iter().any(|h| dir.starts_with(h) && dir != h)
            || private
                .iter()
                .any(|p| p.dir && dir.starts_with(&p.path) && dir != p.path)
    };
    let own = |dir: &Path| OWN.iter().any(|o| dir.starts_with(o));
    let mut binds: Vec<(&Path, bool)> = vec![(root, true)];
    binds.extend(python_dirs.iter().map(|d| (d.as_path(), false)));
    binds.extend(extra.iter().copied());
    let mut mounts: Vec<Mount> = Vec::new();
    for (dir, writable) in binds {
        let needed = writable || hidden_above(dir);
        if needed && !own(dir) && !mounts.contains(&Mount::Bind(dir, writable)) {
            mounts.push(Mount::Bind(dir, writable));
        }
    }
    let writable: Vec<&Path> = mounts
        .iter()
        .filter_map(|m| match m {
            Mount::Bind(p, true) => Some(*p),
            _ => None,
        })
        .collect();
    // Inside a folder foldbench made and binds writable, a file shows as it is there.
    mounts.extend(
        private
            .iter()
            .filter(|e| !writable.iter().any(|w| e.path.starts_with(w)))
            .map(Mount::Private),
    );
    mounts.extend(hidden.iter().map(|h| Mount::Hidden(h.as_path())));
    mounts.extend([Mount::Proc, Mount::Dev]);
    // Parents first; at the same path, the bind before the cover.
    mounts.sort_by_key(|m| (m.target().components().count(), m.covers()));
    for (k, m) in mounts.iter().enumerate() {
        match m {
            Mount::Bind(dir, w) => {
                let flag: &std::ffi::OsStr = if *w {
                    "--bind".as_ref()
                } else {
                    "--ro-bind".as_ref()
                };
                push(&[flag, dir.as_os_str(), dir.as_os_str()]);
            }
            Mount::Private(entry) if entry.dir => {
                // A private folder with a mount below it stays traversable (an empty folder
                // of mode 755) for that mount's sake; the others get mode 000.
                let below = mounts[k + 1..]
                    .iter()
                    .any(|l| l.target().starts_with(&entry.path) && l.target() != entry.path);
                if !below {
                    push(&["--perms".as_ref(), "0000".as_ref()]);
                }
                push(&["--tmpfs".as_ref(), entry.path.as_os_str()]);
            }
            Mount::Private(entry) => {
                // A bind of a device on a `nodev` mount: opening it fails with EACCES.
                push(&[
                    "--ro-bind".as_ref(),
                    "/dev/null".as_ref(),
                    entry.path.as_os_str(),
                ]);
            }
            Mount::Hidden(dir) => push(&["--tmpfs".as_ref(), dir.as_os_str()]),
            Mount::Proc => push(&["--proc".as_ref(), "/proc".as_ref()]),
            Mount::Dev => push(&["--dev".as_ref(), "/dev".as_ref()]),
        }
    }
    push(&["--chdir".as_ref(), chdir.as_os_str()]);
    a
}

/// Why the sandbox does not show a host path as the host has it (`unseen`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unseen {
    /// Below a folder the sandbox mounts its own of (`/proc`, `/dev`).
    Own(&'static str),
    /// In a hidden folder (the home folder, `/tmp`, …) and in no folder bound in.
    Hidden(PathBuf),
    /// In a host entry only its owner or group may read.
    Private(PathBuf),
}

impl Unseen {
    /// The folder (or file) that hides it.
    pub(crate) fn cover(&self) -> &Path {
        match self {
            Unseen::Own(p) => Path::new(p),
            Unseen::Hidden(p) | Unseen::Private(p) => p,
        }
    }
}

impl fmt::Display for Unseen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unseen::Own(p) => write!(f, "the sandbox has its own {p}"),
            Unseen::Hidden(p) => write!(
                f,
                "{} is replaced by an empty folder in the sandbox",
                p.display()
            ),
            Unseen::Private(p) => write!(
                f,
                "{} is readable only by its owner or group, so the sandbox covers it",
                p.display()
            ),
        }
    }
}

/// Why a process in the sandbox does not see the host's `path` as the host has it, or `None`
/// when it does. `binds` are the folders bound in besides the workspace (a policy's working
/// folder and its `read=` folders), as [`bwrap_args_with`] takes them: one inside a hidden or
/// private folder shows what it holds. For the messages of a policy whose files the sandbox
/// hides (`exec_policy`).
pub(crate) fn unseen(path: &Path, binds: &[&Path]) -> Option<Unseen> {
    let path = real(path);
    let binds: Vec<PathBuf> = binds.iter().map(|b| real(b)).collect();
    let hidden = hidden_folders();
    let private = private_entries();
    let shown = binds.iter().any(|b| {
        path.starts_with(b)
            && (hidden.iter().any(|h| b.starts_with(h) && b != h)
                || private
                    .iter()
                    .any(|e| e.dir && b.starts_with(&e.path) && *b != e.path))
    });
    if let Some(own) = ["/proc", "/dev"].into_iter().find(|o| path.starts_with(o)) {
        return Some(Unseen::Own(own));
    }
    if shown {
        return None;
    }
    if let Some(h) = hidden.iter().find(|h| path.starts_with(h)) {
        return Some(Unseen::Hidden(h.clone()));
    }
    private
        .iter()
        .find(|e| path.starts_with(&e.path))
        .map(|e| Unseen::Private(e.path.clone()))
}

/// Folders replaced by empty private ones inside the sandbox: the host's home (keys, tokens
/// and credentials live there), `/tmp`, `/var/tmp` and `/run`, each through its links.
fn hidden_folders() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ["/tmp", "/var/tmp", "/run"]
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .map(|p| real(&p))
        .collect();
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        let home = real(&home);
        if home.is_absolute() && home != Path::new("/") && home.is_dir() && !out.contains(&home) {
            out.push(home);
        }
    }
    out
}

/// A host file or folder that only its owner or group may read (no read permission for others;
/// for a folder, no read or search permission): `/etc/shadow`, `/etc/gshadow`, `/etc/sudoers`,
/// `/etc/ssl/private`, SSH host keys, `/var/log/btmp`, … Inside the sandbox a file is covered by
/// `/dev/null` on a `nodev` mount (opening it fails with "Permission denied") and a folder by an
/// empty one of mode 000, so an agent running as root reads none of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PrivateEntry {
    /// Its path on the host.
    pub(crate) path: PathBuf,
    /// Whether it is a folder.
    pub(crate) dir: bool,
}

/// Folders whose whole tree is searched for private entries; elsewhere only the entries of `/`
/// and of its folders are (the file system is too large to walk on every start).
const DEEP_FOLDERS: [&str; 2] = ["/etc", "/var"];

/// Folders never searched: the sandbox mounts its own `/proc` and `/dev`; `/sys` is the kernel's.
const UNSEARCHED: [&str; 3] = ["/proc", "/sys", "/dev"];

/// At most this many entries are looked at (a few thousand on a usual host).
const SEARCH_LIMIT: usize = 100_000;

/// A folder (other than `/`, `/etc`, `/usr` and `/var`) holding more private entries than this is
/// hidden whole, so a log folder of many private files costs one mount, not one each.
const COLLAPSE_OVER: usize = 32;

/// The host's private entries ([`PrivateEntry`]), found once per process.
pub(crate) fn private_entries() -> &'static [PrivateEntry] {
    static FOUND: OnceLock<Vec<PrivateEntry>> = OnceLock::new();
    FOUND.get_or_init(|| {
        let skip: Vec<PathBuf> = UNSEARCHED
            .iter()
            .map(PathBuf::from)
            .chain(hidden_folders())
            .collect();
        let mut out = Vec::new();
        let mut budget = SEARCH_LIMIT;
        find_private(Path::new("/"), 0, &skip, &mut out, &mut budget);
        out
    })
}

/// Appends the private entries below `dir` (at `depth` below `/`) to `out`, not following links.
fn find_private(
    dir: &Path,
    depth: usize,
    skip: &[PathBuf],
    out: &mut Vec<PrivateEntry>,
    budget: &mut usize,
) {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let start = out.len();
    let mut names: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    names.sort();
    for path in names {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        if skip.contains(&path) {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let (kind, mode) = (meta.file_type(), meta.permissions().mode());
        if kind.is_symlink() || kind.is_block_device() || kind.is_char_device() {
            continue;
        }
        if kind.is_dir() {
            if mode & 0o005 != 0o005 {
                out.push(PrivateEntry { path, dir: true });
            } else if depth == 0 || DEEP_FOLDERS.iter().any(|d| path.starts_with(d)) {
                find_private(&path, depth + 1, skip, out, budget);
            }
        } else if mode & 0o004 == 0 {
            out.push(PrivateEntry { path, dir: false });
        }
    }
    let kept = ["/", "/etc", "/usr", "/var"]
        .iter()
        .any(|k| dir == Path::new(k));
    if !kept && out.len() - start > COLLAPSE_OVER {
        out.truncate(start);
        out.push(PrivateEntry {
            path: dir.to_path_buf(),
            dir: true,
        });
    }
}

/// What the probe runs: `ok` when the sandbox has its own `/proc`, no capability and
/// no-new-privileges, else the lines of `/proc/self/status` that say otherwise.
const PROBE_SCRIPT: &str = "test -d /proc/self || exit 1; \
     if grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status \
        && grep -q '^NoNewPrivs:[[:space:]]*1$' /proc/self/status; \
     then echo ok; else grep -E '^(CapEff|NoNewPrivs):' /proc/self/status | tr '\\n\\t' '  '; fi";

/// Finds `bwrap` on the PATH and checks that it can create its namespaces here, once per
/// process.
fn probe_bwrap() -> Result<PathBuf, ProbeError> {
    static PROBE: OnceLock<Result<PathBuf, ProbeError>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            let path = find_on_path("bwrap").ok_or(ProbeError::NotOnPath)?;
            // The temp folder itself stands in for a workspace: the probe writes nothing, and
            // a folder made for it could be left behind by a kill.
            let out = std::process::Command::new(&path)
                .args(bwrap_args(&std::env::temp_dir(), false, false))
                .args(["--", "sh", "-c", PROBE_SCRIPT])
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .stdin(std::process::Stdio::null())
                .output();
            let out = match out {
                Ok(out) => out,
                Err(e) => {
                    return Err(ProbeError::Run {
                        path,
                        source: Arc::new(e),
                    })
                }
            };
            if out.status.success() && out.stdout.starts_with(b"ok") {
                Ok(path)
            } else if out.status.success() {
                let status = String::from_utf8_lossy(&out.stdout).trim().to_string();
                Err(ProbeError::Privileged { path, status })
            } else {
                let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
                Err(ProbeError::Namespaces { path, stderr })
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

/// Variables every command gets whatever the host has. `TZ=UTC` rather than the host's zone:
/// what `ls -l` or `date` prints is then the same on every machine.
const FIXED_ENV: [(&str, &str); 5] = [
    ("LANG", "C.UTF-8"),
    ("TERM", "dumb"),
    ("PYTHONDONTWRITEBYTECODE", "1"),
    ("PYTHONHASHSEED", "0"),
    ("TZ", "UTC"),
];

/// The environment every shell command runs with, except `HOME` (the workspace root): an
/// allow-list, never a copy of the host's environment. `PATH` (the host's, or a default, with
/// the bare Python environment first), `LANG=C.UTF-8`, `TERM=dumb`, `TZ=UTC`,
/// `PYTHONDONTWRITEBYTECODE=1`, `PYTHONHASHSEED=0`, `SOURCE_DATE_EPOCH` (the time the
/// workspace's files are given, [`crate::execution::repo::FILE_TIME`]: the convention that makes
/// build tools write it instead of the clock), then the task's own variables (which win).
/// Sorted by name.
pub(crate) fn allowed_env(task_env: &[(String, String)]) -> Vec<(String, String)> {
    let mut path = std::env::var("PATH")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".to_string());
    if let Some(bin) = python_bin().and_then(|b| b.to_str()) {
        if path.split(':').next() != Some(bin) {
            path = format!("{bin}:{path}");
        }
    }
    let mut env: Vec<(String, String)> = vec![
        ("PATH".to_string(), path),
        (
            "SOURCE_DATE_EPOCH".to_string(),
            crate::execution::repo::FILE_TIME.to_string(),
        ),
    ];
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
/// library and none of the host's site-packages (its own holds only [`UNITTEST_CLOCK`]). Made
/// once per process; `None` (the host's PATH as it is) when there is no `python3` or the
/// environment cannot be made.
///
/// Three reasons. Tasks are specified against the standard library, and a task whose checks pass
/// or fail with what a machine happens to have installed is not reproducible. A `python3`
/// start is most of a matrix's CPU time: a pyenv shim costs ~100 ms per start, and site hooks in
/// the host's site-packages (on the reference machine a `.pth` that imports certifi) ~30 ms more,
/// against ~10 ms for the bare interpreter. And `python3 -m unittest` prints the same text on
/// every run ([`UNITTEST_CLOCK`]).
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
    let user_cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    let memo = user_cache
        .as_ref()
        .zip(interpreter_key())
        .map(|(c, k)| c.join("foldbench/interpreters").join(&k[..16]));
    let reported = match memo.as_deref().and_then(read_memo) {
        Some(r) => r,
        None => {
            let r = report_interpreter()?;
            if let Some(m) = &memo {
                write_memo(m, &r);
            }
            r
        }
    };
    let (exe, version, prefix) = (&reported.0, reported.1.as_str(), &reported.2);
    let home = exe
        .parent()
        .ok_or_else(|| io::Error::other("python3 interpreter has no folder"))?;
    // The hook's text is in the key: an environment made by an older foldbench is not reused.
    let key = harness_core::sha256_hex(
        format!("{}\n{version}\n{UNITTEST_CLOCK}", exe.display()).as_bytes(),
    );
    let name = format!("python-{version}-{}", &key[..12]);
    // The user's cache folder, or the temp folder when that cannot be written.
    let mut last = io::Error::other("no folder to write the environment in");
    for parent in user_cache.into_iter().chain([std::env::temp_dir()]) {
        match bare_python_in(&parent.join("foldbench"), &name, exe, home, version) {
            Ok(bin) => {
                return Ok(BarePython {
                    bin,
                    prefix: prefix.clone(),
                })
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// What the host's `python3` says it is: its interpreter (links resolved), its version
/// (`X.Y.Z`) and its installation prefix.
type Reported = (PathBuf, String, PathBuf);

/// The key of what the `python3` first on the PATH reports, when that depends on its files
/// alone: a program (not a script), its path, the file it links to, that file's size and time,
/// the `pyvenv.cfg` of the environment it may be in and `PYTHONHOME`. `None` for a script (a
/// pyenv shim chooses its interpreter anew at every start, from files and variables of its
/// own): that one is asked every time.
fn interpreter_key() -> Option<String> {
    interpreter_key_of(&find_on_path("python3")?, std::env::var_os("PYTHONHOME"))
}

/// [`interpreter_key`] of the `python3` at `found`, with `PYTHONHOME` as given.
pub(crate) fn interpreter_key_of(
    found: &Path,
    python_home: Option<std::ffi::OsString>,
) -> Option<String> {
    use std::io::Read as _;
    let real = std::fs::canonicalize(found).ok()?;
    let mut head = [0u8; 2];
    std::fs::File::open(&real)
        .ok()?
        .read_exact(&mut head)
        .ok()?;
    if &head == b"#!" {
        return None;
    }
    let stamp = |p: &Path| {
        std::fs::metadata(p)
            .ok()
            .map(|m| (m.len(), m.modified().ok()))
    };
    let cfg = found.parent()?.parent()?.join("pyvenv.cfg");
    let text = format!(
        "{}\n{}\n{:?}\n{:?}\n{:?}",
        found.display(),
        real.display(),
        stamp(&real)?,
        stamp(&cfg),
        python_home
    );
    Some(harness_core::sha256_hex(text.as_bytes()))
}

fn read_memo(path: &Path) -> Option<Reported> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    let (exe, version, prefix) = (lines.next()?, lines.next()?, lines.next()?);
    let exe = PathBuf::from(exe);
    exe.is_file()
        .then(|| (exe, version.to_string(), PathBuf::from(prefix)))
}

/// Writes what `python3` reported beside the others (built aside and renamed into place); a
/// memo that cannot be written costs the next process the question again, nothing more.
fn write_memo(path: &Path, r: &Reported) {
    let Some(dir) = path.parent() else { return };
    let text = format!("{}\n{}\n{}\n", r.0.display(), r.1, r.2.display());
    let written = std::fs::create_dir_all(dir).and_then(|()| {
        let tmp = tempfile::NamedTempFile::new_in(dir)?;
        std::fs::write(tmp.path(), text)?;
        tmp.persist(path).map_err(|e| e.error)
    });
    drop(written);
}

/// Runs the host's `python3` (through any shim) to learn its interpreter, version and prefix.
fn report_interpreter() -> io::Result<Reported> {
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
    Ok((
        PathBuf::from(exe),
        version.to_string(),
        PathBuf::from(prefix),
    ))
}

/// The module the bare environment imports at every start (through a `.pth` file of its
/// `site-packages`): `unittest`'s summary line reads a clock that stands still, so
/// `python3 -m unittest` prints `Ran 2 tests in 0.000s` on every run (the module says why).
pub(crate) const UNITTEST_CLOCK: &str = include_str!("python/foldbench_unittest_clock.py");

/// The file a bare environment's check leaves in it when the environment started as it should.
const CHECKED: &str = "checked";

/// The name of [`UNITTEST_CLOCK`]'s module.
const UNITTEST_CLOCK_MODULE: &str = "foldbench_unittest_clock";

/// Writes (unless it is there) and checks the environment `cache/name` for interpreter `exe` of
/// `version` (`X.Y.Z`): `pyvenv.cfg`, `bin/python3` and `bin/python`, and in its
/// `lib/pythonX.Y/site-packages` [`UNITTEST_CLOCK`] with the `.pth` file that imports it.
pub(crate) fn bare_python_in(
    cache: &Path,
    name: &str,
    exe: &Path,
    home: &Path,
    version: &str,
) -> io::Result<PathBuf> {
    let dir = cache.join(name);
    let bin = dir.join("bin");
    let minor: Vec<&str> = version.split('.').take(2).collect();
    let site_rel = format!("lib/python{}/site-packages", minor.join("."));
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
        let site = tmp.path().join(&site_rel);
        std::fs::create_dir_all(&site)?;
        std::fs::write(
            site.join(format!("{UNITTEST_CLOCK_MODULE}.py")),
            UNITTEST_CLOCK,
        )?;
        std::fs::write(
            site.join(format!("{UNITTEST_CLOCK_MODULE}.pth")),
            format!("import {UNITTEST_CLOCK_MODULE}\n"),
        )?;
        // Another process may have made it first; either copy is the same, and the loser's
        // temp folder is removed on drop.
        if std::fs::rename(tmp.path(), &dir).is_ok() {
            let _ = tmp.keep();
        }
    }
    // Checked once: a later process finds the stamp the check left, beside every file the check
    // made sure of (the interpreter the links name, the hook, its compiled form), and does not
    // start the interpreter again (~20 ms of CPU, more on a busy machine, per process).
    let site = dir.join(&site_rel);
    let stamp = dir.join(CHECKED);
    let compiled = |site: &Path| {
        std::fs::read_dir(site.join("__pycache__")).is_ok_and(|mut d| {
            d.any(|e| {
                e.is_ok_and(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(UNITTEST_CLOCK_MODULE)
                })
            })
        })
    };
    if stamp.is_file()
        && bin.join("python3").exists()
        && site.join(format!("{UNITTEST_CLOCK_MODULE}.pth")).is_file()
        && compiled(&site)
    {
        return Ok(bin);
    }
    // The hook compiled once here (the sandbox binds the environment read-only, and shell
    // commands write no bytecode): compiling its source at every start cost a few ms.
    let check = std::process::Command::new(bin.join("python3"))
        .arg("-c")
        .arg(format!(
            "import sys, py_compile; assert sys.prefix != sys.base_prefix; \
             assert '{UNITTEST_CLOCK_MODULE}' in sys.modules; \
             py_compile.compile(sys.argv[1], doraise=True)"
        ))
        .arg(
            dir.join(&site_rel)
                .join(format!("{UNITTEST_CLOCK_MODULE}.py")),
        )
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()?;
    if !check.success() {
        return Err(io::Error::other(
            "the bare python3 environment does not start with its unittest clock",
        ));
    }
    // A stamp that cannot be written costs the next process the check again, nothing more.
    let _ = std::fs::write(&stamp, format!("{}\n", exe.display()));
    Ok(bin)
}

#[cfg(test)]
mod tests;
