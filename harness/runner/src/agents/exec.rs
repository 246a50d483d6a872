//! `exec:CMD`: any command, run with `sh -c` once per turn, told the turn through `FOLDBENCH_*`
//! variables (the protocol in docs/agents.md); it keeps its own state in `$FOLDBENCH_STATE` and
//! decides about compaction from `FOLDBENCH_NATIVE`.

use std::path::{Path, PathBuf};

use harness_core::upstream::{self, ToolVocabulary};

use super::{AgentError, AgentKind, Locate, TurnCommand, TurnRead, TurnSettings};

/// `exec:CMD`: the same descriptor as the listed agents, made from its command (so not in
/// [`super::AGENTS`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exec {
    /// The command `sh -c` runs.
    pub(crate) command: String,
}

impl Exec {
    /// The descriptor of `command`, kept for the process's life as the listed agents are (a run
    /// makes one).
    pub fn leak(command: &str) -> &'static Exec {
        Box::leak(Box::new(Exec {
            command: command.to_string(),
        }))
    }
}

impl AgentKind for Exec {
    fn name(&self) -> &'static str {
        "exec"
    }

    fn locate(&self) -> Locate {
        Locate::Shell
    }

    fn version_args(&self) -> &'static [&'static str] {
        &[]
    }

    fn default_upstream(&self) -> &'static str {
        "https://api.openai.com"
    }

    fn key_variable(&self) -> &'static str {
        "OPENAI_API_KEY"
    }

    fn first_session(&self, _: &str) -> Option<String> {
        None
    }

    fn compaction_off(&self) -> String {
        "FOLDBENCH_NATIVE=0 (the command decides)".to_string()
    }

    fn prepare_home(&self, home: &Path, _: &str, _: Option<&str>) -> std::io::Result<()> {
        std::fs::create_dir_all(home.join("state"))
    }

    fn turn_command(&self, _: &Path, s: &TurnSettings<'_>) -> TurnCommand {
        let home = s.home.display().to_string();
        TurnCommand {
            program: PathBuf::from("sh"),
            args: vec!["-c".to_string(), self.command.clone()],
            env: vec![
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
            ],
        }
    }

    fn read_turn(&self, _: &Path, stdout: &str) -> Result<TurnRead, AgentError> {
        Ok(TurnRead {
            closing: stdout.trim_end().to_string(),
            session: None,
            error: None,
        })
    }

    fn tools(&self) -> &'static dyn ToolVocabulary {
        // Not asked: the upstream recognises a command's requests by the tools they offer,
        // among the vocabularies of AGENTS and foldbench's own.
        &upstream::FOLDBENCH
    }
}
