//! A model's answer in neutral form, read from and written to each API's JSON.

use harness_core::ToolCall;
use harness_core::{Response, Usage};
use serde_json::Value;

use crate::{anthropic, chat, responses, Api, WireError};

/// One answer of a model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Answer {
    /// The answer's id (`msg_…`, `chatcmpl-…`, `resp_…`).
    pub(crate) id: String,
    /// The model that answered.
    pub(crate) model: String,
    /// Its text parts, joined.
    pub text: String,
    /// Its tool calls, in order.
    pub calls: Vec<ToolCall>,
    /// Usage as the provider reported it.
    pub usage: Option<Usage>,
    /// Why it stopped (`end_turn`, `tool_use`, `stop`, `tool_calls`, `completed`, …).
    pub(crate) stop: Option<String>,
    /// Its parts as the API wrote them: Anthropic's content blocks, Chat's message object,
    /// Responses' output items.
    pub parts: Vec<Value>,
}

impl Answer {
    /// The core's response (the harness counts its output tokens).
    pub fn response(&self) -> Response {
        Response::new(self.text.clone(), self.calls.clone(), self.usage)
    }

    /// An answer with `text` and `calls` in the parts `api` writes (for an upstream that makes
    /// its answers: a simulated model).
    pub fn from_parts(
        api: Api,
        id: &str,
        model: &str,
        text: &str,
        calls: Vec<ToolCall>,
        usage: Option<Usage>,
    ) -> Answer {
        let m = harness_core::Message::assistant(1, text, calls.clone());
        let parts = match api {
            Api::Anthropic => anthropic::render(&m)
                .iter()
                .filter_map(|u| serde_json::from_str(u.get()).ok())
                .collect(),
            Api::Chat => chat::render(&m)
                .iter()
                .filter_map(|u| serde_json::from_str(u.get()).ok())
                .collect(),
            Api::Responses => responses::answer_items(id, text, &calls),
        };
        let stop = match (api, calls.is_empty()) {
            (Api::Anthropic, true) => "end_turn",
            (Api::Anthropic, false) => "tool_use",
            (Api::Chat, true) => "stop",
            (Api::Chat, false) => "tool_calls",
            (Api::Responses, _) => "completed",
        };
        Answer {
            id: id.to_string(),
            model: model.to_string(),
            text: text.to_string(),
            calls,
            usage,
            stop: Some(stop.to_string()),
            parts,
        }
    }
}

/// Reads a non-streamed answer body.
pub fn parse_answer(api: Api, body: &[u8]) -> Result<Answer, WireError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        crate::err(format!(
            "the answer is not JSON: {e} (line {}, column {})",
            e.line(),
            e.column()
        ))
    })?;
    match api {
        Api::Anthropic => anthropic::read_answer(&v),
        Api::Chat => chat::read_answer(&v),
        Api::Responses => responses::read_answer(&v),
    }
}

/// Writes an answer as the API's non-streamed JSON body.
pub fn write_answer(api: Api, a: &Answer) -> Value {
    match api {
        Api::Anthropic => anthropic::write_answer(a),
        Api::Chat => chat::write_answer(a),
        Api::Responses => responses::write_answer(a),
    }
}

/// The type and message of an error body as the APIs write it (`{"type": "error", "error":
/// {"type": "overloaded_error", "message": …}}`, `{"error": {"type"|"code": …, "message": …}}`).
pub fn error_of(body: &[u8]) -> Option<(String, String)> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let e = v.get("error")?;
    let kind = e
        .get("type")
        .or_else(|| e.get("code"))
        .and_then(Value::as_str)?
        .to_string();
    let message = e
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    Some((kind, message))
}

/// A non-streamed answer body without the tool calls named in `ids` (a host's own tool, which
/// the agent must not see); everything else as it came.
pub fn without_calls(api: Api, body: &Value, ids: &[String]) -> Value {
    match api {
        Api::Anthropic => anthropic::without_calls(body, ids),
        Api::Chat => chat::without_calls(body, ids),
        Api::Responses => responses::without_calls(body, ids),
    }
}

/// A non-streamed answer body with the parts of `first` that are not its calls in `ids` put
/// before its own (a host that asked the model again shows the agent one answer).
pub fn prepend_parts(api: Api, body: &Value, first: &Value, ids: &[String]) -> Value {
    match api {
        Api::Anthropic => anthropic::prepend(body, &anthropic::without_calls(first, ids)),
        Api::Chat => chat::prepend(body, &chat::without_calls(first, ids)),
        Api::Responses => responses::prepend(body, &responses::without_calls(first, ids)),
    }
}

/// The arguments of a call as JSON: the string Chat and Responses send, parsed; a string that is
/// not JSON kept as a string (the host's argument check then refuses it).
pub(crate) fn parse_arguments(s: &str) -> Value {
    if s.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_string()))
}

/// `usage` numbers, by the field names each API uses.
pub(crate) fn u64_at(v: &Value, path: &[&str]) -> u64 {
    let mut cur = v;
    for p in path {
        match cur.get(p) {
            Some(n) => cur = n,
            None => return 0,
        }
    }
    cur.as_u64().unwrap_or(0)
}
