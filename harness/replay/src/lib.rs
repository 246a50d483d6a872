//! # harness-replay: every policy over recorded sessions
//!
//! foldbench's answer to "what would each policy have done to *my* sessions?" (docs/design.md §11). It
//! takes sessions imported by `harness-import` and, with no model call:
//!
//! ```
//! use harness_core::Message;
//! use harness_replay::session_of_transcript;
//! use harness_replay::{ReplayConfig, Replayer};
//!
//! let messages = vec![
//!     Message::user(1, "where is the port set?", None),
//!     Message::assistant(1, "PORT = 8080 in src/app.py", Vec::new()),
//! ];
//! let session = session_of_transcript("demo", messages);
//! let replayer = Replayer::new(ReplayConfig::default()).unwrap();
//! let replay = replayer.replay(&session, None);
//! // `none` shows everything, so it hides nothing.
//! assert_eq!(replay.policy("none").unwrap().hidden.total(), 0);
//! ```
//!
//!
//! - the engine ([`Replayer`]) replays every recorded request under each policy: the request as
//!   the policy would have sent it, its o200k size, the simulated prompt cache (cached, written
//!   and rewritten tokens) and cost. The model's outputs are fixed, so re-runs are not measured.
//!   Fold points come from a judge (`points`: `lexical`, `labels`, `oracle`; labels from
//!   `labels`).
//! - [`hidden`]: hidden references (what a response used that a policy's request no longer
//!   shows, and where it could come back from) and the four mechanical probes.
//! - `analyze`: splits what each request read into work in progress, conclusions of finished
//!   work and steps of finished work (the essay's first measurement).
//! - [`session_truth`] checks the reconstruction against the usage the provider recorded.
//! - [`report`]: summaries and tables; [`caveat_notes`]: what the numbers do not say by themselves,
//!   stated beside them; [`headline`]: the verdict a replay opens with and its cost–loss frontier.
//! - [`losses`]: after real compactions — what a recorded agent did in the calls after it lost
//!   its context, against the base rate of windows with no loss — and the behaviour profile
//!   measured from it.
//! - [`subagents`]: each subagent paired with the parent's call that started it, what the
//!   delegation saved in the parent's context (under `none` and `fold`) and cost against the
//!   same work inline, and how much of it ran in parallel.
//! - [`session_of_transcript`]: a foldbench cell's own transcript as a recorded session.
//! - [`default_policies`]: the policies a replay runs, named or by default.
//! - [`replay_page`]: the page of `foldbench replay`.
//!
//! At the crate root: [`Replayer`] with its [`ReplayConfig`] and [`ReplayError`]; what it gives
//! back, a [`SessionReplay`] ([`SessionHeader`], a [`PolicyReplay`] per policy of
//! [`ReplayedRequest`]s); the fold points' judge [`JudgeKind`] and the unit [`Labels`] it reads;
//! [`analyze_session`] ([`SessionComposition`] of [`Composition`]s); [`session_truth`]
//! ([`SessionTruth`], [`ErrorStats`]).
//!
//! The crate is pure: no files, clock, network or processes (the runner's `replay` and
//! `analyze` commands read the files). [`Replayer::replay_all`] may use threads.
//!
//! Tokens are counted once: every imported message carries its count, and the replays of all
//! policies share the same `Arc<Message>`s.

// A type that a public item hands out can be named from outside: the surface is chosen.
#![warn(unnameable_types)]

mod analyze;
pub(crate) mod arms;
pub use arms::{default_policies, policy_texts};
pub(crate) mod caveats;
pub use caveats::{caveat_notes, LexicalAgreement};
pub(crate) mod engine;
pub use engine::{
    estimate_prefix, none_context, parallel_map, sum_tokens, CompactionEvent, FoldEvent, Prefix,
    PrefixSource, DEFAULT_WINDOW,
};
pub mod headline;
pub mod hidden;
mod labels;
pub mod losses;
pub(crate) mod page;
pub use page::replay_page;
mod points;
pub mod report;
pub mod subagents;
pub(crate) mod transcript;
pub use transcript::session_of_transcript;
pub(crate) mod truth;

pub use analyze::{analyze_session, Composition, SessionComposition};
pub use engine::{
    PolicyReplay, ReplayConfig, ReplayError, ReplayedRequest, Replayer, SessionHeader,
    SessionReplay,
};
pub use labels::Labels;
pub use points::JudgeKind;
pub use truth::{session_truth, ErrorStats, SessionTruth, TruthPoint};
