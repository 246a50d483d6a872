//! What counts as a regression between two runs: the metrics `compare` judges and the largest
//! allowed worsening of each ([`Threshold`]). The matrix file's `regression:` section is read into
//! these types by `harness_config::matrix`; `harness_report::compare` applies them.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

/// A metric that `compare` reports (the record metrics' one table).
pub use crate::record::RecordMetric as MetricDef;

/// The name of the success metric (judged by flips, not by medians).
pub const SUCCESS: &str = "success";

/// The metrics `compare` reports, in report order.
pub const COMPARED: [&str; 12] = [
    SUCCESS,
    "median_request_tokens",
    "max_request_tokens",
    "total_request_tokens",
    "reruns",
    "reruns_hidden",
    "archive_reads",
    "premature_folds",
    "fold_regret",
    "compactions",
    "written_tokens",
    "cost",
];

/// The definitions of [`COMPARED`].
pub fn compared_metrics() -> Vec<&'static MetricDef> {
    crate::record::record_metrics(&COMPARED)
}

/// The names of [`COMPARED`].
pub fn metric_names() -> Vec<&'static str> {
    COMPARED.to_vec()
}

/// The largest allowed worsening of a metric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "lowercase")]
pub enum Threshold {
    /// An absolute increase of the median (for `success`: a number of flipped cells).
    Absolute(f64),
    /// An increase in percent of the base median (for `success`: percent of the paired cells).
    Percent(f64),
}

/// A threshold that is neither a non-negative number nor a percentage (the text as given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("threshold `{0}` must be a non-negative number or a percentage like 5%")]
pub struct ThresholdError(pub(crate) String);

impl Threshold {
    /// Parses `0.5`, `3` or `5%`.
    pub fn parse(s: &str) -> Result<Threshold, ThresholdError> {
        let t = s.trim();
        let (number, percent) = match t.strip_suffix('%') {
            Some(n) => (n.trim(), true),
            None => (t, false),
        };
        let x: f64 = number
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| ThresholdError(s.to_string()))?;
        Ok(if percent {
            Threshold::Percent(x)
        } else {
            Threshold::Absolute(x)
        })
    }

    /// Whether going from `base` to `new` worsens by more than the threshold (a rise; `base` is
    /// the reference for percentages: any rise from 0 exceeds a percentage).
    pub fn exceeded(&self, base: f64, new: f64) -> bool {
        let rise = new - base;
        if rise <= 1e-12 {
            return false;
        }
        match *self {
            Threshold::Absolute(t) => rise > t + 1e-12,
            Threshold::Percent(p) => base <= 0.0 || rise / base * 100.0 > p + 1e-9,
        }
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Threshold::Absolute(x) => write!(f, "{x}"),
            Threshold::Percent(x) => write!(f, "{x}%"),
        }
    }
}

/// The thresholds used when neither the matrix file nor the command line gives any.
pub fn default_thresholds() -> BTreeMap<String, Threshold> {
    BTreeMap::from([
        (SUCCESS.to_string(), Threshold::Absolute(0.0)),
        ("reruns".to_string(), Threshold::Absolute(0.5)),
        ("median_request_tokens".to_string(), Threshold::Percent(5.0)),
    ])
}

/// Why a `--threshold METRIC=VALUE` flag is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ThresholdFlagError {
    /// No `=` in the flag.
    #[error("--threshold {flag}: write METRIC=VALUE, e.g. reruns=0.5")]
    Form {
        /// The flag's value as given.
        flag: String,
    },
    /// A metric `compare` does not judge.
    #[error("--threshold {flag}: unknown metric `{metric}`; expected one of: {}", metric_names().join(", "))]
    Metric {
        /// The flag's value as given.
        flag: String,
        /// The metric named.
        metric: String,
    },
    /// A value that is no threshold.
    #[error("--threshold {flag}")]
    Value {
        /// The flag's value as given.
        flag: String,
        /// Why.
        #[source]
        source: ThresholdError,
    },
}

/// The thresholds `compare` judges with: the matrix file's (its profile's `regression:`), else
/// [`default_thresholds`], with each `--threshold METRIC=VALUE` flag over them in order.
pub fn thresholds(
    from_file: BTreeMap<String, Threshold>,
    flags: &[String],
) -> Result<BTreeMap<String, Threshold>, ThresholdFlagError> {
    let mut out = if from_file.is_empty() {
        default_thresholds()
    } else {
        from_file
    };
    let names = metric_names();
    for t in flags {
        let Some((m, v)) = t.split_once('=') else {
            return Err(ThresholdFlagError::Form { flag: t.clone() });
        };
        if !names.contains(&m.trim()) {
            return Err(ThresholdFlagError::Metric {
                flag: t.clone(),
                metric: m.to_string(),
            });
        }
        let x = Threshold::parse(v).map_err(|source| ThresholdFlagError::Value {
            flag: t.clone(),
            source,
        })?;
        out.insert(m.trim().to_string(), x);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_go_over_the_files_thresholds_and_the_defaults_apply_without_either() {
        assert_eq!(
            thresholds(BTreeMap::new(), &[]).unwrap(),
            default_thresholds()
        );
        let file = BTreeMap::from([("reruns".to_string(), Threshold::Absolute(2.0))]);
        let got = thresholds(file.clone(), &[]).unwrap();
        assert_eq!(got, file);
        let flags = [
            "reruns=1".to_string(),
            "median_request_tokens = 7%".to_string(),
        ];
        let got = thresholds(file, &flags).unwrap();
        assert_eq!(got["reruns"], Threshold::Absolute(1.0));
        assert_eq!(got["median_request_tokens"], Threshold::Percent(7.0));
        assert_eq!(
            thresholds(BTreeMap::new(), &["reruns".to_string()])
                .unwrap_err()
                .to_string(),
            "--threshold reruns: write METRIC=VALUE, e.g. reruns=0.5"
        );
        let e = thresholds(BTreeMap::new(), &["speed=1".to_string()]).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("--threshold speed=1: unknown metric `speed`; expected one of: "));
        let e = thresholds(BTreeMap::new(), &["reruns=-1".to_string()]).unwrap_err();
        assert_eq!(e.to_string(), "--threshold reruns=-1");
        assert!(std::error::Error::source(&e).is_some());
    }
}
