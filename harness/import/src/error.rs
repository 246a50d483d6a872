//! Import errors: a file that cannot be read as a transcript at all. (A bad line inside a
//! readable file is a [`crate::Warning`], not an error.)

use crate::session::Format;

/// What a transcript is expected to be, for error messages.
pub const EXPECTED: &str = "a Claude Code or Codex session JSONL, a mini-swe-agent .traj.json, \
     a SWE-agent .traj or an OpenHands output.jsonl";

/// Why a file could not be imported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// The file is empty or holds only white space.
    #[error("{file}: empty file; expected {expected}", expected = EXPECTED)]
    Empty {
        /// The file.
        file: String,
    },
    /// The file holds binary data (NUL bytes, invalid UTF-8, control characters).
    #[error("{file}: binary data, not a session transcript; expected {expected}", expected = EXPECTED)]
    Binary {
        /// The file.
        file: String,
    },
    /// A single-document JSON file ends before the document does.
    #[error("{file}: truncated json: the input ends at line {line}, column {column} inside the document")]
    Truncated {
        /// The file.
        file: String,
        /// Line where the input ends (1-based).
        line: usize,
        /// Column where the input ends.
        column: usize,
    },
    /// Neither a JSON document nor JSON lines.
    #[error("{file}: not json ({detail}); expected {expected}", expected = EXPECTED)]
    NotJson {
        /// The file.
        file: String,
        /// The parser's complaint about the first line.
        detail: String,
    },
    /// JSON, but of none of the known shapes.
    #[error("{file}: unrecognised transcript ({detail}); expected {expected}", expected = EXPECTED)]
    Unrecognised {
        /// The file.
        file: String,
        /// What the file looks like.
        detail: String,
    },
    /// The caller named a format and the file is not of that shape.
    #[error("{file}: not a {format} transcript: {detail}")]
    WrongShape {
        /// The file.
        file: String,
        /// The format asked for.
        format: Format,
        /// What is missing.
        detail: String,
    },
    /// Nothing of the file could be read: its lines were skipped or hold no conversation.
    #[error("{file}: no readable record; {} (line {first_line}: {first})", no_records(*lines, *skipped))]
    NoRecords {
        /// The file.
        file: String,
        /// How many non-empty lines the file has.
        lines: usize,
        /// How many lines were skipped.
        skipped: usize,
        /// The first skipped line (1-based).
        first_line: usize,
        /// Why it was skipped.
        first: String,
    },
}

/// How a file with no readable record was read: `all 5 non-empty lines were skipped`, or `5 of
/// 8 non-empty lines were skipped, the other 3 hold no conversation`.
fn no_records(lines: usize, skipped: usize) -> String {
    if skipped >= lines {
        format!(
            "all {skipped} non-empty line{} {} skipped",
            if skipped == 1 { "" } else { "s" },
            if skipped == 1 { "was" } else { "were" }
        )
    } else {
        let rest = lines - skipped;
        format!(
            "{skipped} of {lines} non-empty lines were skipped, the other {rest} hold{} no conversation",
            if rest == 1 { "s" } else { "" }
        )
    }
}
