//! Hidden references and mechanical probes: what a policy's request no longer shows of what
//! the recorded response used.
//!
//! A recorded response (assistant text and tool-call arguments) shows what the agent took from
//! its context. Its **candidates** ([`Candidates`]) are its distinctive tokens (`tokens`) that
//! occur in its `none` request in a tool result or an assistant message of an earlier turn, and
//! not in its own turn before it; tokens of the system prompt, of the human messages so far and
//! tokens common in the corpus ([`Common`]) are left out. A **hidden reference** under a policy
//! is a candidate that no message of the policy's request for that response contains.
//!
//! Where it could come back from ([`Source`]): `archive` when a source message lies in a fold's
//! range (an archive read finds it), `rerun` when a source is a tool result whose call the request
//! still shows (whether the output would be the same is unknowable from a recording), `none`
//! otherwise (a summary dropped it, or trim left no record).
//!
//! The [`Observer`] follows one policy's replay: for each request it marks which recorded
//! messages the request holds (by identity: policies share the recorded `Arc`s), tokenizes each
//! message a policy made (a card, a fold result, a summary) once, and looks each candidate up in
//! its token's postings — no request is scanned as text. It also answers the four probes.

pub(crate) mod index;
pub use index::project;
pub(crate) mod recovery;
pub(crate) mod tokens;

use std::sync::Arc;

use harness_core::{Message, Role};
use harness_import::ImportedSession;
use serde::{Deserialize, Serialize};

pub use index::{Candidates, Common, SessionIndex};
pub use recovery::{Recovery, RecoveryRange, Workspace};

use crate::engine::{CompactionEvent, FoldEvent};
use index::{key, FxMap};

/// Hidden references kept per request in the records (the counts are complete).
pub(crate) const REFS_PER_REQUEST: usize = 12;

/// Where a hidden reference could come back from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A fold's archive holds a source message.
    Archive,
    /// A source is a tool result whose call the request still shows: re-run needed.
    Rerun,
    /// Gone.
    None,
}

/// One hidden reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HiddenRef {
    /// The token.
    pub text: String,
    /// Where it could come back from.
    pub source: Source,
    /// The turn of its earliest source message.
    pub from_turn: u32,
}

/// Hidden references by source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BySource {
    /// In an archive.
    pub(crate) archive: usize,
    /// Re-run needed.
    pub(crate) rerun: usize,
    /// Gone.
    pub(crate) none: usize,
}

impl BySource {
    /// All of them.
    pub fn total(&self) -> usize {
        self.archive + self.rerun + self.none
    }

    /// Adds another count.
    pub(crate) fn add(&mut self, o: &BySource) {
        self.archive += o.archive;
        self.rerun += o.rerun;
        self.none += o.none;
    }

    fn count(&mut self, s: Source) {
        match s {
            Source::Archive => self.archive += 1,
            Source::Rerun => self.rerun += 1,
            Source::None => self.none += 1,
        }
    }
}

/// The four probes of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probes {
    /// Every human prompt so far is in the request word for word.
    pub(crate) decision: bool,
    /// Every path edited or written so far is named.
    pub(crate) artifact: bool,
    /// No hidden reference.
    pub(crate) recall: bool,
    /// Every message of the current unit so far is there as recorded.
    pub(crate) continuation: bool,
}

/// Requests and how many passed each probe.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeCounts {
    /// Requests probed.
    pub requests: usize,
    /// Passed `decision`.
    pub decision: usize,
    /// Passed `artifact`.
    pub artifact: usize,
    /// Passed `recall`.
    pub recall: usize,
    /// Passed `continuation`.
    pub continuation: usize,
}

/// The probes as fractions of requests (1.0 with no request).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProbeFractions {
    /// Every prompt kept word for word.
    pub(crate) decision: f64,
    /// Every edited path named.
    pub(crate) artifact: f64,
    /// No hidden reference.
    pub(crate) recall: f64,
    /// The current unit intact.
    pub(crate) continuation: f64,
}

impl ProbeCounts {
    /// Counts one request.
    pub(crate) fn add(&mut self, p: &Probes) {
        self.requests += 1;
        self.decision += usize::from(p.decision);
        self.artifact += usize::from(p.artifact);
        self.recall += usize::from(p.recall);
        self.continuation += usize::from(p.continuation);
    }

    /// Adds another count.
    pub(crate) fn merge(&mut self, o: &ProbeCounts) {
        self.requests += o.requests;
        self.decision += o.decision;
        self.artifact += o.artifact;
        self.recall += o.recall;
        self.continuation += o.continuation;
    }

    /// The fractions.
    pub fn fractions(&self) -> ProbeFractions {
        let f = |n: usize| {
            if self.requests == 0 {
                1.0
            } else {
                n as f64 / self.requests as f64
            }
        };
        ProbeFractions {
            decision: f(self.decision),
            artifact: f(self.artifact),
            recall: f(self.recall),
            continuation: f(self.continuation),
        }
    }
}

/// A message a policy made, tokenized once.
struct Made {
    /// Kept alive so its address is not reused.
    message: Arc<Message>,
    tokens: Vec<u32>,
    /// The tool calls it names (its own calls and the call it answers).
    calls: Vec<String>,
    /// Per prompt (index into the session's human turns): whether it holds it word for word.
    prompts: Vec<Option<bool>>,
}

impl Made {
    fn holds_prompt(&mut self, k: usize, text: &str) -> bool {
        if self.prompts.len() <= k {
            self.prompts.resize(k + 1, None);
        }
        *self.prompts[k].get_or_insert_with(|| {
            // A fold result quotes prompts escaped (`"line one\nline two"`).
            let quoted = format!("{text:?}");
            let escaped = &quoted[1..quoted.len() - 1];
            let holds = |s: &str| s.contains(text) || s.contains(escaped);
            holds(&self.message.text) || self.message.card.as_deref().is_some_and(holds)
        })
    }
}

/// The analysis of one policy's replay, request by request.
pub struct Observer<'a> {
    session: &'a ImportedSession,
    ix: &'a SessionIndex,
    cands: &'a Candidates,
    /// The unit of each turn (index = turn).
    units: Vec<usize>,
    /// `present[i] == generation`: recorded message `i` is in the request being observed.
    present: Vec<u32>,
    generation: u32,
    made: FxMap<usize, Made>,
    current: Vec<usize>,
    /// Paths edited so far (token ids: as written, as fold results name it) and the requests
    /// already read for them.
    edited: Vec<[u32; 2]>,
    edits_read: usize,
    /// Where each compaction cut the recorded messages (the first message it kept).
    compacted_at: Vec<usize>,
    /// Hidden references by source.
    pub(crate) by_source: BySource,
    /// Responses with at least one hidden reference.
    pub(crate) responses: usize,
    /// The probes.
    pub(crate) probes: ProbeCounts,
    /// What recovering the hidden references costs ([`recovery`]), at the low end, the point
    /// and the high end of the profile's intervals.
    recoverers: [recovery::Recoverer; 3],
    /// What the workspace could show again.
    ws: &'a Workspace,
    /// The behaviour profile recovery follows.
    profile: &'a harness_core::behaviour::Profile,
}

impl<'a> Observer<'a> {
    /// An observer of one policy over `session`; `units` gives each turn's unit (index = turn),
    /// `ws` what the session's workspace could show again, `profile` how agents recover.
    pub fn new(
        session: &'a ImportedSession,
        ix: &'a SessionIndex,
        cands: &'a Candidates,
        units: Vec<usize>,
        ws: &'a Workspace,
        profile: &'a harness_core::behaviour::Profile,
    ) -> Observer<'a> {
        use harness_core::behaviour::End;
        Observer {
            session,
            ix,
            cands,
            units,
            present: vec![0; session.messages.len()],
            generation: 0,
            made: FxMap::default(),
            current: Vec::new(),
            edited: Vec::new(),
            edits_read: 0,
            compacted_at: Vec::new(),
            by_source: BySource::default(),
            responses: 0,
            probes: ProbeCounts::default(),
            recoverers: [End::Low, End::Point, End::High].map(recovery::Recoverer::new),
            ws,
            profile,
        }
    }

    /// A compaction replaced the context; `next` is the first recorded message after it.
    pub(crate) fn compacted(&mut self, next: usize) {
        self.compacted_at.push(next);
        for r in &mut self.recoverers {
            r.compacted();
        }
    }

    /// What recovering the hidden references observed so far costs (the profile's point
    /// estimates).
    pub(crate) fn recovery(&self) -> Recovery {
        self.recoverers[1].total
    }

    /// The same at the low and high ends of the profile's intervals.
    pub(crate) fn recovery_range(&self) -> RecoveryRange {
        RecoveryRange {
            low: self.recoverers[0].total,
            high: self.recoverers[2].total,
        }
    }

    fn mark(&mut self, messages: &[Arc<Message>]) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.present.fill(0);
            self.generation = 1;
        }
        self.current.clear();
        for m in messages {
            let k = key(m);
            if let Some(&i) = self.ix.by_key.get(&k) {
                self.present[i as usize] = self.generation;
                continue;
            }
            let ix = self.ix;
            self.made.entry(k).or_insert_with(|| Made {
                message: Arc::clone(m),
                tokens: ix.ids_of(m),
                calls: m
                    .tool_calls
                    .iter()
                    .map(|c| c.id.clone())
                    .chain(m.tool_call_id.clone())
                    .collect(),
                prompts: Vec::new(),
            });
            self.current.push(k);
        }
    }

    fn is_present(&self, i: usize) -> bool {
        self.present[i] == self.generation
    }

    fn visible(&self, token: u32) -> bool {
        self.ix.postings[token as usize]
            .iter()
            .any(|&p| self.is_present(p as usize))
            || self
                .current
                .iter()
                .any(|k| self.made[k].tokens.binary_search(&token).is_ok())
    }

    fn call_shown(&self, source: usize) -> bool {
        let Some(caller) = self.ix.caller[source] else {
            return false;
        };
        if self.is_present(caller as usize) {
            return true;
        }
        let Some(id) = &self.session.messages[source].tool_call_id else {
            return false;
        };
        self.current
            .iter()
            .any(|k| self.made[k].calls.iter().any(|c| c == id))
    }

    fn prompt_kept(&mut self, k: usize) -> bool {
        let session = self.session;
        let h = &session.human_turns[k];
        if self.is_present(h.message) {
            return true;
        }
        let text = session
            .messages
            .get(h.message)
            .map_or(h.text.as_str(), |m| m.text.as_str());
        let current = std::mem::take(&mut self.current);
        let kept = current.iter().any(|c| {
            self.made
                .get_mut(c)
                .is_some_and(|m| m.holds_prompt(k, text))
        });
        self.current = current;
        kept
    }

    /// Observes the policy's request for recorded request `k` (`tokens` in all, the prefix
    /// included, at `price`): returns its hidden references (all of them) and its probes, marks the folds
    /// and compactions a reference reaches into as needed (`needed_after`: the turns from the
    /// fold or compaction to this request), and prices their recovery (`recovery`).
    #[allow(clippy::too_many_arguments)]
    pub fn observe(
        &mut self,
        k: usize,
        messages: &[Arc<Message>],
        tokens: u64,
        price: &harness_core::metrics::Price,
        folds: &mut [FoldEvent],
        compactions: &mut [CompactionEvent],
    ) -> (Vec<HiddenRef>, Probes) {
        self.mark(messages);
        let (session, cands) = (self.session, self.cands);
        let msgs = &session.messages;
        let Some(r) = session.requests.get(k) else {
            return (Vec::new(), self.trivial());
        };
        let turn = msgs.get(r.message).map_or(0, |m| m.turn);
        let ix = self.ix;
        let compacted = !self.compacted_at.is_empty();
        let (ws, profile, context) = (self.ws, self.profile, r.context);
        #[allow(clippy::too_many_arguments)]
        fn at_of<'b>(
            msgs: &'b [Arc<Message>],
            ix: &'b SessionIndex,
            context: usize,
            turn: u32,
            folds: &'b [FoldEvent],
            ws: &'b Workspace,
            profile: &'b harness_core::behaviour::Profile,
            request: usize,
            compacted: bool,
        ) -> recovery::At<'b> {
            recovery::At {
                msgs,
                ix,
                context,
                turn,
                folds,
                ws,
                profile,
                request,
                compacted,
            }
        }
        {
            let (present, generation) = (&self.present, self.generation);
            let a = at_of(msgs, ix, context, turn, folds, ws, profile, k, compacted);
            for rec in &mut self.recoverers {
                rec.begin(&a, |i| present[i] == generation);
            }
        }
        let mut refs = Vec::new();
        for c in cands.per_request.get(k).into_iter().flatten() {
            if self.visible(c.token) {
                continue;
            }
            let turn_of = |s: &u32| msgs[*s as usize].turn;
            let in_fold = |f: &FoldEvent| {
                c.sources
                    .iter()
                    .any(|s| (f.from..=f.to).contains(&turn_of(s)))
            };
            let source = if folds.iter().any(in_fold) {
                Source::Archive
            } else if c
                .sources
                .iter()
                .any(|&s| msgs[s as usize].role == Role::Tool && self.call_shown(s as usize))
            {
                Source::Rerun
            } else {
                Source::None
            };
            for f in folds.iter_mut().filter(|f| f.needed_after.is_none()) {
                if c.sources
                    .iter()
                    .any(|s| (f.from..=f.to).contains(&turn_of(s)))
                {
                    f.needed_after = Some(turn.saturating_sub(f.turn));
                }
            }
            for (e, &at) in compactions.iter_mut().zip(&self.compacted_at) {
                if e.needed_after.is_none() && c.sources.iter().any(|&s| (s as usize) < at) {
                    e.needed_after = Some(turn.saturating_sub(e.turn));
                }
            }
            self.by_source.count(source);
            let a = at_of(msgs, ix, context, turn, folds, ws, profile, k, compacted);
            for rec in &mut self.recoverers {
                rec.hidden(&a, c, source);
            }
            refs.push(HiddenRef {
                text: self.ix.text(c.token).to_string(),
                source,
                from_turn: c.sources.iter().map(turn_of).min().unwrap_or(0),
            });
        }
        for rec in &mut self.recoverers {
            rec.end(tokens, price);
        }
        self.responses += usize::from(!refs.is_empty());
        let probes = Probes {
            decision: self.decision(r.context),
            artifact: self.artifact(k),
            recall: refs.is_empty(),
            continuation: self.continuation(r.context, turn),
        };
        self.probes.add(&probes);
        (refs, probes)
    }

    fn trivial(&self) -> Probes {
        Probes {
            decision: true,
            artifact: true,
            recall: true,
            continuation: true,
        }
    }

    fn decision(&mut self, ctx: usize) -> bool {
        let session = self.session;
        let n = session
            .human_turns
            .iter()
            .take_while(|h| h.message < ctx)
            .count();
        (0..n).all(|k| self.prompt_kept(k))
    }

    fn artifact(&mut self, k: usize) -> bool {
        while self.edits_read < k {
            let cands = self.cands;
            if let Some(e) = cands.edits.get(self.edits_read) {
                for &p in e {
                    if !self.edited.contains(&p) {
                        self.edited.push(p);
                    }
                }
            }
            self.edits_read += 1;
        }
        self.edited
            .iter()
            .all(|&[a, b]| self.visible(a) || self.visible(b))
    }

    fn continuation(&mut self, ctx: usize, turn: u32) -> bool {
        let unit = self.units.get(turn as usize).copied().unwrap_or(0);
        let first = (0..=turn as usize)
            .find(|&t| self.units.get(t) == Some(&unit))
            .unwrap_or(0) as u32;
        let session = self.session;
        let msgs = &session.messages;
        let start = msgs.partition_point(|m| m.turn < first).min(ctx);
        let prompts: FxMap<usize, usize> = session
            .human_turns
            .iter()
            .enumerate()
            .filter(|(_, h)| h.message >= start && h.message < ctx)
            .map(|(k, h)| (h.message, k))
            .collect();
        for (i, m) in msgs.iter().enumerate().take(ctx).skip(start) {
            if m.kind == harness_core::MessageKind::Summary
                || self.units.get(m.turn as usize) != Some(&unit)
            {
                continue;
            }
            let ok = match prompts.get(&i) {
                Some(&k) => self.prompt_kept(k),
                None => self.is_present(i),
            };
            if !ok {
                return false;
            }
        }
        true
    }
}
