//! # harness-import: recorded agent sessions into foldbench's message model
//!
//! foldbench replays and analyses real transcripts (docs/design.md §11). This crate reads them: Claude
//! Code session JSONL, Codex rollout JSONL (current and legacy), mini-swe-agent `.traj.json`,
//! SWE-agent `.traj` and OpenHands `output.jsonl`, into [`ImportedSession`]s built from the
//! core's [`harness_core::Message`]s (each carrying its o200k token count, counted once
//! when it is built).
//!
//! The parsers are **pure**: [`detect()`], [`import`], [`import_bytes`] and [`link_forks`] take
//! text or bytes and a file name (for messages) and never touch the file system. Reading files,
//! walking folders and pairing subagent files with their sessions is the separate file-system part ([`discover`], [`import_paths`]).
//!
//! ```
//! use harness_import::{import, Format};
//!
//! let line = r#"{"type":"user","uuid":"u1","sessionId":"s","timestamp":"2025-01-01T00:00:00Z","message":{"role":"user","content":"fix the build"}}"#;
//! let sessions = import("s.jsonl", line, Some(Format::ClaudeCode)).unwrap();
//! assert_eq!(sessions[0].human_turns[0].text, "fix the build");
//! ```
//!
//! Main types:
//!
//! - [`ImportedSession`]: the active branch as [`Message`](harness_core::Message)s, one
//!   [`RecordedRequest`] per model call (the context it read, the usage the provider reported),
//!   compaction [`SessionEvent`]s (of an [`EventKind`]), the [`HumanTurn`]s and the
//!   [`Warning`]s;
//! - [`Format`]: the transcript formats ([`UnknownFormatName`] for a name that is none);
//!   [`detect()`] tells them apart (`--format auto`);
//! - [`ImportError`]: a file that cannot be read at all (empty, binary, truncated, not JSON, of
//!   another shape; [`EXPECTED`] says what it should be). A bad line inside a readable file is a
//!   warning, never an error (a line longer than [`MAX_LINE_BYTES`] too); no input panics.
//!
//! Helpers the callers share: [`timestamp_ms`], [`date_of_ms`] and [`short_id`] for times and
//! ids; [`keeps_thinking`] (whether a Claude model's thinking stays in its context);
//! [`rollout_head`] ([`RolloutHead`]: a Codex rollout's ids and time span, read without importing
//! it).
//!
//! What each format maps to is documented in its module (private; `cargo doc
//! --document-private-items`): `claude_code`, `codex`, `swe` (mini-swe-agent and SWE-agent) and
//! `openhands`.
//!
//! Turns: a human prompt opens the next turn (1, 2, ...); every other message carries the turn
//! in progress, 0 before the first prompt. Only [`ImportedSession::human_turns`] says which user
//! messages are prompts: other user-role messages the agent sent the model (meta records,
//! slash-command wrappers, injected context, observations) are kept, with their turn, because
//! they count in the context.

// A type that a public item hands out can be named from outside: the surface is chosen.
#![warn(unnameable_types)]

mod builder;
mod claude_code;
mod codex;
mod detect;
mod error;
mod forks;
pub(crate) mod fs;
pub use fs::{
    discover, import_paths, import_paths_filtered, open_regular, read_regular, Discovered,
    FileError, ImportReport, Prefilter, MAX_TRANSCRIPT_BYTES,
};
mod json;
mod openhands;
mod session;
mod swe;

pub use claude_code::keeps_thinking;
pub use codex::{rollout_head, RolloutHead};
pub use json::MAX_LINE_BYTES;

pub use detect::detect;
pub use error::{ImportError, EXPECTED};
pub use forks::link_forks;
pub use session::{date_of_ms, short_id, timestamp_ms};
pub use session::{
    EventKind, Format, HumanTurn, ImportedSession, RecordedRequest, SessionEvent,
    UnknownFormatName, Warning,
};

/// Imports one transcript file. `name` names the file in sessions, warnings and errors;
/// `format` is detected when `None`.
///
/// One file may hold several sessions: a Claude Code file its main session and its sidechains,
/// an OpenHands `output.jsonl` one run per line. A file with no conversation in it (a Claude
/// Code file of summaries only) gives none.
pub fn import(
    name: &str,
    text: &str,
    format: Option<Format>,
) -> Result<Vec<ImportedSession>, ImportError> {
    detect::check_text(name, text)?;
    let format = match format {
        Some(f) => f,
        None => detect(name, text)?,
    };
    match format {
        Format::ClaudeCode => claude_code::import(name, text),
        Format::Codex => codex::import(name, text),
        Format::CodexLegacy => codex::import_legacy(name, text),
        Format::MiniSweAgent => swe::import_mini(name, text),
        Format::SweAgent => swe::import_swe(name, text),
        Format::OpenHands => openhands::import(name, text),
    }
}

/// [`import`] for raw bytes: binary data is [`ImportError::Binary`]; text that is not valid
/// UTF-8 here and there is read with the bad bytes replaced, and a warning says so.
pub fn import_bytes(
    name: &str,
    bytes: &[u8],
    format: Option<Format>,
) -> Result<Vec<ImportedSession>, ImportError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => import(name, text, format),
        Err(_) => {
            let text = String::from_utf8_lossy(bytes);
            let mut sessions = import(name, &text, format)?;
            let bad: Vec<usize> = bytes
                .split(|b| *b == b'\n')
                .enumerate()
                .filter(|(_, l)| std::str::from_utf8(l).is_err())
                .map(|(i, _)| i + 1)
                .collect();
            if let Some(first) = sessions.first_mut() {
                let others = match bad.len() {
                    0 | 1 => String::new(),
                    n => format!(
                        " (and on {} more line{})",
                        n - 1,
                        if n == 2 { "" } else { "s" }
                    ),
                };
                first.warnings.insert(
                    0,
                    Warning {
                        file: name.to_string(),
                        line: bad.first().copied().unwrap_or(0),
                        message: format!(
                            "not skipped: invalid utf-8 read as U+FFFD{others}; the line is kept"
                        ),
                    },
                );
            }
            Ok(sessions)
        }
    }
}
