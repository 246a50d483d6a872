//! `recent`: OpenHands' `RecentEventsCondenser`.
//!
//! Each request shows the first `keep_first` events and the most recent ones, `max_events` in
//! all; the events between are left out of that request (nothing is remembered: a sliding
//! window). The system prompt is event 0, so `keep_first=1` keeps only it.
//!
//! With `view=openhands` (the default) the cut falls where OpenHands' slice puts it, and the
//! request is what OpenHands sends for the events kept ([`crate::openhands::render`]): the
//! session's first user message is put back after the system prompt, a response whose calls
//! were cut is sent whole if one of its actions is kept and every result is, and results whose
//! response is gone are not sent. With `view=foldbench` the cuts snap to tool-batch boundaries
//! (the head may keep a few events more and the tail a few fewer) and nothing is put back.

use std::sync::Arc;

use harness_core::policy::{Plan, Policy};
use harness_core::Context;
use harness_core::Message;

use crate::error::ParamError;
use crate::messages::{self, Memo};
use crate::observation_masking::VIEWS;
use crate::openhands;
use crate::params::Params;
use crate::registry::Entry;

/// The policy's name.
pub(crate) const NAME: &str = "recent";

/// OpenHands' recent-events window.
#[derive(Debug)]
pub(crate) struct Recent {
    keep_first: usize,
    max_events: usize,
    openhands: bool,
    /// Rewritten messages (a cache rebuilt from the context, not state: the policy keeps
    /// nothing between requests that the context does not give back, [`Policy::saved_state`]).
    memo: Memo,
}

/// The registry entry.
pub(crate) fn entry() -> Entry {
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
        .param(
            "view",
            "openhands",
            "openhands|foldbench",
            "openhands: OpenHands' cut and the request it makes of it (the first user message put back); foldbench: cuts between tool batches",
        )
}

impl Recent {
    /// From `keep_first` and `max_events`.
    pub(crate) fn from_params(p: &mut Params) -> Result<Recent, ParamError> {
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
            openhands: p.take_choice("view", &VIEWS)?.as_deref() != Some("foldbench"),
            memo: Memo::default(),
        })
    }
}

/// The messages of `keep_first` head events and a tail of `max_events - keep_first` events,
/// with both cuts between tool batches; `None` when everything fits.
pub(crate) fn window(
    messages: &[Arc<Message>],
    keep_first: usize,
    max_events: usize,
) -> Option<(usize, usize)> {
    let total = 1 + messages::total_events(messages);
    if total <= max_events {
        return None;
    }
    let cuts = messages::cuts(messages);
    // Context events start at 1: head event k is messages' event k - 1.
    let head_end = match keep_first {
        0 | 1 => 0,
        k => messages::next_cut(&cuts, messages::index_of_event(messages, k - 2) + 1),
    };
    let tail_first = total - (max_events - keep_first);
    let tail_start = messages::next_cut(&cuts, first_message_at_or_after(messages, tail_first - 1));
    (tail_start > head_end).then_some((head_end, tail_start))
}

/// The events OpenHands' recent-events condenser keeps of `ev` (the view being the system
/// prompt, event 0, and `ev`): the first `keep_first` and the last `max_events - keep_first`.
/// A view that fits is kept whole (OpenHands' slice then repeats the head: not reproduced).
pub(crate) fn openhands_window(
    ev: &[openhands::Event],
    keep_first: usize,
    max_events: usize,
) -> Vec<openhands::Event> {
    let total = ev.len() + 1;
    if total <= max_events {
        return ev.to_vec();
    }
    let head = keep_first.min(total);
    let tail_start = total - (max_events - head).min(total);
    // View index v is `ev[v - 1]`; the system prompt (v = 0) is sent anyway.
    let mut kept: Vec<openhands::Event> = ev[..head.saturating_sub(1)].to_vec();
    kept.extend_from_slice(&ev[tail_start.max(head).max(1) - 1..]);
    kept
}

/// The first message whose first event is at index `event` or later (0-based over messages).
fn first_message_at_or_after(messages: &[Arc<Message>], event: usize) -> usize {
    let mut at = 0;
    for (i, m) in messages.iter().enumerate() {
        if at >= event {
            return i;
        }
        at += messages::events(m);
    }
    messages.len()
}

impl Policy for Recent {
    fn name(&self) -> String {
        let view = if self.openhands {
            ""
        } else {
            ",view=foldbench"
        };
        format!(
            "{NAME}:keep_first={},max_events={}{view}",
            self.keep_first, self.max_events
        )
    }

    fn plan(&mut self, ctx: &Context, _prefix_tokens: u32) -> Plan {
        if self.openhands {
            let ev = openhands::events(&ctx.messages);
            let kept = openhands_window(&ev, self.keep_first, self.max_events);
            let left = ev.len() - kept.len();
            let messages = openhands::render(&ctx.messages, &kept, &mut self.memo);
            return Plan::Send {
                messages,
                action: (left > 0).then(|| format!("left out {left} events")),
            };
        }
        let Some((head_end, tail_start)) = window(&ctx.messages, self.keep_first, self.max_events)
        else {
            return Plan::Send {
                messages: ctx.messages.clone(),
                action: None,
            };
        };
        let mut out: Vec<Arc<Message>> = ctx.messages[..head_end].to_vec();
        out.extend(ctx.messages[tail_start..].iter().cloned());
        let left = messages::total_events(&ctx.messages[head_end..tail_start]);
        Plan::Send {
            messages: out,
            action: Some(format!("left out {left} events")),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::messages::testing::{context, output, sent, shape, Step::*};

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
            ("recent:view=foldbench", "uarrarcuar"), // 12 ≤ 100
            ("recent:view=foldbench,max_events=12", "uarrarcuar"),
            ("recent:view=foldbench,max_events=7", "arcuar"), // the tail: events 6-11
            ("recent:view=foldbench,max_events=6", "cuar"),   // 7-11 starts at a result: 8-11
            ("recent:view=foldbench,max_events=5", "cuar"),   // 8-11
            ("recent:view=foldbench,keep_first=2,max_events=6", "ucuar"), // the user message, then 8-11
            (
                "recent:view=foldbench,keep_first=3,max_events=8",
                "uarrcuar",
            ), // the head to its batch's end
        ];
        for (spec, want) in cases {
            let mut p = crate::build(&crate::parse_policy(spec).unwrap(), 200_000).unwrap();
            assert_eq!(shape(&sent(p.plan(&c, 0))), want, "{spec}");
        }
        let e = crate::build(
            &crate::parse_policy("recent:view=foldbench,keep_first=5,max_events=5").unwrap(),
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
