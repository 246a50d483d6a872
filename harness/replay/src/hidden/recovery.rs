//! Net cost after recovery: what it would have cost to get back what a policy hid, as the
//! behaviour profile ([`harness_core::behaviour::Profile`], measured on real sessions after
//! real compactions: [`crate::losses`]) says agents do.
//!
//! A hidden reference ([`super::HiddenRef`]) says the recorded response used something the
//! policy's request no longer showed. Per hidden reference:
//!
//! - **whether** it is fetched back: with the profile's recovery probability for the kind of
//!   loss ([`LossKind::Summary`] when a fold's archive holds its source or a compaction came
//!   before, else [`LossKind::None`]), drawn from a uniform number seeded by the session, the
//!   response and the reference (so every policy draws the same number for the same reference,
//!   and a higher probability recovers a superset); else it is **gone**: the agent goes on
//!   without it (a loss, counted, not a cost);
//! - **how**: among the means the reference allows, one drawn with the profile's shares
//!   ([`harness_core::behaviour::Means`]): a **re-read** of the file its source read (the
//!   workspace has it: no edit since took the reference out of the file — it is not in an edit's
//!   old text, and no write replaced the file), a **re-run** of the command or search that showed it
//!   (its recorded output assumed the same), a **search** of the workspace for it (an output of
//!   the profile's median re-fetch size), an **archive read** (a `grep` of the archive folder
//!   when a fold's archive holds a source: every line of the archived sources holding it, each
//!   as `ARCHIVE:N:line`, capped at [`GREP_OUTPUT_CAP`] bytes as the runner caps a tool
//!   result). The agent re-explores: a re-read or re-run does not need the call to be in view.
//!   A reference none of whose means the profile gives any weight is gone.
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
//! Each replay is priced three times, at the low end, the point and the high end of the
//! profile's intervals ([`End`]), with the same draws: the verdict's range.
//!
//! What the model leaves out: the recovered text is not fed back into the policy (its thresholds,
//! cards and folds see the recorded context, as without recovery); the model's own words asking
//! for the recovery are its call message only.

use std::sync::Arc;

use std::collections::HashMap;

use harness_core::behaviour::{End, LossKind, Profile};
use harness_core::Rng;
use harness_core::{Message, MessageKind, Role, ToolCall};
use harness_import::ImportedSession;
use serde::{Deserialize, Serialize};

use super::index::{Candidate, SessionIndex};
use crate::engine::FoldEvent;
use crate::losses::calls::{self, Act};

/// The most bytes a recovery's grep output keeps (the runner's cap on one tool result: the first
/// and last halves kept, with a note).
pub(crate) const GREP_OUTPUT_CAP: usize = 50_000;

/// What recovering a policy's hidden references would have cost, and what could not be
/// recovered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    /// Responses that needed an extra round trip first (one per response, all its recoveries in
    /// it).
    pub round_trips: usize,
    /// Input tokens of those extra requests (the policy's context at that point, with what was
    /// recovered before and still carried).
    pub round_trip_tokens: u64,
    /// Greps of the archive made.
    pub archive_greps: usize,
    /// Calls re-run (commands and searches).
    pub(crate) reruns: usize,
    /// Files read again.
    #[serde(default)]
    pub rereads: usize,
    /// Searches of the workspace.
    #[serde(default)]
    pub(crate) searches: usize,
    /// Tokens of the recovered messages (calls and results) when they were fetched, once each.
    pub fetched_tokens: u64,
    /// Tokens of the recovered messages (calls and results), summed over every request and
    /// compaction call that carries them.
    pub carried_tokens: u64,
    /// Hidden references a recovery of their own brought back.
    pub recovered: usize,
    /// Hidden references an earlier recovery still carried already shows.
    pub covered: usize,
    /// Hidden references not fetched back (the agent went on without them, or nothing could
    /// show them again) and no recovery showing them: lost.
    pub gone: usize,
    /// What recovery costs in dollars with prompt caching, at each request's price: a round
    /// trip reads the policy's context and what is carried from the cache (its prefix is the
    /// request before it), the recovered call and result are written once, and every later
    /// request that carries them reads them.
    #[serde(default)]
    pub cost: f64,
}

/// The recovery of a policy's replay at the low and high ends of the profile's intervals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RecoveryRange {
    /// At the low end of the recovery probability.
    pub low: Recovery,
    /// At the high end.
    pub high: Recovery,
}

/// What the workspace of a recorded session could show again: for each tool result, what its
/// call did, and when each file was edited. Built once per session, shared by its policies.
#[derive(Debug, Default)]
pub struct Workspace {
    /// Per tool result (message index): what its call did.
    acts: HashMap<u32, Act>,
    /// Per file: the calls that edited it (message index, call index), ascending.
    edits: HashMap<String, Vec<(u32, usize)>>,
    /// The session's seed for the draws.
    pub(crate) seed: u64,
}

impl Workspace {
    /// What `session`'s calls did.
    pub fn new(session: &ImportedSession, ix: &SessionIndex) -> Workspace {
        let cwd = session.cwd.as_deref();
        let mut w = Workspace {
            seed: Rng::for_name(0x5eed, &session.id).next_u64(),
            ..Workspace::default()
        };
        let mut by_id: HashMap<&str, Act> = HashMap::new();
        for (i, m) in session.messages.iter().enumerate() {
            for (k, c) in m.tool_calls.iter().enumerate() {
                let act = calls::classify(c, cwd);
                if let Act::Edit(paths) = &act {
                    for p in paths {
                        w.edits.entry(p.clone()).or_default().push((i as u32, k));
                    }
                }
                by_id.insert(c.id.as_str(), act);
            }
            if m.role == Role::Tool && ix.caller.get(i).copied().flatten().is_some() {
                if let Some(act) = m.tool_call_id.as_deref().and_then(|id| by_id.get(id)) {
                    w.acts.insert(i as u32, act.clone());
                }
            }
        }
        w
    }

    /// Whether an edit of `path` after message `from` and before message `to` took `text` out
    /// of it (the text is in what the edit replaced: `old_string`, `old`, a patch's `-` lines),
    /// so that a re-read no longer shows it.
    fn edited_away(
        &self,
        msgs: &[Arc<Message>],
        path: &str,
        text: &str,
        from: u32,
        to: usize,
    ) -> bool {
        let Some(edits) = self.edits.get(path) else {
            return false;
        };
        edits
            .iter()
            .filter(|&&(m, _)| m > from && (m as usize) < to)
            .filter_map(|&(m, k)| msgs[m as usize].tool_calls.get(k))
            .any(|c| {
                let old = ["old_string", "old_str", "old"]
                    .iter()
                    .filter_map(|k| c.str_arg(k))
                    .any(|o| o.contains(text));
                let patch = ["input", "patch"]
                    .iter()
                    .filter_map(|k| c.str_arg(k))
                    .any(|p| p.lines().any(|l| l.starts_with('-') && l.contains(text)));
                let whole = c.name.to_ascii_lowercase().contains("write");
                old || patch || whole
            })
    }
}

/// How a reference can be fetched back (the profile's means, in its order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Means {
    Reread,
    Rerun,
    Search,
    Archive,
}

const MEANS: [Means; 4] = [Means::Reread, Means::Rerun, Means::Search, Means::Archive];

impl Recovery {
    /// Every token recovery adds to the policy's input: the extra requests and the carried text.
    pub fn tokens(&self) -> u64 {
        self.round_trip_tokens + self.carried_tokens
    }

    /// Adds another policy replay's recovery.
    pub(crate) fn add(&mut self, o: &Recovery) {
        self.round_trips += o.round_trips;
        self.round_trip_tokens += o.round_trip_tokens;
        self.archive_greps += o.archive_greps;
        self.reruns += o.reruns;
        self.rereads += o.rereads;
        self.searches += o.searches;
        self.fetched_tokens += o.fetched_tokens;
        self.carried_tokens += o.carried_tokens;
        self.recovered += o.recovered;
        self.covered += o.covered;
        self.gone += o.gone;
        self.cost += o.cost;
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

/// The recovery of one policy's replay, request by request (driven by the observer), at one end
/// of the profile's intervals.
#[derive(Debug)]
pub(crate) struct Recoverer {
    carried: Vec<Carried>,
    /// The totals.
    pub(crate) total: Recovery,
    /// Whether the response being observed needs a round trip, and the carried tokens before it.
    trip: Option<u64>,
    /// Recovery calls made, for unique call ids.
    calls: usize,
    /// Which end of the profile's intervals it reads.
    end: End,
    /// Carried items before this index were there before the response being observed.
    fresh: usize,
}

impl Recoverer {
    /// A recoverer reading the profile at `end`.
    pub(crate) fn new(end: End) -> Recoverer {
        Recoverer {
            carried: Vec::new(),
            total: Recovery::default(),
            trip: None,
            calls: 0,
            end,
            fresh: 0,
        }
    }
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
    /// What the workspace could show again.
    pub(crate) ws: &'a Workspace,
    /// The behaviour profile.
    pub(crate) profile: &'a Profile,
    /// The recorded request being observed.
    pub(crate) request: usize,
    /// Whether the policy compacted before it.
    pub(crate) compacted: bool,
}

/// A uniform number in [0, 1) for a reference of a response: the same for every policy.
fn uniform(seed: u64, request: usize, token: &str, salt: u64) -> f64 {
    Rng::for_name(
        seed ^ (request as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt,
        token,
    )
    .next_f64()
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
        self.fresh = self.carried.len();
        self.trip = None;
    }

    /// A compaction replaced the context: the compaction call read what was carried, then it is
    /// gone.
    pub(crate) fn compacted(&mut self) {
        self.total.carried_tokens += self.carried.iter().map(|c| c.tokens).sum::<u64>();
        self.carried.clear();
        self.fresh = 0;
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
        let kind = if source == super::Source::Archive || at.compacted {
            LossKind::Summary
        } else {
            LossKind::None
        };
        let kp = at.profile.kind(kind);
        let token = at.ix.text(c.token);
        let item = if uniform(at.ws.seed, at.request, token, 0) < kp.recover.at(self.end) {
            let shares = kp.means.shares();
            let avail: Vec<(Means, f64)> = MEANS
                .iter()
                .zip(shares)
                .filter(|(m, w)| *w > 0.0 && self.allows(at, c, source, **m))
                .map(|(m, w)| (*m, w))
                .collect();
            let sum: f64 = avail.iter().map(|(_, w)| w).sum();
            let mut u = uniform(at.ws.seed, at.request, token, 1) * sum;
            let chosen = avail.iter().find(|(_, w)| {
                u -= w;
                u < 0.0
            });
            chosen
                .or(avail.last())
                .and_then(|(m, _)| self.fetch(at, c, *m, kp.sizes.median))
        } else {
            None
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

    /// Whether `means` can fetch `c` back.
    fn allows(&self, at: &At<'_>, c: &Candidate, source: super::Source, means: Means) -> bool {
        match means {
            Means::Archive => source == super::Source::Archive,
            Means::Reread => self.source_of(at, c, true).is_some(),
            Means::Rerun => self.source_of(at, c, false).is_some(),
            Means::Search => c
                .sources
                .iter()
                .any(|&s| at.session_message(s).role == Role::Tool),
        }
    }

    /// The latest tool-result source of `c` whose call the workspace can answer again: a read of
    /// files not edited since (`read`), else a command or search.
    fn source_of(&self, at: &At<'_>, c: &Candidate, read: bool) -> Option<(u32, ToolCall)> {
        c.sources.iter().rev().find_map(|&s| {
            let m = at.session_message(s);
            if m.role != Role::Tool {
                return None;
            }
            let text = at.ix.text(c.token);
            let ok = match at.ws.acts.get(&s)? {
                Act::Read(paths) => {
                    read && !paths
                        .iter()
                        .any(|p| at.ws.edited_away(at.msgs, p, text, s, at.context))
                }
                Act::Command(_) | Act::Search => !read,
                Act::Edit(_) | Act::Other => false,
            };
            if !ok {
                return None;
            }
            let caller = at.ix.caller[s as usize]?;
            let id = m.tool_call_id.as_deref()?;
            let call = at
                .session_message(caller)
                .tool_calls
                .iter()
                .find(|k| k.id == id)?;
            Some((s, call.clone()))
        })
    }

    /// The call `means` makes for `c`, and what it shows.
    /// A search's output is `search_tokens` (the profile's median re-fetch).
    fn fetch(
        &mut self,
        at: &At<'_>,
        c: &Candidate,
        means: Means,
        search_tokens: f64,
    ) -> Option<Carried> {
        match means {
            Means::Archive => self.grep(at, c),
            Means::Reread | Means::Rerun => {
                let (source, mut call) = self.source_of(at, c, means == Means::Reread)?;
                if means == Means::Reread {
                    self.total.rereads += 1;
                } else {
                    self.total.reruns += 1;
                }
                call.id = self.next_id();
                let asked = Message::assistant(at.turn, "", vec![call]);
                Some(Carried {
                    tokens: u64::from(asked.tokens) + u64::from(at.session_message(source).tokens),
                    anchor: anchor(at),
                    folds_at: at.folds.len(),
                    shows: Shows::Message(source),
                })
            }
            Means::Search => {
                self.total.searches += 1;
                let call = ToolCall {
                    id: self.next_id(),
                    name: "grep".into(),
                    args: serde_json::json!({ "pattern": at.ix.text(c.token) }),
                };
                let asked = Message::assistant(at.turn, "", vec![call]);
                let output = search_tokens.max(0.0).round() as u64;
                Some(Carried {
                    tokens: u64::from(asked.tokens) + output,
                    anchor: anchor(at),
                    folds_at: at.folds.len(),
                    shows: Shows::Tokens(vec![c.token]),
                })
            }
        }
    }

    /// The end of the response being observed: its round trip, and what its request carries,
    /// priced at `price` (the request's model's).
    pub(crate) fn end(&mut self, request_tokens: u64, price: &harness_core::metrics::Price) {
        let dollars = |tokens: u64, rate: f64| tokens as f64 * rate * price.input / 1e6;
        if let Some(before) = self.trip.take() {
            self.total.round_trips += 1;
            self.total.round_trip_tokens += request_tokens + before;
            // The round trip's prefix is the request before it: read from the cache.
            self.total.cost += dollars(request_tokens + before, price.cache_read);
        }
        // This request carries what earlier ones wrote (read) and what its round trip just
        // fetched (written once, here).
        let old: u64 = self.carried[..self.fresh].iter().map(|c| c.tokens).sum();
        let new: u64 = self.carried[self.fresh..].iter().map(|c| c.tokens).sum();
        self.fresh = self.carried.len();
        self.total.carried_tokens += old + new;
        self.total.cost += dollars(old, price.cache_read) + dollars(new, price.cache_write);
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
                harness_core::ARCHIVE_DIR,
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
                "path": harness_core::ARCHIVE_DIR,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edit_takes_out_of_a_file_what_its_old_text_held_and_a_write_all_of_it() {
        let call = |id: &str, name: &str, args: serde_json::Value| ToolCall {
            id: id.into(),
            name: name.into(),
            args,
        };
        let read = call("r", "Read", json!({"file_path": "a.py"}));
        let edit = call(
            "e",
            "Edit",
            json!({"file_path": "a.py", "old_string": "RATE = 0.15", "new_string": "RATE = 0.20"}),
        );
        let write = call("w", "Write", json!({"file_path": "b.py", "content": "x"}));
        let messages = vec![
            Message::assistant(1, "", vec![read.clone()]),
            Message::tool_result(1, &read, "RATE = 0.15\nZONE = 9", false),
            Message::assistant(1, "", vec![edit.clone(), write.clone()]),
            Message::tool_result(1, &edit, "ok", false),
            Message::tool_result(1, &write, "ok", false),
        ];
        let session = ImportedSession {
            id: "s".into(),
            format: harness_import::Format::ClaudeCode,
            source: "s.jsonl".into(),
            parent: None,
            system: None,
            messages,
            requests: Vec::new(),
            events: Vec::new(),
            human_turns: Vec::new(),
            dropped_prefix: 0,
            warnings: Vec::new(),
            started_ms: None,
            ended_ms: None,
            cwd: None,
            message_ms: Vec::new(),
        };
        let ix = SessionIndex::new(&session);
        let ws = Workspace::new(&session, &ix);
        let m = &session.messages;
        assert!(ws.edited_away(m, "a.py", "0.15", 1, 5));
        assert!(!ws.edited_away(m, "a.py", "ZONE = 9", 1, 5));
        // Not yet edited at message 2.
        assert!(!ws.edited_away(m, "a.py", "0.15", 1, 2));
        // A write replaces the whole file.
        assert!(ws.edited_away(m, "b.py", "anything", 0, 5));
        assert_eq!(ws.acts.get(&1), Some(&Act::Read(vec!["a.py".into()])));
    }
}
