//! The losses of many sessions summed by group — per agent and model, per kind of loss, all —
//! with 95% intervals.
//!
//! Rates are ratios of sums (re-fetches over calls), their intervals percentile bootstraps that
//! resample whole windows (the calls of one window are not independent): the losses for the
//! rate after a loss, the base windows for the base rate, both at once for the excess and the
//! recovery probability.
//!
//! A bootstrap over few windows says too little: over one loss every resample is that loss, and
//! the interval collapses to a point. So every interval is at least as wide as the Wilson score
//! interval of its own counts (calls, or references), and a difference of two rates at least as
//! wide as Newcombe's interval built from the two Wilson intervals. With many windows the
//! bootstrap is the wider and decides; with few, the counts do.

use harness_core::behaviour::{LossKind, Rate};
use harness_core::Rng;
use harness_import::Format;
use serde::Serialize;

use super::{BaseWindow, Counts, Loss, SessionLosses};

/// Bootstrap resamples behind every interval (the verdict's count).
pub(crate) const RESAMPLES: usize = harness_report::verdict::RESAMPLES;

/// One group of losses, summed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupStats {
    /// `claude-code · claude-opus-4-5`, `kind: summary`, `all`.
    pub group: String,
    /// Losses recorded.
    pub(crate) losses: usize,
    /// Of them, measured (with something before them).
    pub measured: usize,
    /// The windows after the measured losses, summed.
    pub after: Counts,
    /// Base windows measured against.
    pub(crate) base_windows: usize,
    /// Their counts, summed.
    pub base: Counts,
    /// Re-fetches per call after a loss.
    pub refetch_rate: Rate,
    /// Re-fetches per call with no loss.
    pub base_rate: Option<Rate>,
    /// The difference.
    pub excess_rate: Option<Rate>,
    /// Of the references to lost content, the share a re-fetch brought back.
    pub refetched_share: Rate,
    /// The probability a lost fact is fetched back because it was lost: the refetched share
    /// after a loss less the share of references re-fetched with no loss (everything in view).
    pub recover: Rate,
    /// The share of references re-fetched with no loss.
    pub base_refetched_share: Option<f64>,
    /// Of the references to lost content, the share used with no visible source.
    pub no_source: Rate,
    /// Median request size before the losses (tokens).
    pub(crate) tokens_before: Option<f64>,
    /// Median request size after them.
    pub(crate) tokens_after: Option<f64>,
    /// Median summary size (readable summaries).
    pub(crate) summary_tokens: Option<f64>,
    /// Repeats per prompt after a loss, and with no loss.
    pub(crate) repeat_rate: (Option<f64>, Option<f64>),
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(harness_core::metrics::median_f64(&v))
}

/// The share of references to earlier content that a re-fetch brought back before their use:
/// after a loss, of those the summary did not hold; with no loss, of all (everything was in
/// view, so a re-fetch there is ordinary re-reading).
pub(crate) fn refetched_share(c: &Counts, lost_only: bool) -> f64 {
    let n = if lost_only {
        c.refs_lost()
    } else {
        c.refs_held + c.refs_refetched + c.refs_new_output
    };
    ratio(c.refs_refetched, n)
}

/// What one sample of losses and base windows gives: re-fetch rate after, base rate, refetched
/// share after, no-source share, recovery probability (the refetched share after a loss over
/// the same share with no loss; the share after when there is no base window).
fn figures(after: &Counts, base: Option<&Counts>) -> [f64; 5] {
    let rate = ratio(after.refetches(), after.calls);
    let base_rate = base.map(|b| ratio(b.refetches(), b.calls));
    let refetched = refetched_share(after, true);
    let no_source = ratio(after.refs_no_source, after.refs_lost());
    let ordinary = base.map_or(0.0, |b| refetched_share(b, false));
    [
        rate,
        base_rate.unwrap_or(0.0),
        refetched,
        no_source,
        (refetched - ordinary).clamp(0.0, 1.0),
    ]
}

/// z for a two-sided 95% interval.
const Z95: f64 = 1.959_964;

/// The Wilson score interval of `k` successes in `n` trials (`(0, 1)` when `n` is 0).
pub fn wilson(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = Z95 * Z95;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Newcombe's interval for `p1 − p2` from each rate's point and Wilson interval.
fn newcombe(p1: f64, (l1, u1): (f64, f64), p2: f64, (l2, u2): (f64, f64)) -> (f64, f64) {
    let d = p1 - p2;
    (
        d - ((p1 - l1).powi(2) + (u2 - p2).powi(2)).sqrt(),
        d + ((u1 - p1).powi(2) + (p2 - l2).powi(2)).sqrt(),
    )
}

/// `r` widened to hold `(lo, hi)`.
fn widen(r: Rate, (lo, hi): (f64, f64)) -> Rate {
    Rate {
        point: r.point,
        lo: r.lo.min(lo),
        hi: r.hi.max(hi),
    }
}

fn sum<'a>(it: impl Iterator<Item = &'a Counts>) -> Counts {
    let mut c = Counts::default();
    for x in it {
        c.add(x);
    }
    c
}

/// The statistics of `losses` against the base windows `base`.
pub fn group(name: &str, losses: &[&Loss], base: &[&BaseWindow]) -> GroupStats {
    let measured: Vec<&Loss> = losses.iter().copied().filter(|l| l.measured).collect();
    let after = sum(measured.iter().map(|l| &l.window));
    let base_sum = sum(base.iter().map(|b| &b.counts));
    let has_base = !base.is_empty() && base_sum.calls > 0;
    let point = figures(&after, has_base.then_some(&base_sum));
    // Bootstrap: losses and base windows resampled together, one draw of each per resample.
    let mut samples: Vec<[f64; 5]> = Vec::with_capacity(RESAMPLES);
    if !measured.is_empty() {
        let mut rng = Rng::new(0x0010_55e5);
        for _ in 0..RESAMPLES {
            let a = sum((0..measured.len()).map(|_| &measured[rng.below(measured.len())].window));
            let b =
                has_base.then(|| sum((0..base.len()).map(|_| &base[rng.below(base.len())].counts)));
            samples.push(figures(&a, b.as_ref()));
        }
    }
    let rate = |i: usize| -> Rate {
        if samples.is_empty() {
            return Rate::exact(point[i]);
        }
        let mut v: Vec<f64> = samples.iter().map(|s| s[i]).collect();
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        Rate {
            point: point[i],
            lo: at(0.025).min(point[i]),
            hi: at(0.975).max(point[i]),
        }
    };
    let excess = has_base.then(|| {
        let mut v: Vec<f64> = samples.iter().map(|s| s[0] - s[1]).collect();
        let p = point[0] - point[1];
        if v.is_empty() {
            return Rate::exact(p);
        }
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        Rate {
            point: p,
            lo: at(0.025).min(p),
            hi: at(0.975).max(p),
        }
    });
    // The floor every interval keeps: the Wilson interval of its own counts.
    let w_rate = wilson(after.refetches(), after.calls);
    let w_base = wilson(base_sum.refetches(), base_sum.calls);
    let w_refetched = wilson(after.refs_refetched, after.refs_lost());
    let ordinary = refetched_share(&base_sum, false);
    let base_refs = base_sum.refs_held + base_sum.refs_refetched + base_sum.refs_new_output;
    let w_ordinary = wilson(base_sum.refs_refetched, base_refs);
    let refetch_rate = widen(rate(0), w_rate);
    let base_rate = has_base.then(|| widen(rate(1), w_base));
    let excess_rate = excess.map(|e| widen(e, newcombe(point[0], w_rate, point[1], w_base)));
    let recover = if has_base {
        let (lo, hi) = newcombe(point[2], w_refetched, ordinary, w_ordinary);
        widen(rate(4), (lo.max(0.0), hi.min(1.0)))
    } else {
        widen(rate(4), w_refetched)
    };
    let base_prompts = base_sum.prompts;
    GroupStats {
        group: name.to_string(),
        losses: losses.len(),
        measured: measured.len(),
        refetch_rate,
        base_rate,
        excess_rate,
        refetched_share: widen(rate(2), w_refetched),
        base_refetched_share: has_base.then_some(ordinary),
        no_source: widen(rate(3), wilson(after.refs_no_source, after.refs_lost())),
        recover,
        tokens_before: median(
            losses
                .iter()
                .filter_map(|l| l.tokens_before.map(|t| t as f64))
                .collect(),
        ),
        tokens_after: median(
            losses
                .iter()
                .filter_map(|l| l.tokens_after.map(|t| t as f64))
                .collect(),
        ),
        summary_tokens: median(
            losses
                .iter()
                .filter_map(|l| l.summary_tokens.map(|t| t as f64))
                .collect(),
        ),
        repeat_rate: (
            (after.prompts > 0).then(|| ratio(after.repeats, after.prompts)),
            (base_prompts > 0).then(|| ratio(base_sum.repeats, base_prompts)),
        ),
        base_windows: base.len(),
        base: base_sum,
        after,
    }
}

/// An agent and model as a group name: `claude-code · claude-opus-4-5`.
pub(crate) fn agent_model(agent: Format, model: Option<&str>) -> String {
    format!("{agent} · {}", model.unwrap_or("(no model recorded)"))
}

/// Every group of the sessions: per agent and model (those with a loss), per kind of loss, and
/// all.
pub fn groups(sessions: &[SessionLosses]) -> Vec<GroupStats> {
    let losses: Vec<&Loss> = sessions.iter().flat_map(|s| &s.losses).collect();
    let base: Vec<(Format, &BaseWindow)> = sessions
        .iter()
        .flat_map(|s| s.base.iter().map(move |b| (s.agent, b)))
        .collect();
    let mut keys: Vec<(Format, Option<String>)> = Vec::new();
    for l in &losses {
        let k = (l.agent, l.model.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.sort_by(|a, b| (a.0.name(), &a.1).cmp(&(b.0.name(), &b.1)));
    let base_of = |pairs: &[(Format, Option<String>)]| -> Vec<&BaseWindow> {
        let matched: Vec<&BaseWindow> = base
            .iter()
            .filter(|(a, b)| pairs.iter().any(|(pa, pm)| pa == a && *pm == b.model))
            .map(|(_, b)| *b)
            .collect();
        if !matched.is_empty() {
            return matched;
        }
        // No window of the same model: the same agent's.
        base.iter()
            .filter(|(a, _)| pairs.iter().any(|(pa, _)| pa == a))
            .map(|(_, b)| *b)
            .collect()
    };
    let mut out = Vec::new();
    for (agent, model) in &keys {
        let ls: Vec<&Loss> = losses
            .iter()
            .copied()
            .filter(|l| l.agent == *agent && l.model == *model)
            .collect();
        out.push(group(
            &agent_model(*agent, model.as_deref()),
            &ls,
            &base_of(&[(*agent, model.clone())]),
        ));
    }
    for kind in LossKind::ALL {
        let ls: Vec<&Loss> = losses.iter().copied().filter(|l| l.kind == kind).collect();
        if ls.is_empty() {
            continue;
        }
        let pairs: Vec<(Format, Option<String>)> =
            ls.iter().map(|l| (l.agent, l.model.clone())).collect();
        out.push(group(
            &format!("kind: {}", kind.name()),
            &ls,
            &base_of(&pairs),
        ));
    }
    if !losses.is_empty() {
        let all: Vec<&BaseWindow> = base.iter().map(|(_, b)| *b).collect();
        out.push(group("all", &losses, &all));
    }
    out
}

/// The statistics of one kind of loss (for the profile), against the base windows of the same
/// agents and models.
pub(crate) fn kind_group(sessions: &[SessionLosses], kind: LossKind) -> Option<GroupStats> {
    groups(sessions)
        .into_iter()
        .find(|g| g.group == format!("kind: {}", kind.name()))
}
