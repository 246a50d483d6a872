//! The "After real compactions" section: its tables and notes, for the terminal, Markdown and
//! the HTML page.

use harness_core::behaviour::Rate;
use harness_core::fold::group_thousands;
use harness_report::render::Table;

use super::stats::GroupStats;
use super::{Loss, SessionLosses, WINDOW_CALLS};
use crate::report::short_id;

/// The section's heading.
pub fn heading(sessions: &[SessionLosses]) -> String {
    let losses: usize = sessions.iter().map(|s| s.losses.len()).sum();
    let with = sessions.iter().filter(|s| !s.losses.is_empty()).count();
    let base: usize = sessions.iter().map(|s| s.base.len()).sum();
    format!(
        "After real compactions: {losses} recorded loss{} in {with} session{}, the {WINDOW_CALLS} tool calls after each against {base} window{} of {WINDOW_CALLS} calls with no loss before them",
        if losses == 1 { "" } else { "es" },
        if with == 1 { "" } else { "s" },
        if base == 1 { "" } else { "s" },
    )
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// `12.3% [8.1%, 16.0%]`.
pub(crate) fn rate(r: &Rate) -> String {
    if r.lo == r.hi {
        pct(r.point)
    } else {
        format!("{} [{}, {}]", pct(r.point), pct(r.lo), pct(r.hi))
    }
}

/// A signed rate: `+4.2% [−1.0%, +9.5%]`.
fn signed_rate(r: &Rate) -> String {
    let s = |x: f64| {
        let v = x * 100.0;
        if v > 0.05 {
            format!("+{v:.1}%")
        } else if v < -0.05 {
            format!("−{:.1}%", -v)
        } else {
            "±0.0%".into()
        }
    };
    if r.lo == r.hi {
        s(r.point)
    } else {
        format!("{} [{}, {}]", s(r.point), s(r.lo), s(r.hi))
    }
}

fn tokens(x: Option<f64>) -> String {
    x.map_or("–".into(), |t| group_thousands(t.round() as u64))
}

/// The rates table: per group, re-fetches per call after a loss against the base rate, and how
/// they were made.
pub fn rates_table(groups: &[GroupStats]) -> Table {
    let headers = [
        "group",
        "losses",
        "calls after",
        "re-fetch/call after",
        "base (windows)",
        "excess",
        "re-reads (changed)",
        "identical cmds",
        "searches",
        "archive reads",
    ];
    let rows = groups
        .iter()
        .map(|g| {
            let a = &g.after;
            vec![
                g.group.clone(),
                if g.measured == g.losses {
                    g.losses.to_string()
                } else {
                    format!("{}/{}", g.measured, g.losses)
                },
                a.calls.to_string(),
                format!(
                    "{} ({} of {})",
                    rate(&g.refetch_rate),
                    a.refetches(),
                    a.calls
                ),
                g.base_rate.as_ref().map_or("–".into(), |b| {
                    format!(
                        "{} ({}: {} of {})",
                        rate(b),
                        g.base_windows,
                        g.base.refetches(),
                        g.base.calls
                    )
                }),
                g.excess_rate.as_ref().map_or("–".into(), signed_rate),
                format!(
                    "{} ({}) · base {} ({})",
                    a.reread_unchanged,
                    a.reread_changed,
                    g.base.reread_unchanged,
                    g.base.reread_changed
                ),
                format!("{} · base {}", a.reruns, g.base.reruns),
                format!("{} · base {}", a.searches, g.base.searches),
                format!("{} · base {}", a.archive_reads, g.base.archive_reads),
            ]
        })
        .collect();
    Table {
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows,
    }
}

/// The references, cost and size table: per group.
pub fn references_table(groups: &[GroupStats]) -> Table {
    let headers = [
        "group",
        "refs held/re-fetched/new/no source",
        "re-fetched share",
        "recover (base share)",
        "no source",
        "recovery tokens/loss (extra reqs, carried)",
        "repeats/prompt (base)",
        "size before → after (summary)",
    ];
    let rows = groups
        .iter()
        .map(|g| {
            let a = &g.after;
            let per = |x: u64| {
                if g.measured == 0 {
                    "–".to_string()
                } else {
                    group_thousands(x / g.measured as u64)
                }
            };
            let rep = |x: Option<f64>| x.map_or("–".into(), pct);
            vec![
                g.group.clone(),
                format!(
                    "{}/{}/{}/{}",
                    a.refs_held, a.refs_refetched, a.refs_new_output, a.refs_no_source
                ),
                rate(&g.refetched_share),
                format!(
                    "{} ({})",
                    rate(&g.recover),
                    g.base_refetched_share.map_or("–".into(), pct)
                ),
                rate(&g.no_source),
                format!(
                    "{} ({} reqs, {} carried)",
                    per(a.recovery_tokens()),
                    a.extra_requests,
                    group_thousands(a.carried_tokens)
                ),
                format!("{} ({})", rep(g.repeat_rate.0), rep(g.repeat_rate.1)),
                format!(
                    "{} → {} ({})",
                    tokens(g.tokens_before),
                    tokens(g.tokens_after),
                    tokens(g.summary_tokens)
                ),
            ]
        })
        .collect();
    Table {
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows,
    }
}

/// One row per loss.
pub fn losses_table(sessions: &[SessionLosses]) -> Table {
    let headers = [
        "session",
        "agent · model",
        "turn",
        "kind",
        "trigger",
        "before → after",
        "summary",
        "calls",
        "re-fetches",
        "archive reads",
        "refs held/re-fetched/new/no source",
    ];
    let rows = sessions
        .iter()
        .flat_map(|s| s.losses.iter())
        .map(|l: &Loss| {
            let w = &l.window;
            vec![
                short_id(&l.session),
                super::stats::agent_model(l.agent, l.model.as_deref()),
                l.turn.to_string(),
                l.kind.name().to_string(),
                l.trigger.clone().unwrap_or_else(|| l.event_name().into()),
                format!(
                    "{} → {}",
                    l.tokens_before.map_or("–".into(), group_thousands),
                    l.tokens_after.map_or("–".into(), group_thousands)
                ),
                match (l.summary_tokens, l.opaque_summary_bytes) {
                    (Some(t), _) => group_thousands(t),
                    (None, Some(_)) => "encrypted".into(),
                    (None, None) => "–".into(),
                },
                w.calls.to_string(),
                if l.measured {
                    w.refetches().to_string()
                } else {
                    "not measured".into()
                },
                w.archive_reads.to_string(),
                format!(
                    "{}/{}/{}/{}",
                    w.refs_held, w.refs_refetched, w.refs_new_output, w.refs_no_source
                ),
            ]
        })
        .collect();
    Table {
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows,
    }
}

/// What the tables count, under them.
pub fn notes(sessions: &[SessionLosses]) -> Vec<String> {
    let unmeasured = sessions
        .iter()
        .flat_map(|s| &s.losses)
        .filter(|l| !l.measured)
        .count();
    let mut out = vec![format!(
        "window: the first {WINDOW_CALLS} tool calls after each loss (cut at the next loss): recovery, when it happens, comes first; base: the calls {WINDOW_CALLS}·k to {WINDOW_CALLS}·(k+1), k ≥ 1, of each replayed session, ending before its first loss. Intervals: 95% bootstrap over losses and over base windows"
    ),
    "re-fetch: a re-read of a file read before the loss and not edited since (re-reads of files edited since are counted in brackets, not as recovery), a command identical to one run before, a search at least half of whose output lines were shown before, a read of the transcript or archive the summary names; excess = after − base".to_string(),
    "references: the hidden-reference rule's distinctive strings of pre-loss content in the model's words and calls, at their first use after the loss: held by the summary (what the host put in its place), re-fetched, shown again by new work, no visible source; re-fetched share = re-fetched / (all but held); recover = that share less the share of references re-fetched in the base windows, where all was in view (the recovery probability the behaviour profile gives the sim and the replay)".to_string(),
    "recovery tokens: the requests whose calls were all re-fetches (their recorded size) and the re-fetched outputs summed over every later request that still held them; repeats: prompts restating an earlier one (8 words in a row, or a whole prompt of 4+ words)".to_string()];
    if unmeasured > 0 {
        out.push(format!(
            "{unmeasured} loss{} not measured: the session begins after it (continued from a previous conversation), so nothing lost is in the file",
            if unmeasured == 1 { " is" } else { "es are" }
        ));
    }
    out
}

impl Loss {
    /// How the transcript records it: `compact_boundary`, `compacted`, …
    pub(crate) fn event_name(&self) -> &'static str {
        match self.event {
            harness_import::EventKind::CompactBoundary => "compact_boundary",
            harness_import::EventKind::CompactSummary => "summary record",
            harness_import::EventKind::Compacted => "compacted",
            harness_import::EventKind::Continued => "continued session",
            harness_import::EventKind::Condensation => "condensation",
            harness_import::EventKind::Folded => "folded",
            harness_import::EventKind::Dropped => "dropped",
        }
    }
}
