//! Codex forks across files: drop a fork's replay of its parent's history.

use harness_core::Message;

use crate::session::{Format, ImportedSession};

/// Whether two messages say the same thing (ids and token memo aside).
fn same(a: &Message, b: &Message) -> bool {
    a.role == b.role
        && a.text == b.text
        && a.tool_calls == b.tool_calls
        && a.tool_call_id == b.tool_call_id
        && a.kind == b.kind
}

/// The number of leading messages two sessions share.
fn common_prefix(a: &ImportedSession, b: &ImportedSession) -> usize {
    a.messages
        .iter()
        .zip(&b.messages)
        .take_while(|(x, y)| same(x, y))
        .count()
}

fn is_codex(s: &ImportedSession) -> bool {
    matches!(s.format, Format::Codex | Format::CodexLegacy)
}

/// Finds the parent of session `i` and the length of the prefix it replays.
fn plan(sessions: &[ImportedSession], i: usize) -> Option<(usize, usize)> {
    let child = &sessions[i];
    if !is_codex(child) || child.dropped_prefix > 0 {
        return None;
    }
    let mut best: Option<(usize, usize)> = None;
    for (j, parent) in sessions.iter().enumerate() {
        if j == i || !is_codex(parent) {
            continue;
        }
        let named = child.parent.as_deref() == Some(parent.id.as_str());
        if child.parent.is_some() && !named {
            continue;
        }
        let k = common_prefix(child, parent);
        if k == 0 || k >= child.messages.len() {
            continue; // nothing shared, or nothing new in the child
        }
        if !named {
            // An unnamed fork must share a whole exchange (a prompt and the model's answer to it:
            // model outputs do not repeat by chance), end its share at a turn boundary of the
            // parent, and be the younger of the two (Codex ids are time-ordered UUIDv7s).
            let Some(first_prompt) = parent.human_turns.first().map(|t| t.message) else {
                continue;
            };
            let boundary = k == parent.messages.len() || parent.messages[k].is_human();
            if k < first_prompt + 2 || !boundary || child.id <= parent.id {
                continue;
            }
        }
        if best.is_none_or(|(_, bk)| k > bk) {
            best = Some((j, k));
        }
    }
    best
}

/// Drops from every Codex fork the prefix it replays from a parent in `sessions`, and sets its
/// `parent`.
///
/// A fork's parent is the session its `session_meta` names; when it names none, any other Codex
/// session whose history it starts with (a whole prompt-and-answer exchange at least, ending at
/// a turn boundary of the parent, the parent being the older id). The dropped messages are
/// counted in [`ImportedSession::dropped_prefix`]; requests, events and human turns inside the
/// prefix go with them and the others are re-indexed. Turn numbers are kept: a fork continues
/// its parent's turns. Sessions already trimmed when read (a replay inside the file) are left
/// alone.
pub fn link_forks(sessions: &mut [ImportedSession]) {
    let plans: Vec<(usize, usize, usize)> = (0..sessions.len())
        .filter_map(|i| plan(sessions, i).map(|(j, k)| (i, j, k)))
        .collect();
    for (i, j, k) in plans {
        let parent_id = sessions[j].id.clone();
        let s = &mut sessions[i];
        s.parent = Some(parent_id);
        s.messages.drain(..k);
        s.message_ms.drain(..k.min(s.message_ms.len()));
        s.requests.retain(|r| r.message >= k);
        for r in &mut s.requests {
            r.message -= k;
            r.context = r.context.saturating_sub(k);
            r.context_start = r.context_start.saturating_sub(k);
        }
        s.events.retain(|e| e.message >= k);
        for e in &mut s.events {
            e.message -= k;
        }
        s.human_turns.retain(|t| t.message >= k);
        for t in &mut s.human_turns {
            t.message -= k;
        }
        s.dropped_prefix = k;
    }
}
