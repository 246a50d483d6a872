//! Net cost after recovery: what it would have cost to get back what a policy hid.
//!
//! A hidden reference ([`super::HiddenRef`]) says the recorded response used something the
//! policy's request no longer showed. An agent that needs it must fetch it first, and what it
//! fetches then rides along in its context. The model, per hidden reference, by its source:
//!
//! - **archive** (a fold's archive holds a source message): a `grep` of the archive folder for
//!   the reference. Its output is every line of the archived source messages holding it, each as
//!   `ARCHIVE:N:line` (N is the line's place in its message; the archive's own numbering differs
//!   by the lines before the message, a token or two), capped at [`GREP_OUTPUT_CAP`] bytes as the
//!   runner caps a tool result.
//! - **rerun** (a source is a tool result whose call the request still shows): the call again,
//!   with its recorded output (the same output is assumed; a recording cannot say).
//! - **gone** (no source left): no recovery; a loss, counted, not a cost.
//!
//! The call and its result are one message each, counted in o200k tokens as every message is.
//! The recoveries a response needs are made in one extra round trip just before it (parallel
//! calls): a request of the policy's context at that point, counted as one request more. Then the
//! recovered messages stay in the context, in every later request (and compaction call), for as
//! long as the policy keeps the tool results beside them: a recovery made in turn `t` is
//! **anchored** to the last recorded tool result of turn `t` before the response (else the first
//! one after it), and carried while the policy's request holds that message — so `trim` drops it
//! with the turn's other results, a fold of the turn or a compaction with everything else. A turn
//! with no tool result has no anchor: its recovery is carried until the policy's next fold or
//! compaction. While carried, a recovery shows what it holds: a later reference it shows costs
//! nothing more (`covered`).
//!
//! What the model leaves out: the recovered text is not fed back into the policy (its thresholds,
//! cards and folds see the recorded context, as without recovery); the model's own words asking
//! for the recovery are its call message only; and a reference is assumed to be recovered by the
//! first call that can show it — an agent that does not know where to look pays more, one that
//! needs nothing of it (a coincidence; docs/replay.md's precision sample) pays less.

use std::sync::Arc;

use harness_core::message::{Message, MessageKind, Role, ToolCall};
use serde::{Deserialize, Serialize};

use super::index::{Candidate, SessionIndex};
use crate::engine::FoldEvent;

/// The most bytes a recovery's grep output keeps (the runner's cap on one tool result: the first
/// and last halves kept, with a note).
pub const GREP_OUTPUT_CAP: usize = 50_000;

/// What recovering a policy's hidden references would have cost, and what could not be
/// recovered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recovery {
    /// Responses that needed an extra round trip first (one per response, all its recoveries in
    /// it).
    pub round_trips: usize,
    /// Input tokens of those extra requests (the policy's context at that point, with what was
    /// recovered before and still carried).
    pub round_trip_tokens: u64,
    /// Greps of the archive made.
    pub archive_greps: usize,
    /// Calls re-run.
    pub reruns: usize,
    /// Tokens of the recovered messages (calls and results) when they were fetched, once each.
    pub fetched_tokens: u64,
    /// Tokens of the recovered messages (calls and results), summed over every request and
    /// compaction call that carries them.
    pub carried_tokens: u64,
    /// Hidden references a recovery of their own brought back.
    pub recovered: usize,
    /// Hidden references an earlier recovery still carried already shows.
    pub covered: usize,
    /// Hidden references with no source to recover them from and no recovery showing them: lost.
    pub gone: usize,
}

impl Recovery {
    /// Every token recovery adds to the policy's input: the extra requests and the carried text.
    pub fn tokens(&self) -> u64 {
        self.round_trip_tokens + self.carried_tokens
    }

    /// Adds another policy replay's recovery.
    pub fn add(&mut self, o: &Recovery) {
        self.round_trips += o.round_trips;
        self.round_trip_tokens += o.round_trip_tokens;
        self.archive_greps += o.archive_greps;
        self.reruns += o.reruns;
        self.fetched_tokens += o.fetched_tokens;
        self.carried_tokens += o.carried_tokens;
        self.recovered += o.recovered;
        self.covered += o.covered;
        self.gone += o.gone;
    }
}

/// What a carried recovery shows.
#[derive(Debug)]
enum Shows {
    /// A re-run's output: a recorded tool result, whole.
    Message(u32),
    /// A grep's output: its distinctive tokens and lines (sorted ids).
    Tokens(Vec<u32>),
}

/// A recovered call and result in the context.
#[derive(Debug)]
struct Carried {
    tokens: u64,
    /// The recorded tool result it sits beside; `None`: carried until the next fold or compaction.
    anchor: Option<u32>,
    /// Folds made when it was recovered.
    folds_at: usize,
    shows: Shows,
}

/// The recovery of one policy's replay, request by request (driven by the observer).
#[derive(Debug, Default)]
pub(crate) struct Recoverer {
    carried: Vec<Carried>,
    /// The totals.
    pub(crate) total: Recovery,
    /// Whether the response being observed needs a round trip, and the carried tokens before it.
    trip: Option<u64>,
    /// Recovery calls made, for unique call ids.
    calls: usize,
}

/// What the recoverer needs to know of the request being observed.
pub(crate) struct At<'a> {
    /// The session's recorded messages.
    pub(crate) msgs: &'a [Arc<Message>],
    pub(crate) ix: &'a SessionIndex,
    /// The recorded request's context length (messages before its response).
    pub(crate) context: usize,
    /// The turn in progress.
    pub(crate) turn: u32,
    /// The policy's folds so far.
    pub(crate) folds: &'a [FoldEvent],
}

impl Recoverer {
    /// A new request: drops what the policy no longer keeps (`present` says whether a recorded
    /// message is in the request).
    pub(crate) fn begin(&mut self, at: &At<'_>, present: impl Fn(usize) -> bool) {
        let folds = at.folds.len();
        self.carried.retain(|c| match c.anchor {
            Some(a) if (a as usize) >= at.context => true,
            Some(a) => present(a as usize),
            None => folds == c.folds_at,
        });
        self.trip = None;
    }

    /// A compaction replaced the context: the compaction call read what was carried, then it is
    /// gone.
    pub(crate) fn compacted(&mut self) {
        self.total.carried_tokens += self.carried.iter().map(|c| c.tokens).sum::<u64>();
        self.carried.clear();
    }

    fn carried_shows(&self, c: &Candidate) -> bool {
        self.carried.iter().any(|k| match &k.shows {
            Shows::Message(m) => c.sources.binary_search(m).is_ok(),
            Shows::Tokens(ids) => ids.binary_search(&c.token).is_ok(),
        })
    }

    /// One hidden reference of the response being observed, with its source.
    pub(crate) fn hidden(&mut self, at: &At<'_>, c: &Candidate, source: super::Source) {
        if self.carried_shows(c) {
            self.total.covered += 1;
            return;
        }
        let before: u64 = self.carried.iter().map(|k| k.tokens).sum();
        let item = match source {
            super::Source::Archive => self.grep(at, c),
            super::Source::Rerun => self.rerun(at, c),
            super::Source::None => None,
        };
        let Some(item) = item else {
            self.total.gone += 1;
            return;
        };
        self.total.recovered += 1;
        self.total.fetched_tokens += item.tokens;
        self.trip.get_or_insert(before);
        self.carried.push(item);
    }

    /// The end of the response being observed: its round trip, and what its request carries.
    pub(crate) fn end(&mut self, request_tokens: u64) {
        if let Some(before) = self.trip.take() {
            self.total.round_trips += 1;
            self.total.round_trip_tokens += request_tokens + before;
        }
        self.total.carried_tokens += self.carried.iter().map(|c| c.tokens).sum::<u64>();
    }

    fn next_id(&mut self) -> String {
        self.calls += 1;
        format!("recovery-{}", self.calls)
    }

    /// A grep of the archive for the reference: the lines of its archived sources holding it.
    fn grep(&mut self, at: &At<'_>, c: &Candidate) -> Option<Carried> {
        let ix = at.ix;
        let needle = ix.text(c.token);
        let mut out = String::new();
        let mut archived = false;
        for &s in &c.sources {
            let m = at.session_message(s);
            let Some(f) = at.folds.iter().find(|f| (f.from..=f.to).contains(&m.turn)) else {
                continue;
            };
            archived = true;
            let file = format!(
                "{}/{}",
                harness_core::session::ARCHIVE_DIR,
                harness_core::fold::archive_name(f.from, f.to, "fold")
            );
            let calls = m.tool_calls.iter().map(ToolCall::canonical_args);
            let lines = m
                .text
                .lines()
                .map(str::to_string)
                .chain(calls)
                .enumerate()
                .filter(|(_, l)| l.contains(needle));
            for (n, l) in lines {
                out.push_str(&format!("{file}:{}:{l}\n", n + 1));
            }
        }
        if !archived {
            return None;
        }
        self.total.archive_greps += 1;
        let call = ToolCall {
            id: self.next_id(),
            name: "grep".into(),
            args: serde_json::json!({
                "pattern": needle,
                "path": harness_core::session::ARCHIVE_DIR,
            }),
        };
        let result = Message::tool_result(at.turn, &call, cap(out), false);
        let shown = ix.ids_of(&result);
        let asked = Message::assistant(at.turn, "", vec![call]);
        Some(Carried {
            tokens: u64::from(asked.tokens) + u64::from(result.tokens),
            anchor: anchor(at),
            folds_at: at.folds.len(),
            shows: Shows::Tokens(shown),
        })
    }

    /// The call that showed the reference, again: its latest source whose call the request shows.
    fn rerun(&mut self, at: &At<'_>, c: &Candidate) -> Option<Carried> {
        let ix = at.ix;
        let (source, call) = c.sources.iter().rev().find_map(|&s| {
            let m = at.session_message(s);
            if m.role != Role::Tool {
                return None;
            }
            let caller = ix.caller[s as usize]?;
            let id = m.tool_call_id.as_deref()?;
            let call = at
                .session_message(caller)
                .tool_calls
                .iter()
                .find(|k| k.id == id)?;
            Some((s, call.clone()))
        })?;
        self.total.reruns += 1;
        let mut call = call;
        call.id = self.next_id();
        let asked = Message::assistant(at.turn, "", vec![call]);
        Some(Carried {
            tokens: u64::from(asked.tokens) + u64::from(at.session_message(source).tokens),
            anchor: anchor(at),
            folds_at: at.folds.len(),
            shows: Shows::Message(source),
        })
    }
}

impl At<'_> {
    fn session_message(&self, i: u32) -> &Message {
        &self.msgs[i as usize]
    }
}

/// The recorded tool result a recovery made before the response sits beside: the last of the
/// turn before it, else the first of the turn after it.
fn anchor(at: &At<'_>) -> Option<u32> {
    let msgs = at.msgs;
    let is_result = |m: &Message| m.role == Role::Tool && m.kind != MessageKind::Summary;
    let end = at.context.min(msgs.len());
    let mut i = end;
    while i > 0 && msgs[i - 1].turn == at.turn {
        i -= 1;
        if is_result(&msgs[i]) {
            return Some(i as u32);
        }
    }
    msgs[end..]
        .iter()
        .take_while(|m| m.turn == at.turn)
        .position(|m| is_result(m))
        .map(|k| (end + k) as u32)
}

/// A grep's output, capped as the runner caps a tool result.
fn cap(text: String) -> String {
    if text.len() <= GREP_OUTPUT_CAP {
        return text;
    }
    let half = GREP_OUTPUT_CAP / 2;
    let mut head = half;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - half;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[… {} bytes left out …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}
