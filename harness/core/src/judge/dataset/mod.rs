//! Boundary judgement (docs/design.md §12): the dataset of card points, the gold labels, the scoring of
//! an answer, and the tables. Pure: the runner (`harness-runner`'s `judge`) builds items from
//! task runs and recorded sessions, asks the models and writes the files.
//!
//! # The dataset (version 1)
//!
//! JSONL, one [`Item`] per line, each with `"version": 1`. An item is one **card point**: the
//! session as it stood when the user message of turn `current` arrived, under the `fold` policy
//! with gold folds (the oracle answered every card the counting threshold showed earlier):
//!
//! - `messages`: the context before the current user message, in the transcript format
//!   (earlier cards and fold results included; tool outputs cut to `max_tool_output` characters
//!   at build time, counted in `truncated`);
//! - `turns`: the turns the card offers (every unfolded turn before the current one) with their
//!   size in tokens (measured before any cut), paths, user message and closing message — the
//!   card is rendered from them with [`fold::render_card`], the fold policy's own code;
//! - `user`: the current turn's user message; `threshold`: whether the counting threshold
//!   (`card_after_tool_calls` 20 or `card_after_tokens` 100,000 since the last fold) showed a card
//!   here; `since_fold`: what it counted;
//! - `labels`: the unit of every turn of the session (`null` for an unlabelled turn);
//! - `gold`: from the labels (`gold`): the closed ranges, the closed units, the open turns.
//!
//! # Gold and scores
//!
//! A unit is **closed** at a card point when no turn at or after the current one carries its
//! label (the essay's hindsight); an offered turn of any other unit is **open**. A legal fold whose
//! range holds an open turn is **premature**. A closed unit is **folded** when every one of its
//! offered turns lies in a legal fold that is not premature; otherwise it is **late or missed**.
//! An item is answered **exactly** when the folded turns are the closed turns and no call was
//! illegal. Legality is [`fold::check_fold`] on the item's context, as the policy checks it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::baseline::{self as judge, is_open, CardPoint, Judge, LEXICAL_SHORT};
use crate::context::{Context, TurnInfo};
use crate::fold::{self, check_fold};
use crate::message::{Message, MessageKind, Role, ToolCall};
use crate::metrics::Price;
use crate::policy::Policy;
use crate::request::{Response, Usage};
use crate::tokens;

/// The dataset format's version; every line carries it.
pub(crate) const DATASET_VERSION: u32 = 1;

/// The version of a judged record (`judge run -o records.jsonl`). Version 2 added
/// `answer_mode`, `constrained` and `score.unparsable`.
pub(crate) const RECORD_VERSION: u32 = 2;

/// Characters a tool output keeps in a dataset item by default (head and tail, the middle cut).
pub const DEFAULT_TOOL_OUTPUT_CAP: usize = 2_000;

/// The source of a task item.
pub const SOURCE_TASK: &str = "task";

/// The four baselines, always in the table, in this order.
pub const BASELINES: [Judge; 4] = [Judge::Oracle, Judge::Lexical, Judge::Eager, Judge::Never];

/// One turn a card offers, as the dataset stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemTurn {
    /// Turn number.
    pub turn: u32,
    /// Tokens of the turn's messages (before any cut of tool outputs).
    pub(crate) tokens: u64,
    /// Paths its tool calls touched.
    #[serde(default)]
    pub(crate) paths: Vec<String>,
    /// The user's message, word for word.
    pub(crate) user: String,
    /// Tool calls made in the turn.
    #[serde(default)]
    pub(crate) tool_calls: usize,
    /// The model's closing message of the turn (its last text without a tool call), if any.
    #[serde(default)]
    pub(crate) closing: String,
    /// The words the user typed, when they differ from `user` (a recorded prompt's message
    /// also carries IDE context blocks and image placeholders); the lexical rule measures these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) words: Option<String>,
}

impl ItemTurn {
    /// The card's raw material for this turn.
    pub(crate) fn info(&self) -> TurnInfo {
        TurnInfo {
            turn: self.turn,
            tokens: self.tokens,
            paths: self.paths.clone(),
            user: self.user.clone(),
            tool_calls: self.tool_calls,
        }
    }
}

/// What the counting threshold counted since the last fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SinceFold {
    /// Tool calls in the turns after the last fold.
    pub tool_calls: usize,
    /// Tokens of the turns after the last fold.
    pub(crate) tokens: u64,
}

/// A closed unit at a card point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoldUnit {
    /// The unit's label.
    pub unit: String,
    /// Its offered turns, ascending.
    pub(crate) turns: Vec<u32>,
}

/// The gold answer at a card point, from the labels.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Gold {
    /// Maximal runs of offered closed turns: what the oracle folds.
    pub closed: Vec<(u32, u32)>,
    /// The closed units, in order of their first offered turn.
    pub units: Vec<GoldUnit>,
    /// Offered turns of units still open (or unlabelled): a range holding one is premature.
    pub open: Vec<u32>,
    /// Whether a unit ended with the previous turn (its unit has no turn at or after this one);
    /// `None` when the previous turn is unlabelled.
    pub boundary: Option<bool>,
    /// Whether the current turn continues the previous turn's unit; `None` when either turn is
    /// unlabelled.
    pub continues: Option<bool>,
}

/// One card point of the dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// [`DATASET_VERSION`].
    pub(crate) version: u32,
    /// `<source>:<session>/<turn>`, unique in a dataset.
    pub id: String,
    /// `task`, or the recorded format (`claude-code`, ...).
    pub source: String,
    /// The task's name or the recorded session's id.
    pub session: String,
    /// The spec or transcript it came from.
    pub(crate) file: String,
    /// The turn in progress (≥ 2).
    pub current: u32,
    /// The current turn's user message, word for word.
    pub user: String,
    /// The words the user typed in the current turn, when they differ from `user`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub words: Option<String>,
    /// Whether the counting threshold showed a card here.
    pub threshold: bool,
    /// What the threshold counted since the last fold.
    #[serde(default)]
    pub since_fold: SinceFold,
    /// The turns the card offers, ascending.
    pub turns: Vec<ItemTurn>,
    /// The unit of every turn of the session, turn 1 first (`null`: unlabelled).
    pub labels: Vec<Option<String>>,
    /// The gold answer.
    pub gold: Gold,
    /// Tool outputs cut at build time.
    #[serde(default)]
    pub(crate) truncated: usize,
    /// The context before the current user message, in the transcript format.
    pub messages: Vec<Message>,
}

/// The unit of a turn in a label list.
fn label_of(labels: &[Option<String>], turn: u32) -> Option<String> {
    labels
        .get((turn as usize).checked_sub(1)?)
        .cloned()
        .flatten()
}

/// Computes the gold answer at a card point from the labels (`labels[0]` is turn 1).
pub(crate) fn gold(offered: &[u32], current: u32, labels: &[Option<String>]) -> Gold {
    let unit = |t: u32| label_of(labels, t);
    let none = |_: u32| None;
    let p = CardPoint {
        offered,
        current,
        user: &none,
        unit: &unit,
        last_turn: (labels.len() as u32).max(current),
    };
    let before: Vec<u32> = offered.iter().copied().filter(|t| *t < current).collect();
    let mut units: Vec<GoldUnit> = Vec::new();
    let mut open = Vec::new();
    for &t in &before {
        if is_open(&p, t) {
            open.push(t);
            continue;
        }
        let Some(u) = unit(t) else { continue };
        match units.iter_mut().find(|g| g.unit == u) {
            Some(g) => g.turns.push(t),
            None => units.push(GoldUnit {
                unit: u,
                turns: vec![t],
            }),
        }
    }
    let prev = current.checked_sub(1).filter(|t| *t >= 1);
    let boundary = prev.and_then(|t| unit(t).map(|_| !is_open(&p, t)));
    let continues = prev.and_then(|t| Some(unit(t)? == unit(current)?));
    Gold {
        closed: judge::ranges(Judge::Oracle, &p),
        units,
        open,
        boundary,
        continues,
    }
}

/// Cuts a text longer than `cap` characters to its head and tail with a note of what was cut;
/// `None` when it fits.
pub(crate) fn truncate_output(text: &str, cap: usize) -> Option<String> {
    let n = text.chars().count();
    if n <= cap {
        return None;
    }
    let head = cap / 2;
    let tail = cap - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(n - tail).collect();
    Some(format!(
        "{start}\n[… {} characters cut by foldbench judge …]\n{end}",
        n - head - tail
    ))
}

/// The messages with tool outputs cut to `cap` characters; returns them and how many were cut.
pub(crate) fn cut_tool_outputs(
    messages: &[Arc<Message>],
    cap: usize,
) -> (Vec<Arc<Message>>, usize) {
    let mut cut = 0;
    let out = messages
        .iter()
        .map(|m| {
            if m.role != Role::Tool || m.kind != MessageKind::Plain {
                return Arc::clone(m);
            }
            match truncate_output(&m.text, cap) {
                Some(text) => {
                    cut += 1;
                    let mut c = (**m).clone();
                    c.text = text;
                    c.sealed()
                }
                None => Arc::clone(m),
            }
        })
        .collect();
    (out, cut)
}

/// Where an item comes from: its source, session, file and the session's labels.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    /// `task` or the recorded format.
    pub source: &'a str,
    /// Task name or session id.
    pub session: &'a str,
    /// Spec or transcript file.
    pub file: &'a str,
    /// The unit of every turn (turn 1 first).
    pub labels: &'a [Option<String>],
    /// The words the user typed in every turn (turn 1 first), where they may differ from the
    /// message's text; empty for tasks.
    pub words: &'a [Option<String>],
}

/// The typed words of a turn when they differ from the message text.
fn differs(words: &[Option<String>], turn: u32, text: &str) -> Option<String> {
    label_of(words, turn).filter(|w| w != text)
}

/// Builds the item for the card point at the start of turn `current`: `before` is the context
/// before its user message. `None` when no turn is on offer (a card would not be shown).
pub fn build_item(
    origin: Origin<'_>,
    before: &[Arc<Message>],
    current: u32,
    user: &str,
    threshold: bool,
    max_tool_output: usize,
) -> Option<Item> {
    let ctx = Context {
        messages: before.to_vec(),
        turn: current,
        ..Context::default()
    };
    let infos: Vec<TurnInfo> = ctx.closed_live_turns();
    if infos.is_empty() || current < 2 {
        return None;
    }
    let last_fold = ctx.last_folded_turn();
    let since = infos.iter().filter(|t| t.turn > last_fold);
    let since_fold = SinceFold {
        tool_calls: since.clone().map(|t| t.tool_calls).sum(),
        tokens: since.map(|t| t.tokens).sum(),
    };
    let turns: Vec<ItemTurn> = infos
        .into_iter()
        .map(|t| {
            let closing = before
                .iter()
                .rev()
                .find(|m| m.turn == t.turn && m.is_closing() && !m.text.is_empty())
                .map(|m| m.text.clone())
                .unwrap_or_default();
            ItemTurn {
                turn: t.turn,
                tokens: t.tokens,
                paths: t.paths,
                words: differs(origin.words, t.turn, &t.user),
                user: t.user,
                tool_calls: t.tool_calls,
                closing,
            }
        })
        .collect();
    let offered: Vec<u32> = turns.iter().map(|t| t.turn).collect();
    let (messages, truncated) = cut_tool_outputs(before, max_tool_output);
    Some(Item {
        version: DATASET_VERSION,
        id: format!("{}:{}/{current}", origin.source, origin.session),
        source: origin.source.to_string(),
        session: origin.session.to_string(),
        file: origin.file.to_string(),
        current,
        user: user.to_string(),
        words: differs(origin.words, current, user),
        threshold,
        since_fold,
        gold: gold(&offered, current, origin.labels),
        turns,
        labels: origin.labels.to_vec(),
        truncated,
        messages: messages.iter().map(|m| (**m).clone()).collect(),
    })
}

impl Item {
    /// The turns the card offers.
    pub fn offered(&self) -> Vec<u32> {
        self.turns.iter().map(|t| t.turn).collect()
    }

    /// The words the user typed in a turn (offered or current): `words` when recorded, else the
    /// message text.
    pub(crate) fn typed(&self, turn: u32) -> Option<&str> {
        if turn == self.current {
            return Some(self.words.as_deref().unwrap_or(&self.user));
        }
        self.turns
            .iter()
            .find(|t| t.turn == turn)
            .map(|t| t.words.as_deref().unwrap_or(&t.user))
    }

    /// The card, rendered by the fold policy's own code.
    pub fn card(&self) -> String {
        let infos: Vec<TurnInfo> = self.turns.iter().map(ItemTurn::info).collect();
        fold::render_card(&infos)
    }

    /// The context before the current user message, tool outputs cut to `cap` characters when
    /// given (on top of the cut made at build time).
    pub(crate) fn context_messages(&self, cap: Option<usize>) -> Vec<Arc<Message>> {
        let msgs: Vec<Arc<Message>> = self.messages.iter().cloned().map(Arc::new).collect();
        match cap {
            Some(c) => cut_tool_outputs(&msgs, c).0,
            None => msgs,
        }
    }

    /// The messages of the request: the context, then the current user message with the card.
    pub fn request_messages(&self, cap: Option<usize>) -> Vec<Arc<Message>> {
        let mut msgs = self.context_messages(cap);
        msgs.push(Message::user(
            self.current,
            self.user.clone(),
            Some(self.card()),
        ));
        msgs
    }

    /// The context a `fold_unit` call is checked against.
    pub fn context(&self) -> Context {
        Context {
            messages: self.request_messages(None),
            turn: self.current,
            ..Context::default()
        }
    }

    /// Checks the item: version, turns, and that the stored gold is the one the labels give.
    pub fn check(&self) -> Result<(), ItemError> {
        let id = || self.id.clone();
        if self.version != DATASET_VERSION {
            return Err(ItemError::Version {
                id: id(),
                version: self.version,
            });
        }
        if self.current < 2 || self.turns.is_empty() {
            return Err(ItemError::NoCardPoint { id: id() });
        }
        if self
            .turns
            .iter()
            .any(|t| t.turn >= self.current || t.turn == 0)
        {
            return Err(ItemError::TurnNotBefore {
                id: id(),
                current: self.current,
            });
        }
        let want = gold(&self.offered(), self.current, &self.labels);
        if want != self.gold {
            return Err(ItemError::Gold {
                id: id(),
                stored: self.gold.closed.clone(),
                expected: want.closed,
            });
        }
        Ok(())
    }
}

/// One item as a JSONL line (no newline).
pub fn to_line(item: &Item) -> String {
    serde_json::to_string(item).unwrap_or_default()
}

/// One line of a versioned JSONL file (a dataset, judged records) as JSON, its `version` among
/// `accepted`; errors name `name:line` (`unsupported` with `{}` for the version found, `missing`
/// when there is none).
pub(crate) fn versioned_line(
    name: &str,
    line_no: usize,
    line: &str,
    accepted: &[u32],
    unsupported: &str,
    missing: &str,
) -> Result<serde_json::Value, JsonlError> {
    let v: serde_json::Value =
        serde_json::from_str(line).map_err(|source| JsonlError::NotJson {
            file: name.to_string(),
            line: line_no,
            source,
        })?;
    let version = |message: String| JsonlError::Version {
        file: name.to_string(),
        line: line_no,
        message,
    };
    match v.get("version").and_then(|x| x.as_u64()) {
        Some(n) if accepted.iter().any(|a| u64::from(*a) == n) => Ok(v),
        Some(n) => Err(version(unsupported.replace("{}", &n.to_string()))),
        None => Err(version(missing.to_string())),
    }
}

/// Reads a dataset; `name` names it in errors (`name:line: ...`). Every item is checked.
pub fn parse_dataset(name: &str, text: &str) -> Result<Vec<Item>, JsonlError> {
    let mut out = Vec::new();
    let mut ids = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v = versioned_line(
            name,
            i + 1,
            line,
            &[DATASET_VERSION],
            &format!("dataset version {{}} is not supported; this foldbench reads version {DATASET_VERSION}"),
            "not a judgement item (no `version`); build one with `foldbench judge build`",
        )?;
        let (file, line) = (name.to_string(), i + 1);
        let item: Item = match serde_json::from_value(v) {
            Ok(item) => item,
            Err(source) => {
                return Err(JsonlError::NotA {
                    file,
                    line,
                    what: "judgement item",
                    source,
                })
            }
        };
        if let Err(error) = item.check() {
            return Err(JsonlError::Item { file, line, error });
        }
        if !ids.insert(item.id.clone()) {
            return Err(JsonlError::Twice {
                file,
                line,
                id: item.id,
            });
        }
        out.push(item);
    }
    Ok(out)
}

/// The unit labels of one recorded session file (`tests/fixtures/real-sessions/labels/<format>/*.yaml`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SessionLabels {
    /// The labelled transcript's file name (`session:`).
    pub session: Option<String>,
    /// Its path relative to the data folder (`source_path:`).
    pub source_path: Option<String>,
    /// Prompt record uuid → unit; `None` for a record labelled as no prompt (`n: null`).
    pub units: HashMap<String, Option<String>>,
    /// What the turns are keyed by (`key:`).
    pub key: LabelKey,
    /// With `key: "n"`: the importer's turn number → unit.
    pub by_turn: BTreeMap<u32, Option<String>>,
}

/// What a labels file keys its turns by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LabelKey {
    /// The user record's `uuid` (the default).
    #[default]
    Uuid,
    /// The importer's turn number `n` (`key: "n"`).
    Turn,
}

impl SessionLabels {
    /// The label of a prompt, by its record id (uuid-keyed files) or its turn number (files keyed
    /// by `n`): `Some(None)` for a record labelled as no prompt, `None` when the file does not
    /// name it.
    pub fn label(&self, id: Option<&str>, turn: u32) -> Option<&Option<String>> {
        match self.key {
            LabelKey::Uuid => id.and_then(|u| self.units.get(u)),
            LabelKey::Turn => self.by_turn.get(&turn),
        }
    }

    /// How many prompts the file labels.
    pub fn prompts(&self) -> usize {
        self.units
            .values()
            .chain(self.by_turn.values())
            .filter(|u| u.is_some())
            .count()
    }

    /// Whether the file names the session `id` read from `source`: its `session` is the id (as
    /// a file name, `.jsonl` dropped) or `source` ends with its `source_path`. Files keyed by
    /// `n` are matched this way; uuid-keyed files match through their prompts' uuids.
    pub fn names_session(&self, id: &str, source: &str) -> bool {
        let stem = self
            .session
            .as_deref()
            .map(|s| s.strip_suffix(".jsonl").unwrap_or(s));
        stem == Some(id)
            || self
                .source_path
                .as_deref()
                .is_some_and(|p| !p.is_empty() && source.replace('\\', "/").ends_with(p))
    }
}

mod error;
mod replay;
mod score;
mod stats;

pub use error::{ItemError, JsonlError};
pub use replay::*;
pub use score::*;
pub use stats::*;

#[cfg(test)]
mod tests;
