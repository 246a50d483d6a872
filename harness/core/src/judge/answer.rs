//! How a model answers a card in `foldbench judge run`: with tool calls (the default, as in a
//! live session) or with one line of text (for models whose tool calling is weak).
//!
//! # The text answer
//!
//! In [`AnswerMode::Text`] the card is the fold policy's card with its last paragraph replaced by
//! [`TEXT_INSTRUCTION`] (`text_card`), the model is sent **no tools**, and the context is sent
//! as a plain conversation (`plain_conversation`): tool calls are written into the assistant's
//! text and tool results become user text, so a chat template that knows only `user` and
//! `assistant` (and a provider that refuses tool history without tools) sees the same work. The
//! answer must be exactly one of (`parse_text_answer`):
//!
//! ```text
//! ignore
//! fold 2-4
//! fold 2-4 and 6-7
//! ```
//!
//! Turn numbers are decimal without a leading zero; `fold` and `ignore` are lower case; words
//! are separated by exactly one space; the range is written `FROM-TO` with no space (one turn is
//! `fold 3-3`). White space around the whole answer (a trailing newline) is ignored. Anything
//! else — `Fold 2-4`, `fold 2-4.`, `fold 2 - 4`, `fold 2-4, 6-7`, `fold 3`, a second line, a
//! code fence — is **unparsable**: it is counted in its own column and never read as a fold or
//! as `ignore`. A parsed answer is judged exactly as the same `fold_unit` calls would be
//! ([`crate::judge::judge_calls`], legality by [`crate::fold::check_fold`]); `ignore` is
//! the ignored card.
//!
//! [`GRAMMAR`] is the same language as a llama.cpp GBNF grammar, sent on request to servers that
//! take one, so that a constrained model can only produce a parsable answer.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::dataset::{fold_calls, judge_calls, Item, Judged, JudgedRecord, BASELINES};
use crate::context::Context;
use crate::message::{Message, Role};
use crate::request::Response;

/// How a model answers the card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerMode {
    /// `fold_unit(from, to)` calls, or no call (the card ignored): the live session's answer.
    #[default]
    Tool,
    /// One line of text: `fold FROM-TO[ and FROM-TO…]` or `ignore`.
    Text,
}

impl AnswerMode {
    /// `tool` or `text`.
    pub fn name(self) -> &'static str {
        match self {
            AnswerMode::Tool => "tool",
            AnswerMode::Text => "text",
        }
    }

    /// Reads `tool` or `text`.
    pub fn parse(s: &str) -> Option<AnswerMode> {
        match s {
            "tool" => Some(AnswerMode::Tool),
            "text" => Some(AnswerMode::Text),
            _ => None,
        }
    }
}

/// The opening words of the card's closing paragraph (the question), in both modes.
pub(crate) const QUESTION: &str = "Is a unit of work behind you finished?";

/// The closing paragraph of the card in text mode.
pub const TEXT_INSTRUCTION: &str = "Is a unit of work behind you finished? Answer with one line \
and nothing else: `fold FROM-TO` with the first and last turn of the finished unit (one turn: \
`fold 3-3`; two units: `fold 2-4 and 6-7`), or `ignore` when none is finished. Folded turns go to \
an archive you can read back, and a result with the user's words and your closing message takes \
their place. The turn in progress cannot be folded.";

/// The text answer's language as a llama.cpp GBNF grammar: what `judge_text` parses,
/// with turn numbers of at most four digits and no surrounding white space.
pub const GRAMMAR: &str = r#"root ::= "ignore" | "fold " range (" and " range)*
range ::= turn "-" turn
turn ::= [1-9] [0-9]? [0-9]? [0-9]?
"#;

/// The card of text mode: `card` (the fold policy's card) with its closing paragraph replaced by
/// [`TEXT_INSTRUCTION`]. `None` when the card has no such paragraph.
pub(crate) fn text_card(card: &str) -> Option<String> {
    let at = card.rfind(QUESTION)?;
    let end = card[at..].find("</fold-card>").map(|e| at + e)?;
    Some(format!(
        "{}{TEXT_INSTRUCTION}\n{}",
        &card[..at],
        &card[end..]
    ))
}

/// A parsed text answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TextAnswer {
    /// `ignore`.
    Ignore,
    /// `fold A-B and C-D …`, in order.
    Fold(Vec<(u32, u32)>),
}

fn turn_number(s: &str) -> Option<u32> {
    let mut chars = s.chars();
    match chars.next() {
        Some('1'..='9') if chars.all(|c| c.is_ascii_digit()) => s.parse().ok(),
        _ => None,
    }
}

/// What a text answer must be, for its errors.
const EXPECTED: &str = "expected exactly `ignore` or `fold FROM-TO` (`fold 2-4 and 6-7`)";

/// Why a text answer is unparsable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum TextAnswerError {
    /// More than one line.
    #[error("more than one line; {EXPECTED}")]
    Lines,
    /// Neither `ignore` nor `fold …`.
    #[error("{EXPECTED}")]
    Neither,
    /// A part of `fold …` that is no range.
    #[error("`{0}` is not a range FROM-TO; {EXPECTED}")]
    NotRange(String),
}

/// Reads a text answer strictly (see the module docs); `Err` says why it is unparsable.
pub(crate) fn parse_text_answer(text: &str) -> Result<TextAnswer, TextAnswerError> {
    let t = text.trim();
    if t == "ignore" {
        return Ok(TextAnswer::Ignore);
    }
    if t.contains('\n') {
        return Err(TextAnswerError::Lines);
    }
    let Some(rest) = t.strip_prefix("fold ") else {
        return Err(TextAnswerError::Neither);
    };
    let mut out = Vec::new();
    for part in rest.split(" and ") {
        let range = part
            .split_once('-')
            .and_then(|(a, b)| Some((turn_number(a)?, turn_number(b)?)));
        match range {
            Some(r) => out.push(r),
            None => return Err(TextAnswerError::NotRange(part.to_string())),
        }
    }
    Ok(TextAnswer::Fold(out))
}

/// Judges a text answer at an item. `ctx` is [`Item::context`]. Parsed ranges are judged as the
/// same `fold_unit` calls; an unparsable answer folds nothing, ignores nothing and misses every
/// closed unit (`score.unparsable`), with the reason returned beside it.
pub fn judge_text(item: &Item, ctx: &Context, text: &str) -> (Judged, Option<String>) {
    match parse_text_answer(text) {
        Ok(TextAnswer::Ignore) => (judge_calls(item, ctx, &[]), None),
        Ok(TextAnswer::Fold(ranges)) => (judge_calls(item, ctx, &fold_calls(&ranges)), None),
        Err(why) => {
            let mut j = judge_calls(item, ctx, &[]);
            j.score.ignored = false;
            j.score.exact = false;
            j.score.folded_units = 0;
            j.score.missed_units = j.score.closed_units;
            j.score.unparsable = true;
            (j, Some(why.to_string()))
        }
    }
}

/// A conversation of tool calls and results as plain `user` / `assistant` text, for a model
/// sent no tools: an assistant message keeps its text and gets a line `[tool call] NAME ARGS`
/// per call (arguments as canonical JSON); a tool result becomes user text under a line
/// `[tool result: NAME]` (`[tool error: NAME]` when it failed); a user message keeps its visible
/// text (card included). Neighbours of the same role are joined with a blank line, so roles
/// alternate. Each message keeps the turn of its first part.
pub(crate) fn plain_conversation(messages: &[Arc<Message>]) -> Vec<Arc<Message>> {
    let mut parts: Vec<(Role, u32, String)> = Vec::new();
    for m in messages {
        let (role, text) = match m.role {
            Role::User => (Role::User, m.visible_text()),
            Role::Assistant => {
                let mut s = m.text.clone();
                for c in &m.tool_calls {
                    if !s.is_empty() {
                        s.push('\n');
                    }
                    s.push_str(&format!("[tool call] {} {}", c.name, c.canonical_args()));
                }
                (Role::Assistant, s)
            }
            Role::Tool => {
                let name = m.tool_name.as_deref().unwrap_or("tool");
                let head = if m.is_error {
                    "tool error"
                } else {
                    "tool result"
                };
                (Role::User, format!("[{head}: {name}]\n{}", m.text))
            }
        };
        match parts.last_mut() {
            Some((r, _, s)) if *r == role => {
                if !text.is_empty() {
                    if !s.is_empty() {
                        s.push_str("\n\n");
                    }
                    s.push_str(&text);
                }
            }
            _ => parts.push((role, m.turn, text)),
        }
    }
    parts
        .into_iter()
        .map(|(role, turn, text)| match role {
            Role::Assistant => Message::assistant(turn, text, Vec::new()),
            _ => Message::user(turn, text, None),
        })
        .collect()
}

/// The messages of a text-mode request: the item's context (tool outputs cut to `cap` when
/// given) then the current user message with the text card, as a plain conversation (tool calls
/// written into the assistant's text, tool results as user text).
pub fn text_request_messages(item: &Item, cap: Option<usize>) -> Vec<Arc<Message>> {
    let mut msgs = item.context_messages(cap);
    msgs.push(Message::user(
        item.current,
        item.user.clone(),
        Some(item_text_card(item)),
    ));
    plain_conversation(&msgs)
}

/// The text-mode card of an item.
pub fn item_text_card(item: &Item) -> String {
    let card = item.card();
    // The card is rendered by the fold policy's own code, which always ends with the question;
    // a card without it would be a bug caught by this module's tests.
    text_card(&card).unwrap_or(card)
}

impl JudgedRecord {
    /// Judges a text answer at the item and stores it (`answer_mode: text`). Tool calls the
    /// answer made anyway are kept by name in `other_calls` and judge nothing.
    pub fn answered_text(
        mut self,
        item: &Item,
        ctx: &Context,
        resp: &Response,
        constrained: bool,
    ) -> JudgedRecord {
        let (j, _) = judge_text(item, ctx, &resp.text);
        self.answer_mode = AnswerMode::Text;
        self.constrained = constrained;
        self.text = resp.text.clone();
        self.calls = j.calls;
        self.other_calls = resp.tool_calls.iter().map(|c| c.name.clone()).collect();
        self.score = j.score;
        self.output_tokens = resp.output_tokens;
        self
    }
}

/// How a model's records say it answered, for the table: `tool`, `text`, `text+grammar`, `–`
/// for a baseline, `mixed` when its records disagree.
pub(crate) fn answer_label(model: &str, records: &[&JudgedRecord]) -> String {
    if BASELINES.iter().any(|b| b.name() == model) {
        return "–".into();
    }
    let label = |r: &JudgedRecord| match (r.answer_mode, r.constrained) {
        (AnswerMode::Tool, _) => "tool",
        (AnswerMode::Text, false) => "text",
        (AnswerMode::Text, true) => "text+grammar",
    };
    let mut labels = records.iter().map(|r| label(r));
    match labels.next() {
        None => "–".into(),
        Some(first) if labels.all(|l| l == first) => first.into(),
        Some(_) => "mixed".into(),
    }
}

#[cfg(test)]
mod tests;
