//! `amortized`: OpenHands' `AmortizedForgettingCondenser`.
//!
//! When the context passes `max_size` events, it is cut to half that: the first `keep_first`
//! events and the most recent ones stay, the events between are forgotten for good (later
//! requests never show them again), with no summary. Then it grows again until the next cut,
//! so the prompt cache is rebuilt once per cut rather than on every request. Events are counted
//! with the system prompt as event 0.
//!
//! With `view=openhands` (the default) the cut is OpenHands' (the first `keep_first` events of
//! the view and its last `max_size / 2 - keep_first`, wherever they fall) and the request is
//! what OpenHands sends for the events left ([`crate::openhands::render`]: the session's first
//! user message put back after the system prompt, responses whose calls or results were
//! forgotten not sent). With `view=foldbench` cuts fall between tool batches and nothing is put
//! back.

use std::sync::Arc;

use harness_core::policy::{Plan, Policy};
use harness_core::Context;
use harness_core::Message;

use crate::error::ParamError;
use crate::messages::{self, Marks, Memo};
use crate::observation_masking::VIEWS;
use crate::openhands::{self, Event};
use crate::params::Params;
use crate::recent;
use crate::registry::Entry;

/// The policy's name.
pub(crate) const NAME: &str = "amortized";

/// OpenHands' amortized forgetting.
#[derive(Debug)]
pub(crate) struct Amortized {
    max_size: usize,
    keep_first: usize,
    /// Messages forgotten (`view=foldbench`), for good: state ([`Policy::saved_state`]).
    forgotten: Marks<()>,
    openhands: bool,
    /// Events forgotten in OpenHands' view, for good: per message, the indexes of its calls
    /// forgotten (0 for a message that is not an action). State, as `forgotten` is.
    forgotten_events: Marks<Vec<usize>>,
    /// The messages as OpenHands renders them (a cache rebuilt from the context, not state).
    memo: Memo,
}

/// What `amortized` remembers between requests ([`Policy::saved_state`]): the messages and
/// events it forgot, by fingerprint.
#[derive(serde::Serialize, serde::Deserialize)]
struct AmortizedState {
    forgotten: Vec<String>,
    forgotten_events: Vec<(String, Vec<usize>)>,
}

/// The registry entry.
pub(crate) fn entry() -> Entry {
    Entry::new(NAME, |p, _| Ok(Box::new(Amortized::from_params(p)?)))
        .summary("OpenHands: past max_size events the older half is forgotten, with no summary")
        .source("OpenHands `AmortizedForgettingCondenser`")
        .param(
            "max_size",
            "100",
            "events",
            "the context is cut when it holds more",
        )
        .param(
            "keep_first",
            "1",
            "events",
            "events kept from the start (the system prompt is the first)",
        )
        .param(
            "view",
            "openhands",
            "openhands|foldbench",
            "openhands: OpenHands' cut and the request it makes of it (the first user message put back); foldbench: cuts between tool batches",
        )
}

impl Amortized {
    /// From `max_size` and `keep_first`.
    pub(crate) fn from_params(p: &mut Params) -> Result<Amortized, ParamError> {
        let max_size = p.take_count("max_size")?.unwrap_or(100);
        let keep_first = usize::try_from(p.take_u64("keep_first")?.unwrap_or(1)).map_err(|_| {
            ParamError::TooLarge {
                key: "keep_first".into(),
            }
        })?;
        if max_size < 2 || keep_first >= max_size / 2 {
            return Err(ParamError::Conflict(format!(
                "`keep_first` ({keep_first}) must be less than half of `max_size` ({max_size})"
            )));
        }
        Ok(Amortized {
            max_size,
            keep_first,
            forgotten: Marks::default(),
            openhands: p.take_choice("view", &VIEWS)?.as_deref() != Some("foldbench"),
            forgotten_events: Marks::default(),
            memo: Memo::default(),
        })
    }
}

impl Amortized {
    /// OpenHands' forgetting and the request it makes of the events left.
    fn plan_openhands(&mut self, ctx: &Context) -> Plan {
        self.forgotten_events.resolve(&ctx.messages);
        let key = |e: Event| match e {
            Event::Action(i, k) => (i, k),
            other => (other.message(), 0),
        };
        let mut ev: Vec<Event> = openhands::events(&ctx.messages)
            .into_iter()
            .filter(|&e| {
                let (i, k) = key(e);
                !self
                    .forgotten_events
                    .get(ctx.messages[i].id)
                    .is_some_and(|ks| ks.contains(&k))
            })
            .collect();
        let mut action = None;
        // The view is the system prompt and `ev`.
        if ev.len() + 1 > self.max_size {
            let target = self.max_size / 2;
            let head = self.keep_first.min(ev.len() + 1);
            let tail = target.saturating_sub(head);
            let start = head.saturating_sub(1);
            let end = ev.len().saturating_sub(tail).max(start);
            let gone: Vec<Event> = ev.drain(start..end).collect();
            action = Some(format!("forgot {} events", gone.len()));
            for (i, k) in gone.into_iter().map(key) {
                self.forgotten_events
                    .get_or_insert(&ctx.messages[i], Vec::new)
                    .push(k);
            }
        }
        Plan::Send {
            messages: openhands::render(&ctx.messages, &ev, &mut self.memo),
            action,
        }
    }
}

impl Policy for Amortized {
    fn saved_state(&self) -> Option<serde_json::Value> {
        serde_json::to_value(AmortizedState {
            forgotten: self
                .forgotten
                .saved()
                .into_iter()
                .map(|(k, ())| k)
                .collect(),
            forgotten_events: self.forgotten_events.saved(),
        })
        .ok()
    }

    fn restore_state(&mut self, state: &serde_json::Value) {
        if let Ok(s) = serde_json::from_value::<AmortizedState>(state.clone()) {
            self.forgotten
                .restore(s.forgotten.into_iter().map(|k| (k, ())).collect());
            self.forgotten_events.restore(s.forgotten_events);
        }
    }

    fn name(&self) -> String {
        let view = if self.openhands {
            ""
        } else {
            ",view=foldbench"
        };
        format!(
            "{NAME}:max_size={},keep_first={}{view}",
            self.max_size, self.keep_first
        )
    }

    fn plan(&mut self, ctx: &Context, _prefix_tokens: u32) -> Plan {
        if self.openhands {
            return self.plan_openhands(ctx);
        }
        self.forgotten.resolve(&ctx.messages);
        let mut view: Vec<Arc<Message>> = ctx
            .messages
            .iter()
            .filter(|m| !self.forgotten.contains(m.id))
            .cloned()
            .collect();
        let mut action = None;
        if 1 + messages::total_events(&view) > self.max_size {
            if let Some((head_end, tail_start)) =
                recent::window(&view, self.keep_first, self.max_size / 2)
            {
                let gone: Vec<Arc<Message>> = view.drain(head_end..tail_start).collect();
                action = Some(format!("forgot {} events", messages::total_events(&gone)));
                for m in &gone {
                    self.forgotten.insert(m, ());
                }
            }
        }
        Plan::Send {
            messages: view,
            action,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::messages::testing::{
        context, count, output, same_after_restores, sent, shape, Step::*,
    };
    use harness_core::{Message, ToolCall};
    use serde_json::json;

    #[test]
    fn forgets_the_older_half_once_and_for_good() {
        // 12 events (see recent's test): over max_size=10 the view is cut to 5.
        let mut c = context(vec![
            User("u1"),
            Calls(vec![("read_file", output(10)), ("grep", output(10))]),
            Calls(vec![("read_file", output(10))]),
            Close("done"),
            User("u2"),
            Calls(vec![("shell", output(10))]),
        ]);
        let spec = crate::parse_policy("amortized:max_size=10,view=foldbench").unwrap();
        let mut p = crate::build(&spec, 200_000).unwrap();
        // Target 5 events: the system prompt and a tail of 4 (events 8-11).
        assert_eq!(shape(&sent(p.plan(&c, 0))), "cuar");
        // It grows again from there: two more events stay, the forgotten ones do not return.
        let call = ToolCall {
            id: "c9".into(),
            name: "read_file".into(),
            args: json!({}),
        };
        c.push(Message::assistant(2, "", vec![call.clone()]));
        c.push(Message::tool_result(2, &call, output(10), false));
        assert_eq!(shape(&sent(p.plan(&c, 0))), "cuarar");
        let keep = crate::parse_policy("amortized:max_size=4,keep_first=2").unwrap();
        let e = crate::build(&keep, 1).err().unwrap();
        assert!(
            e.to_string().contains("less than half of `max_size`"),
            "{e}"
        );
    }

    /// Turns of calls, each closed: enough events for several cuts of `max_size=8`.
    fn turns() -> Vec<crate::messages::testing::Step> {
        let mut steps = Vec::new();
        for t in ["u1", "u2", "u3"] {
            steps.push(User(t));
            steps.push(Calls(vec![("read_file", output(20)), ("grep", output(20))]));
            steps.push(Calls(vec![("shell", output(20))]));
            steps.push(Calls(vec![("read_file", output(20))]));
            steps.push(Close("done"));
        }
        steps
    }

    #[test]
    fn forgotten_events_stay_forgotten_after_a_restore() {
        // A policy that started again would see the forgotten events and cut elsewhere.
        for spec in [
            "amortized:max_size=8",
            "amortized:max_size=8,view=foldbench",
        ] {
            let run = same_after_restores(spec, turns);
            assert!(count(&run, "forgot") >= 3, "{spec}: {run:#?}");
        }
    }
}
