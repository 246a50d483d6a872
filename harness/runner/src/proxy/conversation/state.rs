//! A conversation's state across a restart of the proxy (`cells/<cell>/state.json`).

use std::sync::Arc;

use harness_core::Event;
use harness_core::{Message, ToolCall};
use harness_wire::ItemKey;

use super::{changes_files, read_only, Conversation, Edit, Place, Round};

/// What a conversation keeps across a restart of the proxy (`cells/<cell>/state.json`): the
/// units it has seen, the edits and cards to apply again, the turn, what the policy remembers
/// and whether it failed. Its events come back from `events.jsonl`; the policy is built again
/// with the context the edits give it and what it remembered.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Saved {
    /// The cell.
    pub(crate) cell: String,
    /// The conversation's model.
    pub(crate) model: String,
    /// Whether its requests carry tools.
    pub(crate) tools: bool,
    /// The keys requests are routed to it by (`h:` session ids, `m:` first messages).
    pub(crate) keys: Vec<String>,
    /// The units seen, hex.
    seen: Vec<String>,
    /// Each edit: the units it covers (hex) and its message.
    edits: Vec<(Vec<String>, Message)>,
    /// Each card: the user message's identity (hex) and the message with its card.
    cards: Vec<(Vec<String>, Message)>,
    /// The turn in progress.
    turn: u32,
    /// Branches started.
    branches: u32,
    /// The policy calls the proxy answered, to show the model again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    rounds: Vec<SavedRound>,
    /// What the policy remembers that the context does not give back ([`Policy::saved_state`]).
    ///
    /// [`Policy::saved_state`]: harness_core::policy::Policy::saved_state
    #[serde(default, skip_serializing_if = "Option::is_none")]
    policy: Option<serde_json::Value>,
    /// Why the policy failed, when it did (an `exec:` process that crashed or answered out of
    /// protocol, its `save` too): the conversation brought back stays failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    failed: Option<String>,
    /// The breaker: refused policy calls of a turn (turn, count), and the turn it stopped.
    #[serde(default, skip_serializing_if = "is_zero")]
    rejected: (u32, usize),
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stopped: Option<u32>,
    /// The messages of the last request sent (each one's fingerprint and tokens), so the
    /// prompt-cache simulation of the next request compares with them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    sent: Vec<(String, u32)>,
}

fn is_zero(r: &(u32, usize)) -> bool {
    *r == (0, 0)
}

/// The last request sent before a restore, as messages: each of `context` whose fingerprint
/// it had, in its place, and a message of the same tokens for each other.
pub(super) fn reference(prints: &[(String, u32)], context: &[Arc<Message>]) -> Vec<Arc<Message>> {
    let mut by_print: std::collections::HashMap<String, Vec<&Arc<Message>>> =
        std::collections::HashMap::new();
    for m in context.iter().rev() {
        by_print.entry(fingerprint(m)).or_default().push(m);
    }
    prints
        .iter()
        .map(|(p, tokens)| match by_print.get_mut(p).and_then(Vec::pop) {
            Some(m) => Arc::clone(m),
            None => {
                let mut m = (*Message::host(0, "", harness_core::MessageKind::Summary)).clone();
                m.tokens = *tokens;
                Arc::new(m)
            }
        })
        .collect()
}

/// A message's fingerprint: the sha256 of its JSON (its process-unique id is not in it).
pub(super) fn fingerprint(m: &Message) -> String {
    m.fingerprint()
}

/// A [`Round`] as `state.json` keeps it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct SavedRound {
    turn: u32,
    calls: Message,
    results: Vec<Message>,
    /// The agent's calls it goes beside or before.
    ids: Vec<String>,
    /// Whether it goes beside them.
    beside: bool,
    /// The unit it goes after, hex (a round before an answer without calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    after: Option<String>,
}

fn key_hex(k: &ItemKey) -> String {
    harness_core::hex(&k.0)
}

fn key_of(h: &str) -> Option<ItemKey> {
    if h.len() != 64 {
        return None;
    }
    let mut k = [0u8; 32];
    for (i, b) in k.iter_mut().enumerate() {
        *b = u8::from_str_radix(h.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(ItemKey(k))
}

impl Saved {
    /// The turn in progress.
    pub(crate) fn turn(&self) -> u32 {
        self.turn
    }

    /// Why the policy failed before the state was written, if it did.
    pub fn failed(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// Only what routes requests to the conversation (cell, model, tools, keys): what the
    /// proxy keeps of a conversation out of memory.
    pub(crate) fn head(self) -> Saved {
        Saved {
            cell: self.cell,
            model: self.model,
            tools: self.tools,
            keys: self.keys,
            ..Saved::default()
        }
    }
}

impl Conversation {
    /// What changes the saved state: the turn, the edits, the cards (and the policy calls
    /// answered), the branches.
    pub(crate) fn generation(&self) -> (u32, usize, usize, u32) {
        (
            self.turn,
            self.edits.len(),
            self.cards.len() + self.rounds.len(),
            self.branches,
        )
    }

    /// The state to keep across a restart (the caller fills in cell, model, tools and keys).
    pub(crate) fn save(&self) -> Saved {
        let hexes = |ks: &[ItemKey]| ks.iter().map(key_hex).collect::<Vec<_>>();
        // Sets in order, so the same state is the same file.
        let mut seen: Vec<String> = self.seen.iter().map(key_hex).collect();
        seen.sort_unstable();
        let mut cards: Vec<(Vec<String>, Message)> = self
            .cards
            .iter()
            .map(|(k, m)| (hexes(k), (**m).clone()))
            .collect();
        cards.sort_by(|a, b| a.0.cmp(&b.0));
        // Asked first: a policy process that answers its `save` out of protocol fails here, and
        // the failure is kept with the rest. A policy that failed before is not asked.
        let policy = match self.failed_before {
            Some(_) => None,
            None => self.driver.policy_state(),
        };
        Saved {
            seen,
            edits: self
                .edits
                .iter()
                .map(|e| {
                    let mut covers = hexes(&e.covers.iter().copied().collect::<Vec<_>>());
                    covers.sort_unstable();
                    (covers, (*e.with).clone())
                })
                .collect(),
            cards,
            policy,
            failed: self.policy_failed(),
            rejected: self.rejected,
            stopped: self.stopped,
            sent: self
                .prev
                .as_deref()
                .map(|p| {
                    p.iter()
                        .map(|m| (fingerprint(m), m.tokens))
                        .collect::<Vec<_>>()
                })
                .or_else(|| self.prev_prints.clone())
                .unwrap_or_default(),
            turn: self.turn,
            branches: self.branches,
            rounds: self
                .rounds
                .iter()
                .map(|r| {
                    let (ids, beside, after) = match &r.place {
                        Place::Beside { ids } => (ids.clone(), true, None),
                        Place::Before { ids, after } => {
                            (ids.clone(), false, after.as_ref().map(key_hex))
                        }
                    };
                    SavedRound {
                        turn: r.turn,
                        calls: (*r.calls).clone(),
                        results: r.results.iter().map(|m| (**m).clone()).collect(),
                        ids,
                        beside,
                        after,
                    }
                })
                .collect(),
            ..Saved::default()
        }
    }

    /// Takes back a saved state and the events written before the restart: the tool calls
    /// already recorded are not recorded again, request indexes continue.
    pub(crate) fn restore(&mut self, saved: &Saved, events: Vec<Event>) {
        let keys = |hs: &[String]| hs.iter().filter_map(|h| key_of(h)).collect::<Vec<_>>();
        self.seen = keys(&saved.seen).into_iter().collect();
        self.edits = saved
            .edits
            .iter()
            .map(|(covers, m)| Edit {
                covers: keys(covers).into_iter().collect(),
                with: Arc::new(m.clone()),
            })
            .collect();
        self.cards = saved
            .cards
            .iter()
            .map(|(k, m)| (keys(k), Arc::new(m.clone())))
            .collect();
        self.turn = saved.turn;
        self.branches = saved.branches;
        self.failed_before = saved.failed.clone();
        if let (Some(state), None) = (&saved.policy, &saved.failed) {
            self.driver.restore_policy_state(state);
        }
        self.rejected = saved.rejected;
        self.stopped = saved.stopped;
        self.prev_prints = (!saved.sent.is_empty()).then(|| saved.sent.clone());
        self.seen_before_restore = self.seen.clone();
        self.rounds = saved
            .rounds
            .iter()
            .map(|r| Round {
                turn: r.turn,
                calls: Arc::new(r.calls.clone()),
                results: r.results.iter().map(|m| Arc::new(m.clone())).collect(),
                place: if r.beside {
                    Place::Beside { ids: r.ids.clone() }
                } else {
                    Place::Before {
                        ids: r.ids.clone(),
                        after: r.after.as_deref().and_then(key_of),
                    }
                },
            })
            .collect();
        for e in &events {
            match e {
                Event::Request(_) => self.index += 1,
                Event::ToolCall(c) => {
                    self.calls_seen.insert(c.id.clone());
                    let call = ToolCall {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        args: serde_json::from_str(&c.args).unwrap_or_default(),
                    };
                    if !c.policy_tool
                        && (changes_files(&c.name) || c.name == "Bash" && !read_only(&call))
                    {
                        self.writes += 1;
                    }
                }
                _ => {}
            }
        }
        self.events = events;
    }
}
