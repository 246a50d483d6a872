//! The process's view of the context, kept in step with foldbench's by deltas.
//!
//! Every message the process is sent gets a protocol id (1, 2, 3, … in the order they are
//! first sent). A request carries `{"keep": K, "append": [...]}`: the process keeps the first
//! `K` messages of its view and appends the rest, each a whole message (with its `id`) or
//! `{"ref": ID}`, a message of its previous view. While the session only appends, `K` is the
//! view's length and `append` holds the new messages alone: what is sent grows linearly with the
//! session. A compaction or a splice re-sends the part after the edit as references.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use harness_core::context::Context;
use harness_core::message::Message;
use serde_json::{json, Value};

/// The view the process holds: foldbench's message ids in order, and their protocol ids.
#[derive(Debug, Default)]
pub struct View {
    /// [`Message::id`]s of the process's view, in order.
    ids: Vec<u64>,
    /// Protocol id of each message sent, by [`Message::id`].
    protocol: HashMap<u64, u64>,
    next: u64,
}

impl View {
    /// The delta that brings the view to `ctx`, which becomes the view.
    pub fn delta(&mut self, ctx: &Context) -> Value {
        let keep = self
            .ids
            .iter()
            .zip(&ctx.messages)
            .take_while(|(a, m)| **a == m.id)
            .count();
        let dropped: HashSet<u64> = self.ids[keep..].iter().copied().collect();
        self.ids.truncate(keep);
        let mut append = Vec::with_capacity(ctx.messages.len() - keep);
        for m in &ctx.messages[keep..] {
            let known = self.protocol.get(&m.id).copied();
            match known {
                Some(pid) if dropped.contains(&m.id) => append.push(json!({ "ref": pid })),
                _ => {
                    self.next += 1;
                    self.protocol.insert(m.id, self.next);
                    append.push(message(m, self.next));
                }
            }
            self.ids.push(m.id);
        }
        json!({ "keep": keep, "append": append })
    }
}

/// A message as the protocol sends it: its fields as foldbench records them, and its `id`.
pub fn message(m: &Arc<Message>, id: u64) -> Value {
    let mut v = serde_json::to_value(&**m).unwrap_or_else(|_| json!({}));
    if let Value::Object(o) = &mut v {
        o.insert("id".into(), id.into());
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_core::message::MessageKind;

    #[test]
    fn appends_are_sent_once_and_an_edit_refers_to_what_follows_it() {
        let mut ctx = Context::default();
        let mut v = View::default();
        ctx.push(Message::user(1, "a", None));
        ctx.push(Message::assistant(1, "b", vec![]));
        let d = v.delta(&ctx);
        assert_eq!(d["keep"], 0);
        assert_eq!(d["append"][1]["id"], 2);
        ctx.push(Message::user(2, "c", None));
        let d = v.delta(&ctx);
        assert_eq!(d["keep"], 2);
        assert_eq!(d["append"].as_array().map(Vec::len), Some(1));
        assert_eq!(d["append"][0]["text"], "c");
        ctx.splice(0, 2, Message::host(1, "folded", MessageKind::Plain));
        let d = v.delta(&ctx);
        assert_eq!(d["keep"], 0);
        assert_eq!(d["append"][0]["text"], "folded");
        assert_eq!(d["append"][1], json!({"ref": 3}));
        let d = v.delta(&ctx);
        assert_eq!(d, json!({"keep": 2, "append": []}));
    }
}
