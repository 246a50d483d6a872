//! A request's grouping going on from the last one's: only what was appended is grouped.

use harness_core::Message;
use harness_wire::ItemKey;
use harness_wire::{Checkpoint, Grouper, Piece, Unit};

use super::{Conversation, Decoded};

/// Grouping checkpoints are kept after this many of a request's last items (an agent moves its
/// cache breakpoint to its newest messages, so the items before them come back unchanged).
const CHECKPOINTS: usize = 4;

/// The grouping of the last request, for the next one to go on from.
pub(super) struct Grouped {
    /// Its items' keys.
    item_keys: Vec<ItemKey>,
    /// Its pieces.
    pieces: Vec<Piece>,
    /// Checkpoints after some of its last items (item index, checkpoint).
    checkpoints: Vec<(usize, Checkpoint)>,
}

impl Conversation {
    /// Forgets the last request's grouping, so the next request is grouped whole (as every
    /// request was before grouping went on from the last one's; tests compare the two).
    pub fn forget_grouping(&mut self) {
        self.grouped = None;
    }

    /// The request's units grouped into messages, going on from the last request's grouping
    /// after the items both have (so only what was appended is grouped, its messages built and
    /// counted).
    pub(super) fn group(&mut self, req: &Decoded) -> Vec<Piece> {
        let n = req.units.len();
        let last = self.grouped.take();
        let start = last.as_ref().and_then(|g| {
            let common = g
                .item_keys
                .iter()
                .zip(&req.item_keys)
                .take_while(|(a, b)| a == b)
                .count();
            g.checkpoints
                .iter()
                .rev()
                .find(|(i, _)| *i < common)
                .map(|(i, c)| (*i + 1, (c, &g.pieces[..])))
        });
        let from = start.as_ref().map_or(0, |(f, _)| *f);
        let refs: Vec<(usize, &[Unit])> = (from..n).map(|i| (i, req.units[i].as_slice())).collect();
        let (grouper, pieces, checkpoints) =
            Grouper::group_from(start.map(|(_, s)| s), &refs, |i| i + CHECKPOINTS >= n);
        self.grouper = grouper;
        self.grouped = Some(Grouped {
            item_keys: req.item_keys.clone(),
            pieces: pieces.clone(),
            checkpoints,
        });
        pieces
    }

    /// The grouping kept for the next request holds the conversation's stable messages (at
    /// their piece positions), not second copies of their texts.
    pub(super) fn keep_stable(&mut self, stable_at: Vec<(usize, std::sync::Arc<Message>)>) {
        if let Some(g) = &mut self.grouped {
            for (pos, m) in stable_at {
                if let Some(p) = g.pieces.get_mut(pos) {
                    p.message = Some(m);
                }
            }
        }
    }
}
