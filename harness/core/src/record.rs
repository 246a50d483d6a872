//! The cell record: one JSON line per cell in `cells.jsonl` (format version [`RECORD_VERSION`]).
//!
//! ```json
//! {"version":2,"id":"trim-rerun/trim/sim/1","task":"trim-rerun","arm":"trim","policy":"trim:keep=0,mode=drop",
//!  "model":"sim","seed":1,"status":"success","error":null,"checks":[{"label":"…","passed":true,"detail":""}],
//!  "turns":2,"metrics":{…},"wall_ms":41,"model_ms":0}
//! ```
//!
//! Version 2 added `metrics.lost_facts` and `metrics.recovered_facts` (`rerun`, `archive`);
//! a version-1 record reads with both at zero (it did not measure them).
//!
//! `status` is `success` (every check holds), `failure` (a check failed) or `error` (an
//! infrastructure reason: the workspace, a model, a broken task; `error` says which). Everything a
//! report shows is in these records (and `requests.jsonl`), so reports can be rendered again later.

use serde::{Deserialize, Serialize};

use crate::metrics::CellMetrics;

/// Version of the cell record format.
pub const RECORD_VERSION: u32 = 2;

/// How a cell ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every check held.
    Success,
    /// A check failed.
    Failure,
    /// The cell could not be run to the end (infrastructure).
    Error,
    /// The cell ran to its end and nothing was checked (a conversation through `foldbench
    /// proxy`): neither a success nor a failure.
    Unchecked,
}

impl Status {
    /// The word.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::Failure => "failure",
            Status::Error => "error",
            Status::Unchecked => "unchecked",
        }
    }
}

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    /// What was checked.
    pub label: String,
    /// Whether it held.
    pub passed: bool,
    /// Output or reason when it failed.
    #[serde(default)]
    pub detail: String,
}

/// One cell's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    /// Format version.
    pub version: u32,
    /// Stable id: `task/arm/model/seed`.
    pub id: String,
    /// Task name.
    pub task: String,
    /// Arm label (the policy as the user wrote it).
    pub arm: String,
    /// The policy with every parameter resolved.
    pub policy: String,
    /// Model.
    pub model: String,
    /// Seed.
    pub seed: u64,
    /// How it ended.
    pub status: Status,
    /// Why, for `error`.
    #[serde(default)]
    pub error: Option<String>,
    /// Checks.
    #[serde(default)]
    pub checks: Vec<CheckResult>,
    /// Turns run.
    pub turns: u32,
    /// Metrics.
    pub metrics: CellMetrics,
    /// Wall time of the cell in milliseconds.
    pub wall_ms: u64,
    /// Time spent waiting for the model in milliseconds.
    pub model_ms: u64,
    /// The real agent that ran the cell (`run --agent`); absent for foldbench's own loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentRun>,
    /// The behaviour profile foldbench's sim followed when it lost a fact (`fixtures`, or
    /// `mine.json at high`); absent for a real model or agent, which behave as they do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behaviour: Option<String>,
}

/// The real agent of a `run --agent` cell, as the record names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRun {
    /// `claude-code`, `codex`, `mini-swe-agent` or `exec`.
    pub name: String,
    /// The version the agent reported (`2.1.332`).
    pub version: String,
    /// How its own compaction was set (`the agent's own` on `native`, else how it was
    /// switched off).
    pub compaction: String,
    /// How its process was isolated and reached the proxy.
    pub isolation: String,
    /// Requests of the agent that were not its main conversation (a title, a quota probe, a
    /// branch): passed through, not in the metrics.
    pub side_requests: u64,
}

/// The stable id of a cell.
pub fn cell_id(task: &str, arm: &str, model: &str, seed: u64) -> String {
    format!("{task}/{arm}/{model}/{seed}")
}

/// A number read from a cell record: named as the matrix file's `regression:` section writes it,
/// labelled for tables. `compare` and the A/B table both read records through this one table.
#[derive(Debug, Clone, Copy)]
pub struct RecordMetric {
    /// Key (`median_request_tokens`).
    pub name: &'static str,
    /// Label for tables (`median request tokens`).
    pub label: &'static str,
    /// The value of a cell.
    pub value: fn(&CellRecord) -> f64,
}

fn median_rewritten(r: &CellRecord) -> f64 {
    let mut v = r.metrics.rewritten_tokens_per_fold.clone();
    v.sort_unstable();
    crate::metrics::median_u64(&v)
}

/// Every metric a report can read from a record.
pub(crate) const RECORD_METRICS: [RecordMetric; 23] = [
    RecordMetric {
        name: "success",
        label: "success",
        value: |r| f64::from(u8::from(r.status == Status::Success)),
    },
    RecordMetric {
        name: "lost_facts",
        label: "lost facts",
        value: |r| r.metrics.lost_facts as f64,
    },
    RecordMetric {
        name: "recovered_facts_rerun",
        label: "facts recovered by re-run",
        value: |r| r.metrics.recovered_facts.rerun as f64,
    },
    RecordMetric {
        name: "recovered_facts_archive",
        label: "facts recovered from an archive",
        value: |r| r.metrics.recovered_facts.archive as f64,
    },
    RecordMetric {
        name: "median_request_tokens",
        label: "median request tokens",
        value: |r| r.metrics.request_tokens.median,
    },
    RecordMetric {
        name: "tokens_per_task",
        label: "tokens per task",
        value: |r| r.metrics.tokens_per_task() as f64,
    },
    RecordMetric {
        name: "last_request_tokens",
        label: "last request tokens",
        value: |r| r.metrics.request_tokens.last as f64,
    },
    RecordMetric {
        name: "max_request_tokens",
        label: "max request tokens",
        value: |r| r.metrics.request_tokens.max as f64,
    },
    RecordMetric {
        name: "total_request_tokens",
        label: "total request tokens",
        value: |r| r.metrics.request_tokens.total as f64,
    },
    RecordMetric {
        name: "reruns",
        label: "re-runs",
        value: |r| r.metrics.reruns as f64,
    },
    RecordMetric {
        name: "reruns_hidden",
        label: "re-runs hidden",
        value: |r| r.metrics.reruns_hidden as f64,
    },
    RecordMetric {
        name: "archive_reads",
        label: "archive reads",
        value: |r| r.metrics.archive_reads as f64,
    },
    RecordMetric {
        name: "folds",
        label: "folds",
        value: |r| r.metrics.folds as f64,
    },
    RecordMetric {
        name: "premature_folds",
        label: "premature folds",
        value: |r| r.metrics.premature_folds as f64,
    },
    RecordMetric {
        name: "fold_regret",
        label: "fold regret",
        value: |r| r.metrics.fold_regret as f64,
    },
    RecordMetric {
        name: "compactions",
        label: "compactions",
        value: |r| r.metrics.compactions as f64,
    },
    RecordMetric {
        name: "written_tokens",
        label: "cache written tokens",
        value: |r| r.metrics.written_tokens as f64,
    },
    RecordMetric {
        name: "cost",
        label: "cost $",
        value: |r| r.metrics.cost,
    },
    RecordMetric {
        name: "rewritten_tokens_median_per_fold",
        label: "rewritten tokens, median per fold",
        value: median_rewritten,
    },
    RecordMetric {
        name: "rewritten_tokens_total",
        label: "rewritten tokens, total",
        value: |r| r.metrics.rewritten_fold_total() as f64,
    },
    RecordMetric {
        name: "child_requests",
        label: "child requests (delegated)",
        value: |r| r.metrics.child_requests as f64,
    },
    RecordMetric {
        name: "child_input_tokens",
        label: "child input tokens (delegated)",
        value: |r| r.metrics.child_input_tokens as f64,
    },
    RecordMetric {
        name: "receipt_tokens",
        label: "receipt tokens (in the parent)",
        value: |r| r.metrics.receipt_tokens as f64,
    },
];

/// The metrics with these names, in that order (unknown names are skipped).
pub fn record_metrics(names: &[&str]) -> Vec<&'static RecordMetric> {
    names
        .iter()
        .filter_map(|n| RECORD_METRICS.iter().find(|m| m.name == *n))
        .collect()
}
