//! The "After real compactions" section of `foldbench replay` and `foldbench analyze`: what the
//! recorded agents did after they lost context ([`harness_replay::losses`]), in the terminal,
//! Markdown, JSON and the HTML page.

use harness_replay::losses::{self, SessionLosses, WINDOW_CALLS};
use harness_replay::losses::{groups, GroupStats};
use harness_report::render::Table;
use harness_report::view::Kind;
use serde::Serialize;

use crate::format::Text;
use crate::view::ViewArgs;

/// The section in the terminal or Markdown: its heading, the two group tables, one row per loss,
/// and the notes; one line when no session recorded a loss.
pub(crate) fn write_losses(out: &mut dyn Text, sessions: &[SessionLosses], view: ViewArgs) {
    let losses: usize = sessions.iter().map(|s| s.losses.len()).sum();
    if losses == 0 {
        return out.lines(&["After real compactions: no recorded loss (compaction, condensation, continued session) in these sessions".to_string()]);
    }
    out.heading(&losses::heading(sessions));
    let gs = groups(sessions);
    for t in [
        losses::rates_table(&gs),
        losses::references_table(&gs),
        losses::losses_table(sessions),
    ] {
        out.table(&t, Kind::Plain, view);
    }
    out.lines(&losses::notes(sessions));
}

/// The section's tables for the HTML page, inserted before the ground truth (the last), and its
/// notes after the others; nothing when no session recorded a loss.
pub(crate) fn with_losses(
    mut tables: Vec<(String, Table)>,
    mut notes: Vec<String>,
    sessions: &[SessionLosses],
) -> (Vec<(String, Table)>, Vec<String>) {
    if sessions.iter().all(|s| s.losses.is_empty()) {
        return (tables, notes);
    }
    let gs = groups(sessions);
    let at = tables.len().saturating_sub(1);
    let heading = losses::heading(sessions);
    for (k, (name, t)) in [
        ("re-fetches per call", losses::rates_table(&gs)),
        ("references, cost, repeats", losses::references_table(&gs)),
        ("each loss", losses::losses_table(sessions)),
    ]
    .into_iter()
    .enumerate()
    {
        tables.insert(at + k, (format!("{heading}: {name}"), t));
    }
    notes.extend(losses::notes(sessions));
    (tables, notes)
}

/// The section as JSON: every loss with its window, every base window, and the groups.
#[derive(Serialize)]
pub(crate) struct LossesJson<'a> {
    /// Tool calls measured after each loss, and a base window's length.
    pub(crate) window_calls: usize,
    /// Per session with a loss or a base window: its losses and base windows.
    pub(crate) sessions: Vec<&'a SessionLosses>,
    /// Per agent and model, per kind of loss, and all.
    pub(crate) groups: Vec<GroupStats>,
}

/// [`LossesJson`] of `sessions`.
pub(crate) fn losses_json(sessions: &[SessionLosses]) -> LossesJson<'_> {
    LossesJson {
        window_calls: WINDOW_CALLS,
        sessions: sessions
            .iter()
            .filter(|s| !s.losses.is_empty() || !s.base.is_empty())
            .collect(),
        groups: groups(sessions),
    }
}
