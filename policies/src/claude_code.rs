//! `claude-code`: Claude Code's context management as its published (unofficial) descriptions
//! give it — Anthropic does not document the internals.
//!
//! - **Microcompaction**: when more than `micro_trigger` results of the tools it clears (reads,
//!   shell, searches, edits, writes) are in the context, all but the `micro_keep` most recent
//!   become `[Old tool result content cleared]`, for good. Claude Code deletes them through the
//!   API's cache editing, which keeps the cached prefix; foldbench's cache simulation counts the
//!   edit as a rewrite of what follows, so its cache figures for this arm are pessimistic.
//! - **Auto-compaction** at the effective window (the window less `output_reserve` kept for the
//!   summary) less `autocompact_buffer`: 200,000 − 20,000 − 13,000 = 167,000 tokens, 83.5% of a
//!   200k window; `autocompact_pct` (Claude Code's `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`) lowers it to
//!   that percentage of the effective window. The context becomes the summary and the current
//!   user message (Claude Code also re-reads recent files into it; foldbench does not).

use std::sync::Arc;

use harness_core::policy::{Plan, Policy};
use harness_core::Context;

use crate::compact::compactable;
use crate::error::ParamError;
use crate::messages::{self, Marks, Memo};
use crate::params::Params;
use crate::registry::Entry;

/// The policy's name.
pub(crate) const NAME: &str = "claude-code";

/// What a microcompacted result says.
pub const CLEARED: &str = "[Old tool result content cleared]";

/// The tools whose results microcompaction clears besides foldbench's workspace tools (which do
/// the same jobs; [`is_cleared`]): Claude Code's own (Read, Bash, Grep, Glob, WebSearch,
/// WebFetch, Edit, Write) and the names recorded Codex sessions give them.
pub(crate) const CLEARED_TOOLS: [&str; 11] = [
    "Read",
    "Bash",
    "Grep",
    "Glob",
    "WebSearch",
    "WebFetch",
    "Edit",
    "Write",
    "MultiEdit",
    "exec_command",
    "apply_patch",
];

/// Whether microcompaction clears the results of the tool `name`: one of [`CLEARED_TOOLS`] or a
/// workspace tool ([`harness_core::tools::TOOLS`]).
pub(crate) fn is_cleared(name: &str) -> bool {
    CLEARED_TOOLS.contains(&name) || harness_core::tools::find(name).is_some()
}

/// Claude Code's microcompaction and auto-compaction.
#[derive(Debug)]
pub(crate) struct ClaudeCode {
    window: u64,
    output_reserve: u64,
    buffer: u64,
    pct: Option<f64>,
    micro_keep: usize,
    micro_trigger: usize,
    /// The results microcompaction cleared, for good: state ([`Policy::saved_state`]), since a
    /// count of the context's results cannot tell which were cleared when.
    cleared: Marks<()>,
    /// The cleared forms (a cache rebuilt from the context, not state).
    memo: Memo,
}

/// What `claude-code` remembers between requests ([`Policy::saved_state`]): the results it
/// cleared, by fingerprint.
#[derive(serde::Serialize, serde::Deserialize)]
struct ClaudeCodeState {
    cleared: Vec<String>,
}

/// The registry entry.
pub(crate) fn entry() -> Entry {
    Entry::new(NAME, |p, b| {
        Ok(Box::new(ClaudeCode::from_params(p, b.window)?))
    })
    .summary(
        "Claude Code: old tool results cleared (microcompaction), a summary at 83.5% of the window",
    )
    .source("Claude Code auto-compact and microcompact (published descriptions, unofficial)")
    .param("window", "(the model's)", "tokens", "the context window")
    .param(
        "output_reserve",
        "20000",
        "tokens",
        "kept free for the summary: the effective window is the window less this",
    )
    .param(
        "autocompact_buffer",
        "13000",
        "tokens",
        "auto-compaction fires this far below the effective window",
    )
    .param(
        "autocompact_pct",
        "(none)",
        "percent",
        "fire at this share of the effective window instead, when lower",
    )
    .param(
        "micro_keep",
        "5",
        "tool results",
        "the most recent results microcompaction keeps",
    )
    .param(
        "micro_trigger",
        "12",
        "tool results",
        "microcompaction runs when more are in the context",
    )
}

impl ClaudeCode {
    /// From the parameters of [`entry`].
    pub(crate) fn from_params(p: &mut Params, window: u64) -> Result<ClaudeCode, ParamError> {
        let pct = p.take_f64("autocompact_pct")?;
        if pct.is_some_and(|x| x > 100.0) {
            return Err(ParamError::OutOfRange {
                key: "autocompact_pct".into(),
                rule: "is a percentage (0 to 100)".into(),
            });
        }
        let micro_keep = usize::try_from(p.take_u64("micro_keep")?.unwrap_or(5)).map_err(|_| {
            ParamError::TooLarge {
                key: "micro_keep".into(),
            }
        })?;
        let micro_trigger =
            usize::try_from(p.take_u64("micro_trigger")?.unwrap_or(12)).map_err(|_| {
                ParamError::TooLarge {
                    key: "micro_trigger".into(),
                }
            })?;
        if micro_trigger < micro_keep {
            return Err(ParamError::Conflict(format!(
                "`micro_trigger` ({micro_trigger}) must be at least `micro_keep` ({micro_keep})"
            )));
        }
        Ok(ClaudeCode {
            window: p.take_u64("window")?.unwrap_or(window),
            output_reserve: p.take_u64("output_reserve")?.unwrap_or(20_000),
            buffer: p.take_u64("autocompact_buffer")?.unwrap_or(13_000),
            pct,
            micro_keep,
            micro_trigger,
            cleared: Marks::default(),
            memo: Memo::default(),
        })
    }

    /// The request size at which auto-compaction fires.
    pub(crate) fn threshold(&self) -> u64 {
        let effective = self.window.saturating_sub(self.output_reserve);
        let threshold = effective.saturating_sub(self.buffer);
        match self.pct {
            Some(pct) => threshold.min((effective as f64 * pct / 100.0) as u64),
            None => threshold,
        }
    }

    /// The context with microcompaction applied, and how many results it cleared just now.
    fn microcompacted(&mut self, ctx: &Context) -> (Vec<Arc<harness_core::Message>>, usize) {
        self.cleared.resolve(&ctx.messages);
        let visible: Vec<&Arc<harness_core::Message>> = ctx
            .messages
            .iter()
            .filter(|m| {
                messages::is_result(m)
                    && !self.cleared.contains(m.id)
                    && m.tool_name.as_deref().is_some_and(is_cleared)
            })
            .collect();
        let mut now = 0;
        if visible.len() > self.micro_trigger {
            let old = &visible[..visible.len() - self.micro_keep];
            now = old.len();
            for m in old {
                self.cleared.insert(m, ());
            }
        }
        let out = ctx
            .messages
            .iter()
            .map(|m| {
                if self.cleared.contains(m.id) {
                    self.memo.cleared(m, CLEARED)
                } else {
                    Arc::clone(m)
                }
            })
            .collect();
        (out, now)
    }
}

impl Policy for ClaudeCode {
    fn saved_state(&self) -> Option<serde_json::Value> {
        let cleared = self.cleared.saved().into_iter().map(|(k, ())| k).collect();
        serde_json::to_value(ClaudeCodeState { cleared }).ok()
    }

    fn restore_state(&mut self, state: &serde_json::Value) {
        if let Ok(s) = serde_json::from_value::<ClaudeCodeState>(state.clone()) {
            self.cleared
                .restore(s.cleared.into_iter().map(|k| (k, ())).collect());
        }
    }

    fn name(&self) -> String {
        let mut s = format!(
            "{NAME}:window={},micro_keep={},micro_trigger={}",
            self.window, self.micro_keep, self.micro_trigger
        );
        if let Some(p) = self.pct {
            s.push_str(&format!(",autocompact_pct={p}"));
        }
        s
    }

    fn plan(&mut self, ctx: &Context, prefix_tokens: u32) -> Plan {
        let (messages, now) = self.microcompacted(ctx);
        let tokens =
            u64::from(prefix_tokens) + messages.iter().map(|m| u64::from(m.tokens)).sum::<u64>();
        if tokens >= self.threshold() && compactable(ctx) {
            return Plan::Compact { emergency: false };
        }
        Plan::Send {
            messages,
            action: (now > 0).then(|| format!("microcompacted {now} tool results")),
        }
    }

    fn window(&self) -> Option<u64> {
        Some(self.window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::testing::{
        context, count, output, same_after_restores, sent, shape, Step::*,
    };

    fn policy(spec: &str) -> Box<dyn Policy> {
        crate::build(&crate::parse_policy(spec).unwrap(), 200_000).unwrap()
    }

    #[test]
    fn fires_at_83_5_percent_of_a_200k_window() {
        let p = ClaudeCode::from_params(
            &mut crate::parse_policy("claude-code").unwrap().params(),
            200_000,
        )
        .unwrap();
        assert_eq!(p.threshold(), 167_000);
        assert_eq!(167_000.0 / 200_000.0, 0.835);
        let p = ClaudeCode::from_params(
            &mut crate::parse_policy("claude-code:autocompact_pct=50")
                .unwrap()
                .params(),
            200_000,
        )
        .unwrap();
        assert_eq!(p.threshold(), 90_000, "half of the effective 180,000");
    }

    #[test]
    fn microcompaction_keeps_the_most_recent_results_for_good() {
        let c = context(vec![
            User("u1"),
            Calls(vec![("read_file", output(10)), ("grep", output(10))]),
            Calls(vec![("fold_unit", output(10))]), // not a tool microcompaction clears
            Calls(vec![("shell", output(10))]),
            Calls(vec![("read_file", output(10))]),
        ]);
        // Four cleared-tool results: over micro_trigger=3, all but micro_keep=2 are cleared.
        let mut p = policy("claude-code:micro_keep=2,micro_trigger=3");
        assert_eq!(shape(&sent(p.plan(&c, 0))), "uaxxararar");
        let m = sent(p.plan(&c, 0));
        assert_eq!(m[2].text, CLEARED);
        let mut p = policy("claude-code:micro_keep=2,micro_trigger=4");
        assert_eq!(
            shape(&sent(p.plan(&c, 0))),
            "uarrararar",
            "four is not more than four"
        );
    }

    #[test]
    fn cleared_results_stay_cleared_after_a_restore() {
        // micro_keep=1, micro_trigger=2: the third result clears two, the fourth and fifth
        // stay (two visible), the sixth clears two more. A policy that started again would
        // count every result as visible and clear all but the last at the fourth.
        let run = same_after_restores("claude-code:micro_keep=1,micro_trigger=2", || {
            let mut steps = vec![User("u1")];
            for _ in 0..6 {
                steps.push(Calls(vec![("shell", output(300))]));
            }
            steps.push(Close("done"));
            steps.push(User("u2"));
            steps.push(Calls(vec![("read_file", output(300))]));
            steps
        });
        assert_eq!(count(&run, "microcompacted 2 tool results"), 3, "{run:#?}");
    }

    #[test]
    fn compacts_at_the_threshold() {
        let c = context(vec![
            User("u1"),
            Calls(vec![("read_file", output(400))]),
            User("u2"),
        ]);
        let t = c.tokens() + 10; // the request: the context and a 10-token prefix
                                 // threshold = window - 20,000 - 13,000
        let mut p = policy(&format!("claude-code:window={}", t + 33_000));
        assert!(matches!(p.plan(&c, 10), Plan::Compact { .. }), "at {t}");
        let mut p = policy(&format!("claude-code:window={}", t + 33_001));
        assert!(matches!(p.plan(&c, 10), Plan::Send { .. }), "one below");
    }
}
