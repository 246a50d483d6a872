//! # harness-report: foldbench's output formats
//!
//! Every exporter is a pure function of records: cell records (or aggregates)
//! in, a `String` out. The runner decides where the bytes go.
//!
//! ```
//! use harness_report::render::Table;
//!
//! let t = Table { headers: vec!["arm".into(), "success".into()], rows: vec![vec!["fold".into(), "3/3".into()]] };
//! assert!(t.to_markdown().contains("| fold | 3/3 |"));
//! ```
//!
//! - [`render`]: tables (terminal, markdown, CSV) and the run summary; [`markdown`]: a run's
//!   Markdown report.
//! - [`compare`]: two runs' cells paired by id, sign test, bootstrap interval, regression
//!   thresholds; [`verdict`]: each arm against a baseline with paired intervals.
//! - [`junit`] and [`svg`]: exporters of records; [`html`]: one self-contained page.
//! - [`headline`]: the answer a report opens with, one line per arm; [`frontier`]: the cost–loss
//!   frontier it marks.
//! - [`fmt`]: the one formatter of ratios, tokens, money and shares.
//! - [`view`]: the named views of the terminal tables and their fit to a width. (The judge's
//!   tables are the runner's `judge` module's.)

// A type that a public item hands out can be named from outside: the surface is chosen.
#![warn(unnameable_types)]

pub mod compare;
pub mod fmt;
pub mod frontier;
pub mod headline;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod render;
pub mod svg;
#[cfg(test)]
mod testing;
pub mod verdict;
pub mod view;
