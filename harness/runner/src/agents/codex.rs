//! Codex (`codex exec`, `codex exec resume`): the Responses API through a provider its home's
//! `config.toml` points at the proxy, the thread id read from turn 1's output, its compaction off
//! through a limit that never triggers.

use std::path::{Path, PathBuf};

use harness_core::upstream::{self, ToolVocabulary};

use super::{head, AgentError, AgentKind, Locate, TurnCommand, TurnRead, TurnSettings};

/// Codex's auto-compaction limit that never triggers.
const CODEX_NEVER: &str = "9223372036854775807";

/// Codex.
#[derive(Debug)]
pub(crate) struct Codex;

impl AgentKind for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn locate(&self) -> Locate {
        Locate::VarOrPath {
            var: "FOLDBENCH_CODEX",
            program: "codex",
        }
    }

    fn version_args(&self) -> &'static [&'static str] {
        &["--version"]
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
        format!("off: -c model_auto_compact_token_limit={CODEX_NEVER}")
    }

    fn prepare_home(
        &self,
        home: &Path,
        base_url: &str,
        model: Option<&str>,
    ) -> std::io::Result<()> {
        let dir = home.join(".codex");
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("config.toml"), codex_config(base_url, model))
    }

    fn turn_command(&self, program: &Path, s: &TurnSettings<'_>) -> TurnCommand {
        let home = s.home.display().to_string();
        let env = vec![
            ("CODEX_HOME".to_string(), format!("{home}/.codex")),
            ("FOLDBENCH_AGENT_KEY".to_string(), s.api_key.to_string()),
        ];
        let mut args = vec!["exec".to_string()];
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
        TurnCommand {
            program: PathBuf::from(program),
            args,
            env,
        }
    }

    fn read_turn(&self, home: &Path, stdout: &str) -> Result<TurnRead, AgentError> {
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
        let closing = std::fs::read_to_string(home.join("last-message.txt")).unwrap_or_default();
        let _ = std::fs::remove_file(home.join("last-message.txt"));
        Ok(TurnRead {
            closing: closing.trim_end().to_string(),
            session,
            error: failed.map(|l| format!("Codex reported: {}", head(&l))),
        })
    }

    fn tools(&self) -> &'static dyn ToolVocabulary {
        &upstream::CodexTools
    }
}

/// Codex's `config.toml`: a provider named `foldbench` at the proxy, the Responses API, the key
/// from `FOLDBENCH_AGENT_KEY`.
pub(crate) fn codex_config(base_url: &str, model: Option<&str>) -> String {
    format!(
        "# Written by foldbench for one cell: Codex's model calls go to the cell's proxy.\n\
         model = \"{}\"\nmodel_provider = \"foldbench\"\n\n[model_providers.foldbench]\n\
         name = \"foldbench\"\nbase_url = \"{base_url}/v1\"\nwire_api = \"responses\"\n\
         env_key = \"FOLDBENCH_AGENT_KEY\"\n",
        model.unwrap_or("gpt-5.5")
    )
}
