//! An agent's request decoded: its envelope, every item's units and their identities, and each
//! item's key (the sha256 of its bytes as sent), by which a conversation sees which items a
//! request shares with the last one.

use harness_wire::{canonical_key, decode_item, item_key, Api, Envelope, ItemKey, WireError};
use harness_wire::{Unit, UnitKind};
use serde_json::value::RawValue;

/// Why an agent's request does not decode: what the API would refuse, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The request's top level.
    #[error(transparent)]
    Envelope(WireError),
    /// One item of the conversation.
    #[error("`{field}[{index}]`")]
    Item {
        /// The API's field of items (`messages`, `input`).
        field: &'static str,
        /// The item's index.
        index: usize,
        /// What is wrong with it.
        #[source]
        source: WireError,
    },
}

/// The agent's request, decoded.
pub struct Decoded {
    /// The request's top level.
    pub env: Envelope,
    /// Each item's units.
    pub units: Vec<Vec<Unit>>,
    /// Each unit's identity, per item.
    pub keys: Vec<Vec<ItemKey>>,
    /// Each item's key: the sha256 of its bytes as sent.
    pub item_keys: Vec<ItemKey>,
}

/// Decodes a request body of `api`: its envelope, every item's units and their identities. A
/// body the API would refuse is an error saying what is wrong and where.
pub fn decode(api: Api, body: &[u8]) -> Result<Decoded, DecodeError> {
    let env = Envelope::parse(api, body).map_err(DecodeError::Envelope)?;
    let mut units = Vec::with_capacity(env.items.len());
    let mut keys = Vec::with_capacity(env.items.len());
    for (i, item) in env.items.iter().enumerate() {
        let (u, k) = decode_units(api, i, item)?;
        keys.push(k);
        units.push(u);
    }
    let item_keys = env.items.iter().map(|i| item_key(i)).collect();
    Ok(Decoded {
        env,
        units,
        keys,
        item_keys,
    })
}

/// Item `index`'s units and their identities.
pub(super) fn decode_units(
    api: Api,
    index: usize,
    item: &RawValue,
) -> Result<(Vec<Unit>, Vec<ItemKey>), DecodeError> {
    let u = decode_item(api, item).map_err(|source| DecodeError::Item {
        field: api.items_field(),
        index,
        source,
    })?;
    let k = u.iter().map(|u| canonical_key(&u.raw)).collect();
    Ok((u, k))
}

impl Decoded {
    /// The identity of the conversation's first message that is not pinned (`None` when it has
    /// none).
    pub(crate) fn first_key(&self) -> Option<ItemKey> {
        self.units
            .iter()
            .zip(&self.keys)
            .flat_map(|(u, k)| u.iter().zip(k))
            .find(|(u, _)| u.kind != UnitKind::Pinned)
            .map(|(_, k)| *k)
    }
}
