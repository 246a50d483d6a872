//! The sandbox of a real agent's process: the one the cell's shell commands get (bubblewrap,
//! `crate::execution::sandbox`), with the agent's home and install folders bound in and one way out.
//!
//! What the agent process (and every command it runs: Claude Code's `Bash`, Codex's
//! `exec_command`, mini-swe-agent's subshells) sees:
//!
//! - its own PID, IPC, UTS, user and cgroup namespaces and `/proc`: no process of the host, so
//!   not foldbench's environment; every process dies with the turn (`--die-with-parent`);
//! - no capability and no-new-privileges, so an agent running as root can neither mount nor
//!   unmount, and the host's files only their owner or group may read covered, as for every
//!   shell command (`crate::execution::sandbox`);
//! - the host's files read-only, with the home folder, `/tmp`, `/var/tmp` and `/run` replaced by
//!   empty ones; writable: the workspace and the agent's home (its config and sessions, made per
//!   cell); read-only again: the agent's install folder and its interpreter when they sit in a
//!   hidden folder;
//! - an environment of the sandbox's allow-list (PATH, LANG, TERM, TZ=UTC, the task's variables)
//!   plus the agent's own: its model URL, the key it sends, its settings;
//! - with a bridge ([`Isolation::Bridged`]): a network namespace of its own, in which
//!   `127.0.0.1:PORT` is forwarded to the cell's proxy through a unix socket and nothing else is
//!   reachable; without one ([`Isolation::SharedNetwork`], a library caller that has no
//!   `foldbench` binary to run the bridge), the host's network.
//!
//! Without bubblewrap (`--sandbox none`, or `auto` on a machine without it) the agent runs as a
//! plain process with the same environment and the host's network; the record says so.

use std::path::{Path, PathBuf};

use super::{Agent, TurnCommand};
use crate::execution::sandbox::Sandbox;

/// How the agent's process reaches the proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Isolation {
    /// Its own network namespace; `foldbench agent-bridge` (the program) forwards the port to
    /// the socket.
    Bridged {
        /// The program that runs the bridge (the `foldbench` binary).
        program: PathBuf,
    },
    /// bubblewrap with the host's network.
    SharedNetwork,
    /// No sandbox at all.
    None,
}

impl Isolation {
    /// The words the record and docs use.
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Isolation::Bridged { .. } => {
                "bwrap, own network namespace: only the proxy, through a unix socket"
            }
            Isolation::SharedNetwork => "bwrap, the host's network",
            Isolation::None => "none: a plain process with the host's network",
        }
    }
}

/// The port the agent reaches the proxy on inside its own network namespace.
pub(crate) const BRIDGE_PORT: u16 = 47_100;

/// What a turn's process is started with.
pub struct Launch<'a> {
    /// The workspace (the process's working folder).
    pub workspace: &'a Path,
    /// The agent's home.
    pub home: &'a Path,
    /// The folder holding the proxy's unix socket (`proxy.sock`), for a bridge.
    pub socket_dir: &'a Path,
    /// The cell's sandbox.
    pub sandbox: &'a Sandbox,
    /// How the process reaches the proxy.
    pub isolation: &'a Isolation,
}

/// The socket's file name in its folder.
pub(crate) const SOCKET: &str = "proxy.sock";

/// The command that runs `turn` for `agent` under `launch`.
pub fn command(agent: &Agent, turn: &TurnCommand, launch: &Launch<'_>) -> tokio::process::Command {
    let mut env = crate::execution::sandbox::allowed_env(&[]);
    for (k, v) in &turn.env {
        env.retain(|(name, _)| name != k);
        env.push((k.clone(), v.clone()));
    }
    let bwrap = launch
        .sandbox
        .bwrap_path()
        .filter(|_| *launch.isolation != Isolation::None);
    let mut cmd = match bwrap {
        Some(bwrap) => {
            let mut extra: Vec<(&Path, bool)> = vec![(launch.home, true)];
            let reads = install_folders(agent);
            extra.extend(reads.iter().map(|p| (p.as_path(), false)));
            let bridge = match launch.isolation {
                Isolation::Bridged { program } => Some(program),
                _ => None,
            };
            let bridge_dir = bridge.and_then(|p| p.parent().map(Path::to_path_buf));
            if let Some(dir) = &bridge_dir {
                extra.push((dir.as_path(), false));
                extra.push((launch.socket_dir, true));
            }
            let network = bridge.is_none();
            let mut cmd = tokio::process::Command::new(bwrap);
            cmd.args(crate::execution::sandbox::bwrap_args_with(
                launch.workspace,
                network,
                true,
                &extra,
            ));
            cmd.arg("--");
            if let Some(program) = bridge {
                cmd.arg(program)
                    .arg("agent-bridge")
                    .arg("--socket")
                    .arg(launch.socket_dir.join(SOCKET))
                    .arg("--port")
                    .arg(BRIDGE_PORT.to_string())
                    .arg("--");
            }
            cmd.arg(&turn.program);
            cmd
        }
        None => tokio::process::Command::new(&turn.program),
    };
    cmd.args(&turn.args)
        .current_dir(launch.workspace)
        .env_clear()
        .envs(env)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    cmd
}

/// The folders an agent's program needs read-only: its install folder (the folder holding
/// `node_modules`, or the venv holding `bin/`) and, for a venv, the interpreter it links to.
fn install_folders(agent: &Agent) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(real) = agent.program.canonicalize() else {
        return out;
    };
    let unlinked = agent
        .program
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf);
    for p in [
        unlinked,
        node_root(&real),
        real.parent().and_then(Path::parent).map(Path::to_path_buf),
    ]
    .into_iter()
    .flatten()
    {
        if p != Path::new("/") && !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// The folder above the outermost `node_modules` of a path.
fn node_root(p: &Path) -> Option<PathBuf> {
    p.ancestors()
        .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .last()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
}
