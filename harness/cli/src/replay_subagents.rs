//! `foldbench replay`'s subagents section: each subagent paired with its parent's call, the room
//! the delegation saved and what it cost against the same work inline
//! ([`harness_replay::subagents`]), in the terminal, Markdown and JSON.

use harness_import::ImportedSession;
use harness_replay::subagents::{self, SessionSubagents};
use harness_replay::{Labels, Replayer};
use harness_report::view::Kind;
use serde::Serialize;

use crate::error::Error;
use crate::format::Text;
use crate::view::ViewArgs;

/// The subagents of `sessions` paired, timed and measured with the replayer's judge, window and
/// prices.
pub(crate) fn subagents_of(
    sessions: &[ImportedSession],
    replayer: &Replayer,
    labels: Option<&Labels>,
    threads: usize,
) -> Result<Vec<SessionSubagents>, Error> {
    let config = replayer.config();
    let mut subs = subagents::delegations(sessions, &config.prices);
    subagents::measure(sessions, &mut subs, config, labels, threads).map_err(Error::failed)?;
    Ok(subs)
}

/// [`subagents_of`] with replay's default settings and `judge`: `analyze`'s subagents (their
/// room under none and fold, their cost against the same work inline).
pub(crate) fn subagents_by_default(
    sessions: &[ImportedSession],
    judge: harness_replay::JudgeKind,
    labels: Option<&Labels>,
    threads: usize,
) -> Result<Vec<SessionSubagents>, Error> {
    let replayer = Replayer::new(harness_replay::ReplayConfig {
        judge,
        ..harness_replay::ReplayConfig::default()
    })?;
    subagents_of(sessions, &replayer, labels, threads)
}

/// The section in the terminal or Markdown: nothing when no session has subagents.
pub(crate) fn write_subagents(out: &mut dyn Text, subs: &[SessionSubagents], view: ViewArgs) {
    let parents = subs.iter().filter(|s| s.delegated()).count();
    if parents == 0 {
        return;
    }
    let children: usize = subs.iter().map(|s| s.children.len()).sum();
    out.heading(&format!(
        "Subagents: {children} delegated from {parents} parent session{} — the room they saved in the parent's context and their cost against the same work inline",
        if parents == 1 { "" } else { "s" }
    ));
    out.table(&subagents::subagent_table(subs), Kind::Plain, view);
    out.lines(&subagents::subagent_notes(subs));
}

/// The page's tables with the subagents table before the ground truth (the last), and its
/// notes after the others, when a session delegated.
pub(crate) fn with_subagents(
    mut tables: Vec<(String, harness_report::render::Table)>,
    mut notes: Vec<String>,
    subs: &[SessionSubagents],
) -> (Vec<(String, harness_report::render::Table)>, Vec<String>) {
    if subs.iter().any(SessionSubagents::delegated) {
        notes.extend(subagents::subagent_notes(subs));
        let at = tables.len().saturating_sub(1);
        tables.insert(
            at,
            (
                "Subagents: room saved in the parent's context, cost against the same work inline"
                    .into(),
                subagents::subagent_table(subs),
            ),
        );
    }
    (tables, notes)
}

/// A ratio of sums with its 95% interval.
#[derive(Serialize)]
pub(crate) struct RatioJson {
    pub(crate) ratio: f64,
    pub(crate) lo: f64,
    pub(crate) hi: f64,
}

/// The JSON of the section: per parent session and over them.
#[derive(Serialize)]
pub(crate) struct SubagentsJson<'a> {
    pub(crate) sessions: &'a [SessionSubagents],
    /// Delegated over inline cost, Σ× over the measured sessions.
    pub(crate) cost_ratio: Option<RatioJson>,
    /// Delegated over inline input tokens, Σ× over the measured sessions.
    pub(crate) tokens_ratio: Option<RatioJson>,
}

/// [`SubagentsJson`] of `subs`.
pub(crate) fn subagents_json(subs: &[SessionSubagents]) -> SubagentsJson<'_> {
    let v = subagents::corpus(subs);
    let of = |e: harness_report::verdict::Estimate| RatioJson {
        ratio: e.point,
        lo: e.lo,
        hi: e.hi,
    };
    SubagentsJson {
        sessions: subs,
        cost_ratio: v.as_ref().map(|v| of(v.cost)),
        tokens_ratio: v.as_ref().map(|v| of(v.tokens)),
    }
}
