//! The `foldbench` command line: clap's definitions and the commands without a module of
//! their own. `main.rs` maps what [`main`] returns to an exit code.
//!
//! The exit codes are defined once, in [`crate::error`]; `run` and `ab` stopped by SIGINT or
//! SIGTERM exit 130 or 143 (after removing their workspaces).
//!
//! Per command: `run`/`ab` — 0 every cell ran to a verdict (succeeded or failed a check: the
//! failing cells are the finding), 100 a cell ended in an infrastructure error (or, with
//! `--fail-on-failure`, failed a check), 4 the matrix or the `--partition` selected no cell, 2
//! the run folder is in use by another run or holds another matrix or a cell twice, or a model's
//! API key is not set (checked before the folder is created); `report` — 2 a `cells.jsonl` with a
//! bad line or a cell recorded twice; `list` — 4 when no cell is selected; `merge` — 2 shards of
//! different matrices or a cell in two shards, 100 cells of the matrix in no shard; `compare` —
//! with `--fail-on-regression`, 100 a metric regressed beyond its threshold or a base cell is
//! missing from the new run (unless `--allow-missing`), 4 the runs share no cell; `validate` and
//! every reader of a matrix file or spec — 2 with every problem printed as file:line:col.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use harness_core::message::Message;
use harness_core::record::{CellRecord, Status};
use harness_report::render;
use harness_report::view::Kind;

use crate::error::{Code, Error};

use harness_runner::agent_cell::AgentSetup;
use harness_runner::agents::isolate::Isolation;
use harness_runner::agents::Agent;
use harness_runner::backends::BackendOptions;
use harness_runner::cell::CellOptions;
use harness_runner::execution::tool_cache::ToolCache;
use harness_runner::run::{self, Arm, RunConfig};
use harness_runner::tasks;

/// The `foldbench` command line. Its `--help` opening names the default policies
/// ([`long_about`]); [`with_policy_help`] puts it in place with the other texts made from the
/// policies.
#[derive(Debug, Parser)]
#[command(
    name = "foldbench",
    version,
    about,
    long_about = None,
    after_help = "Examples:
  foldbench run                                   every task × five policies × the simulated agent × seeds 1-3
  foldbench ab --task tasks/trim-rerun.yaml --arms none,trim --runs 3
  foldbench replay ~/.claude/projects             what each policy would have done to your sessions
  foldbench report results/<run-id> -o report.md  a report from a run's records
  foldbench compare results/baselines/ci results/<run-id> --fail-on-regression"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run tasks × policies × models × seeds and print the per-policy table.
    Run(RunArgs),
    /// Boundary judgement: build a dataset of cards, score models and baselines on it.
    #[command(subcommand)]
    Judge(crate::judge::JudgeCommand),
    /// Run two or more arms on one task and print each run's figures side by side.
    Ab(AbArgs),
    /// Render a report from a run directory's records (table, Markdown, CSV, JSON, JUnit, SVG).
    Report(crate::report::ReportArgs),
    /// Join the run directories of the shards of one matrix into one run directory.
    Merge(crate::merge::MergeArgs),
    /// Compare two runs cell by cell: deltas, a sign test, flips; fail CI on a regression.
    Compare(crate::compare::CompareArgs),
    /// Validate task specs; prints every problem with file:line:col.
    Validate {
        /// Spec files or folders (default: tasks/).
        paths: Vec<PathBuf>,
    },
    /// List the matrix: its tasks (turns, units, scripted tool calls, fixture size), then its
    /// cells with their ids and shard; only the tasks when no matrix is in play or with
    /// --tasks-only; only the cells with --json.
    List(crate::matrix::ListArgs),
    /// List the tasks with their turns, units, scripted tool calls and fixture size.
    Tasks {
        /// Spec files or folders (default: tasks/).
        paths: Vec<PathBuf>,
    },
    /// Print the fold result of turns FROM..=TO of a transcript (a run's transcript.jsonl).
    Fold {
        /// The transcript.
        transcript: PathBuf,
        /// First turn.
        #[arg(long)]
        from: u32,
        /// Last turn.
        #[arg(long)]
        to: u32,
    },
    /// Replay recorded sessions (Claude Code, Codex, ...) under each policy: every request's
    /// size, cache and cost, the essay's figures, and the reconstruction against recorded usage.
    Replay(crate::replay::ReplayArgs),
    /// Split what the model read in recorded sessions into work in progress, conclusions and
    /// steps of finished work.
    Analyze(crate::replay::AnalyzeArgs),
    /// Write the built-in task suite into DIR/tasks (default: the current folder), to run,
    /// read and change it outside a checkout.
    Init {
        /// The folder to write `tasks/` into.
        #[arg(default_value = ".")]
        dir: PathBuf,
    },
    /// List the policies (foldbench's and the peers') with their parameters, defaults, units
    /// and sources.
    Policies(crate::policy::PoliciesArgs),
    /// Serve a model API on loopback that answers as the simulated agent does, from a task's
    /// script, in the requesting agent's own tool vocabulary (Claude Code, Codex,
    /// mini-swe-agent, foldbench's own tools): an offline upstream for real agents and the
    /// proxy (docs/agents.md).
    Serve(crate::serve::ServeArgs),
    /// A model API proxy between a real agent and its model: applies a policy to every request
    /// (trim, fold with its card and archive, compaction), relays the answers as they came and
    /// records what it did as a run folder (docs/agents.md).
    Proxy(crate::proxy::ProxyArgs),
    /// Inside a real agent's sandbox: forward a loopback port to the proxy's socket and run the
    /// agent (started by `run --agent`).
    #[command(hide = true)]
    AgentBridge(crate::serve::BridgeArgs),
    /// Print a shell completion script: `foldbench completions bash > ~/.local/share/bash-completion/completions/foldbench`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, clap::Args, Clone)]
struct CommonRun {
    /// Policy `NAME[:k=v,...]`, repeatable; the help texts, with the default policies and every
    /// registered one, are made by [`with_policy_help`].
    #[arg(long = "policy")]
    policies: Vec<String>,
    /// Model: `sim[:judge=oracle|eager|lexical|never,recheck=P]`, `openai:NAME`,
    /// `anthropic:NAME`, `replay:DIR`. Repeatable.
    #[arg(long = "model")]
    models: Vec<String>,
    /// The behaviour profile the sim follows when it needs a fact it cannot see (default: the
    /// one foldbench ships, measured from its fixtures); a file `replay --behaviour-out` or
    /// `report --behaviour-out` wrote.
    #[arg(long, value_name = "FILE")]
    behaviour: Option<PathBuf>,
    /// Where in the behaviour profile's intervals the sim reads its recovery probability: the
    /// point estimate (default), or the low or high end (to see how the verdict moves).
    #[arg(long, value_enum, default_value_t = crate::behaviour::BehaviourEnd::Point)]
    behaviour_end: crate::behaviour::BehaviourEnd,
    /// A real agent drives the turns through its own command line; the help text, which names
    /// every agent of `agents::AGENTS`, is made by [`with_policy_help`] (`agents::flag_help`).
    #[arg(long, value_name = "AGENT")]
    agent: Option<String>,
    /// The upstream of `--agent` for a model that is not the sim (default: Anthropic's API for
    /// Claude Code, OpenAI's for the others); the key is the agent's own variable
    /// (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`).
    #[arg(long, value_name = "URL", requires = "agent")]
    agent_upstream: Option<String>,
    /// The run directory (default results/<run-id>; the same directory resumes a run), or a
    /// report file whose extension picks its format (.md .csv .json .xml .svg .html .txt),
    /// written from the run directory when the run ends, as `foldbench report DIR -o FILE`
    /// writes it. Repeatable: one directory and any number of reports.
    #[arg(short = 'o', long, value_name = "DIR|FILE")]
    out: Vec<PathBuf>,
    /// Cells at once, 1 to 1024 (default: the number of cores).
    #[arg(long, value_parser = crate::limits::jobs)]
    jobs: Option<usize>,
    /// Keep each cell's workspace instead of removing it.
    #[arg(long)]
    keep_workspaces: bool,
    /// Record every model exchange into this cassette folder.
    #[arg(long)]
    record: Option<PathBuf>,
    /// Answer from this cassette folder: with --model, the cells keep that model's label (the
    /// ids of the recorded run); alone, it is the same as --model replay:DIR.
    #[arg(long)]
    replay: Option<PathBuf>,
    /// Model requests per turn before a turn is cut (at most 100,000).
    #[arg(long, default_value_t = 80, value_parser = crate::limits::max_steps)]
    max_steps: usize,
    /// Time limit of one tool call, in seconds (a shell call's whole process group is killed
    /// at the limit; setup and check commands get the same limit, checks at least 60 s); at
    /// most 86,400 (a day).
    #[arg(
        long,
        alias = "shell-timeout",
        default_value_t = 30,
        value_name = "SECS",
        value_parser = crate::limits::tool_timeout
    )]
    tool_timeout: u64,
    /// Time limit of one cell, in seconds; a cell that exceeds it ends with status `error`; at
    /// most 604,800 (a week).
    #[arg(long, default_value_t = 3600, value_name = "SECS", value_parser = crate::limits::cell_timeout)]
    cell_timeout: u64,
    /// Time limit of one model request, in seconds, from sending it to the end of the answer;
    /// at most 86,400 (a day).
    #[arg(long, default_value_t = 120, value_name = "SECS", value_parser = crate::limits::request_timeout)]
    request_timeout: u64,
    /// Retries of a model request after the first attempt (on 408, 429, 5xx, connection
    /// errors, time-outs and truncated answers); at most 100.
    #[arg(long, default_value_t = 4, value_name = "N", value_parser = crate::limits::retries)]
    retries: u32,
    /// The longest wait between two attempts of a model request that a server's `Retry-After`
    /// imposes, in seconds (a longer one is cut to this, and the warning says so); at most 3,600.
    #[arg(long, default_value_t = 60, value_name = "SECS", value_parser = crate::limits::max_retry_wait)]
    max_retry_wait: u64,
    /// The most tokens a real model may write per answer, sent as `max_tokens` (default: the
    /// provider's; a small local model may otherwise write until its context is full); at most
    /// 10,000,000.
    #[arg(long, value_name = "N", value_parser = crate::limits::max_output_tokens)]
    max_output_tokens: Option<u32>,
    /// The sampling temperature sent to a real model, 0 to 2 (Anthropic: 0 to 1); 0 asks for the
    /// most likely answer (default: none sent, the provider's own, which samples).
    #[arg(long, value_name = "T", value_parser = harness_runner::backends::parse_temperature)]
    temperature: Option<f64>,
    /// Where shell commands (setup, the agent's, checks) run: `bwrap` (bubblewrap: own PID
    /// namespace and /proc, allowed environment only, the workspace the only writable folder, no
    /// network unless the task asks), `none` (plain sh), or `auto` (bwrap when it works here,
    /// else none with a warning for the sim, and an error for a real model).
    #[arg(long, default_value = "auto")]
    sandbox: harness_runner::execution::sandbox::SandboxMode,
    /// Keep the tool cache in this folder too, so later runs reuse it (size cap: 256 MB).
    #[arg(long, value_name = "DIR", conflicts_with = "no_tool_cache")]
    tool_cache: Option<PathBuf>,
    /// On resume, keep the records of cells that ended in an infrastructure error (`status:
    /// error`) instead of running them again (failed checks are results and never re-run).
    #[arg(long)]
    no_retry_errors: bool,
    /// Run every shell command for real: no tool cache (by default cells of a run share the
    /// results of commands, with the file changes they made; see docs/performance.md).
    #[arg(long)]
    no_tool_cache: bool,
    /// Exit 100 when a cell failed its checks too (by default a failed check is the
    /// benchmark's finding, exit 0; a cell that ended in an infrastructure error always exits
    /// 100).
    #[arg(long)]
    fail_on_failure: bool,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Task spec files or folders, or tasks' names (default: the matrix file's, or tasks/).
    #[arg(long = "tasks")]
    tasks: Vec<PathBuf>,
    /// Seeds: `1-3` or `1,2,5` (default: the matrix file's, or 1-3).
    #[arg(long)]
    seeds: Option<String>,
    #[command(flatten)]
    matrix: crate::matrix::MatrixArgs,
    #[command(flatten)]
    view: crate::view::ViewArgs,
    #[command(flatten)]
    common: CommonRun,
}

#[derive(Debug, clap::Args)]
struct AbArgs {
    /// The task: a spec file, or a task's name (`trim-rerun`: its spec in tasks/).
    #[arg(long)]
    task: PathBuf,
    /// Arms, comma-separated policies: `none,trim` or `fold:timing=eager,fold:timing=pressure`
    /// (a comma followed by a known policy name starts the next arm; sweeps expand:
    /// `trim:keep=0..2`).
    #[arg(long)]
    arms: String,
    /// Runs per arm (seeds 1..=N), at most 10,000.
    #[arg(long, default_value_t = 3, value_parser = crate::limits::runs)]
    runs: u64,
    /// The arm the others are judged against in the verdict lines (default: `none` when it is
    /// an arm, else the first).
    #[arg(long)]
    baseline: Option<String>,
    #[command(flatten)]
    view: crate::view::ViewArgs,
    #[command(flatten)]
    common: CommonRun,
}

/// Runs the command line: parses it (clap prints its own usage errors and help), runs the
/// command on a runtime and returns what it returned.
pub fn main() -> Result<Code, Error> {
    use clap::{CommandFactory, FromArgMatches};
    let parsed = with_policy_help(Cli::command(), &policies::registry::current())
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(c) => c,
        Err(e) => {
            let printed = e.print();
            return if e.use_stderr() {
                Err(Error::Problems(Vec::new()))
            } else {
                // --help and --version go to standard output: a failed write is an error too.
                crate::out::checked(printed).map(|()| Code::Ok)
            };
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return Err(Error::failed_in("cannot start the runtime", e));
        }
    };
    let code = rt.block_on(dispatch(cli.command));
    // A tool call abandoned at its time limit may still block a thread (a read that never
    // returns); do not wait for it.
    rt.shutdown_timeout(Duration::from_secs(1));
    code
}

/// `foldbench --help`'s opening, with the policies a run takes by default
/// ([`policies::POLICIES`]).
fn long_about() -> String {
    format!(
        "foldbench: decide how your coding agent should handle a growing conversation.\n\n\
         Runs scripted coding tasks in temporary git repositories under each context policy — {} \
         — and replays your own Claude Code and Codex sessions, then says what each policy saves \
         (request sizes, tokens per task, cache, cost) and what it loses (facts the agent no \
         longer saw, re-runs, archive reads, failed tasks).",
        policies::POLICIES.join(", ")
    )
}

/// The command line with its policy texts made, never written by hand: the policies each
/// command takes by default (`run`'s [`policies::POLICIES`], `replay`'s
/// [`crate::replay::default_policies`]) and every policy of `registry` with its summary, so a
/// policy registered by a program embedding foldbench is listed as the built-in ones are.
pub fn with_policy_help(cmd: clap::Command, registry: &policies::Registry) -> clap::Command {
    use crate::policy::{help, listed};
    // `run`'s and `ab`'s (where it is hidden, but shell completions show it).
    let run_policy = format!(
        "Policy `NAME[:k=v,...]`, repeatable (default: {}); the full text, with every policy, is \
         made from the registry ([`with_policy_help`])",
        policies::POLICIES.join(", ")
    );
    let replay_defaults = crate::replay::default_policies();
    cmd.long_about(long_about())
        .mut_subcommand("run", |c| {
            c.mut_arg("policies", |a| {
                a.help(run_policy.clone())
                    .long_help(help(registry, "Policy"))
            })
            .mut_arg("agent", |a| a.help(harness_runner::agents::flag_help()))
        })
        .mut_subcommand("replay", |c| {
            c.mut_arg("policies", |a| {
                a.help(format!(
                    "Policy `NAME[:k=v,...]`, repeatable (default: the arms of `--profile`, else \
                     {}; fold+strategies only when named, since a recorded session holds no \
                     strategy and it folds as fold does)",
                    listed(&replay_defaults, " and ")
                ))
                .long_help(help(
                    registry,
                    &format!(
                        "Policy to replay under (default: {}):",
                        listed(&replay_defaults, ", ")
                    ),
                ))
            })
        })
        .mut_subcommand("ab", |c| {
            c.mut_arg("arms", |a| {
                a.long_help(help(
                    registry,
                    "Arms, comma-separated (a comma followed by a policy name starts the next arm); each",
                ))
            })
            // `ab` takes its policies from --arms; --policy stays parsed only to say so.
            .mut_arg("policies", |a| a.help(run_policy.clone()).hide(true))
            .mut_arg("agent", |a| a.help(harness_runner::agents::flag_help()))
        })
}

async fn dispatch(cmd: Command) -> Result<Code, Error> {
    match cmd {
        Command::Validate { paths } => validate(paths),
        Command::List(a) if a.lists_tasks() => list(a.paths),
        Command::List(a) => crate::matrix::list(a),
        Command::Tasks { paths } => list(paths),
        Command::Merge(a) => crate::merge::cmd(a),
        Command::Compare(a) => crate::compare::cmd(a),
        Command::Run(a) => cmd_run(a).await,
        Command::Judge(c) => crate::judge::main(c).await,
        Command::Ab(a) => cmd_ab(a).await,
        Command::Report(a) => crate::report::cmd(a),
        Command::Fold {
            transcript,
            from,
            to,
        } => fold_cmd(transcript, from, to),
        Command::Replay(a) => crate::replay::replay(a),
        Command::Analyze(a) => crate::replay::analyze(a),
        Command::Init { dir } => init(&dir),
        Command::Policies(a) => crate::policy::cmd(a),
        Command::Serve(a) => crate::serve::cmd(a).await,
        Command::Proxy(a) => crate::proxy::cmd(a).await,
        Command::AgentBridge(a) => crate::serve::bridge(a).await,
        Command::Completions { shell } => {
            let mut cmd = with_policy_help(
                <Cli as clap::CommandFactory>::command(),
                &policies::registry::current(),
            );
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "foldbench", &mut script);
            crate::out::write_bytes(&script).map(|()| Code::Ok)
        }
    }
}

fn load(paths: Vec<PathBuf>) -> Result<Vec<tasks::LoadedTask>, Error> {
    let paths = if paths.is_empty() {
        match tasks::default_dir(Path::new("")) {
            Ok(d) => vec![d],
            Err(e) => {
                return Err(Error::failed(e));
            }
        }
    } else {
        task_paths(paths)?
    };
    tasks::load_tasks(&paths)
        .map_err(|problems| crate::error::problems(&problems, "the task specs"))
}

/// Task arguments as given, with a bare task name (`trim-rerun`, as `list --task` takes it)
/// resolved to its spec file in the task folder (`tasks/`, else the built-in suite). A name that
/// is no task, or a path that names no spec, is refused with what to give (and no made-up
/// file position).
pub(crate) fn task_paths(paths: Vec<PathBuf>) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        match bare_name(&p) {
            Some(name) if !p.exists() => out.push(named_task(name)?),
            _ => out.push(p),
        }
    }
    tasks::spec_files(&out).map_err(Error::refused)?;
    Ok(out)
}

/// `p` as a task name: one path component, no glob, not a `.yaml`/`.yml` file name.
fn bare_name(p: &Path) -> Option<&str> {
    let s = p.to_str()?;
    let spec_like = matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"));
    (!s.is_empty() && !spec_like && !s.contains(['/', '*', '?', '[']) && s != "." && s != "..")
        .then_some(s)
}

/// The spec file of the task named `name` in the task folder (a spec's file is named after its
/// task).
fn named_task(name: &str) -> Result<PathBuf, Error> {
    let dir = tasks::default_dir(Path::new("")).map_err(Error::failed)?;
    let mut names: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .map_err(|source| Error::Read {
            what: format!("the task folder {}", dir.display()),
            source,
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|f| matches!(f.extension().and_then(|x| x.to_str()), Some("yaml" | "yml")))
        .filter_map(|f| Some((f.file_stem()?.to_str()?.to_string(), f.clone())))
        .collect();
    names.sort();
    if let Some((_, file)) = names.iter().find(|(n, _)| n == name) {
        return Ok(file.clone());
    }
    Err(Error::Usage(format!(
        "no task named `{name}` in {}{}; give a task name that `foldbench list` shows or a spec \
         file (tasks/NAME.yaml)",
        dir.display(),
        harness_core::suggest::did_you_mean(name, names.iter().map(|(n, _)| n.as_str()))
    )))
}

fn init(dir: &Path) -> Result<Code, Error> {
    let target = dir.join("tasks");
    match tasks::embedded::write_to(&target) {
        Ok(n) => {
            crate::out::line(&format!(
                "wrote the task suite ({n} files) to {}; try: foldbench run --tasks {} --seeds 1",
                target.display(),
                target.join("trim-rerun.yaml").display()
            ))?;
            Ok(Code::Ok)
        }
        Err(e) => Err(Error::refused(e)),
    }
}

fn validate(paths: Vec<PathBuf>) -> Result<Code, Error> {
    let named: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    match load(paths) {
        Ok(t) if t.is_empty() => Err(Error::Usage(format!(
            "no task spec found in {}; a task spec is a .yaml or .yml file (foldbench init writes the suite's into tasks/)",
            if named.is_empty() {
                "tasks/".to_string()
            } else {
                named.join(", ")
            }
        ))),
        Ok(t) => {
            crate::out::line(&format!(
                "{} task spec{} valid",
                t.len(),
                if t.len() == 1 { "" } else { "s" }
            ))?;
            Ok(Code::Ok)
        }
        Err(e) => Err(e),
    }
}

fn list(paths: Vec<PathBuf>) -> Result<Code, Error> {
    let tasks = load(paths)?;
    crate::out::line(&tasks::table(&tasks).to_terminal())?;
    Ok(Code::Ok)
}

/// Splits an `--arms` list: a comma starts a new arm when the next piece begins with a policy
/// name; otherwise it separates parameters of the same arm (commas in brackets never split).
pub fn split_arms(s: &str) -> Vec<String> {
    policies::registry::current().split_arms(s)
}

/// `run-YYYYMMDD-HHMMSS` in UTC, the default run folder's name.
fn run_id() -> String {
    jiff::Timestamp::now()
        .strftime("run-%Y%m%d-%H%M%S")
        .to_string()
}

/// The arms of `--policy` texts; without any, foldbench's own policies ([`policies::POLICIES`]).
fn arms_of(policies: &[String]) -> Result<Vec<Arm>, Error> {
    let list: Vec<String> = if policies.is_empty() {
        policies::POLICIES.iter().map(|s| s.to_string()).collect()
    } else {
        policies.to_vec()
    };
    crate::policy::arms(&list).map_err(|e| Error::policy("", e))
}

fn config(
    common: &CommonRun,
    tasks: Vec<tasks::LoadedTask>,
    arms: Vec<Arm>,
    seeds: Vec<u64>,
) -> Result<RunConfig, Error> {
    let models = match (&common.replay, common.models.is_empty()) {
        (Some(r), true) => vec![format!("replay:{}", r.display())],
        (None, true) => vec!["sim".to_string()],
        _ => common.models.clone(),
    };
    for m in &models {
        run::parse_sim(m).map_err(Error::refused)?;
    }
    let folder = crate::report::run_outputs(&common.out)?.folder;
    let jobs = common.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    });
    let mut cell = CellOptions {
        keep_workspaces: common.keep_workspaces,
        max_steps: common.max_steps,
        ..CellOptions::default()
    };
    cell.tool_limits.shell_timeout = Duration::from_secs(common.tool_timeout);
    cell.tool_limits.check_timeout = cell
        .tool_limits
        .shell_timeout
        .max(harness_runner::tools::MIN_CHECK_TIMEOUT);
    cell.cell_timeout = Duration::from_secs(common.cell_timeout);
    // A real model's shell commands are its own (the sim's are the task's), and so are a real
    // agent's whatever its model: without bubblewrap, `auto` refuses them instead of falling
    // back.
    let real_model = common.agent.is_some()
        || models
            .iter()
            .any(|m| !m.starts_with("replay:") && !matches!(run::parse_sim(m), Ok(Some(_))));
    cell.tool_limits.sandbox =
        harness_runner::execution::sandbox::Sandbox::detect_for(common.sandbox, real_model)
            .map_err(Error::refused)?;
    harness_runner::exec_policy::set_sandbox(cell.tool_limits.sandbox.clone());
    cell.agent = agent_setup(common, &models, &cell.tool_limits.sandbox)?;
    if cell.agent.is_none() && arms.iter().any(|a| a.label == crate::policy::NATIVE) {
        return Err(Error::Usage(format!(
            "the arm `{}` is a real agent's own context handling: it needs --agent \
             ({} or exec:CMD)",
            crate::policy::NATIVE,
            harness_runner::agents::listed()
        )));
    }
    let profile = crate::behaviour::profile(common.behaviour.as_deref())?;
    cell.sim_behaviour = profile.at(common.behaviour_end.into()).sim();
    cell.sim_behaviour_name = crate::behaviour::describe(profile, common.behaviour_end);
    cell.tool_limits.cache = match (&common.tool_cache, common.no_tool_cache) {
        (_, true) => None,
        (None, false) => Some(Arc::new(ToolCache::new())),
        (Some(dir), false) => Some(Arc::new(
            ToolCache::with_disk(dir, harness_runner::execution::tool_cache::DEFAULT_DISK_CAP)
                .map_err(|e| {
                    Error::refused_in(
                        format!("--tool-cache {}: cannot use the folder", dir.display()),
                        e,
                    )
                })?,
        )),
    };
    Ok(RunConfig {
        tasks,
        arms,
        models,
        seeds,
        out: folder.unwrap_or_else(|| PathBuf::from("results").join(run_id())),
        jobs,
        cell,
        backend: BackendOptions {
            record: common.record.clone(),
            max_output_tokens: common.max_output_tokens,
            temperature: common.temperature,
            timeout: Duration::from_secs(common.request_timeout),
            max_retries: common.retries,
            max_retry_wait: Duration::from_secs(common.max_retry_wait),
            ..BackendOptions::default()
        },
        progress: true,
        retry_errors: !common.no_retry_errors,
        only: None,
        replay: common.replay.clone(),
    })
}

/// The agent of `--agent`, found on this machine, with its key and upstream; `None` without
/// the flag.
fn agent_setup(
    common: &CommonRun,
    models: &[String],
    sandbox: &harness_runner::execution::sandbox::Sandbox,
) -> Result<Option<Arc<AgentSetup>>, Error> {
    let Some(name) = &common.agent else {
        return Ok(None);
    };
    if common.replay.is_some() || common.record.is_some() {
        return Err(Error::Usage(
            "--agent runs the agent's own model calls through a proxy: --record and --replay \
             (cassettes of foldbench's own loop) do not apply to it"
                .to_string(),
        ));
    }
    let kind = harness_runner::agents::parse(name)
        .map_err(|e| Error::refused_in(format!("--agent {name}"), e))?;
    let agent =
        Agent::resolve(kind).map_err(|e| Error::refused_in(format!("--agent {name}"), e))?;
    let sim = models
        .iter()
        .all(|m| matches!(run::parse_sim(m), Ok(Some(_))));
    let api_key = if sim {
        "offline".to_string()
    } else {
        let var = kind.key_variable();
        std::env::var(var)
            .ok()
            .filter(|k| !k.is_empty())
            .ok_or_else(|| {
                Error::Usage(format!(
                    "--agent {name} with a real model needs its key in {var} (or use --model sim \
                     for the offline upstream)"
                ))
            })?
    };
    // Inside bubblewrap the agent gets a network of its own with only the proxy in it, through
    // the bridge this binary runs; without bubblewrap it reaches the proxy on loopback.
    let isolation = match (sandbox.is_isolated(), std::env::current_exe()) {
        (true, Ok(program)) => Isolation::Bridged { program },
        (true, Err(_)) => Isolation::SharedNetwork,
        (false, _) => Isolation::None,
    };
    Ok(Some(Arc::new(AgentSetup {
        upstream: common
            .agent_upstream
            .clone()
            .unwrap_or_else(|| kind.default_upstream().to_string()),
        agent,
        isolation,
        api_key,
    })))
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

async fn cmd_run(a: RunArgs) -> Result<Code, Error> {
    // The tokenizer's tables take ~0.1 s to load on first use: loaded on a thread while the
    // matrix is read, the sandbox probed and the run folder opened (docs/performance.md).
    std::thread::spawn(|| harness_core::tokens::count("warm"));
    // The matrix: foldbench.yaml (or --config) and --profile, with the flags over it.
    let mut models = a.common.models.clone();
    if let (Some(r), true) = (&a.common.replay, models.is_empty()) {
        models = vec![format!("replay:{}", r.display())];
    }
    let overrides = crate::matrix::Overrides {
        tasks: if a.tasks.is_empty() {
            Vec::new()
        } else {
            task_paths(a.tasks.clone())?
        },
        seeds: a.seeds.clone(),
        policies: a.common.policies.clone(),
        models,
    };
    let plan = match crate::matrix::plan(&a.matrix, &overrides) {
        Ok(p) => p,
        Err(e) => return Err(e),
    };
    let mut common = a.common.clone();
    common.models = plan.models.clone();
    let mut cfg = config(
        &common,
        plan.tasks.clone(),
        plan.arms.clone(),
        plan.seeds.clone(),
    )?;
    cfg.cell.prices = plan.prices.clone();
    cfg.only = plan.only();
    let out = cfg.out.clone();
    let started = std::time::Instant::now();
    match crate::signals::interruptible(run::run_selected(cfg, plan.selection())).await {
        Ok(records) => {
            if records.is_empty() {
                eprintln!("error: no cell selected (the matrix or its partition is empty)");
                return Ok(Code::NoCells);
            }
            let width = crate::view::width();
            for line in harness_report::answer::run_block(&records, None, width) {
                crate::out::line(&line)?;
            }
            crate::out::line(
                &a.view
                    .render(&render::summary_table(&records), Kind::Summary),
            )?;
            for line in harness_report::answer::run_tail(&records, None, width) {
                crate::out::line(&line)?;
            }
            print_failures(&records);
            eprintln!("{}", records_line(&records, started, &out));
            crate::report::write_run_reports(&out, &a.common.out, None)?;
            exit_for(&records, a.common.fail_on_failure)
        }
        Err(e) => Err(e.into()),
    }
}

/// `N cells in S s · records in DIR/cells.jsonl (foldbench report DIR …)`, the last line of
/// `run` and `ab` on stderr.
fn records_line(records: &[CellRecord], started: std::time::Instant, out: &Path) -> String {
    format!(
        "{} cells in {:.1}s · records in {} (a report: foldbench report {} -o report.html)",
        records.len(),
        started.elapsed().as_secs_f64(),
        out.join(harness_runner::results::CELLS_FILE).display(),
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
        Some(e) => format!(
            "error   {}: {}",
            r.id,
            harness_core::printable::printable(e, 2_000)
        ),
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

async fn cmd_ab(a: AbArgs) -> Result<Code, Error> {
    if !a.common.policies.is_empty() {
        return Err(Error::Usage(format!(
            "`ab` takes its arms from --arms; --policy {} would be ignored: add it to \
             --arms (for example --arms {},{})",
            a.common.policies.join(" --policy "),
            a.arms,
            a.common.policies.join(",")
        )));
    }
    let tasks = match load(vec![a.task.clone()]) {
        Ok(t) => t,
        Err(e) => return Err(e),
    };
    let seeds: Vec<u64> = (1..=a.runs.max(1)).collect();
    let arms = arms_of(&split_arms(&a.arms))?;
    let labels: Vec<String> = arms.iter().map(|a| a.label.clone()).collect();
    let cfg = config(&a.common, tasks, arms, seeds)?;
    let out = cfg.out.clone();
    let started = std::time::Instant::now();
    match crate::signals::interruptible(run::run(cfg)).await {
        Ok(records) => {
            let width = crate::view::width();
            let baseline = a.baseline.as_deref();
            for line in harness_report::answer::run_block(&records, baseline, width) {
                crate::out::line(&line)?;
            }
            crate::out::line(
                &a.view
                    .render(&render::ab_table(&records, &labels), Kind::Ab),
            )?;
            for line in harness_report::answer::run_tail(&records, baseline, width) {
                crate::out::line(&line)?;
            }
            print_failures(&records);
            eprintln!("{}", records_line(&records, started, &out));
            crate::report::write_run_reports(&out, &a.common.out, a.baseline.as_deref())?;
            exit_for(&records, a.common.fail_on_failure)
        }
        Err(e) => Err(e.into()),
    }
}

/// Refuses a reversed range, and one that reaches past the transcript's turns (it would be
/// folded as if those turns were there), with the range there is.
fn check_fold_range(
    path: &Path,
    messages: &[Arc<Message>],
    from: u32,
    to: u32,
) -> Result<(), Error> {
    let turns = messages.iter().map(|m| m.turn).filter(|t| *t > 0);
    let (Some(first), Some(last)) = (turns.clone().min(), turns.max()) else {
        return Err(Error::Usage(format!(
            "{} has no turns to fold (no user or model message)",
            path.display()
        )));
    };
    if from > to {
        return Err(Error::Usage(format!(
            "--from {from} --to {to} is reversed (--from is greater than --to): --from is the \
             first turn to fold, --to the last; {} has turns {first}–{last}",
            path.display()
        )));
    }
    if from < first || to > last {
        return Err(Error::Usage(format!(
            "{} has turns {first}–{last}, not {from}–{to}; give --from and --to within \
             {first}–{last}",
            path.display()
        )));
    }
    Ok(())
}

fn fold_cmd(path: PathBuf, from: u32, to: u32) -> Result<Code, Error> {
    // Sized and checked before it is read, as replay's inputs are: a regular file of at most
    // `MAX_TRANSCRIPT_BYTES`, never a FIFO or a device.
    let bytes = harness_import::fs::read_regular(&path, harness_import::fs::MAX_TRANSCRIPT_BYTES)
        .map_err(|source| Error::Read {
        what: path.display().to_string(),
        source,
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        Error::Usage(format!(
            "{}: not UTF-8 text (byte {}); a transcript is JSON lines",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })?;
    let mut messages = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        match serde_json::from_str::<Message>(line) {
            Ok(m) => messages.push(m.sealed()),
            Err(e) => {
                return Err(Error::Problems(vec![format!(
                    "{}:{}:{}: not a transcript message: {e}",
                    path.display(),
                    i + 1,
                    e.column()
                )]));
            }
        }
    }
    check_fold_range(&path, &messages, from, to)?;
    let range: Vec<Arc<Message>> = messages
        .into_iter()
        .filter(|m| m.turn >= from && m.turn <= to)
        .collect();
    let bytes = harness_core::fold::archive_text(from, to, &range).into_bytes();
    let archive = format!(
        "{}/{}",
        harness_runner::execution::workspace::ARCHIVE_DIR,
        harness_core::fold::archive_name(from, to, "fold")
    );
    let result = harness_core::fold::build_result(
        from,
        to,
        &range,
        &archive,
        &harness_core::digest::sha256_hex(&bytes),
    );
    // The result quotes the transcript (the user's words, the closing message): each line is
    // shown with its control characters escaped, so a transcript cannot drive the terminal.
    let shown: Vec<String> = result
        .lines()
        .map(|l| harness_core::printable::printable(l, usize::MAX))
        .collect();
    crate::out::line(&shown.join("\n"))?;
    Ok(Code::Ok)
}

#[cfg(test)]
#[path = "cli_tests.rs"]
mod tests;
