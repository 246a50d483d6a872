//! `hybrid`: observation masking with a model-written summary when the window fills — the
//! hybrid of "The Complexity Trap" (Lindenbauer et al. 2025), which the paper found cheapest.
//!
//! Its SWE-agent configuration is two history processors in a row: `summarize_every_n_turns`
//! (`n` 43, `keep_last_m_turns` 10), then `last_n_observations` (`n` 10). foldbench's arm:
//!
//! - **Masking** on every request: all tool results but the `window` most recent become
//!   SWE-agent's `Old environment output: (K lines omitted)` (the [`crate::swe_agent`] arm's
//!   rule; the task's first message counts as the first observation).
//! - **A summary** when `summarize_every + keep_last` steps (model responses, SWE-agent's
//!   turns) have been made since the last one (the paper's processor summarises when there are
//!   at least `n + keep_last_m_turns` unprocessed turns, then keeps the last `keep_last_m_turns`),
//!   or when the masked request reaches `trigger` tokens (foldbench's addition, so a window
//!   smaller than the paper's does not overflow first): everything before the last `keep_last`
//!   steps is replaced by the summary, the task's first message kept before it (the paper's
//!   processor keeps the system and the first user prompt) and the turn's user message after it
//!   when it is another and among the replaced. The summary is asked for as `compact` asks it (the sim writes its mechanical
//!   summary, a real model its own), from the messages it replaces *unmasked* (the summarising
//!   processor comes first in the paper's list, before masking), the previous summary first.

use std::sync::Arc;

use harness_core::policy::{Plan, Policy};
use harness_core::Context;
use harness_core::{Message, MessageKind, Role};

use crate::error::ParamError;
use crate::messages;
use crate::params::Params;
use crate::registry::Entry;
use crate::swe_agent::SweAgent;

/// The policy's name.
pub(crate) const NAME: &str = "hybrid";

/// Masking, and a summary when the window fills. It keeps nothing between requests that the
/// context does not give back: what is masked and when a summary is due are read from the
/// context (the summaries in it) on every request, and the masking's memo is a cache, so it has
/// no state to save ([`Policy::saved_state`]).
#[derive(Debug)]
pub(crate) struct Hybrid {
    window: usize,
    every: u64,
    keep_last: usize,
    trigger: u64,
    context_window: u64,
    masking: SweAgent,
}

/// The registry entry.
pub(crate) fn entry() -> Entry {
    Entry::new(NAME, |p, b| Ok(Box::new(Hybrid::from_params(p, b.window)?)))
        .summary("The Complexity Trap's hybrid: old tool results masked, a summary when the window fills")
        .source("\"The Complexity Trap\" (Lindenbauer et al. 2025): SWE-agent `summarize_every_n_turns` then `last_n_observations`")
        .window_param("context_window")
        .param("window", "10", "tool results", "the most recent tool results shown whole; older ones are masked")
        .param("summarize_every", "43", "steps", "the steps a summary replaces: one is made when this many and keep_last more have been made since the last (0: never)")
        .param("keep_last", "10", "steps", "the most recent model responses a summary leaves as they are")
        .param("trigger", "(90% of the window)", "tokens", "a summary also when the masked request reaches it")
        .param("context_window", "(the model's)", "tokens", "the context window")
}

impl Hybrid {
    /// From the parameters of [`entry`].
    pub(crate) fn from_params(p: &mut Params, window: u64) -> Result<Hybrid, ParamError> {
        let mask = p.take_count("window")?.unwrap_or(10);
        let every = p.take_u64("summarize_every")?.unwrap_or(43);
        let keep_last = usize::try_from(p.take_u64("keep_last")?.unwrap_or(10)).map_err(|_| {
            ParamError::TooLarge {
                key: "keep_last".into(),
            }
        })?;
        let context_window = p.take_u64("context_window")?.unwrap_or(window);
        let trigger = p.take_u64("trigger")?.unwrap_or(context_window / 10 * 9);
        Ok(Hybrid {
            window: mask,
            every,
            keep_last,
            trigger,
            context_window,
            masking: SweAgent::new(mask, 1),
        })
    }

    /// The masked messages, one per message of `ctx`, and what masking did.
    fn masked(&mut self, ctx: &Context) -> (Vec<Arc<Message>>, Option<String>) {
        match self.masking.plan(ctx, 0) {
            Plan::Send { messages, action } => (messages, action),
            Plan::Compact { .. } => (ctx.messages.clone(), None),
        }
    }

    /// Where a summary ends: the first of the last `keep_last` steps, or `None` when there
    /// are no more steps than that.
    pub(crate) fn cut(&self, messages: &[Arc<Message>]) -> Option<usize> {
        let steps: Vec<usize> = messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::Assistant)
            .map(|(i, _)| i)
            .collect();
        if steps.len() <= self.keep_last {
            return None;
        }
        let cuts = messages::cuts(messages);
        let cut = messages::next_cut(&cuts, steps[steps.len() - self.keep_last]);
        (cut > steps[0]).then_some(cut)
    }

    /// Model responses since the last summary.
    fn steps_since_summary(messages: &[Arc<Message>]) -> u64 {
        let from = messages
            .iter()
            .rposition(|m| m.kind == MessageKind::Summary)
            .map_or(0, |i| i + 1);
        messages[from..]
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count() as u64
    }
}

impl Policy for Hybrid {
    fn name(&self) -> String {
        format!(
            "{NAME}:context_window={},keep_last={},summarize_every={},trigger={},window={}",
            self.context_window, self.keep_last, self.every, self.trigger, self.window
        )
    }

    fn plan(&mut self, ctx: &Context, prefix_tokens: u32) -> Plan {
        let (messages, action) = self.masked(ctx);
        let tokens =
            u64::from(prefix_tokens) + messages.iter().map(|m| u64::from(m.tokens)).sum::<u64>();
        let due = (self.every > 0
            && Hybrid::steps_since_summary(&ctx.messages) >= self.every + self.keep_last as u64)
            || tokens >= self.trigger;
        if due && self.cut(&ctx.messages).is_some() {
            return Plan::Compact { emergency: false };
        }
        Plan::Send { messages, action }
    }

    fn compaction_input(&mut self, ctx: &Context) -> Vec<Arc<Message>> {
        let mut messages = ctx.messages.clone();
        if let Some(cut) = self.cut(&ctx.messages) {
            messages.truncate(cut);
        }
        messages
    }

    fn apply_compaction(&mut self, ctx: &mut Context, summary: Arc<Message>) {
        let Some(cut) = self.cut(&ctx.messages) else {
            return ctx.compact(summary);
        };
        // The paper's processor keeps the system prompt and the task's message (SWE-agent's
        // instance template) before the summary; the turn's own message, when it is another and
        // among the replaced, follows the summary.
        let task = ctx.messages[..cut].iter().position(|m| m.is_human());
        let user = ctx.messages[..cut]
            .iter()
            .rposition(|m| m.is_human() && m.turn == ctx.turn)
            .filter(|&u| Some(u) != task);
        let mut out: Vec<Arc<Message>> = task
            .map(|i| Arc::clone(&ctx.messages[i]))
            .into_iter()
            .collect();
        out.push(summary);
        out.extend(user.map(|i| Arc::clone(&ctx.messages[i])));
        out.extend(ctx.messages[cut..].iter().cloned());
        ctx.messages = out;
    }

    fn window(&self) -> Option<u64> {
        Some(self.context_window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::testing::{condense, context, output, policy, sent, shape, Step::*};

    fn five_steps() -> Context {
        context(vec![
            User("u1"),
            Calls(vec![("read_file", output(10))]),
            Calls(vec![("read_file", output(10)), ("grep", output(10))]),
            Close("done"),
            User("u2"),
            Calls(vec![("shell", output(10))]),
            Calls(vec![("read_file", output(10))]),
        ])
    }

    #[test]
    fn masks_all_but_the_window_of_tool_results() {
        let c = five_steps();
        // Five results and the task's message: window=2 keeps the last two results.
        let mut p = policy("hybrid:window=2");
        assert_eq!(shape(&sent(p.plan(&c, 0))), "uaxaxxcuarar");
        let m = sent(p.plan(&c, 0));
        assert!(
            m[2].text.starts_with("Old environment output: ("),
            "{}",
            m[2].text
        );
        let mut p = policy("hybrid");
        assert_eq!(shape(&sent(p.plan(&c, 0))), "uararrcuarar", "window 10");
    }

    #[test]
    fn masks_then_summarises_when_the_steps_are_due() {
        let mut c = five_steps();
        // Five steps (four calls and the closing): summarize_every=4 and keep_last=2 is not due
        // yet (six steps).
        let mut p = policy("hybrid:window=2,summarize_every=4,keep_last=2");
        assert!(matches!(p.plan(&c, 0), Plan::Send { .. }));
        let mut p = policy("hybrid:window=2,summarize_every=3,keep_last=2");
        let before = c.messages.clone();
        let input = condense(p.as_mut(), &mut c);
        // The summary is written from the messages before the last two steps, unmasked.
        assert_eq!(shape(&input), "uararrcu");
        // The task's message, the summary, the turn's user message (it was among the replaced),
        // the last two steps.
        assert_eq!(shape(&c.messages), "usuarar");
        assert_eq!(c.messages[0].id, before[0].id, "u1");
        assert_eq!(c.messages[2].id, before[7].id, "u2");
        assert_eq!(c.messages[3].id, before[8].id);
        // Two steps since the summary: masking goes on, the next summary is three steps off.
        assert_eq!(shape(&sent(p.plan(&c, 0))), "usuarar");
    }

    #[test]
    fn summarises_when_the_masked_request_reaches_the_trigger() {
        let c = five_steps();
        let masked: u64 = {
            let mut p = policy("hybrid:window=2,summarize_every=0");
            sent(p.plan(&c, 0))
                .iter()
                .map(|m| u64::from(m.tokens))
                .sum()
        };
        // The trigger counts the masked request (and the prefix), not the raw context.
        assert!(masked < c.tokens());
        let at = |t: u64| format!("hybrid:window=2,summarize_every=0,keep_last=2,trigger={t}");
        let mut p = policy(&at(masked + 10));
        assert!(
            matches!(p.plan(&c, 10), Plan::Compact { .. }),
            "at the trigger"
        );
        let mut p = policy(&at(masked + 11));
        assert!(matches!(p.plan(&c, 10), Plan::Send { .. }), "one below");
        // Default: 90% of the context window.
        let p = Hybrid::from_params(&mut crate::parse_policy("hybrid").unwrap().params(), 1000)
            .unwrap();
        assert_eq!(p.trigger, 900);
        // Nothing to summarise (no more steps than keep_last): masking only.
        let mut p = policy("hybrid:window=2,summarize_every=0,keep_last=5,trigger=1");
        assert!(matches!(p.plan(&c, 0), Plan::Send { .. }));
    }
}
