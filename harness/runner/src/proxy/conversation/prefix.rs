//! A request decoded from where its body differs from the conversation's last one.
//!
//! An agent resends its whole history on every request: the body of a request is, byte for
//! byte, the body of the one before up to its newest messages (Claude Code moves its cache
//! breakpoint to its newest message, so the message before the new ones differs too). What the
//! last body decoded to is kept ([`Kept`]: its bytes up to the first item, the bytes between the
//! items, each item with its units and their identities), and the next body is compared with it
//! byte for byte: each item of the unchanged prefix is taken with the identities it was given,
//! and only the rest of the body — the items after the prefix and the fields after the items —
//! is read and hashed. A kept item's units are made again from its bytes (as cheap as copying
//! them, and a third of what keeping them would hold), not its identities: those, each unit
//! parsed, written again without `cache_control` and hashed, are most of a whole decode.
//!
//! An item's units and identities depend on its bytes alone, so the result is what
//! [`decode`] gives for the whole body; `tests/proxy_prefix.rs` holds the two equal request
//! after request, with earlier messages edited as well as new ones appended. Whatever this
//! module does not read exactly as the whole path does (a field twice, a value nested deeper
//! than [`MAX_DEPTH`], a Responses `input` given as a string, a body that does not parse) is
//! decoded whole by [`decode`], which also says what is wrong with a malformed body.
//!
//! What is kept is one body's decoding per conversation: its [`BodySlot`] belongs to the
//! conversation's entry and is dropped with it; [`Prefixes`] holds weak references only, to find
//! before a request is routed the kept body that shares the longest prefix with it.

use std::ops::Range;
use std::sync::{Arc, Mutex, Weak};

use harness_wire::Unit;
use harness_wire::{decode_item, Api, Envelope, ItemKey};
use serde_json::value::RawValue;

use super::decode::{decode, decode_units, DecodeError, Decoded};

/// The deepest nesting of `[` and `{` a value read on its own here may have. The whole path
/// reads a top-level field inside the body's object and an item inside its list as well, so it
/// allows two levels fewer than serde_json's limit (128); a body with a deeper value is decoded
/// whole.
pub(crate) const MAX_DEPTH: usize = 100;

/// What a conversation keeps of its last request's body to decode the next one from where it
/// differs: its items (about the body's size) and their identities.
pub struct Kept {
    api: Api,
    /// The body's bytes up to the items list's `[`, inclusive.
    head: Vec<u8>,
    /// The fields before the items field, then the items field (`null`: the items are apart).
    before: Vec<(String, Box<RawValue>)>,
    /// The bytes before each item (after the `[` or the item before it), one after another.
    gaps: Vec<u8>,
    /// Where each item's bytes before it end in `gaps`.
    gap_ends: Vec<usize>,
    items: Vec<Box<RawValue>>,
    /// Each item's units' identities.
    keys: Vec<Vec<ItemKey>>,
    item_keys: Vec<ItemKey>,
}

impl Kept {
    /// The bytes before item `i`.
    fn gap(&self, i: usize) -> &[u8] {
        let from = if i == 0 { 0 } else { self.gap_ends[i - 1] };
        &self.gaps[from..self.gap_ends[i]]
    }

    /// How many of the kept items `body` begins with, byte for byte (its head and the bytes
    /// between them included), and the offset in `body` after the last of them.
    pub(crate) fn shared(&self, api: Api, body: &[u8]) -> (usize, usize) {
        if api != self.api || !body.starts_with(&self.head) {
            return (0, 0);
        }
        let mut at = self.head.len();
        let mut n = 0;
        for (i, item) in self.items.iter().enumerate() {
            let gap = self.gap(i);
            let item = item.get().as_bytes();
            let rest = &body[at..];
            if !(rest.starts_with(gap) && rest[gap.len()..].starts_with(item)) {
                break;
            }
            at += gap.len() + item.len();
            n = i + 1;
        }
        (n, at)
    }

    /// The kept items' bytes, for a bound on what a conversation holds.
    pub(crate) fn item_bytes(&self) -> usize {
        self.items.iter().map(|i| i.get().len()).sum()
    }
}

/// A request decoded, and what to keep of it for its conversation's next request.
pub struct Decode {
    /// The request, as [`decode`] of the whole body gives it.
    pub decoded: Decoded,
    /// What to keep ([`BodySlot::keep`] of the conversation it is routed to); `None` when the body
    /// was decoded whole by [`decode`] (a body this module does not read).
    pub kept: Option<Kept>,
    /// How many items were taken from the kept body as they were decoded.
    pub reused: usize,
}

/// Decodes `body` from where it differs from `last` (the kept decoding of a body before it), or
/// whole when they share no item. The same result as [`decode`] of the whole body; a body this
/// module does not read (or a malformed one) is decoded by [`decode`].
pub fn decode_after(last: Option<Kept>, api: Api, body: &[u8]) -> Result<Decode, DecodeError> {
    let (n, at) = last.as_ref().map_or((0, 0), |k| k.shared(api, body));
    let read = match last {
        Some(kept) if n > 0 => resume(kept, n, at, api, body),
        _ => fresh(api, body),
    };
    match read {
        Some(Ok(d)) => Ok(d),
        // Not read here, or malformed: the whole path reads it and says what is wrong.
        Some(Err(_)) | None => Ok(Decode {
            decoded: decode(api, body)?,
            kept: None,
            reused: 0,
        }),
    }
}

/// A body read from its start.
fn fresh(api: Api, body: &[u8]) -> Option<Result<Decode, DecodeError>> {
    let key = api.items_field();
    let mut at = skip_ws(body, 0);
    if body.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    let mut before: Vec<(String, Box<RawValue>)> = Vec::new();
    loop {
        at = skip_ws(body, at);
        if !before.is_empty() {
            if body.get(at) != Some(&b',') {
                return None;
            }
            at = skip_ws(body, at + 1);
        }
        let (name, value_at) = field_name(body, at)?;
        if before.iter().any(|(n, _)| *n == name) {
            return None;
        }
        if name == key {
            if body.get(value_at) != Some(&b'[') {
                return None;
            }
            let head_end = value_at + 1;
            before.push((name, null()));
            let rest = rest(body, head_end, false, &before)?;
            let kept = Kept {
                api,
                head: body[..head_end].to_vec(),
                before,
                gaps: Vec::new(),
                gap_ends: Vec::new(),
                items: Vec::new(),
                keys: Vec::new(),
                item_keys: Vec::new(),
            };
            return Some(finish(kept, 0, rest, api, body));
        }
        let (v, end) = value(body, value_at)?;
        before.push((name, v.to_owned()));
        at = end;
    }
}

/// A body read from `at`, after the first `n` items of `kept`, which it shares.
fn resume(
    kept: Kept,
    n: usize,
    at: usize,
    api: Api,
    body: &[u8],
) -> Option<Result<Decode, DecodeError>> {
    let rest = rest(body, at, true, &kept.before)?;
    Some(finish(kept, n, rest, api, body))
}

/// What a body holds after the shared items: the new items (with the bytes before each) and the
/// fields after the items field.
struct Rest<'b> {
    gaps: Vec<Range<usize>>,
    items: Vec<&'b RawValue>,
    after: Vec<(String, &'b RawValue)>,
}

/// The rest of the items list from `at` (after its `[`, or after an item when `after_item`),
/// the fields after it and the end of the body; `None` when any of it is not as the whole path
/// reads it without complaint.
fn rest<'b>(
    body: &'b [u8],
    mut at: usize,
    mut after_item: bool,
    before: &[(String, Box<RawValue>)],
) -> Option<Rest<'b>> {
    let mut out = Rest {
        gaps: Vec::new(),
        items: Vec::new(),
        after: Vec::new(),
    };
    loop {
        let gap_from = at;
        at = skip_ws(body, at);
        if body.get(at) == Some(&b']') {
            at += 1;
            break;
        }
        if after_item {
            if body.get(at) != Some(&b',') {
                return None;
            }
            at = skip_ws(body, at + 1);
        }
        let (item, end) = value(body, at)?;
        out.gaps.push(gap_from..at);
        out.items.push(item);
        at = end;
        after_item = true;
    }
    loop {
        at = skip_ws(body, at);
        match body.get(at) {
            Some(b'}') => break,
            Some(b',') => at = skip_ws(body, at + 1),
            _ => return None,
        }
        let (name, value_at) = field_name(body, at)?;
        let seen =
            |n: &str| before.iter().any(|(b, _)| b == n) || out.after.iter().any(|(a, _)| a == n);
        if seen(&name) {
            return None;
        }
        let (v, end) = value(body, value_at)?;
        out.after.push((name, v));
        at = end;
    }
    (skip_ws(body, at + 1) == body.len()).then_some(out)
}

/// The request put together: the first `n` items of `kept` with their identities (their units
/// made again from their bytes), the new ones decoded; what to keep for the next request.
fn finish(
    mut kept: Kept,
    n: usize,
    rest: Rest<'_>,
    api: Api,
    body: &[u8],
) -> Result<Decode, DecodeError> {
    let mut fields = kept.before.clone();
    fields.extend(rest.after.iter().map(|(k, v)| (k.clone(), (*v).to_owned())));
    let mut items: Vec<Box<RawValue>> = kept.items[..n].to_vec();
    items.extend(rest.items.iter().map(|i| (*i).to_owned()));
    let env = Envelope::from_parts(api, fields, items).map_err(DecodeError::Envelope)?;
    let mut units: Vec<Vec<Unit>> = Vec::with_capacity(env.items.len());
    for (i, item) in env.items.iter().enumerate().take(n) {
        units.push(decode_item(api, item).map_err(|source| DecodeError::Item {
            field: api.items_field(),
            index: i,
            source,
        })?);
    }
    let mut keys: Vec<Vec<ItemKey>> = kept.keys[..n].to_vec();
    let mut item_keys: Vec<ItemKey> = kept.item_keys[..n].to_vec();
    for (i, item) in env.items.iter().enumerate().skip(n) {
        let (u, k) = decode_units(api, i, item)?;
        units.push(u);
        keys.push(k);
        item_keys.push(harness_wire::item_key(item));
    }
    // What is kept: the shared items as they were (moved, not copied), then the new ones.
    let gaps_end = if n == 0 { 0 } else { kept.gap_ends[n - 1] };
    kept.gaps.truncate(gaps_end);
    kept.gap_ends.truncate(n);
    for g in &rest.gaps {
        kept.gaps.extend_from_slice(&body[g.clone()]);
        kept.gap_ends.push(kept.gaps.len());
    }
    kept.items.truncate(n);
    kept.items.extend(env.items[n..].iter().cloned());
    kept.keys.truncate(n);
    kept.keys.extend(keys[n..].iter().cloned());
    kept.item_keys.truncate(n);
    kept.item_keys.extend_from_slice(&item_keys[n..]);
    Ok(Decode {
        decoded: Decoded {
            env,
            units,
            keys,
            item_keys,
        },
        kept: Some(kept),
        reused: n,
    })
}

fn skip_ws(b: &[u8], mut at: usize) -> usize {
    while matches!(b.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// One JSON value starting at `at`, and the offset after it; `None` when there is none, or it
/// is nested deeper than [`MAX_DEPTH`].
fn value(b: &[u8], at: usize) -> Option<(&RawValue, usize)> {
    let rest = b.get(at..)?;
    let mut d = serde_json::Deserializer::from_slice(rest);
    let v: &RawValue = serde::Deserialize::deserialize(&mut d).ok()?;
    let start = (v.get().as_ptr() as usize).checked_sub(b.as_ptr() as usize)?;
    if start != at || too_deep(v.get().as_bytes()) {
        return None;
    }
    Some((v, start + v.get().len()))
}

/// A field's name at `at`, and the offset of its value (after the `:`).
fn field_name(b: &[u8], at: usize) -> Option<(String, usize)> {
    if b.get(at) != Some(&b'"') {
        return None;
    }
    let (raw, end) = value(b, at)?;
    let name: String = serde_json::from_str(raw.get()).ok()?;
    let colon = skip_ws(b, end);
    if b.get(colon) != Some(&b':') {
        return None;
    }
    Some((name, skip_ws(b, colon + 1)))
}

/// Whether a value (valid JSON) nests `[` and `{` deeper than [`MAX_DEPTH`].
fn too_deep(json: &[u8]) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &c in json {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

fn null() -> Box<RawValue> {
    RawValue::from_string("null".to_string()).unwrap_or_else(|_| unreachable!("`null` is JSON"))
}

/// The last body of one conversation, kept decoded: it belongs to the conversation's entry and
/// goes when the entry goes.
#[derive(Default)]
pub struct BodySlot {
    kept: Mutex<Option<Kept>>,
}

impl BodySlot {
    /// Keeps what a request of this conversation decoded to, for its next request (in place of
    /// what was kept before).
    pub fn keep(&self, kept: Kept) {
        if let Ok(mut k) = self.kept.lock() {
            *k = Some(kept);
        }
    }

    /// How many bytes of items this slot keeps (0 when none).
    pub fn item_bytes(&self) -> usize {
        self.kept
            .lock()
            .ok()
            .and_then(|k| k.as_ref().map(Kept::item_bytes))
            .unwrap_or(0)
    }
}

/// The slots of every live conversation, by weak reference: where a request's body is compared
/// before the request is routed.
#[derive(Default)]
pub struct Prefixes {
    slots: Mutex<Vec<Weak<BodySlot>>>,
}

impl Prefixes {
    /// A slot for a new conversation; dropped with the conversation (this keeps a weak
    /// reference only).
    pub fn slot(&self) -> Arc<BodySlot> {
        let slot = Arc::new(BodySlot::default());
        if let Ok(mut s) = self.slots.lock() {
            s.retain(|w| w.strong_count() > 0);
            s.push(Arc::downgrade(&slot));
        }
        slot
    }

    /// Decodes a request's body from the kept body that shares the longest prefix with it (in
    /// practice its conversation's last request; any other gives the same result, only more
    /// of it read), taken out of its slot; whole when none shares an item. The result is what
    /// [`decode`] gives; its `kept` goes to the slot of the conversation the request is routed
    /// to.
    pub fn decode(&self, api: Api, body: &[u8]) -> Result<Decode, DecodeError> {
        let live: Vec<Arc<BodySlot>> = match self.slots.lock() {
            Ok(mut s) => {
                s.retain(|w| w.strong_count() > 0);
                s.iter().filter_map(Weak::upgrade).collect()
            }
            Err(_) => Vec::new(),
        };
        let mut best: Option<(usize, &Arc<BodySlot>)> = None;
        for slot in &live {
            // A slot in use by another request's decode is passed over, not waited for.
            let Ok(k) = slot.kept.try_lock() else {
                continue;
            };
            let (n, at) = k.as_ref().map_or((0, 0), |k| k.shared(api, body));
            if n > 0 && best.is_none_or(|(b, _)| at > b) {
                best = Some((at, slot));
            }
        }
        let last = best.and_then(|(_, s)| s.kept.lock().ok().and_then(|mut k| k.take()));
        decode_after(last, api, body)
    }
}
