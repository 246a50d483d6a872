//! mini-swe-agent, text-based, through foldbench's driver (`mini_turn.py`, run with the Python of
//! its venv): one turn per process continuing the trajectory file in its home; it does not
//! compact.

use std::path::{Path, PathBuf};

use harness_core::upstream::{self, ToolVocabulary};

use super::{
    head, last_json_line, AgentError, AgentKind, Locate, TurnCommand, TurnRead, TurnSettings,
};

/// The mini-swe-agent driver: one turn per process, continuing the trajectory file (written into
/// the cell's agent home and run with mini-swe-agent's own Python).
pub(crate) const MINI_DRIVER: &str = include_str!("mini_turn.py");

/// mini-swe-agent.
#[derive(Debug)]
pub(crate) struct MiniSweAgent;

impl AgentKind for MiniSweAgent {
    fn name(&self) -> &'static str {
        "mini-swe-agent"
    }

    fn locate(&self) -> Locate {
        Locate::Var {
            var: "FOLDBENCH_MINI_SWE_AGENT",
            what: "the Python of mini-swe-agent's venv",
        }
    }

    fn version_args(&self) -> &'static [&'static str] {
        &[
            "-c",
            "import importlib.metadata as m; print(m.version('mini-swe-agent'))",
        ]
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
        "none: mini-swe-agent does not compact".to_string()
    }

    fn prepare_home(&self, home: &Path, _: &str, _: Option<&str>) -> std::io::Result<()> {
        std::fs::write(home.join("mini_turn.py"), MINI_DRIVER)
    }

    fn turn_command(&self, program: &Path, s: &TurnSettings<'_>) -> TurnCommand {
        let home = s.home.display().to_string();
        let env = vec![
            ("OPENAI_API_KEY".to_string(), s.api_key.to_string()),
            (
                "LITELLM_LOCAL_MODEL_COST_MAP".to_string(),
                "True".to_string(),
            ),
            ("MSWEA_CONFIGURED".to_string(), "true".to_string()),
        ];
        let args = vec![
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
        ];
        TurnCommand {
            program: PathBuf::from(program),
            args,
            env,
        }
    }

    fn read_turn(&self, _: &Path, stdout: &str) -> Result<TurnRead, AgentError> {
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
            error: (status != "Submitted").then(|| format!("mini-swe-agent ended with {status:?}")),
        })
    }

    fn tools(&self) -> &'static dyn ToolVocabulary {
        &upstream::MiniText
    }
}
