//! What the peer policies share: rewritten messages memoised by the original's id (so a
//! cleared result is the same message, with the same id and count, on every request and the
//! prompt-cache simulation sees it unchanged), what a policy keeps per message across a host's
//! restore ([`Marks`]), the event counts of OpenHands' condensers, and the places a context may
//! be cut without parting a tool call from its result.

use std::collections::HashMap;
use std::sync::Arc;

use harness_core::{Message, MessageKind, Role};

/// Rewritten messages by the original's id and the rewrite's kind: a cache, each rewrite made
/// again the same from its original, so not state a policy saves ([`Policy::saved_state`]) —
/// as long as what `make` writes depends only on the original and the policy's parameters.
///
/// [`Policy::saved_state`]: harness_core::policy::Policy::saved_state
#[derive(Debug, Default)]
pub(crate) struct Memo {
    done: HashMap<(u64, u8), Arc<Message>>,
}

impl Memo {
    /// The rewrite `kind` of `m`, made once by `make`.
    pub(crate) fn get(
        &mut self,
        m: &Arc<Message>,
        kind: u8,
        make: impl FnOnce(&Message) -> Arc<Message>,
    ) -> Arc<Message> {
        Arc::clone(self.done.entry((m.id, kind)).or_insert_with(|| make(m)))
    }

    /// `m` (a tool result) with its text replaced by `text`, marked as cleared.
    pub(crate) fn cleared(&mut self, m: &Arc<Message>, text: &str) -> Arc<Message> {
        self.get(m, 0, |m| {
            let mut c = m.clone();
            c.text = text.to_string();
            c.kind = MessageKind::Cleared;
            c.sealed()
        })
    }
}

/// Values a policy keeps per message of the context, by the message's id, that it gives a host
/// to keep across taking the conversation out of memory ([`Policy::saved_state`]): saved by
/// each message's [fingerprint](Message::fingerprint), since ids do not outlive the process,
/// and found again on the messages of the first context a restored policy is given
/// ([`Marks::resolve`]). Two messages alike in every field get the same value back.
///
/// [`Policy::saved_state`]: harness_core::policy::Policy::saved_state
#[derive(Debug)]
pub struct Marks<V> {
    by_id: HashMap<u64, (String, V)>,
    /// Values taken back and not yet given to a message, by fingerprint.
    restored: HashMap<String, V>,
}

impl<V> Default for Marks<V> {
    fn default() -> Self {
        Marks {
            by_id: HashMap::new(),
            restored: HashMap::new(),
        }
    }
}

impl<V: Clone> Marks<V> {
    /// The value kept for the message `id`.
    pub fn get(&self, id: u64) -> Option<&V> {
        self.by_id.get(&id).map(|(_, v)| v)
    }

    /// Whether a value is kept for the message `id`.
    pub fn contains(&self, id: u64) -> bool {
        self.by_id.contains_key(&id)
    }

    /// The fingerprint of the message `id`, when a value is kept for it.
    pub fn key(&self, id: u64) -> Option<&str> {
        self.by_id.get(&id).map(|(k, _)| k.as_str())
    }

    /// Keeps `v` for `m` (replacing what was kept).
    pub fn insert(&mut self, m: &Message, v: V) {
        match self.by_id.get_mut(&m.id) {
            Some(slot) => slot.1 = v,
            None => {
                self.by_id.insert(m.id, (m.fingerprint(), v));
            }
        }
    }

    /// Keeps `v` for the message `id` whose fingerprint is `key` (taken earlier, when the
    /// message itself is no longer at hand).
    pub fn insert_keyed(&mut self, id: u64, key: String, v: V) {
        self.by_id.insert(id, (key, v));
    }

    /// The value kept for `m`, `make`'s when none is.
    pub fn get_or_insert(&mut self, m: &Message, make: impl FnOnce() -> V) -> &mut V {
        &mut self
            .by_id
            .entry(m.id)
            .or_insert_with(|| (m.fingerprint(), make()))
            .1
    }

    /// Gives the values taken back by [`Marks::restore`] to the messages of `messages` with
    /// their fingerprints. Only the first context after a restore is read: a value whose
    /// message it does not hold is dropped (the message left the context for good).
    pub fn resolve(&mut self, messages: &[Arc<Message>]) {
        if self.restored.is_empty() {
            return;
        }
        for m in messages {
            if self.by_id.contains_key(&m.id) {
                continue;
            }
            let key = m.fingerprint();
            if let Some(v) = self.restored.get(&key) {
                let v = v.clone();
                self.by_id.insert(m.id, (key, v));
            }
        }
        self.restored.clear();
    }

    /// What to save: each message's fingerprint and value, in fingerprint order (the same
    /// marks are the same file).
    pub fn saved(&self) -> Vec<(String, V)> {
        let mut out: Vec<(String, V)> = self
            .by_id
            .values()
            .cloned()
            .chain(self.restored.iter().map(|(k, v)| (k.clone(), v.clone())))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }

    /// Takes back what [`Marks::saved`] gave, for the messages of the next context
    /// ([`Marks::resolve`]).
    pub fn restore(&mut self, saved: Vec<(String, V)>) {
        self.by_id.clear();
        self.restored = saved.into_iter().collect();
    }
}

/// Whether `m` is a tool result still showing its output.
pub(crate) fn is_result(m: &Message) -> bool {
    m.role == Role::Tool && m.kind == MessageKind::Plain
}

/// The number of OpenHands events a message stands for: one per tool call of an assistant
/// message (OpenHands makes an action event of each call, the text riding on the first), else
/// one (a user message, a tool result, a closing message, a summary).
pub(crate) fn events(m: &Message) -> usize {
    if m.role == Role::Assistant {
        m.tool_calls.len().max(1)
    } else {
        1
    }
}

/// Where `messages` may be cut: `cuts[i]` is true when no tool call of `messages[..i]` waits
/// for its result in `messages[i..]` (OpenHands' batch and call-matching rules; the same rule
/// keeps every request valid for the provider APIs). `cuts` has `messages.len() + 1` entries.
pub(crate) fn cuts(messages: &[Arc<Message>]) -> Vec<bool> {
    let mut pending: Vec<&str> = Vec::new();
    let mut out = Vec::with_capacity(messages.len() + 1);
    out.push(true);
    for m in messages {
        for c in &m.tool_calls {
            pending.push(c.id.as_str());
        }
        if let Some(id) = m.tool_call_id.as_deref() {
            pending.retain(|p| *p != id);
        }
        out.push(pending.is_empty());
    }
    out
}

/// The first index at or after `i` where `messages` may be cut (`messages.len()` at the end).
pub(crate) fn next_cut(cuts: &[bool], i: usize) -> usize {
    (i..cuts.len()).find(|&j| cuts[j]).unwrap_or(cuts.len() - 1)
}

/// The message index holding OpenHands event number `event` (counted from 0 over
/// `messages`), or `messages.len()` past the end.
pub(crate) fn index_of_event(messages: &[Arc<Message>], event: usize) -> usize {
    let mut n = 0;
    for (i, m) in messages.iter().enumerate() {
        n += events(m);
        if n > event {
            return i;
        }
    }
    messages.len()
}

/// The first message of `messages` whose first event is event `event` or later, events
/// numbered as OpenHands numbers a view: the system prompt is event 0, so `messages[0]` starts
/// at event 1 (`messages.len()` past the end).
pub(crate) fn message_from_event(messages: &[Arc<Message>], event: usize) -> usize {
    let mut at = 1;
    for (i, m) in messages.iter().enumerate() {
        if at >= event {
            return i;
        }
        at += events(m);
    }
    messages.len()
}

/// Total OpenHands events of `messages`.
pub(crate) fn total_events(messages: &[Arc<Message>]) -> usize {
    messages.iter().map(|m| events(m)).sum()
}

/// The tool calls of `messages` in order, with the index of the assistant message holding each
/// and the index of its result (`None` when no result follows).
pub(crate) fn tool_uses(messages: &[Arc<Message>]) -> Vec<ToolUse> {
    let mut out: Vec<ToolUse> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        for c in &m.tool_calls {
            out.push(ToolUse {
                call: i,
                result: None,
                id: c.id.clone(),
                name: c.name.clone(),
            });
        }
        if let Some(id) = m.tool_call_id.as_deref() {
            if let Some(u) = out
                .iter_mut()
                .rev()
                .find(|u| u.id == id && u.result.is_none())
            {
                u.result = Some(i);
            }
        }
    }
    out
}

/// One tool call in a context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolUse {
    /// Index of the assistant message that made the call.
    pub(crate) call: usize,
    /// Index of its result.
    pub(crate) result: Option<usize>,
    /// The call's id.
    pub(crate) id: String,
    /// The tool's name.
    pub(crate) name: String,
}

/// The number of lines of a text, as Python's `str.splitlines` counts them.
pub(crate) fn lines(text: &str) -> usize {
    text.lines().count()
}

#[cfg(test)]
pub(crate) mod testing {
    //! Constructed contexts for the peers' tests.

    use std::sync::Arc;

    use harness_core::policy::{Plan, Policy};
    use harness_core::Context;
    use harness_core::{Message, MessageKind, ToolCall};
    use serde_json::json;

    /// A policy from its text, as the registry builds it (a 200,000-token window).
    pub(crate) fn policy(spec: &str) -> Box<dyn Policy> {
        crate::build(&crate::parse_policy(spec).unwrap(), 200_000).unwrap()
    }

    /// What the runner does on a `Plan::Compact`: the summary of the compaction input applied;
    /// returns that input.
    pub(crate) fn condense(p: &mut dyn Policy, ctx: &mut Context) -> Vec<Arc<Message>> {
        assert!(matches!(p.plan(ctx, 0), Plan::Compact { .. }));
        let input = p.compaction_input(ctx);
        let summary = Message::host(ctx.turn, "SUMMARY", MessageKind::Summary);
        p.apply_compaction(ctx, summary);
        input
    }

    /// One step of a constructed session.
    pub(crate) enum Step {
        /// A user message starting turn N.
        User(&'static str),
        /// An assistant message with these calls `(tool, output)`, then their results.
        Calls(Vec<(&'static str, String)>),
        /// A closing message.
        Close(&'static str),
        /// As `Calls`, the assistant message with thinking.
        Think(Vec<(&'static str, String)>),
    }

    /// Builds a context from steps; call ids are `c1`, `c2`, ... in order.
    pub(crate) fn context(steps: Vec<Step>) -> Context {
        let mut c = Context::default();
        let mut n = 0;
        for s in steps {
            push_step(&mut c, &mut n, s);
        }
        c
    }

    /// Appends one step to `c`; `n` counts the calls so far.
    fn push_step(c: &mut Context, n: &mut usize, s: Step) {
        let (calls, thinking) = match s {
            Step::User(text) => {
                c.turn += 1;
                c.push(Message::user(c.turn, text, None));
                return;
            }
            Step::Close(text) => {
                c.push(Message::assistant(c.turn, text, Vec::new()));
                return;
            }
            Step::Calls(calls) => (calls, false),
            Step::Think(calls) => (calls, true),
        };
        let mut tcs = Vec::new();
        for (tool, _) in &calls {
            *n += 1;
            tcs.push(ToolCall {
                id: format!("c{n}"),
                name: tool.to_string(),
                args: json!({"path": format!("f{n}")}),
            });
        }
        c.push(if thinking {
            Message::assistant_thinking(c.turn, format!("thinking before c{n}"), "", tcs.clone())
        } else {
            Message::assistant(c.turn, "", tcs.clone())
        });
        for (tc, (_, out)) in tcs.iter().zip(calls) {
            c.push(Message::tool_result(c.turn, tc, out, false));
        }
    }

    /// How [`host`] keeps its policy between requests.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Run {
        /// In memory all along.
        Kept,
        /// Out of memory before each request: a policy built again takes back the state the
        /// last one saved ([`Policy::saved_state`]), through its JSON text.
        Restored,
        /// The same without the state: the policy starts again.
        Restarted,
    }

    /// A host's run of the policy `spec` over a session that grows by `steps`, one request after
    /// each: the files the policy asks for are written (a path written before is refused, as the
    /// proxy's `write_new` refuses it), a compaction gets the summary `SUMMARY n` and the request
    /// is planned again. Unless the run is [`Run::Kept`], the context is read again before each
    /// request, every message with a new id (as a host reads it back from its files). Returns
    /// what each request did, one line each: the files asked for, the compaction's input and
    /// the messages sent, as JSON (without ids).
    pub fn host(spec: &str, steps: Vec<Step>, run: Run) -> Vec<String> {
        let as_json = |ms: &[Arc<Message>]| {
            serde_json::to_string(&ms.iter().map(|m| &**m).collect::<Vec<&Message>>()).unwrap()
        };
        let mut p = policy(spec);
        let mut c = Context::default();
        let mut n = 0;
        let mut written = std::collections::HashSet::new();
        let mut out = Vec::new();
        let mut summaries = 0;
        for s in steps {
            push_step(&mut c, &mut n, s);
            if run != Run::Kept {
                let state = p.saved_state().map(|v| v.to_string());
                p = policy(spec);
                if let (Run::Restored, Some(text)) = (run, state) {
                    p.restore_state(&serde_json::from_str(&text).unwrap());
                }
                c.messages = c
                    .messages
                    .iter()
                    .map(|m| {
                        Arc::new(
                            serde_json::from_str(&serde_json::to_string(&**m).unwrap()).unwrap(),
                        )
                    })
                    .collect();
            }
            let mut line = String::new();
            for o in p.offloads(&c) {
                let new = written.insert(o.path.clone());
                line.push_str(&format!("file {} {} ({new}); ", o.path, o.bytes.len()));
                p.offloaded(&o.path, new);
            }
            let mut compacted = false;
            loop {
                match p.plan(&c, 100) {
                    Plan::Send { messages, action } => {
                        line.push_str(&format!("send {action:?} {}", as_json(&messages)));
                        break;
                    }
                    Plan::Compact { .. } if compacted => {
                        line.push_str("compaction did not fit");
                        break;
                    }
                    Plan::Compact { emergency } => {
                        let input = p.compaction_input(&c);
                        line.push_str(&format!(
                            "compact {emergency} {:?} {}; ",
                            p.compaction_instructions(),
                            as_json(&input)
                        ));
                        summaries += 1;
                        let summary = Message::host(
                            c.turn,
                            format!("SUMMARY {summaries}"),
                            MessageKind::Summary,
                        );
                        p.apply_compaction(&mut c, summary);
                        compacted = true;
                    }
                }
            }
            out.push(line);
        }
        out
    }

    /// How many requests of a [`host`] run did `what` (a word of their lines).
    pub fn count(run: &[String], what: &str) -> usize {
        run.iter().filter(|l| l.contains(what)).count()
    }

    /// `spec`'s runs over `steps` sent the same with the state restored before each request as
    /// kept in memory, and something else when the policy started again: what the state carries
    /// matters. Returns the kept run.
    pub fn same_after_restores(spec: &str, steps: impl Fn() -> Vec<Step>) -> Vec<String> {
        let kept = host(spec, steps(), Run::Kept);
        let restored = host(spec, steps(), Run::Restored);
        for (i, (a, b)) in kept.iter().zip(&restored).enumerate() {
            assert_eq!(a, b, "{spec}: request {i} differs after a restore");
        }
        assert_eq!(kept.len(), restored.len());
        assert_ne!(
            host(spec, steps(), Run::Restarted),
            kept,
            "{spec}: a policy started again sends the same: the test shows nothing"
        );
        kept
    }

    /// The messages a plan sends (panics on a compaction).
    pub(crate) fn sent(plan: Plan) -> Vec<Arc<Message>> {
        match plan {
            Plan::Send { messages, .. } => messages,
            other => panic!("expected messages to send, got {other:?}"),
        }
    }

    /// One letter per message: `u` user, `a` assistant with calls, `c` closing, `r` a visible
    /// result, `x` a cleared one, `s` a host message (summary).
    pub(crate) fn shape(messages: &[Arc<Message>]) -> String {
        use harness_core::{MessageKind, Role};
        messages
            .iter()
            .map(|m| match (m.role, &m.kind) {
                (Role::User, MessageKind::Plain) => 'u',
                (Role::User, _) => 's',
                (Role::Assistant, _) if m.tool_calls.is_empty() => 'c',
                (Role::Assistant, _) => 'a',
                (Role::Tool, MessageKind::Cleared) => 'x',
                (Role::Tool, _) => 'r',
            })
            .collect()
    }

    /// A tool output of about `tokens` o200k tokens (each ` w1234` is about two tokens).
    pub(crate) fn output(tokens: usize) -> String {
        (0..tokens / 2).map(|i| format!(" w{i}")).collect()
    }
}
