//! The pieces of a conversation as an API writes them, and their grouping into core messages.
//!
//! A [`Unit`] is the smallest piece an API lets a host keep or leave out on its own, with its raw
//! JSON: an Anthropic content block, a Chat message, a Responses item. Each API's `decode_item`
//! turns one message or item into units; the [`Grouper`] turns units into the core's messages:
//!
//! - consecutive user-side text units are one user message; it opens a new turn when it follows
//!   the model's closing answer (an answer without tool calls) or starts the conversation, or
//!   when it holds the user's own words right after tool results (Claude Code on `--resume`
//!   sends the next prompt in the message of the last turn's results, that turn's closing text
//!   moved before its calls), and otherwise belongs to the turn in progress (Claude Code's
//!   reminders beside tool results);
//! - each tool result is one tool message, named after the call it answers;
//! - consecutive model-side units (text, tool calls, thinking or reasoning) are one assistant
//!   message;
//! - `system` and `developer` units are *pinned*: no policy sees them; a host sends them where
//!   they stood ([`Piece::message`] is `None`);
//! - a text-based agent's calls are in its text: an answer with a command block is a call, and
//!   the user message after it is its result when it is an observation
//!   ([`harness_core::text_agent`], the rule the offline upstream reads them by too). The call's
//!   form and its result's are [`TEXT_FORM`], so a host writes a rewritten result back as the
//!   agent's observation, never as a tool message the agent does not speak.
//!
//! The grouper keeps the turn in progress and the calls seen, so the units of the next request
//! continue where the last request ended.

use std::collections::HashMap;
use std::sync::Arc;

use harness_core::text_agent::{self, TEXT_FORM};
use harness_core::{Message, ToolCall};
use serde_json::value::RawValue;

/// What a unit is.
#[derive(Debug, Clone, PartialEq)]
pub enum UnitKind {
    /// A `system`/`developer` entry: sent where it stood, never given to a policy.
    Pinned,
    /// User-side text (images as `[image]`).
    UserText(String),
    /// A tool's result.
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// Its text.
        text: String,
        /// Whether the tool failed.
        is_error: bool,
    },
    /// Model-side: text, tool calls, or neither (reasoning, server tools: kept raw, not read).
    Assistant {
        /// The text.
        text: String,
        /// Tool calls.
        calls: Vec<ToolCall>,
    },
    /// Model-side thinking (Anthropic's `thinking` block, its text; a `redacted_thinking`
    /// block, its data): the answer's [`Message::thinking`], so a policy that clears thinking
    /// sees it; its block is written back as it came (signature and all) while the message
    /// keeps it.
    Thinking(String),
}

/// One unit: its raw JSON and what it is.
#[derive(Debug, Clone)]
pub struct Unit {
    /// The JSON as the agent wrote it (a content block, a message or an item).
    pub raw: Box<RawValue>,
    /// What it is.
    pub kind: UnitKind,
    /// For a tool call or result: the API's form (`function_call`, `custom_tool_call`,
    /// `tool_use`, …), so a result a policy rewrites is written back in the form of the original.
    pub(crate) form: Option<String>,
}

impl Unit {
    /// The side of the conversation the unit is on.
    pub fn side(&self) -> Side {
        match self.kind {
            UnitKind::Pinned => Side::Pinned,
            UnitKind::UserText(_) | UnitKind::ToolResult { .. } => Side::User,
            UnitKind::Assistant { .. } | UnitKind::Thinking(_) => Side::Assistant,
        }
    }
}

/// Which side a unit is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The user's (text, tool results).
    User,
    /// The model's.
    Assistant,
    /// A pinned system entry.
    Pinned,
}

/// Where a unit is: the item of the request, and the unit of that item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UnitRef {
    /// Index of the item in the request.
    pub item: usize,
    /// Index of the unit in the item.
    pub unit: usize,
}

/// A core message and the units it was made of (or a pinned unit).
#[derive(Debug, Clone)]
pub struct Piece {
    /// The message; `None` for a pinned unit.
    pub message: Option<Arc<Message>>,
    /// Its units, in order.
    pub units: Vec<UnitRef>,
}

/// What came last, for the turn rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Last {
    Nothing,
    User,
    Tool,
    /// An answer with tool calls.
    Calling,
    /// An answer without: the turn is over.
    Closing,
}

/// What [`Grouper::group_from`] does after each item: the item's index, the grouper, the open
/// group and the pieces so far.
type AfterItem<'a> = dyn FnMut(usize, &Grouper, (&Option<Open>, &Vec<Piece>)) + 'a;

/// Where a grouping stood after some items: the grouper's state, the group still open and how
/// many pieces were flushed ([`Grouper::group_from`]).
#[derive(Debug, Clone)]
pub struct Checkpoint {
    grouper: Grouper,
    open: Option<Open>,
    pieces: usize,
}

/// Groups units into core messages, carrying the turn and the calls from request to request.
#[derive(Debug, Clone)]
pub struct Grouper {
    turn: u32,
    last: Last,
    /// Call id → (tool name, form of the call).
    calls: HashMap<String, (String, Option<String>)>,
    /// Call id → form of its result, as the agent wrote it.
    results: HashMap<String, String>,
    /// The text call of the last answer, whose observation may come next.
    text_call: Option<String>,
    /// Text call id → the head of its observation (its `<returncode>` line).
    heads: HashMap<String, String>,
}

impl Default for Grouper {
    fn default() -> Self {
        Grouper {
            turn: 0,
            last: Last::Nothing,
            calls: HashMap::new(),
            results: HashMap::new(),
            text_call: None,
            heads: HashMap::new(),
        }
    }
}

/// A group being built.
#[derive(Debug, Clone)]
struct Open {
    side: Side,
    text: Vec<String>,
    calls: Vec<ToolCall>,
    units: Vec<UnitRef>,
    /// Whether it holds the user's own words (not only blocks an agent adds).
    words: bool,
    /// An answer's thinking blocks' texts.
    thinking: Vec<String>,
}

impl Grouper {
    /// A grouper at the start of a conversation.
    pub fn new() -> Grouper {
        Grouper::default()
    }

    /// The turn in progress (0 before the first prompt). For the tests.
    #[cfg(test)]
    fn turn(&self) -> u32 {
        self.turn
    }

    /// The name and form of a call seen so far.
    pub(crate) fn call(&self, id: &str) -> Option<(&str, Option<&str>)> {
        self.calls.get(id).map(|(n, f)| (n.as_str(), f.as_deref()))
    }

    /// The form the agent wrote a call's result in, when one was seen.
    pub(crate) fn result_form(&self, call_id: &str) -> Option<&str> {
        self.results.get(call_id).map(String::as_str)
    }

    /// Whether a call was written in an answer's text (a text-based agent's command block).
    pub fn is_text_call(&self, id: &str) -> bool {
        self.call(id).is_some_and(|(_, f)| f == Some(TEXT_FORM))
    }

    /// The head of the observation that answered a text call (its `<returncode>` line), or
    /// nothing when none came.
    pub fn observation_head(&self, call_id: &str) -> &str {
        self.heads.get(call_id).map_or("", String::as_str)
    }

    /// Groups the units of `items` (each with its index in the request) into pieces, in order.
    pub fn group(&mut self, items: &[(usize, &[Unit])]) -> Vec<Piece> {
        let mut out = Vec::new();
        let mut open: Option<Open> = None;
        self.feed(&mut open, &mut out, items, &mut |_, _, _| {});
        self.flush(&mut open, &mut out);
        out
    }

    /// Groups like [`Grouper::group`], going on from `start` (a checkpoint of an earlier
    /// grouping and the pieces it had flushed, for the same units before `items`), and hands
    /// back a checkpoint after each item whose index `keep` accepts: the grouping of a request
    /// whose first items the last one had goes on from where they ended, so only what was
    /// appended is grouped (and its messages built and counted).
    pub fn group_from(
        start: Option<(&Checkpoint, &[Piece])>,
        items: &[(usize, &[Unit])],
        keep: impl Fn(usize) -> bool,
    ) -> (Grouper, Vec<Piece>, Vec<(usize, Checkpoint)>) {
        let (mut g, mut open, mut out) = match start {
            Some((c, pieces)) => (
                c.grouper.clone(),
                c.open.clone(),
                pieces[..c.pieces.min(pieces.len())].to_vec(),
            ),
            None => (Grouper::new(), None, Vec::new()),
        };
        let mut checkpoints = Vec::new();
        g.feed(&mut open, &mut out, items, &mut |item,
                                                 g: &Grouper,
                                                 (open, out): (
            &Option<Open>,
            &Vec<Piece>,
        )| {
            if keep(item) {
                checkpoints.push((
                    item,
                    Checkpoint {
                        grouper: g.clone(),
                        open: open.clone(),
                        pieces: out.len(),
                    },
                ));
            }
        });
        g.flush(&mut open, &mut out);
        (g, out, checkpoints)
    }

    /// Groups `items` into `out`, `open` the group in progress; `after` is called after each
    /// item with its index, the grouper, the open group and the pieces so far.
    fn feed(
        &mut self,
        open: &mut Option<Open>,
        out: &mut Vec<Piece>,
        items: &[(usize, &[Unit])],
        after: &mut AfterItem<'_>,
    ) {
        for (item, units) in items {
            for (u, unit) in units.iter().enumerate() {
                let at = UnitRef {
                    item: *item,
                    unit: u,
                };
                match &unit.kind {
                    UnitKind::Pinned => {
                        self.flush(open, out);
                        out.push(Piece {
                            message: None,
                            units: vec![at],
                        });
                    }
                    UnitKind::ToolResult {
                        call_id,
                        text,
                        is_error,
                    } => {
                        self.flush(open, out);
                        self.text_call = None;
                        if let Some(f) = &unit.form {
                            self.results.insert(call_id.clone(), f.clone());
                        }
                        let name = self
                            .calls
                            .get(call_id)
                            .map(|c| c.0.clone())
                            .unwrap_or_default();
                        let call = ToolCall {
                            id: call_id.clone(),
                            name,
                            args: serde_json::Value::Null,
                        };
                        let turn = self.turn.max(1);
                        out.push(Piece {
                            message: Some(Message::tool_result(
                                turn,
                                &call,
                                text.clone(),
                                *is_error,
                            )),
                            units: vec![at],
                        });
                        self.last = Last::Tool;
                    }
                    UnitKind::UserText(t)
                    | UnitKind::Assistant { text: t, .. }
                    | UnitKind::Thinking(t) => {
                        let side = unit.side();
                        if open.as_ref().is_some_and(|o| o.side != side) {
                            self.flush(open, out);
                        }
                        if side == Side::User && open.is_none() {
                            if let Some(result) = self.observation(t, at) {
                                out.push(result);
                                continue;
                            }
                        }
                        let o = open.get_or_insert_with(|| Open {
                            side,
                            text: Vec::new(),
                            calls: Vec::new(),
                            units: Vec::new(),
                            words: false,
                            thinking: Vec::new(),
                        });
                        if let UnitKind::Thinking(_) = unit.kind {
                            o.thinking.push(t.clone());
                        } else if !t.is_empty() {
                            o.text.push(t.clone());
                        }
                        if side == Side::User && !o.words {
                            o.words = !harness_core::fold::user_words(t).is_empty();
                        }
                        if let UnitKind::Assistant { calls, .. } = &unit.kind {
                            for c in calls {
                                self.calls
                                    .insert(c.id.clone(), (c.name.clone(), unit.form.clone()));
                            }
                            o.calls.extend(calls.iter().cloned());
                        }
                        o.units.push(at);
                    }
                }
            }
            after(*item, self, (open, out));
        }
    }

    /// A user text right after an answer with a text call, when it is an observation: that
    /// call's result (one unit, never joined with the user text after it).
    fn observation(&mut self, text: &str, at: UnitRef) -> Option<Piece> {
        let id = self.text_call.take()?;
        if !text_agent::is_observation(text) {
            return None;
        }
        self.results.insert(id.clone(), TEXT_FORM.to_string());
        self.heads
            .insert(id.clone(), text_agent::observation_head(text).to_string());
        let call = ToolCall {
            id,
            name: text_agent::TEXT_TOOL.to_string(),
            args: serde_json::Value::Null,
        };
        self.last = Last::Tool;
        Some(Piece {
            message: Some(Message::tool_result(self.turn.max(1), &call, text, false)),
            units: vec![at],
        })
    }

    /// The assistant message of an answer's text and calls: an answer with no calls of the
    /// API whose text carries a command is that command's call (counted as the text it is, the
    /// command not counted twice), its observation awaited next.
    fn answer(
        &mut self,
        text: String,
        calls: Vec<ToolCall>,
        thinking: Option<String>,
    ) -> Arc<Message> {
        let turn = self.turn.max(1);
        self.text_call = None;
        let built = |text: String, calls: Vec<ToolCall>| match &thinking {
            Some(t) => Message::assistant_thinking(turn, t.clone(), text, calls),
            None => Message::assistant(turn, text, calls),
        };
        if calls.is_empty() {
            if let Some(call) = text_agent::text_call(&text) {
                self.calls.insert(
                    call.id.clone(),
                    (call.name.clone(), Some(TEXT_FORM.to_string())),
                );
                self.text_call = Some(call.id.clone());
                let mut m = (*built(text, Vec::new())).clone();
                m.tool_calls = vec![call];
                return Arc::new(m);
            }
        }
        built(text, calls)
    }

    fn flush(&mut self, open: &mut Option<Open>, out: &mut Vec<Piece>) {
        let Some(o) = open.take() else { return };
        let text = o.text.join("\n\n");
        let message = match o.side {
            Side::User => {
                self.text_call = None;
                // After a closing answer; or the user's own words after results: Claude Code
                // on `--resume` moves a turn's closing text before its calls and sends the
                // next prompt in the message of their results (a reminder beside results stays
                // in the turn).
                let opens = matches!(self.last, Last::Nothing | Last::Closing)
                    || (self.last == Last::Tool && o.words);
                if opens {
                    self.turn += 1;
                }
                self.last = Last::User;
                Message::user(self.turn, text, None)
            }
            _ => {
                let thinking = (!o.thinking.is_empty()).then(|| o.thinking.join("\n\n"));
                let message = self.answer(text, o.calls, thinking);
                self.last = if message.tool_calls.is_empty() {
                    Last::Closing
                } else {
                    Last::Calling
                };
                message
            }
        };
        out.push(Piece {
            message: Some(message),
            units: o.units,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn unit(kind: UnitKind) -> Unit {
        Unit {
            raw: crate::null(),
            kind,
            form: None,
        }
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "Read".into(),
            args: json!({"file_path": "a"}),
        }
    }

    /// The messages of some pieces, as (turn, text, units): a message that opens a turn has
    /// the turn one past the last one's.
    fn shape(p: &[Piece]) -> Vec<(u32, String, Vec<UnitRef>)> {
        p.iter()
            .map(|p| {
                let m = p.message.as_ref();
                (
                    m.map_or(0, |m| m.turn),
                    m.map(|m| m.text.clone()).unwrap_or_default(),
                    p.units.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn a_grouping_gone_on_from_a_checkpoint_is_the_whole_grouping() {
        let items: Vec<Vec<Unit>> = vec![
            vec![unit(UnitKind::Pinned)],
            vec![unit(UnitKind::UserText("read a".into()))],
            vec![unit(UnitKind::Assistant {
                text: "".into(),
                calls: vec![call("c1")],
            })],
            vec![
                unit(UnitKind::ToolResult {
                    call_id: "c1".into(),
                    text: "x = 1".into(),
                    is_error: false,
                }),
                unit(UnitKind::UserText(
                    "<system-reminder>a reminder</system-reminder>".into(),
                )),
            ],
            // User text in the next item joins the open group of the last one.
            vec![unit(UnitKind::UserText(
                "<system-reminder>and b</system-reminder>".into(),
            ))],
            vec![unit(UnitKind::Assistant {
                text: "done".into(),
                calls: vec![],
            })],
            vec![unit(UnitKind::UserText("next".into()))],
        ];
        let refs: Vec<(usize, &[Unit])> = items
            .iter()
            .enumerate()
            .map(|(i, u)| (i, u.as_slice()))
            .collect();
        let whole = Grouper::new().group(&refs);
        let (g, again, checkpoints) = Grouper::group_from(None, &refs, |_| true);
        assert_eq!(shape(&again), shape(&whole));
        assert_eq!(g.turn(), 2);
        assert_eq!(checkpoints.len(), items.len());
        for (i, c) in &checkpoints {
            let (g, resumed, _) = Grouper::group_from(Some((c, &whole)), &refs[i + 1..], |_| false);
            assert_eq!(shape(&resumed), shape(&whole), "from item {i}");
            assert_eq!(g.turn(), 2);
            assert_eq!(g.call("c1").map(|c| c.0), Some("Read"));
        }
    }

    /// Claude Code's history on `--resume`: the last turn's closing text is moved before its
    /// calls, and the next prompt comes in the same user message as the calls' results. The
    /// user's words after the results open the next turn; a reminder beside results does not.
    #[test]
    fn the_users_words_after_results_open_a_turn_reminders_do_not() {
        let units = [
            unit(UnitKind::UserText("TURN 1".into())),
            unit(UnitKind::Assistant {
                text: "done 1".into(),
                calls: vec![call("c1")],
            }),
            unit(UnitKind::ToolResult {
                call_id: "c1".into(),
                text: "x".into(),
                is_error: false,
            }),
            unit(UnitKind::UserText(
                "<system-reminder>the user has not heard from you</system-reminder>".into(),
            )),
            unit(UnitKind::ToolResult {
                call_id: "c1".into(),
                text: "again".into(),
                is_error: false,
            }),
            unit(UnitKind::UserText("TURN 2".into())),
        ];
        let items: Vec<(usize, &[Unit])> = units
            .iter()
            .enumerate()
            .map(|(i, u)| (i, std::slice::from_ref(u)))
            .collect();
        let p = Grouper::new().group(&items);
        let m = |i: usize| p[i].message.as_ref().unwrap();
        assert_eq!(m(3).turn, 1, "a reminder stays");
        assert_eq!(m(5).text, "TURN 2");
        assert_eq!(m(5).turn, 2, "the words open turn 2");
    }

    #[test]
    fn turns_open_after_a_closing_answer_and_continue_across_requests() {
        let mut g = Grouper::new();
        let first = [
            unit(UnitKind::Pinned),
            unit(UnitKind::UserText(
                "<system-reminder>x</system-reminder>".into(),
            )),
            unit(UnitKind::UserText("read a".into())),
        ];
        let p = g.group(&[(0, &first[..1]), (1, &first[1..])]);
        assert_eq!(p.len(), 2);
        assert!(p[0].message.is_none());
        let m = p[1].message.as_ref().unwrap();
        assert_eq!(m.turn, 1);
        assert_eq!(m.text, "<system-reminder>x</system-reminder>\n\nread a");
        let second = [
            unit(UnitKind::Assistant {
                text: "".into(),
                calls: vec![call("c1")],
            }),
            unit(UnitKind::ToolResult {
                call_id: "c1".into(),
                text: "x = 1".into(),
                is_error: false,
            }),
            unit(UnitKind::UserText(
                "<system-reminder>reminder beside the result</system-reminder>".into(),
            )),
        ];
        let p = g.group(&[(2, &second[..1]), (3, &second[1..])]);
        assert_eq!(p.len(), 3);
        let result = p[1].message.as_ref().unwrap();
        assert_eq!(result.tool_name.as_deref(), Some("Read"));
        assert_eq!(
            p[2].message.as_ref().unwrap().turn,
            1,
            "text beside results stays in the turn"
        );
        let third = [
            unit(UnitKind::Assistant {
                text: "done".into(),
                calls: vec![],
            }),
            unit(UnitKind::UserText("next".into())),
        ];
        let p = g.group(&[(4, &third[..1]), (5, &third[1..])]);
        assert_eq!(p[1].message.as_ref().unwrap().turn, 2, "opens turn 2");
        assert_eq!(g.turn(), 2);
    }
}
