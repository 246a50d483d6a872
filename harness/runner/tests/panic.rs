//! A cell whose task panics (a bug in foldbench) is recorded as that cell's `error`, with the
//! panic's message, instead of going missing from the run.

use std::path::Path;
use std::sync::Arc;

use harness_core::Request;
use harness_core::Status;
use harness_runner::backends::{Model, ModelFuture};
use harness_runner::cell::{CellOptions, CellPlan};
use harness_runner::execution::Sandbox;
use harness_runner::run::run_cell_guarded;
use harness_runner::tasks;

/// A model whose every answer is a panic.
struct Panics;

impl Model for Panics {
    fn name(&self) -> String {
        "panics".into()
    }

    fn respond<'a>(&'a self, _req: &'a Request, _cell: &'a str) -> ModelFuture<'a> {
        Box::pin(async { panic!("the model was asked: it panics") })
    }
}

#[tokio::test]
async fn a_panicking_cell_is_an_error_record_with_the_panics_message() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/lean/lean.yaml");
    let task = tasks::load_task(&file).unwrap_or_else(|p| panic!("{}: {p:?}", file.display()));
    let plan = CellPlan {
        id: "lean/none/panics/1".into(),
        task: Arc::clone(&task.spec),
        task_dir: task.dir.clone(),
        arm: "none".into(),
        policy: policies::parse_policy("none").expect("policy"),
        model_name: "panics".into(),
        seed: 1,
    };
    let mut opts = CellOptions::default();
    opts.tool_limits.sandbox = Sandbox::unconfined();
    let out = run_cell_guarded(&plan, &Arc::new(opts), Arc::new(Panics), |_, _| {}).await;
    assert_eq!(out.record.status, Status::Error);
    assert_eq!(out.record.id, plan.id);
    let error = out.record.error.unwrap_or_default();
    assert!(
        error.contains("panicked") && error.contains("the model was asked: it panics"),
        "{error}"
    );
}
