//! Shared helpers: the repo's paths, running cells through the library, the built binary.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use harness_core::CellRecord;
use harness_core::Event;
use harness_core::Request;
use harness_core::ToolSpec;
use harness_runner::backends::BackendOptions;
use harness_runner::backends::{Model, ModelFuture, SimModel};
use harness_runner::cell::{run_cell, CellOptions, CellOutput, CellPlan};
use harness_runner::run::{self, Arm, RunConfig};
use harness_runner::tasks::{self, LoadedTask};

/// Says `skipped: WHY` on the process's standard error itself, which the test harness does not
/// capture, so `cargo test` shows it beside the test's `ok` instead of a pass in 0.00 s that ran
/// nothing. Under `REQUIRE=1` (`.ci/run` sets `FOLDBENCH_REQUIRE_AGENTS` and
/// `FOLDBENCH_REQUIRE_SANDBOX`) a test that cannot run fails instead.
pub fn skipped(why: &str, require: &str) {
    use std::io::Write;
    assert!(
        std::env::var(require).as_deref() != Ok("1"),
        "{require}=1 but {why}: this test did not run"
    );
    let _ = std::io::stderr().write_all(format!("skipped: {why}\n").as_bytes());
}

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// A task of the suite.
pub fn task(name: &str) -> LoadedTask {
    tasks::load_task(&root().join("tasks").join(format!("{name}.yaml")))
        .unwrap_or_else(|p| panic!("{name}: {p:?}"))
}

/// Every task of the suite.
pub fn all_tasks() -> Vec<LoadedTask> {
    tasks::load_tasks(&[root().join("tasks")]).unwrap_or_else(|p| panic!("{p:?}"))
}

/// Arms from policy texts.
pub fn arms(labels: &[&str]) -> Vec<Arm> {
    labels
        .iter()
        .map(|l| Arm {
            label: l.to_string(),
            policy: policies::parse_policy(l).unwrap(),
            sweep: None,
        })
        .collect()
}

/// Runs a matrix through the library into a temp run directory.
pub fn run_matrix(
    tasks: Vec<LoadedTask>,
    arm_labels: &[&str],
    model: &str,
    seeds: &[u64],
    out: &Path,
) -> Vec<CellRecord> {
    let cfg = RunConfig {
        tasks,
        arms: arms(arm_labels),
        models: vec![model.to_string()],
        seeds: seeds.to_vec(),
        out: out.to_path_buf(),
        jobs: 2,
        cell: CellOptions {
            sim_behaviour: always_recovers(),
            ..CellOptions::default()
        },
        backend: BackendOptions::default(),
        progress: false,
        retry_errors: true,
        only: None,
        replay: None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run::run(cfg)).unwrap()
}

/// A model that records what every request carried before the sim answers it.
pub struct Recording {
    inner: SimModel,
    /// (system prompt, tool list) of every request.
    pub seen: Mutex<Vec<(String, Vec<ToolSpec>)>>,
}

impl Model for Recording {
    fn name(&self) -> String {
        "sim".into()
    }

    fn respond<'a>(&'a self, req: &'a Request, cell: &'a str) -> ModelFuture<'a> {
        if let Ok(mut s) = self.seen.lock() {
            s.push((req.system.to_string(), req.tools.to_vec()));
        }
        self.inner.respond(req, cell)
    }
}

/// Runs one cell with the sim (oracle unless `judge` says otherwise) and options.
pub fn run_one(
    t: &LoadedTask,
    policy: &str,
    judge: harness_core::judge::Judge,
    opts: CellOptions,
) -> (CellOutput, Arc<Recording>) {
    let sim = harness_core::sim::Sim::new(Arc::clone(&t.spec), sim_config(judge));
    run_one_with(t, policy, sim, opts)
}

/// The sim settings of [`run_one`]: seed 1, the default re-check noise.
pub fn sim_config(judge: harness_core::judge::Judge) -> harness_core::sim::SimConfig {
    harness_core::sim::SimConfig {
        seed: 1,
        recheck: 0.1,
        judge,
        behaviour: always_recovers(),
    }
}

/// The sim the tests of the harness's measurements run: one that always tries to get a missing
/// fact back, by every means in a fixed order — an archive read, a re-run of a visible call, a
/// re-read (named paths, then a listing), a search for the cue — so that what a task and the
/// harness do with a recovery is tested whatever the shipped behaviour profile's draws are
/// (what the profile changes is tested in `behaviour.rs`, the core's sim tests, and the
/// default run's table).
pub fn always_recovers() -> harness_core::behaviour::SimBehaviour {
    harness_core::behaviour::SimBehaviour::ordered(harness_core::behaviour::Means {
        archive: 0.4,
        rerun: 0.3,
        reread: 0.2,
        search: 0.1,
    })
}

/// Runs one cell with the given sim.
pub fn run_one_with(
    t: &LoadedTask,
    policy: &str,
    sim: harness_core::sim::Sim,
    opts: CellOptions,
) -> (CellOutput, Arc<Recording>) {
    let model = Arc::new(Recording {
        inner: SimModel::new(sim),
        seen: Mutex::new(Vec::new()),
    });
    let out = run_plan(&sim_plan(t, policy), &opts, model.as_ref());
    (out, model)
}

/// The plan of the cell `TASK/POLICY/sim/1`.
pub fn sim_plan(t: &LoadedTask, policy: &str) -> CellPlan {
    CellPlan {
        id: format!("{}/{policy}/sim/1", t.spec.name),
        task: Arc::clone(&t.spec),
        task_dir: t.dir.clone(),
        arm: policy.to_string(),
        policy: policies::parse_policy(policy).unwrap(),
        model_name: "sim".into(),
        seed: 1,
    }
}

/// Runs `plan` with `model` on a runtime of its own, its events dropped.
pub fn run_plan(plan: &CellPlan, opts: &CellOptions, model: &dyn Model) -> CellOutput {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let on_event = |_: &str, _: &Event| {};
    rt.block_on(run_cell(plan, opts, model, &on_event))
}

/// The `foldbench` binary cargo built beside this test binary.
pub fn binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let bin = dir.join("foldbench");
    assert!(
        bin.exists(),
        "{} is missing: run the tests with `cargo test --workspace`, which builds it",
        bin.display()
    );
    bin
}

/// Builds a judgement dataset through the library from `--from` paths (tasks, data folders,
/// labels files), as `foldbench judge build` does with its defaults.
pub fn judge_build(from: &[PathBuf]) -> Vec<harness_core::judge::Item> {
    let sources = harness_runner::judge::classify(from).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(harness_runner::judge::build(
        &sources,
        harness_core::judge::DEFAULT_TOOL_OUTPUT_CAP,
        2,
        &|w: &str| eprintln!("warning: {w}"),
    ))
    .unwrap()
}

/// The labelled real sessions to build judge items from: the in-repository subset
/// (`tests/fixtures/real-sessions`) always, and the full corpus when `FOLDBENCH_DATA` names it.
/// A `FOLDBENCH_DATA` without a `labels` folder is a failure, not a silent skip.
pub fn real_sessions() -> Vec<PathBuf> {
    let mut dirs = vec![root().join("tests/fixtures/real-sessions")];
    let Some(full) = std::env::var_os("FOLDBENCH_DATA").map(PathBuf::from) else {
        eprintln!("note: FOLDBENCH_DATA is not set: the in-repository subset only");
        return dirs;
    };
    assert!(
        full.join("labels").is_dir(),
        "FOLDBENCH_DATA={} holds no labels folder: set it to the labelled real-session corpus, or unset it to run on the in-repository subset only",
        full.display()
    );
    dirs.push(full);
    dirs
}

/// Runs the binary at the repository's root with CI=true.
pub fn fb(args: &[&str]) -> std::process::Output {
    std::process::Command::new(binary())
        .current_dir(root())
        .args(args)
        .env("CI", "true")
        .output()
        .expect("the foldbench binary runs")
}

/// A finished command's exit code, standard output and standard error, for an assertion's message.
pub fn text(o: &std::process::Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `foldbench CMD tests/fixtures/real-sessions ARGS` at the repository's root, 120 columns: its
/// standard output (the command must succeed).
pub fn on_real_sessions(cmd: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(binary())
        .current_dir(root())
        .arg(cmd)
        .arg("tests/fixtures/real-sessions")
        .args(args)
        .env("COLUMNS", "120")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
