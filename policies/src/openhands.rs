//! What OpenHands (its V0 agent, `openhands/memory`) sends for a condensed history: the event
//! list a context stands for, and the conversion of the events a condenser kept into messages
//! (`ConversationMemory.process_events`). The condensers `observation-masking`, `recent` and
//! `amortized` choose events; this module turns their choice into the request OpenHands makes.
//!
//! Events, as OpenHands records them: the system prompt is event 0; a user message is a user
//! `MessageAction`; an assistant message with N tool calls is N actions of one response (its
//! text on the first); a closing assistant message is an agent message; a tool result is an
//! observation answering its call; a summary is an observation without a call (OpenHands'
//! `AgentCondensationObservation`).
//!
//! The conversion, rule by rule as OpenHands applies it:
//!
//! - the first user message of the session is put back at index 1 when the kept events do not
//!   start with a user message there (`_ensure_initial_user_message`), even when it is also
//!   kept further on;
//! - an action's response is held until every call of that response has its observation among
//!   the kept events; then the assistant message (with all its calls) and the results follow;
//!   a response with a call whose observation is missing or masked is never sent, nor are the
//!   results of its other calls;
//! - an observation without a call (a masked observation, a summary) becomes a *user* message;
//! - a user message right after another user message gets two newlines before its text
//!   (`_apply_user_message_formatting`).

use std::collections::HashMap;
use std::sync::Arc;

use harness_core::{Message, MessageKind, Role};

use crate::messages::Memo;

/// What a masked observation says.
pub(crate) const MASK: &str = "<MASKED>";

/// One OpenHands event of a context (the system prompt, event 0, is implicit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// A user message (`MessageAction` from the user), at this message index.
    User(usize),
    /// An agent message without tool calls (a closing message).
    Agent(usize),
    /// Call `call` of the assistant message at this index (one action of its response).
    Action(usize, usize),
    /// A tool result (an observation answering a call).
    Observation(usize),
    /// A summary or another host note: an observation answering no call.
    Note(usize),
    /// An observation a condenser masked: `<MASKED>`, answering no call.
    Masked(usize),
}

impl Event {
    /// Whether OpenHands counts it as an observation (a condenser may mask it).
    pub(crate) fn is_observation(self) -> bool {
        matches!(self, Event::Observation(_) | Event::Note(_))
    }

    /// The message index it comes from.
    pub(crate) fn message(self) -> usize {
        match self {
            Event::User(i)
            | Event::Agent(i)
            | Event::Action(i, _)
            | Event::Observation(i)
            | Event::Note(i)
            | Event::Masked(i) => i,
        }
    }
}

/// The events of `messages`, in order (without the system prompt).
pub(crate) fn events(messages: &[Arc<Message>]) -> Vec<Event> {
    let mut out = Vec::with_capacity(messages.len() + 8);
    for (i, m) in messages.iter().enumerate() {
        match m.role {
            Role::Assistant if m.tool_calls.is_empty() => out.push(Event::Agent(i)),
            Role::Assistant => out.extend((0..m.tool_calls.len()).map(|k| Event::Action(i, k))),
            Role::Tool => out.push(Event::Observation(i)),
            Role::User if m.kind == MessageKind::Plain => out.push(Event::User(i)),
            Role::User => out.push(Event::Note(i)),
        }
    }
    out
}

/// Memo kinds of this module's rewrites.
const MASKED: u8 = 20;
const MASKED_AFTER_USER: u8 = 21;
const AFTER_USER: u8 = 22;

/// The messages OpenHands sends for the kept events `kept` of `messages` (`kept` without the
/// system prompt; [`Event::Masked`] for the observations a condenser masked). Rewritten messages
/// come from `memo`, so the same rewrite is the same message on every request.
pub(crate) fn render(
    messages: &[Arc<Message>],
    kept: &[Event],
    memo: &mut Memo,
) -> Vec<Arc<Message>> {
    let mut kept: Vec<Event> = kept.to_vec();
    if !matches!(kept.first(), Some(Event::User(_))) {
        if let Some(first) = messages.iter().position(|m| m.is_human()) {
            kept.insert(0, Event::User(first));
        }
    }
    let mut out: Vec<Arc<Message>> = Vec::with_capacity(kept.len());
    let mut pending: Vec<usize> = Vec::new();
    let mut results: HashMap<&str, usize> = HashMap::new();
    for e in kept {
        match e {
            Event::User(i) | Event::Agent(i) | Event::Note(i) => push(&mut out, &messages[i], memo),
            Event::Masked(i) => {
                let after = out.last().is_some_and(|m| m.role == Role::User);
                out.push(masked(&messages[i], memo, after));
            }
            Event::Action(i, _) => {
                if !pending.contains(&i) {
                    pending.push(i);
                }
            }
            Event::Observation(i) => {
                if let Some(id) = messages[i].tool_call_id.as_deref() {
                    results.insert(id, i);
                }
            }
        }
        let mut k = 0;
        while k < pending.len() {
            let p = pending[k];
            let calls = &messages[p].tool_calls;
            if !calls.iter().all(|c| results.contains_key(c.id.as_str())) {
                k += 1;
                continue;
            }
            out.push(Arc::clone(&messages[p]));
            for c in calls {
                if let Some(r) = results.remove(c.id.as_str()) {
                    out.push(Arc::clone(&messages[r]));
                }
            }
            pending.remove(k);
        }
    }
    out
}

/// Appends `m`, with two newlines before its text when it is a user message after a user
/// message (the system prompt comes before the first).
fn push(out: &mut Vec<Arc<Message>>, m: &Arc<Message>, memo: &mut Memo) {
    let after_user = m.role == Role::User && out.last().is_some_and(|p| p.role == Role::User);
    if !after_user {
        out.push(Arc::clone(m));
        return;
    }
    out.push(memo.get(m, AFTER_USER, |m| {
        let mut c = m.clone();
        c.text = format!("\n\n{}", m.text);
        c.sealed()
    }));
}

/// The user message a masked observation becomes (`after_user`: with the two newlines).
fn masked(m: &Arc<Message>, memo: &mut Memo, after_user: bool) -> Arc<Message> {
    let kind = if after_user {
        MASKED_AFTER_USER
    } else {
        MASKED
    };
    memo.get(m, kind, |m| {
        let mut c = Message::host(m.turn, "", MessageKind::Cleared)
            .as_ref()
            .clone();
        c.text = if after_user {
            format!("\n\n{MASK}")
        } else {
            MASK.to_string()
        };
        c.sealed()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::testing::{context, output, shape, Step::*};

    #[test]
    fn a_response_waits_for_every_result_and_masked_ones_become_user_messages() {
        let c = context(vec![
            User("task"),
            Calls(vec![("read_file", output(4)), ("grep", output(4))]),
            Calls(vec![("shell", output(4))]),
        ]);
        let ev = events(&c.messages);
        assert_eq!(ev.len(), 7, "{ev:?}");
        let mut memo = Memo::default();
        // Everything kept: as appended.
        assert_eq!(shape(&render(&c.messages, &ev, &mut memo)), "uarrar");
        // The first result masked: its response and its sibling's result are not sent.
        let mut kept = ev.clone();
        kept[3] = Event::Masked(2);
        let out = render(&c.messages, &kept, &mut memo);
        assert_eq!(shape(&out), "usar");
        assert_eq!(out[1].text, "\n\n<MASKED>");
        // The task's message cut away: it is put back first.
        let out = render(&c.messages, &ev[4..], &mut memo);
        assert_eq!(shape(&out), "uar");
        assert_eq!(out[0].id, c.messages[0].id);
    }
}
