//! The JSON `foldbench replay` writes: `--requests-out` lines and `--format json`.

use std::path::Path;

use harness_replay::report::PolicySummary;
use harness_replay::ErrorStats;
use harness_replay::{JudgeKind, SessionHeader, SessionReplay};
use harness_runner::write_lines;
use serde::Serialize;

use crate::error::Error;

/// One replayed request as a JSON line.
#[derive(Serialize)]
pub(crate) struct RequestLine<'a> {
    pub(crate) version: u32,
    pub(crate) session: &'a str,
    pub(crate) source: &'a str,
    pub(crate) policy: &'a str,
    #[serde(flatten)]
    pub(crate) request: &'a harness_replay::ReplayedRequest,
    pub(crate) recorded_tokens: Option<u64>,
}

/// Everything `replay --format json` prints.
#[derive(Serialize)]
pub(crate) struct ReplayJson<'a> {
    pub(crate) version: u32,
    pub(crate) files: usize,
    pub(crate) sessions: usize,
    pub(crate) requests: usize,
    pub(crate) judge: &'a str,
    pub(crate) policies: &'a [PolicySummary],
    /// Sessions and policies left out of every figure: a policy failed on them.
    pub(crate) left_out: &'a harness_replay::headline::LeftOut,
    /// The models the requests name and the price each was costed at.
    pub(crate) models: &'a [harness_runner::sessions::ModelPrice],
    pub(crate) per_session: Vec<SessionJson<'a>>,
    pub(crate) ground_truth: ErrorStats,
    pub(crate) ground_truth_sessions: &'a [harness_replay::SessionTruth],
    /// Parents with subagents: each child paired with its call, room saved, money.
    pub(crate) subagents: crate::replay_subagents::SubagentsJson<'a>,
    /// After real compactions: every recorded loss with its window, the base windows, the groups.
    pub(crate) after_compactions: crate::replay_losses::LossesJson<'a>,
    /// The behaviour profile recovery followed (its name).
    pub(crate) behaviour: &'a str,
    /// The verdict, one entry per policy against none.
    pub(crate) verdict: Vec<VerdictJson>,
    /// The frontier at the ends of the profile's intervals and the rankings that flip there.
    pub(crate) sensitivity: Vec<String>,
}

/// One policy's verdict against none.
#[derive(Serialize)]
pub(crate) struct VerdictJson {
    pub(crate) policy: String,
    /// Tokens incl. recovery Σ× none, with its 95% interval over sessions.
    pub(crate) tokens_ratio: f64,
    pub(crate) tokens_lo: f64,
    pub(crate) tokens_hi: f64,
    /// The same at the low and high ends of the behaviour profile's intervals.
    pub(crate) tokens_ratio_profile_low: Option<f64>,
    pub(crate) tokens_ratio_profile_high: Option<f64>,
    /// Dollars with prompt caching, recovery included, Σ× none.
    pub(crate) cost_ratio: Option<f64>,
    /// References gone per 100 responses.
    pub(crate) loss: f64,
    pub(crate) frontier: bool,
}

/// The verdict of `answers` as JSON.
pub(crate) fn verdict_json(answers: &[harness_report::headline::Answer]) -> Vec<VerdictJson> {
    answers
        .iter()
        .map(|a| VerdictJson {
            policy: a.arm.clone(),
            tokens_ratio: a.tokens.point,
            tokens_lo: a.tokens.lo,
            tokens_hi: a.tokens.hi,
            tokens_ratio_profile_low: a.range.map(|r| r.0),
            tokens_ratio_profile_high: a.range.map(|r| r.1),
            cost_ratio: a.cost,
            loss: a.loss,
            frontier: a.frontier,
        })
        .collect()
}

#[derive(Serialize)]
pub(crate) struct SessionJson<'a> {
    #[serde(flatten)]
    pub(crate) session: &'a SessionHeader,
    pub(crate) requests: usize,
    pub(crate) judge: JudgeKind,
    pub(crate) prefix_tokens: u32,
    pub(crate) policies: Vec<SessionPolicyJson<'a>>,
}

#[derive(Serialize)]
pub(crate) struct SessionPolicyJson<'a> {
    pub(crate) policy: &'a str,
    pub(crate) median_request: f64,
    pub(crate) last_request: u64,
    pub(crate) total_input: u64,
    pub(crate) cards: usize,
    pub(crate) card_tokens: u64,
    pub(crate) folds: &'a [harness_replay::FoldEvent],
    pub(crate) compactions: &'a [harness_replay::CompactionEvent],
    pub(crate) cost: f64,
    pub(crate) hidden_references: usize,
    pub(crate) hidden_by_source: harness_replay::hidden::BySource,
    pub(crate) probes: harness_replay::hidden::ProbeFractions,
    /// Why the policy could not go on (a policy process that broke the protocol).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<&'a str>,
}

pub(crate) fn session_json(s: &SessionReplay) -> SessionJson<'_> {
    SessionJson {
        session: &s.session,
        requests: s.recorded.len(),
        judge: s.judge,
        prefix_tokens: s.prefix.tokens,
        policies: s
            .policies
            .iter()
            .map(|p| {
                let st = harness_core::metrics::SizeStats::of(&p.sizes());
                SessionPolicyJson {
                    policy: &p.policy,
                    median_request: st.median,
                    last_request: st.last,
                    total_input: p.total_input(),
                    cards: p.cards,
                    card_tokens: p.card_tokens,
                    folds: &p.folds,
                    compactions: &p.compactions,
                    cost: p.cost(),
                    hidden_references: p.hidden.total(),
                    hidden_by_source: p.hidden,
                    probes: p.probes.fractions(),
                    error: p.error.as_deref(),
                }
            })
            .collect(),
    }
}

/// `--requests-out`: one JSON line per replayed request.
pub(crate) fn write_requests(path: &Path, replays: &[SessionReplay]) -> Result<(), Error> {
    let lines = replays.iter().flat_map(|s| {
        s.policies.iter().flat_map(move |p| {
            p.requests.iter().map(move |r| RequestLine {
                version: 1,
                session: &s.session.id,
                source: &s.session.source,
                policy: &p.policy,
                request: r,
                recorded_tokens: r.request.and_then(|k| s.recorded.get(k).copied().flatten()),
            })
        })
    });
    let lines = lines.map(|l| serde_json::to_string(&l).expect("a request line serializes"));
    let n = write_lines(path, lines).map_err(|source| Error::Write {
        path: path.to_path_buf(),
        source,
    })?;
    eprintln!("{n} request records in {}", path.display());
    Ok(())
}
