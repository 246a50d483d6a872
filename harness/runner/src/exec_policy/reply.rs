//! Reading the process's answers: each checked against the protocol, its errors saying what
//! was wrong in words the policy's author can act on.

use std::collections::HashMap;
use std::sync::Arc;

use harness_core::fold::FoldRefusal;
use harness_core::policy::{CardOffer, Plan, Splice, SpliceKind, ToolOutcome, ToolReply};
use harness_core::Context;
use harness_core::{Message, MessageKind};
use serde_json::Value;

/// What a policy process did against the protocol; the display says it after the process's
/// command (`policy process `CMD` …`), in words the policy's author can act on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ProtocolError {
    /// The line is not JSON.
    #[error("wrote malformed JSON answering the `{kind}` request")]
    Malformed {
        /// The request answered.
        kind: String,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// The line is JSON but not an object.
    #[error("wrote JSON that is not an object answering the `{kind}` request")]
    NotObject {
        /// The request answered.
        kind: String,
    },
    /// A message of another type than the request takes.
    #[error("wrote an unknown or unexpected message (type {ty:?}) answering the `{kind}` request, which is answered with {expect}")]
    Unexpected {
        /// The request answered.
        kind: String,
        /// The message's type.
        ty: String,
        /// The types the request takes, quoted, joined with ` or `.
        expect: String,
    },
    /// `re` is not the request's id.
    #[error("answered the `{kind}` request (id {id}) with `re` {re}; give each answer the id of its request")]
    WrongId {
        /// The request answered.
        kind: String,
        /// The request's id.
        id: u64,
        /// The answer's `re` (`missing` when it has none).
        re: String,
    },
    /// A `card` that is not `{text, turns}`.
    #[error("gave a card that is not {{text, turns}}")]
    Card(#[source] serde_json::Error),
    /// `send` without `messages`.
    #[error("answered `send` without a `messages` list")]
    NoMessages,
    /// A position outside the context.
    #[error("sent message {item}, which is not a position of the context (0 to {last})")]
    NotPosition {
        /// The position as sent.
        item: Value,
        /// The context's last position.
        last: usize,
    },
    /// A range that is not `[FROM, TO]` inside the context.
    #[error("sent the range {item}, which is not [FROM, TO] with FROM ≤ TO ≤ {len} (the context's length)")]
    NotRange {
        /// The range as sent.
        item: Value,
        /// The context's length.
        len: usize,
    },
    /// A rewrite without `like`.
    #[error("sent {item}, a rewrite without `like` (the position of the message it rewrites)")]
    NoLike {
        /// The rewrite as sent.
        item: Value,
    },
    /// A rewrite whose `text` is not a string.
    #[error("sent {item}, whose `text` is not a string")]
    RewriteText {
        /// The rewrite as sent.
        item: Value,
    },
    /// An item of `messages` of no known form.
    #[error(
        "sent {item}, which is neither a position, a range [FROM, TO] nor a rewrite {{like, ...}}"
    )]
    NotItem {
        /// The item as sent.
        item: Value,
    },
    /// `send` with an `action` that is not a string.
    #[error("answered `send` with an `action` that is not a string")]
    Action,
    /// `tool_reply` without `text`.
    #[error("answered `tool_reply` without a `text`")]
    NoReplyText,
    /// `tool_reply` with an outcome foldbench does not know.
    #[error("answered `tool_reply` with an outcome foldbench does not know")]
    Outcome(#[source] serde_json::Error),
    /// `tool_reply` without `outcome`, and not an error.
    #[error(
        "answered `tool_reply` without an `outcome` (fold_accepted, fold_rejected, refused, …)"
    )]
    NoOutcome,
    /// `splices` without its list.
    #[error("answered `splices` without a `splices` list")]
    NoSplices,
    /// A splice without one of its turn numbers.
    #[error("proposed the splice {item} without a turn number `{key}`")]
    NoTurn {
        /// The splice as sent.
        item: Value,
        /// `from` or `to`.
        key: &'static str,
    },
    /// A splice the fold rules refuse.
    #[error("proposed an illegal splice of turns {from}–{to}: {}", refusal.to_string().trim_start_matches("error: "))]
    IllegalSplice {
        /// The first turn.
        from: u32,
        /// The last turn.
        to: u32,
        /// Why it is illegal (said in the message, without its `error: `; not a cause).
        refusal: FoldRefusal,
    },
    /// A splice whose `text` is not a string.
    #[error("proposed the splice {item} with a `text` that is not a string")]
    SpliceText {
        /// The splice as sent.
        item: Value,
    },
    /// The handshake names another protocol.
    #[error(
        "answered the handshake with protocol {got}; foldbench speaks protocols {} to {}: answer one of them",
        super::PROTOCOL_MIN,
        super::PROTOCOL
    )]
    Protocol {
        /// The protocol it named (`(none)` when it named none).
        got: String,
    },
    /// The handshake's tools are not tool schemas.
    #[error("gave tools that are not tool schemas")]
    Tools(#[source] serde_json::Error),
    /// `workspace_tool`'s `refuse` is neither a string nor null.
    #[error("answered `refuse` with neither a string nor null")]
    Refuse,
    /// The session's opening declares `saves_state` with something else than true or false.
    #[error("declared `saves_state` as {0}: write true (the process saves its state: it answers `save` and takes `restore`) or leave it out")]
    SavesState(Value),
    /// `state` without its `state` field.
    #[error("answered `state` without a `state` field: give what to keep as any JSON value, null for nothing")]
    NoState,
}

/// The answer line: a JSON object whose `type` is one of `expect` and whose `re` is the
/// request's `id`.
pub(crate) fn check(
    bytes: &[u8],
    id: u64,
    kind: &str,
    expect: &[&str],
) -> Result<Value, ProtocolError> {
    let kind = kind.to_string();
    let v: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(source) => return Err(ProtocolError::Malformed { kind, source }),
    };
    let Some(o) = v.as_object() else {
        return Err(ProtocolError::NotObject { kind });
    };
    let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
    if !expect.contains(&ty) {
        return Err(ProtocolError::Unexpected {
            kind,
            ty: ty.to_string(),
            expect: expect
                .iter()
                .map(|e| format!("{e:?}"))
                .collect::<Vec<_>>()
                .join(" or "),
        });
    }
    if o.get("re").and_then(Value::as_u64) != Some(id) {
        return Err(ProtocolError::WrongId {
            kind,
            id,
            re: o.get("re").map_or("missing".to_string(), Value::to_string),
        });
    }
    Ok(v)
}

/// Whether the session's opening (the answer to `hello` in protocol 1, to `open` in 2) says the
/// process saves its state: `saves_state` true; false, null or left out say it does not.
pub(crate) fn saves_state(v: &Value) -> Result<bool, ProtocolError> {
    match v.get("saves_state") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(ProtocolError::SavesState(other.clone())),
    }
}

/// A `state` answer (to `save`): its `state`, `None` for null (nothing to keep).
pub(crate) fn state(v: &Value) -> Result<Option<Value>, ProtocolError> {
    match v.get("state") {
        None => Err(ProtocolError::NoState),
        Some(Value::Null) => Ok(None),
        Some(s) => Ok(Some(s.clone())),
    }
}

/// A `card` answer: `card` is null or `{text, turns}`.
pub(crate) fn card(v: &Value) -> Result<Option<CardOffer>, ProtocolError> {
    match v.get("card") {
        None | Some(Value::Null) => Ok(None),
        Some(c) => serde_json::from_value(c.clone())
            .map(Some)
            .map_err(ProtocolError::Card),
    }
}

/// Rewritten messages, by the original's id and the rewrite: the same rewrite of the same
/// message is the same message each time (its tokens counted once; the prompt-cache simulation
/// sees it unchanged).
pub(crate) type Memo = HashMap<(u64, Option<String>, bool, bool), Arc<Message>>;

/// A `send` or `compact` answer as a plan.
pub(crate) fn plan(v: &Value, ctx: &Context, memo: &mut Memo) -> Result<Plan, ProtocolError> {
    if v.get("type").and_then(Value::as_str) == Some("compact") {
        return Ok(Plan::Compact {
            emergency: v.get("emergency").and_then(Value::as_bool).unwrap_or(false),
        });
    }
    let Some(items) = v.get("messages").and_then(Value::as_array) else {
        return Err(ProtocolError::NoMessages);
    };
    let n = ctx.messages.len();
    let at = |i: &Value| -> Result<usize, ProtocolError> {
        i.as_u64()
            .and_then(|i| usize::try_from(i).ok())
            .filter(|i| *i < n)
            .ok_or_else(|| ProtocolError::NotPosition {
                item: i.clone(),
                last: n.saturating_sub(1),
            })
    };
    let mut out = Vec::with_capacity(n);
    for item in items {
        match item {
            Value::Number(_) => out.push(Arc::clone(&ctx.messages[at(item)?])),
            Value::Array(r) => {
                let (a, b) = match r.as_slice() {
                    [a, b] => (
                        a.as_u64().unwrap_or(u64::MAX),
                        b.as_u64().unwrap_or(u64::MAX),
                    ),
                    _ => (u64::MAX, 0),
                };
                let ok = a <= b && b <= n as u64;
                if !ok {
                    return Err(ProtocolError::NotRange {
                        item: item.clone(),
                        len: n,
                    });
                }
                out.extend(ctx.messages[a as usize..b as usize].iter().cloned());
            }
            Value::Object(o) => {
                let Some(like) = o.get("like") else {
                    return Err(ProtocolError::NoLike { item: item.clone() });
                };
                let m = &ctx.messages[at(like)?];
                let text = match o.get("text") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(_) => return Err(ProtocolError::RewriteText { item: item.clone() }),
                };
                let flag = |k: &str| o.get(k).and_then(Value::as_bool).unwrap_or(false);
                let (drop_calls, cleared) = (flag("drop_tool_calls"), flag("cleared"));
                let key = (m.id, text.clone(), drop_calls, cleared);
                let rewritten = memo.entry(key).or_insert_with(|| {
                    let mut c = (**m).clone();
                    if let Some(t) = text {
                        c.text = t;
                    }
                    if drop_calls {
                        c.tool_calls.clear();
                    }
                    if cleared {
                        c.kind = MessageKind::Cleared;
                    }
                    c.sealed()
                });
                out.push(Arc::clone(rewritten));
            }
            _ => return Err(ProtocolError::NotItem { item: item.clone() }),
        }
    }
    let action = match v.get("action") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(ProtocolError::Action),
    };
    Ok(Plan::Send {
        messages: out,
        action,
    })
}

/// A `tool_reply` answer.
pub(crate) fn tool_reply(v: &Value) -> Result<ToolReply, ProtocolError> {
    let text = v
        .get("text")
        .and_then(Value::as_str)
        .ok_or(ProtocolError::NoReplyText)?
        .to_string();
    let is_error = v.get("is_error").and_then(Value::as_bool).unwrap_or(false);
    let outcome: ToolOutcome = match v.get("outcome") {
        Some(o) => serde_json::from_value(o.clone()).map_err(ProtocolError::Outcome)?,
        None if is_error => ToolOutcome::Refused {
            reason: text.clone(),
        },
        None => return Err(ProtocolError::NoOutcome),
    };
    Ok(ToolReply {
        text,
        is_error,
        outcome,
        append: Vec::new(),
    })
}

/// A `splices` answer: each range legal ([`harness_core::fold::check_fold`]: turns that exist,
/// in order, before the turn in progress, outside every fold), with its result text if given.
pub(crate) fn splices(
    v: &Value,
    ctx: &Context,
) -> Result<Vec<(Splice, Option<String>)>, ProtocolError> {
    let Some(items) = v.get("splices").and_then(Value::as_array) else {
        return Err(ProtocolError::NoSplices);
    };
    let mut out = Vec::new();
    let mut pending: Vec<(u32, u32)> = Vec::new();
    for item in items {
        let turn = |key: &'static str| {
            item.get(key)
                .and_then(Value::as_u64)
                .and_then(|t| u32::try_from(t).ok())
                .ok_or_else(|| ProtocolError::NoTurn {
                    item: item.clone(),
                    key,
                })
        };
        let (from, to) = (turn("from")?, turn("to")?);
        harness_core::fold::check_fold(ctx, from, to, &pending)
            .map_err(|refusal| ProtocolError::IllegalSplice { from, to, refusal })?;
        let text = match item.get("text") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(ProtocolError::SpliceText { item: item.clone() }),
        };
        // check_fold found the range in the context.
        let Some((s, e)) = ctx.turn_range(from, to) else {
            continue;
        };
        pending.push((from, to));
        out.push((
            Splice {
                from,
                to,
                messages: ctx.messages[s..e].to_vec(),
                kind: SpliceKind::Fold,
            },
            text,
        ));
    }
    Ok(out)
}
