//! Ground truth: the reconstructed size of each recorded request against the size the provider
//! reported (`input + cache_read + cache_creation`, [`harness_core::Usage::prompt_tokens`]).
//!
//! The transcript does not hold the system prompt and tool schemas, so the first request with
//! usage calibrates them ([`crate::engine::estimate_prefix`]: recorded minus reconstructed); that
//! request's error is 0 by construction and is left out. Every later request is reconstructed as
//! the prefix plus the o200k count of the context it read (`messages[context_start..context]`,
//! which after a recorded compaction starts at the summary) and compared with its recorded size.
//! The error therefore measures how well the message model and the o200k count follow the
//! provider's own accounting as the context grows.
//!
//! Two things make the raw error grow with the context even when every message is there: the
//! provider's tokenizer is not o200k (Claude's counts more tokens for the same text), and content
//! the transcript does not hold (thinking blocks a model keeps in context, attachments). Both
//! scale a session's growth by a roughly constant factor, so each session also gets a **scale**:
//! the least-squares factor between its reconstructed and its recorded growth since the
//! calibrating request (`SessionTruth::scale`), and the error left after it. A small residual
//! says the reconstruction has the shape of what the provider counted, up to one factor per
//! session — which ratios between policies of the same session do not depend on.

use harness_import::{Format, ImportedSession};
use serde::{Deserialize, Serialize};

use crate::engine::{estimate_prefix, sum_tokens, PrefixSource};

/// One request with usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TruthPoint {
    /// The recorded request's index.
    pub request: usize,
    /// The provider's count.
    pub recorded: u64,
    /// Prefix plus the o200k count of the context.
    pub reconstructed: u64,
}

impl TruthPoint {
    /// `(reconstructed - recorded) / recorded`.
    pub(crate) fn relative_error(&self) -> f64 {
        if self.recorded == 0 {
            return 0.0;
        }
        (self.reconstructed as f64 - self.recorded as f64) / self.recorded as f64
    }
}

/// The comparison over one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionTruth {
    /// The session's id.
    pub(crate) id: String,
    /// Its format.
    pub(crate) format: Format,
    /// The calibrated prefix.
    pub prefix: u32,
    /// The recorded size of the calibrating request (reconstructed exactly by construction).
    pub(crate) calibration: u64,
    /// Every request with usage after the calibrating one.
    pub points: Vec<TruthPoint>,
}

impl SessionTruth {
    /// Recorded tokens per reconstructed token of growth since the calibrating request (least
    /// squares through the calibration point; 1 when nothing grew).
    pub(crate) fn scale(&self) -> f64 {
        let (mut xy, mut xx) = (0.0, 0.0);
        for p in &self.points {
            let x = p.reconstructed as f64 - self.calibration as f64;
            let y = p.recorded as f64 - self.calibration as f64;
            xy += x * y;
            xx += x * x;
        }
        if xx > 0.0 {
            xy / xx
        } else {
            1.0
        }
    }

    /// Each point's relative error after [`SessionTruth::scale`].
    pub(crate) fn scaled_errors(&self) -> Vec<f64> {
        let k = self.scale();
        let c = self.calibration as f64;
        self.points
            .iter()
            .filter(|p| p.recorded > 0)
            .map(|p| (c + k * (p.reconstructed as f64 - c) - p.recorded as f64) / p.recorded as f64)
            .collect()
    }
}

/// The comparison, for a session whose requests record usage (`None` otherwise).
pub fn session_truth(session: &ImportedSession) -> Option<SessionTruth> {
    let prefix = estimate_prefix(session);
    if prefix.source != PrefixSource::Usage {
        return None;
    }
    let first = session.requests.iter().position(|r| r.usage.is_some())?;
    let calibration = session.requests[first]
        .usage
        .map_or(0, |u| u.prompt_tokens());
    let points = session
        .requests
        .iter()
        .enumerate()
        .skip(first + 1)
        .filter_map(|(i, r)| {
            let u = r.usage?;
            Some(TruthPoint {
                request: i,
                recorded: u.prompt_tokens(),
                reconstructed: u64::from(prefix.tokens) + sum_tokens(session.context(r)),
            })
        })
        .collect();
    Some(SessionTruth {
        id: session.id.clone(),
        format: session.format,
        prefix: prefix.tokens,
        calibration,
        points,
    })
}

/// The distribution of relative errors.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ErrorStats {
    /// Requests compared.
    pub requests: usize,
    /// Sessions they came from.
    pub(crate) sessions: usize,
    /// Median of |error|.
    pub median_abs: f64,
    /// 90th percentile (nearest rank) of |error|.
    pub(crate) p90_abs: f64,
    /// Largest |error|.
    pub(crate) max_abs: f64,
    /// Median of the signed error (negative: the reconstruction is smaller).
    pub(crate) median_signed: f64,
    /// Median over sessions of [`SessionTruth::scale`].
    pub(crate) median_scale: f64,
    /// Median of |error| after each session's scale.
    pub(crate) median_abs_scaled: f64,
    /// 90th percentile of |error| after each session's scale.
    pub(crate) p90_abs_scaled: f64,
}

/// Median and 90th percentile (nearest rank) of |values|.
fn median_p90_abs(values: &[f64]) -> (f64, f64, f64) {
    let mut abs: Vec<f64> = values.iter().map(|e| e.abs()).collect();
    if abs.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    abs.sort_by(f64::total_cmp);
    let rank = ((abs.len() as f64 * 0.9).ceil() as usize).clamp(1, abs.len()) - 1;
    (
        harness_core::metrics::median_f64(&abs),
        abs[rank],
        abs[abs.len() - 1],
    )
}

/// Statistics of the points of some sessions.
pub(crate) fn error_stats<'a>(truths: impl IntoIterator<Item = &'a SessionTruth>) -> ErrorStats {
    let mut sessions = 0;
    let mut errors: Vec<f64> = Vec::new();
    let mut scaled: Vec<f64> = Vec::new();
    let mut scales: Vec<f64> = Vec::new();
    for t in truths {
        if t.points.is_empty() {
            continue;
        }
        sessions += 1;
        errors.extend(t.points.iter().map(TruthPoint::relative_error));
        scaled.extend(t.scaled_errors());
        scales.push(t.scale());
    }
    if errors.is_empty() {
        return ErrorStats::default();
    }
    let (median_abs, p90_abs, max_abs) = median_p90_abs(&errors);
    let (median_abs_scaled, p90_abs_scaled, _) = median_p90_abs(&scaled);
    ErrorStats {
        requests: errors.len(),
        sessions,
        median_abs,
        p90_abs,
        max_abs,
        median_signed: harness_core::metrics::median_f64(&errors),
        median_scale: harness_core::metrics::median_f64(&scales),
        median_abs_scaled,
        p90_abs_scaled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_known_errors() {
        let t = SessionTruth {
            id: "s".into(),
            format: Format::ClaudeCode,
            prefix: 0,
            calibration: 100,
            points: [(100, 90), (100, 110), (100, 100), (200, 150)]
                .iter()
                .enumerate()
                .map(|(i, (rec, re))| TruthPoint {
                    request: i,
                    recorded: *rec,
                    reconstructed: *re,
                })
                .collect(),
        };
        let s = error_stats([&t]);
        assert_eq!((s.requests, s.sessions), (4, 1));
        assert!((s.median_abs - 0.1).abs() < 1e-9);
        assert!((s.p90_abs - 0.25).abs() < 1e-9);
        assert!((s.median_signed - (-0.05)).abs() < 1e-9);
    }

    #[test]
    fn a_constant_factor_leaves_no_error_after_scaling() {
        // Recorded growth is 1.25× the reconstructed growth from a calibration of 1,000.
        let t = SessionTruth {
            id: "s".into(),
            format: Format::ClaudeCode,
            prefix: 0,
            calibration: 1_000,
            points: [1_400u64, 2_000, 5_000]
                .iter()
                .enumerate()
                .map(|(i, re)| TruthPoint {
                    request: i + 1,
                    recorded: 1_000 + (re - 1_000) * 5 / 4,
                    reconstructed: *re,
                })
                .collect(),
        };
        assert!((t.scale() - 1.25).abs() < 1e-9);
        assert!(t.scaled_errors().iter().all(|e| e.abs() < 1e-9));
        let s = error_stats([&t]);
        assert!(s.median_abs > 0.05 && s.median_abs_scaled < 1e-9);
    }
}
