//! `llm-summarizing`: OpenHands' `LLMSummarizingCondenser`, with the defaults of its agent
//! SDK (`max_size` 240 events, `keep_first` 2).
//!
//! When the context holds more than `max_size` events, the events after the first `keep_first`
//! (the system prompt is event 0, so 2 keeps it and the task's message) up to the most recent
//! `max_size / 2 - keep_first - 1` are forgotten for good and one model-written summary takes
//! their place: the context shrinks to about half of `max_size`, then grows again. The summary
//! of the last condensation sits where the next one starts forgetting, so each summary is
//! written over the one before. Both ends of the forgotten range fall between tool batches: a
//! call and its result are forgotten together or kept together. A condensation that would
//! forget fewer than `minimum_progress` of the events is not made (OpenHands waits for a later
//! step, when the tail has moved). With `max_tokens` (the SDK's optional token limit) a request
//! holding more tokens is condensed too: the messages after the head go, oldest first, until
//! more than the excess over half the limit is gone. The SDK caps that limit by the agent
//! model's input limit even when `max_tokens` is not set (`_effective_max_input_tokens`): a
//! request holding more than `max_input_tokens` (the model's window) is condensed down to half
//! of it.
//!
//! [`preset_entry`] is the SDK's default agent (`default_condenser`: `max_size` 80,
//! `keep_first` 4) under its own name, `openhands-sdk`.
//!
//! The summary is asked for the way `compact` asks it ([`Plan::Compact`]: the sim writes its
//! mechanical summary, a real model its own), from the context up to the end of the forgotten
//! range ([`Policy::compaction_input`]): the head, the previous summary and the forgotten
//! events, as OpenHands gives its summariser the previous summary and the forgotten events.

use std::sync::Arc;

use harness_core::policy::{Plan, Policy};
use harness_core::Context;
use harness_core::Message;

use crate::error::ParamError;
use crate::messages;
use crate::params::Params;
use crate::registry::Entry;

/// The policy's name.
pub(crate) const NAME: &str = "llm-summarizing";

/// The name of the SDK's default agent's condenser.
pub(crate) const PRESET: &str = "openhands-sdk";

/// OpenHands' summarising condenser.
#[derive(Debug)]
pub(crate) struct LlmSummarizing {
    max_size: usize,
    keep_first: usize,
    minimum_progress: f64,
    max_tokens: Option<u64>,
    max_input_tokens: u64,
    /// The registry name it was built under.
    name: &'static str,
    /// The system prompt's and tools' tokens, as the last plan was given them: read by the
    /// same request's compaction, so not state ([`Policy::saved_state`]); the policy keeps
    /// nothing between requests that the context does not give back.
    prefix_tokens: u64,
}

/// The registry entry.
pub(crate) fn entry() -> Entry {
    params(
        Entry::new(NAME, |p, b| {
            Ok(Box::new(LlmSummarizing::from_params(
                p, b.window, NAME, 240, 2,
            )?))
        })
        .summary(
            "OpenHands: past max_size events the older half is replaced by a model-written summary",
        )
        .source("OpenHands `LLMSummarizingCondenser` (agent SDK class defaults)"),
        "240",
        "2",
    )
}

/// The registry entry of the SDK's default agent's condenser (`default_condenser`).
pub(crate) fn preset_entry() -> Entry {
    params(
        Entry::new(PRESET, |p, b| {
            Ok(Box::new(LlmSummarizing::from_params(
                p, b.window, PRESET, 80, 4,
            )?))
        })
        .summary("OpenHands SDK's default agent: llm-summarizing with max_size=80, keep_first=4")
        .source("OpenHands SDK `default_condenser` (`LLMSummarizingCondenser`, its preset)"),
        "80",
        "4",
    )
}

fn params(e: Entry, max_size: &str, keep_first: &str) -> Entry {
    e.window_param("max_input_tokens")
        .param(
            "max_size",
            max_size,
            "events",
            "the context is condensed when it holds more",
        )
        .param(
            "keep_first",
            keep_first,
            "events",
            "events never forgotten from the start (the system prompt is the first)",
        )
        .param(
            "minimum_progress",
            "0.1",
            "fraction of the events",
            "a condensation forgetting fewer is not made",
        )
        .param(
            "max_tokens",
            "(none)",
            "tokens",
            "also condense when the request holds more, down to half of it",
        )
        .param(
            "max_input_tokens",
            "(the model's)",
            "tokens",
            "the agent model's input limit: it caps max_tokens (the SDK's effective limit)",
        )
}

impl LlmSummarizing {
    /// From `max_size`, `keep_first`, `minimum_progress`, `max_tokens` and `max_input_tokens`
    /// (default `window`), with the defaults of `name`.
    pub(crate) fn from_params(
        p: &mut Params,
        window: u64,
        name: &'static str,
        max_size: usize,
        keep_first: u64,
    ) -> Result<LlmSummarizing, ParamError> {
        let max_size = p.take_count("max_size")?.unwrap_or(max_size);
        let keep_first =
            usize::try_from(p.take_u64("keep_first")?.unwrap_or(keep_first)).map_err(|_| {
                ParamError::TooLarge {
                    key: "keep_first".into(),
                }
            })?;
        if keep_first + 1 >= max_size / 2 {
            return Err(ParamError::Conflict(format!(
                "`keep_first` ({keep_first}) must be less than `max_size` / 2 - 1 ({}) to leave room for the summary and a tail; raise `max_size` or lower `keep_first`",
                (max_size / 2).saturating_sub(1)
            )));
        }
        let minimum_progress = p.take_f64("minimum_progress")?.unwrap_or(0.1);
        if minimum_progress >= 1.0 {
            return Err(ParamError::OutOfRange {
                key: "minimum_progress".into(),
                rule: format!(
                    "is a fraction of the events (between 0 and 1), not {minimum_progress}"
                ),
            });
        }
        Ok(LlmSummarizing {
            max_size,
            keep_first,
            minimum_progress,
            max_tokens: p.take_u64("max_tokens")?,
            max_input_tokens: p.take_u64("max_input_tokens")?.unwrap_or(window),
            name,
            prefix_tokens: 0,
        })
    }

    /// The messages `[start, end)` a condensation of `messages` forgets, or `None` when it
    /// holds `max_size` events or fewer (and `max_tokens` tokens or fewer, with the prefix), or
    /// no condensation would make enough progress. When both limits are passed the stricter
    /// tail is kept, as OpenHands keeps it.
    pub(crate) fn forgotten(&self, messages: &[Arc<Message>]) -> Option<(usize, usize)> {
        let total = 1 + messages::total_events(messages);
        let start_at = messages::message_from_event(messages, self.keep_first);
        let mut tail = (total > self.max_size).then(|| self.max_size / 2 - self.keep_first - 1);
        let tokens = self.prefix_tokens + messages.iter().map(|m| u64::from(m.tokens)).sum::<u64>();
        let limit = self
            .max_tokens
            .map_or(self.max_input_tokens, |t| t.min(self.max_input_tokens));
        if tokens > limit {
            // The shortest run of messages after the head whose tokens exceed the excess over
            // half the limit goes; the events after it stay.
            let excess = tokens - limit / 2;
            let mut gone = 0;
            let mut k = messages.len();
            for (i, m) in messages.iter().enumerate().skip(start_at) {
                gone += u64::from(m.tokens);
                if gone > excess {
                    k = i + 1;
                    break;
                }
            }
            let kept = messages::total_events(&messages[k..]);
            tail = Some(tail.map_or(kept, |t| t.min(kept)));
        }
        let tail = tail?;
        let cuts = messages::cuts(messages);
        let start = messages::next_cut(&cuts, start_at);
        let end = messages::next_cut(&cuts, messages::message_from_event(messages, total - tail));
        if end <= start {
            return None;
        }
        let n = messages::total_events(&messages[start..end]);
        (n as f64 >= total as f64 * self.minimum_progress).then_some((start, end))
    }
}

impl Policy for LlmSummarizing {
    fn name(&self) -> String {
        let mut s = format!(
            "{}:keep_first={},max_size={},minimum_progress={}",
            self.name, self.keep_first, self.max_size, self.minimum_progress
        );
        if let Some(t) = self.max_tokens {
            s.push_str(&format!(",max_tokens={t}"));
        }
        s
    }

    fn window(&self) -> Option<u64> {
        Some(self.max_input_tokens)
    }

    fn plan(&mut self, ctx: &Context, prefix_tokens: u32) -> Plan {
        self.prefix_tokens = u64::from(prefix_tokens);
        if self.forgotten(&ctx.messages).is_some() {
            return Plan::Compact { emergency: false };
        }
        Plan::Send {
            messages: ctx.messages.clone(),
            action: None,
        }
    }

    fn compaction_input(&mut self, ctx: &Context) -> Vec<Arc<Message>> {
        match self.forgotten(&ctx.messages) {
            Some((_, end)) => ctx.messages[..end].to_vec(),
            None => ctx.messages.clone(),
        }
    }

    fn apply_compaction(&mut self, ctx: &mut Context, summary: Arc<Message>) {
        match self.forgotten(&ctx.messages) {
            Some((start, end)) => ctx.splice(start, end, summary),
            // Only in a pipeline whose earlier steps changed what this step saw: the
            // compaction then is `compact`'s.
            None => ctx.compact(summary),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::testing::{condense, context, output, policy, shape, Step::*};
    use harness_core::{MessageKind, ToolCall};
    use serde_json::json;

    /// Every tool result has its call in `messages` and every call its result.
    fn paired(messages: &[Arc<Message>]) -> bool {
        let uses = messages::tool_uses(messages);
        let results = messages.iter().filter(|m| m.tool_call_id.is_some()).count();
        uses.iter().all(|u| u.result.is_some()) && results == uses.len()
    }

    fn twelve_events() -> Context {
        // Events: 0 system, 1 user, 2-3 two calls, 4-5 their results, 6 call, 7 result,
        // 8 closing, 9 user, 10 call, 11 result: 12 in all.
        context(vec![
            User("u1"),
            Calls(vec![("read_file", output(10)), ("grep", output(10))]),
            Calls(vec![("read_file", output(10))]),
            Close("done"),
            User("u2"),
            Calls(vec![("shell", output(10))]),
        ])
    }

    #[test]
    fn forgets_the_older_half_after_keep_first_and_summarises_it() {
        let mut c = twelve_events();
        let mut p = policy("llm-summarizing:max_size=12");
        assert_eq!(shape(&c.messages), "uarrarcuar");
        assert!(matches!(p.plan(&c, 0), Plan::Send { .. }), "12 is not more");
        // max_size=10: keep events 0-1 (keep_first=2), a summary, and a tail of 10/2-2-1 = 2
        // events (10-11); events 2-9 are forgotten.
        let mut p = policy("llm-summarizing:max_size=10");
        let before = c.messages.clone();
        let input = condense(p.as_mut(), &mut c);
        assert_eq!(shape(&c.messages), "usar");
        assert_eq!(
            c.messages[0].id, before[0].id,
            "keep_first: the task's message"
        );
        assert_eq!(c.messages[1].text, "SUMMARY");
        assert_eq!(c.messages[2].id, before[8].id, "the tail is the last batch");
        // The summary is written from the head and the forgotten events, not the tail.
        assert_eq!(
            input.iter().map(|m| m.id).collect::<Vec<_>>(),
            before[..8].iter().map(|m| m.id).collect::<Vec<_>>()
        );
        // Half of max_size now: nothing more to do until it grows past max_size again.
        assert_eq!(1 + messages::total_events(&c.messages), 5);
        assert!(matches!(p.plan(&c, 0), Plan::Send { .. }));
    }

    /// A user message, a three-call batch, two one-call batches; `times` over.
    fn batches(times: usize) -> Context {
        let mut steps = Vec::new();
        for _ in 0..times {
            steps.push(User("u"));
            steps.push(Calls(vec![
                ("read_file", output(10)),
                ("grep", output(10)),
                ("read_file", output(10)),
            ]));
            steps.push(Calls(vec![("shell", output(10))]));
            steps.push(Calls(vec![("shell", output(10))]));
        }
        context(steps)
    }

    #[test]
    fn cuts_only_between_tool_batches() {
        // Events: 0 system, 1 user, 2-4 three calls, 5-7 their results, 8 call, 9 result,
        // 10 call, 11 result.
        let mut ctx = batches(1);
        // keep_first=1, max_size=10: a tail of 3 events would start at event 9, the result of
        // the call at event 8; the cut moves past that result to event 10.
        let mut p = policy("llm-summarizing:max_size=10,keep_first=1");
        condense(p.as_mut(), &mut ctx);
        assert_eq!(shape(&ctx.messages), "sar");
        assert!(paired(&ctx.messages));
        // Twice over: 23 events, the second batch of three calls at 13-15, its results at
        // 16-18. max_size=16, keep_first=2: a tail of 5 events would start at event 18, the
        // batch's last result; the cut moves past it, to the call at 19.
        let mut ctx = batches(2);
        assert_eq!(1 + messages::total_events(&ctx.messages), 23);
        let mut p = policy("llm-summarizing:max_size=16,keep_first=2");
        condense(p.as_mut(), &mut ctx);
        assert_eq!(shape(&ctx.messages), "usarar");
        assert!(paired(&ctx.messages));
        // At every size the forgotten range's ends are cuts.
        let ctx = batches(2);
        let cuts = messages::cuts(&ctx.messages);
        let mut made = 0;
        for max_size in 6..23 {
            let text = format!("llm-summarizing:max_size={max_size},keep_first=1");
            let p = LlmSummarizing::from_params(
                &mut crate::parse_policy(&text).unwrap().params(),
                200_000,
                NAME,
                240,
                2,
            )
            .unwrap();
            if let Some((s, e)) = p.forgotten(&ctx.messages) {
                assert!(cuts[s] && cuts[e], "{text}: {s}..{e}");
                made += 1;
            }
        }
        assert!(made > 10, "{made}");
    }

    #[test]
    fn keep_first_stays_and_each_summary_is_written_over_the_last() {
        let mut c = twelve_events();
        let mut p = policy("llm-summarizing:max_size=10");
        condense(p.as_mut(), &mut c);
        let first = c.messages[0].id;
        // Grow past max_size again: three more one-call batches.
        for n in 0..3 {
            let call = ToolCall {
                id: format!("d{n}"),
                name: "read_file".into(),
                args: json!({}),
            };
            c.push(Message::assistant(2, "", vec![call.clone()]));
            c.push(Message::tool_result(2, &call, output(10), false));
        }
        assert_eq!(1 + messages::total_events(&c.messages), 11);
        let input = condense(p.as_mut(), &mut c);
        assert!(
            input.iter().any(|m| m.text == "SUMMARY"),
            "the previous summary is summarised again"
        );
        assert_eq!(
            c.messages[0].id, first,
            "the first events are never forgotten"
        );
        let summaries = c
            .messages
            .iter()
            .filter(|m| m.kind == MessageKind::Summary)
            .count();
        assert_eq!(summaries, 1, "{}", shape(&c.messages));
        assert_eq!(shape(&c.messages), "usar");
    }

    #[test]
    fn max_tokens_condenses_down_to_half_of_it() {
        // Ten one-call batches of about 100 tokens each after the task's message: 22 events,
        // under max_size.
        let mut steps = vec![User("u1")];
        for _ in 0..10 {
            steps.push(Calls(vec![("read_file", output(100))]));
        }
        let mut c = context(steps);
        let tokens = c.tokens();
        let mut p = policy("llm-summarizing");
        assert!(matches!(p.plan(&c, 0), Plan::Send { .. }), "no max_tokens");
        let limit = tokens * 8 / 10;
        let mut p = policy(&format!("llm-summarizing:max_tokens={}", tokens + 50));
        assert!(matches!(p.plan(&c, 50), Plan::Send { .. }), "at the limit");
        let mut p = policy(&format!("llm-summarizing:max_tokens={limit}"));
        condense(p.as_mut(), &mut c);
        let after = c.tokens();
        assert!(
            after <= limit / 2 + 150,
            "{after} of {tokens}, limit {limit}"
        );
        assert!(after > limit / 4, "only what is needed goes: {after}");
        assert_eq!(&shape(&c.messages)[..2], "us", "the head stays");
        assert!(paired(&c.messages));
        assert!(matches!(p.plan(&c, 0), Plan::Send { .. }));
    }

    #[test]
    fn too_little_progress_is_no_condensation() {
        let c = twelve_events();
        // 12 events over max_size=10; forgetting events 2-9 (8 of 12) is less than 0.7.
        let p = LlmSummarizing::from_params(
            &mut crate::parse_policy("llm-summarizing:max_size=10,minimum_progress=0.7")
                .unwrap()
                .params(),
            200_000,
            NAME,
            240,
            2,
        )
        .unwrap();
        assert_eq!(p.forgotten(&c.messages), None);
        let p = LlmSummarizing::from_params(
            &mut crate::parse_policy("llm-summarizing:max_size=10,minimum_progress=0.6")
                .unwrap()
                .params(),
            200_000,
            NAME,
            240,
            2,
        )
        .unwrap();
        assert_eq!(p.forgotten(&c.messages), Some((1, 8)));
    }
}
