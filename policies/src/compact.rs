//! `compact`: when a request would exceed `threshold × window`, the runner asks the model for a
//! summary and the context becomes the summary and the current user message.

use harness_core::policy::{Plan, Policy};
use harness_core::Context;

use crate::error::ParamError;
use crate::params::Params;
use crate::registry::Entry;

/// The registry entry.
pub(crate) fn entry() -> Entry {
    Entry::new("compact", |p, b| {
        Ok(Box::new(Compact::from_params(p, b.window)?))
    })
    .summary("a model-written summary of everything when the request nears the window")
    .source("foldbench (the essay's compact)")
    .param(
        "threshold",
        "0.9",
        "fraction of the window",
        "compact when the request would exceed it",
    )
    .param("window", "(the model's)", "tokens", "the context window")
}

/// Compaction on the water level.
#[derive(Debug)]
pub(crate) struct Compact {
    threshold: f64,
    window: u64,
}

impl Compact {
    /// From `threshold` (default 0.9) and `window` (default: the model's).
    pub(crate) fn from_params(p: &mut Params, window: u64) -> Result<Compact, ParamError> {
        let threshold = p.take_f64("threshold")?.unwrap_or(0.9);
        if threshold > 1.0 {
            return Err(ParamError::OutOfRange {
                key: "threshold".into(),
                rule: format!("is a fraction of the window (0 to 1), not {threshold}"),
            });
        }
        Ok(Compact {
            threshold,
            window: p.take_u64("window")?.unwrap_or(window),
        })
    }
}

/// Whether a context is worth compacting: more than a summary and the current user message.
pub(crate) fn compactable(ctx: &Context) -> bool {
    ctx.messages.len() > 2
}

impl Policy for Compact {
    fn name(&self) -> String {
        format!(
            "compact:threshold={},window={}",
            self.threshold, self.window
        )
    }

    fn plan(&mut self, ctx: &Context, prefix_tokens: u32) -> Plan {
        let tokens = u64::from(prefix_tokens) + ctx.tokens();
        if tokens as f64 > self.threshold * self.window as f64 && compactable(ctx) {
            return Plan::Compact { emergency: false };
        }
        Plan::Send {
            messages: ctx.messages.clone(),
            action: None,
        }
    }

    fn window(&self) -> Option<u64> {
        Some(self.window)
    }
}
