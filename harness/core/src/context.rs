//! The live context of a session: the messages a policy builds requests from, and the edits
//! that folds, strategy exits and compactions make to it.

use std::sync::Arc;

use crate::message::{Message, MessageKind, Role, ToolCall};

/// The messages of a session as they stand now (after folds and compactions), in order.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The messages.
    pub messages: Vec<Arc<Message>>,
    /// The turn in progress (1-based; 0 before the first turn).
    pub turn: u32,
    /// The names of the tools the agent offers its model, when the host knows them (a proxy
    /// in front of a real agent): the card names the agent's own tools to read an archive
    /// with. `None`: foldbench's own loop and its tools.
    pub tools: Option<Arc<[String]>>,
}

/// What a turn looks like in the context: the card's and the fold result's raw material.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnInfo {
    /// Turn number.
    pub turn: u32,
    /// Tokens of the turn's messages.
    pub tokens: u64,
    /// Paths its tool calls touched, in order of first touch.
    pub paths: Vec<String>,
    /// The user's message, word for word.
    pub user: String,
    /// Tool calls made in the turn.
    pub tool_calls: usize,
}

/// The path a tool call touches, if it names one.
pub fn call_path(call: &ToolCall) -> Option<String> {
    if let Some(tool) = crate::tools::find(&call.name) {
        return tool.path_of(call);
    }
    match call.name.as_str() {
        // Claude Code's tools, so cards and results of imported sessions name their paths too.
        "Read" | "Edit" | "MultiEdit" | "Write" => call.str_arg("file_path").map(normalize_path),
        "NotebookEdit" | "NotebookRead" => call.str_arg("notebook_path").map(normalize_path),
        "Grep" | "Glob" | "LS" => call.str_arg("path").map(normalize_path),
        _ => None,
    }
}

/// Normalises a path for display and comparison (`./a//b` → `a/b`); an absolute path keeps its
/// leading slash (`/tmp//x` → `/tmp/x`), so a card never names a relative path that is not the
/// one the agent touched.
pub fn normalize_path(p: &str) -> String {
    let parts: Vec<&str> = p
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    let root = if p.starts_with('/') { "/" } else { "" };
    if parts.is_empty() {
        if root.is_empty() { "." } else { "/" }.to_string()
    } else {
        format!("{root}{}", parts.join("/"))
    }
}

impl Context {
    /// Appends a message.
    pub fn push(&mut self, m: Arc<Message>) {
        self.messages.push(m);
    }

    /// Tokens of all messages.
    pub fn tokens(&self) -> u64 {
        self.messages.iter().map(|m| u64::from(m.tokens)).sum()
    }

    /// Index range `[start, end)` of the messages of turns `from..=to`, if those turns are
    /// present as plain (unfolded) messages and contiguous.
    pub fn turn_range(&self, from: u32, to: u32) -> Option<(usize, usize)> {
        let start = self
            .messages
            .iter()
            .position(|m| m.turn >= from && m.turn <= to)?;
        let end = self
            .messages
            .iter()
            .rposition(|m| m.turn >= from && m.turn <= to)?
            + 1;
        Some((start, end))
    }

    /// Whether a message of this turn has been folded (replaced by a fold result or a report).
    pub fn folded_turns(&self) -> Vec<(u32, u32)> {
        self.messages
            .iter()
            .filter_map(|m| match &m.kind {
                MessageKind::FoldResult { from, to, .. } => Some((*from, *to)),
                _ => None,
            })
            .collect()
    }

    /// The last turn a fold result covers (0 when nothing is folded): the card counts work
    /// from here, in the fold policy and in the judgement dataset alike.
    pub fn last_folded_turn(&self) -> u32 {
        self.folded_turns()
            .iter()
            .map(|(_, b)| *b)
            .max()
            .unwrap_or(0)
    }

    /// The live turns before the turn in progress: what a card lists and a fold may take.
    pub fn closed_live_turns(&self) -> Vec<TurnInfo> {
        self.live_turns()
            .into_iter()
            .filter(|t| t.turn < self.turn)
            .collect()
    }

    /// Turns present as plain messages (not folded, not compacted away), with their info.
    pub fn live_turns(&self) -> Vec<TurnInfo> {
        let mut out: Vec<TurnInfo> = Vec::new();
        for m in &self.messages {
            if matches!(
                m.kind,
                MessageKind::FoldResult { .. }
                    | MessageKind::Summary
                    | MessageKind::StrategyReport { .. }
            ) || m.turn == 0
            {
                continue;
            }
            if out.last().is_none_or(|t| t.turn != m.turn) {
                out.push(TurnInfo {
                    turn: m.turn,
                    tokens: 0,
                    paths: Vec::new(),
                    user: String::new(),
                    tool_calls: 0,
                });
            }
            let Some(t) = out.last_mut() else { continue };
            t.tokens += u64::from(m.tokens);
            if m.is_human() && t.user.is_empty() {
                t.user = crate::fold::user_words(&m.text);
            }
            for c in &m.tool_calls {
                t.tool_calls += 1;
                if let Some(p) = call_path(c) {
                    if !t.paths.contains(&p) {
                        t.paths.push(p);
                    }
                }
            }
        }
        out
    }

    /// Replaces the messages `[start, end)` by one message.
    pub fn splice(&mut self, start: usize, end: usize, with: Arc<Message>) {
        self.messages.splice(start..end, std::iter::once(with));
    }

    /// Replaces everything before the current turn's user message by a summary, and drops the
    /// current turn's progress too: the context becomes the summary and the current user message.
    pub fn compact(&mut self, summary: Arc<Message>) {
        let current = self
            .messages
            .iter()
            .rev()
            .find(|m| m.is_human() && m.turn == self.turn)
            .cloned();
        self.messages.clear();
        self.messages.push(summary);
        if let Some(u) = current {
            self.messages.push(u);
        }
    }

    /// The tool calls in the context with the ids of their results still visible (not cleared).
    pub fn visible_results(messages: &[Arc<Message>]) -> Vec<String> {
        messages
            .iter()
            .filter(|m| m.role == Role::Tool && m.kind == MessageKind::Plain)
            .filter_map(|m| m.tool_call_id.clone())
            .collect()
    }
}

/// Tokens that were in the cached prefix before an edit and must be written again after it:
/// the messages of `old` after the first position where `new` differs that survive in `new`.
pub(crate) fn rewritten_tokens(old: &[Arc<Message>], new: &[Arc<Message>]) -> u64 {
    let common = old
        .iter()
        .zip(new)
        .take_while(|(a, b)| a.id == b.id)
        .count();
    let survivors: std::collections::HashSet<u64> = new[common..].iter().map(|m| m.id).collect();
    old[common..]
        .iter()
        .filter(|m| survivors.contains(&m.id))
        .map(|m| u64::from(m.tokens))
        .sum()
}

/// The prompt-cache simulation: tokens of the longest common prefix of two requests, counting
/// the fixed prefix (system prompt and tools) and then whole messages that are the same message.
pub fn cached_prefix_tokens(
    prefix_tokens: u32,
    prev: Option<&[Arc<Message>]>,
    next: &[Arc<Message>],
) -> u64 {
    let Some(prev) = prev else { return 0 };
    u64::from(prefix_tokens)
        + prev
            .iter()
            .zip(next)
            .take_while(|(a, b)| a.id == b.id)
            .map(|(_, b)| u64::from(b.tokens))
            .sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, name: &str, path: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            args: json!({ "path": path }),
        }
    }

    #[test]
    fn absolute_paths_keep_their_leading_slash() {
        assert_eq!(normalize_path("/tmp/run//big.log"), "/tmp/run/big.log");
        assert_eq!(normalize_path("/"), "/");
        assert_eq!(normalize_path("./a//b/./c.py"), "a/b/c.py");
        assert_eq!(normalize_path(""), ".");
        assert_eq!(normalize_path("./"), ".");
        let read = ToolCall {
            id: "r".into(),
            name: "Read".into(),
            args: json!({"file_path": "/tmp/run/big.log"}),
        };
        assert_eq!(call_path(&read).as_deref(), Some("/tmp/run/big.log"));
    }

    fn two_turns() -> Context {
        let mut c = Context {
            turn: 1,
            ..Context::default()
        };
        c.push(Message::user(1, "read a", None));
        let k = call("c1", "read_file", "./src//a.py");
        c.push(Message::assistant(1, "", vec![k.clone()]));
        c.push(Message::tool_result(1, &k, "x = 1", false));
        c.push(Message::assistant(1, "done", vec![]));
        c.turn = 2;
        c.push(Message::user(2, "next", None));
        c
    }

    #[test]
    fn live_turns_report_paths_and_users() {
        let c = two_turns();
        let t = c.live_turns();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].paths, vec!["src/a.py"]);
        assert_eq!(t[0].user, "read a");
        assert_eq!(t[0].tool_calls, 1);
        assert_eq!(c.turn_range(1, 1), Some((0, 4)));
    }

    #[test]
    fn the_closed_turns_leave_out_the_turn_in_progress_and_the_last_fold_is_its_end() {
        let mut c = two_turns();
        assert_eq!(c.last_folded_turn(), 0);
        let closed: Vec<u32> = c.closed_live_turns().iter().map(|t| t.turn).collect();
        assert_eq!(closed, vec![1]);
        let kind = MessageKind::FoldResult {
            from: 1,
            to: 1,
            archive: "a.jsonl".into(),
            sha256: String::new(),
        };
        c.splice(0, 4, Message::host(1, "folded", kind));
        assert_eq!(c.last_folded_turn(), 1);
        assert!(c.closed_live_turns().is_empty());
    }

    #[test]
    fn rewritten_counts_survivors_after_the_edit() {
        let c = two_turns();
        let old = c.messages.clone();
        let mut new = c.clone();
        new.splice(0, 4, Message::host(1, "folded", MessageKind::Plain));
        assert_eq!(
            rewritten_tokens(&old, &new.messages),
            u64::from(old[4].tokens)
        );
        assert_eq!(cached_prefix_tokens(10, Some(&old), &old), 10 + c.tokens());
        assert_eq!(cached_prefix_tokens(10, None, &old), 0);
    }

    #[test]
    fn compaction_keeps_summary_and_current_user_message() {
        let mut c = two_turns();
        c.compact(Message::host(2, "summary", MessageKind::Summary));
        assert_eq!(c.messages.len(), 2);
        assert_eq!(c.messages[1].text, "next");
    }
}
