//! `pipeline`: policies applied one after the other, as OpenHands' `PipelineCondenser` and
//! SWE-agent's list of history processors apply theirs.
//!
//! Written `STEP|STEP|...` (or `pipeline:STEP|STEP|...`), each step a policy text with its own
//! parameters: `observation-masking:attention_window=10|compact:threshold=0.8`. On every
//! request the first step is given the context and each later step the messages the one before
//! it would send; a step that asks for a compaction stops the chain, and the compaction is its
//! own (the context it replaces is the whole context, as the step's own arm would see it). Cards,
//! the policy's own tools and splices belong to the step that offers them (at most one step may
//! add tools: a fold policy).

use std::sync::Arc;

use harness_core::policy::{ArchiveRef, CardOffer, Mode, Offload, Plan, Policy, Splice, ToolReply};
use harness_core::Context;
use harness_core::{Message, ToolCall, ToolSpec};

use crate::error::PolicyError;
use crate::registry::{Entry, Registry};

/// The policy's name.
pub const NAME: &str = "pipeline";

/// The registry entry.
pub(crate) fn entry() -> Entry {
    Entry::new(NAME, |_, b| {
        let arg = b.spec.arg.as_deref().unwrap_or_default();
        let mut steps = Vec::new();
        for text in b.registry.steps(arg) {
            let spec = b.registry.parse(text)?;
            steps.push(b.registry.build(&spec, b.window)?);
        }
        Ok(Box::new(Pipeline::new(steps)?))
    })
    .raw(canonical)
    .summary("policies applied one after the other: STEP|STEP|... (each with its own parameters)")
    .source("OpenHands `PipelineCondenser`, SWE-agent's history processor list")
}

/// Checks a pipeline's steps and writes them canonically (each step's label, `|` between).
pub(crate) fn canonical(reg: &Registry, text: &str) -> Result<String, PolicyError> {
    let steps = reg.steps(text);
    let mut out = Vec::new();
    for s in steps {
        let s = s.trim();
        if s.is_empty() {
            return Err(PolicyError::EmptyStep(text.to_string()));
        }
        let head = s.split(':').next().unwrap_or(s).trim();
        if head == NAME {
            return Err(PolicyError::NestedPipeline(text.to_string()));
        }
        let spec = reg.parse(s)?;
        if spec.delegate {
            return Err(PolicyError::DelegateInPipeline(text.to_string()));
        }
        out.push(spec.label());
    }
    Ok(out.join("|"))
}

/// Steps applied in order.
pub(crate) struct Pipeline {
    steps: Vec<Box<dyn Policy>>,
    /// The step whose compaction is in progress: set by a plan and read by the same request's
    /// compaction, so not state (the steps' states and the splices are).
    compacting: usize,
    splices: Vec<(u32, u32, usize)>,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("steps", &self.name())
            .finish_non_exhaustive()
    }
}

impl Pipeline {
    /// A pipeline of built steps; refused when two steps add tools of the same name.
    pub(crate) fn new(steps: Vec<Box<dyn Policy>>) -> Result<Pipeline, PolicyError> {
        let mut names: Vec<String> = Vec::new();
        for s in &steps {
            for t in s.tools() {
                if names.contains(&t.name) {
                    return Err(PolicyError::ToolTwice(t.name));
                }
                names.push(t.name);
            }
        }
        Ok(Pipeline {
            steps,
            compacting: 0,
            splices: Vec::new(),
        })
    }
}

impl Policy for Pipeline {
    fn saved_state(&self) -> Option<serde_json::Value> {
        let steps: Vec<serde_json::Value> = self
            .steps
            .iter()
            .map(|s| s.saved_state().unwrap_or(serde_json::Value::Null))
            .collect();
        if self.splices.is_empty() && steps.iter().all(serde_json::Value::is_null) {
            return None;
        }
        Some(serde_json::json!({"steps": steps, "splices": self.splices}))
    }

    fn restore_state(&mut self, state: &serde_json::Value) {
        if let Some(steps) = state.get("steps").and_then(|s| s.as_array()) {
            for (step, s) in self.steps.iter_mut().zip(steps) {
                if !s.is_null() {
                    step.restore_state(s);
                }
            }
        }
        if let Some(splices) = state
            .get("splices")
            .and_then(|s| serde_json::from_value(s.clone()).ok())
        {
            self.splices = splices;
        }
    }

    fn name(&self) -> String {
        self.steps
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
            .join("|")
    }

    fn tools(&self) -> Vec<ToolSpec> {
        self.steps.iter().flat_map(|s| s.tools()).collect()
    }

    fn card(&mut self, ctx: &Context, prefix_tokens: u32) -> Option<CardOffer> {
        self.steps
            .iter_mut()
            .find_map(|s| s.card(ctx, prefix_tokens))
    }

    fn plan(&mut self, ctx: &Context, prefix_tokens: u32) -> Plan {
        let mut view = ctx.clone();
        let mut actions: Vec<String> = Vec::new();
        for (i, step) in self.steps.iter_mut().enumerate() {
            match step.plan(&view, prefix_tokens) {
                Plan::Send { messages, action } => {
                    view.messages = messages;
                    actions.extend(action);
                }
                compact @ Plan::Compact { .. } => {
                    self.compacting = i;
                    return compact;
                }
            }
        }
        Plan::Send {
            messages: view.messages,
            action: (!actions.is_empty()).then(|| actions.join("; ")),
        }
    }

    fn compaction_input(&mut self, ctx: &Context) -> Vec<Arc<Message>> {
        match self.steps.get_mut(self.compacting) {
            Some(s) => s.compaction_input(ctx),
            None => ctx.messages.clone(),
        }
    }

    fn compaction_instructions(&self) -> Option<String> {
        self.steps
            .get(self.compacting)
            .and_then(|s| s.compaction_instructions())
    }

    fn offloads(&mut self, ctx: &Context) -> Vec<Offload> {
        self.steps
            .iter_mut()
            .flat_map(|s| s.offloads(ctx))
            .collect()
    }

    fn offloaded(&mut self, path: &str, written: bool) {
        for s in &mut self.steps {
            s.offloaded(path, written);
        }
    }

    fn apply_compaction(&mut self, ctx: &mut Context, summary: Arc<Message>) {
        match self.steps.get_mut(self.compacting) {
            Some(s) => s.apply_compaction(ctx, summary),
            None => ctx.compact(summary),
        }
    }

    fn owns_tool(&self, name: &str) -> bool {
        self.steps.iter().any(|s| s.owns_tool(name))
    }

    fn handle_tool(&mut self, ctx: &Context, call: &ToolCall) -> ToolReply {
        match self.steps.iter_mut().find(|s| s.owns_tool(&call.name)) {
            Some(s) => s.handle_tool(ctx, call),
            None => ToolReply::refused(format!("error: unknown tool `{}`", call.name)),
        }
    }

    fn refuse_workspace_tool(&self, call: &ToolCall) -> Option<String> {
        self.steps
            .iter()
            .find_map(|s| s.refuse_workspace_tool(call))
    }

    fn end_turn(&mut self, ctx: &Context, next_user: Option<&str>) -> Vec<Splice> {
        let mut out = Vec::new();
        self.splices.clear();
        for (i, s) in self.steps.iter_mut().enumerate() {
            for splice in s.end_turn(ctx, next_user) {
                self.splices.push((splice.from, splice.to, i));
                out.push(splice);
            }
        }
        out
    }

    fn apply_splice(
        &mut self,
        ctx: &mut Context,
        splice: &Splice,
        archive: &ArchiveRef,
    ) -> Option<Arc<Message>> {
        let owner = self
            .splices
            .iter()
            .find(|(f, t, _)| *f == splice.from && *t == splice.to)
            .map(|(_, _, i)| *i)?;
        self.steps[owner].apply_splice(ctx, splice, archive)
    }

    fn mode(&self) -> Option<Mode> {
        self.steps.iter().find_map(|s| s.mode())
    }

    fn window(&self) -> Option<u64> {
        self.steps.iter().find_map(|s| s.window())
    }

    fn failed(&self) -> Option<String> {
        self.steps.iter().find_map(|s| s.failed())
    }
}

#[cfg(test)]
mod tests {
    use crate::messages::testing::{context, output, sent, shape, Step::*};

    #[test]
    fn steps_apply_in_order_and_write_canonically() {
        let spec = crate::parse_policy("swe-agent:n=2 | trim:mode=placeholder,keep=1").unwrap();
        assert_eq!(spec.name, "pipeline");
        assert_eq!(spec.label(), "swe-agent:n=2|trim:keep=1,mode=placeholder");
        assert_eq!(
            crate::parse_policy("pipeline:none|trim").unwrap().label(),
            "none|trim"
        );
        let c = context(vec![
            User("u1"),
            Calls(vec![("read_file", output(10))]),
            Calls(vec![("read_file", output(10))]),
            Close("done"),
            User("u2"),
            Calls(vec![("read_file", output(10))]),
            Calls(vec![("read_file", output(10))]),
        ]);
        // swe-agent:n=2 elides results 1-2 (5 observations: 5-2=3); trim then drops turn 1's calls
        // and results (mode drop), the elided ones with them.
        let mut p =
            crate::build(&crate::parse_policy("swe-agent:n=2|trim").unwrap(), 200_000).unwrap();
        assert_eq!(shape(&sent(p.plan(&c, 0))), "ucuarar");
        let mut p = crate::build(&crate::parse_policy("swe-agent:n=2").unwrap(), 200_000).unwrap();
        assert_eq!(shape(&sent(p.plan(&c, 0))), "uaxaxcuarar");
        let mut p = crate::build(
            &crate::parse_policy("trim:mode=placeholder|compact:window=100").unwrap(),
            200_000,
        )
        .unwrap();
        assert!(matches!(
            p.plan(&c, 0),
            harness_core::policy::Plan::Compact { .. }
        ));
    }

    #[test]
    fn bad_pipelines_are_refused() {
        for (text, want) in [
            ("none||trim", "an empty step"),
            ("pipeline:none|pipeline:trim", "cannot be a pipeline"),
            ("none|trum", "did you mean `trim`"),
            (
                "fold|fold+strategies",
                "at most one step of a pipeline may be a fold policy",
            ),
        ] {
            let e = crate::registry::current()
                .check(text)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
