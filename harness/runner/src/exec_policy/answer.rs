//! Reading the process's answers: each checked against the protocol, its errors saying what
//! was wrong in words the policy's author can act on.

use std::collections::HashMap;
use std::sync::Arc;

use harness_core::context::Context;
use harness_core::message::{Message, MessageKind};
use harness_core::policy::{CardOffer, Plan, Splice, SpliceKind, ToolOutcome, ToolReply};
use serde_json::Value;

/// The answer line: a JSON object whose `type` is one of `expect` and whose `re` is the
/// request's `id`.
pub(crate) fn check(bytes: &[u8], id: u64, kind: &str, expect: &[&str]) -> Result<Value, String> {
    let v: Value = serde_json::from_slice(bytes)
        .map_err(|e| format!("wrote malformed JSON ({e}) answering the `{kind}` request"))?;
    let Some(o) = v.as_object() else {
        return Err(format!(
            "wrote JSON that is not an object answering the `{kind}` request"
        ));
    };
    let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
    if !expect.contains(&ty) {
        return Err(format!(
            "wrote an unknown or unexpected message (type {ty:?}) answering the `{kind}` request, which is answered with {}",
            expect.iter().map(|e| format!("{e:?}")).collect::<Vec<_>>().join(" or ")
        ));
    }
    if o.get("re").and_then(Value::as_u64) != Some(id) {
        return Err(format!(
            "answered the `{kind}` request (id {id}) with `re` {}; give each answer the id of its request",
            o.get("re").map_or("missing".to_string(), Value::to_string)
        ));
    }
    Ok(v)
}

/// A `card` answer: `card` is null or `{text, turns}`.
pub(crate) fn card(v: &Value) -> Result<Option<CardOffer>, String> {
    match v.get("card") {
        None | Some(Value::Null) => Ok(None),
        Some(c) => serde_json::from_value(c.clone())
            .map(Some)
            .map_err(|e| format!("gave a card that is not {{text, turns}} ({e})")),
    }
}

/// Rewritten messages, by the original's id and the rewrite: the same rewrite of the same
/// message is the same message each time (its tokens counted once; the prompt-cache simulation
/// sees it unchanged).
pub(crate) type Memo = HashMap<(u64, Option<String>, bool, bool), Arc<Message>>;

/// A `send` or `compact` answer as a plan.
pub(crate) fn plan(v: &Value, ctx: &Context, memo: &mut Memo) -> Result<Plan, String> {
    if v.get("type").and_then(Value::as_str) == Some("compact") {
        return Ok(Plan::Compact {
            emergency: v.get("emergency").and_then(Value::as_bool).unwrap_or(false),
        });
    }
    let Some(items) = v.get("messages").and_then(Value::as_array) else {
        return Err("answered `send` without a `messages` list".into());
    };
    let n = ctx.messages.len();
    let at = |i: &Value| -> Result<usize, String> {
        i.as_u64()
            .and_then(|i| usize::try_from(i).ok())
            .filter(|i| *i < n)
            .ok_or_else(|| {
                format!(
                    "sent message {i}, which is not a position of the context (0 to {})",
                    n.saturating_sub(1)
                )
            })
    };
    let mut out = Vec::with_capacity(n);
    for item in items {
        match item {
            Value::Number(_) => out.push(Arc::clone(&ctx.messages[at(item)?])),
            Value::Array(r) => {
                let (a, b) = match r.as_slice() {
                    [a, b] => (a.as_u64().unwrap_or(u64::MAX), b.as_u64().unwrap_or(u64::MAX)),
                    _ => (u64::MAX, 0),
                };
                let ok = a <= b && b <= n as u64;
                if !ok {
                    return Err(format!(
                        "sent the range {item}, which is not [FROM, TO] with FROM ≤ TO ≤ {n} (the context's length)"
                    ));
                }
                out.extend(ctx.messages[a as usize..b as usize].iter().cloned());
            }
            Value::Object(o) => {
                let Some(like) = o.get("like") else {
                    return Err(format!("sent {item}, a rewrite without `like` (the position of the message it rewrites)"));
                };
                let m = &ctx.messages[at(like)?];
                let text = match o.get("text") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(_) => return Err(format!("sent {item}, whose `text` is not a string")),
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
            _ => {
                return Err(format!(
                    "sent {item}, which is neither a position, a range [FROM, TO] nor a rewrite {{like, ...}}"
                ))
            }
        }
    }
    let action = match v.get("action") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("answered `send` with an `action` that is not a string".into()),
    };
    Ok(Plan::Send {
        messages: out,
        action,
    })
}

/// A `tool_reply` answer.
pub(crate) fn tool_reply(v: &Value) -> Result<ToolReply, String> {
    let text = v
        .get("text")
        .and_then(Value::as_str)
        .ok_or("answered `tool_reply` without a `text`")?
        .to_string();
    let is_error = v.get("is_error").and_then(Value::as_bool).unwrap_or(false);
    let outcome: ToolOutcome = match v.get("outcome") {
        Some(o) => serde_json::from_value(o.clone()).map_err(|e| {
            format!("answered `tool_reply` with an outcome foldbench does not know ({e})")
        })?,
        None if is_error => ToolOutcome::Refused {
            reason: text.clone(),
        },
        None => return Err(
            "answered `tool_reply` without an `outcome` (fold_accepted, fold_rejected, refused, …)"
                .into(),
        ),
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
pub(crate) fn splices(v: &Value, ctx: &Context) -> Result<Vec<(Splice, Option<String>)>, String> {
    let Some(items) = v.get("splices").and_then(Value::as_array) else {
        return Err("answered `splices` without a `splices` list".into());
    };
    let mut out = Vec::new();
    let mut pending: Vec<(u32, u32)> = Vec::new();
    for item in items {
        let turn = |k: &str| {
            item.get(k)
                .and_then(Value::as_u64)
                .and_then(|t| u32::try_from(t).ok())
                .ok_or_else(|| format!("proposed the splice {item} without a turn number `{k}`"))
        };
        let (from, to) = (turn("from")?, turn("to")?);
        harness_core::fold::check_fold(ctx, from, to, &pending).map_err(|e| {
            format!(
                "proposed an illegal splice of turns {from}–{to}: {}",
                e.to_string().trim_start_matches("error: ")
            )
        })?;
        let text = match item.get("text") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                return Err(format!(
                    "proposed the splice {item} with a `text` that is not a string"
                ))
            }
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
