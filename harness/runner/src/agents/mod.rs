//! Real coding agents driven through their own command lines (`run --agent`, docs/agents.md).
//!
//! - [`AgentKind`]: one descriptor per agent — its name, where it is found, its version probe,
//!   its real API and key, how its session goes on, how its own compaction is switched off, its
//!   home, its turn's process and how that process's output is read. [`AGENTS`] lists them
//!   (one module each: `claude_code`, `codex`, `mini_swe_agent`); `exec:CMD` is [`Exec`]. The
//!   `--agent` words, help and refusals are made from the list ([`parse`], [`listed`]).
//! - [`Agent::resolve`]: a kind found on this machine (the `FOLDBENCH_*` variables
//!   `tests/agents.sh` prints, else the PATH) with the version it reports.
//! - `Agent::turn_command`: the one process of a turn — the prompt, the model URL pointed at
//!   the cell's proxy, the session continued from the previous turn's, the agent's own
//!   compaction switched off on every arm but `native` (`Agent::compaction` says how).
//! - `Agent::read_turn`: the closing message and the session's id from what the process
//!   printed or wrote.
//! - `isolate`: the process's sandbox; `bridge`: its only way out, one port forwarded to the
//!   proxy's unix socket.

pub(crate) mod bridge;
pub use bridge::inside;
mod claude_code;
mod codex;
mod exec;
pub(crate) mod isolate;
pub use isolate::{command as isolated_command, Isolation, Launch};
mod mini_swe_agent;

use std::path::{Path, PathBuf};

use harness_core::upstream::ToolVocabulary;

pub use exec::Exec;

/// Everything foldbench needs to drive one coding agent: its name, where it is found, its
/// version probe, its API, how a session goes on from turn to turn, how its own compaction is
/// switched off, the files its home needs, the process of a turn and how what it printed is
/// read. One value per agent, listed in [`AGENTS`] (`exec:CMD` is [`Exec`], built from its
/// command). No method has a default, so an agent that leaves one out does not compile.
pub trait AgentKind: Send + Sync + std::fmt::Debug {
    /// The `--agent` word, the record's `agent.name` and the cell id's part (`claude-code`;
    /// `exec` for a command).
    fn name(&self) -> &'static str;
    /// Where its program is found on this machine.
    fn locate(&self) -> Locate;
    /// The arguments that make its program print its version (`--version`).
    fn version_args(&self) -> &'static [&'static str];
    /// Its real API for a model that is not the sim (`--agent-upstream`'s default).
    fn default_upstream(&self) -> &'static str;
    /// The variable its key is read from for a real API.
    fn key_variable(&self) -> &'static str;
    /// The session id of turn 1, chosen before it runs (Claude Code's `--session-id` made from
    /// the cell id); `None` when the agent names its session itself (read from turn 1's output)
    /// or keeps it in a file of its home.
    fn first_session(&self, cell: &str) -> Option<String>;
    /// What the record says of its own compaction on an arm that is not `native`.
    fn compaction_off(&self) -> String;
    /// Files its home needs before turn 1 (the home exists already).
    fn prepare_home(&self, home: &Path, base_url: &str, model: Option<&str>)
        -> std::io::Result<()>;
    /// The one process of a turn; `program` is the one [`Agent::resolve`] found. The `HOME`
    /// variable is added and the variables sorted by `Agent::turn_command`.
    fn turn_command(&self, program: &Path, s: &TurnSettings<'_>) -> TurnCommand;
    /// What a finished turn said: its closing message, the session's id, its own failure report.
    fn read_turn(&self, home: &Path, stdout: &str) -> Result<TurnRead, AgentError>;
    /// The tool vocabulary the offline upstream answers it in (pure; the sim's calls written as
    /// the agent's own), recognised from the tools its requests offer.
    fn tools(&self) -> &'static dyn ToolVocabulary;
}

/// The agents `--agent` names, in the order its help and errors list them. Adding an agent is
/// one module beside this one and one line here.
pub static AGENTS: &[&'static dyn AgentKind] = &[
    &claude_code::ClaudeCode,
    &codex::Codex,
    &mini_swe_agent::MiniSweAgent,
];

/// The tool vocabularies of [`AGENTS`], in order: the offline upstream asks them in turn which
/// one a request speaks, then falls back on foldbench's own tools.
pub(crate) fn vocabularies() -> Vec<&'static dyn ToolVocabulary> {
    AGENTS.iter().map(|a| a.tools()).collect()
}

/// The names of [`AGENTS`], comma-separated (`claude-code, codex, mini-swe-agent`).
pub fn listed() -> String {
    AGENTS
        .iter()
        .map(|a| a.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `run --agent`'s help: the names of [`AGENTS`] and `exec:CMD`, where they are found, what the
/// flag does.
pub fn flag_help() -> String {
    let names: Vec<String> = AGENTS.iter().map(|a| format!("`{}`", a.name())).collect();
    format!(
        "A real agent drives the turns through its own command line: {} or `exec:CMD` (found \
         through `tests/agents.sh`'s variables or the PATH; docs/agents.md). Its model calls go \
         through a proxy with each cell's policy; the arm `native` keeps the agent's own \
         compaction. With a `sim` model the proxy's upstream is the offline sim, else the \
         agent's real API (`--agent-upstream`)",
        names.join(", ")
    )
}

/// Where an agent's program is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Locate {
    /// The variable (as `tests/agents.sh` prints it), else `program` on the PATH.
    VarOrPath {
        /// The `FOLDBENCH_*` variable.
        var: &'static str,
        /// The program looked up on the PATH.
        program: &'static str,
    },
    /// The variable only: `what` says what it names (no program on the PATH to fall back on).
    Var {
        /// The `FOLDBENCH_*` variable.
        var: &'static str,
        /// What it names (`the Python of mini-swe-agent's venv`).
        what: &'static str,
    },
    /// `sh`, with no version to ask (`exec:CMD`).
    Shell,
}

/// Why an `--agent` name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentKindError {
    /// `exec:` with no command after it.
    #[error("--agent exec: needs a command after the colon, e.g. `exec:./my-agent.sh`")]
    EmptyExec,
    /// No agent by that name.
    #[error("unknown agent `{name}`; use {known} or exec:CMD")]
    Unknown {
        /// The name given.
        name: String,
        /// The names of [`AGENTS`] ([`listed`]).
        known: String,
    },
}

/// The agent `--agent` names: one of [`AGENTS`], or `exec:CMD` (an [`Exec`] made once for the
/// run and kept for the process's life, as the listed ones are).
pub fn parse(s: &str) -> Result<&'static dyn AgentKind, AgentKindError> {
    if let Some(kind) = AGENTS.iter().find(|a| a.name() == s) {
        return Ok(*kind);
    }
    match s.strip_prefix("exec:") {
        Some(cmd) if !cmd.trim().is_empty() => Ok(Exec::leak(cmd)),
        Some(_) => Err(AgentKindError::EmptyExec),
        None => Err(AgentKindError::Unknown {
            name: s.to_string(),
            known: listed(),
        }),
    }
}

/// An agent found on this machine.
#[derive(Debug, Clone)]
pub struct Agent {
    /// Which: one of [`AGENTS`] or an [`Exec`].
    pub kind: &'static dyn AgentKind,
    /// Its program (for mini-swe-agent: the Python of its venv).
    pub program: PathBuf,
    /// The version it reports (`2.1.332`), or `unknown` for `exec:`.
    pub version: String,
}

/// What one turn runs: the program, its arguments and the variables it gets beside the
/// sandbox's allow-list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnCommand {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables, sorted by name.
    pub env: Vec<(String, String)>,
}

/// Why an agent cannot be used here, or what it printed for a turn cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// mini-swe-agent's variable is not set (it has no program on the PATH to fall back on).
    #[error("{agent} is not installed: {var} is not set (it names {what}); run `export $(tests/agents.sh)`")]
    NotSet {
        /// The agent's name.
        agent: &'static str,
        /// Its `FOLDBENCH_*` variable.
        var: &'static str,
        /// What the variable names ([`Locate::Var`]).
        what: &'static str,
    },
    /// Neither the variable nor the PATH names the agent.
    #[error("{agent} is not installed: {var} is not set and `{program}` is not on the PATH; run `export $(tests/agents.sh)`")]
    NotFound {
        /// The agent's name.
        agent: &'static str,
        /// Its `FOLDBENCH_*` variable.
        var: &'static str,
        /// The program looked for on the PATH.
        program: &'static str,
    },
    /// The variable names something that is not a file.
    #[error("{agent}: {} ({var}) is not a file; run `export $(tests/agents.sh)`", program.display())]
    NotAFile {
        /// The agent's name.
        agent: &'static str,
        /// The path the variable gives.
        program: PathBuf,
        /// Its `FOLDBENCH_*` variable.
        var: &'static str,
    },
    /// The agent's program could not be started.
    #[error("{agent}: cannot run {}", program.display())]
    CannotRun {
        /// The agent's name.
        agent: &'static str,
        /// Its program.
        program: PathBuf,
        /// Why it did not start.
        #[source]
        source: std::io::Error,
    },
    /// Asking the agent its version failed.
    #[error("{agent}: `{} --version` failed: {stderr}", program.display())]
    VersionFailed {
        /// The agent's name.
        agent: &'static str,
        /// Its program.
        program: PathBuf,
        /// The start of what it printed on standard error.
        stderr: String,
    },
    /// The agent's version output holds no version.
    #[error("{agent}: no version in {text:?}")]
    NoVersion {
        /// The agent's name.
        agent: &'static str,
        /// The start of what it printed.
        text: String,
    },
    /// Claude Code's turn printed no JSON result.
    #[error("Claude Code printed no JSON result: {stdout}")]
    NoJsonResult {
        /// The start of what it printed.
        stdout: String,
    },
    /// mini-swe-agent's driver printed no result line.
    #[error("the mini-swe-agent driver printed no result line: {stdout}")]
    NoResultLine {
        /// The start of what it printed.
        stdout: String,
    },
}

/// What a turn needs to know to continue the session.
#[derive(Debug, Clone)]
pub struct TurnSettings<'a> {
    /// The turn, from 1.
    pub(crate) turn: u32,
    /// The user's words.
    pub(crate) prompt: &'a str,
    /// The proxy as the agent reaches it (`http://127.0.0.1:PORT`, no path).
    pub(crate) base_url: &'a str,
    /// The key the agent sends (the user's own for a real API; any word offline).
    pub(crate) api_key: &'a str,
    /// The model name the agent asks for (`None`: the agent's default).
    pub(crate) model: Option<&'a str>,
    /// The agent's home (its config, sessions; writable).
    pub(crate) home: &'a Path,
    /// The session's id: Claude Code's UUID (chosen before turn 1), Codex's thread id (read
    /// after turn 1); `None` before Codex's first turn.
    pub(crate) session: Option<&'a str>,
    /// Whether the agent keeps its own context handling (the `native` arm).
    pub(crate) native: bool,
    /// Model requests per turn (mini-swe-agent's step limit).
    pub(crate) max_steps: usize,
}

impl Agent {
    /// Finds `kind` on this machine ([`AgentKind::locate`]: its `FOLDBENCH_*` variable as
    /// `tests/agents.sh` prints it, else the PATH); the version is what the agent reports.
    pub fn resolve(kind: &'static dyn AgentKind) -> Result<Agent, AgentError> {
        let agent = kind.name();
        let (var, fallback) = match kind.locate() {
            Locate::Shell => {
                return Ok(Agent {
                    kind,
                    program: PathBuf::from("sh"),
                    version: "unknown".to_string(),
                })
            }
            Locate::Var { var, what } => (var, Err(what)),
            Locate::VarOrPath { var, program } => (var, Ok(program)),
        };
        let program = match (std::env::var_os(var).filter(|v| !v.is_empty()), fallback) {
            (Some(p), _) => PathBuf::from(p),
            (None, Err(what)) => return Err(AgentError::NotSet { agent, var, what }),
            (None, Ok(fallback)) => find_on_path(fallback).ok_or(AgentError::NotFound {
                agent,
                var,
                program: fallback,
            })?,
        };
        if !program.is_file() {
            return Err(AgentError::NotAFile {
                agent,
                program,
                var,
            });
        }
        let version = version_of(kind, &program)?;
        Ok(Agent {
            kind,
            program,
            version,
        })
    }

    /// How the agent's own compaction is set on an arm (`native` or not): what the record says.
    pub(crate) fn compaction(&self, native: bool) -> String {
        if native {
            "the agent's own".to_string()
        } else {
            self.kind.compaction_off()
        }
    }

    /// The process of one turn: the kind's, with `HOME` set to the agent's home and the
    /// variables sorted.
    pub(crate) fn turn_command(&self, s: &TurnSettings<'_>) -> TurnCommand {
        let mut cmd = self.kind.turn_command(&self.program, s);
        cmd.env
            .push(("HOME".to_string(), s.home.display().to_string()));
        cmd.env.sort();
        cmd
    }

    /// Makes the agent's home and the files it needs before its first turn (Codex's provider
    /// pointed at the proxy, mini-swe-agent's driver).
    pub(crate) fn prepare_home(
        &self,
        home: &Path,
        base_url: &str,
        model: Option<&str>,
    ) -> std::io::Result<()> {
        std::fs::create_dir_all(home)?;
        self.kind.prepare_home(home, base_url, model)
    }

    /// What a finished turn said: its closing message and (Codex, turn 1) the session's id.
    pub(crate) fn read_turn(&self, home: &Path, stdout: &str) -> Result<TurnRead, AgentError> {
        self.kind.read_turn(home, stdout)
    }
}

/// What a finished turn said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnRead {
    /// The closing message (empty when the agent wrote none).
    pub(crate) closing: String,
    /// The session's id, when the agent printed it.
    pub(crate) session: Option<String>,
    /// The agent's own report of a failure, when it made one.
    pub(crate) error: Option<String>,
}

pub(crate) fn last_json_line(text: &str) -> Option<serde_json::Value> {
    text.lines()
        .rev()
        .map(str::trim)
        .filter(|l| l.starts_with('{'))
        .find_map(|l| serde_json::from_str(l).ok())
}

pub(crate) fn head(text: &str) -> String {
    let t: String = text.trim().chars().take(300).collect();
    if t.is_empty() {
        "(nothing)".to_string()
    } else {
        t
    }
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The version an agent reports.
fn version_of(kind: &dyn AgentKind, program: &Path) -> Result<String, AgentError> {
    let out = std::process::Command::new(program)
        .args(kind.version_args())
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|source| AgentError::CannotRun {
            agent: kind.name(),
            program: program.to_path_buf(),
            source,
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(AgentError::VersionFailed {
            agent: kind.name(),
            program: program.to_path_buf(),
            stderr: head(&String::from_utf8_lossy(&out.stderr)),
        });
    }
    // `2.1.332 (Claude Code)`, `codex-cli 0.171.0`, `2.4.6`.
    text.split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .map(str::to_string)
        .ok_or_else(|| AgentError::NoVersion {
            agent: kind.name(),
            text: head(&text),
        })
}

/// How `run --agent` runs its agent: shared by the cells of a run.
#[derive(Debug, Clone)]
pub struct AgentSetup {
    /// The agent, found on this machine.
    pub agent: Agent,
    /// How its process is isolated and reaches the proxy.
    pub isolation: isolate::Isolation,
    /// The key the agent sends (forwarded upstream by the proxy, written nowhere); `offline`
    /// with the sim.
    pub api_key: String,
    /// The upstream for a model that is not the sim (the agent's real API).
    pub upstream: String,
}

#[cfg(test)]
mod tests;
