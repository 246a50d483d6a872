//! `foldbench ab`: two or more arms (`--arms`, split and expanded by `harness_runner::arms`) on
//! one task, seeds 1..=N, with the settings `run` takes; the arms' figures side by side.

use std::time::Instant;

use harness_core::CellRecord;
use harness_report::render;
use harness_report::view::Kind;
use harness_runner::{arms, run};

use crate::cli::AbArgs;
use crate::error::{Code, Error};

/// Runs `foldbench ab`.
pub async fn cmd(a: AbArgs) -> Result<Code, Error> {
    if !a.common.policies.is_empty() {
        return Err(Error::Usage(format!(
            "`ab` takes its arms from --arms; --policy {} would be ignored: add it to \
             --arms (for example --arms {},{})",
            a.common.policies.join(" --policy "),
            a.arms,
            a.common.policies.join(",")
        )));
    }
    let tasks = crate::tasks::load(vec![a.task.clone()])?;
    let seeds: Vec<u64> = (1..=a.runs.max(1)).collect();
    let arms =
        arms::arms_or_default(&arms::split_arms(&a.arms)).map_err(|e| Error::policy("", e))?;
    let labels: Vec<String> = arms.iter().map(|a| a.label.clone()).collect();
    let settings = crate::run::settings_of(&a.common);
    let cfg = crate::run::config(settings, &a.common.out, tasks, arms, seeds)?;
    let out = cfg.out.clone();
    let started = Instant::now();
    let records = crate::signals::interruptible(run::run(cfg)).await?;
    let table =
        |records: &[CellRecord]| a.view.render(&render::ab_table(records, &labels), Kind::Ab);
    crate::run::finish(
        &records,
        &table,
        a.baseline.as_deref(),
        started,
        &out,
        &a.common,
    )
}
