//! # harness-runner: foldbench's IO shell
//!
//! Everything that touches the world lives here; the logic it drives is in `harness-core` and
//! `policies`.
//!
//! ```no_run
//! use std::path::PathBuf;
//!
//! // Task specs from disk, validated completely (every problem with file:line:col).
//! let tasks = harness_runner::tasks::load_tasks(&[PathBuf::from("tasks")]).unwrap();
//! println!("{}", harness_runner::tasks::table(&tasks).to_terminal());
//! ```
//!
//! The library is in folder modules, each a job with an overview in its `mod.rs`, and a few
//! top-level modules beside them that drive them:
//!
//! - [`execution`]: where a cell's commands run. A fresh temp git repo per cell
//!   ([`execution::Workspace`], made from a task's prepared template), the
//!   [`execution::Sandbox`] every shell command runs in, [`execution::end_all_calls`] for the
//!   processes a call leaves, and the run's [`execution::ToolCache`] keyed by snapshots.
//! - [`tools`]: the six workspace tools an agent calls, on top of `execution`.
//! - [`backends`]: the [`backends::Model`] trait and the `sim` backend; OpenAI-compatible,
//!   Anthropic, cassettes (record and replay).
//! - [`judge`]: the judge's IO and rendering: gathering boundary-judgement items, asking models
//!   (`--answer tool|text`, `--grammar`, `--max-context`), the tables and the page.
//! - [`html`]: the pages, what the HTML pages need from a run's files, and writing a page.
//! - [`sessions`]: recorded sessions from disk, the replay's IO side: the default places of your
//!   own history (`~/.claude/projects`, `~/.codex/sessions`, ...), the session filters, the
//!   import with its warnings, the unit labels.
//!
//! Beside them: [`cell`], the session loop of one cell, emitting events; [`exec_policy`]:
//! `exec:COMMAND`, a policy as a process speaking JSON lines (docs/policy-protocol.md);
//! `agent_cell`: a cell a real agent drives ([`agents`]) through a [`proxy`] with the cell's
//! policy (`run --agent`); [`run`]: the matrix's cells, concurrency, resume and progress
//! ([`progress`]); [`RunDir`]: the run directory; [`merge()`]: shards into one run; [`atomic`]:
//! every file written whole or not at all; [`tasks`]: loading specs from disk (and the suite
//! embedded in the binary), a task named by its name; [`SimServer`]: the offline upstream
//! (`serve --sim`); [`FileError`]: the one error of a file or folder the runner could not use.
//!
//! What a command builds its run from, as plain values: [`plan`], the matrix (the matrix file,
//! its profile layered, the command line over it, the cells); [`settings`], a run's settings
//! into its [`run::RunConfig`] (the defaults, the sandbox, the agent and its key read through a
//! lookup the caller passes); [`arms`], policy texts into arms.
//!
//! The command line is the `foldbench` binary's (`harness/cli`): it parses flags with clap,
//! calls this library and maps errors to exit codes; nothing here knows about clap.

// A type that a public item hands out can be named from outside: the surface is chosen.
#![warn(unnameable_types)]

pub(crate) mod agent_cell;
pub mod agents;
pub mod arms;
pub mod atomic;
pub mod backends;
pub mod cell;
mod cell_checks;
pub mod exec_policy;
pub mod execution;
pub(crate) mod file_error;
pub use file_error::FileError;
pub mod html;
pub mod judge;
pub(crate) mod merge;
pub use merge::{merge, MergeError, Merged};
pub mod plan;
pub mod progress;
pub mod proxy;
pub(crate) mod results;
pub use results::{
    cell_folder, read_cell_files, read_records, write_lines, ReadError, RunDir, RunDirError,
    CELLS_FILE, REQUESTS_FILE,
};
pub mod run;
pub mod sessions;
pub mod settings;
pub(crate) mod sim_server;
pub use sim_server::{SimServer, SimServerError};
pub mod tasks;
pub mod tools;
