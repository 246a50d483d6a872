//! # harness-core: foldbench's pure domain
//!
//! Everything here is deterministic and does no IO — no files, no clock, no network, no
//! processes. Reading input files is `harness-config`, drawing output is `harness-report`, and
//! the runner crate (`harness-runner`) is the shell that does the IO.
//!
//! ```
//! use harness_core::Message;
//! use harness_core::{Purpose, Request};
//!
//! // A message carries its o200k token count, computed once; a request sums the stored counts.
//! let user = Message::user(1, "find the port in src/app.py", None);
//! let request = Request::new("You are a coding agent.".into(), Vec::new().into(), 7, vec![user.clone()], Purpose::Turn);
//! assert_eq!(request.tokens, 7 + u64::from(user.tokens));
//! ```
//!
//! The crate's surface is chosen: the public modules below are its features, each a namespace
//! with private insides; the plain types every feature shares are re-exported here from private
//! modules (`harness_core::Message`, not a module path), so nothing else is reachable.
//!
//! Shared types (re-exported at the root):
//! - [`Message`], [`ToolCall`], [`ToolSpec`]: messages carry their o200k token count
//!   ([`tokens`]); [`Request`] (system prompt + tools + visible messages) and [`Response`].
//! - [`Context`]: the live context a policy edits, and the prompt-cache simulation.
//! - [`Event`]: the plain-data events of the session loop; [`CellRecord`]: the versioned cell
//!   record; [`ARCHIVE_DIR`] and [`COMPACTION_PROMPT`]: what the live loop and the replay share.
//! - [`chain`] and [`one_line`]: an error and its causes, one to a line or joined on one line;
//!   [`did_you_mean`]: suggestions for names; [`printable()`]: text from outside (servers,
//!   transcripts, tools) escaped and cut before it is printed on a terminal; [`sha256_hex`]:
//!   hex digests; [`Rng`]: the seeded random numbers of the sim.
//!
//! Feature modules:
//! - [`policy`]: the [`policy::Policy`] trait; policies return decisions, the runner acts.
//! - [`driver`]: the one place a policy's answers are interpreted, for every mode that runs a
//!   policy.
//! - [`fold`]: the card, `fold_unit` legality, the archive text and the fold result.
//! - [`spec`]: the types a task spec is read into; [`tools`]: the workspace tools, each
//!   described once (name, schema, arguments, whether it only reads, its path, the sim's use).
//! - [`metrics`] computes a cell's numbers from its events; [`regression`] says which metrics
//!   `compare` judges and how much worse each may get.
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
//! - [`tokens`]: o200k token counts, each long text counted once per process.

// A type that a public item hands out can be named from outside: the surface is chosen.
#![warn(unnameable_types)]

pub mod behaviour;
pub(crate) mod context;
pub use context::{cached_prefix_tokens, call_path, normalize_path, Context, TurnInfo};
pub(crate) mod digest;
pub use digest::{hex, sha256_hex};
pub mod driver;
pub(crate) mod error_chain;
pub use error_chain::chain;
pub(crate) mod events;
pub use events::{Event, FactSeen, NeedWatch, RequestRecord, ToolCallRecord};
pub mod fold;
pub mod judge;
pub(crate) mod message;
pub use message::{Message, MessageKind, Role, ToolCall, ToolSpec};
pub mod metrics;
pub mod policy;
pub mod prices;
pub(crate) mod printable;
pub use printable::{binary_note, printable};
pub(crate) mod record;
pub use record::{
    cell_id, record_metrics, AgentRun, CellRecord, CheckResult, RecordMetric, Status,
    RECORD_VERSION,
};
pub mod regression;
pub(crate) mod request;
pub use request::{Purpose, Request, Response, Usage, MAX_PLAUSIBLE_TOKENS};
pub(crate) mod rng;
pub use rng::Rng;
pub(crate) mod session;
pub use session::{Archived, ARCHIVE_DIR, COMPACTION_PROMPT};
pub mod sim;
pub mod spec;
pub(crate) mod suggest;
pub use suggest::{closest, did_you_mean};
pub mod text_agent;
pub mod tokens;
pub mod tools;
pub mod upstream;

pub use error_chain::one_line;
