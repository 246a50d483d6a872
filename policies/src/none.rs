//! `none`: the request is every message, as appended.

use harness_core::policy::{Plan, Policy};
use harness_core::Context;

use crate::registry::Entry;

/// The registry entry.
pub(crate) fn entry() -> Entry {
    Entry::new("none", |p, b| {
        Ok(Box::new(NonePolicy::new(
            p.take_u64("window")?.unwrap_or(b.window),
        )))
    })
    .summary("every message, as appended: the baseline")
    .source("foldbench")
    .param(
        "window",
        "(the model's)",
        "tokens",
        "recorded with the arm (none never acts on it)",
    )
}

/// The policy that does nothing.
#[derive(Debug)]
pub struct NonePolicy {
    window: u64,
}

impl NonePolicy {
    /// A `none` policy (the window is only recorded).
    pub fn new(window: u64) -> NonePolicy {
        NonePolicy { window }
    }
}

impl Policy for NonePolicy {
    fn name(&self) -> String {
        "none".into()
    }

    fn plan(&mut self, ctx: &Context, _prefix_tokens: u32) -> Plan {
        Plan::Send {
            messages: ctx.messages.clone(),
            action: None,
        }
    }

    fn window(&self) -> Option<u64> {
        Some(self.window)
    }
}
