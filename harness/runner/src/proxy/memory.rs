//! How long a conversation stays in memory: one idle past [`MemoryLimits::idle`], or the
//! least recently used when more than [`MemoryLimits::conversations`] or
//! [`MemoryLimits::bytes`] are held, leaves memory. Its state is in `cells/<cell>/state.json`
//! (written after each of its requests, and again as it leaves) and its events in
//! `events.jsonl`; the agent's next request of it brings it back from them, and the requests
//! sent upstream are those it would have had without leaving. `exchanges.jsonl` says when a
//! conversation left (`evicted`, with why) and when it came back (`reloaded`).
//!
//! What stays of a conversation out of memory is its slot: its cell, model, whether it has
//! tools, and the keys requests are routed to it by (a few hundred bytes).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::record::Exchange;
use super::{Entry, Shared};

/// Starts the task that takes idle conversations out of memory, checking every half idle limit
/// (at least every 30 s); it ends with the proxy.
pub(crate) fn spawn_sweeper(shared: &Arc<Shared>) -> tokio::task::JoinHandle<()> {
    let sweeping = Arc::downgrade(shared);
    let tick =
        (shared.cfg.memory.idle / 2).clamp(Duration::from_millis(1), Duration::from_secs(30));
    tokio::spawn(async move {
        let mut every = tokio::time::interval(tick);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            let Some(shared) = sweeping.upgrade() else {
                break;
            };
            let swept = shared
                .convs
                .lock()
                .map(|mut convs| shared.sweep(&mut convs.list));
            drop(swept);
        }
    })
}

/// How long a conversation may be idle before it leaves memory by default (15 minutes: an
/// agent waiting on its user; Anthropic's prompt cache keeps a prefix 5 minutes).
pub const IDLE: Duration = Duration::from_secs(15 * 60);

/// The most conversations held in memory at once by default.
pub const MAX_HELD: usize = 500;

/// The most bytes of conversations held in memory at once by default (1 GiB, counted as the
/// size of each one's last request: the history it holds).
pub const MAX_HELD_BYTES: usize = 1 << 30;

/// When conversations leave memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryLimits {
    /// A conversation idle this long leaves.
    pub idle: Duration,
    /// The most conversations held; past it the least recently used idle ones leave.
    pub conversations: usize,
    /// The most bytes held (each conversation counted as its last request's size); past it
    /// the least recently used idle ones leave.
    pub bytes: usize,
}

impl Default for MemoryLimits {
    fn default() -> Self {
        MemoryLimits {
            idle: IDLE,
            conversations: MAX_HELD,
            bytes: MAX_HELD_BYTES,
        }
    }
}

/// A conversation's place in the proxy: in memory or not.
pub(crate) struct Slot {
    pub(crate) cell: String,
    pub(crate) model: String,
    /// Whether its requests carry tools.
    pub(crate) tools: bool,
    /// The conversation, while it is in memory.
    pub(crate) live: Option<Arc<tokio::sync::Mutex<Entry>>>,
    /// When a request of it last came.
    pub(crate) used: Instant,
    /// Its last request's size.
    pub(crate) held: usize,
    /// When it left memory.
    pub(crate) left: Option<Instant>,
}

impl Slot {
    /// A slot of a conversation in memory.
    pub(crate) fn live(entry: Arc<tokio::sync::Mutex<Entry>>, cell: &str, model: &str) -> Slot {
        Slot {
            cell: cell.to_string(),
            model: model.to_string(),
            tools: false,
            live: Some(entry),
            used: Instant::now(),
            held: 0,
            left: None,
        }
    }
}

impl Shared {
    /// Takes a conversation out of memory when nothing uses it (no request of it in progress,
    /// no stream of it still going): its files written (its state again), then dropped.
    /// Whether it left.
    pub(crate) fn evict(&self, slot: &mut Slot, why: &str) -> bool {
        let Some(arc) = &slot.live else {
            return false;
        };
        // A request routed to it holds a second reference until it is done.
        if Arc::strong_count(arc) > 1 {
            return false;
        }
        let Ok(mut e) = arc.try_lock() else {
            return false;
        };
        e.saved = None;
        let written = match self.recorder.lock() {
            Ok(mut r) => r.flush_entry(&mut e),
            Err(_) => Err(super::ProxyError::Poisoned("recorder")),
        };
        if let Err(err) = written {
            // Kept in memory: its state could not be written, so it could not come back.
            crate::progress::warn(&format!(
                "warning: proxy: conversation {} stays in memory: {err}",
                e.cell
            ));
            return false;
        }
        slot.model.clone_from(&e.model);
        slot.tools = e.tools;
        drop(e);
        slot.live = None;
        slot.left = Some(Instant::now());
        self.log(Exchange::new("evicted", "").cell(&slot.cell).note(why));
        true
    }

    /// Takes out of memory the conversations idle past the limit, then the least recently used
    /// while more than the limits are held.
    pub(crate) fn sweep(&self, slots: &mut [Slot]) {
        let limits = self.cfg.memory;
        let now = Instant::now();
        for s in slots.iter_mut() {
            if s.live.is_some() && now.duration_since(s.used) >= limits.idle {
                let why = format!(
                    "idle {} s (the limit is {} s)",
                    now.duration_since(s.used).as_secs(),
                    limits.idle.as_secs()
                );
                self.evict(s, &why);
            }
        }
        let over = |slots: &[Slot]| {
            let live = slots.iter().filter(|s| s.live.is_some());
            let (n, bytes) = live.fold((0usize, 0usize), |(n, b), s| (n + 1, b + s.held));
            if n > limits.conversations {
                Some(format!(
                    "{n} conversations held (the limit is {})",
                    limits.conversations
                ))
            } else if bytes > limits.bytes {
                Some(format!(
                    "{} MiB of conversations held (the limit is {} MiB)",
                    bytes >> 20,
                    limits.bytes >> 20
                ))
            } else {
                None
            }
        };
        while let Some(why) = over(slots) {
            let mut order: Vec<usize> = (0..slots.len())
                .filter(|&i| slots[i].live.is_some())
                .collect();
            order.sort_by_key(|&i| slots[i].used);
            // The most recent stays: it is the one a request just came for.
            order.pop();
            if !order.into_iter().any(|i| self.evict(&mut slots[i], &why)) {
                break;
            }
        }
    }
}
