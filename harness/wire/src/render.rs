//! Writing a conversation back: core messages a policy made (a fold result, a summary, a
//! trimmed result, a card on a prompt) rendered as units, and units assembled into the items
//! of a request.

use std::borrow::Cow;

use harness_core::text_agent::as_observation;
use harness_core::{Message, Role, ToolCall};
use serde_json::value::RawValue;

use crate::units::{Grouper, Side};
use crate::{anthropic, chat, responses, Api};

/// One entry of an outgoing conversation.
#[derive(Debug)]
pub enum Out<'a> {
    /// A whole item as the agent sent it (every unit of it kept, nothing added).
    Item(&'a RawValue),
    /// One unit, of a side: merged with its neighbours of the same side where the API groups
    /// units into messages (Anthropic's content blocks).
    Unit(Side, Cow<'a, RawValue>),
}

/// Renders a message no agent wrote (or one a policy changed) as units of `api`: the grouper
/// names the form of the call a result answers. A text-based agent's calls stay in the text
/// they came in (an answer goes out without them as calls of the API), and their results go
/// out as its observations: user messages in its observation form, whatever a policy made of
/// their text.
pub fn render_message(api: Api, m: &Message, calls: &Grouper) -> Vec<(Side, Box<RawValue>)> {
    let side = if m.role == Role::Assistant {
        Side::Assistant
    } else {
        Side::User
    };
    let text_result = m.role == Role::Tool
        && m.tool_call_id
            .as_deref()
            .is_some_and(|id| calls.is_text_call(id));
    let text_calls = m.tool_calls.iter().any(|c| calls.is_text_call(&c.id));
    let in_text;
    let m = if text_result {
        let id = m.tool_call_id.as_deref().unwrap_or_default();
        let mut u = m.clone();
        u.role = Role::User;
        u.tool_call_id = None;
        u.tool_name = None;
        u.text = as_observation(calls.observation_head(id), &m.text);
        in_text = u;
        &in_text
    } else if text_calls {
        let mut a = m.clone();
        a.tool_calls.retain(|c| !calls.is_text_call(&c.id));
        in_text = a;
        &in_text
    } else {
        m
    };
    let units = match api {
        Api::Anthropic => anthropic::render(m),
        Api::Chat => chat::render(m),
        Api::Responses => responses::render(m, calls),
    };
    units.into_iter().map(|u| (side, u)).collect()
}

/// The units of an agent's answer with `calls` (a host's own tool, which it answered) beside the
/// agent's calls, as the model made them in one answer: Anthropic's `tool_use` blocks after its
/// blocks, a Chat message's `tool_calls` extended, Responses' call items after its items.
pub fn calls_beside(
    api: Api,
    units: &[&RawValue],
    calls: &[ToolCall],
    grouper: &Grouper,
) -> Vec<Box<RawValue>> {
    let mut out: Vec<Box<RawValue>> = units.iter().map(|u| (*u).to_owned()).collect();
    if calls.is_empty() {
        return out;
    }
    let only_calls = Message::assistant(0, "", calls.to_vec());
    match api {
        Api::Anthropic => out.extend(anthropic::render(&only_calls)),
        Api::Responses => out.extend(responses::render(&only_calls, grouper)),
        Api::Chat => {
            let Some(last) = out.pop() else {
                return chat::render(&only_calls);
            };
            let Ok(mut v) = serde_json::from_str::<serde_json::Value>(last.get()) else {
                out.push(last);
                return out;
            };
            let more = chat::calls_json(calls);
            match v.get_mut("tool_calls") {
                Some(serde_json::Value::Array(list)) => {
                    if let serde_json::Value::Array(more) = more {
                        list.extend(more);
                    }
                }
                _ => v["tool_calls"] = more,
            }
            out.push(crate::raw(&v));
        }
    }
    out
}

/// The units of an agent's user message with a card appended (a text block, or the text of a
/// string content continued).
pub fn attach_card(api: Api, units: &[&RawValue], card: &str) -> Vec<Box<RawValue>> {
    match api {
        Api::Anthropic => {
            let mut out: Vec<Box<RawValue>> = units.iter().map(|u| (*u).to_owned()).collect();
            out.push(crate::raw(
                &serde_json::json!({"type": "text", "text": card}),
            ));
            out
        }
        Api::Chat | Api::Responses => {
            // One unit per message: the card joins the last one's content.
            let mut out: Vec<Box<RawValue>> = units.iter().map(|u| (*u).to_owned()).collect();
            if let Some(last) = out.pop() {
                out.push(append_to_content(api, &last, card));
            }
            out
        }
    }
}

/// A Chat or Responses message with `text` appended to its content.
fn append_to_content(api: Api, message: &RawValue, text: &str) -> Box<RawValue> {
    let Ok(mut v) = serde_json::from_str::<serde_json::Value>(message.get()) else {
        return message.to_owned();
    };
    let part_type = if api == Api::Responses {
        "input_text"
    } else {
        "text"
    };
    match v.get_mut("content") {
        Some(serde_json::Value::String(s)) => {
            s.push_str("\n\n");
            s.push_str(text);
        }
        Some(serde_json::Value::Array(parts)) => {
            parts.push(serde_json::json!({"type": part_type, "text": text}));
        }
        _ => {
            v["content"] = serde_json::Value::String(text.to_string());
        }
    }
    crate::raw(&v)
}

/// The items of a request from its entries: Anthropic units of one side in a row become one
/// message (`{"role", "content": [blocks]}`); Chat and Responses units are items already.
pub fn assemble<'a>(api: Api, entries: Vec<Out<'a>>) -> Vec<Cow<'a, RawValue>> {
    match api {
        Api::Anthropic => anthropic::assemble(entries),
        Api::Chat | Api::Responses => entries
            .into_iter()
            .map(|e| match e {
                Out::Item(i) => Cow::Borrowed(i),
                Out::Unit(_, u) => u,
            })
            .collect(),
    }
}
