//! The imported session model: what every importer produces.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use harness_core::Message;
use harness_core::Usage;
use serde::{Deserialize, Serialize};

/// A transcript format this crate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Claude Code session JSONL (`~/.claude/projects/<project>/<session>.jsonl`, and its
    /// subagent files `agent-*.jsonl`).
    ClaudeCode,
    /// Codex rollout JSONL: `{timestamp, type, payload}` lines (`~/.codex/sessions/...`).
    Codex,
    /// The older Codex rollout: a bare `{id, timestamp, instructions}` first line, then bare
    /// response items.
    CodexLegacy,
    /// mini-swe-agent `.traj.json` (`trajectory_format: mini-swe-agent-1.x`).
    MiniSweAgent,
    /// SWE-agent `.traj` (`history` and/or `trajectory`).
    SweAgent,
    /// OpenHands evaluation `output.jsonl`: one run per line, each with its event `history`.
    OpenHands,
}

impl Format {
    /// Every format, in the order detection reports them.
    pub const ALL: [Format; 6] = [
        Format::ClaudeCode,
        Format::Codex,
        Format::CodexLegacy,
        Format::MiniSweAgent,
        Format::SweAgent,
        Format::OpenHands,
    ];

    /// The format's name as the command line spells it (`claude-code`, `codex`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::CodexLegacy => "codex-legacy",
            Format::MiniSweAgent => "mini-swe-agent",
            Format::SweAgent => "swe-agent",
            Format::OpenHands => "openhands",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is none of [`Format::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format `{0}`; expected one of claude-code, codex, codex-legacy, mini-swe-agent, swe-agent, openhands")]
pub struct UnknownFormatName(pub(crate) String);

impl FromStr for Format {
    type Err = UnknownFormatName;

    fn from_str(s: &str) -> Result<Format, UnknownFormatName> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| UnknownFormatName(s.to_string()))
    }
}

/// One imported session: the active branch of a recorded conversation, in the core's message
/// model, with what the transcript recorded about each model call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImportedSession {
    /// The session's id: Claude Code's `sessionId` (`agent-<agentId>` for a subagent,
    /// `<sessionId>/sidechain-<n>` for an inline sidechain), Codex's session id, the SWE-bench
    /// instance id, or the file name when the transcript names none.
    pub id: String,
    /// The format it was read from.
    pub format: Format,
    /// The file it was read from (as the caller named it).
    pub source: String,
    /// The parent session for a sidechain, subagent or fork.
    pub parent: Option<String>,
    /// The system prompt when the transcript records it (Codex instructions, the trajectories'
    /// system message). Claude Code files do not.
    pub system: Option<String>,
    /// The active branch in order: human turns and other user-role messages, assistant messages
    /// (one per model response, its content blocks merged), tool results (one per tool call,
    /// parallel results in call order). Messages before the first human turn have turn 0.
    pub messages: Vec<Arc<Message>>,
    /// One per model call, in order.
    pub requests: Vec<RecordedRequest>,
    /// Compaction points.
    pub events: Vec<SessionEvent>,
    /// The human prompts, turn 1, 2, ...
    pub human_turns: Vec<HumanTurn>,
    /// Messages of a fork's replayed parent history that were dropped from the front of
    /// `messages` (0 when nothing was dropped). The fork's first requests also read them.
    pub dropped_prefix: usize,
    /// What was skipped, with file and line.
    pub warnings: Vec<Warning>,
    /// The first record's timestamp on the session's branch (milliseconds since the Unix
    /// epoch, UTC), when the transcript records timestamps (Claude Code, Codex).
    #[serde(default)]
    pub started_ms: Option<i64>,
    /// The last record's timestamp (milliseconds since the Unix epoch, UTC).
    #[serde(default)]
    pub ended_ms: Option<i64>,
    /// The working folder the session ran in, when recorded (Claude Code's `cwd`, Codex's
    /// `session_meta.cwd`): the first one recorded.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Per message of `messages`, the timestamp of the record it was read from (milliseconds
    /// since the Unix epoch, UTC; an assistant message: its response's last line), when the
    /// transcript records timestamps. Empty or `None` where it does not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub message_ms: Vec<Option<i64>>,
}

impl ImportedSession {
    /// The highest turn a human prompt opened (0 with none): the number of turns the judges
    /// and the labels see.
    pub fn last_human_turn(&self) -> u32 {
        self.human_turns.iter().map(|h| h.turn).max().unwrap_or(0)
    }

    /// The context of a request as recorded: `messages[context_start..context]`.
    pub fn context(&self, request: &RecordedRequest) -> &[Arc<Message>] {
        let end = request.context.min(self.messages.len());
        let start = request.context_start.min(end);
        &self.messages[start..end]
    }

    /// The project the session worked on, for tables: the last folder of its `cwd`, else (a
    /// Claude Code file) the folder the file sits in, else "".
    pub fn project(&self) -> String {
        if let Some(name) = self
            .cwd
            .as_deref()
            .and_then(|c| c.trim_end_matches(['/', '\\']).rsplit(['/', '\\']).next())
            .filter(|n| !n.is_empty())
        {
            return name.to_string();
        }
        if self.format == Format::ClaudeCode {
            return self.folder().to_string();
        }
        String::new()
    }

    /// The name of the folder the source file sits in ("" when it has none).
    pub fn folder(&self) -> &str {
        let mut parts = self.source.rsplit(['/', '\\']);
        parts.next();
        parts.next().unwrap_or("")
    }

    /// The timestamp of message `i` (see [`ImportedSession::message_ms`]).
    pub fn message_time(&self, i: usize) -> Option<i64> {
        self.message_ms.get(i).copied().flatten()
    }

    /// The UTC date the session started (`YYYY-MM-DD`), when recorded.
    pub fn date(&self) -> Option<String> {
        self.started_ms.map(date_of_ms)
    }

    /// The model most of the session's requests name (the first named on a tie), when any
    /// names one.
    pub fn model(&self) -> Option<&str> {
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for m in self.requests.iter().filter_map(|r| r.model.as_deref()) {
            match counts.iter_mut().find(|(n, _)| *n == m) {
                Some((_, c)) => *c += 1,
                None => counts.push((m, 1)),
            }
        }
        let best = counts.iter().map(|(_, c)| *c).max()?;
        counts.into_iter().find(|(_, c)| *c == best).map(|(m, _)| m)
    }
}

/// One call to the model, as the transcript recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// Index in `messages` of the assistant message this call produced.
    pub message: usize,
    /// The number of messages before that message: `messages[context_start..context]` was the
    /// context of the call. (Equal to `message`: the answer is appended right after its context.)
    pub context: usize,
    /// The first message the call read: 0, or after a compaction the index of the first message
    /// after the compaction point (the summary).
    pub context_start: usize,
    /// The provider's response id, when recorded (Claude Code `message.id`, OpenHands and
    /// mini-swe-agent `response.id`).
    pub response_id: Option<String>,
    /// The usage the provider reported for this call, when recorded.
    pub usage: Option<Usage>,
    /// The model that answered, when recorded (Claude Code's `message.model`, Codex's
    /// `turn_context.model`).
    #[serde(default)]
    pub model: Option<String>,
}

/// What happened at a point of the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Claude Code's `compact_boundary` system record: the context was compacted here.
    CompactBoundary,
    /// Claude Code's `isCompactSummary` user record: the summary message at `message`.
    CompactSummary,
    /// Codex's `compacted` item (or, with no item, its `context_compacted` event): the history
    /// was replaced here; the summary (when the item has text) is the message at `message`.
    Compacted,
    /// A Claude Code session that begins with the summary of an earlier conversation ("This
    /// session is being continued from a previous conversation …"): the loss happened before
    /// the file begins, so nothing of what was lost is in it.
    Continued,
    /// OpenHands' `condensation` action: earlier events were forgotten here; its summary, when
    /// it has one, is the message at `message`.
    Condensation,
    /// In a foldbench run's cell: a fold, strategy exit or compaction replaced earlier results
    /// with a host-written result before the next request (read from the cell's events).
    Folded,
    /// In a foldbench run's cell: the next request no longer showed earlier results and nothing
    /// stood in their place (`trim`).
    Dropped,
}

/// A compaction point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionEvent {
    /// What happened.
    pub kind: EventKind,
    /// Index in `messages` of the first message after the point (may equal `messages.len()`).
    pub message: usize,
    /// What triggered it (`auto`, `manual`), when recorded.
    pub trigger: Option<String>,
    /// The context size before compaction, when recorded (`compactMetadata.preTokens`).
    pub pre_tokens: Option<u64>,
    /// The size in bytes of a summary the transcript holds only encrypted (the `compaction`
    /// item of a Codex `compacted` replacement history): there is a summary, but its words
    /// cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opaque_summary_bytes: Option<u64>,
}

/// One human prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HumanTurn {
    /// The turn it opens (1-based).
    pub turn: u32,
    /// Index in `messages` of the prompt.
    pub message: usize,
    /// The record's id: Claude Code's `uuid` (the key of the labels files), OpenHands' event id;
    /// `None` where the format has none.
    pub id: Option<String>,
    /// The prompt's words (for Claude Code without the IDE context blocks that precede them).
    pub text: String,
}

/// Something the importer skipped or could not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// The file.
    pub file: String,
    /// The 1-based line, or 0 when the warning is about the file as a whole.
    pub line: usize,
    /// What was skipped and why.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

/// Milliseconds since the Unix epoch of an RFC 3339 timestamp, or of a date `YYYY-MM-DD` (its
/// midnight, UTC). `None` when it parses as neither.
pub fn timestamp_ms(text: &str) -> Option<i64> {
    let t = text.trim();
    if t.len() == 10 {
        return crate::json::timestamp_ms(&format!("{t}T00:00:00Z"));
    }
    crate::json::timestamp_ms(t)
}

/// The UTC date (`YYYY-MM-DD`) of milliseconds since the Unix epoch.
pub fn date_of_ms(ms: i64) -> String {
    // Civil from days (Howard Hinnant's algorithm).
    let z = ms.div_euclid(86_400_000) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// A session id short enough for a table column (the first 8 characters of a uuid, the agent
/// part of a subagent id).
pub fn short_id(id: &str) -> String {
    let id = id.rsplit('/').next().unwrap_or(id);
    let b = id.as_bytes();
    let uuid = b.len() == 36
        && [8, 13, 18, 23].iter().all(|&i| b[i] == b'-')
        && id.chars().all(|c| c == '-' || c.is_ascii_hexdigit());
    if uuid {
        return id[..8].to_string();
    }
    if id.chars().count() <= 24 {
        id.to_string()
    } else {
        let head: String = id.chars().take(23).collect();
        format!("{head}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip_through_milliseconds() {
        for d in [
            "1970-01-01",
            "2000-02-29",
            "2025-07-17",
            "2025-12-31",
            "2026-03-01",
        ] {
            assert_eq!(date_of_ms(timestamp_ms(d).unwrap()), d);
        }
        assert_eq!(
            date_of_ms(timestamp_ms("2025-07-17T23:59:59.999Z").unwrap()),
            "2025-07-17"
        );
        assert_eq!(timestamp_ms("2025-13-01"), None);
        assert_eq!(timestamp_ms("yesterday"), None);
    }
}
