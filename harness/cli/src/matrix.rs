//! The matrix in the shell: finding and reading the matrix file (`foldbench.yaml`, format in
//! `harness_config::matrix`), choosing a profile, applying the command line over it, loading the
//! tasks, expanding the cells with their stable ids, and picking a partition; and
//! `foldbench list`, which prints the cells a `run` with the same flags would run.
//!
//! Precedence, lowest first: built-in defaults (every task under `tasks/` × the five policies ×
//! `sim` × seeds 1-3), the file's top level, `profiles.default`, `profiles.<--profile>`, flags
//! (`--tasks`, `--policy`, `--model`, `--replay`, `--seeds`). Without a matrix file `foldbench run`
//! runs the built-in defaults.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use harness_config::matrix::{
    self, apply_windows, ArmDef, Layer, MatrixFile, Partition, Vocabulary,
};
use harness_config::yaml::Problem;
use harness_core::metrics::Price;
use serde::Serialize;

use crate::error::{Code, Error};
use harness_runner::run::{self, Arm, MatrixCell, Selection};
use harness_runner::tasks::{self, LoadedTask};

/// Which matrix file and profile to read.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConfigArgs {
    /// The matrix file (default: ./foldbench.yaml when it exists).
    #[arg(long = "config", value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// The profile of the matrix file: default, ci, nightly, peers or your own (layered on
    /// default).
    #[arg(long)]
    pub profile: Option<String>,
}

/// The matrix file, the profile and the shard.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct MatrixArgs {
    #[command(flatten)]
    /// File and profile.
    pub config: ConfigArgs,
    /// One shard of the matrix: `hash:K/N` (a cell keeps its shard when cells are added) or
    /// `slice:K/N` (round robin over the matrix order).
    #[arg(long, value_name = "hash:K/N|slice:K/N")]
    pub partition: Option<Partition>,
}

/// What the command line sets over the matrix file.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Task spec files or folders.
    pub tasks: Vec<PathBuf>,
    /// Seeds as written (`1-3`).
    pub seeds: Option<String>,
    /// Policy texts (each one arm, labelled by its text).
    pub policies: Vec<String>,
    /// Model labels (they replace the models of every arm).
    pub models: Vec<String>,
}

/// A resolved matrix, ready to run.
#[derive(Clone)]
pub struct Plan {
    /// The matrix file read, if any.
    pub file: Option<PathBuf>,
    /// The profile.
    pub profile: String,
    /// The tasks.
    pub tasks: Vec<LoadedTask>,
    /// The arms (windows applied).
    pub arms: Vec<Arm>,
    /// The model labels of arms without their own.
    pub models: Vec<String>,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// Every cell of the matrix, in matrix order.
    pub cells: Vec<MatrixCell>,
    /// The price table.
    pub prices: HashMap<String, Price>,
    /// The shard to run.
    pub partition: Option<Partition>,
}

impl Plan {
    /// The cells of the shard (all without a partition), in matrix order.
    pub fn selected(&self) -> Vec<&MatrixCell> {
        self.cells
            .iter()
            .enumerate()
            .filter(|(i, c)| self.partition.is_none_or(|p| p.contains(*i, &c.id)))
            .map(|(_, c)| c)
            .collect()
    }

    /// What [`run::run_selected`] needs besides the config: the matrix and the partition.
    pub fn selection(&self) -> Selection {
        Selection {
            cells: Some(self.cells.clone()),
            partition: self.partition.map(|p| p.to_string()),
        }
    }

    /// The ids to restrict a run to (`None`: every cell).
    pub fn only(&self) -> Option<Vec<String>> {
        self.partition
            .map(|_| self.selected().iter().map(|c| c.id.clone()).collect())
    }
}

/// Why a model label is refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelLabelError {
    /// A `sim` label with settings the sim does not take (the runner's words).
    #[error(transparent)]
    Sim(crate::error::Cause),
    /// No backend by that name.
    #[error(
        "unknown model `{label}`{}; known models: {}",
        harness_core::suggest::did_you_mean(
            .label.split(':').next().unwrap_or(.label),
            ["sim", "openai", "anthropic", "replay"]
        ),
        harness_runner::backends::KNOWN_MODELS
    )]
    Unknown {
        /// The label as given.
        label: String,
    },
}

/// Checks a model label without connecting to anything.
pub fn check_model(label: &str) -> Result<(), ModelLabelError> {
    if run::parse_sim(label)
        .map_err(|e| ModelLabelError::Sim(e.into()))?
        .is_some()
    {
        return Ok(());
    }
    match label.split_once(':') {
        Some(("openai" | "anthropic" | "replay", rest)) if !rest.trim().is_empty() => Ok(()),
        _ => Err(ModelLabelError::Unknown {
            label: label.to_string(),
        }),
    }
}

fn arm_def(a: crate::policy::ArmText) -> ArmDef {
    ArmDef {
        takes_window: crate::policy::vocab_window(&a.policy, 100_000).is_some(),
        sweep: a.sweep,
        label: a.label,
        ..ArmDef::plain(&a.policy)
    }
}

fn arm_defs(texts: &[String]) -> Result<Vec<ArmDef>, Error> {
    Ok(crate::policy::expand(texts)
        .map_err(|e| Error::policy("", e))?
        .into_iter()
        .map(arm_def)
        .collect())
}

fn print_problems(problems: &[Problem], what: &str) -> Error {
    crate::error::problems(problems, what)
}

/// The matrix file in play: `--config`, or `./foldbench.yaml` when it exists.
pub fn file_in_play(args: &ConfigArgs) -> Option<PathBuf> {
    args.file.clone().or_else(|| {
        let p = PathBuf::from(matrix::DEFAULT_FILE);
        p.is_file().then_some(p)
    })
}

/// Reads and validates a matrix file; prints every problem and returns exit 2 on any.
pub fn read_file(path: &Path) -> Result<MatrixFile, Error> {
    let name = path.display().to_string();
    let text = match harness_import::fs::read_regular(path, harness_runner::tasks::MAX_SPEC_BYTES) {
        Ok(b) => {
            String::from_utf8(b).map_err(|_| Error::Usage(format!("{name} is not UTF-8 text")))?
        }
        Err(source) => {
            return Err(Error::Read {
                what: format!("the matrix file {name}"),
                source,
            });
        }
    };
    let vocab = Vocabulary {
        policy: &|text, label| crate::policy::vocab_policy(text, label).map_err(Into::into),
        window: &crate::policy::vocab_window,
        model: &|m| check_model(m).map_err(Into::into),
    };
    matrix::load(&name, &text, &vocab).map_err(|p| print_problems(&p, &name))
}

/// The settings of the chosen profile (empty without a matrix file), the file and the profile.
pub fn profile(args: &ConfigArgs) -> Result<(Option<PathBuf>, String, Layer), Error> {
    let name = args
        .profile
        .clone()
        .unwrap_or_else(|| matrix::DEFAULT_PROFILE.to_string());
    let Some(path) = file_in_play(args) else {
        if name != matrix::DEFAULT_PROFILE {
            return Err(Error::Usage(format!(
                "--profile {name} needs a matrix file: there is no {} here; give --config FILE",
                matrix::DEFAULT_FILE
            )));
        }
        return Ok((None, name, Layer::default()));
    };
    let file = read_file(&path)?;
    let layer = file.profile(&name)?;
    Ok((Some(path), name, layer))
}

/// The policy texts of the chosen profile's arms, for `replay --profile NAME`: `None` without
/// `--profile` and `--config` (the caller's default) or when no layer sets arms. Sweeps are
/// expanded already; the arms' labels, models and windows belong to live runs and do not apply.
pub fn profile_policies(args: &ConfigArgs) -> Result<Option<Vec<String>>, Error> {
    if args.profile.is_none() && args.file.is_none() {
        return Ok(None);
    }
    let (_, _, layer) = profile(args)?;
    Ok(layer
        .arms
        .map(|arms| arms.into_iter().map(|a| a.policy).collect()))
}

/// The task spec files of the profile's patterns (relative to the matrix file's folder), each
/// pattern that matches nothing reported at its place in the file.
fn task_files(file: Option<&Path>, layer: &Layer) -> Result<Vec<PathBuf>, Error> {
    let dir = file
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let Some(patterns) = &layer.tasks else {
        return harness_runner::tasks::default_dir(&dir)
            .map(|d| vec![d])
            .map_err(Error::refused);
    };
    let mut files: Vec<PathBuf> = Vec::new();
    let mut problems = Vec::new();
    for p in patterns {
        match tasks::spec_files(&[dir.join(&p.pattern)]) {
            Ok(found) if !found.is_empty() => {
                for f in found {
                    if !files.contains(&f) {
                        files.push(f);
                    }
                }
            }
            Ok(_) | Err(_) => problems.push(Problem {
                file: file.map(|f| f.display().to_string()).unwrap_or_default(),
                line: p.line,
                col: p.col,
                message: format!(
                    "no task spec matches `{}` (looked in {}); give a .yaml file, a folder or a glob",
                    p.pattern,
                    dir.join(&p.pattern).display()
                ),
            }),
        }
    }
    if problems.is_empty() {
        Ok(files)
    } else {
        Err(print_problems(&problems, "the matrix file"))
    }
}

/// Resolves the matrix: file, profile, command line, tasks from disk, cells and shard.
pub fn plan(args: &MatrixArgs, ov: &Overrides) -> Result<Plan, Error> {
    let (file, profile, layer) = profile(&args.config)?;
    let task_paths = if ov.tasks.is_empty() {
        task_files(file.as_deref(), &layer)?
    } else {
        ov.tasks.clone()
    };
    let loaded =
        tasks::load_tasks(&task_paths).map_err(|p| print_problems(&p, "the task specs"))?;
    let mut arms: Vec<ArmDef> = if !ov.policies.is_empty() {
        arm_defs(&ov.policies)?
    } else {
        match layer.arms.clone() {
            Some(arms) => arms,
            None => arm_defs(&policies::POLICIES.map(String::from))?,
        }
    };
    let models = if !ov.models.is_empty() {
        for m in &ov.models {
            check_model(m).map_err(Error::refused)?;
        }
        for a in &mut arms {
            a.models = None;
        }
        ov.models.clone()
    } else {
        layer.models.clone().unwrap_or_else(|| vec!["sim".into()])
    };
    let seeds = match &ov.seeds {
        Some(s) => matrix::parse_seeds(s)?,
        None => layer.seeds.clone().unwrap_or_else(|| vec![1, 2, 3]),
    };
    let arms = apply_windows(
        &arms,
        layer.windows.as_deref().unwrap_or(&[]),
        &crate::policy::vocab_window,
    );
    let mut run_arms = Vec::new();
    for a in &arms {
        run_arms.push(Arm {
            label: a.label.clone(),
            policy: policies::parse_policy(&a.policy).map_err(|e| Error::policy("", e))?,
            sweep: a.sweep.clone(),
        });
    }
    let names: Vec<String> = loaded.iter().map(|t| t.spec.name.clone()).collect();
    let cells = matrix::expand(&names, &arms, &models, &seeds);
    let partition = args.partition;
    Ok(Plan {
        file,
        profile,
        tasks: loaded,
        arms: run_arms,
        models,
        seeds,
        cells,
        prices: layer.prices.into_iter().collect(),
        partition,
    })
}

/// `foldbench list`: the cells of the matrix, or the tasks.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Task spec files or folders (default: the matrix's tasks, or tasks/).
    pub paths: Vec<PathBuf>,
    /// List the tasks (turns, units, scripted tool calls, fixture size) instead of the cells;
    /// what `list` does when no matrix is in play (the same as `foldbench tasks`).
    #[arg(long)]
    pub tasks_only: bool,
    /// Print the cells as JSON.
    #[arg(long)]
    pub json: bool,
    /// Only cells of this task (repeatable).
    #[arg(long = "task", value_name = "NAME")]
    pub task: Vec<String>,
    /// Only cells of this arm label or policy name (repeatable).
    #[arg(long = "policy", value_name = "ARM")]
    pub policy: Vec<String>,
    /// Only cells on this model (repeatable).
    #[arg(long = "model", value_name = "MODEL")]
    pub model: Vec<String>,
    /// Seeds, as for `run` (`1-3`, `1,2,5`).
    #[arg(long)]
    pub seeds: Option<String>,
    #[command(flatten)]
    /// File, profile and shard.
    pub matrix: MatrixArgs,
}

impl ListArgs {
    /// Whether to list tasks (no matrix in play) rather than cells.
    pub fn lists_tasks(&self) -> bool {
        self.tasks_only
            || (file_in_play(&self.matrix.config).is_none()
                && self.matrix.config.profile.is_none()
                && self.matrix.partition.is_none()
                && !self.json
                && self.task.is_empty()
                && self.policy.is_empty()
                && self.model.is_empty()
                && self.seeds.is_none())
    }
}

/// One line of `foldbench list --json`.
#[derive(Debug, Serialize)]
struct ListedCell<'a> {
    id: &'a str,
    task: &'a str,
    arm: &'a str,
    policy: String,
    model: &'a str,
    seed: u64,
    shard: Option<String>,
}

/// Prints the cells of the matrix (after partition and filters); as text, after the table of
/// their tasks.
pub fn list(a: ListArgs) -> Result<Code, Error> {
    let plan = plan(
        &a.matrix,
        &Overrides {
            tasks: a.paths.clone(),
            seeds: a.seeds.clone(),
            ..Overrides::default()
        },
    )?;
    let policy_of: HashMap<&str, String> = plan
        .arms
        .iter()
        .map(|a| (a.label.as_str(), a.policy.label()))
        .collect();
    let shard = plan.partition.map(|p| p.to_string());
    let keep = |c: &MatrixCell| {
        let policy_name = policy_of
            .get(c.arm.as_str())
            .map(|p| p.split(':').next().unwrap_or("").to_string())
            .unwrap_or_default();
        (a.task.is_empty() || a.task.contains(&c.task))
            && (a.policy.is_empty() || a.policy.contains(&c.arm) || a.policy.contains(&policy_name))
            && (a.model.is_empty() || a.model.contains(&c.model))
    };
    let cells: Vec<ListedCell> = plan
        .selected()
        .into_iter()
        .filter(|c| keep(c))
        .map(|c| ListedCell {
            id: &c.id,
            task: &c.task,
            arm: &c.arm,
            policy: policy_of.get(c.arm.as_str()).cloned().unwrap_or_default(),
            model: &c.model,
            seed: c.seed,
            shard: shard.clone(),
        })
        .collect();
    if a.json {
        let v = serde_json::json!({
            "version": 1,
            "config": plan.file.as_ref().map(|f| f.display().to_string()),
            "profile": plan.profile,
            "partition": shard,
            "matrix_cells": plan.cells.len(),
            "cells": cells,
        });
        crate::out::line(&serde_json::to_string_pretty(&v)?)?;
    } else {
        let listed: Vec<harness_runner::tasks::LoadedTask> = plan
            .tasks
            .iter()
            .filter(|t| cells.iter().any(|c| c.task == t.spec.name))
            .cloned()
            .collect();
        crate::out::line(&harness_runner::tasks::table(&listed).to_terminal())?;
        let mut headers = vec!["id", "task", "arm", "policy", "model", "seed"];
        if shard.is_some() {
            headers.push("shard");
        }
        let table = harness_report::render::Table {
            headers: headers.iter().map(|s| s.to_string()).collect(),
            rows: cells
                .iter()
                .map(|c| {
                    let mut row = vec![
                        c.id.to_string(),
                        c.task.to_string(),
                        c.arm.to_string(),
                        c.policy.clone(),
                        c.model.to_string(),
                        c.seed.to_string(),
                    ];
                    if let Some(s) = &c.shard {
                        row.push(s.clone());
                    }
                    row
                })
                .collect(),
        };
        crate::out::line(&table.to_terminal())?;
    }
    eprintln!(
        "{} cell{} of {} in the matrix{} · profile {}{}",
        cells.len(),
        if cells.len() == 1 { "" } else { "s" },
        plan.cells.len(),
        shard
            .map(|s| format!(" · partition {s}"))
            .unwrap_or_default(),
        plan.profile,
        plan.file
            .as_ref()
            .map(|f| format!(" of {}", f.display()))
            .unwrap_or_else(|| " (no matrix file)".into())
    );
    if cells.is_empty() {
        Ok(Code::NoCells)
    } else {
        Ok(Code::Ok)
    }
}
