//! `foldbench list`: the cells a `run` with the same flags would run (the matrix of
//! `harness_runner::plan`, after the partition and the filters), after the table of their
//! tasks; or only the tasks (`crate::tasks`) when no matrix is in play.

use std::path::PathBuf;

use harness_runner::plan::{self, CellFilter, Overrides};
use serde::Serialize;

use crate::error::{Code, Error};

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
    pub matrix: crate::matrix::MatrixArgs,
}

impl ListArgs {
    /// Whether to list tasks (no matrix in play) rather than cells.
    pub fn lists_tasks(&self) -> bool {
        self.tasks_only
            || (self.matrix.config.source().file_in_play().is_none()
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
pub fn cmd(a: ListArgs) -> Result<Code, Error> {
    let plan = plan::plan(
        &a.matrix.config.source(),
        a.matrix.partition,
        &Overrides {
            tasks: a.paths.clone(),
            seeds: a.seeds.clone(),
            ..Overrides::default()
        },
    )?;
    let shard = plan.partition.map(|p| p.to_string());
    let filter = CellFilter {
        tasks: a.task.clone(),
        policies: a.policy.clone(),
        models: a.model.clone(),
    };
    let cells: Vec<ListedCell> = plan
        .matching(&filter)
        .into_iter()
        .map(|c| ListedCell {
            id: &c.id,
            task: &c.task,
            arm: &c.arm,
            policy: plan.policy_of(&c.arm),
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
        let table = harness_report::render::Table::new(
            &headers,
            cells
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
        );
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
