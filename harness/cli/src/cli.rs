//! The `foldbench` command line: clap's definitions, and the dispatch of each command to its
//! module (`run.rs`, `ab.rs`, `list.rs`, `replay.rs`, …), which builds the feature's config
//! through the library and prints what it returns. `main.rs` maps what [`main`] returns to an
//! exit code.
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

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::error::{Code, Error};

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
    List(crate::list::ListArgs),
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
pub(crate) struct CommonRun {
    /// Policy `NAME[:k=v,...]`, repeatable; the help texts, with the default policies and every
    /// registered one, are made by [`with_policy_help`].
    #[arg(long = "policy")]
    pub(crate) policies: Vec<String>,
    /// Model: `sim[:judge=oracle|eager|lexical|never,recheck=P]`, `openai:NAME`,
    /// `anthropic:NAME`, `replay:DIR`. Repeatable.
    #[arg(long = "model")]
    pub(crate) models: Vec<String>,
    /// The behaviour profile the sim follows when it needs a fact it cannot see (default: the
    /// one foldbench ships, measured from its fixtures); a file `replay --behaviour-out` or
    /// `report --behaviour-out` wrote.
    #[arg(long, value_name = "FILE")]
    pub(crate) behaviour: Option<PathBuf>,
    /// Where in the behaviour profile's intervals the sim reads its recovery probability: the
    /// point estimate (default), or the low or high end (to see how the verdict moves).
    #[arg(long, value_enum, default_value_t = crate::behaviour::BehaviourEnd::Point)]
    pub(crate) behaviour_end: crate::behaviour::BehaviourEnd,
    /// A real agent drives the turns through its own command line; the help text, which names
    /// every agent of `agents::AGENTS`, is made by [`with_policy_help`] (`agents::flag_help`).
    #[arg(long, value_name = "AGENT")]
    pub(crate) agent: Option<String>,
    /// The upstream of `--agent` for a model that is not the sim (default: Anthropic's API for
    /// Claude Code, OpenAI's for the others); the key is the agent's own variable
    /// (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`).
    #[arg(long, value_name = "URL", requires = "agent")]
    pub(crate) agent_upstream: Option<String>,
    /// The run directory (default results/<run-id>; the same directory resumes a run), or a
    /// report file whose extension picks its format (.md .csv .json .xml .svg .html .txt),
    /// written from the run directory when the run ends, as `foldbench report DIR -o FILE`
    /// writes it. Repeatable: one directory and any number of reports.
    #[arg(short = 'o', long, value_name = "DIR|FILE")]
    pub(crate) out: Vec<PathBuf>,
    /// Cells at once, 1 to 1024 (default: the number of cores).
    #[arg(long, value_parser = crate::limits::jobs)]
    pub(crate) jobs: Option<usize>,
    /// Keep each cell's workspace instead of removing it.
    #[arg(long)]
    pub(crate) keep_workspaces: bool,
    /// Record every model exchange into this cassette folder.
    #[arg(long)]
    pub(crate) record: Option<PathBuf>,
    /// Answer from this cassette folder: with --model, the cells keep that model's label (the
    /// ids of the recorded run); alone, it is the same as --model replay:DIR.
    #[arg(long)]
    pub(crate) replay: Option<PathBuf>,
    /// Model requests per turn before a turn is cut (at most 100,000).
    #[arg(long, default_value_t = 80, value_parser = crate::limits::max_steps)]
    pub(crate) max_steps: usize,
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
    pub(crate) tool_timeout: u64,
    /// Time limit of one cell, in seconds; a cell that exceeds it ends with status `error`; at
    /// most 604,800 (a week).
    #[arg(long, default_value_t = 3600, value_name = "SECS", value_parser = crate::limits::cell_timeout)]
    pub(crate) cell_timeout: u64,
    /// Time limit of one model request, in seconds, from sending it to the end of the answer;
    /// at most 86,400 (a day).
    #[arg(long, default_value_t = 120, value_name = "SECS", value_parser = crate::limits::request_timeout)]
    pub(crate) request_timeout: u64,
    /// Retries of a model request after the first attempt (on 408, 429, 5xx, connection
    /// errors, time-outs and truncated answers); at most 100.
    #[arg(long, default_value_t = 4, value_name = "N", value_parser = crate::limits::retries)]
    pub(crate) retries: u32,
    /// The longest wait between two attempts of a model request that a server's `Retry-After`
    /// imposes, in seconds (a longer one is cut to this, and the warning says so); at most 3,600.
    #[arg(long, default_value_t = 60, value_name = "SECS", value_parser = crate::limits::max_retry_wait)]
    pub(crate) max_retry_wait: u64,
    /// The most tokens a real model may write per answer, sent as `max_tokens` (default: the
    /// provider's; a small local model may otherwise write until its context is full); at most
    /// 10,000,000.
    #[arg(long, value_name = "N", value_parser = crate::limits::max_output_tokens)]
    pub(crate) max_output_tokens: Option<u32>,
    /// The sampling temperature sent to a real model, 0 to 2 (Anthropic: 0 to 1); 0 asks for the
    /// most likely answer (default: none sent, the provider's own, which samples).
    #[arg(long, value_name = "T", value_parser = harness_runner::backends::parse_temperature)]
    pub(crate) temperature: Option<f64>,
    /// Where shell commands (setup, the agent's, checks) run: `bwrap` (bubblewrap: own PID
    /// namespace and /proc, allowed environment only, the workspace the only writable folder, no
    /// network unless the task asks), `none` (plain sh), or `auto` (bwrap when it works here,
    /// else none with a warning for the sim, and an error for a real model).
    #[arg(long, default_value = "auto")]
    pub(crate) sandbox: harness_runner::execution::SandboxMode,
    /// Keep the tool cache in this folder too, so later runs reuse it (size cap: 256 MB).
    #[arg(long, value_name = "DIR", conflicts_with = "no_tool_cache")]
    pub(crate) tool_cache: Option<PathBuf>,
    /// On resume, keep the records of cells that ended in an infrastructure error (`status:
    /// error`) instead of running them again (failed checks are results and never re-run).
    #[arg(long)]
    pub(crate) no_retry_errors: bool,
    /// Run every shell command for real: no tool cache (by default cells of a run share the
    /// results of commands, with the file changes they made; see docs/performance.md).
    #[arg(long)]
    pub(crate) no_tool_cache: bool,
    /// Exit 100 when a cell failed its checks too (by default a failed check is the
    /// benchmark's finding, exit 0; a cell that ended in an infrastructure error always exits
    /// 100).
    #[arg(long)]
    pub(crate) fail_on_failure: bool,
}

#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// Task spec files or folders, or tasks' names (default: the matrix file's, or tasks/).
    #[arg(long = "tasks")]
    pub(crate) tasks: Vec<PathBuf>,
    /// Seeds: `1-3` or `1,2,5` (default: the matrix file's, or 1-3).
    #[arg(long)]
    pub(crate) seeds: Option<String>,
    #[command(flatten)]
    pub(crate) matrix: crate::matrix::MatrixArgs,
    #[command(flatten)]
    pub(crate) view: crate::view::ViewArgs,
    #[command(flatten)]
    pub(crate) common: CommonRun,
}

#[derive(Debug, clap::Args)]
pub(crate) struct AbArgs {
    /// The task: a spec file, or a task's name (`trim-rerun`: its spec in tasks/).
    #[arg(long)]
    pub(crate) task: PathBuf,
    /// Arms, comma-separated policies: `none,trim` or `fold:timing=eager,fold:timing=pressure`
    /// (a comma followed by a known policy name starts the next arm; sweeps expand:
    /// `trim:keep=0..2`).
    #[arg(long)]
    pub(crate) arms: String,
    /// Runs per arm (seeds 1..=N), at most 10,000.
    #[arg(long, default_value_t = 3, value_parser = crate::limits::runs)]
    pub(crate) runs: u64,
    /// The arm the others are judged against in the verdict lines (default: `none` when it is
    /// an arm, else the first).
    #[arg(long)]
    pub(crate) baseline: Option<String>,
    #[command(flatten)]
    pub(crate) view: crate::view::ViewArgs,
    #[command(flatten)]
    pub(crate) common: CommonRun,
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
/// [`harness_replay::default_policies`]) and every policy of `registry` with its summary, so a
/// policy registered by a program embedding foldbench is listed as the built-in ones are.
pub fn with_policy_help(cmd: clap::Command, registry: &policies::Registry) -> clap::Command {
    use crate::policy::{help, listed};
    // `run`'s and `ab`'s (where it is hidden, but shell completions show it).
    let run_policy = format!(
        "Policy `NAME[:k=v,...]`, repeatable (default: {}); the full text, with every policy, is \
         made from the registry ([`with_policy_help`])",
        policies::POLICIES.join(", ")
    );
    let replay_defaults = harness_replay::default_policies();
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
        Command::Validate { paths } => crate::validate::cmd(paths),
        Command::List(a) if a.lists_tasks() => crate::tasks::cmd(a.paths),
        Command::List(a) => crate::list::cmd(a),
        Command::Tasks { paths } => crate::tasks::cmd(paths),
        Command::Merge(a) => crate::merge::cmd(a),
        Command::Compare(a) => crate::compare::cmd(a),
        Command::Run(a) => crate::run::cmd(a).await,
        Command::Judge(c) => crate::judge::main(c).await,
        Command::Ab(a) => crate::ab::cmd(a).await,
        Command::Report(a) => crate::report::cmd(a),
        Command::Fold {
            transcript,
            from,
            to,
        } => crate::fold::cmd(&transcript, from, to),
        Command::Replay(a) => crate::replay::replay(a),
        Command::Analyze(a) => crate::replay::analyze(a),
        Command::Init { dir } => crate::init::cmd(&dir),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in policies and one of the test's own, registered as a program embedding
    /// foldbench registers its own (examples/embed-policy, `main_with`).
    fn registry_with_own_policy() -> policies::Registry {
        let mut reg = policies::Registry::builtin();
        reg.register(
            policies::Entry::new("test-keep-all", |_, b| {
                Ok(Box::new(policies::NonePolicy::new(b.window)))
            })
            .summary("every message, a policy of the test's own")
            .source("the command line's tests")
            .param("turns", "2", "turns", "the turns it keeps"),
        )
        .expect("a new name");
        reg
    }

    /// What `args` print as help with the policies of `reg`.
    fn help_with(reg: &policies::Registry, args: &[&str]) -> String {
        use clap::CommandFactory;
        let e = with_policy_help(Cli::command(), reg)
            .try_get_matches_from(args)
            .expect_err("help is asked for");
        assert_eq!(e.kind(), clap::error::ErrorKind::DisplayHelp, "{args:?}");
        e.to_string()
    }

    #[test]
    fn a_policy_a_program_registers_is_in_the_help_and_the_listing_without_a_hand_edit() {
        let own = registry_with_own_policy();
        let builtin = policies::Registry::builtin();
        for command in ["run", "replay", "ab"] {
            let help = help_with(&own, &["foldbench", command, "--help"]);
            assert!(
                help.contains("test-keep-all")
                    && help.contains("every message, a policy of the test's own"),
                "{command}: {help}"
            );
            for name in builtin.names() {
                assert!(
                    help.contains(&format!("  {name} ")),
                    "{command} lists {name}"
                );
            }
            let plain = help_with(&builtin, &["foldbench", command, "--help"]);
            assert!(!plain.contains("test-keep-all"), "{command}: {plain}");
        }
        let listing = crate::policy::listing(&own, None).unwrap();
        let entry =
            "test-keep-all  every message, a policy of the test's own\n  source: the command \
                     line's tests\n  turns=2  turns: the turns it keeps\n";
        assert!(listing.ends_with(&format!("\n\n{entry}")), "{listing}");
        assert_eq!(
            crate::policy::listing(&own, Some("test-keep-all")).unwrap(),
            entry
        );
        assert!(crate::error::render(
            &crate::policy::listing(&builtin, Some("test-keep-all")).unwrap_err()
        )
        .starts_with("error: unknown policy `test-keep-all`"));
    }

    #[test]
    fn the_default_policies_in_the_help_are_the_ones_the_commands_take() {
        let reg = policies::Registry::builtin();
        let run = policies::POLICIES.join(", ");
        let top = help_with(&reg, &["foldbench", "--help"]);
        assert!(
            top.contains(&format!("under each context policy — {run} — and")),
            "{top}"
        );
        let short = help_with(&reg, &["foldbench", "run", "-h"]);
        assert!(short.contains(&format!("(default: {run});")), "{short}");
        // replay's are the ones its replayer takes without --policy: fold+strategies only when named.
        let replay = harness_replay::default_policies();
        assert_eq!(replay, ["none", "trim", "compact", "fold"]);
        let long = help_with(&reg, &["foldbench", "replay", "--help"]);
        assert!(
            long.contains("Policy to replay under (default: none, trim, compact, fold):"),
            "{long}"
        );
        let short = help_with(&reg, &["foldbench", "replay", "-h"]);
        assert!(
            short.contains("else none, trim, compact and fold; fold+strategies only when named"),
            "{short}"
        );
    }
}
