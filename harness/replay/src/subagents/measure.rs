//! Context saved and money of a parent's delegations, measured by replaying it.
//!
//! Three replays of the parent, by the engine ([`crate::Replayer`]), with its simulated prompt
//! cache (each request's prefix that matches the previous request's is read at the cache-read
//! rate, the rest written at the cache-write rate) and each request at its model's price:
//!
//! - **delegated**: the parent as recorded (briefs in its calls, receipts as results);
//! - **inline**: every child's work spliced in at its call ([`Splice::Inline`]): the work is
//!   appended to the parent's context, so later requests read it from the cache, and the
//!   child's requests are the parent's, at the parent's model's price;
//! - **base**: neither brief nor work nor receipt ([`Splice::Base`]), under `none` only.
//!
//! **Context saved** (the table's "room saved") under a policy: the input tokens of the
//! parent's recorded requests in the inline replay minus the delegated one's (requests before the first call count the same, so
//! this is what the later requests would have carried: the work, against the brief and the
//! receipt they carried). Under `fold` the inline work is itself folded at the turn ends.
//!
//! **Money** under `none`: delegated = the children replayed under `none` at their own models'
//! prices + (delegated − base), the brief and the receipt in the parent's requests (writing the
//! brief is output of the calling request; reading it and the receipt, input of the later ones); inline =
//! inline − base, the same work at the parent's model's price. Their ratio, per session and
//! over sessions (Σ×, with a 95% bootstrap interval over sessions:
//! [`harness_report::verdict`]).

use harness_import::ImportedSession;
use harness_report::verdict::{verdict, Pair, Verdict};
use serde::Serialize;

use super::{inline_session, Child, SessionSubagents, Splice};
use crate::engine::{parallel_map, PolicyReplay, ReplayConfig, ReplayError, Replayer};
use crate::labels::Labels;

/// The policies the context saved is given under.
pub const SAVING_POLICIES: [&str; 2] = ["none", "fold"];

/// The context a parent's delegations saved under one policy: the input tokens they kept
/// out of its requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Saving {
    /// The policy.
    pub(crate) policy: String,
    /// Input tokens of the parent's recorded requests, the work inline.
    pub(crate) inline_tokens: u64,
    /// Input tokens of the same requests as recorded (brief and receipt).
    pub delegated_tokens: u64,
}

impl Saving {
    /// Inline minus delegated: the tokens delegating kept out of the parent's requests
    /// (negative when the briefs and receipts outweighed the work).
    pub fn saved(&self) -> i64 {
        self.inline_tokens as i64 - self.delegated_tokens as i64
    }
}

/// What a parent's delegations cost against the same work inline (under `none`, dollars and
/// input tokens).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Money {
    /// The children replayed under `none`, each request at its own model's price.
    pub children_cost: f64,
    /// Their input tokens.
    pub(crate) children_tokens: u64,
    /// The briefs and receipts in the parent's requests: delegated minus base.
    pub carried_cost: f64,
    /// Their input tokens in the parent's requests.
    pub(crate) carried_tokens: i64,
    /// The work inline: inline minus base, at the parent's model's price.
    pub inline_cost: f64,
    /// Its input tokens.
    pub(crate) inline_tokens: i64,
}

impl Money {
    /// The cost of delegating: the children and what the parent carried.
    pub(crate) fn delegated_cost(&self) -> f64 {
        self.children_cost + self.carried_cost
    }

    /// The input tokens of delegating.
    pub(crate) fn delegated_tokens(&self) -> i64 {
        self.children_tokens as i64 + self.carried_tokens
    }

    /// Delegated over inline cost (∞ when inline costs nothing).
    pub fn ratio(&self) -> f64 {
        if self.inline_cost > 0.0 {
            self.delegated_cost() / self.inline_cost
        } else {
            f64::INFINITY
        }
    }
}

/// The replayed figures of one parent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measured {
    /// Context saved, under each of [`SAVING_POLICIES`] (`room` in the JSON).
    #[serde(rename = "room")]
    pub(crate) saving: Vec<Saving>,
    /// Money, under `none`.
    pub money: Money,
    /// The requests the inline replay added (the children's, as the parent's).
    pub inline_requests: usize,
}

impl Measured {
    /// The context saved under `policy`.
    pub fn saving(&self, policy: &str) -> Option<&Saving> {
        self.saving.iter().find(|r| r.policy == policy)
    }
}

/// Input tokens of the requests of `p` that replay recorded requests below `n`.
fn recorded_tokens(p: Option<&PolicyReplay>, n: usize) -> u64 {
    p.map_or(0, |p| {
        p.requests
            .iter()
            .filter(|r| r.request.is_some_and(|k| k < n))
            .map(|r| r.tokens)
            .sum()
    })
}

/// Fills in [`SessionSubagents::measured`] of each parent in `subs` (parents and children are
/// found in `sessions`), on up to `threads` threads. `config` gives the judge, the window and
/// the prices; its policies are not used (`SAVING_POLICIES` are).
pub fn measure(
    sessions: &[ImportedSession],
    subs: &mut [SessionSubagents],
    config: &ReplayConfig,
    labels: Option<&Labels>,
    threads: usize,
) -> Result<(), ReplayError> {
    let of = |names: &[&str]| -> Result<Replayer, ReplayError> {
        let policies = names
            .iter()
            .map(|p| {
                policies::parse_policy(p).map_err(|reason| ReplayError::Policy {
                    policy: p.to_string(),
                    reason: reason.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Replayer::new(ReplayConfig {
            policies,
            ..config.clone()
        })
    };
    let both = of(&SAVING_POLICIES)?;
    let none = of(&["none"])?;
    let measured = parallel_map(subs, threads, |sub| {
        let parent = sessions
            .iter()
            .find(|s| s.id == sub.session && s.source == sub.source)?;
        let pairs: Vec<(&Child, &ImportedSession)> = sub
            .children
            .iter()
            .filter_map(|c| {
                let s = sessions
                    .iter()
                    .find(|s| s.id == c.id && s.parent.as_deref() == Some(parent.id.as_str()))?;
                Some((c, s))
            })
            .collect();
        if pairs.is_empty() {
            return None;
        }
        Some(measure_one(parent, &pairs, &both, &none, labels))
    });
    for (sub, m) in subs.iter_mut().zip(measured) {
        sub.measured = m;
    }
    Ok(())
}

/// The three replays of one parent and its children's: sizes and costs only
/// ([`Replayer::replay_sizes`]: no hidden-reference analysis, which nothing here reads).
fn measure_one(
    parent: &ImportedSession,
    pairs: &[(&Child, &ImportedSession)],
    both: &Replayer,
    none: &Replayer,
    labels: Option<&Labels>,
) -> Measured {
    let n = parent.requests.len();
    let inline = inline_session(parent, pairs, Splice::Inline);
    let base = inline_session(parent, pairs, Splice::Base);
    let d = both.replay_sizes(parent, labels);
    let i = both.replay_sizes(&inline, labels);
    let b = none.replay_sizes(&base, labels);
    let saving = SAVING_POLICIES
        .iter()
        .map(|p| Saving {
            policy: p.to_string(),
            inline_tokens: recorded_tokens(i.policy(p), n),
            delegated_tokens: recorded_tokens(d.policy(p), n),
        })
        .collect();
    let cost = |p: Option<&PolicyReplay>| p.map_or(0.0, PolicyReplay::cost);
    let input = |p: Option<&PolicyReplay>| p.map_or(0, PolicyReplay::total_input) as i64;
    let (mut children_cost, mut children_tokens) = (0.0, 0);
    for (_, child) in pairs {
        let r = none.replay_sizes(child, None);
        children_cost += cost(r.policy("none"));
        children_tokens += input(r.policy("none")) as u64;
    }
    let money = Money {
        children_cost,
        children_tokens,
        carried_cost: cost(d.policy("none")) - cost(b.policy("none")),
        carried_tokens: input(d.policy("none")) - input(b.policy("none")),
        inline_cost: cost(i.policy("none")) - cost(b.policy("none")),
        inline_tokens: input(i.policy("none")) - input(b.policy("none")),
    };
    Measured {
        saving,
        money,
        inline_requests: inline.requests.len() - n,
    }
}

/// Delegated against inline over the measured parents: tokens and cost Σ× with their 95%
/// intervals over sessions (the arm is `delegated`, the baseline `inline`); `None` with none
/// measured.
pub fn corpus(subs: &[SessionSubagents]) -> Option<Verdict> {
    let pairs: Vec<Pair> = subs
        .iter()
        .filter_map(|s| s.measured.as_ref())
        .map(|m| Pair {
            base_tokens: m.money.inline_tokens as f64,
            arm_tokens: m.money.delegated_tokens() as f64,
            base_cost: m.money.inline_cost,
            arm_cost: m.money.delegated_cost(),
            base_success: true,
            arm_success: true,
        })
        .collect();
    (!pairs.is_empty()).then(|| verdict("delegated", "inline", &pairs))
}
