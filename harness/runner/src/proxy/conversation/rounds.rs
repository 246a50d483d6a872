//! The policy's own tool calls the proxy answered, shown to the model again in the agent's later
//! requests, and the breaker that stops them.
//!
//! The agent never sees a `fold_unit` call: the proxy answers it. So the agent's next request
//! lacks the call and its result, and a model shown its card again without its answer answers
//! it again. Each answered call is therefore kept as a *round* (the calls, their results) with
//! its place, and put back into every later request whose history still holds that place:
//!
//! - **beside** the agent's own calls made in the same answer: the policy's calls join the
//!   assistant message that holds the agent's calls, their results follow the agent's results
//!   (an answer with a `Bash` call and a `fold_unit` call is shown as it was made);
//! - **before** the answer the agent got after it (the model was asked again): an assistant
//!   message with the policy's calls and their results, just before the assistant message the
//!   agent got (found by its first call, else as the first answer after the request's last unit).
//!
//! The **breaker**: after [`MAX_REJECTED`] refused calls of the policy's tools in one turn, the
//! turn's card is taken off, the proxy no longer asks the model again for them, and an
//! [`Event::PolicyToolStopped`] says so.

use std::sync::Arc;

use harness_core::Event;
use harness_core::{Message, Role, ToolCall};
use harness_wire::ItemKey;

use super::{Conversation, Origin};

/// Refused calls of the policy's tools in one turn after which the proxy stops answering them
/// by asking the model again, and takes the turn's card off.
pub(crate) const MAX_REJECTED: usize = 3;

/// Where a round goes in a later request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Place {
    /// In the answer that holds the agent's calls `ids` (made in the same answer).
    Beside {
        /// The agent's calls of that answer.
        ids: Vec<String>,
    },
    /// Before the answer the agent got after it: the one holding the call `ids[0]`, else the
    /// first answer after the unit `after` (the last of the request it was answered in).
    Before {
        /// The calls of the answer the agent got (none when it called no tool).
        ids: Vec<String>,
        /// The request's last unit.
        after: Option<ItemKey>,
    },
}

/// One answer's policy calls, answered by the proxy.
#[derive(Debug, Clone)]
pub(crate) struct Round {
    /// The turn.
    pub(crate) turn: u32,
    /// The assistant message of the policy's calls alone.
    pub(crate) calls: Arc<Message>,
    /// Their results, in order.
    pub(crate) results: Vec<Arc<Message>>,
    /// Where it goes.
    pub(crate) place: Place,
}

/// One answer's policy calls answered in an agent request, before the answer the agent gets
/// is known.
#[derive(Debug)]
struct Made {
    /// The assistant message of the policy's calls.
    calls: Arc<Message>,
    /// Their results.
    results: Vec<Arc<Message>>,
    /// The agent's calls of the same answer (none: the model was asked again).
    beside: Vec<String>,
}

/// The rounds of one agent request, before the answer the agent gets is known.
#[derive(Debug, Default)]
pub(crate) struct Answered {
    rounds: Vec<Made>,
}

impl Conversation {
    /// Answers the policy's calls of one answer to request `index`; `agent_ids` are the
    /// agent's own calls of the same answer. The results, also kept in `answered` to be shown
    /// again. A refused call counts toward the breaker.
    pub(crate) fn answer_policy_calls(
        &mut self,
        calls: &[ToolCall],
        agent_ids: &[String],
        index: usize,
        answered: &mut Answered,
    ) -> Vec<Arc<Message>> {
        let turn = self.turn;
        let mut results = Vec::new();
        for c in calls {
            let (text, is_error) = self.policy_tool(c, index);
            let r = Message::tool_result(turn, c, text, is_error);
            self.transcript.push(Arc::clone(&r));
            results.push(r);
            if is_error {
                self.refused(turn);
            }
        }
        let msg = Message::assistant(turn, "", calls.to_vec());
        self.transcript.push(Arc::clone(&msg));
        answered.rounds.push(Made {
            calls: msg,
            results: results.clone(),
            beside: agent_ids.to_vec(),
        });
        results
    }

    /// A refused call of the policy's tools in `turn`: the breaker trips at [`MAX_REJECTED`].
    fn refused(&mut self, turn: u32) {
        if self.rejected.0 != turn {
            self.rejected = (turn, 0);
        }
        self.rejected.1 += 1;
        if self.rejected.1 == MAX_REJECTED && self.stopped != Some(turn) {
            self.stopped = Some(turn);
            self.cards.retain(|_, m| m.turn != turn);
            self.events.push(Event::PolicyToolStopped {
                turn,
                rejected: self.rejected.1,
            });
        }
    }

    /// Whether the breaker stopped the policy's tools in the turn in progress: the proxy does
    /// not ask the model again for them.
    pub(crate) fn policy_tools_stopped(&self) -> bool {
        self.stopped == Some(self.turn)
    }

    /// `messages` with every card taken off its prompt (the breaker stopped the card: the model,
    /// asked once more, reads the user's words and its refused calls, not the card).
    pub(crate) fn without_cards(&mut self, messages: &[Arc<Message>]) -> Vec<Arc<Message>> {
        messages
            .iter()
            .map(|m| match self.uncarded.get(&m.id).cloned() {
                Some((plain, at)) => {
                    if let Some(p) = self.position.get(&m.id).copied() {
                        self.position.insert(plain.id, p);
                    }
                    self.origins.insert(plain.id, Origin::Units(at));
                    plain
                }
                None => Arc::clone(m),
            })
            .collect()
    }

    /// The rounds of one agent request placed, now that the answer the agent got is known: its
    /// calls `delivered` (the agent's own), the request's units `req_keys`.
    pub(crate) fn keep_rounds(
        &mut self,
        answered: Answered,
        delivered: &[String],
        req_keys: &[Vec<ItemKey>],
    ) {
        let after = req_keys.iter().flatten().last().copied();
        for Made {
            calls,
            results,
            beside,
        } in answered.rounds
        {
            let place = if beside.is_empty() {
                Place::Before {
                    ids: delivered.to_vec(),
                    after,
                }
            } else {
                Place::Beside { ids: beside }
            };
            self.rounds.push(Round {
                turn: calls.turn,
                calls,
                results,
                place,
            });
        }
    }

    /// Puts the kept rounds into a request's messages where their places are; a round whose
    /// place the history no longer holds (folded, compacted) is left out.
    pub(super) fn place_rounds(&mut self, messages: &mut Vec<Arc<Message>>) {
        let rounds = self.rounds.clone();
        let mut i = 0;
        while i < rounds.len() {
            match &rounds[i].place {
                Place::Beside { ids } => {
                    self.put_beside(messages, &rounds[i], ids);
                    i += 1;
                }
                Place::Before { ids, after } => {
                    // The rounds of one place go there together, in the order they were made.
                    let n = rounds[i..]
                        .iter()
                        .take_while(|r| r.place == rounds[i].place)
                        .count();
                    self.put_before(messages, &rounds[i..i + n], ids, *after);
                    i += n;
                }
            }
        }
    }

    fn holding(messages: &[Arc<Message>], id: &str) -> Option<usize> {
        messages
            .iter()
            .position(|m| m.role == Role::Assistant && m.tool_calls.iter().any(|c| c.id == id))
    }

    fn put_beside(&mut self, messages: &mut Vec<Arc<Message>>, r: &Round, ids: &[String]) {
        let Some(at) = ids.first().and_then(|id| Self::holding(messages, id)) else {
            return;
        };
        let agent = Arc::clone(&messages[at]);
        let Some(Origin::Units(units)) = self.origins.get(&agent.id).cloned() else {
            return;
        };
        let with = match self.besides.get(&agent.id) {
            Some(w) => Arc::clone(w),
            None => {
                let mut m = (*agent).clone();
                m.tool_calls.extend(r.calls.tool_calls.iter().cloned());
                let m = m.sealed();
                self.besides.insert(agent.id, Arc::clone(&m));
                m
            }
        };
        let pos = self.position.get(&agent.id).copied();
        if let Some(p) = pos {
            self.position.insert(with.id, p);
        }
        self.origins
            .insert(with.id, Origin::Beside(units, r.calls.tool_calls.clone()));
        messages[at] = Arc::clone(&with);
        // The results after the last result of the answer's calls.
        let mut end = at + 1;
        let mut last = at;
        while end < messages.len() && messages[end].role != Role::Assistant {
            if messages[end].role == Role::Tool
                && messages[end]
                    .tool_call_id
                    .as_deref()
                    .is_some_and(|id| with.tool_calls.iter().any(|c| c.id == id))
            {
                last = end;
            }
            end += 1;
        }
        let p = self.position.get(&messages[last].id).copied().or(pos);
        for (k, res) in r.results.iter().enumerate() {
            self.made(res, p);
            messages.insert(last + 1 + k, Arc::clone(res));
        }
    }

    fn put_before(
        &mut self,
        messages: &mut Vec<Arc<Message>>,
        rs: &[Round],
        ids: &[String],
        after: Option<ItemKey>,
    ) {
        let by_call = ids.first().and_then(|id| Self::holding(messages, id));
        let at = match by_call {
            Some(at) => at,
            None => {
                let Some(anchor) = after.and_then(|k| self.holding_unit(messages, k)) else {
                    return;
                };
                messages
                    .iter()
                    .enumerate()
                    .skip(anchor + 1)
                    .find(|(_, m)| m.role == Role::Assistant)
                    .map_or(messages.len(), |(i, _)| i)
            }
        };
        let p = messages
            .get(at)
            .and_then(|m| self.position.get(&m.id).copied())
            .or_else(|| {
                at.checked_sub(1)
                    .and_then(|i| self.position.get(&messages[i].id).copied())
            });
        let mut put = Vec::new();
        for r in rs {
            put.push(Arc::clone(&r.calls));
            put.extend(r.results.iter().cloned());
        }
        for (k, m) in put.into_iter().enumerate() {
            self.made(&m, p);
            messages.insert(at + k, m);
        }
    }

    /// The index of the message made of the unit with identity `key`.
    fn holding_unit(&self, messages: &[Arc<Message>], key: ItemKey) -> Option<usize> {
        messages.iter().position(|m| match self.origins.get(&m.id) {
            Some(Origin::Units(at) | Origin::Carded(at, _) | Origin::Beside(at, _)) => {
                at.iter().any(|&(i, u)| self.key_at(i, u) == key)
            }
            _ => false,
        })
    }

    /// A message the proxy made, rendered from its core form, at the piece position `p`.
    fn made(&mut self, m: &Arc<Message>, p: Option<usize>) {
        self.origins.insert(m.id, Origin::Made);
        if let Some(p) = p {
            self.position.insert(m.id, p);
        }
    }
}
