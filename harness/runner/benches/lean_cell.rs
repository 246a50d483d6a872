//! What one cell costs foldbench itself, with no tool process: the lean cell of
//! `benches/lean/lean.yaml` (two user turns, four file reads, an in-process check), run by the
//! sim under `none`, and its parts.
//!
//! - `lean/cell_and_records`: the whole cell as a run does it — workspace (written from the
//!   task's prepared copy), the session loop (requests, sim answers, tool calls with their
//!   workspace fingerprints, token counts), the checks, the diff, removing the workspace — and
//!   then its records written to a run folder (transcript, events, diff, request rows, the
//!   record: each file written aside, synced and renamed; `cells.jsonl` synced).
//! - `lean/cell`: the same without writing the records.
//! - `lean/cell_fold`: the cell under `fold` (a card per turn, a fold at the unit boundary with
//!   its archive written and synced), without writing the records.
//! - `lean/workspace_create`: a workspace made and removed.
//! - `lean/fingerprint`, `lean/cache_state`, `lean/diff`: one workspace fingerprint (taken
//!   before each workspace tool call), one tool-cache state (taken before each shell call), the
//!   diff taken at the end.
//! - `lean/write_cell`: the records of one finished cell written to a run folder.
//!
//! Run with `cargo bench -p harness-runner --bench lean_cell`. The whole-process figures (a
//! run of many lean cells, start-up) come from `benches/lean_process.sh`.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use criterion::{criterion_main, Criterion};
use harness_core::judge::Judge;
use harness_core::sim::{Sim, SimConfig};
use harness_core::Event;
use harness_runner::backends::SimModel;
use harness_runner::cell::{run_cell, CellOptions, CellOutput, CellPlan};
use harness_runner::execution::Sandbox;
use harness_runner::execution::Workspace;
use harness_runner::tasks::{self, LoadedTask};
use harness_runner::RunDir;

fn lean_task() -> LoadedTask {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/lean/lean.yaml");
    tasks::load_task(&file).unwrap_or_else(|p| panic!("{}: {p:?}", file.display()))
}

fn plan(task: &LoadedTask, policy: &str) -> CellPlan {
    CellPlan {
        id: format!("lean/{policy}/sim/1"),
        task: Arc::clone(&task.spec),
        task_dir: task.dir.clone(),
        arm: policy.to_string(),
        policy: policies::parse_policy(policy).expect("policy"),
        model_name: "sim".into(),
        seed: 1,
    }
}

fn options() -> CellOptions {
    let mut opts = CellOptions::default();
    // No shell call in the lean cell; no sandbox probe either.
    opts.tool_limits.sandbox = Sandbox::unconfined();
    opts
}

fn one_cell(
    rt: &tokio::runtime::Runtime,
    task: &LoadedTask,
    plan: &CellPlan,
    opts: &CellOptions,
) -> CellOutput {
    let sim = Sim::new(
        Arc::clone(&task.spec),
        SimConfig {
            seed: plan.seed,
            recheck: 0.1,
            judge: Judge::Oracle,
            behaviour: Default::default(),
        },
    );
    let model = SimModel::new(sim);
    let on_event = |_: &str, _: &Event| {};
    let out = rt.block_on(run_cell(plan, opts, &model, &on_event));
    assert_eq!(
        out.record.status,
        harness_core::Status::Success,
        "{:?}",
        out.record.error
    );
    out
}

fn run_dir(root: &Path) -> RunDir {
    let matrix = serde_json::json!({"version": 1, "cells": []});
    RunDir::open(root, &matrix, false).expect("run dir").0
}

fn fixture(task: &LoadedTask) -> PathBuf {
    task.dir.join(&task.spec.repo)
}

fn bench_lean(c: &mut Criterion) {
    let task = lean_task();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let opts = options();
    let none = plan(&task, "none");
    let fold = plan(&task, "fold");
    let out_dir = tempfile::tempdir().expect("tempdir");
    let mut dir = run_dir(out_dir.path());
    let mut g = c.benchmark_group("lean");
    g.bench_function("cell_and_records", |b| {
        b.iter(|| {
            let out = one_cell(&rt, &task, &none, &opts);
            dir.write_cell(&out).expect("write");
        })
    });
    g.bench_function("cell", |b| {
        b.iter(|| black_box(one_cell(&rt, &task, &none, &opts)))
    });
    g.bench_function("cell_fold", |b| {
        b.iter(|| black_box(one_cell(&rt, &task, &fold, &opts)))
    });
    g.bench_function("workspace_create", |b| {
        b.iter(|| black_box(Workspace::create(&fixture(&task), false).expect("workspace")))
    });
    let ws = Workspace::create(&fixture(&task), false).expect("workspace");
    g.bench_function("fingerprint", |b| {
        b.iter(|| black_box(ws.fingerprint().expect("fingerprint")))
    });
    g.bench_function("cache_state", |b| {
        b.iter(|| black_box(ws.cache_state().expect("state")))
    });
    g.bench_function("diff", |b| b.iter(|| black_box(ws.diff().expect("diff"))));
    let out = one_cell(&rt, &task, &none, &opts);
    g.bench_function("write_cell", |b| {
        b.iter(|| dir.write_cell(&out).expect("write"))
    });
    g.finish();
}

/// The group `criterion_main!` runs, in a private module: `criterion_group!` makes an
/// undocumented `pub fn`, which the workspace's `missing_docs` lint would flag.
mod group {
    use super::bench_lean;
    use criterion::criterion_group;

    criterion_group!(benches, bench_lean);
}

criterion_main!(group::benches);
