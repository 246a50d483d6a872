//! # harness-core: foldbench's pure domain
//!
//! Everything here is deterministic and does no IO — no files, no clock, no network, no
//! processes. Reading input files is `harness-config`, drawing output is `harness-report`, and
//! the runner crate (`harness-runner`) is the shell that does the IO.
//!
//! ```
//! use harness_core::message::Message;
//! use harness_core::request::{Purpose, Request};
//!
//! // A message carries its o200k token count, computed once; a request sums the stored counts.
//! let user = Message::user(1, "find the port in src/app.py", None);
//! let request = Request::new("You are a coding agent.".into(), Vec::new().into(), 7, vec![user.clone()], Purpose::Turn);
//! assert_eq!(request.tokens, 7 + u64::from(user.tokens));
//! ```
//!
//! - [`message`]: [`message::Message`], [`message::ToolCall`], [`message::ToolSpec`]; messages
//!   carry their o200k token count ([`tokens`]).
//! - [`request`]: [`request::Request`] (system prompt + tools + visible messages) and
//!   [`request::Response`].
//! - [`context`]: the live [`context::Context`] a policy edits, and the prompt-cache simulation.
//! - [`policy`]: the [`policy::Policy`] trait; policies return decisions, the runner acts.
//! - [`fold`]: the card, `fold_unit` legality, the archive text and the fold result;
//!   [`session`]: what the live loop and the replay share (the archive folder, the compaction
//!   prompt, archiving a splice).
//! - [`spec`]: the types a task spec is read into; [`tools`]: the workspace tools, each
//!   described once (name, schema, arguments, whether it only reads, its path, the sim's use).
//! - [`events`]: the plain-data events of the session loop; [`metrics`] computes a cell's
//!   numbers from them; [`record`] is the versioned cell record; [`regression`] says which
//!   metrics `compare` judges and how much worse each may get.
//! - [`prices`]: the built-in list prices of common Claude and OpenAI models, with overrides.
//! - [`behaviour`]: the behaviour profile — what agents do after they lose context, measured on
//!   real sessions — that the sim and the replay follow.
//! - [`sim`]: the simulated agent, deterministic for a seed; [`upstream`]: the sim answering a
//!   real agent's requests in its own tool vocabulary (the offline upstream's pure part).
//! - [`judge`]: the judge's pure part — the baseline judges (oracle, eager, lexical, never), the
//!   boundary-judgement dataset, its gold labels and the scoring of answers, and the answer
//!   modes (tool calls or one strictly parsed line of text, with its GBNF grammar).
//! - [`text_agent`]: a text-based agent's command blocks and observations read as tool calls and
//!   results (one rule for the offline upstream and the proxy).
//! - [`error_chain`]: an error and its causes, one to a line or joined on one line
//!   ([`one_line`], for where an error's text is data).
//! - [`suggest`]: "did you mean" for names; [`printable`]: text from outside (servers,
//!   transcripts, tools) escaped and cut before it is printed on a terminal.
//! - [`driver`]: the one place a policy's answers are interpreted, for every mode that runs a
//!   policy; [`digest`]: hex digests; [`rng`]: the seeded random numbers of the sim.

// A type that a public item hands out can be named from outside: the surface is chosen.
#![warn(unnameable_types)]

pub mod behaviour;
pub mod context;
pub mod digest;
pub mod driver;
pub mod error_chain;
pub mod events;
pub mod fold;
pub mod judge;
pub mod message;
pub mod metrics;
pub mod policy;
pub mod prices;
pub mod printable;
pub mod record;
pub mod regression;
pub mod request;
pub mod rng;
pub mod session;
pub mod sim;
pub mod spec;
pub mod suggest;
pub mod text_agent;
pub mod tokens;
pub mod tools;
pub mod upstream;

pub use error_chain::one_line;
