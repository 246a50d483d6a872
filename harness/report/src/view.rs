//! Named views of the terminal tables and their fit to a width.
//!
//! A terminal table shows the columns of its [`View`] (`default`: the columns that decide; `loss`,
//! `cache`, `essay`; `all`: every column) and is fitted to a width: headers are wrapped at their
//! spaces first, then trailing optional columns are left out, and a line under the table names
//! them and the view that shows them. `all` is never cut. Markdown, CSV, JSON and HTML take the
//! full tables, not these.

use crate::render::Table;

/// The widest a terminal table is by default.
pub const MAX_WIDTH: usize = 120;

/// A named set of columns of a terminal table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum View {
    /// The columns that decide.
    #[default]
    Default,
    /// What a policy loses: lost facts, re-runs, hidden references, premature folds, probes.
    Loss,
    /// Request sizes, cache and cost.
    Cache,
    /// The essay's figures: median and last request, re-runs, lost facts.
    Essay,
    /// Every column (never cut to a width).
    All,
}

/// Which table a view selects from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The per-arm summary of `run` and `report` ([`crate::render::summary_table`]).
    Summary,
    /// The per-cell table of `report --cells`.
    Cells,
    /// The A/B table of `ab` (a view selects its rows, the metrics).
    Ab,
    /// Replay's per-policy table.
    ReplayPolicies,
    /// Replay's per-session table (the essay's figures).
    ReplaySessions,
    /// Replay's ground truth.
    ReplayTruth,
    /// Any other table: every column, fitted.
    Plain,
}

/// The columns (rows for [`Kind::Ab`]) of `view` in `kind`, in the order shown: header names;
/// `*SUFFIX` stands for every header ending in SUFFIX; a header listed twice takes its second
/// occurrence too. `None`: every column.
pub(crate) fn spec(kind: Kind, view: View) -> Option<&'static [&'static str]> {
    if view == View::All {
        return None;
    }
    match kind {
        Kind::Summary => summary_spec(view),
        Kind::Cells => cells_spec(view),
        Kind::Ab => ab_spec(view),
        Kind::ReplayPolicies => replay_policies_spec(view),
        Kind::ReplaySessions => replay_sessions_spec(view),
        Kind::ReplayTruth => replay_truth_spec(view),
        Kind::Plain => None,
    }
}

/// [`spec`] of [`Kind::Summary`].
fn summary_spec(view: View) -> Option<&'static [&'static str]> {
    Some(match view {
        View::Default => &[
            "arm",
            "success",
            "lost",
            "tokens/task",
            "Σ× none",
            "re-runs",
            "archive reads",
            "folds",
            "compactions",
            "cost $",
        ],
        View::Loss => &[
            "arm",
            "success",
            "lost",
            "re-runs",
            "hidden",
            "archive reads",
            "folds",
            "premature",
            "regret",
            "compactions",
        ],
        View::Cache => &[
            "arm",
            "median req",
            "tokens/task",
            "Σ× none",
            "last req",
            "cost $",
            "provider req",
            "provider/o200k",
        ],
        View::Essay => &[
            "arm",
            "success",
            "lost",
            "median req",
            "last req",
            "re-runs",
            "hidden",
        ],
        View::All => return None,
    })
}

/// [`spec`] of [`Kind::Cells`].
fn cells_spec(view: View) -> Option<&'static [&'static str]> {
    Some(match view {
        View::Default => &[
            "id",
            "status",
            "tokens/task",
            "req ÷ none",
            "lost facts",
            "re-runs",
            "archive reads",
            "folds",
            "compactions",
            "cost $",
            "error",
        ],
        View::Loss => &[
            "id",
            "status",
            "lost facts",
            "recovered: re-run",
            "recovered: archive",
            "re-runs",
            "hidden",
            "archive reads",
            "premature",
            "regret",
            "error",
        ],
        View::Cache => &[
            "id",
            "requests",
            "median req",
            "last req",
            "tokens/task",
            "cached",
            "written",
            "cost $",
        ],
        View::Essay => &[
            "id",
            "status",
            "median req",
            "last req",
            "re-runs",
            "hidden",
            "lost facts",
        ],
        View::All => return None,
    })
}

/// [`spec`] of [`Kind::Ab`].
fn ab_spec(view: View) -> Option<&'static [&'static str]> {
    Some(match view {
        View::Default => &[
            "success",
            "lost facts",
            "re-runs",
            "re-runs hidden",
            "tokens per task",
            "archive reads",
            "folds",
            "compactions",
        ],
        View::Loss => &[
            "success",
            "lost facts",
            "re-runs",
            "re-runs hidden",
            "archive reads",
            "premature folds",
        ],
        View::Cache => &[
            "median request tokens",
            "tokens per task",
            "last request tokens",
            "total request tokens",
            "child input tokens (delegated)",
            "rewritten tokens, median per fold",
            "rewritten tokens, total",
        ],
        View::Essay => &["re-runs", "re-runs hidden", "lost facts", "success"],
        View::All => return None,
    })
}

/// [`spec`] of [`Kind::ReplayPolicies`].
fn replay_policies_spec(view: View) -> Option<&'static [&'static str]> {
    Some(match view {
        // What it costs after recovery and what it loses first: a narrow terminal leaves out
        // trailing columns, and a saving is never shown without its loss.
        View::Default => &[
            "policy",
            "tokens incl. recovery",
            "incl. recovery Σ× none",
            "gone/100",
            "hidden refs",
            "/100 resp",
            "median req",
            "req med× none",
            "total input",
            "input Σ× none",
            "cost $",
            "folds",
            "compactions",
        ],
        View::Loss => &[
            "policy",
            "hidden refs",
            "/100 resp",
            "gone/100",
            "premature",
            "folds needed later",
            "compactions needed later",
            "decision",
            "artifact",
            "recall",
            "continuation",
        ],
        View::Cache => &[
            "policy",
            "requests",
            "median req",
            "req med× none",
            "last req",
            "last med× none",
            "total input",
            "input Σ× none",
            "cache written",
            "cost $",
        ],
        View::Essay => &[
            "policy",
            "median req",
            "req med× none",
            "last req",
            "last med× none",
            "cards",
            "folds",
            "rewritten/fold",
            "compactions",
        ],
        View::All => return None,
    })
}

/// [`spec`] of [`Kind::ReplaySessions`].
fn replay_sessions_spec(view: View) -> Option<&'static [&'static str]> {
    Some(match view {
        View::Default | View::Essay => &[
            "project",
            "session",
            "turns",
            "none median",
            "none last",
            "* med×/last×",
        ],
        View::Loss => &["project", "session", "turns", "* hidden"],
        View::Cache => &[
            "project",
            "session",
            "requests",
            "none median",
            "none last",
            "* med×/last×",
        ],
        View::All => return None,
    })
}

/// [`spec`] of [`Kind::ReplayTruth`].
fn replay_truth_spec(view: View) -> Option<&'static [&'static str]> {
    Some(match view {
        View::Default => &[
            "format",
            "sessions",
            "requests",
            "median |err|",
            "p90 |err|",
            "median err",
            "scale",
            "median |err| scaled",
        ],
        _ => return None,
    })
}

/// The columns of `t` that `spec` names, in `spec`'s order (see [`spec`]).
pub(crate) fn select_columns(t: &Table, spec: &[&str]) -> Table {
    let mut taken = vec![false; t.headers.len()];
    let mut order = Vec::new();
    for s in spec {
        let matches = |h: &str| match s.strip_prefix('*') {
            Some(suffix) => h.ends_with(suffix),
            None => h == *s,
        };
        let all = s.starts_with('*');
        for (i, h) in t.headers.iter().enumerate() {
            if !taken[i] && matches(h) {
                taken[i] = true;
                order.push(i);
                if !all {
                    break;
                }
            }
        }
    }
    Table {
        headers: order.iter().map(|&i| t.headers[i].clone()).collect(),
        rows: t
            .rows
            .iter()
            .map(|r| {
                order
                    .iter()
                    .map(|&i| r.get(i).cloned().unwrap_or_default())
                    .collect()
            })
            .collect(),
    }
}

/// The rows of `t` whose first cell `spec` names, in `spec`'s order.
pub(crate) fn select_rows(t: &Table, spec: &[&str]) -> Table {
    Table {
        headers: t.headers.clone(),
        rows: spec
            .iter()
            .filter_map(|s| t.rows.iter().find(|r| r.first().is_some_and(|c| c == s)))
            .cloned()
            .collect(),
    }
}

/// The widest line of `text`, in characters.
pub(crate) fn text_width(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// `header` wrapped at its spaces to at most `width` characters a line (a word longer stays
/// whole).
fn wrap_header(header: &str, width: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    for word in header.split(' ') {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= width => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines.join("\n")
}

/// Each header of `t` wrapped to the width of its column's widest cell (or its longest word),
/// with the characters that saves, most first (headers that save nothing left out).
fn header_wraps(t: &Table) -> Vec<(usize, String)> {
    let mut wraps: Vec<(usize, usize, String)> = t
        .headers
        .iter()
        .enumerate()
        .filter_map(|(j, h)| {
            let body = t
                .rows
                .iter()
                .filter_map(|r| r.get(j))
                .map(|c| text_width(c))
                .max()
                .unwrap_or(0);
            let word = h.split(' ').map(|w| w.chars().count()).max().unwrap_or(0);
            let wrapped = wrap_header(h, body.max(word));
            let saves = text_width(h).saturating_sub(text_width(&wrapped).max(body));
            (saves > 0).then_some((saves, j, wrapped))
        })
        .collect();
    wraps.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    wraps.into_iter().map(|(_, j, w)| (j, w)).collect()
}

/// The order in which `kind`'s columns are left out to fit: the trailing ones first; in the A/B
/// table each arm's runs (the last arm's first), then the last arms. The first column stays.
fn drop_order(t: &Table, kind: Kind) -> Vec<usize> {
    let n = t.headers.len();
    if kind != Kind::Ab {
        return (1..n).rev().collect();
    }
    let runs = (1..n).rev().filter(|&i| t.headers[i].ends_with(": runs"));
    let rest = (1..n).rev().filter(|&i| !t.headers[i].ends_with(": runs"));
    runs.chain(rest).collect()
}

/// `t` rendered for a terminal at most `width` characters wide where it can be: headers wrapped
/// first (those that save the most first, until it fits), then columns left out in `drop_order` (the first column and one more always stay).
/// Returns the text and the headers left out.
pub(crate) fn fit(t: &Table, kind: Kind, width: usize) -> (String, Vec<String>) {
    let text = t.to_terminal();
    if text_width(&text) <= width {
        return (text, Vec::new());
    }
    let mut t = t.clone();
    let mut text = text;
    for (j, wrapped) in header_wraps(&t) {
        if text_width(&text) <= width {
            break;
        }
        t.headers[j] = wrapped;
        text = t.to_terminal();
    }
    let mut dropped = Vec::new();
    let mut order = drop_order(&t, kind).into_iter();
    let mut columns: Vec<usize> = (0..t.headers.len()).collect();
    while text_width(&text) > width && t.headers.len() > 2 {
        let Some(original) = order.next() else { break };
        let Some(i) = columns.iter().position(|&c| c == original) else {
            continue;
        };
        columns.remove(i);
        dropped.push(t.headers.remove(i).replace('\n', " "));
        for r in &mut t.rows {
            if i < r.len() {
                r.remove(i);
            }
        }
        text = t.to_terminal();
    }
    (text, dropped)
}

/// The terminal form of `t` (a table of `kind`) in `view` at most `width` wide: the view's
/// columns, fitted, and a line naming the columns left out and the view that shows them.
/// [`View::All`] gives every column, never cut.
pub fn terminal(t: &Table, kind: Kind, view: View, width: usize) -> String {
    if view == View::All {
        return t.to_terminal();
    }
    let selected = match (spec(kind, view), kind) {
        (None, _) => t.clone(),
        (Some(s), Kind::Ab) => select_rows(t, s),
        (Some(s), _) => select_columns(t, s),
    };
    let (text, mut dropped) = fit(&selected, kind, width);
    dropped.sort_by_key(|h| selected.headers.iter().position(|x| x == h));
    if dropped.is_empty() {
        return text;
    }
    let note = format!(
        "more columns ({}; left out to fit {width} columns): --view all",
        dropped.join(", ")
    );
    // Broken to the width like the other notes, its later lines indented.
    format!(
        "{text}\n{}",
        crate::headline::wrap(&note, width, 2).join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(headers: &[&str], row: &[&str]) -> Table {
        Table::new(headers, vec![row.iter().map(|s| s.to_string()).collect()])
    }

    #[test]
    fn a_view_takes_its_columns_in_its_order_and_a_repeated_header_twice() {
        let t = table(
            &[
                "p",
                "median req",
                "med× none",
                "last req",
                "med× none",
                "x hidden",
            ],
            &["a", "1", "0.5", "2", "0.6", "3"],
        );
        let s = select_columns(&t, &["p", "last req", "med× none", "med× none", "* hidden"]);
        assert_eq!(
            s.headers,
            ["p", "last req", "med× none", "med× none", "x hidden"]
        );
        assert_eq!(s.rows[0], ["a", "2", "0.5", "0.6", "3"]);
    }

    #[test]
    fn a_table_too_wide_is_wrapped_then_cut_from_the_end_and_all_never() {
        let headers: Vec<String> = (0..20).map(|i| format!("column number {i}")).collect();
        let h: Vec<&str> = headers.iter().map(|s| s.as_str()).collect();
        let t = table(&h, &["1"; 20]);
        let full = t.to_terminal();
        assert!(text_width(&full) > 120);
        let text = terminal(&t, Kind::Plain, View::Default, 80);
        let (table, note) = text.split_at(text.find("\nmore columns (").unwrap());
        assert!(text_width(table) <= 80, "{text}");
        assert!(table.contains("│ number │"), "headers wrapped: {table}");
        // The note of what was left out is broken to the width too, and reads as one line.
        assert!(note.lines().count() > 2, "{note}");
        assert!(note.lines().all(|l| l.chars().count() <= 80), "{note}");
        let note = note.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            note.starts_with("more columns (column number ")
                && note.contains("column number 18, column number 19; left out to fit 80"),
            "{note}"
        );
        assert!(note.ends_with("--view all"), "{note}");
        assert_eq!(terminal(&t, Kind::Plain, View::All, 80), full);
        let narrow = table_of_two();
        assert_eq!(
            terminal(&narrow, Kind::Plain, View::Default, 10),
            narrow.to_terminal()
        );
    }

    fn table_of_two() -> Table {
        table(&["arm", "success"], &["none", "1/1"])
    }

    #[test]
    fn the_ab_table_loses_runs_before_arms() {
        let t = table(
            &[
                "metric",
                "none: runs",
                "none: median",
                "trim: runs",
                "trim: median",
            ],
            &["success", "1, 1, 1, 1, 1, 1", "1", "0, 0, 0, 0, 0, 0", "0"],
        );
        let (text, dropped) = fit(&t, Kind::Ab, 40);
        assert!(text_width(&text) <= 40, "{text}");
        assert_eq!(dropped, ["trim: runs", "none: runs"]);
    }

    #[test]
    fn every_column_a_run_view_names_is_in_its_table() {
        let summary = crate::render::summary_table(&[]).headers;
        let cells = crate::render::cells_table(&[]).headers;
        let metrics: Vec<String> = crate::render::ab_metrics(true, true)
            .iter()
            .map(|m| m.label.to_string())
            .collect();
        for view in [View::Default, View::Loss, View::Cache, View::Essay] {
            for (kind, names) in [
                (Kind::Summary, &summary),
                (Kind::Cells, &cells),
                (Kind::Ab, &metrics),
            ] {
                for name in spec(kind, view).unwrap() {
                    assert!(
                        names.iter().any(|h| h == name) || name.starts_with("provider"),
                        "{view:?} of {kind:?} names {name}, not in {names:?}"
                    );
                }
            }
        }
    }
}
