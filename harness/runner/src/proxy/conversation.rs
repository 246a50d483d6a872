//! One conversation through the proxy: the agent's request read into core messages, what the
//! policy did re-applied by message identity, the policy asked for the next request, and the
//! outgoing conversation written back in the agent's API.
//!
//! Identity is the unit's [`canonical_key`](harness_wire::canonical_key) (a content block, a
//! Chat message, a Responses item, with `cache_control` left out), so a message the agent
//! resends — regrouped, its cache breakpoint moved — is recognised. What the policy did is kept as:
//!
//! - **edits**: the units a splice (a fold, a strategy's end) or a compaction replaced, and the
//!   message that stands in their place. On every later request those units are left out and the
//!   message put where the first of them stood;
//! - **cards**: the card attached to a user message, attached again each time it comes back;
//! - **stable messages**: a message made once per identity, so its id (what trim memoises, what
//!   the prompt-cache simulation compares) is the same from request to request.
//!
//! A request whose first message the conversation never saw (the agent compacted on its own, or
//! rewrote its history) starts a new branch: the policy starts again, the record says so.

// Long: `Conversation`'s request cycle (read, re-apply, ask the policy, write back) is one
// type's methods; its parts that stand alone are the child modules below.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use harness_core::driver::{Driver, Next};
use harness_core::policy::Policy;
use harness_core::spec::TaskSpec;
use harness_core::text_agent::TEXT_TOOL;
use harness_core::tokens;
use harness_core::Purpose;
use harness_core::{cached_prefix_tokens, call_path, Context};
use harness_core::{Event, NeedWatch, RequestRecord, ToolCallRecord};
use harness_core::{Message, MessageKind, Role, ToolCall, ToolSpec};
use harness_wire::{Api, Envelope, ItemKey};
use harness_wire::{Grouper, UnitKind};
use policies::PolicyError;
use serde_json::value::RawValue;

/// Other agents' tools whose calls change files (foldbench's own that do are those that do not
/// only read: [`changes_files`]).
const WRITING_TOOLS: [&str; 6] = [
    "Edit",
    "MultiEdit",
    "Write",
    "NotebookEdit",
    "apply_patch",
    "exec_command",
];

/// Whether calls of the tool `name` change files: a later equal call is a re-run only if none
/// of these ran in between (the proxy sees no workspace, so this count stands for its state).
fn changes_files(name: &str) -> bool {
    WRITING_TOOLS.contains(&name) || harness_core::tools::find(name).is_some_and(|t| !t.reads_only)
}

/// A splice or a compaction, kept to be applied again: the units it replaced and what stands in
/// their place.
#[derive(Debug, Clone)]
struct Edit {
    covers: HashSet<ItemKey>,
    with: Arc<Message>,
}

mod decode;
mod grouping;
mod needs;
pub(crate) mod prefix;
mod rendering;
mod rounds;
mod state;
mod text;

pub use decode::{decode, DecodeError, Decoded};
use grouping::Grouped;
pub use prefix::{decode_after, BodySlot, Decode, Kept, Prefixes};
pub(crate) use rounds::{Answered, Place, Round};
pub(crate) use state::Saved;

/// Where a message's units are in the request (item, unit).
type Units = Vec<(usize, usize)>;

/// Where a message of the live context came from.
#[derive(Debug, Clone)]
enum Origin {
    /// The agent's units (indexes into the request).
    Units(Vec<(usize, usize)>),
    /// The agent's units with a card attached.
    Carded(Vec<(usize, usize)>, String),
    /// An edit's message (index into the edits).
    Edit,
    /// The agent's answer (its units) with the policy's calls of the same answer beside its own.
    Beside(Vec<(usize, usize)>, Vec<ToolCall>),
    /// A message the proxy made (a policy call answered, its result): rendered from its form.
    Made,
    /// The model's answer as the upstream wrote it (its parts), asked again after a policy call.
    Raw(Vec<Box<RawValue>>),
}

/// What the proxy sends upstream for one agent request.
pub struct Outgoing {
    /// The body.
    pub body: Vec<u8>,
    /// The request's record (index, turn, sizes).
    pub record: RequestRecord,
    /// The messages sent (for the prompt-cache reference of the next request).
    pub(crate) messages: Vec<Arc<Message>>,
}

/// What the conversation needs next.
pub enum Step {
    /// Send this.
    Send(Outgoing),
    /// Ask the upstream for a summary first (a non-streamed body of the agent's API), then call
    /// [`Conversation::compacted`].
    Compact {
        /// The summary request's body.
        body: Vec<u8>,
        /// Its record.
        record: RequestRecord,
        /// Whether it is a fold policy's emergency path.
        emergency: bool,
    },
}

/// An archive to write before a splice is applied (the driver's).
pub(crate) use harness_core::driver::PendingSplice;

/// What builds a conversation's policy, again on each branch.
pub(crate) type MakePolicy = Box<dyn Fn() -> Result<Box<dyn Policy>, PolicyError> + Send + Sync>;

/// One conversation's state.
pub struct Conversation {
    /// The policy (started again on a new branch) and the live context of the request in
    /// progress.
    driver: Driver,
    make_policy: MakePolicy,
    /// Message per identity (its units' keys and its turn), so ids are stable.
    known: HashMap<Vec<ItemKey>, Arc<Message>>,
    /// Every unit seen, for branch detection.
    seen: HashSet<ItemKey>,
    edits: Vec<Edit>,
    /// User message identity → the same message with its card.
    cards: HashMap<Vec<ItemKey>, Arc<Message>>,
    /// The highest turn started.
    turn: u32,
    /// The messages of the previous request.
    prev: Option<Vec<Arc<Message>>>,
    /// The next request's index.
    index: usize,
    /// Tool calls recorded (by id).
    calls_seen: HashSet<String>,
    /// Writing calls so far.
    writes: usize,
    /// Branches started after the first.
    pub(crate) branches: u32,
    /// The events, in order.
    pub events: Vec<Event>,
    /// Every message the conversation's model read that the agent did not write (cards, fold
    /// results, summaries) and every message of the agent's, once, in order: those not yet
    /// written to `transcript.jsonl` (the proxy empties it as it writes).
    pub(crate) transcript: Vec<Arc<Message>>,
    /// Where each message of the live context came from.
    origins: HashMap<u64, Origin>,
    /// The request in progress: system and tools, prefix tokens, pinned pieces.
    system: Arc<str>,
    tools: Arc<[ToolSpec]>,
    prefix: u32,
    prefix_of: Option<(Arc<str>, usize)>,
    pinned: Vec<(usize, Vec<(usize, usize)>)>,
    /// Original position (piece index) of each message id of the request in progress.
    position: HashMap<u64, usize>,
    /// The same, by what the agent's messages say (`content_key` in `rendering.rs`): where a message a policy
    /// rewrote (a trimmed answer, a cleared result) stood, so the pinned entries (Claude Code's
    /// `system` entry) go out where they stood around it.
    content_pos: HashMap<(u32, u64), usize>,
    /// The names of the agent's own tools (the request's, without the policy's).
    agent_tools: Arc<[String]>,
    /// A grouper over the request in progress (names the forms of calls when rendering).
    grouper: Grouper,
    /// The new turn's messages, joined to the context by [`Conversation::plan`].
    pending_rest: Vec<Arc<Message>>,
    /// The unit identities of the request in progress.
    current_keys: Vec<Vec<ItemKey>>,
    /// The turn [`Conversation::end_last_turn`] ended.
    ended: Option<u32>,
    /// The task whose needs the harness watches (`run --agent`), and the watch of the turn in
    /// progress.
    needs: Option<Arc<TaskSpec>>,
    watch: Option<(u32, NeedWatch)>,
    /// The last request's grouping.
    grouped: Option<Grouped>,
    /// A text call's result a policy rewrote → it in the agent's observation form.
    agent_form: HashMap<u64, Arc<Message>>,
    /// The policy calls the proxy answered, shown to the model again where they were made.
    rounds: Vec<Round>,
    /// An agent's answer (by id) → the same answer with the policy's calls beside its own.
    besides: HashMap<u64, Arc<Message>>,
    /// Refused policy calls of a turn (turn, count), and the turn the breaker stopped.
    rejected: (u32, usize),
    stopped: Option<u32>,
    /// The messages the cache held before the request in progress (restored when it fails).
    prev_ok: Option<Vec<Arc<Message>>>,
    /// A carded prompt of the request in progress (by id) → the prompt without its card, and
    /// its units.
    uncarded: HashMap<u64, (Arc<Message>, Units)>,
    /// The agent's answers with thinking in the request in progress, by what they say without
    /// it ([`rendering::answer_key`]): a policy that clears an answer's thinking makes another
    /// message of it, written as the agent's blocks without the thinking ones.
    thought: HashMap<(u32, u64), Units>,
    /// After a restore: the last request's messages as fingerprints and tokens (the cache
    /// simulation compares with them while no request was sent since).
    prev_prints: Option<Vec<(String, u32)>>,
    /// After a restore: the units seen before it (a message of them is in the transcript
    /// already, its calls recorded).
    seen_before_restore: HashSet<ItemKey>,
    /// Why the policy failed before the conversation left memory (or the proxy stopped): a
    /// conversation brought back stays failed, as it was in memory, until a new branch starts
    /// the policy again.
    failed_before: Option<String>,
}

impl Conversation {
    /// A conversation under the policy `make_policy` builds.
    pub fn new(make_policy: MakePolicy) -> Result<Conversation, PolicyError> {
        Ok(Conversation {
            driver: Driver::new(make_policy()?, 0),
            make_policy,
            known: HashMap::new(),
            seen: HashSet::new(),
            edits: Vec::new(),
            cards: HashMap::new(),
            turn: 0,
            prev: None,
            index: 0,
            calls_seen: HashSet::new(),
            writes: 0,
            branches: 0,
            events: Vec::new(),
            transcript: Vec::new(),
            origins: HashMap::new(),
            system: Arc::from(""),
            tools: Arc::from(Vec::new()),
            prefix: 0,
            prefix_of: None,
            pinned: Vec::new(),
            position: HashMap::new(),
            content_pos: HashMap::new(),
            grouper: Grouper::new(),
            agent_tools: Arc::from(Vec::new()),
            pending_rest: Vec::new(),
            current_keys: Vec::new(),
            ended: None,
            needs: None,
            watch: None,
            grouped: None,
            agent_form: HashMap::new(),
            rounds: Vec::new(),
            besides: HashMap::new(),
            rejected: (0, 0),
            stopped: None,
            prev_ok: None,
            uncarded: HashMap::new(),
            prev_prints: None,
            seen_before_restore: HashSet::new(),
            thought: HashMap::new(),
            failed_before: None,
        })
    }

    /// The policy's name with its parameters.
    pub(crate) fn policy_name(&self) -> String {
        self.driver.policy().name()
    }

    /// Why the policy cannot go on, once it cannot (an `exec:` process that crashed, hung or
    /// answered out of protocol), in memory or before the conversation left it.
    pub(crate) fn policy_failed(&self) -> Option<String> {
        self.driver.failed().or_else(|| self.failed_before.clone())
    }

    /// Whether the policy owns a tool (its calls are answered by the proxy).
    pub(crate) fn owns_tool(&self, name: &str) -> bool {
        self.driver.owns_tool(name)
    }

    /// The policy's own tools, offered beside the agent's.
    pub(crate) fn policy_tools(&self) -> Vec<ToolSpec> {
        self.driver.policy().tools()
    }

    /// Whether this request continues the conversation: its first message was seen before (or
    /// nothing was seen yet).
    pub fn continues(&self, req: &Decoded) -> bool {
        self.seen.is_empty() || req.first_key().is_none_or(|k| self.seen.contains(&k))
    }

    /// Starts a new branch: the policy, its edits and cards start again.
    pub(crate) fn new_branch(&mut self) -> Result<(), PolicyError> {
        self.driver.set_policy((self.make_policy)()?);
        self.known.clear();
        self.seen.clear();
        self.edits.clear();
        self.cards.clear();
        self.turn = 0;
        self.prev = None;
        self.grouped = None;
        self.rounds.clear();
        self.besides.clear();
        self.stopped = None;
        self.prev_prints = None;
        self.seen_before_restore.clear();
        self.failed_before = None;
        self.branches += 1;
        Ok(())
    }

    /// The prefix (system prompt and tools, the policy's added) counted again when the request's
    /// differs from the last one's.
    fn refresh_prefix(&mut self, req: &Decoded) -> Arc<str> {
        let system: Arc<str> = Arc::from(req.env.system.as_str());
        let same_prefix = self
            .prefix_of
            .as_ref()
            .is_some_and(|(s, n)| **s == *system && *n == req.env.tools.len());
        if !same_prefix {
            self.agent_tools = req.env.tools.iter().map(|t| t.name.clone()).collect();
            let mut tools = req.env.tools.clone();
            tools.extend(self.driver.policy().tools());
            self.prefix = tokens::prefix_tokens(&system, &tools);
            self.driver.set_prefix(self.prefix);
            self.tools = Arc::from(tools);
            self.prefix_of = Some((Arc::clone(&system), req.env.tools.len()));
        }
        system
    }

    /// Reads a request: its messages with the edits and cards applied; a new turn ends the
    /// previous one (its splices returned, to be archived and then applied with
    /// [`Conversation::apply_splice`]) and gets the policy's card. Call [`Conversation::plan`]
    /// after the splices.
    pub fn read(&mut self, req: &Decoded) -> Vec<PendingSplice> {
        self.driver.begin_request();
        self.current_keys = req.keys.clone();
        let system = self.refresh_prefix(req);
        self.system = system;
        let pieces = self.group(req);
        self.pinned.clear();
        self.origins.clear();
        self.position.clear();
        self.content_pos.clear();
        self.uncarded.clear();
        self.thought.clear();
        let mut messages: Vec<Arc<Message>> = Vec::new();
        let mut placed: HashSet<usize> = HashSet::new();
        let mut stable_at: Vec<(usize, Arc<Message>)> = Vec::new();
        for (pos, p) in pieces.iter().enumerate() {
            let at: Vec<(usize, usize)> = p.units.iter().map(|u| (u.item, u.unit)).collect();
            let Some(m) = &p.message else {
                self.pinned.push((pos, at));
                continue;
            };
            let keys: Vec<ItemKey> = at.iter().map(|&(i, u)| req.keys[i][u]).collect();
            for k in &keys {
                self.seen.insert(*k);
            }
            // Units an edit replaced: left out, the edit's message where the first stood.
            let kept: Vec<usize> = (0..keys.len())
                .filter(
                    |&j| match self.edits.iter().position(|e| e.covers.contains(&keys[j])) {
                        Some(e) => {
                            if placed.insert(e) {
                                let with = Arc::clone(&self.edits[e].with);
                                self.position.insert(with.id, pos);
                                self.origins.insert(with.id, Origin::Edit);
                                messages.push(with);
                            }
                            false
                        }
                        None => true,
                    },
                )
                .collect();
            if kept.is_empty() {
                continue;
            }
            let (m, at, keys) = if kept.len() == keys.len() {
                (Arc::clone(m), at, keys)
            } else {
                let at: Vec<(usize, usize)> = kept.iter().map(|&j| at[j]).collect();
                let keys: Vec<ItemKey> = kept.iter().map(|&j| keys[j]).collect();
                (rebuilt(m, &at, req), at, keys)
            };
            let mut id_key = keys.clone();
            id_key.push(ItemKey(turn_key(m.turn)));
            let whole = kept.len() == p.units.len();
            let stable = match self.known.get(&id_key) {
                Some(s) => Arc::clone(s),
                // A message read before the conversation was restored: written and its calls
                // recorded then.
                None if keys.iter().all(|k| self.seen_before_restore.contains(k)) => {
                    self.known.insert(id_key.clone(), Arc::clone(&m));
                    m
                }
                None => {
                    self.transcript.push(Arc::clone(&m));
                    self.note_calls(&m);
                    if let (Some((_, w)), Role::Tool, Some(id)) =
                        (&mut self.watch, &m.role, m.tool_call_id.as_deref())
                    {
                        w.result(id, &m.text);
                    }
                    self.known.insert(id_key.clone(), Arc::clone(&m));
                    m
                }
            };
            if whole {
                stable_at.push((pos, Arc::clone(&stable)));
            }
            let (msg, origin) = match self.cards.get(&id_key) {
                Some(c) => {
                    self.uncarded
                        .insert(c.id, (Arc::clone(&stable), at.clone()));
                    (
                        Arc::clone(c),
                        Origin::Carded(at, c.card.clone().unwrap_or_default()),
                    )
                }
                None => (stable, Origin::Units(at)),
            };
            self.note_position(&msg, pos);
            if msg.thinking.is_some() {
                if let Origin::Units(at) = &origin {
                    self.thought.insert(rendering::answer_key(&msg), at.clone());
                }
            }
            self.origins.insert(msg.id, origin);
            messages.push(msg);
        }
        self.keep_stable(stable_at);
        self.place_rounds(&mut messages);
        self.take_turn(messages)
    }

    /// The request's messages become the live context; a new turn ends the previous one (the
    /// messages before its prompt), whose splices are returned.
    fn take_turn(&mut self, mut messages: Vec<Arc<Message>>) -> Vec<PendingSplice> {
        let last_turn = messages.iter().map(|m| m.turn).max().unwrap_or(0);
        let mut splices = Vec::new();
        if last_turn > self.turn {
            // A new turn: the messages before its prompt end the previous turn.
            let first_new = messages
                .iter()
                .position(|m| m.turn > self.turn && m.is_human())
                .unwrap_or(messages.len());
            let rest = messages.split_off(first_new);
            *self.driver.context_mut() = Context {
                messages,
                turn: self.turn,
                tools: Some(Arc::clone(&self.agent_tools)),
            };
            if self.turn > 0 {
                let next_user = rest
                    .iter()
                    .find(|m| m.is_human())
                    .map(|m| needs::user_words(&m.text));
                splices = self
                    .driver
                    .end_turn(harness_core::ARCHIVE_DIR, next_user.as_deref());
            }
            self.pending_rest = rest;
            self.turn = last_turn;
        } else {
            *self.driver.context_mut() = Context {
                messages,
                turn: self.turn,
                tools: Some(Arc::clone(&self.agent_tools)),
            };
            self.pending_rest = Vec::new();
        }
        splices
    }

    /// The files the policy wants written (a cut tool output, the history before a summary).
    pub(crate) fn offloads(&mut self) -> Vec<harness_core::policy::Offload> {
        self.driver.offloads()
    }

    /// The host wrote (`written`) or could not write an offloaded file.
    pub(crate) fn offloaded(&mut self, path: &str, written: bool) {
        self.driver.offloaded(path, written);
    }

    /// Applies a splice whose archive was written; `None` when its range is gone.
    pub fn apply_splice(
        &mut self,
        p: &PendingSplice,
        turn: u32,
        written: Result<(), super::ProxyError>,
    ) -> Option<Arc<Message>> {
        if let Err(reason) = written {
            self.events.push(Event::SpliceFailed {
                turn,
                reason: reason.to_string(),
            });
            return None;
        }
        let before = self.driver.context().messages.clone();
        let restored = match (&self.prev, &self.prev_prints) {
            (None, Some(prints)) => Some(state::reference(prints, &before)),
            _ => None,
        };
        let reference = self
            .prev
            .as_deref()
            .or(restored.as_deref())
            .unwrap_or(&before);
        let mut folded = match self.driver.apply_splice(p, Some(reference)) {
            Ok(folded) => folded,
            Err(reason) => {
                self.events.push(Event::SpliceFailed {
                    turn,
                    reason: reason.to_string(),
                });
                return None;
            }
        };
        self.record_edit(&before);
        // The proxy names the turn it ended (the one before the new turn's first prompt).
        folded.turn = turn;
        self.events.extend(folded.events());
        self.transcript.push(Arc::clone(&folded.message));
        Some(folded.message)
    }

    /// The turn in progress.
    pub fn turn(&self) -> u32 {
        self.turn
    }

    /// After the splices: the new turn's messages join the context (the first user message
    /// with the policy's card), and the policy decides the request.
    pub fn plan(&mut self, api: Api, env: &Envelope, req: &Decoded) -> Step {
        let mut rest = std::mem::take(&mut self.pending_rest);
        // A history that arrives with whole turns before the one in progress (the first
        // request a proxy sees of a conversation, or a branch): those turns join the context
        // first, as they would have turn by turn, so the new turn's card sees them.
        let split = rest
            .iter()
            .position(|m| m.turn >= self.turn)
            .unwrap_or(rest.len());
        if split > 0 {
            let earlier: Vec<Arc<Message>> = rest.drain(..split).collect();
            let mut started = 0;
            for m in earlier {
                if m.turn != started {
                    started = m.turn;
                    self.events.push(Event::TurnStarted {
                        turn: m.turn,
                        user: if m.is_human() {
                            needs::user_words(&m.text)
                        } else {
                            String::new()
                        },
                        card_tokens: None,
                        card_turns: Vec::new(),
                    });
                }
                self.driver.context_mut().turn = m.turn;
                self.driver.push(m);
            }
        }
        if !rest.is_empty() {
            let mut carded = false;
            let card = self.driver.start_turn(self.turn);
            self.events.push(Event::TurnStarted {
                turn: self.turn,
                user: rest
                    .iter()
                    .find(|m| m.is_human())
                    .map(|m| needs::user_words(&m.text))
                    .unwrap_or_default(),
                card_tokens: card.as_ref().map(|c| tokens::count(&c.text) + 1),
                card_turns: card.as_ref().map(|c| c.turns.clone()).unwrap_or_default(),
            });
            for m in rest {
                match (
                    &card,
                    carded,
                    m.is_human(),
                    self.origins.get(&m.id).cloned(),
                ) {
                    (Some(c), false, true, Some(Origin::Units(at))) => {
                        carded = true;
                        let with = m.with_card(c.text.clone());
                        let keys: Vec<ItemKey> = at.iter().map(|&(i, u)| req.keys[i][u]).collect();
                        let mut id_key = keys;
                        id_key.push(ItemKey(turn_key(m.turn)));
                        self.cards.insert(id_key, Arc::clone(&with));
                        if let Some(p) = self.position.get(&m.id).copied() {
                            self.position.insert(with.id, p);
                        }
                        self.uncarded.insert(with.id, (Arc::clone(&m), at.clone()));
                        self.origins
                            .insert(with.id, Origin::Carded(at, c.text.clone()));
                        self.transcript.push(Arc::clone(&with));
                        self.driver.push(with);
                    }
                    _ => self.driver.push(m),
                }
            }
        }
        self.driver.context_mut().turn = self.turn;
        match self.driver.next_request() {
            Next::Summarise(summary) => {
                let (items, _) = self.render(api, req, &summary.messages, false);
                let refs: Vec<&RawValue> = items.iter().map(|c| &**c).collect();
                let body = rendering::with_stream_off(&env.write(&refs, &[]));
                let record = self.record_request(
                    Purpose::Compaction,
                    &summary.messages,
                    Some(summary.action().into()),
                );
                self.prev = Some(summary.messages);
                Step::Compact {
                    body,
                    record,
                    emergency: summary.emergency,
                }
            }
            Next::Send { messages, action } => self.send(api, env, req, messages, action),
        }
    }

    /// The upstream's summary: the policy compacts the context with it.
    pub fn compacted(&mut self, summary: &str, record: &RequestRecord, output_tokens: u64) {
        let before = self.driver.context().messages.clone();
        let msg = Message::host(self.turn, summary, MessageKind::Summary);
        let done = self.driver.compacted(&before, Arc::clone(&msg));
        self.record_edit(&before);
        self.transcript.push(msg);
        self.events.push(Event::Compaction {
            turn: self.turn,
            emergency: record.action.as_deref() == Some("emergency compaction"),
            input_tokens: record.tokens,
            output_tokens,
            rewritten_tokens: done.rewritten_tokens,
        });
    }

    fn send(
        &mut self,
        api: Api,
        env: &Envelope,
        req: &Decoded,
        messages: Vec<Arc<Message>>,
        action: Option<String>,
    ) -> Step {
        let messages = self.in_agent_form(messages);
        let tools = self.driver.policy().tools();
        let untouched = action.is_none()
            && tools.is_empty()
            && messages.len() == self.origins.len()
            && messages
                .iter()
                .all(|m| matches!(self.origins.get(&m.id), Some(Origin::Units(_))));
        let body = if untouched {
            env.write(&env.item_refs(), &[])
        } else {
            let (items, _) = self.render(api, req, &messages, true);
            let refs: Vec<&RawValue> = items.iter().map(|c| &**c).collect();
            env.write(&refs, &tools)
        };
        self.prev_ok = self.prev.clone();
        let record = self.record_request(Purpose::Turn, &messages, action);
        self.prev = Some(messages.clone());
        Step::Send(Outgoing {
            body,
            record,
            messages,
        })
    }

    /// Records a request of `messages` (the cache simulation against the previous one).
    fn record_request(
        &mut self,
        purpose: Purpose,
        messages: &[Arc<Message>],
        action: Option<String>,
    ) -> RequestRecord {
        let tokens =
            u64::from(self.prefix) + messages.iter().map(|m| u64::from(m.tokens)).sum::<u64>();
        let cached = match (&self.prev, &self.prev_prints) {
            // Restored: the last request sent before is known by its messages' fingerprints.
            (None, Some(prints)) => {
                u64::from(self.prefix)
                    + prints
                        .iter()
                        .zip(messages)
                        .take_while(|((p, _), m)| *p == state::fingerprint(m))
                        .map(|(_, m)| u64::from(m.tokens))
                        .sum::<u64>()
            }
            _ => cached_prefix_tokens(self.prefix, self.prev.as_deref(), messages),
        };
        if purpose == Purpose::Turn {
            self.watch_request(messages);
        }
        let index = self.index;
        self.index += 1;
        let record = RequestRecord {
            index,
            turn: self.turn,
            purpose,
            tokens,
            cached_tokens: cached,
            written_tokens: tokens.saturating_sub(cached),
            messages: messages.len(),
            visible_results: Context::visible_results(messages),
            action,
            mode: self.driver.policy().mode().map(|m| m.name),
            agent: None,
            model: None,
        };
        self.events.push(Event::Request(record.clone()));
        record
    }

    /// The record of a request that the proxy made again for the same agent request (the
    /// model asked again after a policy tool's call), with the messages it held.
    pub(crate) fn record_continuation(&mut self, messages: &[Arc<Message>]) -> RequestRecord {
        self.prev_ok = self.prev.clone();
        self.record_request(
            Purpose::Turn,
            messages,
            Some("after a policy tool call".into()),
        )
    }

    /// Records the upstream's answer to request `index`.
    pub(crate) fn record_response(
        &mut self,
        index: usize,
        usage: Option<harness_core::Usage>,
        output_tokens: u64,
        model_ms: u64,
    ) {
        self.events.push(Event::Response {
            index,
            output_tokens,
            usage,
            model_ms,
        });
    }

    /// Answers a call of the policy's own tool (in the answer to request `index`): the result
    /// text, whether it was refused; the call and its result are recorded.
    pub(crate) fn policy_tool(&mut self, call: &ToolCall, index: usize) -> (String, bool) {
        let answer = self.driver.answer(call);
        if let Some(mode) = answer.entered {
            self.events.push(Event::StrategyEntered {
                turn: self.turn,
                mode,
            });
        }
        let reply = answer.reply;
        let result = Message::tool_result(self.turn, call, reply.text.clone(), reply.is_error);
        self.events
            .push(Event::ToolCall(ToolCallRecord::policy_call(
                self.turn,
                index,
                call,
                reply.is_error,
                serde_json::to_value(&reply.outcome).ok(),
                result.tokens,
            )));
        self.calls_seen.insert(call.id.clone());
        (reply.text, reply.is_error)
    }

    /// Sets the messages the next request's cache simulation compares with.
    pub(crate) fn set_sent(&mut self, messages: Vec<Arc<Message>>) {
        self.prev = Some(messages);
    }

    /// The messages of the request asked again after the model's answer with policy calls:
    /// what was sent, the answer as the upstream wrote it (its `parts`: thinking, text and the
    /// calls, so nothing the API needs back is lost) and the calls' results.
    pub(crate) fn continuation(
        &mut self,
        api: Api,
        sent: &[Arc<Message>],
        answer: &harness_wire::Answer,
        results: &[Arc<Message>],
    ) -> Vec<Arc<Message>> {
        let m = Message::assistant(self.turn, answer.text.clone(), answer.calls.clone());
        // Chat's message object carries fields an agent does not send back; it is written
        // from its form.
        let raw: Vec<Box<RawValue>> = answer
            .parts
            .iter()
            .filter_map(|p| serde_json::value::to_raw_value(p).ok())
            .collect();
        if api != Api::Chat && raw.len() == answer.parts.len() && !raw.is_empty() {
            self.origins.insert(m.id, Origin::Raw(raw));
        }
        let mut messages = sent.to_vec();
        messages.push(m);
        messages.extend(results.iter().cloned());
        messages
    }

    /// The request `index` got no answer (an error status, a stream cut, an upstream out of
    /// reach): recorded apart, and the cache's reference goes back to the request before it.
    pub(crate) fn request_failed(&mut self, index: usize, status: Option<u16>, reason: &str) {
        self.events.push(Event::RequestFailed {
            index,
            status,
            reason: reason.to_string(),
        });
        self.prev = self.prev_ok.clone();
    }

    /// Records the agent's tool calls of a message seen for the first time: re-runs are equal
    /// calls with no writing call between them; archive reads are calls whose path is under
    /// the archive folder.
    fn note_calls(&mut self, m: &Message) {
        for c in &m.tool_calls {
            if !self.calls_seen.insert(c.id.clone()) || self.driver.owns_tool(&c.name) {
                continue;
            }
            let target = call_path(c).or_else(|| command_path(c));
            let archive_read = target.as_deref().is_some_and(is_archive_target)
                || command_text(c).is_some_and(|t| t.contains(harness_core::ARCHIVE_DIR));
            self.events.push(Event::ToolCall(ToolCallRecord {
                turn: m.turn,
                request: self.index.saturating_sub(1),
                id: c.id.clone(),
                name: c.name.clone(),
                args: c.canonical_args(),
                target,
                fingerprint: Some(format!("writes:{}", self.writes)),
                archive_read,
                is_error: false,
                policy_tool: false,
                outcome: None,
                result_tokens: 0,
                cached: false,
                agent: None,
            }));
            if changes_files(&c.name)
                || matches!(c.name.as_str(), "Bash" | TEXT_TOOL) && !read_only(c)
            {
                self.writes += 1;
            }
        }
    }

    /// Notes what an edit of the context (a splice, a compaction) replaced: the messages that
    /// left, by the units they came from, and the one that came in.
    fn record_edit(&mut self, before: &[Arc<Message>]) {
        let now: HashSet<u64> = self
            .driver
            .context()
            .messages
            .iter()
            .map(|m| m.id)
            .collect();
        let was: HashSet<u64> = before.iter().map(|m| m.id).collect();
        let added: Vec<Arc<Message>> = self
            .driver
            .context()
            .messages
            .iter()
            .filter(|m| !was.contains(&m.id))
            .cloned()
            .collect();
        let Some(with) = added.first().cloned() else {
            return;
        };
        let mut covers: HashSet<ItemKey> = HashSet::new();
        let mut superseded: Vec<usize> = Vec::new();
        for m in before.iter().filter(|m| !now.contains(&m.id)) {
            match self.origins.get(&m.id) {
                Some(Origin::Units(at) | Origin::Carded(at, _) | Origin::Beside(at, _)) => {
                    covers.extend(at.iter().map(|&(i, u)| self.key_at(i, u)));
                }
                Some(Origin::Edit) => {
                    if let Some(e) = self.edits.iter().position(|e| e.with.id == m.id) {
                        covers.extend(self.edits[e].covers.iter().copied());
                        superseded.push(e);
                    }
                }
                Some(Origin::Made | Origin::Raw(_)) | None => {}
            }
        }
        superseded.sort_unstable();
        for e in superseded.into_iter().rev() {
            self.edits.remove(e);
        }
        if let Some(p) = before
            .iter()
            .find(|m| !now.contains(&m.id))
            .and_then(|m| self.position.get(&m.id).copied())
        {
            self.position.insert(with.id, p);
        }
        self.origins.insert(with.id, Origin::Edit);
        self.edits.push(Edit { covers, with });
    }

    fn key_at(&self, i: usize, u: usize) -> ItemKey {
        self.current_keys
            .get(i)
            .and_then(|k| k.get(u))
            .copied()
            .unwrap_or(ItemKey([0; 32]))
    }
}

/// A key for a turn number (part of a message's identity).
fn turn_key(turn: u32) -> [u8; 32] {
    let mut k = [0xffu8; 32];
    k[..4].copy_from_slice(&turn.to_le_bytes());
    k
}

/// A message made again from some of its units (the others were edited away).
fn rebuilt(m: &Message, at: &[(usize, usize)], req: &Decoded) -> Arc<Message> {
    let mut text = Vec::new();
    let mut calls = Vec::new();
    for &(i, u) in at {
        match &req.units[i][u].kind {
            UnitKind::UserText(t) | UnitKind::Assistant { text: t, .. } if !t.is_empty() => {
                text.push(t.clone());
            }
            _ => {}
        }
        if let UnitKind::Assistant { calls: c, .. } = &req.units[i][u].kind {
            calls.extend(c.iter().cloned());
        }
    }
    match m.role {
        Role::Assistant => Message::assistant(m.turn, text.join("\n\n"), calls),
        _ => {
            let mut c = m.clone();
            c.text = text.join("\n\n");
            c.sealed()
        }
    }
}

/// A shell command's text (`Bash`'s `command`, `exec_command`'s `cmd`, `shell`'s `command`).
fn command_text(c: &ToolCall) -> Option<&str> {
    c.str_arg("command").or_else(|| c.str_arg("cmd"))
}

/// The path a shell command reads, when it is a plain `cat`/`head`/`tail`/`sed -n` of one file.
fn command_path(c: &ToolCall) -> Option<String> {
    let cmd = command_text(c)?;
    let mut words = cmd.split_whitespace();
    let prog = words.next()?;
    if !matches!(prog, "cat" | "head" | "tail" | "less" | "nl") {
        return None;
    }
    words
        .rfind(|w| !w.starts_with('-'))
        .map(harness_core::normalize_path)
}

/// Whether a path (relative, or absolute inside the agent's folder) is under the archive folder.
fn is_archive_target(p: &str) -> bool {
    let dir = harness_core::ARCHIVE_DIR;
    p == dir || p.starts_with(&format!("{dir}/")) || p.contains(&format!("/{dir}/"))
}

/// Whether a `Bash` call only reads (a `cat`, `ls`, `grep`, … with no redirection).
fn read_only(c: &ToolCall) -> bool {
    let Some(cmd) = command_text(c) else {
        return false;
    };
    let first = cmd.split_whitespace().next().unwrap_or("");
    !cmd.contains('>')
        && matches!(
            first,
            "cat" | "ls" | "grep" | "rg" | "head" | "tail" | "find" | "wc" | "sed" | "nl" | "pwd"
        )
        && !cmd.contains("sed -i")
}
