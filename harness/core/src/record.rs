//! The cell record: one JSON line per cell in `cells.jsonl` (format version [`RECORD_VERSION`]).
//!
//! ```json
//! {"version":1,"id":"trim-rerun/trim/sim/1","task":"trim-rerun","arm":"trim","policy":"trim:keep=0,mode=drop",
//!  "model":"sim","seed":1,"status":"success","error":null,"checks":[{"label":"…","passed":true,"detail":""}],
//!  "turns":2,"metrics":{…},"wall_ms":41,"model_ms":0}
//! ```
//!
//! `status` is `success` (every check holds), `failure` (a check failed) or `error` (an
//! infrastructure reason: the workspace, a model, a broken task; `error` says which). Everything a
//! report shows is in these records (and `requests.jsonl`), so reports can be rendered again later.

use serde::{Deserialize, Serialize};

use crate::metrics::CellMetrics;

/// Version of the cell record format.
pub const RECORD_VERSION: u32 = 1;

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
}

impl Status {
    /// The word.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::Failure => "failure",
            Status::Error => "error",
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
}

/// The stable id of a cell.
pub fn cell_id(task: &str, arm: &str, model: &str, seed: u64) -> String {
    format!("{task}/{arm}/{model}/{seed}")
}
