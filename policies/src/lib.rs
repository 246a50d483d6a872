//! # policies: what the host does to the visible context
//!
//! Each policy implements [`harness_core::policy::Policy`] against the core only: no IO, no
//! runtime. A policy that needs a model call (compaction) or a file write (an archive) returns a
//! decision and the runner carries it out.
//!
//! ```
//! use harness_core::Context;
//!
//! let spec = policies::parse_policy("trim:keep=1").unwrap();
//! let mut policy = policies::build(&spec, 200_000).unwrap();
//! // An empty context offers no card: nothing is behind the agent yet.
//! assert!(policy.card(&Context::default(), 0).is_none());
//! ```
//!
//! foldbench's own:
//!
//! - [`None`](NonePolicy): every message, as appended.
//! - `Trim`: old tool results dropped (or replaced by a placeholder).
//! - `Compact`: a model-written summary when the window fills.
//! - `Fold`: cards, `fold_unit`, archives and mechanical results; with
//!   `strategies`, the strategy modes as stack frames (`fold+strategies`).
//!
//! The peers', with their sources' parameter names, units and defaults (docs/policies.md says
//! what each reproduces and what it approximates): `clear_tool_uses` (Anthropic's context
//! editing), `claude_code`, `codex`, OpenHands' condensers (`observation_masking`,
//! `recent`, `amortized`, `llm_summarizing`), `swe_agent`, The Complexity Trap's
//! `hybrid`, and any sequence of them in a [`pipeline`].
//!
//! Every policy is reached through the [`registry`] (a [`Registry`] of one [`Entry`] per
//! policy): [`parse_policy`] (a text into a [`PolicySpec`], whose [`Params`] an entry's
//! constructor reads) and [`build`] use the [current](registry::current) one, so a program that
//! installs its own registry runs every command with its policies too. [`POLICIES`] and
//! [`PEERS`] name foldbench's own and the peers' in the order they are shown. [`sweep`] expands a text with lists or ranges into arms. Errors
//! are typed (`error`): [`PolicyError`], with a parameter's [`ParamError`] and a sweep's
//! [`SweepError`] inside. The placeholders two peers leave where they cleared a result,
//! [`CLAUDE_CODE_CLEARED`] and [`INSPECT_TOOL_RESULT_REMOVED`], are exported for tests that
//! count them.

// A type that a public item hands out can be named from outside: the surface is chosen.
#![warn(unnameable_types)]

mod aider;
mod amortized;
mod anthropic_compaction;
mod claude_code;
mod clear_thinking;
mod clear_tool_uses;
mod codex;
mod compact;
mod cursor;
mod error;
pub(crate) mod fold;
pub use fold::fold_tools;
mod gemini_cli;
mod hybrid;
mod inspect_ai;
mod llm_summarizing;
mod messages;
pub(crate) mod none;
pub use none::NonePolicy;
mod observation_masking;
mod openhands;
mod params;
pub mod pipeline;
mod recent;
pub mod registry;
mod swe_agent;
pub mod sweep;
mod trim;

use harness_core::policy::Policy;

pub use claude_code::CLEARED as CLAUDE_CODE_CLEARED;
pub use error::{ParamError, PolicyError, SweepError};
pub use inspect_ai::TOOL_RESULT_REMOVED as INSPECT_TOOL_RESULT_REMOVED;
pub use params::{Params, PolicySpec};
pub use registry::{Entry, Registry};

/// foldbench's own policies: the default arms, in the order reports show them.
pub const POLICIES: [&str; 5] = ["none", "trim", "compact", "fold", "fold+strategies"];

/// The peer policies (what people run today), in the order `foldbench policies` lists them.
pub const PEERS: [&str; 18] = [
    clear_tool_uses::NAME,
    clear_thinking::NAME,
    anthropic_compaction::NAME,
    claude_code::NAME,
    codex::NAME,
    gemini_cli::NAME,
    cursor::NAME,
    observation_masking::NAME,
    recent::NAME,
    amortized::NAME,
    llm_summarizing::NAME,
    llm_summarizing::PRESET,
    swe_agent::NAME,
    hybrid::NAME,
    inspect_ai::EDIT,
    inspect_ai::TRIM,
    inspect_ai::SUMMARY,
    aider::NAME,
];

/// The entries of [`Registry::builtin`]: foldbench's policies, the peers', the pipeline.
pub(crate) fn builtin_entries() -> Vec<Entry> {
    let mut out = vec![
        none::entry(),
        trim::entry(),
        compact::entry(),
        fold::entry(false),
        fold::entry(true),
        clear_tool_uses::entry(),
        clear_thinking::entry(),
        anthropic_compaction::entry(),
        claude_code::entry(),
        codex::entry(),
        gemini_cli::entry(),
        cursor::entry(),
        observation_masking::entry(),
        recent::entry(),
        amortized::entry(),
        llm_summarizing::entry(),
        llm_summarizing::preset_entry(),
        swe_agent::entry(),
        hybrid::entry(),
    ];
    out.extend(inspect_ai::entries());
    out.push(aider::entry());
    out.push(pipeline::entry());
    out
}

/// Parses a policy text through the current registry: `NAME[:k=v,...]` or `STEP|STEP|...`.
pub fn parse_policy(s: &str) -> Result<PolicySpec, PolicyError> {
    registry::current().parse(s)
}

/// Builds a policy from its spec through the current registry. `window` is the model's context
/// window, the default of the `window` parameter.
pub fn build(spec: &PolicySpec, window: u64) -> Result<Box<dyn Policy>, PolicyError> {
    registry::current().build(spec, window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_registry_holds_every_policy_once() {
        let reg = Registry::builtin();
        let names = reg.names();
        assert_eq!(
            names.len(),
            builtin_entries().len(),
            "no name refused: {names:?}"
        );
        for p in POLICIES.iter().chain(PEERS.iter()) {
            assert!(names.contains(p), "{p}");
        }
    }

    #[test]
    fn every_documented_default_builds_and_nothing_else_is_taken() {
        // The parameters a help text and docs/policies.md show are the ones a policy reads: each
        // with its documented default (when it is a literal) builds, and an undocumented one is
        // refused with the documented names.
        let reg = Registry::builtin();
        for e in reg.entries() {
            if e.is_raw() {
                continue;
            }
            for p in e.params() {
                // Computed defaults are in parentheses; a bracketed text would read as a sweep.
                if p.default.starts_with('(') || sweep::is_sweep(&p.default) {
                    continue;
                }
                let text = format!("{}:{}={}", e.name(), p.name, p.default);
                reg.check(&text)
                    .unwrap_or_else(|err| panic!("{text}: {err}"));
            }
            let err = reg
                .check(&format!("{}:no_such_param=1", e.name()))
                .unwrap_err()
                .to_string();
            for p in e.params() {
                assert!(err.contains(&p.name), "{}: {err}", e.name());
            }
        }
    }
}
