//! A recorded session replayed under a fold policy with gold folds, into items.

use super::*;
use crate::driver::Driver;

/// A recorded session to replay under the fold policy.
#[derive(Debug, Clone, Copy)]
pub struct Recorded<'a> {
    /// Where its items come from.
    pub origin: Origin<'a>,
    /// Its messages in order, turn-numbered (0 before the first prompt); each turn's first
    /// message is its prompt.
    pub messages: &'a [Arc<Message>],
}

/// Settings of [`replay_items`].
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// Tokens of the system prompt and tools (the fold policy's pressure timing reads them).
    pub prefix_tokens: u32,
    /// Characters a tool output keeps in an item.
    pub max_tool_output: usize,
    /// The workspace-relative archive folder named in fold results.
    pub archive_dir: String,
}

/// Replays a recorded session under a fold policy with gold folds and returns an item at every
/// turn ≥ 2 that has a turn on offer. At each turn the policy decides whether the counting
/// threshold shows a card (its own [`Policy::card`]); where it does, the card is attached to the
/// prompt and the oracle answers it right after the prompt (its `fold_unit` calls and the
/// policy's replies become messages, as in a live session); at the end of the turn the policy's
/// splices are applied with the archive's real sha256. A compaction summary in the recording
/// compacts the context as the policy would. The policy runs under a [`Driver`], as in the live
/// loop and the replay engine.
pub fn replay_items(rec: Recorded<'_>, policy: Box<dyn Policy>, opts: &ReplayOptions) -> Vec<Item> {
    let msgs = rec.messages;
    let labels = rec.origin.labels;
    let last = msgs.iter().map(|m| m.turn).max().unwrap_or(0);
    let mut d = Driver::new(policy, opts.prefix_tokens);
    let mut items = Vec::new();
    let mut i = 0;
    while i < msgs.len() && msgs[i].turn == 0 {
        d.push(Arc::clone(&msgs[i]));
        i += 1;
    }
    let prompt_of = |t: u32| {
        msgs.iter()
            .find(|m| m.turn == t)
            .filter(|m| m.is_human())
            .map(|m| m.text.clone())
    };
    for t in 1..=last {
        let start = i;
        while i < msgs.len() && msgs[i].turn <= t {
            i += 1;
        }
        let turn = &msgs[start..i];
        let offer = d.start_turn(t);
        let Some(prompt) = turn.first().filter(|m| m.is_human()) else {
            for m in turn {
                d.push(Arc::clone(m));
            }
            continue;
        };
        if let Some(item) = build_item(
            rec.origin,
            &d.context().messages,
            t,
            &prompt.text,
            offer.is_some(),
            opts.max_tool_output,
        ) {
            items.push(item);
        }
        match &offer {
            Some(o) => {
                let mut carded = (**prompt).clone();
                carded.card = Some(o.text.clone());
                d.push(carded.sealed());
                let unit = |x: u32| label_of(labels, x);
                let none = |_: u32| None;
                let p = CardPoint {
                    offered: &o.turns,
                    current: t,
                    user: &none,
                    unit: &unit,
                    last_turn: (labels.len() as u32).max(t),
                };
                let calls = fold_calls(&judge::ranges(Judge::Oracle, &p));
                if !calls.is_empty() {
                    let calls: Vec<ToolCall> = calls
                        .into_iter()
                        .map(|mut c| {
                            c.id = format!("judge-{t}-{}", c.id);
                            c
                        })
                        .collect();
                    d.push(Message::assistant(t, "", calls.clone()));
                    for c in &calls {
                        let reply = d.answer(c).reply;
                        d.push(Message::tool_result(t, c, reply.text, reply.is_error));
                    }
                }
            }
            None => d.push(Arc::clone(prompt)),
        }
        for m in &turn[1..] {
            if m.kind == MessageKind::Summary {
                d.compacted(&[], Arc::clone(m));
            } else {
                d.push(Arc::clone(m));
            }
        }
        let next = prompt_of(t + 1);
        for p in d.end_turn(&opts.archive_dir, next.as_deref()) {
            // A range no longer in the context is left as it is, as in the live loop.
            let _ = d.apply_splice(&p, None);
        }
    }
    items
}
