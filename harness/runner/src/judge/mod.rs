//! Boundary judgement (docs/judge.md), the judge's IO and rendering: gathering the items of
//! `foldbench judge build` ([`classify`] the `--from` paths, [`expand_history`], [`build`]),
//! asking the models of `foldbench judge run` ([`run_models`], [`score`]), and drawing their
//! tables ([`build_tables`], [`run_tables`]) and page ([`judge_page`]). The dataset, the gold and
//! the scores are pure and live in [`harness_core::judge`]; the command line's flags are the
//! binary's. Inside: `answer`, how a model answers a card (`--answer tool|text`, `--grammar`);
//! `fit`, fitting a request into `--max-context`; `request`, the request of an item; `tables`
//! and `html`, the tables and the page.
//!
//! **Items from task specs.** Each task runs once under `fold` (default thresholds) with the sim
//! answering cards as the oracle (seed 1, no re-check noise), in a real workspace. The runner
//! keeps the first request of every turn: the context exactly as the model saw it, with the real
//! tool outputs, earlier cards and gold fold results in place. Every turn ≥ 2 becomes an item;
//! `threshold` says whether the policy showed a card there, and where it did, the card the
//! policy showed must equal the one the item renders (checked, so the dataset and the policy
//! cannot drift apart). Running the task rather than estimating turn sizes from its script is
//! more faithful: the sizes, paths and outputs on the card are the ones a session has, and the
//! context after an earlier fold holds what the sim did about it (archive reads, re-runs).
//!
//! **Items from labelled real sessions.** A data folder holds `labels/<format>/*.yaml` (units by
//! prompt uuid) beside the transcripts they name (`source_path`). Each transcript is imported
//! with `harness-import` and replayed under the same `fold` policy
//! ([`harness_core::judge::replay_items`]): at every prompt the policy decides whether its
//! threshold shows a card, the oracle answers it, and the policy's splices are applied. Every
//! prompt ≥ 2 becomes an item.
//!
//! **Asking a model.** The request is the session's system prompt ([`crate::cell::SYSTEM_PROMPT`]),
//! the workspace tools plus `fold_unit`, the item's context (tool outputs cut to
//! `--max-tool-output` characters, head and tail kept) and the current user message with the card
//! attached. One request per item: `fold_unit` calls are judged, any other answer ignores the card.

mod answer;
mod ask;
mod fit;
mod gather;
mod html;
mod request;
mod tables;

pub use answer::{run_models, AnswerArgs, Answering};
pub use ask::{baseline_records, judge_models, score, Scored};
pub use gather::{build, classify, expand_history, read_dataset, select, JudgeError, Sources};
pub use html::judge_page;
pub use request::JudgeOptions;
pub use tables::{build_tables, filter_table, lexical_table, run_tables, scores_table};
