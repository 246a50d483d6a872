//! The errors of reading a judgement dataset or judged records: a line of a versioned JSONL
//! file ([`JsonlError`], `file:line: what`) and an item that is not sound ([`ItemError`]).
//!
//! Each error's `Display` is the whole message the command line prints; `source()` is the JSON
//! parser's error behind a line that does not read (which the message quotes).

use super::DATASET_VERSION;

/// Why a dataset item is not sound: its own checks ([`super::Item::check`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ItemError {
    /// A format version this foldbench does not read.
    #[error("item {id}: version {version} is not supported; this foldbench reads version {DATASET_VERSION}")]
    Version {
        /// The item's id.
        id: String,
        /// Its version.
        version: u32,
    },
    /// No card point: the current turn is 1, or no turn is offered.
    #[error("item {id}: a card point needs a turn ≥ 2 and at least one offered turn")]
    NoCardPoint {
        /// The item's id.
        id: String,
    },
    /// An offered turn at or after the current one (or turn 0).
    #[error("item {id}: an offered turn is not before the current turn {current}")]
    TurnNotBefore {
        /// The item's id.
        id: String,
        /// The current turn.
        current: u32,
    },
    /// The stored gold differs from the one its labels give.
    #[error("item {id}: the stored gold does not follow from the labels (closed {stored:?}, expected {expected:?}); rebuild the dataset")]
    Gold {
        /// The item's id.
        id: String,
        /// The stored gold's closed ranges.
        stored: Vec<(u32, u32)>,
        /// The closed ranges the labels give.
        expected: Vec<(u32, u32)>,
    },
}

/// Why a line of a versioned JSONL file (a judgement dataset, judged records) is refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JsonlError {
    /// The line is no JSON.
    #[error("{file}:{line}: not a JSON line")]
    NotJson {
        /// The file, as named in messages.
        file: String,
        /// 1-based line.
        line: usize,
        /// The parser's complaint.
        #[source]
        source: serde_json::Error,
    },
    /// A version the file's kind is not read in, or none; `message` is the kind's own (what is
    /// read, what to do).
    #[error("{file}:{line}: {message}")]
    Version {
        /// The file, as named in messages.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong and what to do.
        message: String,
    },
    /// JSON, but not of the file's kind (`what`: `judgement item`, `judged record`).
    #[error("{file}:{line}: not a {what}")]
    NotA {
        /// The file, as named in messages.
        file: String,
        /// 1-based line.
        line: usize,
        /// What the line should be.
        what: &'static str,
        /// The parser's complaint.
        #[source]
        source: serde_json::Error,
    },
    /// An item that does not pass its checks.
    #[error("{file}:{line}: {error}")]
    Item {
        /// The file, as named in messages.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong with it.
        error: ItemError,
    },
    /// An item id seen on an earlier line.
    #[error("{file}:{line}: item {id} appears twice")]
    Twice {
        /// The file, as named in messages.
        file: String,
        /// 1-based line.
        line: usize,
        /// The item's id.
        id: String,
    },
}
