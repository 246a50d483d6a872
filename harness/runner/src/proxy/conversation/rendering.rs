//! The conversation written back in the agent's API: the agent's own units where a message is
//! theirs, a card where one is attached, the policy's messages rendered, the pinned entries
//! where they stood — also around a message a policy rewrote, found by what it says.

use std::sync::Arc;

use harness_core::{Message, Role};
use harness_wire::render::{self, Out};
use harness_wire::{Api, Envelope};
use harness_wire::{Side, UnitKind};
use serde_json::value::RawValue;

use super::{Conversation, Decoded, Origin};

impl Conversation {
    /// The conversation's messages as items of `api`: the agent's units where a message is
    /// theirs (a card appended where one is attached), the policy's messages rendered, and the
    /// pinned entries where they stood (`pinned`: false for a summary request).
    pub(super) fn render<'a>(
        &self,
        api: Api,
        req: &'a Decoded,
        messages: &[Arc<Message>],
        pinned: bool,
    ) -> (Vec<std::borrow::Cow<'a, RawValue>>, usize) {
        let mut entries: Vec<Out<'a>> = Vec::new();
        let mut next_pinned = 0;
        let mut last_pos = 0usize;
        let pinned_list = if pinned { &self.pinned[..] } else { &[] };
        let push_pinned = |upto: usize, next: &mut usize, entries: &mut Vec<Out<'a>>| {
            while *next < pinned_list.len() && pinned_list[*next].0 < upto {
                for &(i, u) in &pinned_list[*next].1 {
                    entries.push(Out::Unit(
                        Side::Pinned,
                        std::borrow::Cow::Borrowed(&*req.units[i][u].raw),
                    ));
                }
                *next += 1;
            }
        };
        // Pinned entries before the first message stay first.
        for m in messages {
            let pos = self
                .position
                .get(&m.id)
                .copied()
                .or_else(|| self.position_by_content(m))
                .unwrap_or(last_pos);
            last_pos = last_pos.max(pos);
            push_pinned(pos, &mut next_pinned, &mut entries);
            match self.origins.get(&m.id) {
                Some(Origin::Units(at)) => {
                    for &(i, u) in at {
                        let unit = &req.units[i][u];
                        entries.push(Out::Unit(
                            unit.side(),
                            std::borrow::Cow::Borrowed(&*unit.raw),
                        ));
                    }
                }
                Some(Origin::Carded(at, card)) => {
                    let raws: Vec<&RawValue> =
                        at.iter().map(|&(i, u)| &*req.units[i][u].raw).collect();
                    for r in render::attach_card(api, &raws, card) {
                        entries.push(Out::Unit(Side::User, std::borrow::Cow::Owned(r)));
                    }
                }
                Some(Origin::Beside(at, calls)) => {
                    let raws: Vec<&RawValue> =
                        at.iter().map(|&(i, u)| &*req.units[i][u].raw).collect();
                    for r in render::calls_beside(api, &raws, calls, &self.grouper) {
                        entries.push(Out::Unit(Side::Assistant, std::borrow::Cow::Owned(r)));
                    }
                }
                Some(Origin::Raw(parts)) => {
                    for r in parts {
                        entries.push(Out::Unit(
                            Side::Assistant,
                            std::borrow::Cow::Owned(r.clone()),
                        ));
                    }
                }
                // An answer of the agent's whose thinking a policy cleared (or kept, in a
                // message it made again): the agent's blocks, without the thinking ones when
                // it has none.
                None if m.role == Role::Assistant && self.thought.contains_key(&answer_key(m)) => {
                    let at = &self.thought[&answer_key(m)];
                    for &(i, u) in at {
                        let unit = &req.units[i][u];
                        if m.thinking.is_none() && matches!(unit.kind, UnitKind::Thinking(_)) {
                            continue;
                        }
                        entries.push(Out::Unit(
                            Side::Assistant,
                            std::borrow::Cow::Borrowed(&*unit.raw),
                        ));
                    }
                }
                Some(Origin::Edit | Origin::Made) | None => {
                    for (side, r) in render::render_message(api, m, &self.grouper) {
                        entries.push(Out::Unit(side, std::borrow::Cow::Owned(r)));
                    }
                }
            }
        }
        push_pinned(usize::MAX, &mut next_pinned, &mut entries);
        let n = entries.len();
        (render::assemble(api, entries), n)
    }

    /// Where a message a policy made from one of the agent's stood in the request: the agent's
    /// message with the same call, result, or text.
    pub(super) fn position_by_content(&self, m: &Message) -> Option<usize> {
        self.content_pos.get(&content_key(m)).copied()
    }

    /// Notes where the agent's message `msg` stood (piece `pos`), by its id and by what it says.
    pub(super) fn note_position(&mut self, msg: &Message, pos: usize) {
        self.position.insert(msg.id, pos);
        self.content_pos.insert(content_key(msg), pos);
        if !msg.tool_calls.is_empty() && !msg.text.is_empty() {
            // Its text alone: the answer a policy took the calls away from.
            self.content_pos
                .insert(text_key(msg.turn, msg.role, &msg.text), pos);
        }
    }

    /// Renders extra messages (the model's policy-tool call and its result) after the
    /// request's own items, for asking the model again.
    pub(crate) fn continuation_body(
        &self,
        api: Api,
        env: &Envelope,
        req: &Decoded,
        messages: &[Arc<Message>],
    ) -> Vec<u8> {
        let (items, _) = self.render(api, req, messages, true);
        let refs: Vec<&RawValue> = items.iter().map(|c| &**c).collect();
        env.write(&refs, &self.driver.policy().tools())
    }
}

/// What a message says, for finding where a policy's rewrite of it stood: a result by its
/// call, an answer by its first call, else by its turn, role and text.
fn content_key(m: &Message) -> (u32, u64) {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    match (&m.tool_call_id, m.tool_calls.first()) {
        (Some(id), _) => ("result", id).hash(&mut h),
        (None, Some(c)) => ("call", &c.id).hash(&mut h),
        (None, None) => return text_key(m.turn, m.role, &m.text),
    }
    (m.turn, h.finish())
}

/// What an answer says apart from its thinking: its turn, text and calls.
pub(super) fn answer_key(m: &Message) -> (u32, u64) {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    m.text.hash(&mut h);
    for c in &m.tool_calls {
        (&c.id, &c.name, c.canonical_args()).hash(&mut h);
    }
    (m.turn, h.finish())
}

/// [`content_key`] of a message without calls.
fn text_key(turn: u32, role: Role, text: &str) -> (u32, u64) {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (role, text).hash(&mut h);
    (turn, h.finish())
}

/// A body with `"stream"` set to false (a summary request is read whole).
pub(super) fn with_stream_off(body: &[u8]) -> Vec<u8> {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(mut v) => {
            if let Some(o) = v.as_object_mut() {
                o.insert("stream".into(), serde_json::Value::Bool(false));
                o.remove("stream_options");
            }
            v.to_string().into_bytes()
        }
        Err(_) => body.to_vec(),
    }
}
