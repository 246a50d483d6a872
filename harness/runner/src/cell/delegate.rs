//! The `delegate` tool of a `+delegate` arm: a child session that sees only its brief.
//!
//! When the model calls `delegate {brief, model?}` the runner starts a fresh session: its own
//! system prompt ([`CHILD_SYSTEM_PROMPT`]), the six workspace tools (no `delegate`, no policy
//! tool), one user message — the brief — and an empty context managed by no policy. It runs in
//! the same workspace, sandbox, tool cache and limits as the parent, on the cell's model or on
//! the run's model the call names, until it answers without a tool call or reaches the step
//! limit. Its closing message is the receipt: the `delegate` call's result, the only thing
//! of the child the parent's context holds.
//!
//! Its requests are [`Purpose::Child`] requests marked `agent: child-N` (N counts the cell's
//! children), recorded under the parent's turn in progress and counted in the cell's tokens
//! per task and cost; its tool calls are marked the same and count as the parent's do (archive
//! reads, re-runs). The facts a scripted child needs are watched over its own session.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use harness_core::metrics::DELEGATE_TOOL;
use harness_core::Purpose;
use harness_core::{Event, NeedWatch, ToolCallRecord};
use harness_core::{Message, ToolCall, ToolSpec};
use serde_json::json;

use super::{CallOutcome, Loop, Run, SessionError};
use crate::backends::model::Model;
use crate::execution::workspace::Workspace;
use crate::tools;

/// The system prompt of a child session. It names no fact: the child knows what its brief
/// and its own tool results say.
pub const CHILD_SYSTEM_PROMPT: &str = "You are a coding agent working in a git repository on a task another agent handed to \
you. Its brief, the user message, is all you know of its work. Use the tools to read, search, edit and test the code; \
paths are relative to the repository root. When the task is done, answer without calling a tool with a receipt: what \
you found and what you changed, with every fact the other agent will need, since it reads only your receipt.";

/// The `delegate` tool's schema, offered beside the workspace tools under a `+delegate` arm.
pub(crate) fn tool_spec() -> ToolSpec {
    ToolSpec {
        name: DELEGATE_TOOL.to_string(),
        description: "Hand a self-contained piece of work to a fresh agent with the same tools in the same \
repository. It sees only the brief (not this conversation), so put every fact it needs in it. Its final message, \
the receipt, is this call's result; its work stays out of your context."
            .to_string(),
        parameters: json!({
            "type": "object",
            "properties": {
                "brief": {"type": "string", "description": "The whole task for the child, with every fact it needs."},
                "model": {"type": "string", "description": "A model of this run to run the child on (default: yours)."}
            },
            "required": ["brief"]
        }),
    }
}

/// The answer to a `delegate` call, boxed: the child's session runs the loop that made the
/// call, so its future has a name (and is `Send`) only behind a box.
type Answer<'f> = Pin<Box<dyn Future<Output = Result<CallOutcome, ChildError>> + Send + 'f>>;

/// Why a child session did not run to its receipt: the session's own error (the model did not
/// answer, the cell's time limit, a broken task), met while the child ran. It ends the cell.
#[derive(Debug, thiserror::Error)]
#[error("{agent} (a delegated session)")]
pub struct ChildError {
    /// The child (`child-1`).
    agent: String,
    /// What went wrong.
    #[source]
    error: Box<SessionError>,
}

/// Answers the parent's `delegate` call `call` (of request `this`, turn `t`): runs the child
/// session to its receipt. A call without a brief, or naming a model the run does not have,
/// gets an error result and starts nothing.
pub(super) fn answer<'f>(
    parent: &'f mut Loop,
    run: &'f mut Run<'_>,
    ws: &'f Workspace,
    t: u32,
    this: usize,
    call: &'f ToolCall,
) -> Answer<'f> {
    Box::pin(child_session(parent, run, ws, t, this, call))
}

async fn child_session(
    parent: &mut Loop,
    run: &mut Run<'_>,
    ws: &Workspace,
    t: u32,
    this: usize,
    call: &ToolCall,
) -> Result<CallOutcome, ChildError> {
    let refuse = |text: String| {
        let result = Message::tool_result(t, call, text, true);
        let record = delegate_record(t, this, call, &result, None);
        Ok((result, record, Vec::new()))
    };
    let brief = match call.args.get("brief").and_then(|b| b.as_str()) {
        Some(b) if !b.trim().is_empty() => b.to_string(),
        _ => return refuse("error: delegate needs `brief`: the whole task for the child, with every fact it needs (it sees nothing else)".into()),
    };
    let named = call
        .args
        .get("model")
        .and_then(|m| m.as_str())
        .filter(|m| !m.is_empty() && *m != run.plan.model_name);
    let model: Option<Arc<dyn Model>> = match named {
        None => None,
        Some(m) => match run.opts.child_models.get(m) {
            Some(x) => Some(Arc::clone(x)),
            None => {
                let mut known: Vec<&str> =
                    run.opts.child_models.keys().map(String::as_str).collect();
                known.push(&run.plan.model_name);
                known.sort_unstable();
                return refuse(format!(
                    "error: model `{m}` is not a model of this run (they are: {}); leave `model` out to run the child on yours",
                    known.join(", ")
                ));
            }
        },
    };
    parent.children += 1;
    parent.turn_children += 1;
    let agent = format!("child-{}", parent.children);
    let mut child = Loop::with(
        Box::new(policies::NonePolicy::new(run.model.window())),
        CHILD_SYSTEM_PROMPT,
        tools::tool_specs(),
        false,
    );
    child.agent = Some(agent.clone());
    child.purpose = Purpose::Child;
    child.record_turn = Some(t);
    child.model_label = named.map(str::to_string);
    child.index = parent.index;
    child.driver.context_mut().turn = 1;
    child.driver.push(Message::user(1, brief, None));
    // The child starts in the work tree the parent's last step left.
    child.known = std::mem::take(&mut parent.known);
    // The facts the task's script says this child needs, watched over the child's session.
    let scripted = run
        .plan
        .task
        .turns
        .get((t as usize).wrapping_sub(1))
        .and_then(|ts| ts.delegations().nth(parent.turn_children - 1))
        .map(|d| d.as_turn());
    let mut needs = scripted
        .as_ref()
        .map_or_else(NeedWatch::empty, NeedWatch::new);
    let first = child.index;
    run.child_model = model;
    let mut closing = None;
    let outcome = async {
        for _step in 0..run.opts.max_steps {
            run.within_deadline()?;
            if let Some(text) = child.step(run, ws, 1, &mut needs).await? {
                closing = Some(text);
                break;
            }
        }
        Ok::<(), SessionError>(())
    }
    .await;
    run.child_model = None;
    outcome.map_err(|error| ChildError {
        agent: agent.clone(),
        error: Box::new(error),
    })?;
    parent.index = child.index;
    // The child worked in the same workspace: the work tree is as its last step left it.
    parent.known = std::mem::take(&mut child.known);
    let facts = needs.into_facts();
    if !facts.is_empty() {
        run.emit(Event::Needs { turn: t, facts });
    }
    let closed = closing.is_some();
    let receipt = closing.unwrap_or_else(|| {
        format!(
            "error: the delegated agent reached the step limit ({} requests) without a receipt",
            run.opts.max_steps
        )
    });
    let result = Message::tool_result(t, call, receipt, !closed);
    let summary = json!({
        "outcome": "delegated",
        "agent": agent,
        "model": named.unwrap_or(&run.plan.model_name),
        "requests": child.index - first,
        "closed": closed,
    });
    let record = delegate_record(t, this, call, &result, Some(summary));
    Ok((result, record, Vec::new()))
}

/// The record of a `delegate` call: a harness tool (like a policy's), with what it did.
fn delegate_record(
    t: u32,
    this: usize,
    call: &ToolCall,
    result: &Message,
    outcome: Option<serde_json::Value>,
) -> ToolCallRecord {
    ToolCallRecord::policy_call(t, this, call, result.is_error, outcome, result.tokens)
}
