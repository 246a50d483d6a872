//! # harness-runner: foldbench's IO shell
//!
//! Everything that touches the world lives here; the logic it drives is in `harness-core` and
//! `policies`.
//!
//! - [`workspace`]: a fresh temp git repo per cell (tempfile + git2), fingerprints and diffs.
//! - [`tools`]: the six workspace tools with the sandbox.
//! - [`model`]: the [`model::Model`] trait and the `sim` backend; [`backends`]: OpenAI-compatible,
//!   Anthropic, cassettes (record and replay).
//! - [`cell`]: the session loop of one cell, emitting events.
//! - [`run`]: the matrix, concurrency, resume and progress; [`results`]: the run directory.
//! - [`tasks`]: loading specs from disk; [`cli`]: the `foldbench` command line.
pub mod backends;
pub mod cell;
pub mod cli;
pub mod model;
pub mod results;
pub mod run;
pub mod tasks;
pub mod tools;
pub mod workspace;
