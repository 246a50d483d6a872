//! The verdict of a comparison: for each arm against a baseline arm, the paired ratio of total
//! input tokens and of cost, and the paired success difference, each with a 95% bootstrap
//! interval over the pairs.
//!
//! Pairs are cells that differ only in their arm: the same (task, model, seed) in runs, the same
//! session in replay. Two ratios, each named where it is shown:
//!
//! - **Σ×** — the *ratio of summed totals*: the arm's tokens (or cost) summed over the pairs
//!   over the baseline's, so large tasks weigh as much as they cost. The verdict's ratio, with a
//!   95% interval that resamples the pairs; the run table's `Σ× none` column is the same figure.
//! - **med×** — the *median of per-pair ratios*: each pair's arm/baseline, then their median, so
//!   every task or session counts once however large. Given beside Σ× in the answer's line.
//!
//! Runs count a cell's tokens as `tokens/task` (every input token it sent: its requests, recovery
//! requests included, and its compaction calls); replay as `total input`. The success
//! difference is the mean over pairs of (arm succeeded) − (baseline succeeded), in [−1, 1].
//!
//! ```
//! use harness_report::verdict::{verdict, Pair};
//! let pairs: Vec<Pair> = (0..20)
//!     .map(|i| Pair { base_tokens: 1000.0 + i as f64, arm_tokens: 600.0, base_cost: 1.0,
//!                     arm_cost: 0.7, base_success: true, arm_success: i != 3 })
//!     .collect();
//! let v = verdict("fold", "none", &pairs);
//! assert_eq!(format!("{:.2}", v.tokens.point), "0.59");
//! assert!(v.tokens.lo <= v.tokens.point && v.tokens.point <= v.tokens.hi);
//! assert_eq!(v.pairs, 20);
//! ```

use std::collections::BTreeMap;

use harness_core::Rng;
use harness_core::{CellRecord, Status};

/// Bootstrap resamples behind every interval.
pub const RESAMPLES: usize = 2000;

/// One pair: the baseline's cell and the arm's cell on the same task, model and seed (or the same
/// session).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pair {
    /// Total input tokens of the baseline's cell.
    pub base_tokens: f64,
    /// Total input tokens of the arm's cell.
    pub arm_tokens: f64,
    /// Cost of the baseline's cell.
    pub base_cost: f64,
    /// Cost of the arm's cell.
    pub arm_cost: f64,
    /// Whether the baseline's cell succeeded.
    pub base_success: bool,
    /// Whether the arm's cell succeeded.
    pub arm_success: bool,
}

/// A point estimate with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The figure over all pairs.
    pub point: f64,
    /// The interval's low end.
    pub lo: f64,
    /// The interval's high end.
    pub hi: f64,
}

impl Estimate {
    /// A ratio of summed totals with its interval: `Σ× 0.62 [0.55, 0.70]`.
    pub fn ratio_text(&self) -> String {
        format!("Σ× {:.2} [{:.2}, {:.2}]", self.point, self.lo, self.hi)
    }
}

/// One arm against the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The arm.
    pub(crate) arm: String,
    /// The baseline arm.
    pub(crate) baseline: String,
    /// Pairs compared.
    pub pairs: usize,
    /// Tokens, the arm's summed over the pairs over the baseline's (Σ×).
    pub tokens: Estimate,
    /// The median over pairs of the arm's tokens over the baseline's (med×; pairs whose
    /// baseline has no token left out).
    pub tokens_median: f64,
    /// Cost, arm over baseline.
    pub cost: Estimate,
    /// Success rate, arm minus baseline.
    pub(crate) success: Estimate,
}

/// The verdict of `arm` against `baseline` over `pairs`.
pub fn verdict(arm: &str, baseline: &str, pairs: &[Pair]) -> Verdict {
    let tokens = |p: &[&Pair]| ratio(p.iter().map(|x| (x.arm_tokens, x.base_tokens)));
    let cost = |p: &[&Pair]| ratio(p.iter().map(|x| (x.arm_cost, x.base_cost)));
    let success = |p: &[&Pair]| {
        let n = p.len().max(1) as f64;
        p.iter()
            .map(|x| f64::from(u8::from(x.arm_success)) - f64::from(u8::from(x.base_success)))
            .sum::<f64>()
            / n
    };
    Verdict {
        arm: arm.to_string(),
        baseline: baseline.to_string(),
        pairs: pairs.len(),
        tokens: estimate(pairs, tokens),
        tokens_median: median_ratio(pairs.iter().map(|p| (p.arm_tokens, p.base_tokens))),
        cost: estimate(pairs, cost),
        success: estimate(pairs, success),
    }
}

/// The verdicts of every arm of `records` against `baseline`, pairing cells by (task, model,
/// seed); arms in their first-seen order. Cells that ended in an infrastructure error are left
/// out with their pair.
pub(crate) fn run_verdicts(records: &[CellRecord], baseline: &str) -> Vec<Verdict> {
    let key = |r: &CellRecord| (r.task.clone(), r.model.clone(), r.seed);
    let base: BTreeMap<_, &CellRecord> = records
        .iter()
        .filter(|r| r.arm == baseline && r.status != Status::Error)
        .map(|r| (key(r), r))
        .collect();
    let mut arms: Vec<&str> = Vec::new();
    for r in records {
        if r.arm != baseline && !arms.contains(&r.arm.as_str()) {
            arms.push(&r.arm);
        }
    }
    arms.into_iter()
        .map(|arm| {
            let pairs: Vec<Pair> = records
                .iter()
                .filter(|r| r.arm == arm && r.status != Status::Error)
                .filter_map(|r| {
                    let b = base.get(&key(r))?;
                    Some(Pair {
                        base_tokens: b.metrics.tokens_per_task() as f64,
                        arm_tokens: r.metrics.tokens_per_task() as f64,
                        base_cost: b.metrics.cost,
                        arm_cost: r.metrics.cost,
                        base_success: b.status == Status::Success,
                        arm_success: r.status == Status::Success,
                    })
                })
                .collect();
            verdict(arm, baseline, &pairs)
        })
        .filter(|v| v.pairs > 0)
        .collect()
}

/// The median of the first over the second, over the pairs whose second is not 0 (1 when none
/// is).
pub(crate) fn median_ratio(it: impl Iterator<Item = (f64, f64)>) -> f64 {
    let rs: Vec<f64> = it.filter(|(_, b)| *b > 0.0).map(|(a, b)| a / b).collect();
    if rs.is_empty() {
        1.0
    } else {
        harness_core::metrics::median_f64(&rs)
    }
}

/// The legend of the two ratios, printed once under a report's tables.
pub const RATIO_LEGEND: &str = "Σ× = ratio of summed totals over the pairs (token-weighted; the \
verdict's and the tables' `Σ× none` columns) · med× = median of the per-pair ratios (each task or session \
once)";

/// Sum of the first over sum of the second (1 when both are 0).
fn ratio(it: impl Iterator<Item = (f64, f64)>) -> f64 {
    let (a, b) = it.fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    if b == 0.0 {
        if a == 0.0 {
            1.0
        } else {
            f64::INFINITY
        }
    } else {
        a / b
    }
}

/// `f` over all pairs, with a deterministic 95% percentile-bootstrap interval over the pairs.
fn estimate(pairs: &[Pair], f: impl Fn(&[&Pair]) -> f64) -> Estimate {
    let all: Vec<&Pair> = pairs.iter().collect();
    let point = f(&all);
    if pairs.len() < 2 {
        return Estimate {
            point,
            lo: point,
            hi: point,
        };
    }
    let mut rng = Rng::new(0x0ec1_5104);
    let mut sample: Vec<&Pair> = all.clone();
    let mut values: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            for s in sample.iter_mut() {
                *s = all[rng.below(all.len())];
            }
            f(&sample)
        })
        .collect();
    values.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    Estimate {
        point,
        lo: at(0.025),
        hi: at(0.975),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(base: f64, arm: f64, bs: bool, as_: bool) -> Pair {
        Pair {
            base_tokens: base,
            arm_tokens: arm,
            base_cost: base / 1000.0,
            arm_cost: arm / 1000.0,
            base_success: bs,
            arm_success: as_,
        }
    }

    #[test]
    fn identical_arms_give_one_and_zero_with_no_spread() {
        let pairs: Vec<Pair> = (1..=10)
            .map(|i| pair(i as f64 * 100.0, i as f64 * 100.0, true, true))
            .collect();
        let v = verdict("none", "none", &pairs);
        assert_eq!(
            v.tokens,
            Estimate {
                point: 1.0,
                lo: 1.0,
                hi: 1.0
            }
        );
        assert_eq!(
            v.success,
            Estimate {
                point: 0.0,
                lo: 0.0,
                hi: 0.0
            }
        );
        assert_eq!((v.tokens_median, v.cost, v.pairs), (1.0, v.tokens, 10));
    }

    #[test]
    fn the_ratio_is_of_sums_and_the_interval_holds_it() {
        // Half the pairs halve their tokens, half keep them: 1500 / 2000 over equal sizes.
        let pairs: Vec<Pair> = (0..40)
            .map(|i| {
                pair(
                    100.0,
                    if i % 2 == 0 { 50.0 } else { 100.0 },
                    true,
                    i % 4 != 0,
                )
            })
            .collect();
        let v = verdict("trim", "none", &pairs);
        assert!((v.tokens.point - 0.75).abs() < 1e-12);
        assert!(v.tokens.lo < 0.75 && 0.75 < v.tokens.hi, "{:?}", v.tokens);
        assert!(v.tokens.lo > 0.6 && v.tokens.hi < 0.9, "{:?}", v.tokens);
        assert!((v.success.point + 0.25).abs() < 1e-12);
        assert!(
            v.success.lo < -0.1 && v.success.hi <= 0.0,
            "{:?}",
            v.success
        );
        // Deterministic.
        assert_eq!(v, verdict("trim", "none", &pairs));
    }

    #[test]
    fn one_pair_has_no_interval_and_no_pairs_no_verdict() {
        let v = verdict("fold", "none", &[pair(10.0, 5.0, true, false)]);
        assert_eq!(
            v.tokens,
            Estimate {
                point: 0.5,
                lo: 0.5,
                hi: 0.5
            }
        );
        assert_eq!(v.success.point, -1.0);
        assert_eq!((v.success.lo, v.success.hi, v.pairs), (-1.0, -1.0, 1));
        assert!(run_verdicts(&[], "none").is_empty());
    }
}
