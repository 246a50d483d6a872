//! `last-turns`: a policy of your own, registered beside foldbench's and run by its commands.
//!
//! ```sh
//! cargo run -- run --tasks tasks/trim-rerun.yaml --policy none --policy last-turns:turns=1
//! cargo run -- replay tests/fixtures/real-sessions --policy 'last-turns:turns=[1,3]'
//! cargo run -- policies last-turns
//! ```

use std::sync::Arc;

use foldbench::harness_core::Context;
use foldbench::harness_core::Message;
use foldbench::harness_core::policy::{Plan, Policy};
use foldbench::policies::registry::{Entry, Registry};
use foldbench::policies::PolicyError;

/// Sends the first user message and the last `turns` turns whole; older turns are left out.
struct LastTurns {
    turns: u32,
}

impl Policy for LastTurns {
    fn name(&self) -> String {
        format!("last-turns:turns={}", self.turns)
    }

    fn plan(&mut self, ctx: &Context, _prefix_tokens: u32) -> Plan {
        let oldest = ctx.turn.saturating_sub(self.turns.saturating_sub(1));
        let first_user = ctx.messages.iter().position(|m| m.is_human());
        let kept: Vec<Arc<Message>> = ctx
            .messages
            .iter()
            .enumerate()
            .filter(|(i, m)| m.turn >= oldest || Some(*i) == first_user)
            .map(|(_, m)| Arc::clone(m))
            .collect();
        let dropped = ctx.messages.len() - kept.len();
        Plan::Send {
            messages: kept,
            action: (dropped > 0).then(|| format!("left out {dropped} messages of old turns")),
        }
    }
}

fn main() -> std::process::ExitCode {
    let mut registry = Registry::builtin();
    let entry = Entry::new("last-turns", |params, _build| {
        // A parameter's own errors (`turns=x`) are foldbench's; a rule of this policy is said in
        // its own words: `PolicyError::Invalid`, or `.into()` from a `String` or a `&str`.
        let turns = params.take_u64("turns")?.unwrap_or(2);
        let turns = u32::try_from(turns)
            .map_err(|_| PolicyError::Invalid(format!("`turns` is too large: {turns}")))?;
        if turns == 0 {
            return Err("`turns` must be at least 1 (the turn in progress)".into());
        }
        Ok(Box::new(LastTurns { turns }) as Box<dyn Policy>)
    })
    .summary("the first request and the last turns, whole; older turns left out")
    .source("examples/embed-policy")
    .param("turns", "2", "turns", "the most recent turns sent, the current one included");
    if let Err(e) = registry.register(entry) {
        eprintln!("error: {e}");
        return std::process::ExitCode::FAILURE;
    }
    foldbench::main_with(registry)
}
