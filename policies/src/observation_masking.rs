//! `observation-masking`: OpenHands' `ObservationMaskingCondenser`.
//!
//! Every observation (a tool result, a summary) outside the `attention_window` most recent
//! events is replaced by `<MASKED>`, and nothing is remembered between requests. Events are
//! counted as OpenHands counts them (see [`crate::openhands::events`]), the system prompt being
//! event 0.
//!
//! With `view=openhands` (the default) the request is what OpenHands sends for that view
//! ([`crate::openhands::render`]): a masked observation answers no call, so it becomes a user
//! message `<MASKED>`, and the assistant message that made the call is not sent, nor the results
//! of its other calls (even those inside the window). With `view=foldbench` the masked result
//! stays a tool result answering its call and everything else is sent as it is.

use harness_core::policy::{Plan, Policy};
use harness_core::Context;

use crate::error::ParamError;
use crate::messages::{self, Memo};
use crate::openhands::{self, Event};
use crate::params::Params;
use crate::registry::Entry;

/// The policy's name.
pub(crate) const NAME: &str = "observation-masking";

/// What a masked observation says.
pub(crate) const MASK: &str = openhands::MASK;

/// The words of the `view` parameter of OpenHands' condensers.
pub(crate) const VIEWS: [&str; 2] = ["openhands", "foldbench"];

/// OpenHands' observation masking.
#[derive(Debug)]
pub(crate) struct ObservationMasking {
    window: usize,
    openhands: bool,
    /// Rewritten messages (a cache rebuilt from the context, not state: the policy keeps
    /// nothing between requests that the context does not give back, [`Policy::saved_state`]).
    memo: Memo,
}

/// The registry entry.
pub(crate) fn entry() -> Entry {
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
    .param(
        "view",
        "openhands",
        "openhands|foldbench",
        "openhands: the request OpenHands makes of the view (a masked observation is a user message, its call's message goes); foldbench: masked results stay tool results",
    )
}

impl ObservationMasking {
    /// From `attention_window`.
    pub(crate) fn from_params(p: &mut Params) -> Result<ObservationMasking, ParamError> {
        Ok(ObservationMasking {
            window: p.take_count("attention_window")?.unwrap_or(100),
            openhands: p.take_choice("view", &VIEWS)?.as_deref() != Some("foldbench"),
            memo: Memo::default(),
        })
    }
}

impl Policy for ObservationMasking {
    fn name(&self) -> String {
        let view = if self.openhands {
            ""
        } else {
            ",view=foldbench"
        };
        format!("{NAME}:attention_window={}{view}", self.window)
    }

    fn plan(&mut self, ctx: &Context, _prefix_tokens: u32) -> Plan {
        if self.openhands {
            let mut ev = openhands::events(&ctx.messages);
            // The view is the system prompt and the events: index i of `ev` is view index i + 1.
            let first_kept = (ev.len() + 1).saturating_sub(self.window);
            let mut masked = 0;
            for (i, e) in ev.iter_mut().enumerate() {
                if i + 1 < first_kept && e.is_observation() {
                    *e = Event::Masked(e.message());
                    masked += 1;
                }
            }
            let messages = openhands::render(&ctx.messages, &ev, &mut self.memo);
            return Plan::Send {
                messages,
                action: (masked > 0).then(|| format!("masked {masked} observations")),
            };
        }
        let total = 1 + messages::total_events(&ctx.messages);
        let first_kept = total.saturating_sub(self.window);
        let mut out = Vec::with_capacity(ctx.messages.len());
        let mut at = 1; // the system prompt is event 0
        let mut masked = 0;
        for m in &ctx.messages {
            if at < first_kept && messages::is_result(m) {
                out.push(self.memo.cleared(m, MASK));
                masked += 1;
            } else {
                out.push(std::sync::Arc::clone(m));
            }
            at += messages::events(m);
        }
        Plan::Send {
            messages: out,
            action: (masked > 0).then(|| format!("masked {masked} observations")),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::messages::testing::{context, output, sent, shape, Step::*};

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
            ("observation-masking:view=foldbench", "uarrarcuar"),
            (
                "observation-masking:view=foldbench,attention_window=8",
                "uarrarcuar",
            ), // events 4-11 stay
            (
                "observation-masking:view=foldbench,attention_window=7",
                "uaxrarcuar",
            ), // events 5-11
            (
                "observation-masking:view=foldbench,attention_window=5",
                "uaxxarcuar",
            ), // events 7-11
            (
                "observation-masking:view=foldbench,attention_window=4",
                "uaxxaxcuar",
            ), // events 8-11
            (
                "observation-masking:view=foldbench,attention_window=1",
                "uaxxaxcuar",
            ), // event 11 only
        ];
        for (spec, want) in cases {
            let mut p = crate::build(&crate::parse_policy(spec).unwrap(), 200_000).unwrap();
            let m = sent(p.plan(&c, 0));
            assert_eq!(shape(&m), want, "{spec}");
            if let Some(x) = m
                .iter()
                .find(|m| m.kind == harness_core::MessageKind::Cleared)
            {
                assert_eq!(x.text, super::MASK);
            }
        }
    }
}
