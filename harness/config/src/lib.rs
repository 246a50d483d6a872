//! # harness-config: foldbench's input files
//!
//! Task specs, the matrix file (`foldbench.yaml`) and the unit labels of recorded sessions, each
//! read from its text and validated completely: every problem comes back with file, line, column
//! and what to do. [`yaml`] is the one module that names `serde_yaml`. Pure: the caller reads the
//! files.
//!
//! ```
//! let text = "name: t\ndescription: d\nrepo: fixtures/t\nturns:\n  - user: \"hi\"\n    unit: a\n    script:\n      - say: \"hello\"\nchecks:\n  - answer_contains: { turn: 1, text: \"hello\" }\n";
//! let spec = harness_config::spec::load("t.yaml", text).unwrap();
//! assert_eq!(spec.turns.len(), 1);
//!
//! let problems = harness_config::spec::load("t.yaml", "name: t\nturns: 3\n").unwrap_err();
//! assert!(problems[0].to_string().starts_with("t.yaml:"));
//! ```
//!
//! - [`spec`]: task specs into [`harness_core::spec::TaskSpec`].
//! - [`matrix`]: the matrix file with layered profiles, cell expansion and partitions.
//! - [`parse_labels`]: unit labels of recorded sessions.
//! - [`yaml`]: parsing, the path-to-`line:col` locator and the [`yaml::Problem`] type.
//! - [`MatrixError`]: the error of a profile, seeds or a partition given outside a
//!   file (a file's problems are [`yaml::Problem`]s).

// A type that a public item hands out can be named from outside: the surface is chosen.
#![warn(unnameable_types)]

pub(crate) mod error;
pub use error::MatrixError;
pub(crate) mod labels;
pub use labels::parse_labels;
pub mod matrix;
pub mod spec;
pub mod yaml;
