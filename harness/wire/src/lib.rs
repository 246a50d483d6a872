//! # harness-wire: the model APIs' wire formats, to and from the core's messages
//!
//! Pure (no IO): bytes in, values out, and back. Three APIs:
//!
//! - [`Api::Anthropic`]: the Messages API (`POST /v1/messages`, what Claude Code speaks);
//! - [`Api::Chat`]: OpenAI's Chat Completions (`POST /v1/chat/completions`);
//! - [`Api::Responses`]: OpenAI's Responses API (`POST /v1/responses`, what Codex speaks).
//!
//! For each: a request split at its top level with every field kept as the agent wrote it
//! ([`Envelope`]); each message (Anthropic, Chat) or input item (Responses) decoded
//! ([`decode_item`]) into [`Unit`]s (a content block, a message, an item, each with its own raw JSON) and grouped
//! into the core's [`harness_core::Message`]s by a [`Grouper`] that carries the
//! turn structure from request to request; core messages rendered back into units
//! ([`render`]) and units assembled into the API's items; non-streamed answers read and written
//! ([`parse_answer`], [`write_answer`]); streams read event by event ([`SseParser`], [`StreamDecoder`]) and written.
//!
//! A message is identified by its bytes ([`ItemKey`], [`item_key`]): the same message resent by
//! an agent has the same key, and a key computed with `cache_control` markers left out
//! ([`canonical_key`]) recognises a message whose cache breakpoint moved. Input an API does not
//! accept is a [`WireError`].
//!
//! ```
//! use harness_wire::{Api, Envelope};
//!
//! let body = br#"{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}"#;
//! let env = Envelope::parse(Api::Anthropic, body).unwrap();
//! assert_eq!(env.items.len(), 1);
//! assert_eq!(env.model, "m");
//! // Written back unchanged, the body is the same JSON.
//! let again: serde_json::Value = serde_json::from_slice(&env.write(&env.item_refs(), &[])).unwrap();
//! assert_eq!(again, serde_json::from_slice::<serde_json::Value>(body).unwrap());
//! ```

// A type that a public item hands out can be named from outside: the surface is chosen.
#![warn(unnameable_types)]

pub(crate) mod answer;
pub use answer::{error_of, parse_answer, prepend_parts, without_calls, write_answer, Answer};
mod anthropic;
mod chat;
mod envelope;
pub mod render;
mod responses;
pub(crate) mod sse;
pub use sse::{write_event, SseError, SseEvent, SseParser};
pub(crate) mod stream;
pub use stream::{
    error_event, error_event_of, rewrite, with_earlier_output, without_call_stop, write_stream,
    EventRole, StreamDecoder,
};
pub(crate) mod units;
pub use units::{Checkpoint, Grouper, Piece, Side, Unit, UnitKind, UnitRef};

pub use envelope::{canonical_key, item_key, Envelope, ItemKey};

use std::fmt;

/// Which API a request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// Anthropic's Messages API.
    Anthropic,
    /// OpenAI's Chat Completions.
    Chat,
    /// OpenAI's Responses API.
    Responses,
}

impl Api {
    /// The API a request path names (`/v1/messages?beta=true`, `/chat/completions`,
    /// `/v1/responses`), the query left out; `None` for any other path (count-tokens calls,
    /// model lists), which a proxy passes through.
    pub fn from_path(path: &str) -> Option<Api> {
        let path = path.split('?').next().unwrap_or("").trim_end_matches('/');
        if path.ends_with("/messages") || path == "messages" {
            Some(Api::Anthropic)
        } else if path.ends_with("/chat/completions") {
            Some(Api::Chat)
        } else if path.ends_with("/responses") || path == "responses" {
            Some(Api::Responses)
        } else {
            None
        }
    }

    /// The word records use (`anthropic`, `chat`, `responses`).
    pub fn name(self) -> &'static str {
        match self {
            Api::Anthropic => "anthropic",
            Api::Chat => "chat",
            Api::Responses => "responses",
        }
    }

    /// The request field that holds the conversation (`messages`, or `input` for Responses).
    pub fn items_field(self) -> &'static str {
        match self {
            Api::Anthropic | Api::Chat => "messages",
            Api::Responses => "input",
        }
    }
}

/// Input that is not what the API accepts: the message of a 400 answer, saying what is wrong
/// and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError(pub String);

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WireError {}

/// A [`WireError`] from anything printable.
pub(crate) fn err(message: impl Into<String>) -> WireError {
    WireError(message.into())
}

/// A JSON value as a boxed raw value (always valid: it was just serialised).
pub(crate) fn raw(v: &serde_json::Value) -> Box<serde_json::value::RawValue> {
    serde_json::value::to_raw_value(v).unwrap_or_else(|_| null())
}

/// `null` as a raw value.
pub(crate) fn null() -> Box<serde_json::value::RawValue> {
    serde_json::value::RawValue::from_string("null".to_string()).expect("`null` is JSON")
}

/// The units of one message (Anthropic, Chat) or input item (Responses).
pub fn decode_item(
    api: Api,
    item: &serde_json::value::RawValue,
) -> Result<Vec<units::Unit>, WireError> {
    match api {
        Api::Anthropic => anthropic::decode_item(item),
        Api::Chat => chat::decode_item(item),
        Api::Responses => responses::decode_item(item),
    }
}
