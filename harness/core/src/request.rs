//! Requests to a model and its responses.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::message::{Message, ToolCall, ToolSpec};

/// Why a request is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// An ordinary step of a turn.
    #[default]
    Turn,
    /// The compaction call: the last message asks for a summary of everything before it.
    Compaction,
    /// A step of a delegated child session (the `delegate` tool): its own context, begun with
    /// the brief alone.
    Child,
}

/// One call to a model: system prompt + tool schemas + the visible messages.
#[derive(Debug, Clone)]
pub struct Request {
    /// The system prompt (the same in every request of a session).
    pub system: Arc<str>,
    /// The tool list (the same in every request of a session).
    pub tools: Arc<[ToolSpec]>,
    /// The visible messages, in order.
    pub messages: Vec<Arc<Message>>,
    /// Why this request is made.
    pub purpose: Purpose,
    /// o200k tokens of the whole request: prefix plus every message.
    pub tokens: u64,
}

impl Request {
    /// Builds a request and sums its token count from the stored per-message counts.
    pub fn new(
        system: Arc<str>,
        tools: Arc<[ToolSpec]>,
        prefix_tokens: u32,
        messages: Vec<Arc<Message>>,
        purpose: Purpose,
    ) -> Request {
        let tokens =
            u64::from(prefix_tokens) + messages.iter().map(|m| u64::from(m.tokens)).sum::<u64>();
        Request {
            system,
            tools,
            messages,
            purpose,
            tokens,
        }
    }

    /// The turn in progress: the turn of the last message.
    pub fn current_turn(&self) -> u32 {
        self.messages.last().map(|m| m.turn).unwrap_or(0)
    }

    /// Whether `needle` occurs anywhere the model can read in this request (system prompt,
    /// any message's visible text or tool-call arguments).
    pub(crate) fn contains_text(&self, needle: &str) -> bool {
        if self.system.contains(needle) {
            return true;
        }
        self.messages.iter().any(|m| {
            m.text.contains(needle)
                || m.card.as_deref().is_some_and(|c| c.contains(needle))
                || m.tool_calls
                    .iter()
                    .any(|c| c.args.to_string().contains(needle))
        })
    }
}

impl Request {
    /// The string arguments of `call` (at any depth) that occur nowhere the model can read in
    /// this request: not in the system prompt, a message's text or card, or a string argument
    /// of a call it shows. A `grep` pattern also passes when the literal it matches (regex escapes
    /// removed) is visible, so a search for a visible word escaped for the regex passes. Empty when
    /// every argument could have been read off the request.
    pub fn unseen_arguments(&self, call: &ToolCall) -> Vec<String> {
        let mut args = Vec::new();
        strings(&call.args, &mut args);
        let pattern = call.str_arg("pattern").filter(|_| call.name == "grep");
        let mut shown = Vec::new();
        for c in self.messages.iter().flat_map(|m| &m.tool_calls) {
            strings(&c.args, &mut shown);
        }
        let visible = |s: &str| {
            self.system.contains(s)
                || self
                    .messages
                    .iter()
                    .any(|m| m.text.contains(s) || m.card.as_deref().is_some_and(|c| c.contains(s)))
                || shown.iter().any(|a| a.contains(s))
        };
        args.into_iter()
            .filter(|a| {
                let literal = Some(a.as_str()) == pattern && visible(&unescape_regex(a));
                !(visible(a) || literal)
            })
            .collect()
    }
}

/// Every string inside `v`.
fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        serde_json::Value::Object(m) => m.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// A regex written as an escaped literal, back to the literal: each `\x` becomes `x`.
fn unescape_regex(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

/// Token usage as a provider reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Input tokens read from the provider's cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Input tokens written to the provider's cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
}

/// The most tokens one request's usage can really count (ten million: above the context window
/// of any model). A provider's usage figure above it is a bug or a hostile server, not a count.
pub const MAX_PLAUSIBLE_TOKENS: u64 = 10_000_000;

impl Usage {
    /// The whole prompt as the provider counted it (saturating: never wraps).
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }

    /// The first figure above [`MAX_PLAUSIBLE_TOKENS`], named as the usage names it
    /// (`input_tokens`, …), with its value; `None` when every figure is plausible.
    pub fn implausible(&self) -> Option<(&'static str, u64)> {
        [
            ("input_tokens", self.input_tokens),
            ("cache_read_tokens", self.cache_read_tokens),
            ("cache_write_tokens", self.cache_write_tokens),
            ("output_tokens", self.output_tokens),
            ("prompt_tokens", self.prompt_tokens()),
        ]
        .into_iter()
        .find(|(_, n)| *n > MAX_PLAUSIBLE_TOKENS)
    }
}

/// A model's answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The text part of the answer (may be empty when it only calls tools).
    pub text: String,
    /// The tool calls it asked for, in order.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// o200k tokens of the answer (text and calls), counted by the harness.
    #[serde(default)]
    pub output_tokens: u64,
    /// What the provider reported, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// For scripted agents only: text that a call's output must contain (call id, text). The
    /// runner checks it against the real output; a miss makes the cell an error ("task is
    /// broken"). Real models never set it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expects: Vec<(String, String)>,
    /// For scripted agents only: the ids of the calls whose arguments the agent built from the
    /// request's text (the sim's recoveries and re-checks) rather than took from its script. The
    /// runner checks that each argument occurs in the request ([`Request::unseen_arguments`])
    /// and records an `unseen_arguments` event for a call whose arguments do not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub from_request: Vec<String>,
    /// The time the provider took to answer, measured by the HTTP backend from sending the
    /// request to the end of the answer (no time queued for a slot, no earlier attempt); kept in
    /// a cassette, so a replay reports the recorded time. `None` for the sim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_ms: Option<u64>,
}

impl Response {
    /// A response; the harness counts its output tokens.
    pub fn new(
        text: impl Into<String>,
        tool_calls: Vec<ToolCall>,
        usage: Option<Usage>,
    ) -> Response {
        let text = text.into();
        let mut output_tokens = u64::from(crate::tokens::count(&text));
        for c in &tool_calls {
            output_tokens += u64::from(
                crate::tokens::count(&c.name) + crate::tokens::count(&c.canonical_args()),
            );
        }
        Response {
            text,
            tool_calls,
            output_tokens,
            usage,
            expects: Vec::new(),
            from_request: Vec::new(),
            model_ms: None,
        }
    }
}

#[cfg(test)]
mod usage_tests {
    use super::*;

    #[test]
    fn usage_sums_saturate_and_figures_past_any_window_are_named() {
        let u = Usage {
            input_tokens: u64::MAX,
            cache_read_tokens: 5,
            cache_write_tokens: 0,
            output_tokens: 1,
        };
        assert_eq!(u.prompt_tokens(), u64::MAX);
        assert_eq!(u.implausible(), Some(("input_tokens", u64::MAX)));
        let real = Usage {
            input_tokens: 120_000,
            cache_read_tokens: 80_000,
            cache_write_tokens: 0,
            output_tokens: 4_000,
        };
        assert_eq!(real.implausible(), None);
        let split = Usage {
            input_tokens: 6_000_000,
            cache_read_tokens: 6_000_000,
            ..real
        };
        assert_eq!(split.implausible(), Some(("prompt_tokens", 12_000_000)));
        assert_eq!(
            crate::metrics::SizeStats::of(&[u64::MAX, 7]).total,
            u64::MAX
        );
    }
}
