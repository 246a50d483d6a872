//! The cell record the crate's unit tests build: one place, so a field added to
//! [`CellRecord`] is filled in once.

use harness_core::metrics::CellMetrics;
use harness_core::{CellRecord, Status};

/// A sim cell `task/arm/sim/seed` with these metrics: a failure when it lost a fact, else a
/// success; one turn, no checks, no time.
pub(crate) fn record(task: &str, arm: &str, seed: u64, metrics: CellMetrics) -> CellRecord {
    CellRecord {
        version: harness_core::RECORD_VERSION,
        id: format!("{task}/{arm}/sim/{seed}"),
        task: task.into(),
        arm: arm.into(),
        policy: arm.into(),
        model: "sim".into(),
        seed,
        status: if metrics.lost_facts > 0 {
            Status::Failure
        } else {
            Status::Success
        },
        error: None,
        checks: Vec::new(),
        turns: 1,
        metrics,
        wall_ms: 0,
        model_ms: 0,
        agent: None,
        behaviour: None,
    }
}
