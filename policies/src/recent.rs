//! `recent`: OpenHands' `RecentEventsCondenser`.
//!
//! Each request shows the first `keep_first` events and the most recent ones, `max_events` in
//! all; the events between are left out of that request (nothing is remembered: a sliding
//! window). The system prompt is event 0, so `keep_first=1` keeps only it. Cuts fall between
//! tool batches: an assistant message's calls and their results stay or go together, so the
//! head may keep a few events more and the tail a few fewer.

use std::sync::Arc;

use harness_core::context::Context;
use harness_core::message::Message;
use harness_core::policy::{Plan, Policy};

use crate::error::ParamError;
use crate::params::Params;
use crate::registry::Entry;
use crate::view;

/// The policy's name.
pub const NAME: &str = "recent";

/// OpenHands' recent-events window.
#[derive(Debug)]
pub struct Recent {
    keep_first: usize,
    max_events: usize,
}

/// The registry entry.
pub fn entry() -> Entry {
    Entry::new(NAME, |p, _| Ok(Box::new(Recent::from_params(p)?)))
        .summary("OpenHands: only the first and the most recent events are sent")
        .source("OpenHands `RecentEventsCondenser`")
        .param(
            "keep_first",
            "1",
            "events",
            "events kept from the start (the system prompt is the first)",
        )
        .param("max_events", "100", "events", "events per request in all")
}

impl Recent {
    /// From `keep_first` and `max_events`.
    pub fn from_params(p: &mut Params) -> Result<Recent, ParamError> {
        let keep_first = usize::try_from(p.take_u64("keep_first")?.unwrap_or(1)).map_err(|_| {
            ParamError::TooLarge {
                key: "keep_first".into(),
            }
        })?;
        let max_events = p.take_count("max_events")?.unwrap_or(100);
        if keep_first >= max_events {
            return Err(ParamError::Conflict(format!(
                "`keep_first` ({keep_first}) must be less than `max_events` ({max_events})"
            )));
        }
        Ok(Recent {
            keep_first,
            max_events,
        })
    }
}

/// The messages of `keep_first` head events and a tail of `max_events - keep_first` events,
/// with both cuts between tool batches; `None` when everything fits.
pub fn window(
    messages: &[Arc<Message>],
    keep_first: usize,
    max_events: usize,
) -> Option<(usize, usize)> {
    let total = 1 + view::total_events(messages);
    if total <= max_events {
        return None;
    }
    let cuts = view::cuts(messages);
    // Context events start at 1: head event k is messages' event k - 1.
    let head_end = match keep_first {
        0 | 1 => 0,
        k => view::next_cut(&cuts, view::index_of_event(messages, k - 2) + 1),
    };
    let tail_first = total - (max_events - keep_first);
    let tail_start = view::next_cut(&cuts, first_message_at_or_after(messages, tail_first - 1));
    (tail_start > head_end).then_some((head_end, tail_start))
}

/// The first message whose first event is at index `event` or later (0-based over messages).
fn first_message_at_or_after(messages: &[Arc<Message>], event: usize) -> usize {
    let mut at = 0;
    for (i, m) in messages.iter().enumerate() {
        if at >= event {
            return i;
        }
        at += view::events(m);
    }
    messages.len()
}

impl Policy for Recent {
    fn name(&self) -> String {
        format!(
            "{NAME}:keep_first={},max_events={}",
            self.keep_first, self.max_events
        )
    }

    fn plan(&mut self, ctx: &Context, _prefix_tokens: u32) -> Plan {
        let Some((head_end, tail_start)) = window(&ctx.messages, self.keep_first, self.max_events)
        else {
            return Plan::Send {
                messages: ctx.messages.clone(),
                action: None,
            };
        };
        let mut out: Vec<Arc<Message>> = ctx.messages[..head_end].to_vec();
        out.extend(ctx.messages[tail_start..].iter().cloned());
        let left = view::total_events(&ctx.messages[head_end..tail_start]);
        Plan::Send {
            messages: out,
            action: Some(format!("left out {left} events")),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::view::testing::{context, output, sent, shape, Step::*};

    #[test]
    fn keeps_the_head_and_the_tail_between_batches() {
        // Events: 0 system, 1 user, 2-3 calls, 4-5 results, 6 call, 7 result, 8 closing,
        // 9 user, 10 call, 11 result: 12 in all.
        let c = context(vec![
            User("u1"),
            Calls(vec![("read_file", output(10)), ("grep", output(10))]),
            Calls(vec![("read_file", output(10))]),
            Close("done"),
            User("u2"),
            Calls(vec![("shell", output(10))]),
        ]);
        let cases = [
            ("recent", "uarrarcuar"), // 12 ≤ 100
            ("recent:max_events=12", "uarrarcuar"),
            ("recent:max_events=7", "arcuar"), // the tail: events 6-11
            ("recent:max_events=6", "cuar"),   // 7-11 starts at a result: 8-11
            ("recent:max_events=5", "cuar"),   // 8-11
            ("recent:keep_first=2,max_events=6", "ucuar"), // the user message, then 8-11
            ("recent:keep_first=3,max_events=8", "uarrcuar"), // the head to its batch's end
        ];
        for (spec, want) in cases {
            let mut p = crate::build(&crate::parse_policy(spec).unwrap(), 200_000).unwrap();
            assert_eq!(shape(&sent(p.plan(&c, 0))), want, "{spec}");
        }
        let e = crate::build(
            &crate::parse_policy("recent:keep_first=5,max_events=5").unwrap(),
            1,
        )
        .err()
        .unwrap();
        assert!(
            e.to_string().contains("must be less than `max_events`"),
            "{e}"
        );
    }
}
