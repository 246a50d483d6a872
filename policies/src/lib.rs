//! # policies: what the host does to the visible context
//!
//! Each policy implements [`harness_core::policy::Policy`] against the core only: no IO, no
//! runtime. A policy that needs a model call (compaction) or a file write (an archive) returns a
//! decision and the runner carries it out.
//!
//! ```
//! use harness_core::context::Context;
//!
//! let spec = policies::parse_policy("trim:keep=1").unwrap();
//! let mut policy = policies::build(&spec, 200_000).unwrap();
//! // An empty context offers no card: nothing is behind the agent yet.
//! assert!(policy.card(&Context::default(), 0).is_none());
//! ```
//!
//! - [`None`](none::NonePolicy): every message, as appended.
//! - [`Trim`](trim::Trim): old tool results dropped (or replaced by a placeholder).
//! - [`Compact`](compact::Compact): a model-written summary when the window fills.
//! - [`Fold`](fold::Fold): cards, `fold_unit`, archives and mechanical results; with
//!   `strategies`, the strategy modes as stack frames (`fold+strategies`).
//!
//! [`build`] turns an arm's policy text (`trim:keep=1,mode=placeholder`) into a policy.

pub mod compact;
pub mod fold;
pub mod none;
pub mod params;
pub mod trim;

use harness_core::policy::Policy;

pub use params::{parse_policy, PolicySpec};

/// Names of the policies, in the order reports show them.
pub const POLICIES: [&str; 5] = ["none", "trim", "compact", "fold", "fold+strategies"];

/// Builds a policy from its spec. `window` is the model's context window, the default of the
/// `window` parameter.
pub fn build(spec: &PolicySpec, window: u64) -> Result<Box<dyn Policy>, String> {
    let mut p = spec.params();
    let policy: Box<dyn Policy> = match spec.name.as_str() {
        "none" => Box::new(none::NonePolicy::new(
            p.take_u64("window")?.unwrap_or(window),
        )),
        "trim" => Box::new(trim::Trim::from_params(&mut p, window)?),
        "compact" => Box::new(compact::Compact::from_params(&mut p, window)?),
        "fold" => Box::new(fold::Fold::from_params(&mut p, window, false)?),
        "fold+strategies" => Box::new(fold::Fold::from_params(&mut p, window, true)?),
        other => {
            return Err(format!(
                "unknown policy `{other}`{}; expected one of: {}",
                harness_core::suggest::did_you_mean(other, POLICIES),
                POLICIES.join(", ")
            ))
        }
    };
    p.finish(&spec.name)?;
    Ok(policy)
}
