//! `foldbench run`: the matrix (`harness_runner::plan`: the matrix file, its profile and the
//! flags over it) run with the settings of the flags (`harness_runner::settings`), then the
//! per-policy table, the failures and the exit code. `ab` (`crate::ab`) shares the settings and
//! the ending.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use harness_core::{CellRecord, Status};
use harness_report::render;
use harness_report::view::Kind;
use harness_runner::plan::{self, Overrides};
use harness_runner::run::{self, Arm, RunConfig};
use harness_runner::settings::{self, RunSettings, ToolCacheSetting};
use harness_runner::tasks::LoadedTask;

use crate::cli::{CommonRun, RunArgs};
use crate::error::{Code, Error};

/// Runs `foldbench run`.
pub async fn cmd(a: RunArgs) -> Result<Code, Error> {
    // The tokenizer's tables take ~0.1 s to load on first use: loaded on a thread while the
    // matrix is read, the sandbox probed and the run folder opened (docs/performance.md).
    std::thread::spawn(|| harness_core::tokens::count("warm"));
    // The matrix: foldbench.yaml (or --config) and --profile, with the flags over it.
    let overrides = Overrides {
        tasks: if a.tasks.is_empty() {
            Vec::new()
        } else {
            harness_runner::tasks::resolve(a.tasks.clone())?
        },
        seeds: a.seeds.clone(),
        policies: a.common.policies.clone(),
        models: plan::models_given(&a.common.models, a.common.replay.as_deref()),
    };
    let plan = plan::plan(&a.matrix.config.source(), a.matrix.partition, &overrides)?;
    let mut settings = settings_of(&a.common);
    settings.models = plan.models.clone();
    let mut cfg = config(
        settings,
        &a.common.out,
        plan.tasks.clone(),
        plan.arms.clone(),
        plan.seeds.clone(),
    )?;
    cfg.cell.prices = plan.prices.clone();
    cfg.only = plan.only();
    let out = cfg.out.clone();
    let started = Instant::now();
    let records = crate::signals::interruptible(run::run_selected(cfg, plan.selection())).await?;
    if records.is_empty() {
        eprintln!("error: no cell selected (the matrix or its partition is empty)");
        return Ok(Code::NoCells);
    }
    let table = |records: &[CellRecord]| {
        a.view
            .render(&render::summary_table(records), Kind::Summary)
    };
    finish(&records, &table, None, started, &out, &a.common)
}

/// The settings of the flags `run` and `ab` share, as the runner takes them (no run folder
/// yet: [`config`] names it).
pub fn settings_of(c: &CommonRun) -> RunSettings {
    RunSettings {
        models: c.models.clone(),
        replay: c.replay.clone(),
        record: c.record.clone(),
        out: None,
        jobs: c.jobs,
        keep_workspaces: c.keep_workspaces,
        max_steps: c.max_steps,
        tool_timeout: Duration::from_secs(c.tool_timeout),
        cell_timeout: Duration::from_secs(c.cell_timeout),
        request_timeout: Duration::from_secs(c.request_timeout),
        retries: c.retries,
        max_retry_wait: Duration::from_secs(c.max_retry_wait),
        max_output_tokens: c.max_output_tokens,
        temperature: c.temperature,
        sandbox: c.sandbox,
        tool_cache: match (&c.tool_cache, c.no_tool_cache) {
            (_, true) => ToolCacheSetting::Off,
            (None, false) => ToolCacheSetting::Memory,
            (Some(dir), false) => ToolCacheSetting::Disk(dir.clone()),
        },
        retry_errors: !c.no_retry_errors,
        agent: c.agent.clone(),
        agent_upstream: c.agent_upstream.clone(),
        behaviour: c.behaviour.clone(),
        behaviour_end: c.behaviour_end.into(),
    }
}

/// The run's configuration: the models checked, then the run folder of `-o` (`outputs`: a
/// folder and report files), then the runner's [`RunSettings::config`] with the process's
/// environment for the agent's key.
pub fn config(
    mut settings: RunSettings,
    outputs: &[PathBuf],
    tasks: Vec<LoadedTask>,
    arms: Vec<Arm>,
    seeds: Vec<u64>,
) -> Result<RunConfig, Error> {
    settings.models()?;
    settings.out = crate::report::run_outputs(outputs)?.folder;
    Ok(settings.config(tasks, arms, seeds, &settings::process_env)?)
}

/// What `run` and `ab` print when their run ended — the verdict, `table` of the records, the
/// tail, the cells that did not succeed, where the records are — the reports of `-o` written,
/// and the exit code ([`exit_for`]).
pub fn finish(
    records: &[CellRecord],
    table: &dyn Fn(&[CellRecord]) -> String,
    baseline: Option<&str>,
    started: Instant,
    out: &Path,
    common: &CommonRun,
) -> Result<Code, Error> {
    let width = crate::view::width();
    for line in harness_report::headline::run_block(records, baseline, width) {
        crate::out::line(&line)?;
    }
    crate::out::line(&table(records))?;
    for line in harness_report::headline::run_tail(records, baseline, width) {
        crate::out::line(&line)?;
    }
    print_failures(records);
    eprintln!("{}", records_line(records, started, out));
    crate::report::write_run_reports(out, &common.out, baseline)?;
    exit_for(records, common.fail_on_failure)
}

/// The exit code of a finished `run` or `ab`: 0 when every cell ran to a verdict (success or a
/// failed check: the failing cells are the finding), 100 when a cell ended in an
/// infrastructure error (`status: error`) or, with `--fail-on-failure`, failed a check; 4 with
/// no cell. The note that says which goes to stderr.
fn exit_for(records: &[CellRecord], fail_on_failure: bool) -> Result<Code, Error> {
    if records.is_empty() {
        return Ok(Code::NoCells);
    }
    if let Some(note) = outcome_note(records, fail_on_failure) {
        eprintln!("{note}");
    }
    Ok(outcome_code(records, fail_on_failure))
}

/// [`exit_for`]'s code, without the note.
fn outcome_code(records: &[CellRecord], fail_on_failure: bool) -> Code {
    let count = |s: Status| records.iter().filter(|r| r.status == s).count();
    if count(Status::Error) > 0 || (fail_on_failure && count(Status::Failure) > 0) {
        Code::Failed
    } else {
        Code::Ok
    }
}

/// The line that says what the failed and errored cells mean for the exit code (none when
/// every cell succeeded).
fn outcome_note(records: &[CellRecord], fail_on_failure: bool) -> Option<String> {
    let count = |s: Status| records.iter().filter(|r| r.status == s).count();
    let (failed, errors, n) = (count(Status::Failure), count(Status::Error), records.len());
    let cells = |k: usize| format!("{k} of {n} cell{}", if n == 1 { "" } else { "s" });
    match (failed, errors) {
        (0, 0) => None,
        (_, e) if e > 0 => Some(format!(
            "error: {} ended in an infrastructure error (exit 100; the same command runs them \
             again){}",
            cells(e),
            if failed > 0 {
                format!("; {failed} failed a check")
            } else {
                String::new()
            }
        )),
        (f, _) if fail_on_failure => Some(format!(
            "error: {} failed a check (exit 100: --fail-on-failure)",
            cells(f)
        )),
        (f, _) => Some(format!(
            "{} failed a check: what the policy lost, the benchmark's finding (exit 0; \
             --fail-on-failure exits 100 on it)",
            cells(f)
        )),
    }
}

/// `N cells in S s · records in DIR/cells.jsonl (foldbench report DIR …)`, the last line of
/// `run` and `ab` on stderr.
fn records_line(records: &[CellRecord], started: Instant, out: &Path) -> String {
    format!(
        "{} cells in {:.1}s · records in {} (a report: foldbench report {} -o report.html)",
        records.len(),
        started.elapsed().as_secs_f64(),
        out.join(harness_runner::CELLS_FILE).display(),
        out.display()
    )
}

fn print_failures(records: &[CellRecord]) {
    for r in records.iter().filter(|r| r.status != Status::Success) {
        eprintln!("{}", failure_line(r));
    }
}

/// The line that says why a cell did not succeed: its error, or its failed checks (a check
/// that timed out with what timed out and the limit).
fn failure_line(r: &CellRecord) -> String {
    match &r.error {
        // The error may quote a server's answer: shown escaped.
        Some(e) => format!("error   {}: {}", r.id, harness_core::printable(e, 2_000)),
        None => {
            let failed: Vec<String> = r
                .checks
                .iter()
                .filter(|c| !c.passed)
                .map(|c| match c.detail.lines().next() {
                    Some(first) if first.starts_with("timed out after ") => {
                        format!("{} ({first})", c.label)
                    }
                    _ => c.label.clone(),
                })
                .collect();
            format!("failure {}: {}", r.id, failed.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(id: &str, status: Status) -> CellRecord {
        CellRecord {
            version: 1,
            id: id.into(),
            task: "t".into(),
            arm: "none".into(),
            policy: "none".into(),
            model: "sim".into(),
            seed: 1,
            status,
            error: (status == Status::Error).then(|| "the workspace could not be made".into()),
            checks: vec![],
            turns: 1,
            metrics: Default::default(),
            wall_ms: 0,
            model_ms: 0,
            agent: None,
            behaviour: None,
        }
    }

    #[test]
    fn a_timed_out_check_is_printed_with_what_timed_out_and_the_limit() {
        let check = |label: &str, detail: &str| harness_core::CheckResult {
            label: label.into(),
            passed: false,
            detail: detail.into(),
        };
        let mut r = cell("t/none/sim/1", Status::Failure);
        r.checks = vec![
            check(
                "shell: sleep 100",
                "timed out after 60s, the time limit of a check (--tool-timeout, at least \
                 60s)\nstarted",
            ),
            check("shell: false", "\n[exit code: 1]"),
        ];
        assert_eq!(
            failure_line(&r),
            "failure t/none/sim/1: shell: sleep 100 (timed out after 60s, the time limit of a \
             check (--tool-timeout, at least 60s)); shell: false"
        );
    }

    #[test]
    fn only_an_infrastructure_error_or_fail_on_failure_exits_100() {
        let ok = cell("a", Status::Success);
        let failed = cell("b", Status::Failure);
        let broken = cell("c", Status::Error);
        let both = [ok.clone(), failed.clone()];
        assert_eq!(outcome_code(&both, false), Code::Ok);
        assert_eq!(outcome_code(&both, true), Code::Failed);
        assert_eq!(outcome_code(std::slice::from_ref(&ok), true), Code::Ok);
        assert_eq!(
            outcome_code(&[ok.clone(), broken.clone()], false),
            Code::Failed
        );
        assert_eq!(outcome_note(std::slice::from_ref(&ok), false), None);
        assert_eq!(
            outcome_note(&[ok, failed, broken], false).unwrap(),
            "error: 1 of 3 cells ended in an infrastructure error (exit 100; the same command \
             runs them again); 1 failed a check"
        );
        assert!(matches!(exit_for(&[], false), Ok(Code::NoCells)));
    }
}
