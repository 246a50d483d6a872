//! The policy driver: the one place a policy's answers are interpreted.
//!
//! Every mode that runs a policy — the live cell loop, the replay engine, the proxy's
//! conversation and the judgement dataset's replay — is a *host* of a [`Driver`]. The driver owns
//! the visible context and the policy and asks the policy its questions; the host owns the world
//! (a model, a workspace, a recording) and carries out the effects the driver hands it:
//!
//! - [`Driver::start_turn`]: the turn's card, if any (the host attaches it to the prompt and
//!   pushes the prompt with [`Driver::push`]).
//! - [`Driver::next_request`]: a [`Next::Send`] (the messages of the request and what the policy
//!   did to build them) or a [`Next::Summarise`] (ask for a summary of these messages, then hand
//!   it to [`Driver::compacted`] and ask again). A request compacts at most once: a second
//!   compaction is answered with the context as it is, said in the request's action.
//! - [`Driver::tool`]: the reply to a call of one of the policy's own tools, with the strategy it
//!   entered, if any.
//! - [`Driver::end_turn`]: the splices of the turn, each archived in memory
//!   (`crate::session::archive_splice`); the host writes the archive and then applies the splice
//!   with [`Driver::apply_splice`], which gives the [`Folded`] result (or why the range is gone).
//!
//! No host matches on [`crate::policy::Plan`] or [`crate::policy::SpliceKind`]; a new kind of
//! decision is taught here once (`tests/architecture.rs` keeps it so). The driver does no IO.

use std::sync::Arc;

use crate::context::{rewritten_tokens, Context};
use crate::events::Event;
use crate::message::{Message, ToolCall};
use crate::policy::{
    ArchiveRef, CardOffer, Offload, Plan, Policy, Splice, SpliceKind, ToolOutcome, ToolReply,
};
use crate::session::{archive_splice, Archived, COMPACTION_PROMPT};

/// The action recorded on a request sent without the compaction the policy asked for a second
/// time (the summary did not bring the context under the policy's threshold).
pub(crate) const COMPACTION_DID_NOT_FIT: &str = "compaction did not fit the window";

/// What the host does next for the request in progress.
#[derive(Debug, Clone)]
pub enum Next {
    /// Send these messages (after the host's fixed prefix).
    Send {
        /// The visible messages.
        messages: Vec<Arc<Message>>,
        /// What the policy did to build them, for the request record.
        action: Option<String>,
    },
    /// Ask the model for a summary first, then call [`Driver::compacted`] and
    /// [`Driver::next_request`] again.
    Summarise(Summary),
}

/// A compaction the policy asked for: the summary request's messages.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The policy's compaction input, the compaction prompt last.
    pub messages: Vec<Arc<Message>>,
    /// Whether this is a fold policy's emergency path.
    pub emergency: bool,
}

impl Summary {
    /// The request record's action: `compaction` or `emergency compaction`.
    pub fn action(&self) -> &'static str {
        if self.emergency {
            "emergency compaction"
        } else {
            "compaction"
        }
    }
}

/// The reply to a call of a policy's own tool.
#[derive(Debug, Clone)]
pub struct ToolAnswer {
    /// The policy's reply (its text, error flag, outcome and messages to append).
    pub reply: ToolReply,
    /// The mode of the strategy the call entered, if it entered one.
    pub entered: Option<String>,
    /// Whether the call was a `fold_unit` the policy rejected.
    pub rejected: bool,
}

/// A splice of the turn that ended, archived in memory: the host writes `archived.bytes` to
/// `archived.archive.path`, then calls [`Driver::apply_splice`].
#[derive(Debug, Clone)]
pub struct PendingSplice {
    /// The policy's splice.
    pub(crate) splice: Splice,
    /// Its archive (kind word, bytes, path and sha256).
    pub archived: Archived,
}

/// The end of a strategy, when a splice was one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StrategyEnd {
    /// The strategy's mode.
    pub(crate) mode: String,
    /// Whether the user ended it with `/back`.
    pub(crate) via_back: bool,
}

/// A splice applied: what the context now holds in place of the range.
#[derive(Debug, Clone)]
pub struct Folded {
    /// The turn that ended.
    pub turn: u32,
    /// First turn of the range.
    pub from: u32,
    /// Last turn of the range.
    pub to: u32,
    /// `fold` or `strategy`.
    pub(crate) kind: &'static str,
    /// The archive the result points at.
    pub archive: ArchiveRef,
    /// The message put in place of the range.
    pub message: Arc<Message>,
    /// Tokens of the range's messages.
    pub folded_tokens: u64,
    /// Tokens the prompt cache must write again (against the host's reference).
    pub rewritten_tokens: u64,
    /// The strategy it ended, if it was a strategy's exit.
    pub(crate) strategy: Option<StrategyEnd>,
}

impl Folded {
    /// The events of a live session: the fold, and the end of the strategy when it was one.
    pub fn events(&self) -> Vec<Event> {
        let result_tokens = u64::from(self.message.tokens);
        let mut out = vec![Event::Fold {
            turn: self.turn,
            from: self.from,
            to: self.to,
            archive: self.archive.path.clone(),
            sha256: self.archive.sha256.clone(),
            folded_tokens: self.folded_tokens,
            result_tokens,
            rewritten_tokens: self.rewritten_tokens,
            kind: self.kind.into(),
        }];
        if let Some(s) = &self.strategy {
            out.push(Event::StrategyEnded {
                turn: self.turn,
                mode: s.mode.clone(),
                via_back: s.via_back,
                report_tokens: result_tokens,
            });
        }
        out
    }
}

/// A splice whose range is no longer in the context (a compaction or an earlier splice took
/// it): the splice is not made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("turns {from}–{to} are no longer in the context")]
pub struct RangeGone {
    /// First turn of the range.
    pub(crate) from: u32,
    /// Last turn of the range.
    pub(crate) to: u32,
}

/// A compaction applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compacted {
    /// Tokens the prompt cache must write again (the summary request's messages against the
    /// context after).
    pub rewritten_tokens: u64,
}

/// Owns a policy and the visible context, and turns the policy's answers into effects.
pub struct Driver {
    policy: Box<dyn Policy>,
    ctx: Context,
    /// Tokens of the host's system prompt and tool list.
    prefix: u32,
    /// Whether the request in progress compacted already.
    compacted: bool,
}

impl Driver {
    /// A driver of `policy` with an empty context, under a prefix of `prefix` tokens.
    pub fn new(policy: Box<dyn Policy>, prefix: u32) -> Driver {
        Driver {
            policy,
            ctx: Context::default(),
            prefix,
            compacted: false,
        }
    }

    /// The policy (its name, tools, mode, window and failure).
    pub fn policy(&self) -> &dyn Policy {
        self.policy.as_ref()
    }

    /// Puts another policy in place (a proxy's new branch); the context stays.
    pub fn set_policy(&mut self, policy: Box<dyn Policy>) {
        self.policy = policy;
        self.compacted = false;
    }

    /// What the policy remembers that the context does not give back ([`Policy::saved_state`]).
    pub fn policy_state(&self) -> Option<serde_json::Value> {
        self.policy.saved_state()
    }

    /// Gives the policy back what [`Driver::policy_state`] saved.
    pub fn restore_policy_state(&mut self, state: &serde_json::Value) {
        self.policy.restore_state(state);
    }

    /// The visible context.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The visible context, for a host that rebuilds it (a proxy reads it from the agent's
    /// request).
    pub fn context_mut(&mut self) -> &mut Context {
        &mut self.ctx
    }

    /// The prefix's tokens.
    pub fn prefix(&self) -> u32 {
        self.prefix
    }

    /// Sets the prefix's tokens (a proxy's agent changed its system prompt or tools).
    pub fn set_prefix(&mut self, prefix: u32) {
        self.prefix = prefix;
    }

    /// Appends a message to the context.
    pub fn push(&mut self, m: Arc<Message>) {
        self.ctx.push(m);
    }

    /// Turn `t` starts: the card to attach to its prompt, if the policy offers one.
    pub fn start_turn(&mut self, t: u32) -> Option<CardOffer> {
        self.ctx.turn = t;
        self.policy.card(&self.ctx, self.prefix)
    }

    /// A new request begins (a host whose request may end without a send, as a proxy's does when
    /// the summary call fails): it may compact again.
    pub fn begin_request(&mut self) {
        self.compacted = false;
    }

    /// The next step of the request in progress.
    pub fn next_request(&mut self) -> Next {
        match self.policy.plan(&self.ctx, self.prefix) {
            Plan::Send { messages, action } => {
                self.compacted = false;
                Next::Send { messages, action }
            }
            Plan::Compact { .. } if self.compacted => {
                self.compacted = false;
                Next::Send {
                    messages: self.ctx.messages.clone(),
                    action: Some(COMPACTION_DID_NOT_FIT.into()),
                }
            }
            Plan::Compact { emergency } => {
                self.compacted = true;
                let mut messages = self.policy.compaction_input(&self.ctx);
                let prompt = match self.policy.compaction_instructions() {
                    Some(words) => format!("{COMPACTION_PROMPT}\n\n{words}"),
                    None => COMPACTION_PROMPT.to_string(),
                };
                messages.push(Message::user(self.ctx.turn, prompt, None));
                Next::Summarise(Summary {
                    messages,
                    emergency,
                })
            }
        }
    }

    /// The files the policy wants written before the next request (see [`Offload`]): the host
    /// writes each and reports it with [`Driver::offloaded`], then asks for the request.
    pub fn offloads(&mut self) -> Vec<Offload> {
        self.policy.offloads(&self.ctx)
    }

    /// The host wrote (`written`) or could not write an offloaded file.
    pub fn offloaded(&mut self, path: &str, written: bool) {
        self.policy.offloaded(path, written);
    }

    /// The summary came back (or a recorded one stands for it): the policy compacts the context
    /// with it. `reference` is what the prompt cache holds (the summary request's messages, or
    /// the context before), for the rewritten tokens.
    pub fn compacted(&mut self, reference: &[Arc<Message>], summary: Arc<Message>) -> Compacted {
        self.policy.apply_compaction(&mut self.ctx, summary);
        Compacted {
            rewritten_tokens: rewritten_tokens(reference, &self.ctx.messages),
        }
    }

    /// Whether `name` is one of the policy's own tools.
    pub fn owns_tool(&self, name: &str) -> bool {
        self.policy.owns_tool(name)
    }

    /// Answers a call of one of the policy's own tools; `None` when the policy has no such tool.
    pub fn tool(&mut self, call: &ToolCall) -> Option<ToolAnswer> {
        if !self.policy.owns_tool(&call.name) {
            return None;
        }
        Some(self.answer(call))
    }

    /// Answers a call as a policy tool whether or not the policy has it (the policy's own
    /// refusal when it does not): for a host that checked the tool itself (the proxy) or hands
    /// the policy calls it did not make (the judgement replay's oracle folds).
    pub fn answer(&mut self, call: &ToolCall) -> ToolAnswer {
        let reply = self.policy.handle_tool(&self.ctx, call);
        let entered = match &reply.outcome {
            ToolOutcome::StrategyEntered { mode, .. } => Some(mode.clone()),
            _ => None,
        };
        let rejected = matches!(reply.outcome, ToolOutcome::FoldRejected { .. });
        ToolAnswer {
            reply,
            entered,
            rejected,
        }
    }

    /// Why the policy refuses a workspace tool call in its current mode, if it does.
    pub fn refuses(&self, call: &ToolCall) -> Option<String> {
        self.policy.refuse_workspace_tool(call)
    }

    /// The turn in progress ends (`next_user`: the next prompt's text, if known): its splices,
    /// each archived in memory under `archive_dir`.
    pub fn end_turn(&mut self, archive_dir: &str, next_user: Option<&str>) -> Vec<PendingSplice> {
        self.policy
            .end_turn(&self.ctx, next_user)
            .into_iter()
            .map(|splice| {
                let archived = archive_splice(archive_dir, &splice);
                PendingSplice { splice, archived }
            })
            .collect()
    }

    /// Applies a splice whose archive exists. `reference` is the prompt cache's reference (the
    /// previous request's messages; the context before when there was none). `Err` when the
    /// range is no longer in the context (the context is left as it was).
    pub fn apply_splice(
        &mut self,
        p: &PendingSplice,
        reference: Option<&[Arc<Message>]>,
    ) -> Result<Folded, RangeGone> {
        let before = match reference {
            Some(r) => r.to_vec(),
            None => self.ctx.messages.clone(),
        };
        let folded_tokens: u64 = p.splice.messages.iter().map(|m| u64::from(m.tokens)).sum();
        let Some(message) = self
            .policy
            .apply_splice(&mut self.ctx, &p.splice, &p.archived.archive)
        else {
            return Err(RangeGone {
                from: p.splice.from,
                to: p.splice.to,
            });
        };
        let strategy = match &p.splice.kind {
            SpliceKind::StrategyExit { mode, via_back, .. } => Some(StrategyEnd {
                mode: mode.clone(),
                via_back: *via_back,
            }),
            SpliceKind::Fold => None,
        };
        Ok(Folded {
            turn: self.ctx.turn,
            from: p.splice.from,
            to: p.splice.to,
            kind: p.archived.kind,
            archive: p.archived.archive.clone(),
            message,
            folded_tokens,
            rewritten_tokens: rewritten_tokens(&before, &self.ctx.messages),
            strategy,
        })
    }

    /// Why the policy cannot go on, once it cannot.
    pub fn failed(&self) -> Option<String> {
        self.policy.failed()
    }
}

#[cfg(test)]
mod tests;
