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
//! - `gold`: from the labels ([`gold`]): the closed ranges, the closed units, the open turns.
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

use crate::context::{Context, TurnInfo};
use crate::digest::sha256_hex;
use crate::fold::{self, check_fold};
use crate::judge::{self, is_open, CardPoint, Judge, LEXICAL_SHORT};
use crate::message::{Message, MessageKind, Role, ToolCall};
use crate::metrics::Price;
use crate::policy::{ArchiveRef, Policy};
use crate::render::Table;
use crate::request::{Response, Usage};
use crate::tokens;
use crate::yaml::{self, key, Problem, Reader, Seg};

/// The dataset format's version; every line carries it.
pub const DATASET_VERSION: u32 = 1;

/// The version of a judged record (`judge run -o records.jsonl`). Version 2 added
/// `answer_mode`, `constrained` and `score.unparsable`; version 1 records read as tool answers
/// ([`crate::answer::parse_records`]).
pub const RECORD_VERSION: u32 = 2;

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
    pub tokens: u64,
    /// Paths its tool calls touched.
    #[serde(default)]
    pub paths: Vec<String>,
    /// The user's message, word for word.
    pub user: String,
    /// Tool calls made in the turn.
    #[serde(default)]
    pub tool_calls: usize,
    /// The model's closing message of the turn (its last text without a tool call), if any.
    #[serde(default)]
    pub closing: String,
    /// The words the user typed, when they differ from `user` (a recorded prompt's message
    /// also carries IDE context blocks and image placeholders); the lexical rule measures these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub words: Option<String>,
}

impl ItemTurn {
    /// The card's raw material for this turn.
    pub fn info(&self) -> TurnInfo {
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
    pub tokens: u64,
}

/// A closed unit at a card point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoldUnit {
    /// The unit's label.
    pub unit: String,
    /// Its offered turns, ascending.
    pub turns: Vec<u32>,
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
    pub version: u32,
    /// `<source>:<session>/<turn>`, unique in a dataset.
    pub id: String,
    /// `task`, or the recorded format (`claude-code`, ...).
    pub source: String,
    /// The task's name or the recorded session's id.
    pub session: String,
    /// The spec or transcript it came from.
    pub file: String,
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
    pub truncated: usize,
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
pub fn gold(offered: &[u32], current: u32, labels: &[Option<String>]) -> Gold {
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
pub fn truncate_output(text: &str, cap: usize) -> Option<String> {
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
pub fn cut_tool_outputs(messages: &[Arc<Message>], cap: usize) -> (Vec<Arc<Message>>, usize) {
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
    };
    let infos: Vec<TurnInfo> = ctx
        .live_turns()
        .into_iter()
        .filter(|t| t.turn < current)
        .collect();
    if infos.is_empty() || current < 2 {
        return None;
    }
    let last_fold = ctx
        .folded_turns()
        .iter()
        .map(|(_, b)| *b)
        .max()
        .unwrap_or(0);
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
    pub fn typed(&self, turn: u32) -> Option<&str> {
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
    pub fn context_messages(&self, cap: Option<usize>) -> Vec<Arc<Message>> {
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
        }
    }

    /// Checks the item: version, turns, and that the stored gold is the one the labels give.
    pub fn check(&self) -> Result<(), String> {
        if self.version != DATASET_VERSION {
            return Err(format!(
                "item {}: version {} is not supported; this foldbench reads version {DATASET_VERSION}",
                self.id, self.version
            ));
        }
        if self.current < 2 || self.turns.is_empty() {
            return Err(format!(
                "item {}: a card point needs a turn ≥ 2 and at least one offered turn",
                self.id
            ));
        }
        if self
            .turns
            .iter()
            .any(|t| t.turn >= self.current || t.turn == 0)
        {
            return Err(format!(
                "item {}: an offered turn is not before the current turn {}",
                self.id, self.current
            ));
        }
        let want = gold(&self.offered(), self.current, &self.labels);
        if want != self.gold {
            return Err(format!(
                "item {}: the stored gold does not follow from the labels (closed {:?}, expected {:?}); rebuild the dataset",
                self.id, self.gold.closed, want.closed
            ));
        }
        Ok(())
    }
}

/// One item as a JSONL line (no newline).
pub fn to_line(item: &Item) -> String {
    serde_json::to_string(item).unwrap_or_default()
}

/// Reads a dataset; `name` names it in errors (`name:line: ...`). Every item is checked.
pub fn parse_dataset(name: &str, text: &str) -> Result<Vec<Item>, String> {
    let mut out = Vec::new();
    let mut ids = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| format!("{name}:{}: not a JSON line: {e}", i + 1))?;
        match v.get("version").and_then(|x| x.as_u64()) {
            Some(v) if v == u64::from(DATASET_VERSION) => {}
            Some(v) => {
                return Err(format!(
                    "{name}:{}: dataset version {v} is not supported; this foldbench reads version {DATASET_VERSION}",
                    i + 1
                ))
            }
            None => {
                return Err(format!(
                    "{name}:{}: not a judgement item (no `version`); build one with `foldbench judge build`",
                    i + 1
                ))
            }
        }
        let item: Item = serde_json::from_value(v)
            .map_err(|e| format!("{name}:{}: not a judgement item: {e}", i + 1))?;
        item.check().map_err(|e| format!("{name}:{}: {e}", i + 1))?;
        if !ids.insert(item.id.clone()) {
            return Err(format!("{name}:{}: item {} appears twice", i + 1, item.id));
        }
        out.push(item);
    }
    Ok(out)
}

/// What became of one `fold_unit` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Legal, no open turn, and every closed unit it touches lies wholly inside it.
    Exact,
    /// Legal, no open turn, but it cuts a closed unit in two.
    Partial,
    /// Legal, but it holds a turn of a unit still open.
    Premature,
    /// Rejected by the host's legality check (or unreadable arguments).
    Illegal,
}

/// One `fold_unit` call and its verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallVerdict {
    /// `from`, when readable.
    pub from: Option<u32>,
    /// `to`, when readable.
    pub to: Option<u32>,
    /// The verdict.
    pub verdict: Verdict,
    /// For an illegal call, the host's error; for a premature one, the open turns it holds.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// The scores of one answer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ItemScore {
    /// The folded turns are exactly the closed turns, and no call was illegal.
    pub exact: bool,
    /// Closed units on the card.
    pub closed_units: usize,
    /// Closed units wholly inside legal folds that are not premature.
    pub folded_units: usize,
    /// Closed units left unfolded or cut (late or missed).
    pub missed_units: usize,
    /// Legal folds holding a turn of an open unit.
    pub premature: usize,
    /// Illegal calls.
    pub illegal: usize,
    /// `fold_unit` calls.
    pub folds: usize,
    /// No `fold_unit` call at all: the card was ignored.
    pub ignored: bool,
    /// A text answer that is none of the accepted forms ([`crate::answer`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unparsable: bool,
}

/// Reads `from` and `to` of a `fold_unit` call as the fold policy does (numbers, or numbers in
/// strings).
pub fn fold_args(call: &ToolCall) -> Result<(u32, u32), String> {
    let num = |k: &str| {
        call.args.get(k).and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        })
    };
    match (num("from"), num("to")) {
        (Some(a), Some(b)) => Ok((
            u32::try_from(a).unwrap_or(u32::MAX),
            u32::try_from(b).unwrap_or(u32::MAX),
        )),
        _ => Err("error: fold_unit needs two turn numbers, `from` and `to`".to_string()),
    }
}

/// An answer judged: each `fold_unit` call's verdict, other calls, and the scores.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Judged {
    /// The `fold_unit` calls in order.
    pub calls: Vec<CallVerdict>,
    /// Names of other tool calls (which answer nothing).
    pub other_calls: Vec<String>,
    /// The scores.
    pub score: ItemScore,
}

/// Judges a model's tool calls at an item. `ctx` is [`Item::context`].
pub fn judge_calls(item: &Item, ctx: &Context, calls: &[ToolCall]) -> Judged {
    let open: BTreeSet<u32> = item.gold.open.iter().copied().collect();
    let mut pending: Vec<(u32, u32)> = Vec::new();
    let mut out = Judged::default();
    let mut folded: BTreeSet<u32> = BTreeSet::new();
    let mut clean: BTreeSet<u32> = BTreeSet::new();
    for c in calls {
        if c.name != "fold_unit" {
            out.other_calls.push(c.name.clone());
            continue;
        }
        out.score.folds += 1;
        let (from, to) = match fold_args(c) {
            Ok(r) => r,
            Err(reason) => {
                out.score.illegal += 1;
                out.calls.push(CallVerdict {
                    from: None,
                    to: None,
                    verdict: Verdict::Illegal,
                    reason,
                });
                continue;
            }
        };
        if let Err(reason) = check_fold(ctx, from, to, &pending) {
            out.score.illegal += 1;
            out.calls.push(CallVerdict {
                from: Some(from),
                to: Some(to),
                verdict: Verdict::Illegal,
                reason,
            });
            continue;
        }
        pending.push((from, to));
        let inside: Vec<u32> = item
            .offered()
            .into_iter()
            .filter(|t| (from..=to).contains(t))
            .collect();
        folded.extend(inside.iter().copied());
        let held: Vec<u32> = inside
            .iter()
            .copied()
            .filter(|t| open.contains(t))
            .collect();
        let (verdict, reason) = if !held.is_empty() {
            out.score.premature += 1;
            (
                Verdict::Premature,
                format!(
                    "holds open turn{} {held:?}",
                    if held.len() == 1 { "" } else { "s" }
                ),
            )
        } else {
            clean.extend(inside.iter().copied());
            let cuts = item.gold.units.iter().any(|u| {
                let n = u.turns.iter().filter(|t| inside.contains(t)).count();
                n > 0 && n < u.turns.len()
            });
            if cuts {
                (Verdict::Partial, "cuts a closed unit".to_string())
            } else {
                (Verdict::Exact, String::new())
            }
        };
        out.calls.push(CallVerdict {
            from: Some(from),
            to: Some(to),
            verdict,
            reason,
        });
    }
    let closed: BTreeSet<u32> = item
        .gold
        .units
        .iter()
        .flat_map(|u| u.turns.iter().copied())
        .collect();
    out.score.closed_units = item.gold.units.len();
    out.score.folded_units = item
        .gold
        .units
        .iter()
        .filter(|u| u.turns.iter().all(|t| clean.contains(t)))
        .count();
    out.score.missed_units = out.score.closed_units - out.score.folded_units;
    out.score.ignored = out.score.folds == 0;
    out.score.exact = folded == closed && out.score.illegal == 0;
    out
}

/// The ranges a baseline folds at an item (the sim's judges, [`judge::ranges`]).
pub fn baseline_ranges(j: Judge, item: &Item) -> Vec<(u32, u32)> {
    let offered = item.offered();
    let user = |t: u32| item.typed(t).map(str::to_string);
    let unit = |t: u32| label_of(&item.labels, t);
    let p = CardPoint {
        offered: &offered,
        current: item.current,
        user: &user,
        unit: &unit,
        last_turn: (item.labels.len() as u32).max(item.current),
    };
    judge::ranges(j, &p)
}

/// `fold_unit` calls for ranges, as a response would carry them.
pub fn fold_calls(ranges: &[(u32, u32)]) -> Vec<ToolCall> {
    ranges
        .iter()
        .enumerate()
        .map(|(i, (a, b))| ToolCall {
            id: format!("fold-{}", i + 1),
            name: "fold_unit".into(),
            args: json!({ "from": a, "to": b }),
        })
        .collect()
}

/// A baseline's answer at an item, as a response (its output tokens counted).
pub fn baseline_response(j: Judge, item: &Item) -> Response {
    Response::new("", fold_calls(&baseline_ranges(j, item)), None)
}

/// Tokens a card adds to the user message it is attached to (as the session loop counts it).
pub fn card_tokens(card: &str) -> u64 {
    u64::from(tokens::count(card)) + 1
}

/// Cost in dollars of one request: the provider's usage when it reported one (cache reads and
/// writes priced by their multipliers), else the harness's own counts as uncached input.
pub fn cost(prompt_tokens: u64, output_tokens: u64, usage: Option<Usage>, price: &Price) -> f64 {
    let t = match usage {
        Some(u) => {
            u.input_tokens as f64
                + u.cache_write_tokens as f64 * price.cache_write
                + u.cache_read_tokens as f64 * price.cache_read
                + u.output_tokens as f64 * price.output
        }
        None => prompt_tokens as f64 + output_tokens as f64 * price.output,
    };
    t * price.input / 1e6
}

/// One model's answer at one item, judged: a line of `judge run -o records.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgedRecord {
    /// [`RECORD_VERSION`].
    pub version: u32,
    /// The model (`oracle`, `lexical`, `eager`, `never`, `openai:NAME`, ...).
    pub model: String,
    /// How the model was asked to answer (version 1 records: `tool`).
    #[serde(default)]
    pub answer_mode: crate::answer::AnswerMode,
    /// Whether a grammar constrained the answer (text mode on a server that takes one).
    #[serde(default)]
    pub constrained: bool,
    /// The item's id.
    pub item: String,
    /// The item's source.
    pub source: String,
    /// The turn in progress.
    pub current: u32,
    /// Whether the counting threshold showed a card here.
    pub threshold: bool,
    /// The turns on the card.
    pub offered: Vec<u32>,
    /// Gold: the closed ranges.
    pub gold_closed: Vec<(u32, u32)>,
    /// Gold: the open turns.
    pub gold_open: Vec<u32>,
    /// The answer's text.
    #[serde(default)]
    pub text: String,
    /// The `fold_unit` calls with their verdicts.
    #[serde(default)]
    pub calls: Vec<CallVerdict>,
    /// Other tool calls the answer made (names).
    #[serde(default)]
    pub other_calls: Vec<String>,
    /// The scores (all zero when `error` is set).
    #[serde(default)]
    pub score: ItemScore,
    /// Tokens of the card.
    pub card_tokens: u64,
    /// Tokens of the request (the provider's count when reported, else o200k).
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub output_tokens: u64,
    /// Wall time of the model call, in milliseconds (0 for baselines).
    pub latency_ms: u64,
    /// Cost in dollars (0 for baselines).
    pub cost: f64,
    /// Why the model gave no answer (after the backend's retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Turns of the context left out to fit `judge run --max-context` (0: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub context_cut: u32,
    /// The request did not fit `--max-context` even without its context, so the model was not
    /// asked (`error` says the sizes); counted in its own column, not among the errors.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub too_long: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl JudgedRecord {
    /// A record for an item; fill the answer with [`JudgedRecord::answered`] or set `error`.
    pub fn new(model: &str, item: &Item, card_tokens: u64) -> JudgedRecord {
        JudgedRecord {
            version: RECORD_VERSION,
            model: model.to_string(),
            answer_mode: crate::answer::AnswerMode::Tool,
            constrained: false,
            item: item.id.clone(),
            source: item.source.clone(),
            current: item.current,
            threshold: item.threshold,
            offered: item.offered(),
            gold_closed: item.gold.closed.clone(),
            gold_open: item.gold.open.clone(),
            text: String::new(),
            calls: Vec::new(),
            other_calls: Vec::new(),
            score: ItemScore::default(),
            card_tokens,
            prompt_tokens: 0,
            output_tokens: 0,
            latency_ms: 0,
            cost: 0.0,
            error: None,
            context_cut: 0,
            too_long: false,
        }
    }

    /// Judges a response at the item and stores it.
    pub fn answered(mut self, item: &Item, ctx: &Context, resp: &Response) -> JudgedRecord {
        let j = judge_calls(item, ctx, &resp.tool_calls);
        self.text = resp.text.clone();
        self.calls = j.calls;
        self.other_calls = j.other_calls;
        self.score = j.score;
        self.output_tokens = resp.output_tokens;
        self
    }
}

/// A baseline's record at an item.
pub fn baseline_record(j: Judge, item: &Item, ctx: &Context) -> JudgedRecord {
    let card = item.card();
    let resp = baseline_response(j, item);
    let mut r = JudgedRecord::new(j.name(), item, card_tokens(&card)).answered(item, ctx, &resp);
    r.prompt_tokens = item
        .messages
        .iter()
        .map(|m| u64::from(m.tokens))
        .sum::<u64>()
        + u64::from(Message::user(item.current, item.user.clone(), Some(card)).tokens);
    r
}

/// One model's scores over the items it answered.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Aggregate {
    /// The model.
    pub model: String,
    /// Items asked.
    pub items: usize,
    /// Items with no answer (errors), the too-long ones aside.
    pub errors: usize,
    /// Items not asked: the request did not fit `--max-context` even without its context.
    pub too_long: usize,
    /// Items asked with the oldest turns of their context left out to fit `--max-context`.
    pub cut: usize,
    /// Items answered exactly.
    pub exact: usize,
    /// Closed units on the cards answered.
    pub closed_units: usize,
    /// Closed units folded.
    pub folded_units: usize,
    /// Closed units late or missed.
    pub missed_units: usize,
    /// Premature folds.
    pub premature: usize,
    /// Items with at least one premature fold.
    pub items_premature: usize,
    /// Illegal calls.
    pub illegal: usize,
    /// Unparsable text answers.
    pub unparsable: usize,
    /// How the model answered: `tool`, `text`, `text+grammar` (`–` for the baselines).
    pub answer: String,
    /// Folds asked for.
    pub folds: usize,
    /// Answered items where nothing was closed.
    pub nothing_closed: usize,
    /// Of those, the ones where the card was ignored.
    pub ignored_when_nothing_closed: usize,
    /// Mean card tokens.
    pub mean_card_tokens: f64,
    /// Mean output tokens of the answers.
    pub mean_output_tokens: f64,
    /// Median latency in milliseconds.
    pub median_latency_ms: f64,
    /// Total cost in dollars.
    pub cost: f64,
}

/// Aggregates the records of one model.
pub fn aggregate(model: &str, records: &[JudgedRecord]) -> Aggregate {
    let mine: Vec<&JudgedRecord> = records.iter().filter(|r| r.model == model).collect();
    let ok: Vec<&&JudgedRecord> = mine.iter().filter(|r| r.error.is_none()).collect();
    let too_long = mine.iter().filter(|r| r.too_long).count();
    let mut a = Aggregate {
        model: model.to_string(),
        items: mine.len(),
        errors: mine.len() - ok.len() - too_long,
        too_long,
        cut: ok.iter().filter(|r| r.context_cut > 0).count(),
        ..Aggregate::default()
    };
    for r in &ok {
        let s = &r.score;
        a.exact += usize::from(s.exact);
        a.closed_units += s.closed_units;
        a.folded_units += s.folded_units;
        a.missed_units += s.missed_units;
        a.premature += s.premature;
        a.items_premature += usize::from(s.premature > 0);
        a.illegal += s.illegal;
        a.unparsable += usize::from(s.unparsable);
        a.folds += s.folds;
        if r.gold_closed.is_empty() {
            a.nothing_closed += 1;
            a.ignored_when_nothing_closed += usize::from(s.ignored);
        }
    }
    let n = ok.len().max(1) as f64;
    a.mean_card_tokens = ok.iter().map(|r| r.card_tokens as f64).sum::<f64>() / n;
    a.mean_output_tokens = ok.iter().map(|r| r.output_tokens as f64).sum::<f64>() / n;
    let mut lat: Vec<f64> = ok.iter().map(|r| r.latency_ms as f64).collect();
    lat.sort_by(f64::total_cmp);
    a.median_latency_ms = match lat.len() {
        0 => 0.0,
        l if l % 2 == 1 => lat[l / 2],
        l => (lat[l / 2 - 1] + lat[l / 2]) / 2.0,
    };
    a.cost = mine.iter().map(|r| r.cost).sum();
    a.answer = crate::answer::answer_label(model, &mine);
    a
}

fn pct(part: usize, whole: usize) -> String {
    if whole == 0 {
        "–".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

fn count_pct(part: usize, whole: usize) -> String {
    if whole == 0 {
        "–".into()
    } else {
        format!("{part} ({})", pct(part, whole))
    }
}

/// The side-by-side table of models' scores.
pub fn scores_table(aggs: &[Aggregate]) -> Table {
    let headers = [
        "model",
        "answer",
        "items",
        "exact",
        "units folded",
        "premature",
        "late/missed",
        "illegal",
        "unparsable",
        "ignored, nothing closed",
        "card tok",
        "answer tok",
        "latency ms",
        "cost $",
        "cut",
        "too long",
        "errors",
    ];
    Table {
        headers: headers.iter().map(|s| s.to_string()).collect(),
        rows: aggs
            .iter()
            .map(|a| {
                let answered = a.items - a.errors - a.too_long;
                vec![
                    a.model.clone(),
                    a.answer.clone(),
                    a.items.to_string(),
                    count_pct(a.exact, answered),
                    count_pct(a.folded_units, a.closed_units),
                    format!(
                        "{} ({} of items)",
                        a.premature,
                        pct(a.items_premature, answered)
                    ),
                    count_pct(a.missed_units, a.closed_units),
                    a.illegal.to_string(),
                    if a.answer.starts_with("text") {
                        count_pct(a.unparsable, answered)
                    } else {
                        "–".into()
                    },
                    count_pct(a.ignored_when_nothing_closed, a.nothing_closed),
                    format!("{:.0}", a.mean_card_tokens),
                    format!("{:.1}", a.mean_output_tokens),
                    format!("{:.0}", a.median_latency_ms),
                    format!("{:.4}", a.cost),
                    a.cut.to_string(),
                    a.too_long.to_string(),
                    a.errors.to_string(),
                ]
            })
            .collect(),
    }
}

/// What a dataset says about the host's filter and the lexical rule, per source.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct SourceStats {
    /// `task`, `claude-code`, ... or `all`.
    pub source: String,
    /// Sessions.
    pub sessions: usize,
    /// Turn boundaries (items).
    pub items: usize,
    /// Items where the counting threshold showed a card.
    pub shown: usize,
    /// Items kept away from the model by the threshold.
    pub kept_away: usize,
    /// Kept-away items with a labelled previous turn.
    pub kept_labelled: usize,
    /// Kept-away items where a unit ended with the previous turn.
    pub kept_boundary: usize,
    /// Kept-away items whose card would have offered a closed unit.
    pub kept_closed: usize,
    /// Labelled boundaries (both turns labelled).
    pub boundaries: usize,
    /// Boundaries where the lexical rule is wrong (continuation or not).
    pub lexical_wrong: usize,
    /// Boundaries whose new message is 60 characters or less.
    pub short: usize,
    /// Of those, where the lexical rule is wrong (a short message that starts new work).
    pub short_wrong: usize,
    /// Boundaries whose new message is longer.
    pub long: usize,
    /// Of those, where the lexical rule is wrong (a long message that continues).
    pub long_wrong: usize,
}

impl SourceStats {
    fn add(&mut self, it: &Item) {
        self.items += 1;
        if it.threshold {
            self.shown += 1;
        } else {
            self.kept_away += 1;
            if let Some(b) = it.gold.boundary {
                self.kept_labelled += 1;
                self.kept_boundary += usize::from(b);
            }
            self.kept_closed += usize::from(!it.gold.closed.is_empty());
        }
        if let Some(cont) = it.gold.continues {
            self.boundaries += 1;
            let short = it.typed(it.current).unwrap_or("").chars().count() <= LEXICAL_SHORT;
            let wrong = short != cont;
            self.lexical_wrong += usize::from(wrong);
            if short {
                self.short += 1;
                self.short_wrong += usize::from(wrong);
            } else {
                self.long += 1;
                self.long_wrong += usize::from(wrong);
            }
        }
    }
}

/// Per-source statistics of a dataset, then `all`.
pub fn dataset_stats(items: &[Item]) -> Vec<SourceStats> {
    let mut by: BTreeMap<String, (SourceStats, BTreeSet<String>)> = BTreeMap::new();
    let mut all = SourceStats {
        source: "all".into(),
        ..SourceStats::default()
    };
    let mut all_sessions = BTreeSet::new();
    for it in items {
        let e = by.entry(it.source.clone()).or_insert_with(|| {
            (
                SourceStats {
                    source: it.source.clone(),
                    ..SourceStats::default()
                },
                BTreeSet::new(),
            )
        });
        e.0.add(it);
        e.1.insert(it.session.clone());
        all.add(it);
        all_sessions.insert((it.source.clone(), it.session.clone()));
    }
    let mut out: Vec<SourceStats> = by
        .into_values()
        .map(|(mut s, sessions)| {
            s.sessions = sessions.len();
            s
        })
        .collect();
    if out.len() > 1 {
        all.sessions = all_sessions.len();
        out.push(all);
    }
    out
}

/// The host's filter: how many turn boundaries the counting threshold keeps away from the model,
/// and how many of those were unit boundaries after all.
pub fn filter_table(stats: &[SourceStats]) -> Table {
    let headers = [
        "source",
        "sessions",
        "turn boundaries",
        "card shown",
        "kept away",
        "kept away: a unit ended",
        "kept away: plainly continuing",
        "kept away: closed work on the card",
    ];
    Table {
        headers: headers.iter().map(|s| s.to_string()).collect(),
        rows: stats
            .iter()
            .map(|s| {
                vec![
                    s.source.clone(),
                    s.sessions.to_string(),
                    s.items.to_string(),
                    s.shown.to_string(),
                    count_pct(s.kept_away, s.items),
                    count_pct(s.kept_boundary, s.kept_labelled),
                    count_pct(s.kept_labelled - s.kept_boundary, s.kept_labelled),
                    count_pct(s.kept_closed, s.kept_away),
                ]
            })
            .collect(),
    }
}

/// The lexical rule (60 characters or less continues) checked against the labels at every
/// labelled turn boundary.
pub fn lexical_table(stats: &[SourceStats]) -> Table {
    let headers = [
        "source",
        "labelled boundaries",
        "lexical wrong",
        "short (≤60 chars)",
        "short: wrong (new work)",
        "long",
        "long: wrong (continues)",
    ];
    Table {
        headers: headers.iter().map(|s| s.to_string()).collect(),
        rows: stats
            .iter()
            .map(|s| {
                vec![
                    s.source.clone(),
                    s.boundaries.to_string(),
                    count_pct(s.lexical_wrong, s.boundaries),
                    count_pct(s.short, s.boundaries),
                    count_pct(s.short_wrong, s.short),
                    count_pct(s.long, s.boundaries),
                    count_pct(s.long_wrong, s.long),
                ]
            })
            .collect(),
    }
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
}

/// Parses a labels file: `turns` is a list of `{uuid, n, unit, ...}`; `n: null` marks a user
/// record that is not a prompt. Other fields are ignored. Every problem is reported.
pub fn parse_labels(name: &str, text: &str) -> Result<SessionLabels, Vec<Problem>> {
    let doc = yaml::parse(name, text).map_err(|p| vec![p])?;
    let mut r = Reader::new(name, text);
    let root: Vec<Seg> = Vec::new();
    let mut out = SessionLabels::default();
    let Some(map) = doc.as_mapping() else {
        r.problem(
            &root,
            format!(
                "a labels file must be a mapping with `turns`, found {}",
                yaml::kind(&doc)
            ),
        );
        return Err(r.problems);
    };
    let text_field = |k: &str| map.get(k).and_then(|v| v.as_str()).map(str::to_string);
    out.session = text_field("session");
    out.source_path = text_field("source_path");
    let Some(turns) = map.get("turns") else {
        r.problem(
            &root,
            "a labels file needs `turns`: a list of user records, each with `uuid` and `unit`",
        );
        return Err(r.problems);
    };
    let tp = key(&root, "turns");
    for (i, t) in r.sequence(&tp, turns, "`turns`").iter().enumerate() {
        let p = yaml::child(&tp, Seg::Index(i));
        let Some(m) = t.as_mapping() else {
            r.problem(
                &p,
                format!("a turn must be a mapping, found {}", yaml::kind(t)),
            );
            continue;
        };
        let Some(uuid) = m.get("uuid").and_then(|v| v.as_str()) else {
            r.problem(&p, "a turn needs `uuid`: the user record's uuid");
            continue;
        };
        let prompt = m.get("n").is_some_and(|n| !n.is_null());
        let unit = match m.get("unit") {
            None | Some(crate::yaml::Value::Null) => None,
            Some(v) => r.string(&key(&p, "unit"), v, "`unit`"),
        };
        if prompt && unit.is_none() {
            r.problem(&p, "a prompt (`n` set) needs a `unit`");
            continue;
        }
        if out
            .units
            .insert(uuid.to_string(), unit.filter(|_| prompt))
            .is_some()
        {
            r.problem(&key(&p, "uuid"), format!("uuid {uuid} is labelled twice"));
        }
    }
    if r.problems.is_empty() {
        Ok(out)
    } else {
        Err(r.problems)
    }
}

/// A recorded session to replay under the fold policy.
#[derive(Debug, Clone, Copy)]
pub struct Recorded<'a> {
    /// Where its items come from.
    pub origin: Origin<'a>,
    /// Its messages in order, turn-numbered (0 before the first prompt); each turn's first
    /// message is its prompt.
    pub messages: &'a [Arc<Message>],
}

/// Settings of [`replay_items`].
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// Tokens of the system prompt and tools (the fold policy's pressure timing reads them).
    pub prefix_tokens: u32,
    /// Characters a tool output keeps in an item.
    pub max_tool_output: usize,
    /// The workspace-relative archive folder named in fold results.
    pub archive_dir: String,
}

/// Replays a recorded session under a fold policy with gold folds and returns an item at every
/// turn ≥ 2 that has a turn on offer. At each turn the policy decides whether the counting
/// threshold shows a card (its own [`Policy::card`]); where it does, the card is attached to the
/// prompt and the oracle answers it right after the prompt (its `fold_unit` calls and the
/// policy's replies become messages, as in a live session); at the end of the turn the policy's
/// splices are applied with the archive's real sha256. A compaction summary in the recording
/// compacts the context as the policy would.
pub fn replay_items(rec: Recorded<'_>, policy: &mut dyn Policy, opts: &ReplayOptions) -> Vec<Item> {
    let msgs = rec.messages;
    let labels = rec.origin.labels;
    let last = msgs.iter().map(|m| m.turn).max().unwrap_or(0);
    let mut ctx = Context::default();
    let mut items = Vec::new();
    let mut i = 0;
    while i < msgs.len() && msgs[i].turn == 0 {
        ctx.push(Arc::clone(&msgs[i]));
        i += 1;
    }
    let prompt_of = |t: u32| {
        msgs.iter()
            .find(|m| m.turn == t)
            .filter(|m| m.is_human())
            .map(|m| m.text.clone())
    };
    for t in 1..=last {
        let start = i;
        while i < msgs.len() && msgs[i].turn <= t {
            i += 1;
        }
        let turn = &msgs[start..i];
        ctx.turn = t;
        let offer = policy.card(&ctx, opts.prefix_tokens);
        let Some(prompt) = turn.first().filter(|m| m.is_human()) else {
            for m in turn {
                ctx.push(Arc::clone(m));
            }
            continue;
        };
        if let Some(item) = build_item(
            rec.origin,
            &ctx.messages,
            t,
            &prompt.text,
            offer.is_some(),
            opts.max_tool_output,
        ) {
            items.push(item);
        }
        match &offer {
            Some(o) => {
                let mut carded = (**prompt).clone();
                carded.card = Some(o.text.clone());
                ctx.push(carded.sealed());
                let unit = |x: u32| label_of(labels, x);
                let none = |_: u32| None;
                let p = CardPoint {
                    offered: &o.turns,
                    current: t,
                    user: &none,
                    unit: &unit,
                    last_turn: (labels.len() as u32).max(t),
                };
                let calls = fold_calls(&judge::ranges(Judge::Oracle, &p));
                if !calls.is_empty() {
                    let calls: Vec<ToolCall> = calls
                        .into_iter()
                        .map(|mut c| {
                            c.id = format!("judge-{t}-{}", c.id);
                            c
                        })
                        .collect();
                    ctx.push(Message::assistant(t, "", calls.clone()));
                    for c in &calls {
                        let reply = policy.handle_tool(&ctx, c);
                        ctx.push(Message::tool_result(t, c, reply.text, reply.is_error));
                    }
                }
            }
            None => ctx.push(Arc::clone(prompt)),
        }
        for m in &turn[1..] {
            if m.kind == MessageKind::Summary {
                policy.apply_compaction(&mut ctx, Arc::clone(m));
            } else {
                ctx.push(Arc::clone(m));
            }
        }
        let next = prompt_of(t + 1);
        for s in policy.end_turn(&ctx, next.as_deref()) {
            let text = fold::archive_text(s.from, s.to, &s.messages);
            let archive = ArchiveRef {
                path: format!(
                    "{}/{}",
                    opts.archive_dir,
                    fold::archive_name(s.from, s.to, "fold")
                ),
                sha256: sha256_hex(text.as_bytes()),
            };
            policy.apply_splice(&mut ctx, &s, &archive);
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn labels(units: &[&str]) -> Vec<Option<String>> {
        units.iter().map(|u| Some(u.to_string())).collect()
    }

    /// A session of `units.len()` turns, one read per turn, users from `users`.
    fn session(users: &[&str], turns: u32) -> Vec<Arc<Message>> {
        let mut out = Vec::new();
        for t in 1..=turns {
            out.push(Message::user(t, users[t as usize - 1], None));
            let k = ToolCall {
                id: format!("c{t}"),
                name: "read_file".into(),
                args: json!({"path": format!("f{t}.py")}),
            };
            out.push(Message::assistant(t, "", vec![k.clone()]));
            out.push(Message::tool_result(t, &k, "x".repeat(50), false));
            out.push(Message::assistant(t, format!("done {t}"), vec![]));
        }
        out
    }

    fn item(users: &[&str], units: &[&str], current: u32) -> Item {
        let l = labels(units);
        let msgs = session(users, current - 1);
        build_item(
            Origin {
                source: SOURCE_TASK,
                session: "hand",
                file: "hand.yaml",
                labels: &l,
                words: &[],
            },
            &msgs,
            current,
            users[current as usize - 1],
            false,
            20,
        )
        .unwrap()
    }

    const USERS: [&str; 6] = [
        "the login test fails now and then, find out why, it is annoying everyone on the team",
        "the build takes ages, why? look at the build script and the CI config please",
        "ok, turn it off",
        "now a different thing: the README is outdated, update the install section for us",
        "and the changelog",
        "something else entirely, a long message that starts a brand new unit of work here",
    ];

    #[test]
    fn gold_closes_units_no_later_turn_continues() {
        // login, build, build | readme (current 4): login and build are closed.
        let it = item(&USERS, &["login", "build", "build", "readme", "readme"], 4);
        assert_eq!(it.gold.closed, vec![(1, 3)]);
        assert_eq!(
            it.gold.units,
            vec![
                GoldUnit {
                    unit: "login".into(),
                    turns: vec![1]
                },
                GoldUnit {
                    unit: "build".into(),
                    turns: vec![2, 3]
                }
            ]
        );
        assert!(it.gold.open.is_empty());
        assert_eq!(it.gold.boundary, Some(true));
        assert_eq!(it.gold.continues, Some(false));
        // At turn 3 ("ok, turn it off") build continues: only login is closed, turn 2 is open.
        let it = item(&USERS, &["login", "build", "build", "readme"], 3);
        assert_eq!(it.gold.closed, vec![(1, 1)]);
        assert_eq!(it.gold.open, vec![2]);
        assert_eq!(it.gold.boundary, Some(false));
        assert_eq!(it.gold.continues, Some(true));
    }

    #[test]
    fn a_unit_that_returns_later_stays_open() {
        // a, b, a, c: at turn 3 unit a returns, b is closed, a (turn 1) is open.
        let it = item(&USERS, &["a", "b", "a", "c"], 3);
        assert_eq!(it.gold.closed, vec![(2, 2)]);
        assert_eq!(it.gold.open, vec![1]);
        assert_eq!(it.gold.boundary, Some(true), "b ended with turn 2");
        assert_eq!(it.gold.continues, Some(false));
        // Unlabelled turns are never closed.
        let l = vec![Some("a".to_string()), None, Some("c".to_string())];
        let g = gold(&[1, 2], 3, &l);
        assert_eq!(g.closed, vec![(1, 1)]);
        assert_eq!(g.open, vec![2]);
        assert_eq!(g.boundary, None);
        assert_eq!(g.continues, None);
    }

    #[test]
    fn build_item_counts_and_cuts() {
        let it = item(&USERS, &["login", "build", "build", "readme"], 4);
        assert_eq!(it.offered(), vec![1, 2, 3]);
        assert_eq!(it.turns[0].paths, vec!["f1.py"]);
        assert_eq!(it.turns[0].closing, "done 1");
        assert_eq!(it.since_fold.tool_calls, 3);
        assert_eq!(it.truncated, 3, "three 50-character outputs cut to 20");
        assert!(it.messages[2].text.contains("characters cut"));
        assert!(
            it.turns[0].tokens > u64::from(it.messages[0].tokens + it.messages[2].tokens),
            "sizes are measured before the cut"
        );
        assert_eq!(card_turns_of(&it), vec![1, 2, 3]);
        assert!(it.check().is_ok());
        let mut bad = it.clone();
        bad.gold.closed = vec![(1, 1)];
        assert!(bad.check().unwrap_err().contains("does not follow"));
    }

    fn card_turns_of(it: &Item) -> Vec<u32> {
        fold::card_turns(&it.card())
    }

    fn call(args: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "x".into(),
            name: "fold_unit".into(),
            args,
        }
    }

    #[test]
    fn scores_exact_partial_premature_illegal_and_ignore() {
        // login, build, build | readme: closed units login (1) and build (2-3).
        let it = item(&USERS, &["login", "build", "build", "readme"], 4);
        let ctx = it.context();
        let j = judge_calls(&it, &ctx, &[call(json!({"from": 1, "to": 3}))]);
        assert!(j.score.exact);
        assert_eq!((j.score.folded_units, j.score.missed_units), (2, 0));
        assert_eq!(j.calls[0].verdict, Verdict::Exact);

        let j = judge_calls(&it, &ctx, &[call(json!({"from": 1, "to": 2}))]);
        assert!(!j.score.exact);
        assert_eq!(j.calls[0].verdict, Verdict::Partial);
        assert_eq!((j.score.folded_units, j.score.missed_units), (1, 1));

        let j = judge_calls(&it, &ctx, &[]);
        assert!(j.score.ignored && !j.score.exact);
        assert_eq!(j.score.missed_units, 2);

        // Illegal: reversed, the turn in progress, overlap with a fold of the same answer,
        // unreadable arguments. Strings of digits are read as the policy reads them.
        let j = judge_calls(
            &it,
            &ctx,
            &[
                call(json!({"from": 3, "to": 1})),
                call(json!({"from": 2, "to": 4})),
                call(json!({"from": "1", "to": "1"})),
                call(json!({"from": 1, "to": 2})),
                call(json!({"from": "x"})),
            ],
        );
        let v: Vec<Verdict> = j.calls.iter().map(|c| c.verdict).collect();
        assert_eq!(
            v,
            vec![
                Verdict::Illegal,
                Verdict::Illegal,
                Verdict::Exact,
                Verdict::Illegal,
                Verdict::Illegal
            ]
        );
        assert!(j.calls[0].reason.contains("reversed"));
        assert!(j.calls[1].reason.contains("in progress"));
        assert!(j.calls[3].reason.contains("already folded"));
        assert_eq!(j.score.illegal, 4);
        assert_eq!(j.score.folded_units, 1);

        // Premature: at turn 3 build is open.
        let it3 = item(&USERS, &["login", "build", "build", "readme"], 3);
        let j = judge_calls(&it3, &it3.context(), &[call(json!({"from": 1, "to": 2}))]);
        assert_eq!(j.calls[0].verdict, Verdict::Premature);
        assert_eq!(j.score.premature, 1);
        assert_eq!(
            j.score.folded_units, 0,
            "a closed unit in a premature fold is missed"
        );
    }

    #[test]
    fn baselines_and_aggregates() {
        let it = item(&USERS, &["login", "build", "build", "readme"], 3);
        assert_eq!(baseline_ranges(Judge::Oracle, &it), vec![(1, 1)]);
        assert_eq!(baseline_ranges(Judge::Eager, &it), vec![(1, 2)]);
        assert_eq!(baseline_ranges(Judge::Lexical, &it), vec![(1, 1)]);
        assert!(baseline_ranges(Judge::Never, &it).is_empty());
        let nothing = item(&USERS, &["login", "login", "login"], 3);
        let items = [it, nothing];
        let mut records = Vec::new();
        for j in BASELINES {
            for i in &items {
                records.push(baseline_record(j, i, &i.context()));
            }
        }
        let aggs: Vec<Aggregate> = BASELINES
            .iter()
            .map(|j| aggregate(j.name(), &records))
            .collect();
        let oracle = &aggs[0];
        assert_eq!(
            (oracle.exact, oracle.folded_units, oracle.closed_units),
            (2, 1, 1)
        );
        assert_eq!(oracle.ignored_when_nothing_closed, 1);
        let eager = &aggs[2];
        assert_eq!(
            (eager.premature, eager.items_premature, eager.exact),
            (2, 2, 0)
        );
        let never = &aggs[3];
        assert_eq!(
            (never.folded_units, never.missed_units, never.exact),
            (0, 1, 1)
        );
        assert!(oracle.mean_card_tokens > 50.0);
        let t = scores_table(&aggs);
        assert_eq!(t.rows.len(), 4);
        assert_eq!(t.rows[0][3], "2 (100.0%)", "exact, after model and answer");
        assert_eq!(t.rows[0][1], "–", "a baseline's answer column");
    }

    #[test]
    fn dataset_round_trips_and_rejects_other_versions() {
        let it = item(&USERS, &["login", "build", "build", "readme"], 4);
        let text = format!(
            "{}\n\n{}\n",
            to_line(&it),
            to_line(&{
                let mut b = item(&USERS, &["login", "build", "build", "readme"], 3);
                b.id = "task:hand/3".into();
                b
            })
        );
        let back = parse_dataset("d.jsonl", &text).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].card(), it.card());
        assert_eq!(back[0].messages.len(), it.messages.len());
        let v2 = text.replacen("\"version\":1", "\"version\":2", 1);
        assert!(parse_dataset("d.jsonl", &v2)
            .unwrap_err()
            .contains("d.jsonl:1: dataset version 2 is not supported"));
        assert!(parse_dataset("d.jsonl", "{}")
            .unwrap_err()
            .contains("no `version`"));
        assert!(parse_dataset("d.jsonl", "nope")
            .unwrap_err()
            .contains("d.jsonl:1"));
        let twice = format!("{}\n{}\n", to_line(&it), to_line(&it));
        assert!(parse_dataset("d.jsonl", &twice)
            .unwrap_err()
            .contains("appears twice"));
    }

    #[test]
    fn stats_count_the_filter_and_the_lexical_rule() {
        let units = ["login", "build", "build", "readme", "readme", "new"];
        let items: Vec<Item> = (2..=6).map(|c| item(&USERS, &units, c)).collect();
        let s = dataset_stats(&items);
        assert_eq!(s.len(), 1);
        let s = &s[0];
        assert_eq!((s.items, s.kept_away, s.shown), (5, 5, 0));
        // Boundaries at 2 (login ended), 4 (build ended), 6 (readme ended).
        assert_eq!(s.kept_boundary, 3);
        // Lexical: 2 long new (right), 3 short continues (right), 4 long new (right),
        // 5 short continues (right), 6 long new (right).
        assert_eq!((s.boundaries, s.lexical_wrong), (5, 0));
        let other = ["a", "a", "b", "b", "b", "b"];
        let items: Vec<Item> = (2..=6).map(|c| item(&USERS, &other, c)).collect();
        let s = &dataset_stats(&items)[0];
        // 2 long continues (wrong), 3 short new (wrong), 4 long continues (wrong), 5 short
        // continues (right), 6 long continues (wrong).
        assert_eq!(
            (s.lexical_wrong, s.short, s.short_wrong, s.long_wrong),
            (4, 2, 1, 3)
        );
        assert_eq!(filter_table(&dataset_stats(&items)).rows.len(), 1);
        assert_eq!(
            lexical_table(&dataset_stats(&items)).rows[0][2],
            "4 (80.0%)"
        );
    }

    #[test]
    fn labels_files_are_read_with_problems_located() {
        let text = "session: \"s.jsonl\"\nsource_path: \"claude-code/p/s.jsonl\"\nturns:\n  - uuid: \"u1\"\n    n: 1\n    unit: a\n  - uuid: \"u2\"\n    n: null\n    unit: null\n  - uuid: \"u3\"\n    n: 2\n    unit: b\nunits:\n  a: \"x\"\n";
        let l = parse_labels("l.yaml", text).unwrap();
        assert_eq!(l.source_path.as_deref(), Some("claude-code/p/s.jsonl"));
        assert_eq!(l.units["u1"], Some("a".to_string()));
        assert_eq!(l.units["u2"], None);
        let bad = "turns:\n  - n: 1\n    unit: a\n  - uuid: \"u\"\n    n: 2\n";
        let p = parse_labels("l.yaml", bad).unwrap_err();
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].to_string().starts_with("l.yaml:2:"), "{}", p[0]);
        assert!(parse_labels("l.yaml", "- 1").is_err());
    }

    #[test]
    fn cost_prefers_the_providers_usage() {
        let p = Price::default();
        assert!((cost(1_000_000, 0, None, &p) - 3.0).abs() < 1e-9);
        let u = Usage {
            input_tokens: 0,
            cache_read_tokens: 1_000_000,
            cache_write_tokens: 0,
            output_tokens: 0,
        };
        assert!((cost(5, 5, Some(u), &p) - 0.3).abs() < 1e-9);
        assert_eq!(truncate_output("abc", 3), None);
        assert_eq!(
            truncate_output("abcdefgh", 4).unwrap(),
            "ab\n[… 4 characters cut by foldbench judge …]\ngh"
        );
    }
}
