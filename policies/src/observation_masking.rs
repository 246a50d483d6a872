//! `observation-masking`: OpenHands' `ObservationMaskingCondenser`.
//!
//! Every observation (tool result) outside the `attention_window` most recent events is
//! replaced by `<MASKED>`; nothing else changes, and nothing is remembered between requests.
//! Events are counted as OpenHands counts them (see [`crate::view::events`]), the system prompt
//! being event 0.

use harness_core::context::Context;
use harness_core::policy::{Plan, Policy};

use crate::error::ParamError;
use crate::params::Params;
use crate::registry::Entry;
use crate::view::{self, Memo};

/// The policy's name.
pub const NAME: &str = "observation-masking";

/// What a masked observation says.
pub const MASK: &str = "<MASKED>";

/// OpenHands' observation masking.
#[derive(Debug)]
pub struct ObservationMasking {
    window: usize,
    memo: Memo,
}

/// The registry entry.
pub fn entry() -> Entry {
    Entry::new(NAME, |p, _| {
        Ok(Box::new(ObservationMasking::from_params(p)?))
    })
    .summary("OpenHands: tool results outside the most recent events replaced by <MASKED>")
    .source("OpenHands `ObservationMaskingCondenser`")
    .param(
        "attention_window",
        "100",
        "events",
        "the most recent events whose observations stay",
    )
}

impl ObservationMasking {
    /// From `attention_window`.
    pub fn from_params(p: &mut Params) -> Result<ObservationMasking, ParamError> {
        Ok(ObservationMasking {
            window: p.take_count("attention_window")?.unwrap_or(100),
            memo: Memo::default(),
        })
    }
}

impl Policy for ObservationMasking {
    fn name(&self) -> String {
        format!("{NAME}:attention_window={}", self.window)
    }

    fn plan(&mut self, ctx: &Context, _prefix_tokens: u32) -> Plan {
        let total = 1 + view::total_events(&ctx.messages);
        let first_kept = total.saturating_sub(self.window);
        let mut out = Vec::with_capacity(ctx.messages.len());
        let mut at = 1; // the system prompt is event 0
        let mut masked = 0;
        for m in &ctx.messages {
            if at < first_kept && view::is_result(m) {
                out.push(self.memo.cleared(m, MASK));
                masked += 1;
            } else {
                out.push(std::sync::Arc::clone(m));
            }
            at += view::events(m);
        }
        Plan::Send {
            messages: out,
            action: (masked > 0).then(|| format!("masked {masked} observations")),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::view::testing::{context, output, sent, shape, Step::*};

    #[test]
    fn masks_observations_before_the_attention_window() {
        // Events: 0 system, 1 user, 2-3 two calls, 4-5 their results, 6 call, 7 result,
        // 8 closing, 9 user, 10 call, 11 result.
        let c = context(vec![
            User("u1"),
            Calls(vec![("read_file", output(20)), ("grep", output(20))]),
            Calls(vec![("read_file", output(20))]),
            Close("done"),
            User("u2"),
            Calls(vec![("shell", output(20))]),
        ]);
        let cases = [
            ("observation-masking", "uarrarcuar"),
            ("observation-masking:attention_window=8", "uarrarcuar"), // events 4-11 stay
            ("observation-masking:attention_window=7", "uaxrarcuar"), // events 5-11
            ("observation-masking:attention_window=5", "uaxxarcuar"), // events 7-11
            ("observation-masking:attention_window=4", "uaxxaxcuar"), // events 8-11
            ("observation-masking:attention_window=1", "uaxxaxcuar"), // event 11 only
        ];
        for (spec, want) in cases {
            let mut p = crate::build(&crate::parse_policy(spec).unwrap(), 200_000).unwrap();
            let m = sent(p.plan(&c, 0));
            assert_eq!(shape(&m), want, "{spec}");
            if let Some(x) = m
                .iter()
                .find(|m| m.kind == harness_core::message::MessageKind::Cleared)
            {
                assert_eq!(x.text, super::MASK);
            }
        }
    }
}
