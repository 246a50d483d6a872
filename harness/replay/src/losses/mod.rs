//! After real compactions: what a recorded agent did after it lost its context for real.
//!
//! When a host compacts mid-session, the transcript records what the model did next. For every
//! recorded loss — Claude Code's `compact_boundary` with its `isCompactSummary` record and
//! sessions that begin "continued from a previous conversation"; Codex's `compacted` items and
//! `context_compacted` events; OpenHands' condensations ([`harness_import::EventKind`]) — this
//! module measures the first [`WINDOW_CALLS`] tool calls after it (cut at the next loss):
//!
//! - **size**: the recorded request size before and after, and the summary's size;
//! - **re-fetches**, calls that bring back content seen before the loss (`calls` tells what a
//!   call did): a re-read of a file read before (a file edited since, which is not recovery, is
//!   counted apart), an identical command run again, a search whose output lines were shown
//!   before (at least half of them), and a read of the transcript or archive the summary names;
//! - **references** to pre-loss content in the model's words and calls, by the hidden-reference
//!   rule ([`crate::hidden`]: the same distinctive strings, the same corpus-common strings left
//!   out), each counted at its first use after the loss: held by the summary (the carry-over the
//!   host put in: summary, kept prompts, re-attached files), brought back by a re-fetch, shown
//!   again by new work, or used with no visible source;
//! - **cost**: the re-fetched outputs, the requests whose calls were all re-fetches (their
//!   recorded size), and the re-fetched outputs summed over every later request that still
//!   carried them;
//! - **repeats**: prompts that restate what the user said before the loss (eight words in a row,
//!   or a whole prompt of four words or more, found in an earlier prompt).
//!
//! And the **base rate**: the same counts over equal windows with no loss before them — the
//! calls `W·k .. W·(k+1)` (k ≥ 1, so a window has history behind it) that end before the
//! session's first loss. Re-reading is common anyway; only the excess is recovery.
//!
//! Why 20 calls: recovery, when it happens, happens first (the model re-reads before it goes on),
//! so a longer window mixes it with new work and a shorter one leaves too few calls for a rate;
//! every compaction of the corpus this was built on has at least 20 calls after it.
//!
//! Pure: the session's index ([`SessionIndex`]) is the replay's, built once.

pub(crate) mod calls;
pub(crate) mod profile;
pub use profile::profile;
pub(crate) mod run;
pub use run::{measure_cell, CellLossError};
pub(crate) mod stats;
pub use stats::{group, groups, wilson, GroupStats};
pub(crate) mod table;
pub use table::{heading, losses_table, notes, rates_table, references_table};

pub use harness_core::behaviour::LossKind;
use harness_core::{MessageKind, Role};
use harness_import::{EventKind, Format, ImportedSession};
use serde::{Deserialize, Serialize};

use crate::hidden::index::{is_source, Common, FxMap, FxSet, SessionIndex};
use crate::hidden::tokens;
use calls::Act;

/// Tool calls measured after each loss, and the length of a base window.
pub const WINDOW_CALLS: usize = 20;

/// The counts of one window of tool calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Tool calls in the window.
    pub calls: usize,
    /// Re-reads of files read before and not changed since.
    pub reread_unchanged: usize,
    /// Re-reads of files read before and edited since (not recovery).
    pub reread_changed: usize,
    /// Commands identical to one run before (same text, same folder).
    pub reruns: usize,
    /// Searches whose output lines were (at least half) shown before.
    pub searches: usize,
    /// Reads of the transcript or archive the summary names (or any agent transcript, or
    /// foldbench's archive folder).
    pub archive_reads: usize,
    /// Tokens of each re-fetch's output, in order.
    pub refetch_sizes: Vec<u64>,
    /// Requests whose calls were all re-fetches: the extra round trips.
    pub extra_requests: usize,
    /// Their recorded size (reconstructed where the transcript has no usage).
    pub extra_request_tokens: u64,
    /// Re-fetched outputs summed over every later request whose recorded context held them.
    pub carried_tokens: u64,
    /// References to earlier content held by the summary (or, with no loss, by the context).
    pub refs_held: usize,
    /// References brought back by a re-fetch before their use.
    pub refs_refetched: usize,
    /// References shown again by a call that was not a re-fetch.
    pub refs_new_output: usize,
    /// References used with no visible source.
    pub refs_no_source: usize,
    /// Human prompts in the window.
    pub prompts: usize,
    /// Of them, prompts that restate an earlier one.
    pub repeats: usize,
}

impl Counts {
    /// Re-fetches: unchanged re-reads, identical commands, overlapping searches, archive reads.
    pub fn refetches(&self) -> usize {
        self.reread_unchanged + self.reruns + self.searches + self.archive_reads
    }

    /// What recovery cost in tokens: the extra requests and the carried outputs.
    pub(crate) fn recovery_tokens(&self) -> u64 {
        self.extra_request_tokens + self.carried_tokens
    }

    /// References to lost content not held by the summary: re-fetched, shown by new work, or
    /// used with no source.
    pub fn refs_lost(&self) -> usize {
        self.refs_refetched + self.refs_new_output + self.refs_no_source
    }

    /// Adds another window's counts.
    pub(crate) fn add(&mut self, o: &Counts) {
        self.calls += o.calls;
        self.reread_unchanged += o.reread_unchanged;
        self.reread_changed += o.reread_changed;
        self.reruns += o.reruns;
        self.searches += o.searches;
        self.archive_reads += o.archive_reads;
        self.refetch_sizes.extend_from_slice(&o.refetch_sizes);
        self.extra_requests += o.extra_requests;
        self.extra_request_tokens += o.extra_request_tokens;
        self.carried_tokens += o.carried_tokens;
        self.refs_held += o.refs_held;
        self.refs_refetched += o.refs_refetched;
        self.refs_new_output += o.refs_new_output;
        self.refs_no_source += o.refs_no_source;
        self.prompts += o.prompts;
        self.repeats += o.repeats;
    }
}

/// One recorded loss and what the model did in the window after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Loss {
    /// The session's id.
    pub(crate) session: String,
    /// The file it came from.
    pub(crate) source: String,
    /// The agent (the transcript's format).
    pub(crate) agent: Format,
    /// The model of the first request after the loss (else the session's).
    pub(crate) model: Option<String>,
    /// How the transcript records it.
    pub(crate) event: EventKind,
    /// What the host left in its place.
    pub kind: LossKind,
    /// `auto` or `manual`, when recorded.
    pub trigger: Option<String>,
    /// Index of the first message after it.
    pub(crate) message: usize,
    /// The turn in progress.
    pub(crate) turn: u32,
    /// The request size before it: `preTokens` when recorded, else the last request's recorded
    /// size, else its reconstructed size.
    pub tokens_before: Option<u64>,
    /// The first request's size after it (recorded, else reconstructed).
    pub(crate) tokens_after: Option<u64>,
    /// The summary's o200k tokens (a readable one).
    pub(crate) summary_tokens: Option<u64>,
    /// The size in bytes of a summary held only encrypted.
    pub(crate) opaque_summary_bytes: Option<u64>,
    /// The transcript the summary says to read back, when it names one.
    pub transcript: Option<String>,
    /// Tool calls before it in the session.
    pub calls_before: usize,
    /// Whether there is anything before it to measure against (`false`: a session that begins
    /// after its loss — counted, not in the rates).
    pub(crate) measured: bool,
    /// What the model did next.
    pub window: Counts,
}

/// A window of calls with no loss before it: the base rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseWindow {
    /// The model of its first request.
    pub(crate) model: Option<String>,
    /// Index of its first call's message.
    pub(crate) message: usize,
    /// The counts.
    pub counts: Counts,
}

/// One session's losses and base windows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionLosses {
    /// The session's id.
    pub(crate) session: String,
    /// The file.
    pub(crate) source: String,
    /// The agent.
    pub(crate) agent: Format,
    /// Who answered, when it is not the transcript's format: a foldbench run's cell
    /// (`claude-code`, `codex`, `sim`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) agent_name: Option<String>,
    /// The losses, in order.
    pub losses: Vec<Loss>,
    /// The base windows.
    pub base: Vec<BaseWindow>,
}

/// One tool call of the session, with what it did.
struct Call {
    /// The assistant message that made it.
    message: usize,
    /// Its result, when recorded.
    result: Option<usize>,
    act: Act,
    /// Whether its arguments name a transcript or archive.
    archive: bool,
}

/// The transcript a summary says to read back: Claude Code's "read the full transcript at: PATH".
pub(crate) fn transcript_named(summary: &str) -> Option<String> {
    let at = summary.find("full transcript at")?;
    let rest = summary[at..].split_once(':')?.1.trim_start();
    let path: String = rest
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect::<String>()
        .trim_end_matches(['.', ',', ')'])
        .to_string();
    (!path.is_empty()).then_some(path)
}

/// Whether a call's arguments name an agent transcript or foldbench's archive.
fn names_archive(args: &str, transcript: &[String]) -> bool {
    transcript.iter().any(|t| args.contains(t.as_str()))
        || args.contains(harness_core::ARCHIVE_DIR)
        || (args.contains("/.claude/projects/") && args.contains(".jsonl"))
        || args.contains(".codex/sessions")
}

/// A loss point: the first message after it and what the events there say.
struct Point {
    message: usize,
    event: EventKind,
    trigger: Option<String>,
    pre_tokens: Option<u64>,
    opaque: Option<u64>,
}

/// The loss points of a session: events at the same message are one loss.
fn points(session: &ImportedSession) -> Vec<Point> {
    let mut out: Vec<Point> = Vec::new();
    for e in &session.events {
        match out.last_mut().filter(|p| p.message == e.message) {
            Some(p) => {
                if e.kind == EventKind::CompactBoundary {
                    p.event = e.kind;
                }
                p.trigger = p.trigger.take().or_else(|| e.trigger.clone());
                p.pre_tokens = p.pre_tokens.or(e.pre_tokens);
                p.opaque = p.opaque.or(e.opaque_summary_bytes);
            }
            None => out.push(Point {
                message: e.message,
                event: e.kind,
                trigger: e.trigger.clone(),
                pre_tokens: e.pre_tokens,
                opaque: e.opaque_summary_bytes,
            }),
        }
    }
    out
}

/// Lower-cased words of a prompt, for repeats.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Runs of this many words in a row shared with an earlier prompt make a repeat.
pub(crate) const REPEAT_WORDS: usize = 8;
/// A whole prompt of at least this many words found in an earlier one is a repeat.
pub(crate) const REPEAT_MIN_WORDS: usize = 4;

/// Measures every session (indexed here, on up to `threads` threads, the corpus's common strings
/// found as the replay finds them): what `analyze` reports.
pub fn measure_all(sessions: &[ImportedSession], threads: usize) -> Vec<SessionLosses> {
    let indexes = crate::engine::parallel_map(sessions, threads, SessionIndex::new);
    let common = Common::of(
        sessions
            .iter()
            .zip(&indexes)
            .map(|(s, ix)| (crate::hidden::index::project(&s.source), ix)),
    );
    let pairs: Vec<(&ImportedSession, &SessionIndex)> = sessions.iter().zip(&indexes).collect();
    crate::engine::parallel_map(&pairs, threads, |(s, ix)| measure(s, ix, &common))
}

/// Measures a session: its losses with their windows, and its base windows. `ix` is the
/// session's index, `common` the corpus's common strings (as the replay's hidden references).
pub fn measure(session: &ImportedSession, ix: &SessionIndex, common: &Common) -> SessionLosses {
    Measure::new(session, ix, common).run()
}

struct Measure<'a> {
    session: &'a ImportedSession,
    ix: &'a SessionIndex,
    calls: Vec<Call>,
    /// Per token: excluded (common or in the system prompt).
    excluded: Vec<bool>,
    /// Per token: the first human message holding it (`usize::MAX`: none).
    first_human: Vec<usize>,
    /// Per message: the call it is the result of (index into `calls`).
    result_of: FxMap<usize, usize>,
    /// Per assistant message: how many calls it made.
    calls_at: FxMap<usize, usize>,
    /// Prefix sums of message tokens.
    psum: Vec<u64>,
    prefix: u64,
    /// Each human prompt: message index and words.
    prompts: Vec<(usize, Vec<String>)>,
}

impl<'a> Measure<'a> {
    fn new(session: &'a ImportedSession, ix: &'a SessionIndex, common: &Common) -> Measure<'a> {
        let msgs = &session.messages;
        let cwd = session.cwd.as_deref();
        let mut transcripts: Vec<String> = Vec::new();
        let mut ids: FxMap<&str, usize> = FxMap::default();
        for (i, m) in msgs.iter().enumerate() {
            if m.kind == MessageKind::Summary {
                transcripts.extend(transcript_named(&m.text));
            }
            if m.role == Role::Tool {
                if let Some(id) = m.tool_call_id.as_deref() {
                    ids.entry(id).or_insert(i);
                }
            }
        }
        let mut calls = Vec::new();
        let mut result_of = FxMap::default();
        let mut calls_at = FxMap::default();
        for (i, m) in msgs.iter().enumerate() {
            if !m.tool_calls.is_empty() {
                calls_at.insert(i, m.tool_calls.len());
            }
            for c in &m.tool_calls {
                let result = ids.get(c.id.as_str()).copied().filter(|&r| r > i);
                if let Some(r) = result {
                    result_of.insert(r, calls.len());
                }
                calls.push(Call {
                    message: i,
                    result,
                    act: calls::classify(c, cwd),
                    archive: names_archive(&c.args.to_string(), &transcripts),
                });
            }
        }
        let mut excluded = vec![false; ix.len()];
        for (id, s) in ix.texts().enumerate() {
            excluded[id] = common.contains(s);
        }
        if let Some(system) = &session.system {
            tokens::for_each(system, |t| {
                if let Some(id) = ix.id(t) {
                    excluded[id as usize] = true;
                }
            });
        }
        let mut first_human = vec![usize::MAX; ix.len()];
        let mut prompts = Vec::new();
        for h in &session.human_turns {
            if let Some(toks) = ix.msg_tokens.get(h.message) {
                for &t in toks {
                    let f = &mut first_human[t as usize];
                    *f = (*f).min(h.message);
                }
            }
            prompts.push((h.message, words(&h.text)));
        }
        let mut psum = Vec::with_capacity(msgs.len() + 1);
        psum.push(0u64);
        for m in msgs {
            psum.push(psum.last().copied().unwrap_or(0) + u64::from(m.tokens));
        }
        Measure {
            session,
            ix,
            calls,
            excluded,
            first_human,
            result_of,
            calls_at,
            psum,
            prefix: u64::from(crate::engine::estimate_prefix(session).tokens),
            prompts,
        }
    }

    fn run(&self) -> SessionLosses {
        let s = self.session;
        let points = points(s);
        let mut losses = Vec::new();
        for (k, p) in points.iter().enumerate() {
            let next = points.get(k + 1).map_or(s.messages.len(), |n| n.message);
            losses.push(self.loss(p, next));
        }
        let first_loss = points.first().map_or(s.messages.len(), |p| p.message);
        let pre: Vec<usize> = (0..self.calls.len())
            .filter(|&c| self.calls[c].message < first_loss)
            .collect();
        let mut base = Vec::new();
        let mut k = 1;
        while WINDOW_CALLS * (k + 1) <= pre.len() {
            let first = pre[WINDOW_CALLS * k];
            let at = self.calls[first].message;
            let window: Vec<usize> = pre[WINDOW_CALLS * k..WINDOW_CALLS * (k + 1)].to_vec();
            let end = self.window_end(&window, first_loss);
            base.push(BaseWindow {
                model: self.model_at(at),
                message: at,
                counts: self.counts(at, at, &window, end, None),
            });
            k += 1;
        }
        SessionLosses {
            session: s.id.clone(),
            source: s.source.clone(),
            agent: s.format,
            agent_name: None,
            losses,
            base,
        }
    }

    /// The model of the first request answered at or after message `at`.
    fn model_at(&self, at: usize) -> Option<String> {
        let s = self.session;
        s.requests
            .iter()
            .find(|r| r.message >= at)
            .and_then(|r| r.model.clone())
            .or_else(|| s.model().map(str::to_string))
    }

    /// The size of recorded request `k`: its usage, else the reconstructed context.
    fn request_tokens(&self, k: usize) -> u64 {
        let r = &self.session.requests[k];
        match r.usage {
            Some(u) => u.prompt_tokens(),
            None => {
                let end = r.context.min(self.session.messages.len());
                let start = r.context_start.min(end);
                self.prefix + self.psum[end] - self.psum[start]
            }
        }
    }

    /// The last message of a window of calls: its last call's result (or message), at most
    /// `limit - 1`.
    fn window_end(&self, window: &[usize], limit: usize) -> usize {
        window
            .last()
            .map(|&c| {
                let call = &self.calls[c];
                call.result.unwrap_or(call.message)
            })
            .unwrap_or(0)
            .min(limit.saturating_sub(1))
    }

    fn loss(&self, p: &Point, next: usize) -> Loss {
        let s = self.session;
        let msgs = &s.messages;
        let l = p.message;
        let calls_before = self.calls.iter().filter(|c| c.message < l).count();
        let window: Vec<usize> = (0..self.calls.len())
            .filter(|&c| self.calls[c].message >= l && self.calls[c].message < next)
            .take(WINDOW_CALLS)
            .collect();
        let first_answer = msgs[l.min(msgs.len())..]
            .iter()
            .position(|m| m.role == Role::Assistant)
            .map_or(msgs.len(), |k| l + k);
        let summary = msgs[l.min(msgs.len())..first_answer]
            .iter()
            .find(|m| m.kind == MessageKind::Summary);
        let kind = if summary.is_some() || p.opaque.is_some() || p.event == EventKind::Folded {
            LossKind::Summary
        } else {
            LossKind::None
        };
        let before = s.requests.iter().rposition(|r| r.message < l);
        let after = s.requests.iter().position(|r| r.message >= l);
        let measured = calls_before > 0 && p.event != EventKind::Continued;
        // A full window ends with its last call; a shorter one (the session ended, or the
        // next loss came first) runs to the session's end or the next loss.
        let end = if window.len() == WINDOW_CALLS {
            self.window_end(&window, next)
        } else {
            next.saturating_sub(1)
        };
        let counts = if measured {
            self.counts(l, first_answer, &window, end, Some(next))
        } else {
            Counts {
                calls: window.len(),
                ..Counts::default()
            }
        };
        Loss {
            session: s.id.clone(),
            source: s.source.clone(),
            agent: s.format,
            model: self.model_at(l),
            event: p.event,
            kind,
            trigger: p.trigger.clone(),
            message: l,
            turn: msgs.get(l).or(msgs.last()).map_or(0, |m| m.turn),
            tokens_before: p
                .pre_tokens
                .or_else(|| before.map(|k| self.request_tokens(k))),
            tokens_after: after.map(|k| self.request_tokens(k)),
            summary_tokens: summary.map(|m| u64::from(m.tokens)),
            opaque_summary_bytes: p.opaque,
            transcript: summary.and_then(|m| transcript_named(&m.text)),
            calls_before,
            measured,
            window: counts,
        }
    }

    /// The counts of a window: the calls `window` (indices into `calls`), the content before
    /// message `at` counting as seen before; `held_until` ends the host's carry-over (the loss's
    /// first answer; `at` for a base window); `end` is the window's last message; `next` the
    /// next loss, where carried outputs stop (`None`: a base window, whose carried outputs are
    /// not recovery).
    fn counts(
        &self,
        at: usize,
        held_until: usize,
        window: &[usize],
        end: usize,
        next: Option<usize>,
    ) -> Counts {
        let s = self.session;
        let msgs = &s.messages;
        let mut c = Counts {
            calls: window.len(),
            ..Counts::default()
        };
        // What was seen before: files read (last sighting), commands run.
        let mut read_at: FxMap<&str, usize> = FxMap::default();
        let mut commands: FxSet<&str> = FxSet::default();
        let mut edits: FxMap<&str, Vec<usize>> = FxMap::default();
        for call in &self.calls {
            match &call.act {
                Act::Read(ps) if call.message < at => {
                    for p in ps {
                        read_at.insert(p, call.message);
                    }
                }
                Act::Command(k) if call.message < at => {
                    commands.insert(k);
                }
                Act::Edit(ps) => {
                    for p in ps {
                        edits.entry(p).or_default().push(call.message);
                    }
                }
                _ => {}
            }
        }
        let mut refetch_results: FxSet<usize> = FxSet::default();
        let mut refetch_calls: FxSet<usize> = FxSet::default();
        for &k in window {
            let call = &self.calls[k];
            let refetch = if call.archive {
                c.archive_reads += 1;
                true
            } else {
                match &call.act {
                    Act::Read(ps) => {
                        let seen: Vec<(&str, usize)> = ps
                            .iter()
                            .filter_map(|p| read_at.get(p.as_str()).map(|&m| (p.as_str(), m)))
                            .collect();
                        if seen.is_empty() {
                            false
                        } else if seen.iter().any(|(p, last)| {
                            edits
                                .get(p)
                                .is_some_and(|e| e.iter().any(|&m| m > *last && m < call.message))
                        }) {
                            c.reread_changed += 1;
                            false
                        } else {
                            c.reread_unchanged += 1;
                            true
                        }
                    }
                    Act::Command(key) if commands.contains(key.as_str()) => {
                        c.reruns += 1;
                        true
                    }
                    Act::Search if self.shown_before(call.result, at) => {
                        c.searches += 1;
                        true
                    }
                    _ => false,
                }
            };
            if refetch {
                refetch_calls.insert(k);
                if let Some(r) = call.result {
                    refetch_results.insert(r);
                    let size = u64::from(msgs[r].tokens);
                    c.refetch_sizes.push(size);
                    if next.is_some() {
                        c.carried_tokens += size * self.requests_holding(r) as u64;
                    }
                } else {
                    c.refetch_sizes.push(0);
                }
            }
        }
        // Requests of the window whose calls were all re-fetches: extra round trips.
        if next.is_some() {
            let from = s.requests.partition_point(|r| r.message < at);
            for (k, r) in s.requests.iter().enumerate().skip(from) {
                if r.message > end {
                    break;
                }
                let mine: Vec<usize> = window
                    .iter()
                    .copied()
                    .filter(|&w| self.calls[w].message == r.message)
                    .collect();
                let all_calls = self.calls_at.get(&r.message).copied().unwrap_or(0);
                if !mine.is_empty()
                    && mine.len() == all_calls
                    && mine.iter().all(|w| refetch_calls.contains(w))
                {
                    c.extra_requests += 1;
                    c.extra_request_tokens += self.request_tokens(k);
                }
            }
        }
        self.references(&mut c, at, held_until, end, &refetch_results);
        self.repeats(&mut c, at, end);
        c
    }

    /// Whether a search's output was shown before message `at`: at least half of its lines
    /// (and at least one) occur in an earlier tool result.
    fn shown_before(&self, result: Option<usize>, at: usize) -> bool {
        let Some(r) = result else { return false };
        let ix = self.ix;
        let msgs = &self.session.messages;
        let lines: Vec<u32> = ix.msg_tokens[r]
            .iter()
            .copied()
            .filter(|&t| tokens::is_line(ix.text(t)))
            .collect();
        if lines.is_empty() {
            return false;
        }
        let before = lines
            .iter()
            .filter(|&&t| {
                ix.postings[t as usize]
                    .iter()
                    .take_while(|&&p| (p as usize) < at)
                    .any(|&p| msgs[p as usize].role == Role::Tool)
            })
            .count();
        before * 2 >= lines.len()
    }

    /// Recorded requests whose context held message `i`.
    fn requests_holding(&self, i: usize) -> usize {
        let reqs = &self.session.requests;
        let from = reqs.partition_point(|r| r.context <= i);
        reqs[from..]
            .iter()
            .take_while(|r| r.context_start <= i)
            .count()
    }

    /// References of the window's responses to content before `at`, each at its first use.
    fn references(
        &self,
        c: &mut Counts,
        at: usize,
        held_until: usize,
        end: usize,
        refetched: &FxSet<usize>,
    ) {
        let ix = self.ix;
        let msgs = &self.session.messages;
        let mut used: FxSet<u32> = FxSet::default();
        for (resp, m) in msgs.iter().enumerate().take(end + 1).skip(at) {
            if m.role != Role::Assistant {
                continue;
            }
            let mut call_lines = Vec::new();
            for call in &m.tool_calls {
                tokens::for_each_json_line(&call.args, &mut |l: &str| call_lines.extend(ix.id(l)));
            }
            for &t in &ix.msg_tokens[resp] {
                let tu = t as usize;
                if self.excluded[tu]
                    || self.first_human[tu] < resp
                    || (tokens::is_line(ix.text(t)) && !call_lines.contains(&t))
                    || used.contains(&t)
                {
                    continue;
                }
                let posts = &ix.postings[tu];
                let earlier = posts
                    .iter()
                    .take_while(|&&p| (p as usize) < at)
                    .any(|&p| is_source(&msgs[p as usize]));
                if !earlier {
                    continue;
                }
                used.insert(t);
                let since: Vec<usize> = posts
                    .iter()
                    .map(|&p| p as usize)
                    .filter(|&p| p >= at && p < resp)
                    .collect();
                if since.iter().any(|&p| p < held_until) {
                    c.refs_held += 1;
                } else if since.iter().any(|p| refetched.contains(p)) {
                    c.refs_refetched += 1;
                } else if since
                    .iter()
                    .any(|&p| msgs[p].role == Role::Tool && self.result_of.contains_key(&p))
                {
                    c.refs_new_output += 1;
                } else if at == held_until {
                    // No loss: what came before is in view.
                    c.refs_held += 1;
                } else {
                    c.refs_no_source += 1;
                }
            }
        }
    }

    /// Prompts in `[at, end]` and how many restate a prompt before `at`.
    fn repeats(&self, c: &mut Counts, at: usize, end: usize) {
        let earlier: Vec<&Vec<String>> = self
            .prompts
            .iter()
            .filter(|(m, _)| *m < at)
            .map(|(_, w)| w)
            .collect();
        let mut runs: FxSet<&[String]> = FxSet::default();
        for w in &earlier {
            for run in w.windows(REPEAT_WORDS) {
                runs.insert(run);
            }
        }
        for (m, w) in self.prompts.iter().filter(|(m, _)| *m >= at && *m <= end) {
            let _ = m;
            c.prompts += 1;
            let by_run = w.windows(REPEAT_WORDS).any(|r| runs.contains(r));
            let whole = w.len() >= REPEAT_MIN_WORDS
                && w.len() < REPEAT_WORDS
                && earlier
                    .iter()
                    .any(|e| e.windows(w.len()).any(|x| x == w.as_slice()));
            if by_run || whole {
                c.repeats += 1;
            }
        }
    }
}
