//! inspect_ai's compaction strategies (`inspect_ai.model._compaction`): `inspect-edit`
//! (`CompactionEdit`), `inspect-trim` (`CompactionTrim`) and `inspect-summary`
//! (`CompactionSummary`), run as inspect's `compaction()` handler runs them.
//!
//! The handler keeps the input it sent: new messages are appended to it until a request
//! passes `threshold` (a fraction of the window when at most 1, else input tokens; 0.9), then
//! the strategy compacts that input, once more up to three times while it stays over and
//! shrinks, and the result is what later messages are appended to. With `memory` and a
//! `memory` tool in the session, a warning to save notes is appended once the request passes
//! 90% of the threshold, and compaction clears the memory calls' saved content.
//!
//! - **Edit**: thinking of all but the last `keep_thinking_turns` assistant messages removed;
//!   the results of all but the last `keep_tool_uses` tool uses replaced by `(Tool result
//!   removed)` (`exclude_tools` never); with `keep_tool_inputs=false` the result goes and its
//!   call is replaced by a line naming the tool.
//! - **Trim**: the first user message kept, then the last `preserve` of the other messages;
//!   results whose call was trimmed and calls whose result was trimmed dropped.
//! - **Summary**: a model-written summary of the conversation since the last summary; the
//!   input becomes the first user message and the summary, framed as inspect frames it. The
//!   summary is asked for as `compact` asks it (foldbench's prompt, `instructions` after it).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use harness_core::policy::{Plan, Policy};
use harness_core::Context;
use harness_core::{Message, MessageKind, Role};

use crate::clear_thinking::without_thinking;
use crate::error::ParamError;
use crate::messages::{Marks, Memo};
use crate::params::Params;
use crate::registry::Entry;

/// The Edit strategy's name.
pub(crate) const EDIT: &str = "inspect-edit";
/// The Trim strategy's name.
pub(crate) const TRIM: &str = "inspect-trim";
/// The Summary strategy's name.
pub(crate) const SUMMARY: &str = "inspect-summary";

/// What a cleared tool result says.
pub const TOOL_RESULT_REMOVED: &str = "(Tool result removed)";

/// The memory tool inspect watches for.
pub(crate) const MEMORY_TOOL: &str = "memory";

/// What the content arguments of a memory call become after compaction.
pub(crate) const SAVED: &str = "(content saved to memory)";

/// The memory call arguments that carry content.
pub(crate) const MEMORY_CONTENT_ARGS: [&str; 3] = ["file_text", "insert_text", "new_str"];

/// The warning appended before compaction when the memory tool is there.
pub(crate) const MEMORY_WARNING: &str = "Context compaction approaching. Use memory() to save concise notes on:\n- Key decisions made and why\n- Important discoveries (APIs, data structures, error solutions)\n- Critical file paths and changes made\n- Next steps to continue the task\n\nDo NOT save raw tool outputs or full file contents—keep notes brief and synthesized.";

/// Which strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strategy {
    /// `CompactionEdit`.
    Edit,
    /// `CompactionTrim`.
    Trim,
    /// `CompactionSummary`.
    Summary,
}

/// inspect_ai's compaction handler with one strategy.
#[derive(Debug)]
pub(crate) struct InspectAi {
    strategy: Strategy,
    threshold: f64,
    window: u64,
    memory: bool,
    keep_thinking_turns: Option<usize>,
    keep_tool_uses: usize,
    keep_tool_inputs: bool,
    exclude: Vec<String>,
    preserve: f64,
    instructions: Option<String>,
    /// The input as last sent (rewrites included). This, `seen` and `warned` are state
    /// ([`Policy::saved_state`]): inspect appends to what it sent, which the context does not
    /// give back (the rewrites, the warning, where the last compaction left it).
    input: Vec<Arc<Message>>,
    /// The context's messages already in `input` (or compacted away).
    seen: Marks<()>,
    /// Whether the memory warning was given since the last compaction.
    warned: bool,
    /// The input as a restored policy took it back, until the first context is given.
    restored: Option<Vec<SavedMessage>>,
    /// The rewrites of the input's messages (a cache: each rewritten message is kept in
    /// `input`, so not state).
    memo: Memo,
}

/// A message of the input as saved: one of the context's (by fingerprint), or one the policy
/// made (a rewrite, the warning), whole.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum SavedMessage {
    Context(String),
    Made(Box<Message>),
}

/// What an inspect_ai strategy remembers between requests ([`Policy::saved_state`]).
#[derive(serde::Serialize, serde::Deserialize)]
struct InspectState {
    input: Vec<SavedMessage>,
    /// The context's messages seen, by fingerprint.
    seen: Vec<String>,
    warned: bool,
}

fn common(e: Entry) -> Entry {
    e.param(
        "threshold",
        "0.9",
        "fraction of the window, or tokens when over 1",
        "compact when the input passes it",
    )
    .param(
        "memory",
        "true",
        "true|false",
        "with a memory tool: warn the model at 90% of the threshold, clear saved content",
    )
    .param("window", "(the model's)", "tokens", "the context window")
}

/// The registry entries: Edit, Trim, Summary.
pub(crate) fn entries() -> Vec<Entry> {
    vec![
        common(
            Entry::new(EDIT, |p, b| Ok(Box::new(InspectAi::from_params(p, b.window, Strategy::Edit)?)))
                .summary("inspect_ai CompactionEdit: past the threshold, old tool results and thinking removed")
                .source("inspect_ai `CompactionEdit` (`inspect_ai.model._compaction`)"),
        )
        .param("keep_thinking_turns", "1", "assistant turns, or all", "the last assistant messages that keep their thinking")
        .param("keep_tool_uses", "3", "tool uses", "the most recent tool uses whose results stay")
        .param("keep_tool_inputs", "true", "true|false", "false: the call goes too, a line naming the tool in its place")
        .param("exclude_tools", "(none)", "tool names joined by +", "tools whose results are never cleared"),
        common(
            Entry::new(TRIM, |p, b| Ok(Box::new(InspectAi::from_params(p, b.window, Strategy::Trim)?)))
                .summary("inspect_ai CompactionTrim: past the threshold, the first message and the last 80% of the rest")
                .source("inspect_ai `CompactionTrim` (`inspect_ai.model._compaction`)"),
        )
        .param("preserve", "0.8", "fraction of the messages", "the share of the conversation kept, newest"),
        common(
            Entry::new(SUMMARY, |p, b| Ok(Box::new(InspectAi::from_params(p, b.window, Strategy::Summary)?)))
                .summary("inspect_ai CompactionSummary: past the threshold, the first message and a model-written summary")
                .source("inspect_ai `CompactionSummary` (`inspect_ai.model._compaction`)"),
        )
        .param("instructions", "(none)", "text", "added to the summary request"),
    ]
}

impl InspectAi {
    /// From the parameters of the strategy's entry.
    pub(crate) fn from_params(
        p: &mut Params,
        window: u64,
        strategy: Strategy,
    ) -> Result<InspectAi, ParamError> {
        let threshold = p.take_f64("threshold")?.unwrap_or(0.9);
        let memory = p.take_bool("memory")?.unwrap_or(true);
        let window = p.take_u64("window")?.unwrap_or(window);
        let mut out = InspectAi {
            strategy,
            threshold,
            window,
            memory,
            keep_thinking_turns: Some(1),
            keep_tool_uses: 3,
            keep_tool_inputs: true,
            exclude: Vec::new(),
            preserve: 0.8,
            instructions: None,
            input: Vec::new(),
            seen: Marks::default(),
            warned: false,
            restored: None,
            memo: Memo::default(),
        };
        match strategy {
            Strategy::Edit => {
                out.keep_thinking_turns = match p.take_text("keep_thinking_turns").as_deref() {
                    None => Some(1),
                    Some("all") => None,
                    Some(v) => Some(v.parse().map_err(|_| ParamError::OutOfRange {
                        key: "keep_thinking_turns".into(),
                        rule: format!("is a number of assistant turns or `all`, not `{v}`"),
                    })?),
                };
                out.keep_tool_uses = usize::try_from(p.take_u64("keep_tool_uses")?.unwrap_or(3))
                    .map_err(|_| ParamError::TooLarge {
                        key: "keep_tool_uses".into(),
                    })?;
                out.keep_tool_inputs = p.take_bool("keep_tool_inputs")?.unwrap_or(true);
                out.exclude = p.take_list("exclude_tools")?.unwrap_or_default();
            }
            Strategy::Trim => {
                out.preserve = p.take_f64("preserve")?.unwrap_or(0.8);
                if out.preserve > 1.0 {
                    return Err(ParamError::OutOfRange {
                        key: "preserve".into(),
                        rule: format!(
                            "is a fraction of the messages (0 to 1), not {}",
                            out.preserve
                        ),
                    });
                }
            }
            Strategy::Summary => out.instructions = p.take_text("instructions"),
        }
        Ok(out)
    }

    /// The threshold in tokens (a fraction of the window when at most 1).
    pub(crate) fn threshold_tokens(&self) -> u64 {
        if self.threshold > 1.0 {
            self.threshold as u64
        } else {
            (self.threshold * self.window as f64) as u64
        }
    }

    fn entry_name(&self) -> &'static str {
        match self.strategy {
            Strategy::Edit => EDIT,
            Strategy::Trim => TRIM,
            Strategy::Summary => SUMMARY,
        }
    }

    /// The index just past the first user message (inspect's `input` when the sample marks
    /// none): the messages before it and it.
    fn input_end(messages: &[Arc<Message>]) -> usize {
        messages
            .iter()
            .position(|m| m.role == Role::User && m.kind != MessageKind::Summary)
            .map_or(0, |i| i + 1)
    }

    /// One pass of Edit over `messages`.
    fn edit(&mut self, messages: &[Arc<Message>]) -> Vec<Arc<Message>> {
        let mut out = messages.to_vec();
        if let Some(keep) = self.keep_thinking_turns {
            let mut seen = 0;
            for i in (0..out.len()).rev() {
                if out[i].role == Role::Assistant {
                    seen += 1;
                    if seen > keep && out[i].thinking.is_some() {
                        out[i] = without_thinking(&mut self.memo, &out[i]);
                    }
                }
            }
        }
        // Tool uses: (assistant index, call index, result index), excluded tools left out.
        let mut uses: Vec<(usize, usize, usize)> = Vec::new();
        for (i, m) in out.iter().enumerate() {
            for (k, c) in m.tool_calls.iter().enumerate() {
                if self.exclude.contains(&c.name) {
                    continue;
                }
                if let Some(r) = out[i + 1..].iter().position(|x| {
                    x.role == Role::Tool && x.tool_call_id.as_deref() == Some(c.id.as_str())
                }) {
                    uses.push((i, k, i + 1 + r));
                }
            }
        }
        let clear = if self.keep_tool_uses == 0 {
            uses.len()
        } else {
            uses.len().saturating_sub(self.keep_tool_uses)
        };
        let cleared = &uses[..clear];
        if self.keep_tool_inputs {
            for &(_, _, r) in cleared {
                if out[r].text != TOOL_RESULT_REMOVED {
                    out[r] = self.memo.cleared(&out[r], TOOL_RESULT_REMOVED);
                }
            }
        } else {
            let gone: HashSet<usize> = cleared.iter().map(|u| u.2).collect();
            let mut done: HashSet<usize> = HashSet::new();
            for &(i, _, _) in cleared {
                if !done.insert(i) {
                    continue;
                }
                let names: Vec<String> = cleared
                    .iter()
                    .filter(|u| u.0 == i)
                    .map(|u| messages[i].tool_calls[u.1].name.clone())
                    .collect();
                let ids: Vec<String> = cleared
                    .iter()
                    .filter(|u| u.0 == i)
                    .map(|u| messages[i].tool_calls[u.1].id.clone())
                    .collect();
                let orig = Arc::clone(&messages[i]);
                out[i] = self.memo.get(&orig, 40, |m| {
                    let mut c = m.clone();
                    c.tool_calls.retain(|tc| !ids.contains(&tc.id));
                    // inspect clears the uses in reverse order, so the lines of one
                    // response's calls are appended last call first.
                    for n in names.iter().rev() {
                        let line = format!(
                            "[Tool call: {n} (parameters and results removed from history)]"
                        );
                        c.text = if c.text.is_empty() {
                            line
                        } else {
                            format!("{}\n{line}", c.text)
                        };
                    }
                    c.sealed()
                });
            }
            out = out
                .into_iter()
                .enumerate()
                .filter(|(i, _)| !gone.contains(i))
                .map(|(_, m)| m)
                .collect();
        }
        out
    }

    /// One pass of Trim over `messages`.
    fn trim(&mut self, messages: &[Arc<Message>]) -> Vec<Arc<Message>> {
        let head = InspectAi::input_end(messages);
        let conversation = &messages[head..];
        let start = (conversation.len() as f64 * (1.0 - self.preserve)) as usize;
        let mut kept: Vec<Arc<Message>> = Vec::new();
        let mut active: HashSet<&str> = HashSet::new();
        for m in &conversation[start..] {
            match m.role {
                Role::Assistant => {
                    active = m.tool_calls.iter().map(|c| c.id.as_str()).collect();
                    kept.push(Arc::clone(m));
                }
                Role::Tool => {
                    if m.tool_call_id
                        .as_deref()
                        .is_some_and(|id| active.contains(id))
                    {
                        kept.push(Arc::clone(m));
                    }
                }
                Role::User => {
                    active.clear();
                    kept.push(Arc::clone(m));
                }
            }
        }
        let answered: HashSet<String> =
            kept.iter().filter_map(|m| m.tool_call_id.clone()).collect();
        for m in kept.iter_mut() {
            if m.role == Role::Assistant && m.tool_calls.iter().any(|c| !answered.contains(&c.id)) {
                let orig = Arc::clone(m);
                *m = self.memo.get(&orig, 41, |m| {
                    let mut c = m.clone();
                    c.tool_calls.retain(|tc| answered.contains(&tc.id));
                    c.sealed()
                });
            }
        }
        while kept.last().is_some_and(|m| m.role == Role::Assistant) {
            kept.pop();
        }
        let mut out = messages[..head].to_vec();
        out.extend(kept);
        out
    }

    /// The memory calls' saved content cleared.
    fn clear_memory(&mut self, messages: Vec<Arc<Message>>) -> Vec<Arc<Message>> {
        messages
            .into_iter()
            .map(|m| {
                let has = m.tool_calls.iter().any(|c| {
                    c.name == MEMORY_TOOL
                        && MEMORY_CONTENT_ARGS.iter().any(|a| c.args.get(a).is_some())
                });
                if !has {
                    return m;
                }
                self.memo.get(&m, 42, |m| {
                    let mut c = m.clone();
                    for tc in c.tool_calls.iter_mut().filter(|tc| tc.name == MEMORY_TOOL) {
                        if let Some(o) = tc.args.as_object_mut() {
                            for a in MEMORY_CONTENT_ARGS {
                                if o.contains_key(a) {
                                    o.insert(a.to_string(), serde_json::json!(SAVED));
                                }
                            }
                        }
                    }
                    c.sealed()
                })
            })
            .collect()
    }

    fn tokens(prefix: u32, messages: &[Arc<Message>]) -> u64 {
        u64::from(prefix) + messages.iter().map(|m| u64::from(m.tokens)).sum::<u64>()
    }

    /// The input so far with the context's new messages appended.
    fn target(&mut self, ctx: &Context) -> Vec<Arc<Message>> {
        self.resolve(ctx);
        let mut t = self.input.clone();
        t.extend(
            ctx.messages
                .iter()
                .filter(|m| !self.seen.contains(m.id))
                .cloned(),
        );
        t
    }

    /// Marks `messages` seen.
    fn see(&mut self, messages: &[Arc<Message>]) {
        for m in messages {
            if !self.seen.contains(m.id) {
                self.seen.insert(m, ());
            }
        }
    }

    /// What a restored policy took back, found on the messages of `ctx`: the messages seen,
    /// and the input (each of the context's messages by its fingerprint, in order; one no
    /// longer in the context is left out).
    fn resolve(&mut self, ctx: &Context) {
        self.seen.resolve(&ctx.messages);
        let Some(saved) = self.restored.take() else {
            return;
        };
        let mut by_key: HashMap<&str, VecDeque<&Arc<Message>>> = HashMap::new();
        for m in &ctx.messages {
            if let Some(k) = self.seen.key(m.id) {
                by_key.entry(k).or_default().push_back(m);
            }
        }
        self.input = saved
            .into_iter()
            .filter_map(|s| match s {
                SavedMessage::Context(k) => by_key
                    .get_mut(k.as_str())
                    .and_then(VecDeque::pop_front)
                    .cloned(),
                SavedMessage::Made(m) => Some(Arc::new(*m)),
            })
            .collect();
    }

    fn has_memory_tool(messages: &[Arc<Message>]) -> bool {
        messages
            .iter()
            .any(|m| m.tool_calls.iter().any(|c| c.name == MEMORY_TOOL))
    }

    /// The summary message, as inspect frames it.
    pub(crate) fn framed(summary: &str) -> String {
        format!(
            "[CONTEXT COMPACTION SUMMARY]\n\nThe following is a summary of work completed on this task so far:\n\n<summary>\n{summary}\n</summary>\n\nPlease continue working on this task from where you left off."
        )
    }
}

impl Policy for InspectAi {
    fn saved_state(&self) -> Option<serde_json::Value> {
        let input = match &self.restored {
            Some(saved) => saved.clone(),
            None => self
                .input
                .iter()
                .map(|m| match self.seen.key(m.id) {
                    Some(k) => SavedMessage::Context(k.to_string()),
                    None => SavedMessage::Made(Box::new((**m).clone())),
                })
                .collect(),
        };
        let seen = self.seen.saved().into_iter().map(|(k, ())| k).collect();
        serde_json::to_value(InspectState {
            input,
            seen,
            warned: self.warned,
        })
        .ok()
    }

    fn restore_state(&mut self, state: &serde_json::Value) {
        if let Ok(s) = serde_json::from_value::<InspectState>(state.clone()) {
            self.seen
                .restore(s.seen.into_iter().map(|k| (k, ())).collect());
            self.input.clear();
            self.restored = Some(s.input);
            self.warned = s.warned;
        }
    }

    fn name(&self) -> String {
        let mut s = format!("{}:threshold={}", self.entry_name(), self.threshold);
        if !self.memory {
            s.push_str(",memory=false");
        }
        match self.strategy {
            Strategy::Edit => {
                match self.keep_thinking_turns {
                    Some(n) => s.push_str(&format!(",keep_thinking_turns={n}")),
                    None => s.push_str(",keep_thinking_turns=all"),
                }
                s.push_str(&format!(",keep_tool_uses={}", self.keep_tool_uses));
                if !self.keep_tool_inputs {
                    s.push_str(",keep_tool_inputs=false");
                }
                if !self.exclude.is_empty() {
                    s.push_str(&format!(",exclude_tools={}", self.exclude.join("+")));
                }
            }
            Strategy::Trim => s.push_str(&format!(",preserve={}", self.preserve)),
            Strategy::Summary => {}
        }
        s
    }

    fn plan(&mut self, ctx: &Context, prefix_tokens: u32) -> Plan {
        let threshold = self.threshold_tokens();
        let target = self.target(ctx);
        let tokens = InspectAi::tokens(prefix_tokens, &target);
        if tokens > threshold {
            if self.strategy == Strategy::Summary {
                if target.len() > InspectAi::input_end(&target) {
                    return Plan::Compact { emergency: false };
                }
            } else {
                let mut out = target.clone();
                let mut total = tokens;
                for pass in 0..4 {
                    let next = match self.strategy {
                        Strategy::Edit => self.edit(&out),
                        _ => self.trim(&out),
                    };
                    let next = if self.memory {
                        self.clear_memory(next)
                    } else {
                        next
                    };
                    let t = InspectAi::tokens(prefix_tokens, &next);
                    if pass > 0 && t >= total {
                        break;
                    }
                    out = next;
                    total = t;
                    if total <= threshold {
                        break;
                    }
                }
                self.see(&ctx.messages);
                self.input = out.clone();
                self.warned = false;
                return Plan::Send {
                    messages: out,
                    action: Some(format!("compacted {tokens} tokens to {total}")),
                };
            }
        }
        self.see(&ctx.messages);
        self.input = target;
        let mut action = None;
        if self.memory
            && !self.warned
            && tokens > threshold * 9 / 10
            && InspectAi::has_memory_tool(&self.input)
        {
            // A host note (inspect's user message), never a prompt.
            let kind = MessageKind::StrategyRules {
                mode: MEMORY_TOOL.into(),
            };
            self.input
                .push(Message::host(ctx.turn, MEMORY_WARNING, kind));
            self.warned = true;
            action = Some("memory warning".to_string());
        }
        Plan::Send {
            messages: self.input.clone(),
            action,
        }
    }

    fn compaction_instructions(&self) -> Option<String> {
        self.instructions.clone()
    }

    fn compaction_input(&mut self, ctx: &Context) -> Vec<Arc<Message>> {
        let target = self.target(ctx);
        let head = InspectAi::input_end(&target);
        let since = target[head..]
            .iter()
            .rposition(|m| m.kind == MessageKind::Summary)
            .map_or(head, |i| head + i);
        let mut out = target[..head].to_vec();
        out.extend(target[since..].iter().cloned());
        out
    }

    fn apply_compaction(&mut self, ctx: &mut Context, summary: Arc<Message>) {
        let target = self.target(ctx);
        let head = InspectAi::input_end(&target);
        let mut framed = summary.as_ref().clone();
        framed.text = InspectAi::framed(&summary.text);
        let framed = framed.sealed();
        let mut input = target[..head].to_vec();
        input.push(framed);
        self.see(&ctx.messages);
        self.see(&input);
        self.input = input.clone();
        self.warned = false;
        ctx.messages = input;
    }

    fn window(&self) -> Option<u64> {
        Some(self.window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::testing::{
        context, count, output, policy, same_after_restores, sent, shape, Step, Step::*,
    };

    fn session() -> Context {
        context(vec![
            User("task"),
            Calls(vec![("read_file", output(200)), ("grep", output(200))]),
            Calls(vec![("shell", output(200))]),
            Calls(vec![("read_file", output(200))]),
            Calls(vec![("shell", output(200))]),
        ])
    }

    #[test]
    fn edit_clears_all_but_the_last_tool_uses_past_the_threshold() {
        let c = session();
        assert_eq!(
            shape(&sent(policy("inspect-edit").plan(&c, 0))),
            "uarrararar"
        );
        let mut p = policy("inspect-edit:threshold=500");
        let m = sent(p.plan(&c, 0));
        assert_eq!(shape(&m), "uaxxararar");
        assert_eq!(m[2].text, TOOL_RESULT_REMOVED);
        // It stays compacted; new messages are appended to it.
        let m2 = sent(p.plan(&c, 0));
        assert_eq!(
            m.iter().map(|x| x.id).collect::<Vec<_>>(),
            m2.iter().map(|x| x.id).collect::<Vec<_>>()
        );
        let m = sent(policy("inspect-edit:threshold=500,keep_tool_inputs=false").plan(&c, 0));
        // Both calls of the first batch go, a line naming each in their place.
        assert_eq!(shape(&m), "ucararar");
        assert!(m[1]
            .text
            .contains("[Tool call: grep (parameters and results removed from history)]"));
    }

    #[test]
    fn with_a_memory_tool_the_model_is_warned_once_near_the_threshold() {
        let c = context(vec![User("task"), Calls(vec![("memory", output(200))])]);
        let tokens = c.tokens();
        // Between 90% of the threshold and the threshold: the warning, once.
        let mut p = policy(&format!("inspect-edit:threshold={}", tokens * 21 / 20));
        let m = sent(p.plan(&c, 0));
        assert_eq!(m.len(), 4, "the warning appended");
        assert_eq!(m[3].text, MEMORY_WARNING);
        assert_eq!(sent(p.plan(&c, 0)).len(), 4, "once");
        let mut p = policy(&format!(
            "inspect-edit:threshold={},memory=false",
            tokens * 21 / 20
        ));
        assert_eq!(sent(p.plan(&c, 0)).len(), 3);
        // Without a memory tool, no warning.
        let c = context(vec![User("task"), Calls(vec![("read_file", output(200))])]);
        let mut p = policy(&format!("inspect-edit:threshold={}", c.tokens() * 21 / 20));
        assert_eq!(sent(p.plan(&c, 0)).len(), 3);
    }

    /// A task of shell calls, a memory call every third, over two turns.
    fn long_session() -> Vec<Step> {
        let mut steps = vec![User("task")];
        for i in 0..12 {
            if i == 6 {
                steps.push(Close("half done"));
                steps.push(User("go on"));
            }
            steps.push(Calls(vec![("shell", output(200))]));
            if i % 3 == 2 {
                steps.push(Calls(vec![("memory", output(20))]));
            }
        }
        steps
    }

    #[test]
    fn the_input_as_sent_carries_across_a_restore() {
        // Each arm compacts the input it sent more than once (the edits and the summary warn
        // about memory first); a policy that started again would compact the whole context at
        // once, warn again, and lose the rewrites it appended to.
        for (spec, acted, warnings) in [
            (
                "inspect-edit:threshold=1200,keep_tool_uses=1",
                "compacted",
                2,
            ),
            (
                "inspect-edit:threshold=1200,keep_tool_uses=1,keep_tool_inputs=false",
                "compacted",
                1,
            ),
            ("inspect-trim:threshold=1200", "compacted", 0),
            ("inspect-summary:threshold=1200", "compact false", 1),
        ] {
            let run = same_after_restores(spec, long_session);
            assert!(count(&run, acted) >= 2, "{spec}: {run:#?}");
            assert_eq!(count(&run, "memory warning"), warnings, "{spec}: {run:#?}");
        }
    }

    #[test]
    fn the_memory_warning_is_not_given_again_after_a_restore() {
        // From the memory call's request on, every request is between 90% of the threshold and
        // the threshold (with the host's 100-token prefix and the warning): one warning.
        let steps = || {
            vec![
                User("task"),
                Calls(vec![("memory", output(2000))]),
                Close("noted"),
                User("next"),
            ]
        };
        let warning = u64::from(Message::host(1, MEMORY_WARNING, MessageKind::Plain).tokens);
        let last = context(steps()).tokens() + 100 + warning;
        let threshold = last + 20;
        let mut first = context(steps());
        first.messages.truncate(3);
        assert!(
            first.tokens() + 100 > threshold * 9 / 10,
            "in the band from the call on"
        );
        let spec = format!("inspect-edit:threshold={threshold}");
        let run = same_after_restores(&spec, steps);
        assert_eq!(count(&run, "memory warning"), 1, "{run:#?}");
        assert_eq!(count(&run, "compacted"), 0, "{run:#?}");
    }

    #[test]
    fn trim_keeps_the_first_message_and_the_newest_messages() {
        let c = session();
        // 10 messages: the task, then 9; 80% of 9 kept from index int(9 * 0.2) = 1.
        let m = sent(policy("inspect-trim:threshold=700").plan(&c, 0));
        assert_eq!(
            shape(&m),
            "uararar",
            "the first batch's second result lost its call"
        );
    }
}
