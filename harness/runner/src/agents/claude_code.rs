//! Claude Code (`claude -p`): the Messages API, a session named before turn 1 from the cell id
//! and resumed after it, its compaction off through `DISABLE_AUTO_COMPACT`.

use std::path::{Path, PathBuf};

use harness_core::upstream::{self, ToolVocabulary};

use super::{
    head, last_json_line, AgentError, AgentKind, Locate, TurnCommand, TurnRead, TurnSettings,
};

/// Claude Code.
#[derive(Debug)]
pub(crate) struct ClaudeCode;

impl AgentKind for ClaudeCode {
    fn name(&self) -> &'static str {
        "claude-code"
    }

    fn locate(&self) -> Locate {
        Locate::VarOrPath {
            var: "FOLDBENCH_CLAUDE_CODE",
            program: "claude",
        }
    }

    fn version_args(&self) -> &'static [&'static str] {
        &["--version"]
    }

    fn default_upstream(&self) -> &'static str {
        "https://api.anthropic.com"
    }

    fn key_variable(&self) -> &'static str {
        "ANTHROPIC_API_KEY"
    }

    fn first_session(&self, cell: &str) -> Option<String> {
        Some(session_uuid(cell))
    }

    fn compaction_off(&self) -> String {
        "off: DISABLE_AUTO_COMPACT=1".to_string()
    }

    fn prepare_home(&self, _: &Path, _: &str, _: Option<&str>) -> std::io::Result<()> {
        Ok(())
    }

    fn turn_command(&self, program: &Path, s: &TurnSettings<'_>) -> TurnCommand {
        let mut env = vec![
            ("ANTHROPIC_BASE_URL".to_string(), s.base_url.to_string()),
            ("ANTHROPIC_API_KEY".to_string(), s.api_key.to_string()),
            (
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".to_string(),
                "1".to_string(),
            ),
            ("DISABLE_AUTOUPDATER".to_string(), "1".to_string()),
        ];
        if !s.native {
            env.push(("DISABLE_AUTO_COMPACT".into(), "1".into()));
        }
        let mut args = vec!["-p".to_string(), s.prompt.to_string()];
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
        TurnCommand {
            program: PathBuf::from(program),
            args,
            env,
        }
    }

    fn read_turn(&self, _: &Path, stdout: &str) -> Result<TurnRead, AgentError> {
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
            error: error.then(|| format!("Claude Code reported an error: {}", head(stdout))),
        })
    }

    fn tools(&self) -> &'static dyn ToolVocabulary {
        &upstream::ClaudeCodeTools
    }
}

/// A session id for Claude Code (a UUID, as `--session-id` wants) made from the cell's id, so a
/// cell run again names its session the same.
pub(crate) fn session_uuid(cell: &str) -> String {
    let h = harness_core::sha256_hex(cell.as_bytes());
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
