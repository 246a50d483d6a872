//! # harness-core: foldbench's pure core
//!
//! Everything here is deterministic and does no IO — no files, no clock, no network, no
//! processes. The runner crate (`harness-runner`) is the shell that does all of that.
//!
//! - [`message`]: [`message::Message`], [`message::ToolCall`], [`message::ToolSpec`]; messages
//!   carry their o200k token count ([`tokens`]).
//! - [`request`]: [`request::Request`] (system prompt + tools + visible messages) and
//!   [`request::Response`].
//! - [`context`]: the live [`context::Context`] a policy edits, and the prompt-cache simulation.
//! - [`policy`]: the [`policy::Policy`] trait; policies return decisions, the runner acts.
//! - [`fold`]: the card, `fold_unit` legality, the archive text and the fold result.
//! - [`spec`]: task specs, validated completely with file:line:col problems ([`yaml`]).
//! - [`events`]: the plain-data events of the session loop; [`metrics`] computes a cell's
//!   numbers from them; [`record`] is the versioned cell record; [`render`] draws tables.
//! - [`matrix`]: the matrix file (profiles, validated with file:line:col), cell ids, partitions;
//!   [`compare`] pairs two runs' cells (sign test, bootstrap, regression thresholds); [`junit`]
//!   and [`svg`] are exporters of records.
//! - [`prices`]: the built-in list prices of common Claude and OpenAI models, with overrides.
//! - [`sim`]: the simulated agent, deterministic for a seed.
//! - [`judge`]: the baseline judges (oracle, eager, lexical, never); [`judgement`]: the boundary
//!   judgement dataset, its gold labels, the scoring of answers and the tables; [`answer`]: the
//!   answer modes (tool calls or one strictly parsed line of text, with its GBNF grammar).
pub mod answer;
pub mod compare;
pub mod context;
pub mod digest;
pub mod events;
pub mod fold;
pub mod html;
pub mod judge;
pub mod judgement;
pub mod junit;
pub mod matrix;
pub mod message;
pub mod metrics;
pub mod policy;
pub mod prices;
pub mod record;
pub mod render;
pub mod request;
pub mod rng;
pub mod sim;
pub mod spec;
pub mod suggest;
pub mod svg;
pub mod tokens;
pub mod verdict;
pub mod yaml;
