//! The replay engine: a recorded session, request by request, under each policy.
//!
//! The model's outputs are fixed: the recorded assistant messages and tool results are appended
//! as they happened, and only the context each policy would have sent changes. For every policy
//! the engine runs the session loop of `harness-runner`'s `cell` offline, with the real
//! implementation ([`policies::build`]) behind the [`Policy`](harness_core::policy::Policy) trait, as a host of the same
//! [`Driver`] (which interprets the policy's answers):
//!
//! - at each human prompt: the previous turn ends ([`Policy::end_turn`](harness_core::policy::Policy::end_turn): its splices are applied
//!   with [`Policy::apply_splice`](harness_core::policy::Policy::apply_splice) and an in-memory archive reference — the sha256 of
//!   [`harness_core::fold::archive_text`]; no file is written), then [`Policy::card`](harness_core::policy::Policy::card); a card is attached to
//!   the prompt ([`Message::with_card`]) and the judge's ranges (`crate::points`) are handed to
//!   [`Policy::handle_tool`](harness_core::policy::Policy::handle_tool) as `fold_unit` calls. (Their call and result messages, about 40
//!   tokens a fold, are not added: the recorded responses are kept as they were.)
//! - at each recorded request: [`Policy::plan`](harness_core::policy::Policy::plan) gives the messages; a compaction it asks for
//!   ([`Next::Summarise`]) comes first, with the transcript's own summary when it recorded one in that turn, else the sim's
//!   mechanical summary ([`harness_core::sim::summary`]: user and closing messages); the
//!   compaction call counts as a request of its own.
//! - every request gets the prompt-cache simulation of the live loop:
//!   [`cached_prefix_tokens`] against the previous request, the rest written; folds and
//!   compactions record their `rewritten_tokens`; cost from [`Price`]: each request at the
//!   price of the model its recorded request names ([`PriceTable`]), a compaction call at the
//!   price of the request before it.
//!
//! Recorded compaction summaries (Claude Code's own auto-compact) are not replayed as messages:
//! no policy here sent them; `compact` may reuse their text.
//!
//! **Tokens**: every recorded message was counted once, when it was imported; the engine shares
//! the same `Arc<Message>`s across policies and only sums stored counts. New messages (a prompt
//! with a card, a fold result, a summary, a trimmed result memoised by `trim`) are counted once
//! when they are made.

use std::collections::HashMap;
use std::sync::Arc;

use harness_core::behaviour::{End, Profile};
use harness_core::cached_prefix_tokens;
use harness_core::driver::{Driver, Next, Summary};
use harness_core::metrics::Price;
use harness_core::prices::PriceTable;
use harness_core::tokens::{self, MESSAGE_OVERHEAD};
use harness_core::{Message, MessageKind, Role, ToolCall};
use harness_core::{Purpose, Request};
use harness_import::{Format, ImportedSession};
use policies::PolicySpec;
use serde::{Deserialize, Serialize};

use crate::hidden::{
    BySource, Candidates, Common, HiddenRef, Observer, ProbeCounts, Probes, Recovery,
    RecoveryRange, SessionIndex, Workspace, REFS_PER_REQUEST,
};
use crate::labels::Labels;
use crate::points::{JudgeKind, Turns};

use harness_core::ARCHIVE_DIR;

/// The default context window (Claude's 200k): `compact` fires at 0.9 of it.
pub const DEFAULT_WINDOW: u64 = 200_000;

/// What a replay runs.
#[derive(Debug, Clone)]
pub struct ReplayConfig {
    /// The policies, in report order.
    pub policies: Vec<PolicySpec>,
    /// Who answers cards.
    pub judge: JudgeKind,
    /// The model's context window (the default of the policies' `window`).
    pub window: u64,
    /// Prices per model (built-in list prices, overrides, the default for the rest).
    pub prices: PriceTable,
    /// How agents recover what a policy hid ([`harness_core::behaviour`]; the shipped profile
    /// by default).
    pub behaviour: Arc<Profile>,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        ReplayConfig {
            policies: policies::POLICIES
                .iter()
                .filter_map(|p| policies::parse_policy(p).ok())
                .collect(),
            judge: JudgeKind::Lexical,
            window: DEFAULT_WINDOW,
            prices: PriceTable::default(),
            behaviour: Arc::new(Profile::shipped().clone()),
        }
    }
}

/// Where a session's fixed prefix (system prompt and tool schemas) comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefixSource {
    /// The first request with recorded usage: its recorded size minus its reconstructed context
    /// (Claude Code files do not record the system prompt and tools).
    Usage,
    /// The system prompt the transcript recorded (no usage).
    System,
    /// Neither: 0.
    Unknown,
}

/// A session's fixed prefix, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prefix {
    /// Tokens of the system prompt and tools.
    pub tokens: u32,
    /// How they were found.
    pub source: PrefixSource,
}

/// Tokens of messages.
pub fn sum_tokens(messages: &[Arc<Message>]) -> u64 {
    messages.iter().map(|m| u64::from(m.tokens)).sum()
}

/// The session's fixed prefix: from the first request with usage when there is one (recorded
/// minus reconstructed), else the recorded system prompt, else 0.
pub fn estimate_prefix(session: &ImportedSession) -> Prefix {
    if let Some(r) = session.requests.iter().find(|r| r.usage.is_some()) {
        let recorded = r.usage.map_or(0, |u| u.prompt_tokens());
        let context = sum_tokens(session.context(r));
        return Prefix {
            tokens: u32::try_from(recorded.saturating_sub(context)).unwrap_or(u32::MAX),
            source: PrefixSource::Usage,
        };
    }
    match &session.system {
        Some(s) => Prefix {
            tokens: tokens::prefix_tokens(s, &[]),
            source: PrefixSource::System,
        },
        None => Prefix {
            tokens: 0,
            source: PrefixSource::Unknown,
        },
    }
}

/// One request as a policy would have sent it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayedRequest {
    /// The recorded request it stands for (`None` for a compaction call).
    pub request: Option<usize>,
    /// The turn in progress.
    pub turn: u32,
    /// A turn's request or a compaction call.
    pub purpose: Purpose,
    /// o200k tokens: prefix plus messages.
    pub tokens: u64,
    /// Read from the simulated prompt cache.
    pub cached_tokens: u64,
    /// Written to it.
    pub written_tokens: u64,
    /// Output tokens (the recorded answer's, or the summary's).
    pub(crate) output_tokens: u64,
    /// Messages sent.
    pub(crate) messages: usize,
    /// What the policy did, when it did something (`trimmed 12 tool results`, `compaction`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) action: Option<String>,
    /// Dollars.
    pub(crate) cost: f64,
    /// Hidden references of the recorded response under this request (turn requests only).
    #[serde(default)]
    pub(crate) hidden_references: usize,
    /// All of them (serialized: the first `REFS_PER_REQUEST`).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "first_refs"
    )]
    pub hidden: Vec<HiddenRef>,
    /// The four probes (turn requests only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<Probes>,
}

/// Serializes the first [`REFS_PER_REQUEST`] hidden references (records stay small; the count
/// is complete).
fn first_refs<S: serde::Serializer>(refs: &[HiddenRef], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(refs.iter().take(REFS_PER_REQUEST))
}

/// A fold (or strategy exit) a policy made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoldEvent {
    /// The turn at whose end it was spliced.
    pub turn: u32,
    /// First turn folded.
    pub from: u32,
    /// Last turn folded.
    pub to: u32,
    /// Tokens of the messages it replaced.
    pub folded_tokens: u64,
    /// Tokens of the result message.
    pub result_tokens: u64,
    /// Tokens that were in the cached prefix and are written again.
    pub rewritten_tokens: u64,
    /// Whether the range holds a unit a later turn continues (`None` without labels).
    pub premature: Option<bool>,
    /// The archive's sha256 (computed; nothing is written).
    pub sha256: String,
    /// Turns from the fold to the first later response with a hidden reference into its range
    /// (`None`: never needed later).
    #[serde(default)]
    pub needed_after: Option<u32>,
    /// The result message that replaced the range, as the policy built it (for the HTML
    /// drill-down; left out of the JSON records, where `result_tokens` counts it).
    #[serde(default, skip_serializing)]
    pub(crate) result: String,
}

/// A compaction a policy made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionEvent {
    /// The turn.
    pub turn: u32,
    /// Whether it was a fold policy's emergency path.
    pub(crate) emergency: bool,
    /// Whether the transcript's own summary was used.
    pub recorded_summary: bool,
    /// Input tokens of the summary call.
    pub(crate) input_tokens: u64,
    /// Output tokens (the summary).
    pub output_tokens: u64,
    /// Tokens that were in the cached prefix and are written again.
    pub(crate) rewritten_tokens: u64,
    /// Turns from the compaction to the first response with a hidden reference into what it
    /// replaced (`None`: never needed later).
    #[serde(default)]
    pub(crate) needed_after: Option<u32>,
}

/// One policy over one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyReplay {
    /// The policy as given (`fold`, `trim:keep=1`).
    pub policy: String,
    /// Every request, compaction calls included, in order.
    pub requests: Vec<ReplayedRequest>,
    /// Cards attached.
    pub cards: usize,
    /// Tokens of the cards.
    pub card_tokens: u64,
    /// Folds and strategy exits.
    pub folds: Vec<FoldEvent>,
    /// `fold_unit` calls the policy refused.
    pub folds_rejected: usize,
    /// Compactions.
    pub compactions: Vec<CompactionEvent>,
    /// Hidden references by source.
    #[serde(default)]
    pub hidden: BySource,
    /// Responses with at least one hidden reference.
    #[serde(default)]
    pub responses_with_hidden: usize,
    /// The probes over the turns' requests.
    #[serde(default)]
    pub probes: ProbeCounts,
    /// What recovering the hidden references would cost (`crate::hidden::recovery`), at the
    /// profile's point estimates.
    #[serde(default)]
    pub recovery: Recovery,
    /// The same at the low and high ends of the profile's intervals.
    #[serde(default)]
    pub recovery_range: RecoveryRange,
    /// Why the policy could not go on ([`Policy::failed`](harness_core::policy::Policy::failed): a policy process that broke the
    /// protocol); the replay is then empty: nothing of the session is counted for the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl PolicyReplay {
    /// Sizes of the turns' requests (compaction calls left out), in order.
    pub fn sizes(&self) -> Vec<u64> {
        self.requests
            .iter()
            .filter(|r| r.purpose == Purpose::Turn)
            .map(|r| r.tokens)
            .collect()
    }

    /// Tokens of every request, compaction calls included.
    pub fn total_input(&self) -> u64 {
        self.requests.iter().map(|r| r.tokens).sum()
    }

    /// Tokens written to the cache.
    pub(crate) fn written(&self) -> u64 {
        self.requests.iter().map(|r| r.written_tokens).sum()
    }

    /// Tokens read from the cache.
    pub(crate) fn cached(&self) -> u64 {
        self.requests.iter().map(|r| r.cached_tokens).sum()
    }

    /// Dollars.
    pub fn cost(&self) -> f64 {
        self.requests.iter().map(|r| r.cost).sum()
    }

    /// [`total_input`](Self::total_input) with what recovering the hidden references would add
    /// ([`Recovery::tokens`]).
    pub fn tokens_incl_recovery(&self) -> u64 {
        self.total_input() + self.recovery.tokens()
    }

    /// The recovery at `end` of the profile's intervals.
    pub(crate) fn recovery_at(&self, end: End) -> &Recovery {
        match end {
            End::Low => &self.recovery_range.low,
            End::Point => &self.recovery,
            End::High => &self.recovery_range.high,
        }
    }

    /// [`tokens_incl_recovery`](Self::tokens_incl_recovery) at `end` of the profile's intervals.
    pub fn tokens_incl_recovery_at(&self, end: End) -> u64 {
        self.total_input() + self.recovery_at(end).tokens()
    }

    /// Dollars with recovery: the replayed requests and what recovering cost
    /// ([`Recovery::cost`]), at `end` of the profile's intervals.
    pub fn cost_incl_recovery_at(&self, end: End) -> f64 {
        self.cost() + self.recovery_at(end).cost
    }

    /// Folds known to be premature (only labelled sessions can tell).
    pub fn premature_folds(&self) -> usize {
        self.folds
            .iter()
            .filter(|f| f.premature == Some(true))
            .count()
    }
}

/// Which recorded session a result is about: what [`SessionReplay`] and
/// [`crate::analyze::SessionComposition`] both begin with (flattened into their JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionHeader {
    /// The session's id.
    pub id: String,
    /// The file it came from.
    pub source: String,
    /// Its format.
    pub(crate) format: Format,
    /// The parent session of a sidechain, subagent or fork.
    pub(crate) parent: Option<String>,
    /// The project it worked on ([`ImportedSession::project`]).
    #[serde(default)]
    pub(crate) project: String,
    /// The UTC date it started (`YYYY-MM-DD`), when recorded.
    #[serde(default)]
    pub(crate) date: Option<String>,
    /// The model most of its requests name, when recorded.
    #[serde(default)]
    pub(crate) model: Option<String>,
    /// Human turns.
    pub(crate) turns: u32,
}

impl SessionHeader {
    /// The header of `session`, whose judged turns number `turns`.
    pub(crate) fn of(session: &ImportedSession, turns: u32) -> SessionHeader {
        SessionHeader {
            id: session.id.clone(),
            source: session.source.clone(),
            format: session.format,
            parent: session.parent.clone(),
            project: session.project(),
            date: session.date(),
            model: session.model().map(str::to_string),
            turns,
        }
    }
}

/// Every policy over one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionReplay {
    /// Which session it is.
    #[serde(flatten)]
    pub session: SessionHeader,
    /// The fixed prefix every request carries (policies' own tools are added per policy).
    pub prefix: Prefix,
    /// The judge in effect (`lexical` for a session the labels do not cover).
    pub judge: JudgeKind,
    /// Whether the labels cover the session.
    pub labelled: bool,
    /// The recorded prompt size of each recorded request, when the transcript has usage.
    pub recorded: Vec<Option<u64>>,
    /// One replay per policy, in the configuration's order.
    pub policies: Vec<PolicyReplay>,
}

impl SessionReplay {
    /// The replay of a policy, by its label; `None` also when the policy failed on this
    /// session ([`PolicyReplay::error`]): reports and verdicts leave the session out for it.
    pub fn policy(&self, label: &str) -> Option<&PolicyReplay> {
        self.policies
            .iter()
            .find(|p| p.policy == label && p.error.is_none())
    }
}

/// Runs replays: the policies checked and their tool lists counted once.
#[derive(Debug, Clone)]
pub struct Replayer {
    config: ReplayConfig,
    /// Tokens each policy's own tool schemas add to the prefix.
    tool_tokens: Vec<u32>,
}

/// Why a replay cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// A policy spec that does not build.
    #[error("policy `{policy}`: {reason}")]
    Policy {
        /// The spec as given.
        policy: String,
        /// Why.
        reason: String,
    },
    /// No policy given.
    #[error("no policy to replay")]
    NoPolicy,
    /// The same policy twice.
    #[error("the policy `{0}` is given twice")]
    Duplicate(String),
}

impl Replayer {
    /// Checks the policies and counts their tool schemas.
    pub fn new(config: ReplayConfig) -> Result<Replayer, ReplayError> {
        if config.policies.is_empty() {
            return Err(ReplayError::NoPolicy);
        }
        let mut tool_tokens = Vec::new();
        for (i, spec) in config.policies.iter().enumerate() {
            let label = spec.label();
            if config.policies[..i].iter().any(|s| s.label() == label) {
                return Err(ReplayError::Duplicate(label));
            }
            let p = policies::build(spec, config.window).map_err(|reason| ReplayError::Policy {
                policy: label.clone(),
                reason: reason.to_string(),
            })?;
            let tools = p.tools();
            tool_tokens.push(if tools.is_empty() {
                0
            } else {
                tokens::prefix_tokens("", &tools) - MESSAGE_OVERHEAD
            });
        }
        Ok(Replayer {
            config,
            tool_tokens,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ReplayConfig {
        &self.config
    }

    /// The policies' labels, in order.
    pub fn labels(&self) -> Vec<String> {
        self.config.policies.iter().map(PolicySpec::label).collect()
    }

    /// Replays one session under every policy (no token is common: the corpus is this session).
    pub fn replay(&self, session: &ImportedSession, labels: Option<&Labels>) -> SessionReplay {
        let ix = SessionIndex::new(session);
        let cands = Candidates::new(session, &ix, &Common::none());
        self.replay_indexed(session, labels, &ix, &cands)
    }

    /// Replays one session whose index and candidates are made.
    pub(crate) fn replay_indexed(
        &self,
        session: &ImportedSession,
        labels: Option<&Labels>,
        ix: &SessionIndex,
        cands: &Candidates,
    ) -> SessionReplay {
        let ws = Workspace::new(session, ix);
        self.replay_with(session, labels, Some(&Analysis { ix, cands, ws: &ws }))
    }

    /// Replays one session under every policy without the hidden-reference analysis: every
    /// request's size, cache and cost as [`Replayer::replay`] gives them, and no hidden
    /// reference, probe or recovery (those fields are empty). For measures that read sizes and
    /// costs only (the subagents'): the session is not indexed.
    pub(crate) fn replay_sizes(
        &self,
        session: &ImportedSession,
        labels: Option<&Labels>,
    ) -> SessionReplay {
        self.replay_with(session, labels, None)
    }

    /// Replays one session under every policy, with the hidden-reference analysis when
    /// `analysis` is given.
    fn replay_with(
        &self,
        session: &ImportedSession,
        labels: Option<&Labels>,
        analysis: Option<&Analysis<'_>>,
    ) -> SessionReplay {
        let turns = Turns::new(session, self.config.judge, labels);
        let prefix = estimate_prefix(session);
        let prices = RequestPrices::of(session, &self.config.prices);
        let policies = self
            .config
            .policies
            .iter()
            .zip(&self.tool_tokens)
            .map(|(spec, tools)| {
                let prefix = prefix.tokens.saturating_add(*tools);
                let run = Run {
                    turns: &turns,
                    prefix,
                    prices: &prices,
                    analysis,
                };
                replay_policy(session, spec, &self.config, &run)
            })
            .collect();
        SessionReplay {
            session: SessionHeader::of(session, turns.last()),
            prefix,
            judge: turns.judge(),
            labelled: turns.labelled(),
            recorded: session
                .requests
                .iter()
                .map(|r| r.usage.map(|u| u.prompt_tokens()))
                .collect(),
            policies,
        }
    }

    /// Replays every session, on up to `threads` threads; the result is in the sessions' order.
    /// The sessions are indexed first, so that tokens common in the corpus are known
    /// ([`Common::of`]).
    pub fn replay_all(
        &self,
        sessions: &[ImportedSession],
        labels: Option<&Labels>,
        threads: usize,
    ) -> Vec<SessionReplay> {
        self.replay_all_measured(sessions, labels, threads).0
    }

    /// [`Replayer::replay_all`], and what each session's recorded losses show
    /// ([`crate::losses::measure`]) from the same index.
    pub fn replay_all_measured(
        &self,
        sessions: &[ImportedSession],
        labels: Option<&Labels>,
        threads: usize,
    ) -> (Vec<SessionReplay>, Vec<crate::losses::SessionLosses>) {
        let indexes = parallel_map(sessions, threads, SessionIndex::new);
        let common = Common::of(
            sessions
                .iter()
                .zip(&indexes)
                .map(|(s, ix)| (crate::hidden::index::project(&s.source), ix)),
        );
        let pairs: Vec<(&ImportedSession, &SessionIndex)> = sessions.iter().zip(&indexes).collect();
        parallel_map(&pairs, threads, |(s, ix)| {
            let cands = Candidates::new(s, ix, &common);
            let replay = self.replay_indexed(s, labels, ix, &cands);
            (replay, crate::losses::measure(s, ix, &common))
        })
        .into_iter()
        .unzip()
    }
}

/// `f` over `items` on up to `threads` scoped threads (largest items are not known, so work is
/// handed out one item at a time); results in order.
pub fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut parts: Vec<Vec<(usize, R)>> = Vec::new();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        out.push((i, f(item)));
                    }
                    out
                })
            })
            .collect();
        for h in handles {
            match h.join() {
                Ok(part) => parts.push(part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    });
    let mut all: Vec<(usize, R)> = parts.into_iter().flatten().collect();
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

/// A session's index, candidates and workspace, shared by its policies.
struct Analysis<'a> {
    ix: &'a SessionIndex,
    cands: &'a Candidates,
    ws: &'a Workspace,
}

/// The price of each recorded request of a session (by the model it names) and of the session's
/// model, looked up once per session for all its policies.
struct RequestPrices {
    /// Per recorded request.
    requests: Vec<Price>,
    /// The session's model's: a compaction call's before any request set one.
    session: Price,
}

impl RequestPrices {
    /// Each distinct model name of `session` looked up once in `table`.
    fn of(session: &ImportedSession, table: &PriceTable) -> RequestPrices {
        let mut seen: Vec<(Option<&str>, Price)> = Vec::new();
        let mut requests = Vec::with_capacity(session.requests.len());
        for model in session
            .requests
            .iter()
            .map(|r| r.model.as_deref())
            .chain([session.model()])
        {
            let p = match seen.iter().find(|(m, _)| *m == model) {
                Some(&(_, p)) => p,
                None => {
                    let p = table.lookup(model).0;
                    seen.push((model, p));
                    p
                }
            };
            requests.push(p);
        }
        // The last is the session's model's.
        let session = requests.pop().unwrap_or(table.default);
        RequestPrices { requests, session }
    }
}

/// What the policies of one session's replay share.
struct Run<'a> {
    turns: &'a Turns,
    /// The fixed prefix with the policy's tools.
    prefix: u32,
    prices: &'a RequestPrices,
    /// `None`: no hidden-reference analysis ([`Replayer::replay_sizes`]).
    analysis: Option<&'a Analysis<'a>>,
}

/// The state of one policy's replay.
struct Loop<'a> {
    session: &'a ImportedSession,
    turns: &'a Turns,
    /// The policy and the visible context.
    driver: Driver,
    prefix: u32,
    /// The price of each recorded request (by its model).
    prices: &'a [Price],
    /// The price of the last request: a compaction call's.
    price: Price,
    prev: Option<Vec<Arc<Message>>>,
    out: PolicyReplay,
    /// Recorded compaction summaries: (message index, turn, used).
    summaries: Vec<(usize, u32, bool)>,
    /// The hidden-reference analysis (`None`: not made).
    obs: Option<Observer<'a>>,
    /// The recorded message being replayed.
    at: usize,
}

fn replay_policy(
    session: &ImportedSession,
    spec: &PolicySpec,
    config: &ReplayConfig,
    run: &Run<'_>,
) -> PolicyReplay {
    let (turns, prefix) = (run.turns, run.prefix);
    let out = empty_replay(spec, session.requests.len());
    // Checked by `Replayer::new`; a policy that fails to build here replays as nothing.
    let Ok(policy) = policies::build(spec, config.window) else {
        return out;
    };
    if let Some(e) = policy.failed() {
        return PolicyReplay {
            error: Some(e),
            ..out
        };
    }
    let summaries = session
        .messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.kind == MessageKind::Summary)
        .map(|(i, m)| (i, m.turn, false))
        .collect();
    let mut l = Loop {
        session,
        turns,
        driver: Driver::new(policy, prefix),
        prefix,
        prices: &run.prices.requests,
        price: run.prices.session,
        prev: None,
        out,
        summaries,
        obs: run.analysis.map(|analysis| {
            Observer::new(
                session,
                analysis.ix,
                analysis.cands,
                turns.unit_ids(),
                analysis.ws,
                &config.behaviour,
            )
        }),
        at: 0,
    };
    let prompt_at: HashMap<usize, usize> = session
        .human_turns
        .iter()
        .enumerate()
        .map(|(k, h)| (h.message, k))
        .collect();
    let request_at: HashMap<usize, usize> = session
        .requests
        .iter()
        .enumerate()
        .map(|(k, r)| (r.message, k))
        .collect();
    for (i, m) in session.messages.iter().enumerate() {
        if let Some(&k) = prompt_at.get(&i) {
            l.prompt(k, m);
        } else if m.kind == MessageKind::Summary {
            continue;
        } else {
            if let Some(&k) = request_at.get(&i) {
                l.at = i;
                l.request(k, m);
            }
            l.driver.push(Arc::clone(m));
        }
        if let Some(e) = l.driver.failed() {
            // What it replayed before failing is not a replay of the session: left out whole.
            return PolicyReplay {
                error: Some(e),
                ..empty_replay(spec, 0)
            };
        }
    }
    if let Some(obs) = l.obs {
        l.out.recovery = obs.recovery();
        l.out.recovery_range = obs.recovery_range();
        l.out.hidden = obs.by_source;
        l.out.responses_with_hidden = obs.responses;
        l.out.probes = obs.probes;
    }
    l.out
}

/// A replay of `spec` with nothing in it yet (room for `requests`).
fn empty_replay(spec: &PolicySpec, requests: usize) -> PolicyReplay {
    PolicyReplay {
        policy: spec.label(),
        requests: Vec::with_capacity(requests),
        cards: 0,
        card_tokens: 0,
        folds: Vec::new(),
        folds_rejected: 0,
        compactions: Vec::new(),
        hidden: BySource::default(),
        responses_with_hidden: 0,
        probes: ProbeCounts::default(),
        recovery: Recovery::default(),
        recovery_range: RecoveryRange::default(),
        error: None,
    }
}

impl Loop<'_> {
    /// A human prompt: the previous turn ends, the card is offered and answered.
    fn prompt(&mut self, k: usize, m: &Arc<Message>) {
        let h = &self.session.human_turns[k];
        if self.driver.context().turn > 0 {
            self.end_turn(Some(&h.text));
        }
        let card = self.driver.start_turn(h.turn);
        let Some(card) = card else {
            self.driver.push(Arc::clone(m));
            return;
        };
        let carded = m.with_card(card.text);
        self.out.cards += 1;
        self.out.card_tokens += u64::from(carded.tokens.saturating_sub(m.tokens));
        self.driver.push(carded);
        for (from, to) in self.turns.ranges(&card.turns, h.turn) {
            let call = ToolCall {
                id: format!("replay-fold-{}-{from}-{to}", h.turn),
                name: "fold_unit".into(),
                args: serde_json::json!({ "from": from, "to": to }),
            };
            if self.driver.tool(&call).is_some_and(|a| a.rejected) {
                self.out.folds_rejected += 1;
            }
        }
    }

    /// The end of the turn in progress: splices archived (in memory) and applied.
    fn end_turn(&mut self, next_user: Option<&str>) {
        let t = self.driver.context().turn;
        for p in self.driver.end_turn(ARCHIVE_DIR, next_user) {
            if let Ok(f) = self.driver.apply_splice(&p, self.prev.as_deref()) {
                self.out.folds.push(FoldEvent {
                    turn: t,
                    from: f.from,
                    to: f.to,
                    folded_tokens: f.folded_tokens,
                    result_tokens: u64::from(f.message.tokens),
                    rewritten_tokens: f.rewritten_tokens,
                    premature: self.turns.premature(f.from, f.to, t),
                    sha256: f.archive.sha256,
                    needed_after: None,
                    result: f.message.text.to_string(),
                });
            }
        }
    }

    /// A recorded request: the policy's plan, compaction first if it asks, then the request.
    fn request(&mut self, k: usize, answer: &Arc<Message>) {
        // Files a policy keeps for the model are kept in memory, as archives are: written.
        for f in self.driver.offloads() {
            self.driver.offloaded(&f.path, true);
        }
        let (messages, action) = loop {
            match self.driver.next_request() {
                Next::Send { messages, action } => break (messages, action),
                Next::Summarise(summary) => self.compact(summary),
            }
        };
        let output = u64::from(answer.tokens.saturating_sub(MESSAGE_OVERHEAD));
        let tokens = u64::from(self.prefix) + sum_tokens(&messages);
        let price = self.prices.get(k).copied().unwrap_or(self.price);
        let observed = self.obs.as_mut().map(|obs| {
            obs.observe(
                k,
                &messages,
                tokens,
                &price,
                &mut self.out.folds,
                &mut self.out.compactions,
            )
        });
        self.push_request(Some(k), Purpose::Turn, messages, output, action);
        if let (Some(r), Some((hidden, probes))) = (self.out.requests.last_mut(), observed) {
            r.hidden_references = hidden.len();
            r.hidden = hidden;
            r.probes = Some(probes);
        }
    }

    fn push_request(
        &mut self,
        request: Option<usize>,
        purpose: Purpose,
        messages: Vec<Arc<Message>>,
        output: u64,
        action: Option<String>,
    ) {
        let tokens = u64::from(self.prefix) + sum_tokens(&messages);
        let cached = cached_prefix_tokens(self.prefix, self.prev.as_deref(), &messages);
        let written = tokens.saturating_sub(cached);
        if let Some(p) = request.and_then(|k| self.prices.get(k)) {
            self.price = *p;
        }
        let p = self.price;
        let cost = (written as f64 * p.cache_write
            + cached as f64 * p.cache_read
            + output as f64 * p.output)
            * p.input
            / 1e6;
        self.out.requests.push(ReplayedRequest {
            request,
            turn: self.driver.context().turn,
            purpose,
            tokens,
            cached_tokens: cached,
            written_tokens: written,
            output_tokens: output,
            messages: messages.len(),
            action,
            cost,
            hidden_references: 0,
            hidden: Vec::new(),
            probes: None,
        });
        self.prev = Some(messages);
    }

    /// A compaction: the summary call is a request; the context becomes the summary and the
    /// current prompt.
    fn compact(&mut self, asked: Summary) {
        let t = self.driver.context().turn;
        let (emergency, action) = (asked.emergency, asked.action());
        let messages = asked.messages;
        let input = u64::from(self.prefix) + sum_tokens(&messages);
        let recorded = self
            .summaries
            .iter_mut()
            .find(|(_, turn, used)| *turn == t && !*used)
            .map(|s| {
                s.2 = true;
                s.0
            });
        let summary = match recorded {
            Some(i) => Arc::clone(&self.session.messages[i]),
            None => {
                let req = Request::new(
                    Arc::from(""),
                    Arc::from(Vec::new()),
                    self.prefix,
                    messages.clone(),
                    Purpose::Compaction,
                );
                Message::host(t, harness_core::sim::summary(&req), MessageKind::Summary)
            }
        };
        let output = u64::from(summary.tokens.saturating_sub(MESSAGE_OVERHEAD));
        self.push_request(
            None,
            Purpose::Compaction,
            messages.clone(),
            output,
            Some(action.into()),
        );
        let done = self.driver.compacted(&messages, summary);
        self.out.compactions.push(CompactionEvent {
            turn: t,
            emergency,
            recorded_summary: recorded.is_some(),
            input_tokens: input,
            output_tokens: output,
            rewritten_tokens: done.rewritten_tokens,
            needed_after: None,
        });
        if let Some(obs) = &mut self.obs {
            obs.compacted(self.at);
        }
    }
}

/// The `none` context of a recorded request: every message before its answer, recorded
/// compaction summaries left out (what a host that never compacts would have sent).
pub fn none_context(session: &ImportedSession, request: usize) -> Vec<Arc<Message>> {
    let end = session
        .requests
        .get(request)
        .map_or(0, |r| r.context.min(session.messages.len()));
    session.messages[..end]
        .iter()
        .filter(|m| m.kind != MessageKind::Summary)
        .cloned()
        .collect()
}

/// Whether a message is a closing message with words (the conclusion of a turn).
pub(crate) fn is_conclusion(m: &Message) -> bool {
    m.role == Role::Assistant && m.is_closing() && !m.text.trim().is_empty()
}
