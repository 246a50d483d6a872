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
//! - [`workspace`]: a fresh temp git repo per cell (tempfile + git2), fingerprints and diffs
//!   (which never read the workspace's own `.git`).
//! - [`tools`]: the six workspace tools; [`sandbox`]: bubblewrap (or a plain `sh`) with an
//!   allow-listed environment, for every shell command of a cell; [`reap`]: ending a call's
//!   processes, `setsid` descendants included, where there is no PID namespace to end;
//!   [`tool_cache`]: the run's cache of shell results with their file changes, keyed by
//!   [`snapshot`]s of the workspace.
//! - [`model`]: the [`model::Model`] trait and the `sim` backend; [`backends`]: OpenAI-compatible,
//!   Anthropic, cassettes (record and replay).
//! - [`cell`]: the session loop of one cell, emitting events; [`exec_policy`]: `exec:COMMAND`,
//!   a policy as a process speaking JSON lines (docs/policy-protocol.md); [`agent_cell`]: a
//!   cell a real agent drives ([`agents`]) through a [`proxy`] with the cell's policy
//!   (`run --agent`).
//! - [`run`]: the matrix's cells, concurrency, resume and progress ([`progress`]);
//!   [`results`]: the run directory; [`merge`]: shards into one run; [`atomic`]: every file
//!   written whole or not at all.
//! - [`judge`]: gathering boundary-judgement items and asking models; [`judge_answer`]: how a
//!   model answers a card (`--answer tool|text`, `--grammar`).
//! - [`tasks`]: loading specs from disk (and the suite embedded in the binary); [`history`]: the
//!   default places of recorded sessions (`~/.claude/projects`, `~/.codex/sessions`, ...) and
//!   the session filters; [`html`]: what the HTML pages need from a run's files.
//!
//! The command line is the `foldbench` binary's (`harness/cli`): it parses flags with clap,
//! calls this library and maps errors to exit codes; nothing here knows about clap.
pub mod agent_cell;
pub mod agents;
pub mod atomic;
pub mod backends;
pub mod beneath;
pub mod cell;
mod cell_checks;
pub mod exec_policy;
mod git;
pub mod history;
pub mod html;
pub mod judge;
pub mod judge_answer;
pub mod judge_fit;
pub mod merge;
pub mod model;
pub mod progress;
pub mod proxy;
pub mod reap;
pub mod results;
pub mod run;
pub mod sandbox;
pub mod sim_server;
pub mod snapshot;
pub mod tasks;
mod template;
pub mod tool_cache;
pub mod tools;
pub mod workspace;
