//! Real coding agents driven through their own command lines (`run --agent`, docs/agents.md).
//!
//! - [`AgentKind`]: `claude-code`, `codex`, `mini-swe-agent` or `exec:CMD`, and where each is
//!   found ([`Agent::resolve`]: the `FOLDBENCH_*` variables `tests/agents.sh` prints, else the
//!   PATH) with the version it reports.
//! - [`Agent::turn_command`]: the one process of a turn — the prompt, the model URL pointed at
//!   the cell's proxy, the session continued from the previous turn's, the agent's own
//!   compaction switched off on every arm but `native` ([`Agent::compaction`] says how).
//! - [`Agent::read_turn`]: the closing message and the session's id from what the process
//!   printed or wrote.
//! - [`isolate`]: the process's sandbox; [`bridge`]: its only way out, one port forwarded to the
//!   proxy's unix socket.

pub mod bridge;
pub mod isolate;

use std::path::{Path, PathBuf};

use serde::Serialize;

/// The mini-swe-agent driver: one turn per process, continuing the trajectory file (written into
/// the cell's agent home and run with mini-swe-agent's own Python).
pub const MINI_DRIVER: &str = include_str!("mini_turn.py");

/// Which agent a run drives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentKind {
    /// Claude Code (`claude -p`).
    ClaudeCode,
    /// Codex (`codex exec`, `codex exec resume`).
    Codex,
    /// mini-swe-agent, text-based, through foldbench's driver.
    MiniSweAgent,
    /// Any command, run with `sh -c` once per turn (the protocol in docs/agents.md).
    Exec(String),
}

/// Why an `--agent` name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentKindError {
    /// `exec:` with no command after it.
    #[error("--agent exec: needs a command after the colon, e.g. `exec:./my-agent.sh`")]
    EmptyExec,
    /// No agent by that name.
    #[error("unknown agent `{0}`; use claude-code, codex, mini-swe-agent or exec:CMD")]
    Unknown(String),
}

impl std::str::FromStr for AgentKind {
    type Err = AgentKindError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "claude-code" => Ok(AgentKind::ClaudeCode),
            "codex" => Ok(AgentKind::Codex),
            "mini-swe-agent" => Ok(AgentKind::MiniSweAgent),
            other => match other.strip_prefix("exec:") {
                Some(cmd) if !cmd.trim().is_empty() => Ok(AgentKind::Exec(cmd.to_string())),
                Some(_) => Err(AgentKindError::EmptyExec),
                None => Err(AgentKindError::Unknown(other.to_string())),
            },
        }
    }
}

impl AgentKind {
    /// The agent's name in records and cell ids (`exec` for a command).
    pub fn name(&self) -> &'static str {
        match self {
            AgentKind::ClaudeCode => "claude-code",
            AgentKind::Codex => "codex",
            AgentKind::MiniSweAgent => "mini-swe-agent",
            AgentKind::Exec(_) => "exec",
        }
    }

    /// The variable `tests/agents.sh` prints for this agent, and the program looked up on the
    /// PATH without it.
    fn locator(&self) -> Option<(&'static str, &'static str)> {
        match self {
            AgentKind::ClaudeCode => Some(("FOLDBENCH_CLAUDE_CODE", "claude")),
            AgentKind::Codex => Some(("FOLDBENCH_CODEX", "codex")),
            AgentKind::MiniSweAgent => Some(("FOLDBENCH_MINI_SWE_AGENT", "python3")),
            AgentKind::Exec(_) => None,
        }
    }
}

/// An agent found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    /// Which.
    pub kind: AgentKind,
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
    #[error("{agent} is not installed: {var} is not set (it names the Python of mini-swe-agent's venv); run `export $(tests/agents.sh)`")]
    NotSet {
        /// The agent's name.
        agent: &'static str,
        /// Its `FOLDBENCH_*` variable.
        var: &'static str,
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
    pub turn: u32,
    /// The user's words.
    pub prompt: &'a str,
    /// The proxy as the agent reaches it (`http://127.0.0.1:PORT`, no path).
    pub base_url: &'a str,
    /// The key the agent sends (the user's own for a real API; any word offline).
    pub api_key: &'a str,
    /// The model name the agent asks for (`None`: the agent's default).
    pub model: Option<&'a str>,
    /// The agent's home (its config, sessions; writable).
    pub home: &'a Path,
    /// The session's id: Claude Code's UUID (chosen before turn 1), Codex's thread id (read
    /// after turn 1); `None` before Codex's first turn.
    pub session: Option<&'a str>,
    /// Whether the agent keeps its own context handling (the `native` arm).
    pub native: bool,
    /// Model requests per turn (mini-swe-agent's step limit).
    pub max_steps: usize,
}

/// Codex's auto-compaction limit that never triggers.
const CODEX_NEVER: &str = "9223372036854775807";

impl Agent {
    /// Finds `kind` on this machine: its `FOLDBENCH_*` variable (as `tests/agents.sh` prints
    /// it), else the PATH; the version is what the agent reports.
    pub fn resolve(kind: AgentKind) -> Result<Agent, AgentError> {
        let Some((var, fallback)) = kind.locator() else {
            return Ok(Agent {
                kind,
                program: PathBuf::from("sh"),
                version: "unknown".to_string(),
            });
        };
        let program = match std::env::var_os(var).filter(|v| !v.is_empty()) {
            Some(p) => PathBuf::from(p),
            None if kind == AgentKind::MiniSweAgent => {
                return Err(AgentError::NotSet {
                    agent: kind.name(),
                    var,
                })
            }
            None => find_on_path(fallback).ok_or_else(|| AgentError::NotFound {
                agent: kind.name(),
                var,
                program: fallback,
            })?,
        };
        if !program.is_file() {
            return Err(AgentError::NotAFile {
                agent: kind.name(),
                program,
                var,
            });
        }
        let version = version_of(&kind, &program)?;
        Ok(Agent {
            kind,
            program,
            version,
        })
    }

    /// How the agent's own compaction is set on an arm (`native` or not): what the record says.
    pub fn compaction(&self, native: bool) -> String {
        match (&self.kind, native) {
            (_, true) => "the agent's own".to_string(),
            (AgentKind::ClaudeCode, false) => "off: DISABLE_AUTO_COMPACT=1".to_string(),
            (AgentKind::Codex, false) => {
                format!("off: -c model_auto_compact_token_limit={CODEX_NEVER}")
            }
            (AgentKind::MiniSweAgent, false) => "none: mini-swe-agent does not compact".to_string(),
            (AgentKind::Exec(_), false) => "FOLDBENCH_NATIVE=0 (the command decides)".to_string(),
        }
    }

    /// The process of one turn.
    pub fn turn_command(&self, s: &TurnSettings<'_>) -> TurnCommand {
        let home = s.home.display().to_string();
        let mut env: Vec<(String, String)> = vec![("HOME".into(), home.clone())];
        let mut args: Vec<String> = Vec::new();
        let mut program = self.program.clone();
        match &self.kind {
            AgentKind::ClaudeCode => {
                env.extend([
                    ("ANTHROPIC_BASE_URL".to_string(), s.base_url.to_string()),
                    ("ANTHROPIC_API_KEY".to_string(), s.api_key.to_string()),
                    (
                        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".to_string(),
                        "1".to_string(),
                    ),
                    ("DISABLE_AUTOUPDATER".to_string(), "1".to_string()),
                ]);
                if !s.native {
                    env.push(("DISABLE_AUTO_COMPACT".into(), "1".into()));
                }
                args.extend(["-p".to_string(), s.prompt.to_string()]);
                args.extend(
                    [
                        "--output-format",
                        "json",
                        "--allowedTools",
                        "Bash",
                        "Read",
                        "Edit",
                        "Write",
                    ]
                    .map(String::from),
                );
                if let Some(m) = s.model {
                    args.extend(["--model".to_string(), m.to_string()]);
                }
                let session = s.session.unwrap_or_default().to_string();
                if s.turn <= 1 {
                    args.extend(["--session-id".to_string(), session]);
                } else {
                    args.extend(["--resume".to_string(), session]);
                }
            }
            AgentKind::Codex => {
                env.extend([
                    ("CODEX_HOME".to_string(), format!("{home}/.codex")),
                    ("FOLDBENCH_AGENT_KEY".to_string(), s.api_key.to_string()),
                ]);
                args.push("exec".into());
                if s.turn > 1 {
                    args.push("resume".into());
                }
                args.extend(["--json", "--skip-git-repo-check", "-o"].map(String::from));
                args.push(format!("{home}/last-message.txt"));
                args.extend([
                    "-c".to_string(),
                    "sandbox_mode=\"danger-full-access\"".to_string(),
                ]);
                args.extend(["-c".to_string(), "approval_policy=\"never\"".to_string()]);
                if !s.native {
                    args.extend([
                        "-c".to_string(),
                        format!("model_auto_compact_token_limit={CODEX_NEVER}"),
                    ]);
                }
                args.push("--".into());
                if s.turn > 1 {
                    args.push(s.session.unwrap_or_default().to_string());
                }
                args.push(s.prompt.to_string());
            }
            AgentKind::MiniSweAgent => {
                env.extend([
                    ("OPENAI_API_KEY".to_string(), s.api_key.to_string()),
                    (
                        "LITELLM_LOCAL_MODEL_COST_MAP".to_string(),
                        "True".to_string(),
                    ),
                    ("MSWEA_CONFIGURED".to_string(), "true".to_string()),
                ]);
                args.extend([
                    format!("{home}/mini_turn.py"),
                    "--trajectory".to_string(),
                    format!("{home}/trajectory.json"),
                    "--base-url".to_string(),
                    format!("{}/v1", s.base_url),
                    "--model".to_string(),
                    format!("openai/{}", s.model.unwrap_or("foldbench")),
                    "--step-limit".to_string(),
                    s.max_steps.to_string(),
                    "--task".to_string(),
                    s.prompt.to_string(),
                ]);
            }
            AgentKind::Exec(cmd) => {
                program = PathBuf::from("sh");
                args.extend(["-c".to_string(), cmd.clone()]);
                env.extend([
                    ("FOLDBENCH_PROMPT".to_string(), s.prompt.to_string()),
                    ("FOLDBENCH_TURN".to_string(), s.turn.to_string()),
                    ("FOLDBENCH_BASE_URL".to_string(), s.base_url.to_string()),
                    ("ANTHROPIC_BASE_URL".to_string(), s.base_url.to_string()),
                    ("OPENAI_BASE_URL".to_string(), format!("{}/v1", s.base_url)),
                    ("FOLDBENCH_API_KEY".to_string(), s.api_key.to_string()),
                    ("FOLDBENCH_STATE".to_string(), format!("{home}/state")),
                    (
                        "FOLDBENCH_NATIVE".to_string(),
                        if s.native { "1" } else { "0" }.to_string(),
                    ),
                ]);
            }
        }
        env.sort();
        TurnCommand { program, args, env }
    }

    /// Files the agent's home needs before its first turn: Codex's provider pointed at the
    /// proxy, mini-swe-agent's driver.
    pub fn prepare_home(
        &self,
        home: &Path,
        base_url: &str,
        model: Option<&str>,
    ) -> std::io::Result<()> {
        std::fs::create_dir_all(home)?;
        match &self.kind {
            AgentKind::Codex => {
                let dir = home.join(".codex");
                std::fs::create_dir_all(&dir)?;
                std::fs::write(dir.join("config.toml"), codex_config(base_url, model))
            }
            AgentKind::MiniSweAgent => std::fs::write(home.join("mini_turn.py"), MINI_DRIVER),
            AgentKind::Exec(_) => std::fs::create_dir_all(home.join("state")),
            AgentKind::ClaudeCode => Ok(()),
        }
    }

    /// What a finished turn said: its closing message and (Codex, turn 1) the session's id.
    pub fn read_turn(&self, home: &Path, stdout: &str) -> Result<TurnRead, AgentError> {
        match &self.kind {
            AgentKind::ClaudeCode => {
                let v: serde_json::Value =
                    last_json_line(stdout).ok_or_else(|| AgentError::NoJsonResult {
                        stdout: head(stdout),
                    })?;
                let closing = v
                    .get("result")
                    .and_then(|r| r.as_str())
                    .unwrap_or("")
                    .to_string();
                let error = v.get("is_error").and_then(|e| e.as_bool()).unwrap_or(false);
                Ok(TurnRead {
                    closing,
                    session: v
                        .get("session_id")
                        .and_then(|s| s.as_str())
                        .map(str::to_string),
                    error: error
                        .then(|| format!("Claude Code reported an error: {}", head(stdout))),
                })
            }
            AgentKind::Codex => {
                let session = stdout.lines().find_map(|l| {
                    let v: serde_json::Value = serde_json::from_str(l).ok()?;
                    (v.get("type")?.as_str()? == "thread.started")
                        .then(|| v.get("thread_id")?.as_str().map(str::to_string))?
                });
                let failed = stdout.lines().find_map(|l| {
                    let v: serde_json::Value = serde_json::from_str(l).ok()?;
                    let t = v.get("type")?.as_str()?;
                    (t == "turn.failed" || t == "error").then(|| l.to_string())
                });
                let closing =
                    std::fs::read_to_string(home.join("last-message.txt")).unwrap_or_default();
                let _ = std::fs::remove_file(home.join("last-message.txt"));
                Ok(TurnRead {
                    closing: closing.trim_end().to_string(),
                    session,
                    error: failed.map(|l| format!("Codex reported: {}", head(&l))),
                })
            }
            AgentKind::MiniSweAgent => {
                let v = last_json_line(stdout).ok_or_else(|| AgentError::NoResultLine {
                    stdout: head(stdout),
                })?;
                let status = v.get("exit_status").and_then(|s| s.as_str()).unwrap_or("");
                Ok(TurnRead {
                    closing: v
                        .get("closing")
                        .and_then(|c| c.as_str())
                        .unwrap_or("")
                        .to_string(),
                    session: None,
                    error: (status != "Submitted")
                        .then(|| format!("mini-swe-agent ended with {status:?}")),
                })
            }
            AgentKind::Exec(_) => Ok(TurnRead {
                closing: stdout.trim_end().to_string(),
                session: None,
                error: None,
            }),
        }
    }
}

/// What a finished turn said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnRead {
    /// The closing message (empty when the agent wrote none).
    pub closing: String,
    /// The session's id, when the agent printed it.
    pub session: Option<String>,
    /// The agent's own report of a failure, when it made one.
    pub error: Option<String>,
}

/// Codex's `config.toml`: a provider named `foldbench` at the proxy, the Responses API, the key
/// from `FOLDBENCH_AGENT_KEY`.
pub fn codex_config(base_url: &str, model: Option<&str>) -> String {
    format!(
        "# Written by foldbench for one cell: Codex's model calls go to the cell's proxy.\n\
         model = \"{}\"\nmodel_provider = \"foldbench\"\n\n[model_providers.foldbench]\n\
         name = \"foldbench\"\nbase_url = \"{base_url}/v1\"\nwire_api = \"responses\"\n\
         env_key = \"FOLDBENCH_AGENT_KEY\"\n",
        model.unwrap_or("gpt-5.5")
    )
}

/// A session id for Claude Code (a UUID, as `--session-id` wants) made from the cell's id, so a
/// cell run again names its session the same.
pub fn session_uuid(cell: &str) -> String {
    let h = harness_core::digest::sha256_hex(cell.as_bytes());
    let variant = ["8", "9", "a", "b"][usize::from(h.as_bytes()[16] % 4)];
    format!(
        "{}-{}-4{}-{variant}{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

fn last_json_line(text: &str) -> Option<serde_json::Value> {
    text.lines()
        .rev()
        .map(str::trim)
        .filter(|l| l.starts_with('{'))
        .find_map(|l| serde_json::from_str(l).ok())
}

fn head(text: &str) -> String {
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
fn version_of(kind: &AgentKind, program: &Path) -> Result<String, AgentError> {
    let mut cmd = std::process::Command::new(program);
    match kind {
        AgentKind::MiniSweAgent => {
            cmd.args([
                "-c",
                "import importlib.metadata as m; print(m.version('mini-swe-agent'))",
            ]);
        }
        _ => {
            cmd.arg("--version");
        }
    }
    let out = cmd
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

impl AgentSetup {
    /// The agent's real API by default: Anthropic's for Claude Code, OpenAI's for the others.
    pub fn default_upstream(kind: &AgentKind) -> &'static str {
        match kind {
            AgentKind::ClaudeCode => "https://api.anthropic.com",
            _ => "https://api.openai.com",
        }
    }

    /// The variable the agent's key is read from for a real API.
    pub fn key_variable(kind: &AgentKind) -> &'static str {
        match kind {
            AgentKind::ClaudeCode => "ANTHROPIC_API_KEY",
            _ => "OPENAI_API_KEY",
        }
    }
}

#[cfg(test)]
mod tests;
