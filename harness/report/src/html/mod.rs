//! One self-contained HTML page from records: no IO, no network, no clock. The page carries its
//! own `<style>` and `<script>` (plain JavaScript), opens from `file://`, and is the same bytes for
//! the same input, so a test can compare it.
//!
//! A [`Page`] is a list of [`Block`]s: headings, text, verdict lines, [`Table`]s (every table gets
//! a filter box and sortable headers), preformatted text, and [`Group`]s — one per session or
//! cell, each with a request-size [`Chart`] (one line per policy, fold and compaction points
//! marked) and a drill-down (`<details class="drill">`) holding more blocks. The runner builds
//! the page from what it read (`harness_runner::html`); this module only renders it.

mod assets;
mod chart;
#[cfg(test)]
mod tests;

pub use chart::chart_svg;

use crate::fmt::{display_cell, Kind};
use crate::render::Table;

/// A whole page.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Page {
    /// The `<title>` and the top heading.
    pub title: String,
    /// Lines under the heading (what was read, with which settings).
    pub subtitle: Vec<String>,
    /// The content, in order.
    pub blocks: Vec<Block>,
}

/// A piece of a page.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A section heading.
    Heading(String),
    /// A paragraph.
    Text(String),
    /// A list of short lines (the verdict lines).
    Lines(Vec<String>),
    /// A table with a caption; sortable by its headers, filtered by a text box.
    Table {
        /// The caption.
        title: String,
        /// The table.
        table: Table,
    },
    /// Preformatted text (a fold's result message, a compaction's summary), folded under its
    /// title until clicked.
    Pre {
        /// What it is.
        title: String,
        /// The text, shown as is (escaped).
        text: String,
    },
    /// The cost–loss frontier as a chart (`crate::frontier::svg`): one point per arm, a
    /// sweep's points joined, the frontier line.
    Frontier {
        /// The arms, frontier marked.
        points: Vec<crate::frontier::Point>,
        /// What the axes measure.
        axes: crate::frontier::Axes,
    },
    /// Sessions or cells, each with its chart and drill-down; a text box filters them by title.
    Groups {
        /// The section's caption.
        title: String,
        /// The groups.
        groups: Vec<Group>,
    },
}

/// One session (replay) or one task, model and seed (run) with all its arms.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Group {
    /// The heading (`task · model · seed 1`, a session's short id and project).
    pub title: String,
    /// One-line facts under the heading.
    pub facts: Vec<String>,
    /// The request-size chart, when there are requests to draw.
    pub chart: Option<Chart>,
    /// What the drill-down opens to: turns, folds, result messages.
    pub drill: Vec<Block>,
    /// The drill-down's label (empty: "Turns, folds and results").
    pub drill_label: String,
}

/// A request-size chart: every request of a session under each policy, on one set of axes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Chart {
    /// What the horizontal axis counts.
    pub x_label: String,
    /// What the vertical axis measures.
    pub y_label: String,
    /// One per policy, in the order given (the colours follow it).
    pub series: Vec<Series>,
    /// Stretches of requests to shade behind the lines, each with a mark where it starts (a
    /// subagent's run on its parent's chart).
    pub spans: Vec<Span>,
}

/// A stretch of a chart's requests: a band from one request to another and a mark at its start.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Span {
    /// 0-based index of the request where it starts (the mark).
    pub from: usize,
    /// 0-based index of the request where it ends (at or after `from`).
    pub to: usize,
    /// The tooltip.
    pub note: String,
}

/// One policy's requests.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// The policy (arm) label.
    pub label: String,
    /// Request sizes in tokens, in order (request 1 first).
    pub sizes: Vec<u64>,
    /// Points where the policy edited the context.
    pub marks: Vec<Mark>,
}

/// A point where a policy edited the context, drawn on its line.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// 0-based index into [`Series::sizes`] of the first request that saw the edit.
    pub at: usize,
    /// Fold or compaction.
    pub kind: MarkKind,
    /// The tooltip (`fold of turns 1–3: 4,200 → 180 tokens`).
    pub note: String,
}

/// What a [`Mark`] marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkKind {
    /// A fold (`fold_unit`): counted in a cell's `folds`.
    Fold,
    /// A strategy's exit, which splices its report like a fold but is not one: counted in a
    /// cell's strategies, not its folds.
    Strategy,
    /// A compaction (a fold policy's emergency one too).
    Compaction,
}

impl MarkKind {
    /// The CSS class and legend word.
    pub(crate) fn name(self) -> &'static str {
        match self {
            MarkKind::Fold => "fold",
            MarkKind::Strategy => "strategy exit",
            MarkKind::Compaction => "compaction",
        }
    }

    /// The legend's symbol, the same shape as on the chart.
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            MarkKind::Fold => "▼",
            MarkKind::Strategy => "◆",
            MarkKind::Compaction => "■",
        }
    }
}

/// The weight that orders a page's groups: the largest series' total tokens, so the first chart
/// is the largest session or cell, not the first by name.
pub(crate) fn group_weight(g: &Group) -> u64 {
    g.chart.as_ref().map_or(0, |c| {
        c.series
            .iter()
            .map(|s| s.sizes.iter().sum::<u64>())
            .max()
            .unwrap_or(0)
    })
}

/// The table with its columns in reading order: the label column first (with what it counts:
/// success, sessions, turns, requests), then what a policy
/// saves (request sizes, tokens, ratios, cost), then what it loses (lost facts, hidden
/// references, re-runs, archive reads, premature folds, regret, probes), then the rest; within
/// each part the columns keep their order.
pub fn savings_beside_loss(t: &Table) -> Table {
    let part = |i: usize, h: &str| -> u8 {
        let h = h.to_ascii_lowercase();
        let any = |ws: &[&str]| ws.iter().any(|w| h.contains(w));
        let context = [
            "success", "status", "sessions", "session", "project", "turns", "requests", "cells",
        ];
        if i == 0 || context.contains(&h.as_str()) {
            0
        } else if any(&[
            "lost",
            "hidden",
            "re-run",
            "rerun",
            "archive reads",
            "premature",
            "regret",
            "gone",
            "/100",
            "probe",
            "needed later",
            "decision",
            "recall",
        ]) {
            2
        } else if any(&[
            "req", "token", "×", "÷", "input", "cost", "$", "cache", "saved", "recovery",
        ]) {
            1
        } else {
            3
        }
    };
    let mut order: Vec<usize> = (0..t.headers.len()).collect();
    order.sort_by_key(|&i| part(i, &t.headers[i]));
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

/// Escapes text for HTML element content and attribute values: a session's text never becomes
/// markup.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters (terminal colours in tool output) are shown as their
            // pictures, never passed to the page.
            c if c.is_control() && c != '\n' && c != '\t' => out.push(
                char::from_u32(0x2400 + c as u32)
                    .filter(|_| (c as u32) < 0x20)
                    .unwrap_or('\u{fffd}'),
            ),
            c => out.push(c),
        }
    }
    out
}

/// Cuts text to at most `max` characters, saying so.
pub fn cut(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let head: String = s.chars().take(max).collect();
    format!("{head}… ({n} characters)")
}

/// Renders the page.
pub fn render(page: &Page) -> String {
    let mut r = Renderer::default();
    let mut s = String::with_capacity(64 * 1024);
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    s.push_str(&format!("<title>{}</title>\n", escape(&page.title)));
    s.push_str(&format!(
        "<style>\n{}</style>\n</head>\n<body>\n",
        assets::CSS
    ));
    s.push_str(&format!("<header>\n<h1>{}</h1>\n", escape(&page.title)));
    for line in &page.subtitle {
        s.push_str(&format!("<p class=\"sub\">{}</p>\n", escape(line)));
    }
    s.push_str("</header>\n<main>\n");
    for b in &page.blocks {
        r.block(&mut s, b);
    }
    s.push_str("</main>\n");
    s.push_str(&format!(
        "<script>\n{}</script>\n</body>\n</html>\n",
        assets::JS
    ));
    s
}

/// Numbers the page's elements in order, so ids are stable.
#[derive(Default)]
struct Renderer {
    tables: usize,
    groups: usize,
}

impl Renderer {
    fn block(&mut self, s: &mut String, b: &Block) {
        match b {
            Block::Heading(h) => s.push_str(&format!("<h2>{}</h2>\n", escape(h))),
            Block::Text(t) => s.push_str(&format!("<p>{}</p>\n", escape(t))),
            Block::Lines(lines) => {
                s.push_str("<ul class=\"lines\">\n");
                for l in lines {
                    s.push_str(&format!("<li>{}</li>\n", escape(l)));
                }
                s.push_str("</ul>\n");
            }
            Block::Table { title, table } => self.table(s, title, table),
            Block::Pre { title, text } => s.push_str(&format!(
                "<details class=\"pre\"><summary>{}</summary>\n<pre>{}</pre></details>\n",
                escape(title),
                escape(text)
            )),
            Block::Groups { title, groups } => self.groups(s, title, groups),
            Block::Frontier { points, axes } => s.push_str(&crate::frontier::svg(points, axes)),
        }
    }

    fn table(&mut self, s: &mut String, title: &str, t: &Table) {
        self.tables += 1;
        let id = format!("table-{}", self.tables);
        s.push_str(&format!(
            "<div class=\"table-block\" id=\"{id}\">\n<div class=\"table-head\"><h3>{}</h3><input class=\"filter\" type=\"search\" placeholder=\"filter rows\" aria-label=\"filter the rows of {}\"><span class=\"count\">{}</span></div>\n<div class=\"scroll\"><table class=\"sortable\">\n<thead><tr>",
            escape(title),
            escape(title),
            if t.rows.len() == 1 {
                "1 row".to_string()
            } else {
                format!("{} rows", t.rows.len())
            }
        ));
        for (i, h) in t.headers.iter().enumerate() {
            s.push_str(&format!(
                "<th data-col=\"{i}\" title=\"sort by {0}\">{0}</th>",
                escape(h)
            ));
        }
        s.push_str("</tr></thead>\n<tbody>\n");
        let kinds: Vec<Kind> = t.headers.iter().map(|h| Kind::of_header(h)).collect();
        for row in &t.rows {
            s.push_str("<tr>");
            for (i, c) in row.iter().enumerate() {
                let kind = kinds.get(i).copied().unwrap_or(Kind::Number);
                s.push_str(&format!("<td>{}</td>", escape(&display_cell(kind, c))));
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</tbody>\n</table></div>\n</div>\n");
    }

    fn groups(&mut self, s: &mut String, title: &str, groups: &[Group]) {
        s.push_str(&format!(
            "<section class=\"groups\">\n<div class=\"table-head\"><h2>{}</h2><input class=\"group-filter\" type=\"search\" placeholder=\"filter\" aria-label=\"filter {}\"><span class=\"count\">{} shown</span></div>\n<p class=\"sub\">Largest first (by the tokens of its largest line).</p>\n",
            escape(title),
            escape(title),
            groups.len()
        ));
        // The most telling chart first: the largest session or cell (stable for equal ones).
        let mut groups: Vec<&Group> = groups.iter().collect();
        groups.sort_by_key(|g| std::cmp::Reverse(group_weight(g)));
        for g in groups {
            self.groups += 1;
            let id = format!("group-{}", self.groups);
            s.push_str(&format!(
                "<article class=\"group\" id=\"{id}\" data-title=\"{}\">\n<h3>{}</h3>\n",
                escape(&g.title),
                escape(&g.title)
            ));
            for f in &g.facts {
                s.push_str(&format!("<p class=\"facts\">{}</p>\n", escape(f)));
            }
            if let Some(c) = &g.chart {
                s.push_str(&chart_svg(c));
            }
            if !g.drill.is_empty() {
                let label = if g.drill_label.is_empty() {
                    "Turns, folds and results"
                } else {
                    &g.drill_label
                };
                s.push_str(&format!(
                    "<details class=\"drill\">\n<summary>{}</summary>\n<div class=\"drill-body\">\n",
                    escape(label)
                ));
                for b in &g.drill {
                    self.block(s, b);
                }
                s.push_str("</div>\n</details>\n");
            }
            s.push_str("</article>\n");
        }
        s.push_str("</section>\n");
    }
}
