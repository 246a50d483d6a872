//! Comparing two runs (docs/design.md §10): cells paired by their stable id, per-metric changes with a
//! paired sign test and a bootstrap interval, the cells that flipped from success to failure, and
//! regression thresholds (from the matrix file's `regression:` section).
//!
//! Everything here is a pure function of two lists of [`CellRecord`]s; the runner reads the
//! records and decides the exit code.
//!
//! How a metric is judged: for each group of paired cells (all cells, and each arm) the median of
//! the metric over the base cells is compared with the median over the new cells. A metric
//! *regresses* when that median rises by more than its [`Threshold`] (all metrics but `success`
//! are better when lower). `success` is judged by the number of cells that flipped from success
//! to failure or error. Cells that ended in `error` on either side are left out of the other
//! metrics. The sign test and the interval say how consistent a change is across pairs; with the
//! few seeds of a CI matrix they are informative, not a gate.

use std::collections::BTreeMap;

use serde::Serialize;

use harness_core::metrics::median_f64;
use harness_core::Rng;
use harness_core::{CellRecord, Status};

use crate::render::{num, Table};

pub(crate) use harness_core::regression::{compared_metrics, MetricDef, SUCCESS};
pub use harness_core::regression::{default_thresholds, metric_names, Threshold};

/// One metric over one group of paired cells.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct MetricDelta {
    /// Metric name.
    pub(crate) metric: String,
    /// The arm, or `None` for all cells.
    pub(crate) arm: Option<String>,
    /// Pairs the figures are computed over.
    pub(crate) pairs: usize,
    /// Median over the base cells (for `success`: the fraction that succeeded).
    pub(crate) base: f64,
    /// Median over the new cells (for `success`: the fraction that succeeded).
    pub(crate) new: f64,
    /// Pairs where the new value is higher.
    pub(crate) increased: usize,
    /// Pairs where the new value is lower.
    pub(crate) decreased: usize,
    /// Pairs with equal values.
    pub(crate) tied: usize,
    /// Exact two-sided sign-test p-value over the pairs that changed (1 when none did).
    pub(crate) p_value: f64,
    /// 95% bootstrap interval of the median paired change (new − base).
    pub(crate) interval: (f64, f64),
    /// The threshold that applies, if any.
    pub(crate) threshold: Option<Threshold>,
    /// Whether the threshold is exceeded.
    pub(crate) regressed: bool,
}

/// A cell whose success changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Flip {
    /// Cell id.
    pub(crate) id: String,
    /// Status in the base run.
    pub(crate) base: Status,
    /// Status in the new run.
    pub(crate) new: Status,
}

/// An arm whose label is the same in both runs but whose policy text is not: its cells are
/// paired by label (the change is what is measured) and the comparison says so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyChange {
    /// The arm's label.
    pub(crate) arm: String,
    /// The policy text in the base run.
    pub(crate) base: String,
    /// The policy text in the new run.
    pub(crate) new: String,
    /// Paired cells of this arm.
    pub(crate) cells: usize,
}

/// The comparison of two runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Cells present in both runs.
    pub pairs: usize,
    /// Pairs left out of the metrics because a side ended in `error`.
    pub(crate) error_pairs: usize,
    /// Cell ids only in the base run.
    pub only_base: Vec<String>,
    /// Cell ids only in the new run.
    pub(crate) only_new: Vec<String>,
    /// Arms paired by label whose policy text changed between the runs.
    pub policy_changes: Vec<PolicyChange>,
    /// One entry per metric for all cells, then per arm where something changed.
    pub(crate) metrics: Vec<MetricDelta>,
    /// Cells that succeeded in the base run and not in the new one.
    pub(crate) to_failure: Vec<Flip>,
    /// Cells that failed in the base run and succeeded in the new one.
    pub(crate) to_success: Vec<Flip>,
    /// Human-readable reasons, one per regressed metric (empty: no regression).
    pub(crate) regressions: Vec<String>,
}

impl Comparison {
    /// The names of the regressed metrics, each once, in report order.
    pub fn regressed_metrics(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for m in &self.metrics {
            if m.regressed && !out.contains(&m.metric) {
                out.push(m.metric.clone());
            }
        }
        out
    }
}

/// `ln(n!)`.
fn ln_factorial(n: u64) -> f64 {
    (2..=n).map(|k| (k as f64).ln()).sum()
}

/// Exact two-sided sign test: the probability, under "no change" (each changed pair goes up or
/// down with probability ½), of a split at least as uneven as `plus` against `minus`.
pub(crate) fn sign_test(plus: usize, minus: usize) -> f64 {
    let n = (plus + minus) as u64;
    if n == 0 {
        return 1.0;
    }
    let k = plus.min(minus) as u64;
    let ln_n = ln_factorial(n);
    let half = (n as f64) * 0.5f64.ln();
    let mut tail = 0.0;
    for i in 0..=k {
        tail += (ln_n - ln_factorial(i) - ln_factorial(n - i) + half).exp();
    }
    (2.0 * tail).min(1.0)
}

/// The median of finite values, reordering them (linear time).
fn median_in_place(v: &mut [f64]) -> f64 {
    let n = v.len();
    if n == 0 {
        return 0.0;
    }
    let (_, hi, _) = v.select_nth_unstable_by(n / 2, |a, b| a.total_cmp(b));
    let hi = *hi;
    if n % 2 == 1 {
        hi
    } else {
        let lo = v[..n / 2].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo + hi) / 2.0
    }
}

/// A 95% percentile-bootstrap interval of the median of `deltas` (deterministic: a fixed seed).
pub(crate) fn bootstrap_median_interval(deltas: &[f64], resamples: usize) -> (f64, f64) {
    if deltas.is_empty() {
        return (0.0, 0.0);
    }
    if deltas.iter().all(|d| *d == deltas[0]) {
        return (deltas[0], deltas[0]);
    }
    let mut rng = Rng::new(0x00f0_1dbe_4c4a);
    let mut medians: Vec<f64> = Vec::with_capacity(resamples);
    let mut sample = vec![0.0; deltas.len()];
    for _ in 0..resamples.max(1) {
        for s in sample.iter_mut() {
            *s = deltas[rng.below(deltas.len())];
        }
        medians.push(median_in_place(&mut sample));
    }
    medians.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| medians[((medians.len() - 1) as f64 * q).round() as usize];
    (at(0.025), at(0.975))
}

fn delta_of(
    metric: &MetricDef,
    arm: Option<&str>,
    pairs: &[(&CellRecord, &CellRecord)],
    threshold: Option<Threshold>,
) -> MetricDelta {
    let success = metric.name == SUCCESS;
    let used: Vec<&(&CellRecord, &CellRecord)> = pairs
        .iter()
        .filter(|(b, n)| success || (b.status != Status::Error && n.status != Status::Error))
        .collect();
    let base: Vec<f64> = used.iter().map(|(b, _)| (metric.value)(b)).collect();
    let new: Vec<f64> = used.iter().map(|(_, n)| (metric.value)(n)).collect();
    let deltas: Vec<f64> = base.iter().zip(&new).map(|(b, n)| n - b).collect();
    let increased = deltas.iter().filter(|d| **d > 1e-12).count();
    let decreased = deltas.iter().filter(|d| **d < -1e-12).count();
    let (b, n) = if success {
        let len = used.len().max(1) as f64;
        // `+ 0.0`: an empty sum is -0.0.
        (
            base.iter().sum::<f64>() / len + 0.0,
            new.iter().sum::<f64>() / len + 0.0,
        )
    } else {
        (median_f64(&base), median_f64(&new))
    };
    let regressed = match threshold {
        // Success: the number (or percent) of cells that went from success to anything else.
        Some(t) if success => {
            let flips = used
                .iter()
                .filter(|(b, n)| b.status == Status::Success && n.status != Status::Success)
                .count() as f64;
            match t {
                Threshold::Absolute(x) => flips > x + 1e-12,
                Threshold::Percent(p) => flips / used.len().max(1) as f64 * 100.0 > p + 1e-9,
            }
        }
        Some(t) => t.exceeded(b, n),
        None => false,
    };
    MetricDelta {
        metric: metric.name.to_string(),
        arm: arm.map(str::to_string),
        pairs: used.len(),
        base: b,
        new: n,
        increased,
        decreased,
        tied: used.len() - increased - decreased,
        p_value: sign_test(increased, decreased),
        interval: bootstrap_median_interval(&deltas, 1000),
        threshold,
        regressed,
    }
}

/// Compares two runs. `thresholds` maps metric names to the largest allowed worsening; metrics
/// without one are reported but never regress.
pub fn compare(
    base: &[CellRecord],
    new: &[CellRecord],
    thresholds: &BTreeMap<String, Threshold>,
) -> Comparison {
    let new_by_id: BTreeMap<&str, &CellRecord> = new.iter().map(|r| (r.id.as_str(), r)).collect();
    let base_ids: std::collections::HashSet<&str> = base.iter().map(|r| r.id.as_str()).collect();
    let pairs: Vec<(&CellRecord, &CellRecord)> = base
        .iter()
        .filter_map(|b| new_by_id.get(b.id.as_str()).map(|n| (b, *n)))
        .collect();
    let mut arms: Vec<&str> = Vec::new();
    for (b, _) in &pairs {
        if !arms.contains(&b.arm.as_str()) {
            arms.push(&b.arm);
        }
    }
    let mut metrics = Vec::new();
    let mut regressions = Vec::new();
    for def in compared_metrics() {
        let threshold = thresholds.get(def.name).copied();
        let all = delta_of(def, None, &pairs, threshold);
        if all.regressed {
            regressions.push(reason(&all));
        }
        metrics.push(all);
        if def.name == SUCCESS {
            continue;
        }
        for arm in &arms {
            let group: Vec<(&CellRecord, &CellRecord)> = pairs
                .iter()
                .filter(|(b, _)| b.arm == *arm)
                .copied()
                .collect();
            let d = delta_of(def, Some(arm), &group, threshold);
            if d.increased + d.decreased == 0 && (d.base - d.new).abs() < 1e-12 {
                continue;
            }
            if d.regressed {
                regressions.push(reason(&d));
            }
            metrics.push(d);
        }
    }
    let mut policy_changes: Vec<PolicyChange> = Vec::new();
    for (b, n) in pairs.iter().filter(|(b, n)| b.policy != n.policy) {
        match policy_changes
            .iter_mut()
            .find(|c| c.arm == b.arm && c.base == b.policy && c.new == n.policy)
        {
            Some(c) => c.cells += 1,
            None => policy_changes.push(PolicyChange {
                arm: b.arm.clone(),
                base: b.policy.clone(),
                new: n.policy.clone(),
                cells: 1,
            }),
        }
    }
    let flip = |b: &CellRecord, n: &CellRecord| Flip {
        id: b.id.clone(),
        base: b.status,
        new: n.status,
    };
    Comparison {
        pairs: pairs.len(),
        error_pairs: pairs
            .iter()
            .filter(|(b, n)| b.status == Status::Error || n.status == Status::Error)
            .count(),
        only_base: base
            .iter()
            .filter(|b| !new_by_id.contains_key(b.id.as_str()))
            .map(|b| b.id.clone())
            .collect(),
        only_new: new
            .iter()
            .filter(|n| !base_ids.contains(n.id.as_str()))
            .map(|n| n.id.clone())
            .collect(),
        policy_changes,
        metrics,
        to_failure: pairs
            .iter()
            .filter(|(b, n)| b.status == Status::Success && n.status != Status::Success)
            .map(|(b, n)| flip(b, n))
            .collect(),
        to_success: pairs
            .iter()
            .filter(|(b, n)| b.status != Status::Success && n.status == Status::Success)
            .map(|(b, n)| flip(b, n))
            .collect(),
        regressions,
    }
}

fn reason(d: &MetricDelta) -> String {
    let scope = d
        .arm
        .as_deref()
        .map(|a| format!(" (arm {a})"))
        .unwrap_or_default();
    let limit = d.threshold.map(|t| t.to_string()).unwrap_or_default();
    if d.metric == SUCCESS {
        format!(
            "success{scope}: {} of {} cells flipped from success, more than the allowed {limit}",
            d.decreased, d.pairs
        )
    } else {
        format!(
            "{}{scope}: median {} → {} ({}), more than the allowed {limit}",
            d.metric,
            num_precise(d.base),
            num_precise(d.new),
            change(d)
        )
    }
}

/// A number for a comparison: like [`num`], with more decimals for small values (cost).
fn num_precise(x: f64) -> String {
    if x.is_finite() && x.abs() < 10.0 && (x - x.round()).abs() > 1e-9 {
        let s = format!("{x:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        num(x)
    }
}

fn change(d: &MetricDelta) -> String {
    let diff = d.new - d.base;
    if diff.abs() < 1e-12 {
        return "=".into();
    }
    let sign = if diff > 0.0 { "+" } else { "−" };
    let abs = num_precise(diff.abs());
    if d.base.abs() > 1e-12 {
        format!("{sign}{abs}, {sign}{:.1}%", (diff / d.base * 100.0).abs())
    } else {
        format!("{sign}{abs}")
    }
}

/// The comparison as a table: one row per metric (all cells), then per arm where it changed.
pub fn table(c: &Comparison) -> Table {
    let headers = [
        "metric",
        "arm",
        "pairs",
        "base",
        "new",
        "change",
        "↑ / ↓ / =",
        "sign test p",
        "95% CI of Δ",
        "verdict",
    ];
    let rows = c
        .metrics
        .iter()
        .map(|d| {
            let (base, new) = if d.metric == SUCCESS {
                (
                    format!("{:.0}%", d.base * 100.0),
                    format!("{:.0}%", d.new * 100.0),
                )
            } else {
                (num_precise(d.base), num_precise(d.new))
            };
            vec![
                d.metric.clone(),
                d.arm.clone().unwrap_or_else(|| "(all)".into()),
                d.pairs.to_string(),
                base,
                new,
                change(d),
                format!("{} / {} / {}", d.increased, d.decreased, d.tied),
                format!("{:.3}", d.p_value),
                format!(
                    "[{}, {}]",
                    num_precise(d.interval.0),
                    num_precise(d.interval.1)
                ),
                match (d.regressed, d.threshold) {
                    (true, Some(t)) => format!("REGRESSION (> {t})"),
                    (false, Some(t)) => format!("ok (≤ {t})"),
                    _ => String::new(),
                },
            ]
        })
        .collect();
    Table::new(&headers, rows)
}

/// The lines around the table: pairing, flips and regressions (plain text, one per line).
pub fn notes(c: &Comparison) -> Vec<String> {
    let mut out = vec![format!(
        "{} paired cells ({} with an error left out of the metrics), {} only in base, {} only in new",
        c.pairs,
        c.error_pairs,
        c.only_base.len(),
        c.only_new.len()
    )];
    if let Some(first) = c.only_base.first() {
        out.push(format!(
            "missing from new: {} cell{} of base (first: {first}); `--fail-on-regression` fails \
             on them unless `--allow-missing`",
            c.only_base.len(),
            if c.only_base.len() == 1 { "" } else { "s" }
        ));
    }
    for p in &c.policy_changes {
        out.push(policy_change_note(p));
    }
    out.extend(power_notes(c));
    for f in &c.to_failure {
        out.push(format!(
            "flipped to {}: {} (was {})",
            f.new.as_str(),
            f.id,
            f.base.as_str()
        ));
    }
    for f in &c.to_success {
        out.push(format!(
            "flipped to success: {} (was {})",
            f.id,
            f.base.as_str()
        ));
    }
    if c.regressions.is_empty() {
        out.push(no_regression(c));
    } else {
        out.push(format!("regressed: {}", c.regressed_metrics().join(", ")));
        for r in &c.regressions {
            out.push(format!("  {r}"));
        }
    }
    out
}

/// `no regression`, and over how many cells when base cells are missing from new.
fn no_regression(c: &Comparison) -> String {
    if c.only_base.is_empty() {
        "no regression".into()
    } else {
        format!(
            "no regression in the {} paired cells; {} cell{} of base not in new, not judged",
            c.pairs,
            c.only_base.len(),
            if c.only_base.len() == 1 { "" } else { "s" }
        )
    }
}

/// The line that says an arm's policy text changed under the same label.
pub fn policy_change_note(p: &PolicyChange) -> String {
    format!(
        "policy changed under the label `{}`: base `{}`, new `{}`; its {} cell{} are paired by \
         label, so the changes below include the policy's",
        p.arm,
        p.base,
        p.new,
        p.cells,
        if p.cells == 1 { "" } else { "s" }
    )
}

/// A note for each metric (over all cells) whose pairs are too few for the sign test ever to
/// reach p < 0.05 — its smallest p with n pairs is 2 × 0.5ⁿ, 0.25 for three seeds — pointing at
/// the pooled paired bootstrap interval instead.
fn power_notes(c: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    for d in c.metrics.iter().filter(|d| d.arm.is_none() && d.pairs > 0) {
        let floor = sign_test(d.pairs, 0);
        if floor > 0.05 {
            out.push(format!(
                "{}: {} pairs cannot make the sign test significant (its smallest p is {floor:.3}); \
                 the pooled paired bootstrap says the median change lies in [{}, {}] (95%)",
                d.metric,
                d.pairs,
                num_precise(d.interval.0),
                num_precise(d.interval.1)
            ));
        }
    }
    out
}

/// The comparison as Markdown for a CI job summary.
pub fn markdown(c: &Comparison, base: &str, new: &str) -> String {
    let mut s = format!("## foldbench compare\n\n`{base}` → `{new}`\n\n");
    let regressed = c.regressed_metrics();
    if regressed.is_empty() {
        let said = no_regression(c);
        s.push_str(&format!("**N{}.**\n\n", &said[1..]));
    } else {
        s.push_str(&format!("**Regressed: {}**\n\n", regressed.join(", ")));
        for r in &c.regressions {
            s.push_str(&format!("- {r}\n"));
        }
        s.push('\n');
    }
    s.push_str(&table(c).to_markdown());
    s.push('\n');
    for line in notes(c).iter().filter(|l| {
        !l.starts_with("regressed") && !l.starts_with("  ") && !l.starts_with("no regression")
    }) {
        s.push_str(&format!("- {line}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_core::metrics::{CellMetrics, SizeStats};

    fn rec(id: &str, arm: &str, status: Status, reruns: usize, median: f64) -> CellRecord {
        CellRecord {
            version: 1,
            id: id.into(),
            task: "t".into(),
            arm: arm.into(),
            policy: arm.into(),
            model: "sim".into(),
            seed: 1,
            status,
            error: None,
            checks: vec![],
            turns: 2,
            metrics: CellMetrics {
                reruns,
                request_tokens: SizeStats {
                    median,
                    ..SizeStats::default()
                },
                ..CellMetrics::default()
            },
            wall_ms: 1,
            model_ms: 0,
            agent: None,
            behaviour: None,
        }
    }

    #[test]
    fn sign_test_matches_the_binomial() {
        assert_eq!(sign_test(0, 0), 1.0);
        assert!((sign_test(5, 0) - 0.0625).abs() < 1e-9);
        assert!((sign_test(1, 1) - 1.0).abs() < 1e-9);
        // 10 pairs, 9 up 1 down: 2 * (1 + 10) / 1024.
        assert!((sign_test(9, 1) - 22.0 / 1024.0).abs() < 1e-9);
    }

    #[test]
    fn thresholds_parse_and_judge() {
        assert_eq!(Threshold::parse("5%").unwrap(), Threshold::Percent(5.0));
        assert_eq!(Threshold::parse("0.5").unwrap(), Threshold::Absolute(0.5));
        assert!(Threshold::parse("-1").is_err());
        assert!(Threshold::parse("lots").is_err());
        assert!(Threshold::Absolute(0.5).exceeded(0.0, 1.0));
        assert!(!Threshold::Absolute(0.5).exceeded(1.0, 1.5));
        assert!(Threshold::Percent(5.0).exceeded(100.0, 106.0));
        assert!(!Threshold::Percent(5.0).exceeded(100.0, 105.0));
        assert!(!Threshold::Percent(5.0).exceeded(100.0, 50.0));
    }

    #[test]
    fn identical_runs_do_not_regress() {
        let a = vec![
            rec("t/trim/sim/1", "trim", Status::Success, 4, 900.0),
            rec("t/none/sim/1", "none", Status::Success, 0, 1500.0),
        ];
        let c = compare(&a, &a, &default_thresholds());
        assert!(c.regressions.is_empty(), "{:?}", c.regressions);
        assert_eq!(c.pairs, 2);
        assert!(c.metrics.iter().all(|m| m.arm.is_none()));
    }

    #[test]
    fn a_worse_arm_regresses_and_flips_are_listed() {
        let base = vec![
            rec("t/trim/sim/1", "trim", Status::Success, 0, 900.0),
            rec("t/trim/sim/2", "trim", Status::Success, 0, 900.0),
            rec("t/none/sim/1", "none", Status::Success, 0, 1500.0),
            rec("t/none/sim/2", "none", Status::Success, 0, 1500.0),
            rec("t/none/sim/3", "none", Status::Success, 0, 1500.0),
        ];
        let mut new = base.clone();
        new[0].metrics.reruns = 4;
        new[1].metrics.reruns = 4;
        new[1].status = Status::Failure;
        let c = compare(&base, &new, &default_thresholds());
        assert_eq!(c.regressed_metrics(), vec!["success", "reruns"]);
        assert_eq!(c.to_failure.len(), 1);
        assert_eq!(c.to_failure[0].id, "t/trim/sim/2");
        // The overall median of re-runs is still 0; the trim arm's rose from 0 to 4.
        assert!(c
            .regressions
            .iter()
            .any(|r| r.starts_with("reruns (arm trim): median 0 → 4")));
        let md = markdown(&c, "base", "new");
        assert!(md.contains("**Regressed: success, reruns**"), "{md}");
    }

    #[test]
    fn too_few_pairs_for_the_sign_test_are_said_and_the_bootstrap_given() {
        let three: Vec<CellRecord> = (1..=3)
            .map(|i| {
                rec(
                    &format!("t/trim/sim/{i}"),
                    "trim",
                    Status::Success,
                    0,
                    900.0,
                )
            })
            .collect();
        let mut worse = three.clone();
        for r in &mut worse {
            r.metrics.reruns = 4;
        }
        let c = compare(&three, &worse, &default_thresholds());
        let said = notes(&c);
        let note = said
            .iter()
            .find(|n| n.starts_with("reruns: 3 pairs cannot make the sign test significant"))
            .unwrap_or_else(|| panic!("{said:#?}"));
        assert!(note.contains("smallest p is 0.250"), "{note}");
        assert!(note.contains("lies in [4, 4]"), "{note}");
        // Six pairs can reach p = 0.031: no such note.
        let six: Vec<CellRecord> = (1..=6)
            .map(|i| {
                rec(
                    &format!("t/trim/sim/{i}"),
                    "trim",
                    Status::Success,
                    0,
                    900.0,
                )
            })
            .collect();
        let c = compare(&six, &six, &default_thresholds());
        assert!(!notes(&c)
            .iter()
            .any(|n| n.contains("cannot make the sign test")));
    }

    #[test]
    fn unpaired_cells_are_reported() {
        let base = vec![rec("a/x/sim/1", "x", Status::Success, 0, 1.0)];
        let new = vec![rec("b/x/sim/1", "x", Status::Success, 0, 1.0)];
        let c = compare(&base, &new, &BTreeMap::new());
        assert_eq!(c.pairs, 0);
        assert_eq!(c.only_base, vec!["a/x/sim/1"]);
        assert_eq!(c.only_new, vec!["b/x/sim/1"]);
    }

    #[test]
    fn missing_cells_and_a_changed_policy_are_said() {
        let base = vec![
            rec("t/trim/sim/1", "trim", Status::Success, 0, 900.0),
            rec("t/trim/sim/2", "trim", Status::Success, 0, 900.0),
            rec("t/none/sim/1", "none", Status::Success, 0, 1500.0),
        ];
        let mut new = base[..2].to_vec();
        for r in &mut new {
            r.policy = "trim:keep=3".into();
        }
        let c = compare(&base, &new, &default_thresholds());
        assert_eq!(c.only_base, vec!["t/none/sim/1"]);
        assert_eq!(
            c.policy_changes,
            vec![PolicyChange {
                arm: "trim".into(),
                base: "trim".into(),
                new: "trim:keep=3".into(),
                cells: 2
            }]
        );
        let said = notes(&c);
        assert!(said.contains(&"missing from new: 1 cell of base (first: t/none/sim/1); `--fail-on-regression` fails on them unless `--allow-missing`".to_string()), "{said:#?}");
        assert!(said.iter().any(|n| n.starts_with("policy changed under the label `trim`: base `trim`, new `trim:keep=3`; its 2 cells are paired by label")), "{said:#?}");
        assert_eq!(
            said.last().unwrap(),
            "no regression in the 2 paired cells; 1 cell of base not in new, not judged"
        );
        let md = markdown(&c, "b", "n");
        assert!(
            md.contains(
                "**No regression in the 2 paired cells; 1 cell of base not in new, not judged.**"
            ),
            "{md}"
        );
        assert!(
            md.contains("- policy changed under the label `trim`"),
            "{md}"
        );
        // Identical runs: neither is said.
        let same = notes(&compare(&base, &base, &default_thresholds()));
        assert!(!same
            .iter()
            .any(|n| n.starts_with("missing") || n.starts_with("policy changed")));
        assert_eq!(same.last().unwrap(), "no regression");
    }

    #[test]
    fn medians_agree() {
        for v in [vec![3.0, 1.0, 2.0], vec![4.0, 1.0, 3.0, 2.0], vec![5.0]] {
            let mut w = v.clone();
            assert_eq!(median_in_place(&mut w), median_f64(&v));
        }
    }

    #[test]
    fn bootstrap_interval_is_deterministic_and_contains_the_median() {
        let d = [1.0, 2.0, 3.0, 4.0, 5.0];
        let a = bootstrap_median_interval(&d, 500);
        assert_eq!(a, bootstrap_median_interval(&d, 500));
        assert!(a.0 <= 3.0 && 3.0 <= a.1, "{a:?}");
        assert_eq!(bootstrap_median_interval(&[2.0, 2.0], 500), (2.0, 2.0));
    }
}
