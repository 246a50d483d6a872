//! Codex rollout JSONL, current and legacy.
//!
//! Current lines are `{timestamp, type, payload}` with `type` one of `session_meta`,
//! `response_item`, `compacted`, `turn_context`, `event_msg` (openai/codex
//! `codex-rs/protocol/src/protocol.rs`, `RolloutItem`). Legacy files start with a bare
//! `{id, timestamp, instructions}` line and continue with bare response items (and
//! `{"record_type": "state"}` markers, skipped).
//!
//! Response items (`codex-rs/protocol/src/models.rs`, `ResponseItem`):
//!
//! - `message`: role `user` is a human turn unless it is injected context (`<environment_context>`,
//!   `<user_instructions>`, `# AGENTS.md instructions for`, `<skill>`, `<user_shell_command>`,
//!   `<turn_aborted>`, ...), which is kept as a user message of the turn in progress, as are
//!   `developer` and `system` messages; role `assistant` (`output_text`) is model text;
//! - `function_call` {name, arguments (a JSON string, parsed; kept as a string when it is not
//!   JSON), call_id}, `custom_tool_call` {name, input, call_id} (arguments `{"input": ...}`),
//!   `local_shell_call` {call_id, action} (tool `local_shell`), `web_search_call` (tool
//!   `web_search`, no result) are calls;
//! - `function_call_output` / `custom_tool_call_output` {call_id, output} are results joined to
//!   their call on `call_id` (output a string, `{content, success}`, or content items; `success:
//!   false` marks an error);
//! - `reasoning` belongs to the response but its text is not kept (it is encrypted or a summary).
//!
//! The assistant-side items between two non-assistant items (or two `token_count` rows) are one
//! model response: one assistant message and one request. `event_msg` `token_count` rows give
//! the request's usage (`info.last_token_usage`, or the difference of `total_token_usage`);
//! Codex repeats identical rows (rate-limit updates), and a row whose `total_token_usage` equals
//! the previous row's is skipped. Usage maps `input_tokens - cached_input_tokens` to uncached
//! input, `cached_input_tokens` to cache reads, `output_tokens` to output.
//!
//! `turn_context` {model, cwd} names the model of the requests after it; `session_meta.cwd` is
//! the session's working folder; the lines' `timestamp`s give its start and end (the legacy
//! meta line's `timestamp` its start).
//!
//! `compacted` {message, replacement_history} is a compaction point: the replacement history
//! (when present) is added as non-turn messages, then the message as the summary; requests after
//! it read from there on. A `compaction` item in the replacement history is the summary held
//! encrypted: its size is kept ([`crate::SessionEvent::opaque_summary_bytes`]), its words cannot
//! be. An `event_msg` `context_compacted` with no `compacted` item before it (since the last
//! response item) is a compaction point of its own.
//!
//! Forks: `session_meta.forked_from_id` (or `parent_thread_id`, or
//! `source.subagent.thread_spawn.parent_thread_id`) sets `parent`. A fork's file repeats the
//! parent's rollout after its own `session_meta`, starting with the parent's `session_meta`.
//! Codex writes that replay in one burst when the fork is created, so the importer drops the
//! lines from the second `session_meta` while their timestamps stay within
//! `REPLAY_WINDOW_MS` of it, and records their message count in
//! [`crate::ImportedSession::dropped_prefix`]. When the parent's file is imported too,
//! [`crate::link_forks`] drops a replayed prefix exactly (by comparing messages).

use harness_core::ToolCall;
use harness_core::Usage;
use serde_json::{Map, Value};

use crate::builder::Builder;
use crate::error::ImportError;
use crate::json::{self, json_lines, push_part, str_field, Line};
use crate::session::{EventKind, Format, ImportedSession, Warning};

/// How long after a replayed parent `session_meta` lines still count as the fork's replay.
pub(crate) const REPLAY_WINDOW_MS: i64 = 1000;

const ROLLOUT_TYPES: &[&str] = &[
    "session_meta",
    "response_item",
    "compacted",
    "turn_context",
    "event_msg",
];

const ITEM_TYPES: &[&str] = &[
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
];

/// Prefixes of user messages Codex injects (not typed by the user).
const CONTEXTUAL: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions for",
    "<INSTRUCTIONS>",
    "<skill>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<subagent_notification>",
    "<permissions instructions>",
];

/// Whether a line looks like a current rollout line.
pub(crate) fn looks_like(v: &Map<String, Value>) -> bool {
    str_field(v, "type").is_some_and(|t| ROLLOUT_TYPES.contains(&t)) && v.contains_key("payload")
}

/// Whether a line looks like a legacy rollout line (its meta line, a state marker or a bare
/// response item).
pub(crate) fn looks_like_legacy(v: &Map<String, Value>) -> bool {
    if v.contains_key("payload") {
        return false;
    }
    if v.contains_key("record_type") {
        return true;
    }
    match str_field(v, "type") {
        Some(t) => {
            ITEM_TYPES.contains(&t)
                && (v.contains_key("role")
                    || v.contains_key("call_id")
                    || v.contains_key("summary"))
        }
        None => {
            str_field(v, "id").is_some()
                && str_field(v, "timestamp").is_some()
                && !v.contains_key("sessionId")
        }
    }
}

/// The conversation as it is read: the builder plus the response being assembled.
struct Conv {
    b: Builder,
    open: bool,
    text: String,
    calls: Vec<ToolCall>,
    web_searches: usize,
    last_total: Option<Value>,
    /// A `compacted` item was read and no response item since: its `context_compacted` event
    /// is the same compaction.
    compacted: bool,
}

impl Conv {
    fn new(b: Builder) -> Conv {
        Conv {
            b,
            open: false,
            text: String::new(),
            calls: Vec::new(),
            web_searches: 0,
            last_total: None,
            compacted: false,
        }
    }

    /// Closes the last response and returns the session.
    fn finish(mut self) -> ImportedSession {
        self.close();
        self.b.finish()
    }

    /// Ends the response being assembled: one assistant message, one request.
    fn close(&mut self) {
        if !self.open {
            return;
        }
        self.open = false;
        let text = std::mem::take(&mut self.text);
        let calls = std::mem::take(&mut self.calls);
        self.b.assistant(text, calls, None, None);
    }

    fn item(&mut self, line: usize, p: &Map<String, Value>) {
        let t = str_field(p, "type").unwrap_or("");
        self.compacted = false;
        match t {
            "message" => {
                let role = str_field(p, "role").unwrap_or("");
                let text = json::content_text(p.get("content").unwrap_or(&Value::Null));
                match role {
                    "assistant" => {
                        self.open = true;
                        push_part(&mut self.text, &text);
                    }
                    "user" => {
                        self.close();
                        let trimmed = text.trim_start();
                        if CONTEXTUAL.iter().any(|c| trimmed.starts_with(c)) || trimmed.is_empty() {
                            self.b.user(text);
                        } else {
                            let id = str_field(p, "id").map(str::to_string);
                            self.b.human(text.clone(), text, id);
                        }
                    }
                    _ => {
                        self.close();
                        self.b.user(text);
                    }
                }
            }
            "reasoning" => self.open = true,
            "function_call" => {
                let args = match str_field(p, "arguments") {
                    Some(a) => {
                        serde_json::from_str(a).unwrap_or_else(|_| Value::String(a.to_string()))
                    }
                    None => p
                        .get("arguments")
                        .cloned()
                        .unwrap_or(Value::Object(Map::new())),
                };
                self.call(line, p, args);
            }
            "custom_tool_call" => {
                let mut args = Map::new();
                args.insert(
                    "input".into(),
                    p.get("input").cloned().unwrap_or(Value::Null),
                );
                self.call(line, p, Value::Object(args));
            }
            "local_shell_call" => {
                let args = p.get("action").cloned().unwrap_or(Value::Null);
                let id = str_field(p, "call_id")
                    .or_else(|| str_field(p, "id"))
                    .unwrap_or("")
                    .to_string();
                self.push_call(line, id, "local_shell".into(), args);
            }
            "web_search_call" => {
                self.web_searches += 1;
                let id = str_field(p, "id")
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("web_search-{}", self.web_searches));
                let args = p.get("action").cloned().unwrap_or(Value::Null);
                self.push_call(line, id, "web_search".into(), args);
            }
            "function_call_output" | "custom_tool_call_output" => {
                self.close();
                let call_id = str_field(p, "call_id").unwrap_or("");
                let (text, is_error) = output_text(p.get("output").unwrap_or(&Value::Null));
                self.b.tool_result(line, call_id, text, is_error);
            }
            _ => {} // ghost_snapshot, compaction, other: not conversation content
        }
    }

    fn call(&mut self, line: usize, p: &Map<String, Value>, args: Value) {
        let id = str_field(p, "call_id")
            .or_else(|| str_field(p, "id"))
            .unwrap_or("")
            .to_string();
        let name = str_field(p, "name").unwrap_or("").to_string();
        self.push_call(line, id, name, args);
    }

    fn push_call(&mut self, line: usize, id: String, name: String, args: Value) {
        if id.is_empty() {
            self.b.warn(
                line,
                format!("a `{name}` call without `call_id`: its result cannot be joined"),
            );
        }
        self.open = true;
        self.calls.push(ToolCall { id, name, args });
    }

    /// A `compacted` item.
    fn compacted(&mut self, p: &Map<String, Value>) {
        self.close();
        self.compacted = true;
        self.b.compaction(EventKind::Compacted, None, None);
        if let Some(Value::Array(items)) = p.get("replacement_history") {
            for it in items {
                let Some(o) = it.as_object() else { continue };
                if str_field(o, "type") == Some("compaction") {
                    // The summary, encrypted: there is one, its words cannot be read.
                    let bytes = str_field(o, "encrypted_content").map_or(0, str::len);
                    self.b.opaque_summary(bytes as u64);
                    continue;
                }
                if str_field(o, "type") != Some("message") {
                    continue;
                }
                let text = json::content_text(o.get("content").unwrap_or(&Value::Null));
                if str_field(o, "role") == Some("assistant") {
                    self.b.assistant_without_request(text);
                } else {
                    self.b.user(text);
                }
            }
        }
        let message = str_field(p, "message").unwrap_or("");
        if !message.is_empty() {
            self.b.summary_message(message.to_string());
        }
    }

    /// A `token_count` event.
    fn token_count(&mut self, p: &Map<String, Value>) {
        let Some(info) = p.get("info").filter(|i| !i.is_null()) else {
            return;
        };
        let total = info.get("total_token_usage").cloned();
        if total.is_some() && total == self.last_total {
            return; // a repeated row
        }
        let last = info.get("last_token_usage").filter(|l| !l.is_null());
        let usage = match (last, &total, &self.last_total) {
            (Some(l), _, _) => codex_usage(l),
            (None, Some(t), Some(prev)) => diff_usage(t, prev),
            (None, Some(t), None) => codex_usage(t),
            (None, None, _) => return,
        };
        self.last_total = total;
        self.close();
        let n = self.b.request_count();
        if n > 0 && !self.b.has_usage(n - 1) {
            self.b.set_usage(n - 1, usage);
        }
    }
}

/// Codex `TokenUsage` → core usage.
fn codex_usage(v: &Value) -> Usage {
    let input = json::u64_field(v, "input_tokens");
    let cached = json::u64_field(v, "cached_input_tokens");
    Usage {
        input_tokens: input.saturating_sub(cached),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
        output_tokens: json::u64_field(v, "output_tokens"),
    }
}

/// The usage between two cumulative rows.
fn diff_usage(total: &Value, prev: &Value) -> Usage {
    let d = |k: &str| json::u64_field(total, k).saturating_sub(json::u64_field(prev, k));
    let input = d("input_tokens");
    let cached = d("cached_input_tokens");
    Usage {
        input_tokens: input.saturating_sub(cached),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
        output_tokens: d("output_tokens"),
    }
}

/// The text of a tool output and whether it is an error.
fn output_text(v: &Value) -> (String, bool) {
    match v {
        Value::String(t) => (t.clone(), false),
        Value::Object(o) => {
            let ok = o.get("success").and_then(Value::as_bool).unwrap_or(true);
            let text = match o.get("content") {
                Some(c) => json::content_text(c),
                None => json::content_text(o.get("output").unwrap_or(&Value::Null)),
            };
            (text, !ok)
        }
        Value::Array(_) => (json::content_text(v), false),
        Value::Null => (String::new(), false),
        other => (other.to_string(), false),
    }
}

/// What a current-format rollout's bytes tell before it is imported: enough for a session
/// filter to decide whether the file, or a fork's parent, is needed
/// ([`crate::fs::Prefilter`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RolloutHead {
    /// The first `session_meta`'s id (the session's own).
    pub id: Option<String>,
    /// The sessions it may fork from: the one its first `session_meta` names, and those whose
    /// `session_meta` it replays (later `session_meta` lines with another id).
    pub parents: Vec<String>,
    /// The earliest and latest line `timestamp` (ms since the epoch): `None` unless every
    /// non-empty line begins with `{"timestamp":"…"` that reads as a time, so that no line's
    /// time can be missed (the importer's start and end lie between them).
    pub span_ms: Option<(i64, i64)>,
}

/// Reads a rollout's [`RolloutHead`]: a byte scan of every line's leading timestamp, JSON read
/// only of its `session_meta` lines.
pub fn rollout_head(bytes: &[u8]) -> RolloutHead {
    let mut head = RolloutHead::default();
    let mut span: Option<(i64, i64)> = None;
    let mut every_line_timed = true;
    for line in bytes.split(|&b| b == b'\n') {
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        const META: &[u8] = b"session_meta";
        let mentions_meta = || line.windows(META.len()).any(|w| w == META);
        let meta = match leading_time(line) {
            Some((t, rest)) => {
                span = Some(span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
                // `"type"` right after the time (as Codex writes it), else looked for.
                leading_type(rest).map_or_else(mentions_meta, |t| t == META)
            }
            None => {
                every_line_timed = false;
                mentions_meta()
            }
        };
        if !meta {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let Some(meta) = v.get("payload").and_then(Value::as_object) else {
            continue;
        };
        let id = str_field(meta, "id").map(str::to_string);
        match (&head.id, id) {
            (None, Some(id)) => {
                head.parents.extend(parent_of(meta));
                head.id = Some(id);
            }
            (Some(own), Some(id)) if *own != id && !head.parents.contains(&id) => {
                head.parents.push(id);
            }
            _ => {}
        }
    }
    head.span_ms = span.filter(|_| every_line_timed);
    head
}

/// `bytes` after `token`, whitespace before it skipped.
fn after<'a>(bytes: &'a [u8], token: &[u8]) -> Option<&'a [u8]> {
    bytes.trim_ascii_start().strip_prefix(token)
}

/// A JSON string's contents at the start of `bytes` (whitespace first skipped; no escapes),
/// and what follows it.
fn string_at(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let rest = after(bytes, b"\"")?;
    let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    (rest[end] == b'"').then(|| (&rest[..end], &rest[end + 1..]))
}

/// A line that begins `{"timestamp": "…"`: the time, and the rest of the line.
fn leading_time(line: &[u8]) -> Option<(i64, &[u8])> {
    let rest = after(after(after(line, b"{")?, b"\"timestamp\"")?, b":")?;
    let (t, rest) = string_at(rest)?;
    Some((json::timestamp_ms(std::str::from_utf8(t).ok()?)?, rest))
}

/// The `"type": "…"` that follows the timestamp, when it does.
fn leading_type(rest: &[u8]) -> Option<&[u8]> {
    let rest = after(after(after(rest, b",")?, b"\"type\"")?, b":")?;
    string_at(rest).map(|(t, _)| t)
}

/// A legacy rollout's id: its first line's `id`.
pub(crate) fn legacy_id(bytes: &[u8]) -> Option<String> {
    let first = bytes
        .split(|&b| b == b'\n')
        .find(|l| !l.trim_ascii().is_empty())?;
    let v: Value = serde_json::from_slice(first).ok()?;
    str_field(v.as_object()?, "id").map(str::to_string)
}

/// The parent session named by a `session_meta` payload.
fn parent_of(meta: &Map<String, Value>) -> Option<String> {
    if let Some(p) = str_field(meta, "forked_from_id")
        .or_else(|| str_field(meta, "forked_from"))
        .or_else(|| str_field(meta, "parent_thread_id"))
    {
        return Some(p.to_string());
    }
    meta.get("source")
        .and_then(|src| src.get("subagent"))
        .and_then(|sa| sa.get("thread_spawn"))
        .and_then(|ts| ts.get("parent_thread_id"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The instructions a `session_meta` payload records.
fn instructions_of(meta: &Map<String, Value>) -> Option<String> {
    match meta.get("base_instructions") {
        Some(Value::Object(o)) => str_field(o, "text").map(str::to_string),
        Some(Value::String(t)) => Some(t.clone()),
        _ => str_field(meta, "instructions").map(str::to_string),
    }
}

/// Imports a current-format rollout.
pub(crate) fn import(file: &str, text: &str) -> Result<Vec<ImportedSession>, ImportError> {
    let (lines, warnings) = json_lines(file, text)?;
    if !lines.iter().any(|l| looks_like(&l.v)) {
        return Err(ImportError::WrongShape {
            file: file.to_string(),
            format: Format::Codex,
            detail: "no `{timestamp, type, payload}` rollout line".into(),
        });
    }
    let meta_line = lines
        .iter()
        .find(|l| str_field(&l.v, "type") == Some("session_meta"));
    let meta = meta_line
        .and_then(|l| l.v.get("payload"))
        .and_then(Value::as_object);
    let own_id = meta.and_then(|m| str_field(m, "id")).map(str::to_string);
    let id = own_id
        .clone()
        .unwrap_or_else(|| crate::claude_code::file_stem(file));
    let mut b = Builder::new(id, Format::Codex, file);
    b.add_warnings(warnings);
    b.set_parent(meta.and_then(parent_of));
    b.set_system(meta.and_then(instructions_of));
    let mut conv = Conv::new(b);
    // The replay of a parent's rollout inside a fork: (its start time, a throwaway conversation
    // that reads it to count its messages).
    let mut replay: Option<(Option<i64>, Conv)> = None;
    let mut dropped = 0;
    let mut seen_meta = false;
    if let Some(m) = meta {
        if let Some(cwd) = str_field(m, "cwd") {
            conv.b.set_cwd(cwd);
        }
    }
    for l in &lines {
        let ts = str_field(&l.v, "timestamp").and_then(json::timestamp_ms);
        if let Some((start, r)) = replay.as_mut() {
            let inside = match (*start, ts) {
                (Some(a), Some(t)) => t - a <= REPLAY_WINDOW_MS,
                _ => true,
            };
            if inside {
                if str_field(&l.v, "type") != Some("session_meta") {
                    feed(r, l);
                }
                continue;
            }
            if let Some((_, r)) = replay.take() {
                conv.b.continue_turns(r.b.turns());
                if conv.b.model().is_none() {
                    conv.b.set_model(r.b.model());
                }
                dropped += r.finish().messages.len();
            }
        }
        if let Some(t) = str_field(&l.v, "timestamp") {
            conv.b.stamp(t);
        }
        if str_field(&l.v, "type") == Some("session_meta") {
            let id =
                l.v.get("payload")
                    .and_then(|p| p.get("id"))
                    .and_then(Value::as_str);
            if seen_meta && id.is_some() && id != own_id.as_deref() {
                replay = Some((ts, Conv::new(Builder::new("replay", Format::Codex, file))));
            }
            seen_meta = true;
            continue;
        }
        feed(&mut conv, l);
    }
    if let Some((_, r)) = replay.take() {
        conv.b.continue_turns(r.b.turns());
        if conv.b.model().is_none() {
            conv.b.set_model(r.b.model());
        }
        dropped += r.finish().messages.len();
    }
    conv.b.set_dropped_prefix(dropped);
    Ok(vec![conv.finish()])
}

/// One rollout line other than `session_meta`.
fn feed(conv: &mut Conv, l: &Line) {
    let Some(t) = str_field(&l.v, "type") else {
        conv.b.warn(l.no, "skipped: a line without `type`");
        return;
    };
    let Some(p) = l.v.get("payload").and_then(Value::as_object) else {
        if ROLLOUT_TYPES.contains(&t) {
            conv.b.warn(
                l.no,
                format!("skipped: a `{t}` line without an object `payload`"),
            );
        } else {
            conv.b
                .warn(l.no, format!("skipped: unknown line type `{t}`"));
        }
        return;
    };
    match t {
        "response_item" => conv.item(l.no, p),
        "compacted" => conv.compacted(p),
        "turn_context" => {
            conv.close();
            conv.b.set_model(str_field(p, "model"));
            if let Some(cwd) = str_field(p, "cwd") {
                conv.b.set_cwd(cwd);
            }
        }
        "event_msg" if str_field(p, "type") == Some("token_count") => conv.token_count(p),
        // The event that goes with a `compacted` item; alone (no item written), the compaction
        // point itself.
        "event_msg" if str_field(p, "type") == Some("context_compacted") && !conv.compacted => {
            conv.close();
            conv.compacted = true;
            conv.b.compaction(EventKind::Compacted, None, None);
        }
        _ => {} // other events duplicate response items; newer item types carry nothing we read
    }
}

/// Imports a legacy rollout (bare items).
pub(crate) fn import_legacy(file: &str, text: &str) -> Result<Vec<ImportedSession>, ImportError> {
    let (lines, warnings) = json_lines(file, text)?;
    if !lines.iter().any(|l| looks_like_legacy(&l.v)) {
        return Err(ImportError::WrongShape {
            file: file.to_string(),
            format: Format::CodexLegacy,
            detail: "no `{id, timestamp}` meta line and no bare response item".into(),
        });
    }
    let meta = lines
        .iter()
        .find(|l| str_field(&l.v, "type").is_none() && !l.v.contains_key("record_type"));
    let id = meta
        .and_then(|m| str_field(&m.v, "id"))
        .map(str::to_string)
        .unwrap_or_else(|| crate::claude_code::file_stem(file));
    let mut b = Builder::new(id, Format::CodexLegacy, file);
    b.add_warnings(warnings);
    b.set_system(meta.and_then(|m| instructions_of(&m.v)));
    if let Some(t) = meta.and_then(|m| str_field(&m.v, "timestamp")) {
        b.stamp(t);
    }
    let mut conv = Conv::new(b);
    let mut extra: Vec<Warning> = Vec::new();
    for l in &lines {
        if l.v.contains_key("record_type") || meta.is_some_and(|m| m.no == l.no) {
            continue;
        }
        match str_field(&l.v, "type") {
            Some(_) => conv.item(l.no, &l.v),
            None => extra.push(Warning {
                file: file.to_string(),
                line: l.no,
                message: "skipped: a line without `type`".into(),
            }),
        }
    }
    conv.b.add_warnings(extra);
    Ok(vec![conv.finish()])
}
