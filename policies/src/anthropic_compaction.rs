//! `anthropic-compaction`: Anthropic's server-side compaction, the `compact_20260112` strategy
//! of the Messages API's `context_management.edits`, and its on-demand form.
//!
//! - **Threshold** (the default, `compaction=none`): when a request's input tokens (the system
//!   prompt and tools counted) exceed `trigger` (150,000 by default, at least 50,000), the API
//!   summarises the conversation and writes a compaction block; on later requests every message
//!   before the block is dropped, so the context becomes the summary alone (the prompt of the
//!   turn in progress included in what it replaced). With `pause_after_compaction` the API
//!   stops after the block and the client continues: the docs' use of the pause is to add
//!   messages after the block before continuing, and foldbench's client adds the prompt of the
//!   turn in progress.
//! - **On demand** (`compaction=summarize`, the request parameter `compaction: {type:
//!   summarize}`): the application chooses when; foldbench's application asks at the first
//!   request of a turn whose history before the prompt passes `trigger`. The summarised
//!   messages are the history before the prompt; the block goes first and the turn's prompt
//!   follows it.
//! - **`instructions`**: the API's custom summarisation prompt, which replaces its default one;
//!   foldbench sends its compaction prompt followed by the instructions (the default prompt of
//!   the API is not published as text to reproduce).
//!
//! The summary is asked for as `compact` asks it (the sim writes its mechanical summary, a real
//! model its own) and sits where the block would: first, as a summary message.

use std::sync::Arc;

use harness_core::policy::{Plan, Policy};
use harness_core::Context;
use harness_core::Message;

use crate::compact::compactable;
use crate::error::ParamError;
use crate::params::Params;
use crate::registry::Entry;

/// The policy's name.
pub(crate) const NAME: &str = "anthropic-compaction";

/// The API's default trigger, in input tokens.
pub(crate) const DEFAULT_TRIGGER: u64 = 150_000;

/// The smallest trigger the API accepts.
pub(crate) const MIN_TRIGGER: u64 = 50_000;

/// Anthropic's server-side compaction.
#[derive(Debug)]
pub(crate) struct AnthropicCompaction {
    trigger: u64,
    pause: bool,
    on_demand: bool,
    instructions: Option<String>,
}

/// The registry entry.
pub(crate) fn entry() -> Entry {
    Entry::new(NAME, |p, _| Ok(Box::new(AnthropicCompaction::from_params(p)?)))
        .summary("Anthropic's server-side compaction: past the trigger, a summary replaces everything before it")
        .source("Anthropic Messages API compaction, `compact_20260112` (and on-demand `compaction: {type: summarize}`)")
        .param("trigger", "150000", "input tokens", "compact when a request's input exceeds it (at least 50000)")
        .param("pause_after_compaction", "false", "true|false", "stop after the compaction block: the client adds the turn's prompt after it")
        .param("instructions", "(none)", "text", "summarisation instructions (replace the API's default prompt; said after foldbench's)")
        .param("compaction", "none", "none|summarize", "summarize: on demand, asked by the client at a turn's first request past the trigger")
}

impl AnthropicCompaction {
    /// From the parameters of [`entry`].
    pub(crate) fn from_params(p: &mut Params) -> Result<AnthropicCompaction, ParamError> {
        let trigger = p.take_u64("trigger")?.unwrap_or(DEFAULT_TRIGGER);
        if trigger < MIN_TRIGGER {
            return Err(ParamError::OutOfRange {
                key: "trigger".into(),
                rule: format!("must be at least {MIN_TRIGGER} input tokens (the API's minimum), not {trigger}"),
            });
        }
        Ok(AnthropicCompaction {
            trigger,
            pause: p.take_bool("pause_after_compaction")?.unwrap_or(false),
            on_demand: p
                .take_choice("compaction", &["none", "summarize"])?
                .as_deref()
                == Some("summarize"),
            instructions: p.take_text("instructions"),
        })
    }

    /// Index of the turn's prompt when the next request is the turn's first (nothing after the
    /// prompt yet).
    fn turn_start(ctx: &Context) -> Option<usize> {
        let last = ctx.messages.len().checked_sub(1)?;
        let m = &ctx.messages[last];
        (m.is_human() && m.turn == ctx.turn).then_some(last)
    }
}

impl Policy for AnthropicCompaction {
    fn name(&self) -> String {
        let mut s = format!("{NAME}:trigger={}", self.trigger);
        if self.pause {
            s.push_str(",pause_after_compaction=true");
        }
        if self.on_demand {
            s.push_str(",compaction=summarize");
        }
        if let Some(i) = &self.instructions {
            s.push_str(&format!(",instructions={i}"));
        }
        s
    }

    fn plan(&mut self, ctx: &Context, prefix_tokens: u32) -> Plan {
        let unchanged = || Plan::Send {
            messages: ctx.messages.clone(),
            action: None,
        };
        if self.on_demand {
            let Some(at) = AnthropicCompaction::turn_start(ctx) else {
                return unchanged();
            };
            let before: u64 = ctx.messages[..at].iter().map(|m| u64::from(m.tokens)).sum();
            if at > 0 && u64::from(prefix_tokens) + before > self.trigger {
                return Plan::Compact { emergency: false };
            }
            return unchanged();
        }
        if u64::from(prefix_tokens) + ctx.tokens() > self.trigger && compactable(ctx) {
            return Plan::Compact { emergency: false };
        }
        unchanged()
    }

    fn compaction_instructions(&self) -> Option<String> {
        self.instructions.clone()
    }

    fn compaction_input(&mut self, ctx: &Context) -> Vec<Arc<Message>> {
        match (self.on_demand, AnthropicCompaction::turn_start(ctx)) {
            (true, Some(at)) => ctx.messages[..at].to_vec(),
            _ => ctx.messages.clone(),
        }
    }

    fn apply_compaction(&mut self, ctx: &mut Context, summary: Arc<Message>) {
        let prompt = ctx
            .messages
            .iter()
            .rev()
            .find(|m| m.is_human() && m.turn == ctx.turn)
            .cloned();
        ctx.messages = vec![summary];
        if self.on_demand || self.pause {
            ctx.messages.extend(prompt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::testing::{context, output, policy, shape, Step::*};

    #[test]
    fn the_block_replaces_everything_before_it_past_the_trigger() {
        let mut c = context(vec![
            User("u1"),
            Calls(vec![("read_file", output(400))]),
            Close("done"),
            User("u2"),
            Calls(vec![("shell", output(400))]),
        ]);
        let mut p = policy("anthropic-compaction");
        assert!(matches!(p.plan(&c, 0), Plan::Send { .. }), "under 150k");
        let mut p = policy("anthropic-compaction:trigger=50000");
        assert!(matches!(p.plan(&c, 0), Plan::Send { .. }));
        assert!(matches!(p.plan(&c, 50_000), Plan::Compact { .. }));
        let before = c.messages.clone();
        let mut c2 = c.clone();
        // The whole conversation is summarised, and only the summary stays.
        let mut q = policy("anthropic-compaction:trigger=50000");
        assert!(matches!(q.plan(&c, 50_000), Plan::Compact { .. }));
        let input = q.compaction_input(&c);
        assert_eq!(input.len(), before.len());
        q.apply_compaction(
            &mut c,
            Message::host(2, "SUMMARY", harness_core::MessageKind::Summary),
        );
        assert_eq!(shape(&c.messages), "s");
        // Paused: the client puts the turn's prompt after the block.
        let mut r = policy("anthropic-compaction:trigger=50000,pause_after_compaction=true");
        r.apply_compaction(
            &mut c2,
            Message::host(2, "SUMMARY", harness_core::MessageKind::Summary),
        );
        assert_eq!(shape(&c2.messages), "su");
        assert_eq!(c2.messages[1].text, "u2");
        let e = crate::registry::current()
            .check("anthropic-compaction:trigger=40000")
            .unwrap_err();
        assert!(e.to_string().contains("at least 50000"), "{e}");
    }

    #[test]
    fn on_demand_summarises_the_history_before_a_new_prompt() {
        let mut c = context(vec![
            User("u1"),
            Calls(vec![("read_file", output(400))]),
            Close("done"),
            User("u2"),
        ]);
        let mut p = policy("anthropic-compaction:trigger=50000,compaction=summarize");
        assert!(matches!(p.plan(&c, 50_000), Plan::Compact { .. }));
        let input = p.compaction_input(&c);
        assert_eq!(shape(&input), "uarc", "the history before the prompt");
        p.apply_compaction(
            &mut c,
            Message::host(2, "SUMMARY", harness_core::MessageKind::Summary),
        );
        assert_eq!(shape(&c.messages), "su");
        // Within a turn, on demand waits for the next prompt.
        let c = context(vec![User("u1"), Calls(vec![("read_file", output(400))])]);
        assert!(matches!(p.plan(&c, 60_000), Plan::Send { .. }));
    }
}
