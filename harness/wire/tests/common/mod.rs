//! Helpers the wire tests share.

use harness_wire::render::{assemble, render_message, Out};
use harness_wire::{decode_item, Api, Envelope};
use harness_wire::{Grouper, Piece, Unit};
use serde_json::Value;

/// Every item of a request decoded and grouped.
pub fn decode(api: Api, body: &Value) -> (Envelope, Vec<Vec<Unit>>, Vec<Piece>, Grouper) {
    let env = Envelope::parse(api, body.to_string().as_bytes()).expect("parses");
    let units: Vec<Vec<Unit>> = env
        .items
        .iter()
        .map(|i| decode_item(api, i).expect("decodes"))
        .collect();
    let mut g = Grouper::new();
    let refs: Vec<(usize, &[Unit])> = units.iter().enumerate().map(|(i, u)| (i, &u[..])).collect();
    let pieces = g.group(&refs);
    (env, units, pieces, g)
}

/// The request written back from its pieces' own units: each unit as the agent wrote it.
pub fn from_units(api: Api, env: &Envelope, units: &[Vec<Unit>], pieces: &[Piece]) -> Value {
    let entries: Vec<Out> = pieces
        .iter()
        .flat_map(|p| {
            p.units.iter().map(|r| {
                let u = &units[r.item][r.unit];
                Out::Unit(u.side(), std::borrow::Cow::Borrowed(&*u.raw))
            })
        })
        .collect();
    let items = assemble(api, entries);
    let refs: Vec<&serde_json::value::RawValue> = items.iter().map(|c| &**c).collect();
    serde_json::from_slice(&env.write(&refs, &[])).expect("JSON")
}

/// The request written back from the core messages alone (rendered, no raw units).
pub fn from_messages(api: Api, env: &Envelope, pieces: &[Piece], g: &Grouper) -> Value {
    let entries: Vec<Out> = pieces
        .iter()
        .filter_map(|p| p.message.as_ref())
        .flat_map(|m| render_message(api, m, g))
        .map(|(side, u)| Out::Unit(side, std::borrow::Cow::Owned(u)))
        .collect();
    let items = assemble(api, entries);
    let refs: Vec<&serde_json::value::RawValue> = items.iter().map(|c| &**c).collect();
    serde_json::from_slice(&env.write(&refs, &[])).expect("JSON")
}
