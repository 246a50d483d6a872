//! Streams read event by event and written: what each event is to a host that forwards it
//! ([`EventRole`]), the answer the events add up to, and the rewriting a host needs when it
//! leaves one of the answer's parts out (its own tool's call) or joins two answers into one
//! stream (part indexes moved, Responses' sequence numbers renumbered).

use serde_json::Value;

use crate::answer::Answer;
use crate::sse::SseEvent;
use crate::{anthropic, chat, err, responses, Api, WireError};

/// What an event is to a forwarding host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventRole {
    /// The answer's head (`message_start`, `response.created`, a chunk with only a role).
    Start,
    /// Chat's text chunks (they carry no part index).
    Text,
    /// An event of part `n`: a content block (Anthropic), a tool call (Chat), an output item
    /// (Responses).
    Part(usize),
    /// The answer's end: stop reason, usage, the closing event (`message_delta`,
    /// `message_stop`, a chunk with `finish_reason`, `[DONE]`, `response.completed`).
    Finish,
    /// A keep-alive or an event of no consequence.
    Ping,
    /// An error the upstream sent in the stream, with its message.
    Error(String),
}

/// A stream being read.
#[derive(Debug)]
pub struct StreamDecoder {
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Anthropic(anthropic::Stream),
    Chat(chat::Stream),
    Responses(responses::Stream),
}

impl StreamDecoder {
    /// A decoder at the start of a stream of `api`.
    pub fn new(api: Api) -> StreamDecoder {
        let inner = match api {
            Api::Anthropic => Inner::Anthropic(Default::default()),
            Api::Chat => Inner::Chat(Default::default()),
            Api::Responses => Inner::Responses(Default::default()),
        };
        StreamDecoder { inner }
    }

    /// Reads one event. An error when its data is not JSON.
    pub fn decode(&mut self, ev: &SseEvent) -> Result<EventRole, WireError> {
        let json = || -> Result<Value, WireError> {
            serde_json::from_str(&ev.data)
                .map_err(|e| err(format!("an event's data is not JSON: {e}")))
        };
        match &mut self.inner {
            Inner::Anthropic(s) => Ok(s.decode(&json()?)),
            Inner::Chat(s) => s.decode(&ev.data),
            Inner::Responses(s) => Ok(s.decode(&json()?)),
        }
    }

    /// The call id and tool name of part `n`, once its start has been read (`None` for a part
    /// that is not a tool call).
    pub fn call(&self, part: usize) -> Option<(&str, &str)> {
        match &self.inner {
            Inner::Anthropic(s) => s.call(part),
            Inner::Chat(s) => s.call(part),
            Inner::Responses(s) => s.call(part),
        }
    }

    /// Whether the closing event has been read (`message_stop`, `[DONE]`, a final
    /// `response.*` event).
    pub fn done(&self) -> bool {
        match &self.inner {
            Inner::Anthropic(s) => s.done,
            Inner::Chat(s) => s.done,
            Inner::Responses(s) => s.done,
        }
    }

    /// The answer the events read so far add up to.
    pub fn answer(&self) -> Answer {
        match &self.inner {
            Inner::Anthropic(s) => s.answer(),
            Inner::Chat(s) => s.answer(),
            Inner::Responses(s) => s.answer(),
        }
    }
}

/// The event with its part index mapped by `map`, a final Responses event without the calls in
/// `drop`, and Responses' `sequence_number` set to `seq` when given. Events that carry none of
/// these come back as they were (the same data, not re-serialised).
pub fn rewrite(
    api: Api,
    ev: &SseEvent,
    map: &dyn Fn(usize) -> usize,
    drop: &[String],
    seq: Option<u64>,
) -> SseEvent {
    let Ok(mut v) = serde_json::from_str::<Value>(&ev.data) else {
        return ev.clone();
    };
    let before = v.clone();
    match api {
        Api::Anthropic => anthropic::reindex(&mut v, map),
        Api::Chat => chat::reindex(&mut v, map),
        Api::Responses => {
            responses::reindex(&mut v, map, drop);
            if let Some(n) = seq {
                if v.get("sequence_number").is_some() {
                    v["sequence_number"] = Value::from(n);
                }
            }
        }
    }
    if v == before {
        return ev.clone();
    }
    SseEvent {
        event: ev.event.clone(),
        data: v.to_string(),
    }
}

/// A whole answer as the events of a stream of `api`.
pub fn write_stream(api: Api, a: &Answer) -> Vec<SseEvent> {
    match api {
        Api::Anthropic => anthropic::write_stream(a),
        Api::Chat => chat::write_stream(a),
        Api::Responses => responses::write_stream(a),
    }
}

/// The event an agent receives when its answer could not be completed (the upstream cut the
/// stream): Anthropic's `error`, an `error` chunk, Responses' `response.failed`.
pub fn error_event(api: Api, message: &str) -> SseEvent {
    match api {
        Api::Anthropic => anthropic::error_event("api_error", message),
        Api::Chat => chat::error_event("server_error", message),
        Api::Responses => responses::error_event("server_error", message),
    }
}

/// The error event of a failure whose type the upstream named (`overloaded_error`,
/// `rate_limit_error`, …): the agent reads the upstream's own type, and retries as it would.
pub fn error_event_of(api: Api, kind: &str, message: &str) -> SseEvent {
    match api {
        Api::Anthropic => anthropic::error_event(kind, message),
        Api::Chat => chat::error_event(kind, message),
        Api::Responses => responses::error_event(kind, message),
    }
}

/// A closing event with the stop reason of an answer that calls no tool (`end_turn`, `stop`)
/// in place of the one that does (`tool_use`, `tool_calls`): for a host that left out every
/// call of the answer (its own tool's). Any other event, and any other stop reason
/// (`max_tokens`), comes back as it was.
pub fn without_call_stop(api: Api, ev: &SseEvent) -> SseEvent {
    let Ok(mut v) = serde_json::from_str::<Value>(&ev.data) else {
        return ev.clone();
    };
    let (path, calling, plain) = match api {
        Api::Anthropic => ("/delta/stop_reason", "tool_use", "end_turn"),
        Api::Chat => ("/choices/0/finish_reason", "tool_calls", "stop"),
        Api::Responses => return ev.clone(),
    };
    match v.pointer_mut(path) {
        Some(r) if r.as_str() == Some(calling) => *r = Value::from(plain),
        _ => return ev.clone(),
    }
    SseEvent {
        event: ev.event.clone(),
        data: v.to_string(),
    }
}

/// A closing Responses event (`response.completed`) with `items` (the output items a host
/// already streamed from an earlier answer it joined to this one) before its own output; any
/// other event, and the other APIs' events, come back as they were.
pub fn with_earlier_output(api: Api, ev: &SseEvent, items: &[Value]) -> SseEvent {
    if api != Api::Responses || items.is_empty() {
        return ev.clone();
    }
    let Ok(mut v) = serde_json::from_str::<Value>(&ev.data) else {
        return ev.clone();
    };
    match v.pointer_mut("/response/output") {
        Some(Value::Array(out)) => {
            let mut all = items.to_vec();
            all.append(out);
            *out = all;
        }
        _ => return ev.clone(),
    }
    SseEvent {
        event: ev.event.clone(),
        data: v.to_string(),
    }
}
