//! Builds an [`ImportedSession`] message by message; every importer feeds one.
//!
//! The builder numbers turns (a human prompt opens the next turn; everything else carries the
//! turn in progress, 0 before the first prompt), records one request per assistant message, and
//! holds tool results back until the next non-result message so that the results answering one
//! response come out in the order of its calls whatever order the file wrote them in.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use harness_core::Usage;
use harness_core::{Message, MessageKind, ToolCall};
use serde_json::{Map, Value};

use crate::session::{
    EventKind, Format, HumanTurn, ImportedSession, RecordedRequest, SessionEvent, Warning,
};

pub(crate) struct Builder {
    s: ImportedSession,
    turn: u32,
    /// Every call seen so far: id → (the newest call with that id, its order of appearance).
    calls: HashMap<String, (ToolCall, usize)>,
    answered: HashSet<String>,
    next_order: usize,
    pending: Vec<(usize, Arc<Message>, Option<i64>)>,
    /// The timestamp of the record read last: the next message's.
    last_ms: Option<i64>,
    context_start: usize,
    /// The model named last: the next requests' model.
    model: Option<String>,
}

impl Builder {
    pub(crate) fn new(id: impl Into<String>, format: Format, source: &str) -> Builder {
        Builder {
            s: ImportedSession {
                id: id.into(),
                format,
                source: source.to_string(),
                parent: None,
                system: None,
                messages: Vec::new(),
                requests: Vec::new(),
                events: Vec::new(),
                human_turns: Vec::new(),
                dropped_prefix: 0,
                warnings: Vec::new(),
                started_ms: None,
                ended_ms: None,
                cwd: None,
                message_ms: Vec::new(),
            },
            last_ms: None,
            model: None,
            turn: 0,
            calls: HashMap::new(),
            answered: HashSet::new(),
            next_order: 0,
            pending: Vec::new(),
            context_start: 0,
        }
    }

    pub(crate) fn set_parent(&mut self, parent: Option<String>) {
        self.s.parent = parent;
    }

    pub(crate) fn set_system(&mut self, system: Option<String>) {
        self.s.system = system.filter(|t| !t.is_empty());
    }

    /// A record's timestamp (RFC 3339): widens the session's start and end. Timestamps that do
    /// not parse are passed over.
    pub(crate) fn stamp(&mut self, timestamp: &str) {
        let Some(t) = crate::json::timestamp_ms(timestamp) else {
            return;
        };
        self.last_ms = Some(t);
        self.s.started_ms = Some(self.s.started_ms.map_or(t, |s| s.min(t)));
        self.s.ended_ms = Some(self.s.ended_ms.map_or(t, |e| e.max(t)));
    }

    /// The working folder, when none was recorded before.
    pub(crate) fn set_cwd(&mut self, cwd: &str) {
        if self.s.cwd.is_none() && !cwd.is_empty() {
            self.s.cwd = Some(cwd.to_string());
        }
    }

    /// The model of the requests from here on.
    pub(crate) fn set_model(&mut self, model: Option<&str>) {
        if let Some(m) = model.filter(|m| !m.is_empty()) {
            self.model = Some(m.to_string());
        }
    }

    /// The model named last, if any.
    pub(crate) fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    pub(crate) fn set_dropped_prefix(&mut self, n: usize) {
        self.s.dropped_prefix = n;
    }

    pub(crate) fn warn(&mut self, line: usize, message: impl Into<String>) {
        self.s.warnings.push(Warning {
            file: self.s.source.clone(),
            line,
            message: message.into(),
        });
    }

    pub(crate) fn add_warnings(&mut self, w: impl IntoIterator<Item = Warning>) {
        self.s.warnings.extend(w);
    }

    /// Continues the turn numbering after `n` turns (a fork continues its parent's turns).
    pub(crate) fn continue_turns(&mut self, n: u32) {
        self.turn = self.turn.max(n);
    }

    /// Number of human turns so far.
    pub(crate) fn turns(&self) -> u32 {
        self.turn
    }

    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        self.pending.sort_by_key(|(order, _, _)| *order);
        for (_, m, ms) in std::mem::take(&mut self.pending) {
            self.s.messages.push(m);
            self.s.message_ms.push(ms);
        }
    }

    fn push(&mut self, m: Arc<Message>) -> usize {
        self.flush();
        self.s.messages.push(m);
        self.s.message_ms.push(self.last_ms);
        self.s.messages.len() - 1
    }

    /// A human prompt: opens the next turn. `text` is what the model read, `prompt` the words
    /// recorded in [`HumanTurn::text`].
    pub(crate) fn human(&mut self, text: String, prompt: String, id: Option<String>) {
        self.turn += 1;
        let turn = self.turn;
        let message = self.push(Message::user(turn, text, None));
        self.s.human_turns.push(HumanTurn {
            turn,
            message,
            id,
            text: prompt,
        });
    }

    /// A user-role message that is not a prompt (meta records, command wrappers, notices,
    /// observations of agents that send them as user messages).
    pub(crate) fn user(&mut self, text: String) {
        let turn = self.turn;
        self.push(Message::user(turn, text, None));
    }

    /// A compaction point: the requests after it read from here on.
    pub(crate) fn compaction(
        &mut self,
        kind: EventKind,
        trigger: Option<String>,
        pre_tokens: Option<u64>,
    ) {
        self.flush();
        let message = self.s.messages.len();
        self.context_start = message;
        self.s.events.push(SessionEvent {
            kind,
            message,
            trigger,
            pre_tokens,
            opaque_summary_bytes: None,
        });
    }

    /// Records that the last compaction point's summary is held only encrypted, `bytes` long.
    pub(crate) fn opaque_summary(&mut self, bytes: u64) {
        if let Some(e) = self.s.events.last_mut() {
            e.opaque_summary_bytes = Some(e.opaque_summary_bytes.unwrap_or(0) + bytes);
        }
    }

    /// A compaction summary message. When no compaction point was recorded just before it,
    /// it is one (`kind`).
    pub(crate) fn summary(&mut self, text: String, kind: EventKind) {
        self.flush();
        let at = self.s.messages.len();
        let marked = self.s.events.last().is_some_and(|e| e.message == at);
        if !marked {
            self.compaction(kind, None, None);
        } else if kind == EventKind::CompactSummary {
            self.s.events.push(SessionEvent {
                kind,
                message: at,
                trigger: None,
                pre_tokens: None,
                opaque_summary_bytes: None,
            });
        }
        let turn = self.turn;
        self.push(Message::host(turn, text, MessageKind::Summary));
    }

    /// An assistant message: one model call. Returns the request's index.
    pub(crate) fn assistant(
        &mut self,
        text: String,
        calls: Vec<ToolCall>,
        response_id: Option<String>,
        usage: Option<Usage>,
    ) -> usize {
        self.assistant_thinking(text, None, calls, response_id, usage)
    }

    /// An assistant message with the thinking it carries into later requests, if any.
    pub(crate) fn assistant_thinking(
        &mut self,
        text: String,
        thinking: Option<String>,
        calls: Vec<ToolCall>,
        response_id: Option<String>,
        usage: Option<Usage>,
    ) -> usize {
        for c in &calls {
            // A reused id (some agents repeat them) answers the newest call.
            self.next_order += 1;
            self.calls
                .insert(c.id.clone(), (c.clone(), self.next_order));
            self.answered.remove(&c.id);
        }
        let turn = self.turn;
        let usage = self.plausible(usage);
        let message = self.push(match thinking {
            Some(t) => Message::assistant_thinking(turn, t, text, calls),
            None => Message::assistant(turn, text, calls),
        });
        self.s.requests.push(RecordedRequest {
            message,
            context: message,
            context_start: self.context_start,
            response_id,
            usage,
            model: self.model.clone(),
        });
        self.s.requests.len() - 1
    }

    /// A summary message after a compaction point already recorded.
    pub(crate) fn summary_message(&mut self, text: String) {
        let turn = self.turn;
        self.push(Message::host(turn, text, MessageKind::Summary));
    }

    /// An assistant message that is not a model call of this session (a compaction's
    /// replacement history re-sends earlier answers).
    pub(crate) fn assistant_without_request(&mut self, text: String) {
        let turn = self.turn;
        self.push(Message::assistant(turn, text, Vec::new()));
    }

    /// A tool result answering `call_id`. A second result for the same call is skipped; a result
    /// for a call never made is kept, answering a call named `unknown`.
    pub(crate) fn tool_result(&mut self, line: usize, call_id: &str, text: String, is_error: bool) {
        if !self.answered.insert(call_id.to_string()) {
            self.warn(
                line,
                format!("skipped: a second result for tool call `{call_id}`"),
            );
            return;
        }
        let (call, order) = match self.calls.get(call_id) {
            Some((c, o)) => (c.clone(), *o),
            None => {
                self.warn(line, format!("tool result for unknown call `{call_id}` kept as a result of tool `unknown`"));
                let c = ToolCall {
                    id: call_id.to_string(),
                    name: "unknown".into(),
                    args: Value::Object(Map::new()),
                };
                (c, usize::MAX)
            }
        };
        let turn = self.turn;
        let m = Message::tool_result(turn, &call, text, is_error);
        self.pending.push((order, m, self.last_ms));
    }

    /// Sets the usage of request `i` (no-op when out of range).
    pub(crate) fn set_usage(&mut self, i: usize, usage: Usage) {
        let usage = self.plausible(Some(usage));
        if let Some(r) = self.s.requests.get_mut(i) {
            r.usage = usage;
        }
    }

    /// `usage` unless a figure is above any real context window: then a warning, and no usage
    /// (the request is counted as if none was recorded).
    fn plausible(&mut self, usage: Option<Usage>) -> Option<Usage> {
        let Some((field, n)) = usage.as_ref().and_then(Usage::implausible) else {
            return usage;
        };
        self.warn(
            0,
            format!(
                "not counted: a recorded usage says {field} = {n}, more than any real context window ({} tokens)",
                harness_core::MAX_PLAUSIBLE_TOKENS
            ),
        );
        None
    }

    /// Number of requests so far.
    pub(crate) fn request_count(&self) -> usize {
        self.s.requests.len()
    }

    /// Whether request `i` has usage.
    pub(crate) fn has_usage(&self, i: usize) -> bool {
        self.s.requests.get(i).is_some_and(|r| r.usage.is_some())
    }

    /// Whether anything was recorded (messages or requests).
    pub(crate) fn is_empty(&self) -> bool {
        self.s.messages.is_empty() && self.pending.is_empty()
    }

    pub(crate) fn finish(mut self) -> ImportedSession {
        self.flush();
        if self.s.message_ms.iter().all(Option::is_none) {
            self.s.message_ms.clear();
        }
        self.s
    }
}
