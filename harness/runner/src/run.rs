//! Running a matrix of cells: expansion into cells with stable ids, resume, concurrency, the
//! progress display, and the records written as each cell ends.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use harness_core::metrics;
use harness_core::sim::{Sim, SimConfig};
use harness_core::Event;
use harness_core::{CellRecord, Status, RECORD_VERSION};
use policies::PolicySpec;
use serde::Serialize;

use crate::backends::model::{Model, SimModel};
use crate::backends::{self, BackendOptions};
use crate::cell::{run_cell, CellOptions, CellOutput, CellPlan};
use crate::progress::Progress;
use crate::results::RunDir;
use crate::tasks::LoadedTask;

/// An arm: a policy as written, and its parsed spec.
#[derive(Debug, Clone, Serialize)]
pub struct Arm {
    /// Label as written (`compact:window=4000`).
    pub label: String,
    /// Parsed spec (recorded in `matrix.json`, so runs that bind one label to different
    /// parameters are different matrices).
    pub policy: PolicySpec,
    /// The sweep that made this arm (recorded in `matrix.json`, so reports keep a sweep's arms
    /// together and can draw them as one line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<harness_config::matrix::SweepOf>,
}

pub use crate::backends::model::{parse_sim, SimSettings};

/// One cell of the expanded matrix (the matrix file's cell: the same type, so a planned cell
/// and a run's cell are never copied field by field).
pub use harness_config::matrix::CellKey as MatrixCell;

/// Expands tasks × arms × models × seeds into cells, in that nesting order (the matrix file's
/// expansion, for arms without their own models).
pub fn expand(
    tasks: &[LoadedTask],
    arms: &[Arm],
    models: &[String],
    seeds: &[u64],
) -> Vec<MatrixCell> {
    let names: Vec<String> = tasks.iter().map(|t| t.spec.name.clone()).collect();
    let defs: Vec<harness_config::matrix::ArmDef> = arms
        .iter()
        .map(|a| harness_config::matrix::ArmDef::plain(&a.label))
        .collect();
    harness_config::matrix::expand(&names, &defs, models, seeds)
}

/// What a run needs.
pub struct RunConfig {
    /// Tasks.
    pub tasks: Vec<LoadedTask>,
    /// Arms.
    pub arms: Vec<Arm>,
    /// Model labels.
    pub models: Vec<String>,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// The run directory.
    pub out: PathBuf,
    /// Cells at once.
    pub jobs: usize,
    /// Cell settings.
    pub cell: CellOptions,
    /// Backend settings.
    pub backend: BackendOptions,
    /// Show progress on standard error: a bar on a terminal, one line per finished cell off
    /// one (see [`crate::progress`]).
    pub progress: bool,
    /// On resume, run again the cells that ended in an infrastructure error.
    pub retry_errors: bool,
    /// Only these cells (all when `None`).
    pub only: Option<Vec<String>>,
    /// Answer every model from this cassette folder while keeping the models' labels (and so the
    /// cell ids) of the run that recorded it.
    pub replay: Option<PathBuf>,
}

/// The matrix a run belongs to, when it is not the plain cross product of [`RunConfig`], and the
/// shard of it that the run executes (see `harness_config::matrix`).
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Every cell of the matrix (default: [`expand`] of the config), e.g. with arms on their own
    /// models.
    pub cells: Option<Vec<MatrixCell>>,
    /// The shard as written (`hash:1/2`), recorded in `matrix.json`; the cells of the shard are
    /// given by [`RunConfig::only`].
    pub partition: Option<String>,
}

/// Why a run stopped before its cells ran (or could not be recorded);
/// [`RunError::is_usage`] tells the user's problem (exit 2) from a failed read or write (exit 1).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The run folder is in use, holds another run, or cannot be read or written.
    #[error(transparent)]
    Dir(#[from] crate::results::RunDirError),
    /// A model label, a missing API key, a cassette folder: the user's to fix.
    #[error(transparent)]
    Model(#[from] crate::backends::BackendError),
    /// An arm delegates (`+delegate`) under a real agent, which delegates with its own tool.
    #[error(
        "arm `{arm}`: `+delegate` is foldbench's own loop's tool; a real agent (--agent) delegates with its own (run the arm without it)"
    )]
    DelegateUnderAgent {
        /// The arm's label.
        arm: String,
    },
    /// A finished cell's files or record cannot be written.
    #[error("cannot write the record of {cell}")]
    Record {
        /// The cell's id.
        cell: String,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// The records cannot be synced to the disk.
    #[error("cannot sync the records")]
    Sync(#[source] std::io::Error),
    /// The records cannot be read back when the run ends.
    #[error(transparent)]
    Records(crate::results::ReadError),
}

impl RunError {
    /// Whether the user is to fix it (a bad model label, a missing API key, a folder in use by
    /// another run or holding another matrix: exit 2) rather than a read or write that failed
    /// (exit 1).
    pub fn is_usage(&self) -> bool {
        match self {
            RunError::Dir(e) => e.is_usage(),
            RunError::Model(_) | RunError::DelegateUnderAgent { .. } => true,
            RunError::Record { .. } | RunError::Sync(_) | RunError::Records(_) => false,
        }
    }
}

/// Runs the matrix; returns the records of every cell of the matrix (resumed ones included).
pub async fn run(cfg: RunConfig) -> Result<Vec<CellRecord>, RunError> {
    run_selected(cfg, Selection::default()).await
}

/// Runs the cells of `cfg.only` (all when `None`) of a matrix. `matrix.json` records the full
/// matrix, the partition and the selection, so shards of one matrix can be merged and checked.
pub async fn run_selected(cfg: RunConfig, sel: Selection) -> Result<Vec<CellRecord>, RunError> {
    // The run's `exec:` policies run in its sandbox: the registry builds them, and it is told
    // here, from the config, not by the caller.
    crate::exec_policy::set_sandbox(cfg.cell.tool_limits.sandbox.clone());
    let all = sel
        .cells
        .unwrap_or_else(|| expand(&cfg.tasks, &cfg.arms, &cfg.models, &cfg.seeds));
    let mut cells = all.clone();
    if let Some(only) = &cfg.only {
        let only: std::collections::HashSet<&str> = only.iter().map(String::as_str).collect();
        cells.retain(|c| only.contains(c.id.as_str()));
    }
    let matrix = matrix_json(&cfg, sel.partition.as_deref(), &all, &cells);
    preflight(&cfg, &cells)?;
    crate::execution::workspace::sweep_stale(&crate::execution::workspace::workspaces_dir());
    let (mut dir, done) = RunDir::open(&cfg.out, &matrix, cfg.retry_errors)?;
    let todo: Vec<MatrixCell> = cells
        .iter()
        .filter(|c| !done.contains(&c.id))
        .cloned()
        .collect();
    let total = cells.len();
    let already = total - todo.len();
    let jobs = plan_jobs(&cfg, &interleaved(todo))?;
    let mut cfg = cfg;
    for (plan, model) in &jobs {
        // The run's models a `delegate` call may name for its child (a sim answers its own).
        if parse_sim(&plan.model_name).ok().flatten().is_none() {
            cfg.cell
                .child_models
                .entry(plan.model_name.clone())
                .or_insert_with(|| Arc::clone(model));
        }
    }
    let mode = if cfg.progress {
        crate::progress::Mode::detect()
    } else {
        crate::progress::Mode::Off
    };
    let progress = Arc::new(Mutex::new(Progress::new(mode, already, total)));
    let sem = Arc::new(tokio::sync::Semaphore::new(cfg.jobs.max(1)));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let opts = Arc::new(cfg.cell);
    let root = dir.root().to_path_buf();
    for (plan, model) in jobs {
        let sem = Arc::clone(&sem);
        let tx = tx.clone();
        let opts = Arc::clone(&opts);
        let progress = Arc::clone(&progress);
        let root = root.clone();
        tokio::spawn(async move {
            let Ok(permit) = sem.acquire_owned().await else {
                return;
            };
            if let Ok(mut p) = progress.lock() {
                p.started(&plan.id);
            }
            let on_event = move |_id: &str, e: &Event| {
                if let (Event::Request(_), Ok(mut p)) = (e, progress.lock()) {
                    p.request();
                }
            };
            let out = run_cell_guarded(&plan, &opts, model, on_event).await;
            // The next cell starts while this one's files are written and synced (waiting on
            // the disk, not the CPU), beside the other cells'; the loop below appends the
            // records one at a time, each after its cell's files.
            drop(permit);
            let written = tokio::task::spawn_blocking(move || {
                let r = crate::results::write_cell_files(&root, &out);
                (out, r)
            })
            .await;
            if let Ok(done) = written {
                let _ = tx.send(done);
            }
        });
    }
    drop(tx);
    while let Some(first) = rx.recv().await {
        // The cells that have finished by now: their records appended, then synced once.
        let mut batch = vec![first];
        while let Ok(more) = rx.try_recv() {
            batch.push(more);
        }
        let mut failed = None;
        for (out, files) in batch.iter_mut() {
            let written = match std::mem::replace(files, Ok(())) {
                Ok(()) => dir.append_record(out),
                Err(e) => Err(e),
            };
            if let Err(source) = written {
                failed.get_or_insert(RunError::Record {
                    cell: out.record.id.clone(),
                    source,
                });
            }
        }
        dir.sync_records().map_err(RunError::Sync)?;
        if let Some(e) = failed {
            return Err(e);
        }
        for (out, _) in &batch {
            if let Ok(mut p) = progress.lock() {
                p.finished(&out.record);
            }
        }
    }
    if let Ok(p) = progress.lock() {
        p.finish();
    }
    let records = crate::results::read_records(dir.root()).map_err(RunError::Records)?;
    Ok(in_matrix_order(records, &cells))
}

/// [`run_cell`] as a task of its own, so that a panic in it (a bug) becomes that cell's `error`
/// record, with the panic's message, instead of a cell missing from the run.
pub async fn run_cell_guarded(
    plan: &CellPlan,
    opts: &Arc<CellOptions>,
    model: Arc<dyn Model>,
    on_event: impl Fn(&str, &Event) + Send + Sync + 'static,
) -> CellOutput {
    let cell = {
        let plan = plan.clone();
        let opts = Arc::clone(opts);
        tokio::spawn(async move {
            match &opts.agent {
                Some(agent) => crate::agent_cell::run_agent_cell(&plan, &opts, agent).await,
                None => run_cell(&plan, &opts, model.as_ref(), &on_event).await,
            }
        })
    };
    match cell.await {
        Ok(out) => out,
        Err(e) => internal_error(plan, opts, &panic_text(e)),
    }
}

/// What a cell's task that did not finish says: its panic message, or that it was cancelled.
fn panic_text(e: tokio::task::JoinError) -> String {
    if !e.is_panic() {
        return "the cell's task was cancelled".to_string();
    }
    let payload = e.into_panic();
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".to_string());
    format!("internal error, the cell panicked (a bug in foldbench; please report it): {msg}")
}

/// The output of a cell that ended without one of its own (its task panicked): status `error`
/// with `reason`, no turns, no events, so the run records it instead of losing it.
fn internal_error(plan: &CellPlan, opts: &CellOptions, reason: &str) -> CellOutput {
    let price = opts.price(&plan.model_name);
    CellOutput {
        record: CellRecord {
            version: RECORD_VERSION,
            id: plan.id.clone(),
            task: plan.task.name.clone(),
            arm: plan.arm.clone(),
            policy: plan.policy.label(),
            model: plan.model_name.clone(),
            seed: plan.seed,
            status: Status::Error,
            error: Some(reason.to_string()),
            checks: Vec::new(),
            turns: 0,
            metrics: metrics::compute(&[], Some(&plan.task), &price),
            wall_ms: 0,
            model_ms: 0,
            agent: None,
            behaviour: None,
        },
        events: Vec::new(),
        transcript: Vec::new(),
        diff: String::new(),
        archives: Vec::new(),
    }
}

/// The cells in the order they start: the k-th cell of every task before the (k+1)-th of any.
/// Cells of one task walk the same workspace states and ask the tool cache for the same
/// commands, so started side by side they wait on each other's first calls; started task by
/// task, the first arm of each task fills the cache while the others read it. Records are
/// listed in matrix order whatever the start order.
fn interleaved(cells: Vec<MatrixCell>) -> Vec<MatrixCell> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut keyed: Vec<(usize, usize, MatrixCell)> = cells
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let k = seen.entry(c.task.clone()).or_default();
            *k += 1;
            (*k, i, c)
        })
        .collect();
    keyed.sort_by_key(|(k, i, _)| (*k, *i));
    keyed.into_iter().map(|(_, _, c)| c).collect()
}

/// `matrix.json`: the whole matrix, and which part of it this run is (a shard or `--only`).
fn matrix_json(
    cfg: &RunConfig,
    partition: Option<&str>,
    all: &[MatrixCell],
    cells: &[MatrixCell],
) -> serde_json::Value {
    let mut matrix = serde_json::json!({
        "version": 1,
        "tasks": cfg.tasks.iter().map(|t| serde_json::json!({"name": t.spec.name, "file": t.file})).collect::<Vec<_>>(),
        "arms": cfg.arms,
        "models": cfg.models,
        "seeds": cfg.seeds,
        "cells": all,
    });
    if let Some(o) = matrix.as_object_mut() {
        match (partition, &cfg.only) {
            (Some(p), _) => {
                o.insert("partition".into(), serde_json::json!(p));
            }
            (None, Some(_)) => {
                o.insert(
                    "only".into(),
                    serde_json::json!(cells.iter().map(|c| &c.id).collect::<Vec<_>>()),
                );
            }
            (None, None) => {}
        }
    }
    matrix
}

/// A cell to run: its plan and its model.
type Job = (CellPlan, Arc<dyn Model>);

/// The plan and the model of each cell still to run.
fn plan_jobs(cfg: &RunConfig, todo: &[MatrixCell]) -> Result<Vec<Job>, RunError> {
    let tasks: HashMap<String, LoadedTask> = cfg
        .tasks
        .iter()
        .map(|t| (t.spec.name.clone(), t.clone()))
        .collect();
    let arms: HashMap<String, Arm> = cfg
        .arms
        .iter()
        .map(|a| (a.label.clone(), a.clone()))
        .collect();
    let mut shared: HashMap<(String, u64), Arc<dyn Model>> = HashMap::new();
    let mut jobs = Vec::new();
    for c in todo {
        let task = &tasks[&c.task];
        let plan = CellPlan {
            id: c.id.clone(),
            task: Arc::clone(&task.spec),
            task_dir: task.dir.clone(),
            arm: c.arm.clone(),
            policy: arms[&c.arm].policy.clone(),
            model_name: c.model.clone(),
            seed: c.seed,
        };
        let model = model_for(c, task, cfg, &mut shared)?;
        jobs.push((plan, model));
    }
    Ok(jobs)
}

/// The records of `cells`, in matrix order (so tables list arms as they were given).
fn in_matrix_order(records: Vec<CellRecord>, cells: &[MatrixCell]) -> Vec<CellRecord> {
    let order: HashMap<&str, usize> = cells
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.as_str(), i))
        .collect();
    let mut records: Vec<CellRecord> = records
        .into_iter()
        .filter(|r| order.contains_key(r.id.as_str()))
        .collect();
    records.sort_by_key(|r| order[r.id.as_str()]);
    records
}

/// The model of a cell: a fresh sim per cell (wrapped for recording), or one HTTP or cassette
/// model per (label, seed), shared by the cells that use it.
fn model_for(
    c: &MatrixCell,
    task: &LoadedTask,
    cfg: &RunConfig,
    shared: &mut HashMap<(String, u64), Arc<dyn Model>>,
) -> Result<Arc<dyn Model>, RunError> {
    let model: Arc<dyn Model> = match parse_sim(&c.model).map_err(RunError::Model)? {
        Some(s) => {
            let sim = Sim::new(
                Arc::clone(&task.spec),
                SimConfig {
                    seed: c.seed,
                    recheck: s.recheck,
                    judge: s.judge,
                    behaviour: cfg.cell.sim_behaviour,
                },
            );
            let m: Arc<dyn Model> = Arc::new(SimModel::new(sim));
            backends::with_recording(
                m,
                &BackendOptions {
                    epoch: c.seed,
                    ..cfg.backend.clone()
                },
            )
            .map_err(RunError::Model)?
        }
        None if cfg.replay.is_some() => {
            let dir = cfg
                .replay
                .as_ref()
                .map(|d| d.display().to_string())
                .unwrap_or_default();
            match shared.get(&(c.model.clone(), c.seed)) {
                Some(m) => Arc::clone(m),
                None => {
                    let m = backends::parse_model(
                        &format!("replay:{dir}"),
                        &BackendOptions {
                            epoch: c.seed,
                            record: None,
                            ..cfg.backend.clone()
                        },
                    )
                    .map_err(RunError::Model)?;
                    shared.insert((c.model.clone(), c.seed), Arc::clone(&m));
                    m
                }
            }
        }
        None => match shared.get(&(c.model.clone(), c.seed)) {
            Some(m) => Arc::clone(m),
            None => {
                let m = backends::parse_model(
                    &c.model,
                    &BackendOptions {
                        epoch: c.seed,
                        ..cfg.backend.clone()
                    },
                )
                .map_err(RunError::Model)?;
                shared.insert((c.model.clone(), c.seed), Arc::clone(&m));
                m
            }
        },
    };
    Ok(model)
}

/// Checks everything the user can get wrong before the run folder is created: the sim labels
/// and the API keys the models need (none when a cassette answers).
fn preflight(cfg: &RunConfig, cells: &[MatrixCell]) -> Result<(), RunError> {
    if let (Some(_), Some(arm)) = (&cfg.cell.agent, cfg.arms.iter().find(|a| a.policy.delegate)) {
        return Err(RunError::DelegateUnderAgent {
            arm: arm.label.clone(),
        });
    }
    for c in cells {
        parse_sim(&c.model).map_err(RunError::Model)?;
    }
    if cfg.replay.is_none() {
        let mut labels: Vec<&str> = cells.iter().map(|c| c.model.as_str()).collect();
        labels.sort_unstable();
        labels.dedup();
        for m in labels {
            backends::check_keys(m).map_err(RunError::Model)?;
        }
    }
    Ok(())
}
