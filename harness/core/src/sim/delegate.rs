//! The sim's delegations (`delegate:` steps): the `delegate` call and its child sim, the
//! receipt read back, and a delegated detour's steps run inline (on the stream of noise its
//! child would draw from).

use std::sync::Arc;

use serde_json::json;

use super::{substitute, Sim};
use crate::message::Role;
use crate::metrics::DELEGATE_TOOL;
use crate::request::{Request, Response};
use crate::rng::Rng;
use crate::spec::{Action, Delegation, Step, TaskSpec, TurnSpec};

impl Sim {
    /// The noise draws of a tool step: from the agent's own stream, or, for the step of a
    /// delegated detour run inline (its number in the turn), from the stream its child would
    /// have drawn from.
    pub(super) fn roll(&mut self, inline: Option<usize>) -> (f64, u64) {
        let rng = match inline {
            None => &mut self.rng,
            Some(k) => {
                let name = child_name(&self.spec.name, self.turn, k);
                let seed = self.cfg.seed;
                self.inline_rngs
                    .entry((self.turn, k))
                    .or_insert_with(|| Rng::for_name(seed, &name))
            }
        };
        (rng.next_f64(), rng.next_u64())
    }

    /// The `delegate` call of delegation `k` of the turn: the brief as the
    /// script writes it (lost facts replaced by their guesses), and a fresh child sim on the
    /// delegation's own script for the requests of the child's session.
    pub(super) fn delegate(
        &mut self,
        d: &Delegation,
        subs: &[(&str, &str)],
        k: Option<usize>,
    ) -> Response {
        let k = k.unwrap_or(1);
        let brief = substitute(&d.brief, subs);
        self.deviated |= brief != d.brief;
        let c = self.call(DELEGATE_TOOL, json!({ "brief": brief }));
        let spec = TaskSpec {
            name: child_name(&self.spec.name, self.turn, k),
            turns: vec![d.as_turn()],
            checks: Vec::new(),
            ..(*self.spec).clone()
        };
        let mut child = Sim::new(Arc::new(spec), self.cfg);
        child.id_prefix = format!("t{}-child{k}-sim-", self.turn);
        self.child = Some(Box::new(child));
        self.pending_receipt = Some((c.id.clone(), d.receipt().to_string()));
        Response::new("", vec![c], None)
    }

    /// Reads the receipt of the last `delegate` call once it has come back: one that is not
    /// the script's (the child guessed a fact or stopped) leaves the script.
    pub(super) fn read_receipt(&mut self, req: &Request) {
        let Some((id, want)) = self.pending_receipt.take() else {
            return;
        };
        let got = req
            .messages
            .iter()
            .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(id.as_str()));
        match got {
            Some(m) => self.deviated |= m.text != want,
            None => self.pending_receipt = Some((id, want)),
        }
    }
}

/// The name of the child task of delegation `k` (1-based) of turn `turn` of task `task`.
fn child_name(task: &str, turn: u32, k: usize) -> String {
    format!("{task}-turn-{turn}-child-{k}")
}

/// The steps of a turn as the agent follows them, each with the number (1-based in the turn)
/// of the delegation it belongs to: under an arm that offers `delegate` a delegation is one
/// step (the call); elsewhere its child steps run inline, its receipt a report.
pub(super) fn effective_script(ts: &TurnSpec, delegating: bool) -> Vec<(Step, Option<usize>)> {
    let mut out = Vec::new();
    let mut k = 0;
    for s in &ts.script {
        match &s.action {
            Action::Delegate(d) => {
                k += 1;
                if delegating {
                    out.push((s.clone(), Some(k)));
                } else {
                    out.extend(d.inline_steps().map(|x| (x, Some(k))));
                }
            }
            _ => out.push((s.clone(), None)),
        }
    }
    out
}
