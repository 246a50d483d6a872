//! The conversation's data model: messages, tool calls, tool schemas.
//!
//! Messages are immutable once built and shared as [`Arc<Message>`]: a request is a list of
//! `Arc`s, so building one copies pointers, not text. Every message carries its o200k token count,
//! computed once when it is built ([`Message::tokens`]); that is the per-message memo that makes
//! building a request cost only the new messages.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::tokens;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user (scripted turns, cards attached to them, host notes such as a strategy's rules).
    User,
    /// The model.
    Assistant,
    /// The result of a tool call.
    Tool,
}

/// What a message is, beyond its role. Policies and reports use it; providers see only the role
/// and the text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MessageKind {
    /// An ordinary message as the loop appended it.
    #[default]
    Plain,
    /// A fold result that replaced turns `from..=to`; the originals are in the archive.
    FoldResult {
        /// First folded turn.
        from: u32,
        /// Last folded turn.
        to: u32,
        /// The archive holding the originals (workspace-relative path).
        archive: String,
        /// Hex sha256 of the archive file.
        sha256: String,
    },
    /// A compaction summary that replaced everything before the current turn.
    Summary,
    /// The rules of a strategy mode, appended at the tail when the mode is entered.
    StrategyRules {
        /// The mode's name.
        mode: String,
    },
    /// The report a strategy left behind when it ended (replaces the branch).
    StrategyReport {
        /// The mode's name.
        mode: String,
        /// The archive holding the branch.
        archive: String,
        /// Hex sha256 of the archive file.
        sha256: String,
    },
    /// A tool result whose text a policy replaced by a placeholder (trim, `mode: placeholder`).
    Cleared,
}

/// One tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, unique within a session (the provider's id, or one the sim makes).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as a JSON object.
    pub args: serde_json::Value,
}

impl ToolCall {
    /// The arguments in canonical form (keys sorted, no white space): two calls with equal
    /// canonical arguments ask for the same thing.
    pub fn canonical_args(&self) -> String {
        canonical_json(&self.args)
    }

    /// A string argument, if present.
    pub fn str_arg(&self, key: &str) -> Option<&str> {
        self.args.get(key).and_then(|v| v.as_str())
    }
}

/// Canonical JSON: object keys sorted at every level, no insignificant white space.
pub(crate) fn canonical_json(v: &serde_json::Value) -> String {
    // serde_json's Map is a BTreeMap unless `preserve_order` is on (it is not in this workspace),
    // so plain serialisation is already sorted.
    serde_json::to_string(v).unwrap_or_default()
}

/// A tool's schema as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Name.
    pub name: String,
    /// One-line description.
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One message of a conversation. Immutable; share it as `Arc<Message>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Process-unique id, used as the key of the prompt-cache simulation and of memos. Two
    /// messages with the same id are the same message.
    #[serde(skip, default = "fresh_id")]
    pub id: u64,
    /// Author.
    pub role: Role,
    /// The turn this message belongs to (1-based; 0 for messages outside any turn).
    pub turn: u32,
    /// The text: the user's words, the model's text, or the tool's output.
    pub text: String,
    /// A card the host attached to a user message (never a message of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<String>,
    /// Tool calls of an assistant message, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool result: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a tool result: the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// For a tool result: whether the tool failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// For an assistant message: the thinking (extended reasoning) blocks it carried, joined,
    /// when the provider keeps them in later requests; counted with the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// What the message is.
    #[serde(default, flatten)]
    pub kind: MessageKind,
    /// o200k tokens of the message as rendered for counting (see [`tokens::message_tokens`]),
    /// computed once when the message is built.
    #[serde(default)]
    pub tokens: u32,
}

fn fresh_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

impl Message {
    fn build(role: Role, turn: u32, text: String) -> Message {
        Message {
            id: fresh_id(),
            role,
            turn,
            text,
            card: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
            is_error: false,
            thinking: None,
            kind: MessageKind::Plain,
            tokens: 0,
        }
    }

    /// Computes the token count and gives the message its own id. Every constructor ends here;
    /// call it again after changing a field of a clone.
    pub fn sealed(mut self) -> Arc<Message> {
        self.id = fresh_id();
        self.tokens = tokens::message_tokens(&self);
        Arc::new(self)
    }

    /// A user message, optionally with a card attached.
    pub fn user(turn: u32, text: impl Into<String>, card: Option<String>) -> Arc<Message> {
        let mut m = Message::build(Role::User, turn, text.into());
        m.card = card;
        m.sealed()
    }

    /// An assistant message with text and tool calls.
    pub fn assistant(
        turn: u32,
        text: impl Into<String>,
        tool_calls: Vec<ToolCall>,
    ) -> Arc<Message> {
        let mut m = Message::build(Role::Assistant, turn, text.into());
        m.tool_calls = tool_calls;
        m.sealed()
    }

    /// An assistant message with thinking, text and tool calls.
    pub fn assistant_thinking(
        turn: u32,
        thinking: impl Into<String>,
        text: impl Into<String>,
        tool_calls: Vec<ToolCall>,
    ) -> Arc<Message> {
        let mut m = Message::build(Role::Assistant, turn, text.into());
        m.tool_calls = tool_calls;
        m.thinking = Some(thinking.into());
        m.sealed()
    }

    /// A tool result.
    pub fn tool_result(
        turn: u32,
        call: &ToolCall,
        text: impl Into<String>,
        is_error: bool,
    ) -> Arc<Message> {
        let mut m = Message::build(Role::Tool, turn, text.into());
        m.tool_call_id = Some(call.id.clone());
        m.tool_name = Some(call.name.clone());
        m.is_error = is_error;
        m.sealed()
    }

    /// A host message of a given kind (fold result, summary, strategy rules or report), sent with
    /// the user role.
    pub fn host(turn: u32, text: impl Into<String>, kind: MessageKind) -> Arc<Message> {
        let mut m = Message::build(Role::User, turn, text.into());
        m.kind = kind;
        m.sealed()
    }

    /// This message with `card` attached (replacing any card it had): a new message with its own
    /// id, whose count is this message's count with the card's added, so the text is not
    /// tokenized again (replay attaches cards to recorded prompts).
    pub fn with_card(&self, card: String) -> Arc<Message> {
        let old = self.card.as_deref().map_or(0, |c| tokens::count(c) + 1);
        let mut m = self.clone();
        m.tokens = self.tokens.saturating_sub(old) + tokens::count(&card) + 1;
        m.card = Some(card);
        m.id = fresh_id();
        Arc::new(m)
    }

    /// What identifies the message apart from its process-unique id: the sha256 (hex) of its
    /// JSON, which leaves the id out. The same message read again in another process (a host
    /// that took a conversation out of memory and brought it back) has the same fingerprint;
    /// two messages alike in every field have the same one.
    pub fn fingerprint(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        crate::digest::sha256_hex(&json)
    }

    /// The text the model reads for this message: the text, then the card if one is attached.
    pub fn visible_text(&self) -> String {
        match &self.card {
            Some(card) => format!("{}\n\n{}", self.text, card),
            None => self.text.clone(),
        }
    }

    /// Whether this is a user message typed by the user (not a tool result, not a host message).
    pub fn is_human(&self) -> bool {
        self.role == Role::User && self.kind == MessageKind::Plain
    }

    /// Whether the assistant message ends its turn (no tool calls).
    pub fn is_closing(&self) -> bool {
        self.role == Role::Assistant && self.tool_calls.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_card_counts_as_if_sealed_with_the_card() {
        let plain = Message::user(3, "fix the build, it is red since this morning", None);
        let carded = plain.with_card("<fold-card>\nturn 1 · 10 tokens\n</fold-card>".into());
        let sealed = Message::user(3, plain.text.clone(), carded.card.clone());
        assert_eq!(carded.tokens, sealed.tokens);
        assert_ne!(carded.id, plain.id);
        let again = carded.with_card("short".into());
        assert_eq!(
            again.tokens,
            Message::user(3, plain.text.clone(), Some("short".into())).tokens
        );
    }
}
