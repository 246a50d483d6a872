//! What the peer policies share: rewritten messages memoised by the original's id (so a
//! cleared result is the same message, with the same id and count, on every request and the
//! prompt-cache simulation sees it unchanged), the event counts of OpenHands' condensers, and
//! the places a context may be cut without parting a tool call from its result.

use std::collections::HashMap;
use std::sync::Arc;

use harness_core::message::{Message, MessageKind, Role};

/// Rewritten messages by the original's id and the rewrite's kind.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    done: HashMap<(u64, u8), Arc<Message>>,
}

impl Memo {
    /// The rewrite `kind` of `m`, made once by `make`.
    pub(crate) fn get(
        &mut self,
        m: &Arc<Message>,
        kind: u8,
        make: impl FnOnce(&Message) -> Arc<Message>,
    ) -> Arc<Message> {
        Arc::clone(self.done.entry((m.id, kind)).or_insert_with(|| make(m)))
    }

    /// `m` (a tool result) with its text replaced by `text`, marked as cleared.
    pub(crate) fn cleared(&mut self, m: &Arc<Message>, text: &str) -> Arc<Message> {
        self.get(m, 0, |m| {
            let mut c = m.clone();
            c.text = text.to_string();
            c.kind = MessageKind::Cleared;
            c.sealed()
        })
    }
}

/// Whether `m` is a tool result still showing its output.
pub(crate) fn is_result(m: &Message) -> bool {
    m.role == Role::Tool && m.kind == MessageKind::Plain
}

/// The number of OpenHands events a message stands for: one per tool call of an assistant
/// message (OpenHands makes an action event of each call, the text riding on the first), else
/// one (a user message, a tool result, a closing message, a summary).
pub(crate) fn events(m: &Message) -> usize {
    if m.role == Role::Assistant {
        m.tool_calls.len().max(1)
    } else {
        1
    }
}

/// Where `messages` may be cut: `cuts[i]` is true when no tool call of `messages[..i]` waits
/// for its result in `messages[i..]` (OpenHands' batch and call-matching rules; the same rule
/// keeps every request valid for the provider APIs). `cuts` has `messages.len() + 1` entries.
pub(crate) fn cuts(messages: &[Arc<Message>]) -> Vec<bool> {
    let mut pending: Vec<&str> = Vec::new();
    let mut out = Vec::with_capacity(messages.len() + 1);
    out.push(true);
    for m in messages {
        for c in &m.tool_calls {
            pending.push(c.id.as_str());
        }
        if let Some(id) = m.tool_call_id.as_deref() {
            pending.retain(|p| *p != id);
        }
        out.push(pending.is_empty());
    }
    out
}

/// The first index at or after `i` where `messages` may be cut (`messages.len()` at the end).
pub(crate) fn next_cut(cuts: &[bool], i: usize) -> usize {
    (i..cuts.len()).find(|&j| cuts[j]).unwrap_or(cuts.len() - 1)
}

/// The message index holding OpenHands event number `event` (counted from 0 over
/// `messages`), or `messages.len()` past the end.
pub(crate) fn index_of_event(messages: &[Arc<Message>], event: usize) -> usize {
    let mut n = 0;
    for (i, m) in messages.iter().enumerate() {
        n += events(m);
        if n > event {
            return i;
        }
    }
    messages.len()
}

/// The first message of `messages` whose first event is event `event` or later, events
/// numbered as OpenHands numbers a view: the system prompt is event 0, so `messages[0]` starts
/// at event 1 (`messages.len()` past the end).
pub(crate) fn message_from_event(messages: &[Arc<Message>], event: usize) -> usize {
    let mut at = 1;
    for (i, m) in messages.iter().enumerate() {
        if at >= event {
            return i;
        }
        at += events(m);
    }
    messages.len()
}

/// Total OpenHands events of `messages`.
pub(crate) fn total_events(messages: &[Arc<Message>]) -> usize {
    messages.iter().map(|m| events(m)).sum()
}

/// The tool calls of `messages` in order, with the index of the assistant message holding each
/// and the index of its result (`None` when no result follows).
pub(crate) fn tool_uses(messages: &[Arc<Message>]) -> Vec<ToolUse> {
    let mut out: Vec<ToolUse> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        for c in &m.tool_calls {
            out.push(ToolUse {
                call: i,
                result: None,
                id: c.id.clone(),
                name: c.name.clone(),
            });
        }
        if let Some(id) = m.tool_call_id.as_deref() {
            if let Some(u) = out
                .iter_mut()
                .rev()
                .find(|u| u.id == id && u.result.is_none())
            {
                u.result = Some(i);
            }
        }
    }
    out
}

/// One tool call in a context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolUse {
    /// Index of the assistant message that made the call.
    pub(crate) call: usize,
    /// Index of its result.
    pub(crate) result: Option<usize>,
    /// The call's id.
    pub(crate) id: String,
    /// The tool's name.
    pub(crate) name: String,
}

/// The number of lines of a text, as Python's `str.splitlines` counts them.
pub(crate) fn lines(text: &str) -> usize {
    text.lines().count()
}

#[cfg(test)]
pub(crate) mod testing {
    //! Constructed contexts for the peers' tests.

    use std::sync::Arc;

    use harness_core::context::Context;
    use harness_core::message::{Message, MessageKind, ToolCall};
    use harness_core::policy::{Plan, Policy};
    use serde_json::json;

    /// A policy from its text, as the registry builds it (a 200,000-token window).
    pub(crate) fn policy(spec: &str) -> Box<dyn Policy> {
        crate::build(&crate::parse_policy(spec).unwrap(), 200_000).unwrap()
    }

    /// What the runner does on a `Plan::Compact`: the summary of the compaction input applied;
    /// returns that input.
    pub(crate) fn condense(p: &mut dyn Policy, ctx: &mut Context) -> Vec<Arc<Message>> {
        assert!(matches!(p.plan(ctx, 0), Plan::Compact { .. }));
        let input = p.compaction_input(ctx);
        let summary = Message::host(ctx.turn, "SUMMARY", MessageKind::Summary);
        p.apply_compaction(ctx, summary);
        input
    }

    /// One step of a constructed session.
    pub(crate) enum Step {
        /// A user message starting turn N.
        User(&'static str),
        /// An assistant message with these calls `(tool, output)`, then their results.
        Calls(Vec<(&'static str, String)>),
        /// A closing message.
        Close(&'static str),
    }

    /// Builds a context from steps; call ids are `c1`, `c2`, ... in order.
    pub(crate) fn context(steps: Vec<Step>) -> Context {
        let mut c = Context::default();
        let mut n = 0;
        for s in steps {
            match s {
                Step::User(text) => {
                    c.turn += 1;
                    c.push(Message::user(c.turn, text, None));
                }
                Step::Calls(calls) => {
                    let mut tcs = Vec::new();
                    for (tool, _) in &calls {
                        n += 1;
                        tcs.push(ToolCall {
                            id: format!("c{n}"),
                            name: tool.to_string(),
                            args: json!({"path": format!("f{n}")}),
                        });
                    }
                    c.push(Message::assistant(c.turn, "", tcs.clone()));
                    for (tc, (_, out)) in tcs.iter().zip(calls) {
                        c.push(Message::tool_result(c.turn, tc, out, false));
                    }
                }
                Step::Close(text) => c.push(Message::assistant(c.turn, text, Vec::new())),
            }
        }
        c
    }

    /// The messages a plan sends (panics on a compaction).
    pub(crate) fn sent(plan: Plan) -> Vec<Arc<Message>> {
        match plan {
            Plan::Send { messages, .. } => messages,
            other => panic!("expected messages to send, got {other:?}"),
        }
    }

    /// One letter per message: `u` user, `a` assistant with calls, `c` closing, `r` a visible
    /// result, `x` a cleared one, `s` a host message (summary).
    pub(crate) fn shape(messages: &[Arc<Message>]) -> String {
        use harness_core::message::{MessageKind, Role};
        messages
            .iter()
            .map(|m| match (m.role, &m.kind) {
                (Role::User, MessageKind::Plain) => 'u',
                (Role::User, _) => 's',
                (Role::Assistant, _) if m.tool_calls.is_empty() => 'c',
                (Role::Assistant, _) => 'a',
                (Role::Tool, MessageKind::Cleared) => 'x',
                (Role::Tool, _) => 'r',
            })
            .collect()
    }

    /// A tool output of about `tokens` o200k tokens (each ` w1234` is about two tokens).
    pub(crate) fn output(tokens: usize) -> String {
        (0..tokens / 2).map(|i| format!(" w{i}")).collect()
    }
}
