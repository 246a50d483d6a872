//! `clear-thinking`: Anthropic's context editing strategy `clear_thinking_20251015`.
//!
//! The API removes the thinking blocks of assistant turns before the last `keep` turns that
//! carry thinking (`keep: {type: thinking_turns, value: N}`, 1 by default; `all` keeps every
//! one), on every request, while the client keeps the whole history (so the edit is a function
//! of the request, like `clear-tool-uses`, with which it composes in a pipeline:
//! `clear-thinking|clear-tool-uses`, the order the API requires). A message keeps its text and
//! calls; only its thinking goes. Sessions without thinking are unchanged.

use std::sync::Arc;

use harness_core::policy::{Plan, Policy};
use harness_core::Context;
use harness_core::{Message, Role};

use crate::error::ParamError;
use crate::messages::Memo;
use crate::params::Params;
use crate::registry::Entry;

/// The policy's name.
pub(crate) const NAME: &str = "clear-thinking";

/// Anthropic's thinking clearing.
#[derive(Debug)]
pub(crate) struct ClearThinking {
    /// Thinking turns kept (`None`: all).
    keep: Option<usize>,
    /// Rewritten messages (a cache rebuilt from the context, not state: the policy keeps
    /// nothing between requests that the context does not give back, [`Policy::saved_state`]).
    memo: Memo,
}

/// The registry entry.
pub(crate) fn entry() -> Entry {
    Entry::new(NAME, |p, _| Ok(Box::new(ClearThinking::from_params(p)?)))
        .summary("Anthropic's context editing: thinking blocks of all but the last turns removed")
        .source("Anthropic context editing, `clear_thinking_20251015`")
        .param(
            "keep",
            "1",
            "thinking turns, or all",
            "the most recent assistant turns with thinking that keep it",
        )
}

/// `m` without its thinking (the same message on every request).
pub(crate) fn without_thinking(memo: &mut Memo, m: &Arc<Message>) -> Arc<Message> {
    memo.get(m, 30, |m| {
        let mut c = m.clone();
        c.thinking = None;
        c.sealed()
    })
}

/// The messages with the thinking of all but the last `keep` assistant messages that carry it
/// removed (`None`: nothing removed); how many lost it.
pub(crate) fn clear(
    memo: &mut Memo,
    messages: &[Arc<Message>],
    keep: Option<usize>,
) -> (Vec<Arc<Message>>, usize) {
    let Some(keep) = keep else {
        return (messages.to_vec(), 0);
    };
    let with: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Assistant && m.thinking.is_some())
        .map(|(i, _)| i)
        .collect();
    let old = with.len().saturating_sub(keep);
    let mut out = messages.to_vec();
    for &i in &with[..old] {
        out[i] = without_thinking(memo, &messages[i]);
    }
    (out, old)
}

impl ClearThinking {
    /// From `keep` (a number of thinking turns, or `all`).
    pub(crate) fn from_params(p: &mut Params) -> Result<ClearThinking, ParamError> {
        let keep =
            match p.take_text("keep").as_deref() {
                None => Some(1),
                Some("all") => None,
                Some(v) => Some(v.replace('_', "").parse::<usize>().map_err(|_| {
                    ParamError::OutOfRange {
                        key: "keep".into(),
                        rule: format!("is a number of thinking turns or `all`, not `{v}`"),
                    }
                })?),
            };
        Ok(ClearThinking {
            keep,
            memo: Memo::default(),
        })
    }
}

impl Policy for ClearThinking {
    fn name(&self) -> String {
        match self.keep {
            Some(n) => format!("{NAME}:keep={n}"),
            None => format!("{NAME}:keep=all"),
        }
    }

    fn plan(&mut self, ctx: &Context, _prefix_tokens: u32) -> Plan {
        let (messages, cleared) = clear(&mut self.memo, &ctx.messages, self.keep);
        Plan::Send {
            messages,
            action: (cleared > 0).then(|| format!("cleared the thinking of {cleared} turns")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::testing::{policy, sent};

    #[test]
    fn keeps_the_thinking_of_the_last_turns_only() {
        let mut c = Context {
            turn: 1,
            ..Default::default()
        };
        c.push(Message::user(1, "task", None));
        for i in 0..3 {
            c.push(Message::assistant_thinking(
                1,
                format!("thought {i}"),
                format!("a{i}"),
                vec![],
            ));
        }
        let thinking = |m: &[Arc<Message>]| -> Vec<bool> {
            m.iter().skip(1).map(|m| m.thinking.is_some()).collect()
        };
        assert_eq!(
            thinking(&sent(policy("clear-thinking").plan(&c, 0))),
            [false, false, true]
        );
        assert_eq!(
            thinking(&sent(policy("clear-thinking:keep=2").plan(&c, 0))),
            [false, true, true]
        );
        assert_eq!(
            thinking(&sent(policy("clear-thinking:keep=all").plan(&c, 0))),
            [true, true, true]
        );
        let m = sent(policy("clear-thinking").plan(&c, 0));
        assert_eq!(m[1].text, "a0");
        assert!(m[1].tokens < c.messages[1].tokens);
        // It composes with clear-tool-uses, first.
        assert!(crate::registry::current()
            .check("clear-thinking|clear-tool-uses")
            .is_ok());
    }
}
