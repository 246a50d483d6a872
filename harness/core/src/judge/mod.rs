//! The judge's pure part: which ranges of a card to fold, and how well a model answers one
//! (docs/judge.md). The runner's `judge` module gathers the items, asks the models, writes the
//! files and draws the tables and the page; the `foldbench judge` command parses the flags.
//!
//! - The baseline judges ([`Judge`]: oracle, eager, lexical, never) and the ranges they fold at a
//!   [`CardPoint`] ([`ranges`]). The simulated agent answers cards with them, and `judge run`
//!   scores them beside the models ([`BASELINES`]).
//! - The boundary-judgement dataset: one [`Item`] per card point, its [`Gold`] from the
//!   [`SessionLabels`], the JSONL lines ([`to_line`], [`parse_dataset`]), the items of a
//!   recorded session replayed under a policy ([`replay_items`]), and the counts per source
//!   ([`dataset_stats`]).
//! - The scoring of an answer: [`judge_calls`] gives each `fold_unit` call its [`Verdict`], a
//!   [`JudgedRecord`] keeps one item's answer, and [`aggregate`] sums a model's records.
//! - The answer modes ([`AnswerMode`]): tool calls, as in a live session, or one line of text
//!   parsed strictly ([`judge_text`]), with its llama.cpp grammar ([`GRAMMAR`]).

mod answer;
mod baseline;
mod dataset;

pub use answer::{
    item_text_card, judge_text, text_request_messages, AnswerMode, GRAMMAR, TEXT_INSTRUCTION,
};
pub use baseline::{ranges, runs, CardPoint, Judge, LEXICAL_SHORT};
pub use dataset::{
    aggregate, baseline_record, build_item, card_tokens, cost, dataset_stats, judge_calls,
    parse_dataset, replay_items, to_line, Aggregate, CallVerdict, Gold, GoldUnit, Item, ItemError,
    ItemScore, ItemTurn, JsonlError, Judged, JudgedRecord, LabelKey, Origin, Recorded,
    ReplayOptions, SessionLabels, SinceFold, SourceStats, Verdict, BASELINES,
    DEFAULT_TOOL_OUTPUT_CAP, SOURCE_TASK,
};
