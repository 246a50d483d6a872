//! The parent session as it would have been had its children's work run inline.
//!
//! At each paired call the call stays in the parent's response with an empty input (`{}`: the
//! brief is not written; the call keeps the message's shape, a few tokens), the parent's other
//! results of that response follow, then for each child in call order its work
//! ([`super::work`]: responses and tool results, turn numbers the parent's) and the receipt,
//! which stands for the child's final answer: inline, the parent would have written that
//! conclusion itself. Every child request becomes a parent request (at the parent's model, read
//! from the calling request; no recorded usage): one per response of the work, and the final
//! answer's at the receipt. The parent's own requests keep their indexes; the inline ones come
//! after them, so `requests[k]` for `k` below the parent's count is the same recorded request.

use std::collections::HashMap;
use std::sync::Arc;

use harness_core::{Message, Role};
use harness_import::{ImportedSession, RecordedRequest};

use super::Child;

/// What goes in at each paired call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Splice {
    /// The child's work and the receipt, and the child's requests as the parent's.
    Inline,
    /// Neither the brief nor the work: the call with an empty input and an empty receipt (the
    /// baseline both costs are measured from).
    Base,
}

/// The indexes of a child's work in its messages (see [`super::work`]) and the index of the
/// final answer left out, if one was.
pub(super) fn work_indexes(child: &ImportedSession) -> (Vec<usize>, Option<usize>) {
    let first = child
        .messages
        .iter()
        .position(|m| m.is_human())
        .map_or(0, |i| i + 1);
    let mut out: Vec<usize> = (first..child.messages.len())
        .filter(|&i| child.messages[i].role != Role::User)
        .collect();
    let last = out.last().copied();
    match last {
        Some(i) if child.messages[i].is_closing() => {
            out.pop();
            (out, Some(i))
        }
        _ => (out, None),
    }
}

/// A copy of `m` in turn `turn`.
fn in_turn(m: &Message, turn: u32) -> Arc<Message> {
    let mut x = m.clone();
    x.turn = turn;
    x.sealed()
}

/// The splice in progress.
struct Out<'a> {
    parent: &'a ImportedSession,
    messages: Vec<Arc<Message>>,
    ms: Vec<Option<i64>>,
    /// Old message index → new.
    map: Vec<usize>,
    requests: Vec<RecordedRequest>,
}

impl Out<'_> {
    fn push(&mut self, m: Arc<Message>, ms: Option<i64>) -> usize {
        self.messages.push(m);
        self.ms.push(ms);
        self.messages.len() - 1
    }

    /// A request of the parent's at the new message `at`, as the call's request had it.
    fn request(&mut self, at: usize, call_message: usize) {
        let calling = self
            .parent
            .requests
            .iter()
            .find(|r| r.message == call_message);
        let start = calling.map_or(0, |r| self.map[r.context_start.min(call_message)]);
        self.requests.push(RecordedRequest {
            message: at,
            context: at,
            context_start: start,
            response_id: None,
            usage: None,
            model: calling.and_then(|r| r.model.clone()),
        });
    }

    /// The work and receipts of the children whose calls came last.
    fn flush(&mut self, pending: &mut Vec<(&Child, &ImportedSession)>, splice: Splice) {
        for (c, child) in std::mem::take(pending) {
            let turn = self.parent.messages[c.call_message].turn;
            if splice == Splice::Inline {
                let (work, last) = work_indexes(child);
                for i in work {
                    let at = self.push(in_turn(&child.messages[i], turn), child.message_time(i));
                    if child.requests.iter().any(|r| r.message == i) {
                        self.request(at, c.call_message);
                    }
                }
                if let Some(r) = c.receipt_message {
                    let m = Arc::clone(&self.parent.messages[r]);
                    let at = self.push(m, self.parent.message_time(r));
                    self.map[r] = at;
                    if last.is_some_and(|f| child.requests.iter().any(|q| q.message == f)) {
                        self.request(at, c.call_message);
                    }
                }
            } else if let Some(r) = c.receipt_message {
                let mut empty = (*self.parent.messages[r]).clone();
                empty.text = String::new();
                let at = self.push(empty.sealed(), self.parent.message_time(r));
                self.map[r] = at;
            }
        }
    }
}

/// `parent` with `pairs` (each child's figures and session) spliced in as `splice` says.
pub(crate) fn inline_session(
    parent: &ImportedSession,
    pairs: &[(&Child, &ImportedSession)],
    splice: Splice,
) -> ImportedSession {
    let n = parent.messages.len();
    let mut at_call: HashMap<usize, Vec<(&Child, &ImportedSession)>> = HashMap::new();
    for &(c, s) in pairs {
        at_call.entry(c.call_message).or_default().push((c, s));
    }
    let receipts: Vec<usize> = pairs
        .iter()
        .filter_map(|(c, _)| c.receipt_message)
        .collect();
    let mut out = Out {
        parent,
        messages: Vec::with_capacity(n),
        ms: Vec::with_capacity(n),
        map: vec![0; n + 1],
        requests: Vec::new(),
    };
    let mut pending: Vec<(&Child, &ImportedSession)> = Vec::new();
    for (i, m) in parent.messages.iter().enumerate() {
        if !pending.is_empty() && m.tool_call_id.is_none() {
            out.flush(&mut pending, splice);
        }
        if receipts.contains(&i) {
            continue;
        }
        let ms = parent.message_time(i);
        let new = match at_call.get(&i) {
            Some(children) => {
                let mut stub = (**m).clone();
                for call in &mut stub.tool_calls {
                    if children.iter().any(|(c, _)| c.call_id == call.id) {
                        call.args = serde_json::json!({});
                    }
                }
                pending.extend(children.iter().copied());
                out.push(stub.sealed(), ms)
            }
            None => out.push(Arc::clone(m), ms),
        };
        out.map[i] = new;
    }
    out.flush(&mut pending, splice);
    out.map[n] = out.messages.len();
    let map = &out.map;
    let mut requests: Vec<RecordedRequest> = parent
        .requests
        .iter()
        .map(|r| RecordedRequest {
            message: map[r.message.min(n)],
            context: map[r.context.min(n)],
            context_start: map[r.context_start.min(n)],
            ..r.clone()
        })
        .collect();
    requests.append(&mut out.requests);
    let mut s = parent.clone();
    s.messages = out.messages;
    s.message_ms = if parent.message_ms.is_empty() {
        Vec::new()
    } else {
        out.ms
    };
    s.requests = requests;
    for e in &mut s.events {
        e.message = map[e.message.min(n)];
    }
    for h in &mut s.human_turns {
        h.message = map[h.message.min(n)];
    }
    s
}
