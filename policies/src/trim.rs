//! `trim`: tool results older than the last `keep` turns are removed on every request.
//!
//! `mode: drop` (default, as in the essay): the call and its result vanish, and nothing records
//! that a file was read. `mode: placeholder`: the result's text becomes `[output cleared]`, as
//! Anthropic's clear_tool_uses does. `trigger_tokens`: trim only when the request would exceed
//! it. No archive, no address. Rewritten messages are memoised by the original's id, so their
//! token counts are taken once and the prompt-cache simulation sees the same message each time.

use std::collections::HashMap;
use std::sync::Arc;

use harness_core::policy::{Plan, Policy};
use harness_core::Context;
use harness_core::{Message, MessageKind, Role};

use crate::error::ParamError;
use crate::params::Params;
use crate::registry::Entry;

/// The registry entry.
pub(crate) fn entry() -> Entry {
    Entry::new("trim", |p, b| Ok(Box::new(Trim::from_params(p, b.window)?)))
        .summary(
            "tool results of old turns dropped (or replaced by a placeholder) on every request",
        )
        .source("foldbench (the essay's trim)")
        .param(
            "keep",
            "0",
            "turns",
            "turns before the current one whose tool results stay",
        )
        .param(
            "mode",
            "drop",
            "drop|placeholder",
            "drop the calls and results, or leave `[output cleared]`",
        )
        .param(
            "trigger_tokens",
            "(none)",
            "tokens",
            "trim only when the request would exceed it",
        )
}

/// The text that replaces a cleared result.
pub(crate) const PLACEHOLDER: &str = "[output cleared]";

/// Trimming of old tool outputs.
#[derive(Debug)]
pub(crate) struct Trim {
    keep: u32,
    placeholder: bool,
    trigger_tokens: Option<u64>,
    /// Rewritten messages (a cache rebuilt from the context, not state: the policy keeps
    /// nothing between requests that the context does not give back, [`Policy::saved_state`]).
    memo: HashMap<u64, Option<Arc<Message>>>,
}

impl Trim {
    /// From `keep` (default 0), `mode` (drop|placeholder) and `trigger_tokens`.
    pub(crate) fn from_params(p: &mut Params, _window: u64) -> Result<Trim, ParamError> {
        Ok(Trim {
            keep: u32::try_from(p.take_u64("keep")?.unwrap_or(0))
                .map_err(|_| ParamError::TooLarge { key: "keep".into() })?,
            placeholder: p.take_choice("mode", &["drop", "placeholder"])?.as_deref()
                == Some("placeholder"),
            trigger_tokens: p.take_u64("trigger_tokens")?,
            memo: HashMap::new(),
        })
    }

    /// The trimmed form of a message of an old turn: `None` to drop it.
    fn trimmed(&mut self, m: &Arc<Message>) -> Option<Arc<Message>> {
        let placeholder = self.placeholder;
        self.memo
            .entry(m.id)
            .or_insert_with(|| match m.role {
                Role::Tool if placeholder => {
                    let mut c = (**m).clone();
                    c.text = PLACEHOLDER.to_string();
                    c.kind = MessageKind::Cleared;
                    Some(c.sealed())
                }
                Role::Tool => None,
                Role::Assistant if !placeholder && !m.tool_calls.is_empty() => {
                    if m.text.is_empty() {
                        None
                    } else {
                        let mut c = (**m).clone();
                        c.tool_calls.clear();
                        Some(c.sealed())
                    }
                }
                _ => Some(Arc::clone(m)),
            })
            .clone()
    }
}

impl Policy for Trim {
    fn name(&self) -> String {
        let mut s = format!(
            "trim:keep={},mode={}",
            self.keep,
            if self.placeholder {
                "placeholder"
            } else {
                "drop"
            }
        );
        if let Some(t) = self.trigger_tokens {
            s.push_str(&format!(",trigger_tokens={t}"));
        }
        s
    }

    fn plan(&mut self, ctx: &Context, prefix_tokens: u32) -> Plan {
        if let Some(trigger) = self.trigger_tokens {
            if u64::from(prefix_tokens) + ctx.tokens() <= trigger {
                return Plan::Send {
                    messages: ctx.messages.clone(),
                    action: None,
                };
            }
        }
        let oldest_kept = ctx.turn.saturating_sub(self.keep);
        let mut out = Vec::with_capacity(ctx.messages.len());
        let mut trimmed = 0;
        for m in &ctx.messages {
            let old = m.turn < oldest_kept
                && (m.role == Role::Tool
                    || (m.role == Role::Assistant && !m.tool_calls.is_empty()));
            if !old {
                out.push(Arc::clone(m));
                continue;
            }
            if m.role == Role::Tool {
                trimmed += 1;
            }
            if let Some(t) = self.trimmed(m) {
                out.push(t);
            }
        }
        let action = (trimmed > 0).then(|| format!("trimmed {trimmed} tool results"));
        Plan::Send {
            messages: out,
            action,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_policy;
    use harness_core::ToolCall;
    use serde_json::json;

    fn ctx() -> Context {
        let mut c = Context::default();
        for t in 1..=2 {
            c.turn = t;
            c.push(Message::user(t, format!("u{t}"), None));
            let k = ToolCall {
                id: format!("c{t}"),
                name: "read_file".into(),
                args: json!({"path": "a"}),
            };
            c.push(Message::assistant(t, "", vec![k.clone()]));
            c.push(Message::tool_result(t, &k, "OUTPUT", false));
            c.push(Message::assistant(t, format!("done {t}"), vec![]));
        }
        c
    }

    fn plan(spec: &str, c: &Context) -> Vec<Arc<Message>> {
        let mut p = crate::build(&parse_policy(spec).unwrap(), 100_000).unwrap();
        match p.plan(c, 0) {
            Plan::Send { messages, .. } => messages,
            Plan::Compact { .. } => panic!("trim never compacts"),
        }
    }

    #[test]
    fn drop_removes_old_calls_and_results() {
        let c = ctx();
        let m = plan("trim", &c);
        assert_eq!(
            m.len(),
            6,
            "turn 1 keeps its user and closing messages only"
        );
        assert!(m
            .iter()
            .filter(|x| x.turn == 1)
            .all(|x| x.tool_calls.is_empty() && x.role != Role::Tool));
        assert_eq!(m.iter().filter(|x| x.role == Role::Tool).count(), 1);
    }

    #[test]
    fn placeholder_clears_text_and_keeps_calls() {
        let c = ctx();
        let m = plan("trim:mode=placeholder", &c);
        assert_eq!(m.len(), 8);
        assert_eq!(m[2].text, PLACEHOLDER);
        assert_eq!(m[1].tool_calls.len(), 1);
        assert_eq!(m[6].text, "OUTPUT");
    }

    #[test]
    fn keep_and_trigger() {
        let c = ctx();
        assert_eq!(plan("trim:keep=1", &c).len(), 8);
        assert_eq!(plan("trim:trigger_tokens=100000", &c).len(), 8);
    }

    #[test]
    fn trimmed_messages_are_memoised() {
        let c = ctx();
        let mut p = Trim::from_params(
            &mut parse_policy("trim:mode=placeholder").unwrap().params(),
            0,
        )
        .unwrap();
        let ids = |p: &mut Trim| match p.plan(&c, 0) {
            Plan::Send { messages, .. } => messages.iter().map(|m| m.id).collect::<Vec<_>>(),
            Plan::Compact { .. } => Vec::new(),
        };
        assert_eq!(ids(&mut p), ids(&mut p));
    }
}
