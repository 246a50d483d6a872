//! # harness-runner: foldbench's IO shell
//!
//! Everything that touches the world lives here; the logic it drives is in `harness-core` and
//! `policies`.
//!
//! - [`workspace`]: a fresh temp git repo per cell (tempfile + git2), fingerprints and diffs.
//! - [`tools`]: the six workspace tools; [`sandbox`]: bubblewrap (or a plain `sh`) with an
//!   allow-listed environment, for every shell command of a cell; [`reap`]: ending a call's
//!   processes, `setsid` descendants included, where there is no PID namespace to end.
//! - [`model`]: the [`model::Model`] trait and the `sim` backend; [`backends`]: OpenAI-compatible,
//!   Anthropic, cassettes (record and replay).
//! - [`cell`]: the session loop of one cell, emitting events.
//! - [`run`]: the matrix, concurrency, resume and progress; [`results`]: the run directory.
//! - [`matrix`]: the matrix file, profiles, overrides, partitions and `list`; [`merge`]: shards
//!   into one run; [`report`]: reports from records (Markdown, CSV, JSON, JUnit, SVG);
//!   [`compare`]: two runs, paired, with regression thresholds.
//! - [`judge`]: `judge build` and `judge run` (boundary judgement over cards); [`judge_answer`]:
//!   how a model answers a card (`--answer tool|text`, `--grammar`).
//! - [`tasks`]: loading specs from disk; [`cli`]: the `foldbench` command line;
//!   [`replay_cmd`]: its `replay` and `analyze` commands over recorded sessions; [`history`]:
//!   the default places they read with no path (`~/.claude/projects`, `~/.codex/sessions`, ...)
//!   and the session filters.
pub mod backends;
pub mod cell;
pub mod cli;
pub mod compare;
pub mod history;
pub mod html;
pub mod judge;
pub mod judge_answer;
pub mod judge_fit;
pub mod matrix;
pub mod merge;
pub mod model;
pub mod progress;
pub mod reap;
pub mod replay_cmd;
pub mod report;
pub mod results;
pub mod run;
pub mod sandbox;
pub mod tasks;
pub mod tool_cache;
pub mod tools;
pub mod workspace;
