//! The [`Policy`] trait: what the host does to the visible context.
//!
//! A policy never does IO. It answers the session loop's questions with plain values; when it
//! needs a model call (a compaction summary) or a file write (an archive), it returns a decision
//! ([`Plan::Compact`], [`Splice`]) and the runner carries it out, then reports back
//! ([`Policy::apply_compaction`], [`Policy::apply_splice`]).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::context::Context;
use crate::message::{Message, ToolCall, ToolSpec};

/// What to do before the next request.
#[derive(Debug, Clone)]
pub enum Plan {
    /// Send these messages.
    Send {
        /// The visible messages.
        messages: Vec<Arc<Message>>,
        /// What the policy did to build them (for the request record), e.g. `trimmed 12 results`.
        action: Option<String>,
    },
    /// Compact first: the runner asks the model for a summary of the context and then calls
    /// [`Policy::apply_compaction`].
    Compact {
        /// Whether this is a fold policy's emergency path.
        emergency: bool,
    },
}

impl Plan {
    /// The messages a [`Plan::Send`] sends; `None` for a compaction. For a test or a tool that
    /// looks at what a policy chose: acting on a plan is the driver's alone.
    pub fn sent(&self) -> Option<&[Arc<Message>]> {
        match self {
            Plan::Send { messages, .. } => Some(messages),
            Plan::Compact { .. } => None,
        }
    }
}

/// A file a policy keeps for the model to read later (a tool output it cut, the history before
/// a summary): the host writes it under its archive folder and says so
/// ([`Policy::offloaded`]) before the policy's next plan, so a request never names a file that
/// was not written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offload {
    /// Workspace-relative path (under the host's archive folder).
    pub path: String,
    /// The file's bytes.
    pub bytes: Vec<u8>,
}

/// A card attached to a user message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardOffer {
    /// The rendered card text.
    pub text: String,
    /// The turns it offers.
    pub turns: Vec<u32>,
}

/// The reply to a call of one of the policy's own tools.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReply {
    /// The result text the model reads.
    pub text: String,
    /// Whether the call was refused.
    pub is_error: bool,
    /// What happened, for the event stream.
    pub outcome: ToolOutcome,
    /// Messages the runner appends after the tool result (a strategy's rules).
    pub append: Vec<Arc<Message>>,
}

impl ToolReply {
    /// A refusal: an error result the model reads.
    pub fn refused(reason: String) -> ToolReply {
        ToolReply {
            text: reason.clone(),
            is_error: true,
            outcome: ToolOutcome::Refused { reason },
            append: Vec::new(),
        }
    }
}

/// What a policy tool call did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ToolOutcome {
    /// A legal `fold_unit`; the splice happens after the turn ends.
    FoldAccepted {
        /// First turn.
        from: u32,
        /// Last turn.
        to: u32,
    },
    /// An illegal `fold_unit`.
    FoldRejected {
        /// The rule it broke.
        reason: String,
    },
    /// A strategy was entered.
    StrategyEntered {
        /// Mode.
        mode: String,
        /// Goal.
        goal: String,
    },
    /// The report slot was replaced.
    StrategyReported {
        /// Tokens of the new report.
        tokens: u32,
    },
    /// The strategy ends after this turn.
    StrategyYielded {
        /// Why.
        reason: String,
    },
    /// Any other refusal (bad arguments, a tool this policy does not have, …).
    Refused {
        /// Why.
        reason: String,
    },
}

/// Why a splice is made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SpliceKind {
    /// A fold of turns `from..=to`.
    Fold,
    /// The end of a strategy: the branch is replaced by its latest report.
    StrategyExit {
        /// Mode.
        mode: String,
        /// The latest report, exactly as written.
        report: String,
        /// Whether the user ended it with `/back`.
        via_back: bool,
    },
}

impl SpliceKind {
    /// The kind word: `fold` for a fold, `strategy` for the end of a strategy (part of an
    /// archive's file name and of the fold event).
    pub(crate) fn word(&self) -> &'static str {
        match self {
            SpliceKind::Fold => "fold",
            SpliceKind::StrategyExit { .. } => "strategy",
        }
    }

    /// Whether it is a fold (not the end of a strategy).
    pub fn is_fold(&self) -> bool {
        matches!(self, SpliceKind::Fold)
    }
}

/// A range the runner must archive, then hand back to [`Policy::apply_splice`].
#[derive(Debug, Clone)]
pub struct Splice {
    /// First turn of the range.
    pub from: u32,
    /// Last turn of the range.
    pub to: u32,
    /// The original messages of the range, to be archived.
    pub messages: Vec<Arc<Message>>,
    /// Why.
    pub kind: SpliceKind,
}

/// An archive that has been written and flushed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveRef {
    /// Workspace-relative path.
    pub path: String,
    /// Hex sha256 of the file's bytes.
    pub sha256: String,
}

/// A strategy mode the policy is in, for the event stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mode {
    /// Mode name.
    pub name: String,
    /// Turn it was entered in.
    pub since_turn: u32,
}

/// A context policy (docs/design.md §7).
pub trait Policy: Send {
    /// The arm-facing name with parameters, e.g. `trim:keep=1`.
    fn name(&self) -> String;

    /// Tools the policy adds to the workspace tools (the same for the whole session).
    fn tools(&self) -> Vec<ToolSpec> {
        Vec::new()
    }

    /// Called when a user turn starts, before its message is appended: a card to attach.
    fn card(&mut self, _ctx: &Context, _prefix_tokens: u32) -> Option<CardOffer> {
        None
    }

    /// Decides the next request.
    fn plan(&mut self, ctx: &Context, prefix_tokens: u32) -> Plan;

    /// The messages the summary of a [`Plan::Compact`] is written from; the runner appends its
    /// compaction prompt. The whole context, unless the policy summarises only a part of it
    /// (OpenHands' summarising condenser: the head it keeps and the events it forgets).
    fn compaction_input(&mut self, ctx: &Context) -> Vec<Arc<Message>> {
        ctx.messages.clone()
    }

    /// Words the policy's summary request adds after the compaction prompt (a peer's own
    /// summarisation instructions), if any.
    fn compaction_instructions(&self) -> Option<String> {
        None
    }

    /// Files the policy wants written before its next plan (each asked once): a host writes
    /// each and reports it with [`Policy::offloaded`].
    fn offloads(&mut self, _ctx: &Context) -> Vec<Offload> {
        Vec::new()
    }

    /// The host wrote (`written`) or could not write an offloaded file: a policy points the
    /// model only at files written.
    fn offloaded(&mut self, _path: &str, _written: bool) {}

    /// Replaces the context by a summary (after [`Plan::Compact`]).
    fn apply_compaction(&mut self, ctx: &mut Context, summary: Arc<Message>) {
        ctx.compact(summary);
    }

    /// Whether the policy handles this tool.
    fn owns_tool(&self, _name: &str) -> bool {
        false
    }

    /// Handles a call of one of its own tools.
    fn handle_tool(&mut self, _ctx: &Context, call: &ToolCall) -> ToolReply {
        ToolReply::refused(format!("error: unknown tool `{}`", call.name))
    }

    /// Refuses a workspace tool call the current mode forbids (intent mode is read-only).
    fn refuse_workspace_tool(&self, _call: &ToolCall) -> Option<String> {
        None
    }

    /// Called when a turn ends: the ranges to archive and splice.
    fn end_turn(&mut self, _ctx: &Context, _next_user: Option<&str>) -> Vec<Splice> {
        Vec::new()
    }

    /// Replaces a spliced range by its result, once its archive exists. Returns the message it
    /// put in place, or `None` when the range is no longer in the context.
    fn apply_splice(
        &mut self,
        _ctx: &mut Context,
        _splice: &Splice,
        _archive: &ArchiveRef,
    ) -> Option<Arc<Message>> {
        None
    }

    /// The strategy mode the policy is in, if any.
    fn mode(&self) -> Option<Mode> {
        None
    }

    /// The model's window this policy assumes when it was set per arm (`window=…`).
    fn window(&self) -> Option<u64> {
        None
    }

    /// What the policy remembers from request to request that the context does not give back
    /// (the folds it makes when the turn ends, the turn of its last card, the results it
    /// cleared for good), for a host that takes a conversation out of memory and brings it back
    /// later (the proxy): it gives it back with [`Policy::restore_state`]. Message ids do not
    /// outlive the process: name a message by its [`Message::fingerprint`]. `None`, the
    /// default: nothing (a memo rebuilt from the context is not state).
    fn saved_state(&self) -> Option<serde_json::Value> {
        None
    }

    /// Takes back what [`Policy::saved_state`] gave, in a policy just built; a value it cannot
    /// read is ignored (the policy starts again).
    fn restore_state(&mut self, _state: &serde_json::Value) {}

    /// Why the policy cannot go on, once it cannot (a policy process that crashed, hung or
    /// answered out of protocol): the session loop checks it after its calls and ends the
    /// session with this reason. A policy that cannot fail keeps the default, `None`.
    fn failed(&self) -> Option<String> {
        None
    }
}
