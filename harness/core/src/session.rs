//! What the live session loop (`harness-runner`'s `cell`) and the offline replay
//! (`harness-replay`'s `engine`, and the judgement dataset's replay) share: where archives go,
//! the compaction instruction, and archiving a splice (its file name, bytes and sha256). Defined
//! once so a replayed fold result points at the archive a live run would have written.

use crate::digest::sha256_hex;
use crate::fold;
use crate::policy::{ArchiveRef, Splice};

/// Where archives are written in a workspace, relative to its root.
pub const ARCHIVE_DIR: &str = ".foldbench/archive";

/// The instruction of a compaction call.
pub const COMPACTION_PROMPT: &str =
    "Summarize the conversation so far for your own later use: every user request and \
decision, what was done and concluded. Tool outputs will not be available afterwards.";

/// A splice's archive, ready to be written: its kind (`fold` or `strategy`), bytes and
/// reference (path under the archive folder and sha256 of the bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Archived {
    /// `fold` or `strategy`: part of the file name and of the fold event.
    pub(crate) kind: &'static str,
    /// The archive file's bytes ([`fold::archive_text`]).
    pub bytes: Vec<u8>,
    /// Where it goes (`dir/name`) and its sha256.
    pub archive: ArchiveRef,
}

/// The kind word of a splice: `fold` for a fold, `strategy` for the end of a strategy.
pub(crate) fn splice_kind(splice: &Splice) -> &'static str {
    splice.kind.word()
}

/// Archives `splice` under `dir` (in memory: the caller writes `bytes` to `archive.path`).
pub(crate) fn archive_splice(dir: &str, splice: &Splice) -> Archived {
    let kind = splice_kind(splice);
    let bytes = fold::archive_text(splice.from, splice.to, &splice.messages).into_bytes();
    let archive = ArchiveRef {
        path: format!("{dir}/{}", fold::archive_name(splice.from, splice.to, kind)),
        sha256: sha256_hex(&bytes),
    };
    Archived {
        kind,
        bytes,
        archive,
    }
}
