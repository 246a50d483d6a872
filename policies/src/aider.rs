//! `aider`: Aider's chat-history summarising (`aider/history.py` `ChatSummary`, and the
//! coder's `summarize_start`/`summarize_end`).
//!
//! Aider keeps the finished turns ("done messages") apart from the turn in progress. When a
//! turn ends and the done messages hold more than `max_chat_history_tokens` (by default
//! `min(max(window / 16, 1024), 8192)`, the model's own), it summarises them in the background
//! and swaps the summary in when the next message is sent: the newest done messages under half
//! the limit stay (the kept part starts after an answer), the older ones become one user
//! message `I spoke to you previously about a number of things.` and the summary, and `Ok.`
//! from the assistant ends the done messages when they do not end with an answer. The summariser
//! is given only the oldest of the older messages whose running total stays within the model's
//! input limit less 512 (`summarize_real`'s `keep`, since aider-chat 0.86): the ones between
//! them and the kept part are neither summarised nor kept. foldbench asks the summary at the
//! next turn's first request, as `compact` asks it, and cuts only between tool batches (Aider's
//! history has no tool calls); Aider's further rounds when summary and tail are still over the
//! limit are not made.

use std::sync::Arc;

use harness_core::policy::{Plan, Policy};
use harness_core::Context;
use harness_core::{Message, MessageKind, Role};

use crate::error::ParamError;
use crate::messages;
use crate::params::Params;
use crate::registry::Entry;

/// The policy's name.
pub(crate) const NAME: &str = "aider";

/// The first line of Aider's summary message.
pub(crate) const SUMMARY_PREFIX: &str = "I spoke to you previously about a number of things.\n";

/// Aider's answer after a summary.
pub(crate) const OK: &str = "Ok.";

/// What Aider keeps free of the summarising model's input limit (`model_max_input_tokens -= 512`).
pub const SUMMARY_BUFFER: u64 = 512;

/// Aider's default limit for a model's input limit: `min(max(input / 16, 1024), 8192)`.
pub(crate) fn default_limit(window: u64) -> u64 {
    (window / 16).clamp(1024, 8192)
}

/// Aider's chat-history summarising.
#[derive(Debug)]
pub(crate) struct Aider {
    limit: u64,
    window: u64,
}

/// The registry entry.
pub(crate) fn entry() -> Entry {
    Entry::new(NAME, |p, b| Ok(Box::new(Aider::from_params(p, b.window)?)))
        .summary("Aider: past max_chat_history_tokens, the older finished turns summarised into one message")
        .source("Aider `ChatSummary` (`aider/history.py`, `max_chat_history_tokens`)")
        .param("max_chat_history_tokens", "(min(max(window/16, 1024), 8192))", "tokens", "the finished turns are summarised past it")
        .param("window", "(the model's)", "tokens", "the model's input limit")
}

impl Aider {
    /// From the parameters of [`entry`].
    pub(crate) fn from_params(p: &mut Params, window: u64) -> Result<Aider, ParamError> {
        let window = p.take_u64("window")?.unwrap_or(window);
        Ok(Aider {
            limit: p
                .take_count("max_chat_history_tokens")?
                .map_or(default_limit(window), |n| n as u64),
            window,
        })
    }

    /// The index of the turn's prompt when the next request is the turn's first.
    fn turn_start(ctx: &Context) -> Option<usize> {
        let last = ctx.messages.len().checked_sub(1)?;
        let m = &ctx.messages[last];
        (m.is_human() && m.turn == ctx.turn).then_some(last)
    }

    /// The done messages `[0, end)` are summarised up to `split` when over the limit: the
    /// newest of them under half the limit stay, from after an assistant message, at a cut.
    pub(crate) fn split(&self, messages: &[Arc<Message>], end: usize) -> Option<usize> {
        let done = &messages[..end];
        let total: u64 = done.iter().map(|m| u64::from(m.tokens)).sum();
        if total <= self.limit {
            return None;
        }
        let half = self.limit / 2;
        let mut tail = 0;
        let mut split = end;
        for i in (0..end).rev() {
            let t = u64::from(done[i].tokens);
            if tail + t < half {
                tail += t;
                split = i;
            } else {
                break;
            }
        }
        let cuts = messages::cuts(done);
        while split > 1 && (done[split - 1].role != Role::Assistant || !cuts[split]) {
            split -= 1;
        }
        // Aider summarises everything when fewer than five messages would be summarised.
        if split <= 4 {
            split = end;
        }
        Some(split)
    }

    /// Of the older messages `[0, split)`, how many the summariser is given: the oldest whose
    /// running total stays within the window less [`SUMMARY_BUFFER`] (Aider stops at the first
    /// message that passes it), cut back to a boundary between tool batches. A first message
    /// larger than that alone leaves the whole head (Aider would summarise nothing).
    pub fn summarised(&self, messages: &[Arc<Message>], split: usize) -> usize {
        let cap = self.window.saturating_sub(SUMMARY_BUFFER);
        let mut total = 0;
        let Some(mut end) = messages[..split].iter().position(|m| {
            total += u64::from(m.tokens);
            total > cap
        }) else {
            return split;
        };
        let cuts = messages::cuts(&messages[..split]);
        while end > 0 && !cuts[end] {
            end -= 1;
        }
        if end == 0 {
            split
        } else {
            end
        }
    }
}

impl Policy for Aider {
    fn name(&self) -> String {
        format!(
            "{NAME}:max_chat_history_tokens={},window={}",
            self.limit, self.window
        )
    }

    fn plan(&mut self, ctx: &Context, _prefix_tokens: u32) -> Plan {
        if let Some(at) = Aider::turn_start(ctx) {
            let summarised = ctx.messages[..at]
                .iter()
                .any(|m| m.kind == MessageKind::Summary);
            let split = self.split(&ctx.messages, at);
            // A context that is only a summary and its answer has nothing more to summarise.
            if split.is_some_and(|s| s > 0 && !(summarised && s <= 2)) {
                return Plan::Compact { emergency: false };
            }
        }
        Plan::Send {
            messages: ctx.messages.clone(),
            action: None,
        }
    }

    fn compaction_input(&mut self, ctx: &Context) -> Vec<Arc<Message>> {
        let Some(at) = Aider::turn_start(ctx) else {
            return ctx.messages.clone();
        };
        let split = self.split(&ctx.messages, at).unwrap_or(at);
        let end = self.summarised(&ctx.messages, split);
        ctx.messages[..end].to_vec()
    }

    fn apply_compaction(&mut self, ctx: &mut Context, summary: Arc<Message>) {
        let Some(at) = Aider::turn_start(ctx) else {
            return ctx.compact(summary);
        };
        let split = self.split(&ctx.messages, at).unwrap_or(at);
        let text = format!("{SUMMARY_PREFIX}{}", summary.text);
        let mut out = vec![Message::host(summary.turn, text, MessageKind::Summary)];
        out.extend(ctx.messages[split..at].iter().cloned());
        if out.last().is_some_and(|m| m.role != Role::Assistant) {
            out.push(Message::assistant(summary.turn, OK, Vec::new()));
        }
        out.extend(ctx.messages[at..].iter().cloned());
        ctx.messages = out;
    }

    fn window(&self) -> Option<u64> {
        Some(self.window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::testing::{condense, context, output, policy, shape, Step::*};

    #[test]
    fn the_limit_is_a_sixteenth_of_the_window_between_1024_and_8192() {
        assert_eq!(default_limit(200_000), 8192);
        assert_eq!(default_limit(32_000), 2000);
        assert_eq!(default_limit(8_000), 1024);
    }

    /// Four finished turns of one 300-line read each, then the next prompt.
    fn four_finished_turns_then_a_prompt() -> Vec<crate::messages::testing::Step> {
        let mut steps = Vec::new();
        for _ in 0..4 {
            steps.push(User("u"));
            steps.push(Calls(vec![("read_file", output(300))]));
            steps.push(Close("done"));
        }
        steps.push(User("next"));
        steps
    }

    #[test]
    fn the_older_finished_turns_become_a_summary_at_the_next_prompt() {
        let steps = four_finished_turns_then_a_prompt();
        let mut c = context(steps);
        let mut p = policy("aider:max_chat_history_tokens=1000");
        let input = condense(p.as_mut(), &mut c);
        // About 330 tokens a turn: the last turn and the closing before it are under 500; the
        // kept part starts after an answer at a cut, so the last two turns stay.
        assert_eq!(shape(&input), "uarcuarc");
        assert_eq!(shape(&c.messages), "suarcuarcu");
        assert!(c.messages[0].text.starts_with(SUMMARY_PREFIX));
    }

    #[test]
    fn the_summariser_is_given_the_oldest_messages_within_the_window_less_512() {
        let steps = four_finished_turns_then_a_prompt();
        // A 1,000-token window less 512 holds the first turn (about 330 tokens) and the second
        // turn's prompt, not its output: the summariser reads those, the rest of the second
        // turn is dropped (the call goes with its result: a cut between tool batches).
        let mut c = context(steps);
        let mut p = policy("aider:max_chat_history_tokens=1000,window=1000");
        let input = condense(p.as_mut(), &mut c);
        assert_eq!(shape(&input), "uarcu");
        assert_eq!(shape(&c.messages), "suarcuarcu");
    }
}
