//! Recorded sessions from disk: the IO side of `replay`, `analyze` and `judge build --from
//! history` (the replay itself is the pure `harness-replay` crate, which this library does not
//! depend on).
//!
//! - `history`: your own history — the folders Claude Code and Codex write their sessions to,
//!   read when a command is given no path — the filters that pick sessions out of them
//!   (`--since`, `--until`, `--project`, `--session`), and the price each model the sessions
//!   name is costed at.
//! - `behaviour`: the behaviour profile's file, read (every problem placed) and written.
//! - `load`: the sessions under the paths imported (files that cannot be, and lines skipped,
//!   said and counted) and filtered; the unit labels files read and parsed.
//!
//! The functions take plain values (paths, a [`history::Filter`]) and say what a command
//! should know on the way through a sink the caller passes (`progress::say` in the binary).
//! Their one error type is [`SessionsError`].

pub(crate) mod behaviour;
pub use behaviour::{read_or_shipped, write as write_behaviour, BehaviourError};
mod error;
pub(crate) mod history;
pub use history::{model_prices, price_notes, Filter, ModelPrice, Place};
pub(crate) mod load;
pub use load::{load_labels, load_sessions, LabelFile, Loaded};

pub use error::SessionsError;
