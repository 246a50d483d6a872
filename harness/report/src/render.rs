//! Reports rendered from cell records (never from memory): the per-arm summary, the A/B table,
//! and the plain [`Table`] with its terminal (tabled), Markdown and CSV renderings. Renderers are
//! pure: they return text; the runner decides where it goes.

use std::collections::BTreeMap;

use serde::Serialize;

use harness_core::metrics::{median_f64, CellMetrics};
use harness_core::{CellRecord, RecordMetric, Status};

/// A table of strings with headers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Table {
    /// Column headers.
    pub headers: Vec<String>,
    /// Rows, each as long as `headers`.
    pub rows: Vec<Vec<String>>,
}

/// A table cell as a terminal shows it: its lines kept, every other control character shown as
/// an escape (a cell may quote a server or a tool: a cell error), each line cut at 2,000
/// characters.
fn terminal_cell(cell: &str) -> String {
    if !cell.chars().any(|c| c.is_control() && c != '\n') && cell.len() <= 2_000 {
        return cell.to_string();
    }
    cell.split('\n')
        .map(|line| harness_core::printable(line, 2_000))
        .collect::<Vec<_>>()
        .join("\n")
}

impl Table {
    /// A table of these column names and rows.
    pub fn new(headers: &[&str], rows: Vec<Vec<String>>) -> Table {
        Table {
            headers: headers.iter().map(|s| s.to_string()).collect(),
            rows,
        }
    }

    /// For a terminal (tabled, rounded style).
    pub fn to_terminal(&self) -> String {
        let mut b = tabled::builder::Builder::default();
        b.push_record(self.headers.clone());
        for r in &self.rows {
            b.push_record(r.iter().map(|cell| terminal_cell(cell)));
        }
        let mut t = b.build();
        t.with(tabled::settings::Style::rounded());
        t.to_string()
    }

    /// GitHub-flavoured Markdown.
    pub fn to_markdown(&self) -> String {
        let esc = |s: &str| s.replace('|', "\\|");
        let mut s = format!(
            "| {} |\n",
            self.headers
                .iter()
                .map(|h| esc(h))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        s.push_str(&format!(
            "|{}\n",
            self.headers
                .iter()
                .enumerate()
                .map(|(i, _)| if i == 0 { "---|" } else { "---:|" })
                .collect::<String>()
        ));
        for r in &self.rows {
            s.push_str(&format!(
                "| {} |\n",
                r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
            ));
        }
        s
    }

    /// RFC 4180 CSV (the `csv` crate quotes and escapes). The cells go out as they are: give
    /// it a table of raw values ([`summary_csv`], [`cells_table`]), not a display table.
    pub fn to_csv(&self) -> String {
        write_csv(std::iter::once(&self.headers).chain(&self.rows))
    }
}

/// Writes rows of fields as RFC 4180 CSV.
fn write_csv<'a>(rows: impl Iterator<Item = &'a Vec<String>>) -> String {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    for r in rows {
        // Writing into a Vec cannot fail.
        let _ = w.write_record(r);
    }
    let bytes = w.into_inner().unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

/// A raw number for CSV: the shortest decimal that reads back as the same `f64`; empty when
/// there is none (no value, or not finite).
pub fn raw(x: Option<f64>) -> String {
    match x {
        Some(x) if x.is_finite() => format!("{}", x + 0.0),
        _ => String::new(),
    }
}

/// A number with at most one decimal, thousands grouped.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    if (x - x.round()).abs() < 1e-9 {
        let sign = if x.round() < 0.0 { "-" } else { "" };
        format!(
            "{sign}{}",
            harness_core::fold::group_thousands(x.round().abs() as u64)
        )
    } else {
        let tenths = (x * 10.0).round() as i64;
        let sign = if tenths < 0 { "-" } else { "" };
        let tenths = tenths.unsigned_abs();
        format!(
            "{sign}{}.{}",
            harness_core::fold::group_thousands(tenths / 10),
            tenths % 10
        )
    }
}

/// The key that pairs a cell with its `none` baseline.
fn pair_key(r: &CellRecord) -> (String, String, u64) {
    (r.task.clone(), r.model.clone(), r.seed)
}

/// Each cell's median request divided by that of the `none` cell on the same task, model and
/// seed (docs/design.md §9 `ratio_to_none`), keyed by cell id.
pub(crate) fn ratios_to_none(records: &[CellRecord]) -> BTreeMap<String, f64> {
    let base: BTreeMap<(String, String, u64), f64> = records
        .iter()
        .filter(|r| r.arm == "none" && r.status != Status::Error)
        .map(|r| (pair_key(r), r.metrics.request_tokens.median))
        .collect();
    records
        .iter()
        .filter_map(|r| {
            let b = base.get(&pair_key(r))?;
            (*b > 0.0 && r.status != Status::Error)
                .then(|| (r.id.clone(), r.metrics.request_tokens.median / b))
        })
        .collect()
}

/// One row of the per-arm summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArmSummary {
    /// Arm label.
    pub(crate) arm: String,
    /// Cells.
    pub(crate) cells: usize,
    /// Cells that succeeded.
    pub(crate) successes: usize,
    /// Cells that ended in error.
    pub(crate) errors: usize,
    /// Cells nothing was checked in (a conversation through `foldbench proxy`): neither
    /// successes nor failures.
    pub(crate) unchecked: usize,
    /// Requests the model never answered, over the arm's cells (a column of their own, out of
    /// the token and cache figures).
    pub(crate) failed_requests: usize,
    /// Lost facts over the arm's cells.
    pub(crate) lost_facts: usize,
    /// Median lost facts per cell.
    pub(crate) median_lost_facts: f64,
    /// Median over cells of the median request.
    pub(crate) median_request_tokens: f64,
    /// Median over cells of the input tokens of the whole cell (recovery requests and
    /// compaction calls included).
    pub(crate) median_tokens_per_task: f64,
    /// Median over cells of the last request.
    pub(crate) median_last_request_tokens: f64,
    /// Median over cells of `ratio_to_none` (the median request's; med×).
    pub(crate) median_ratio_to_none: Option<f64>,
    /// The arm's `tokens/task` summed over its cells paired with `none` (same task, model and
    /// seed) over `none`'s (Σ×: the verdict's tokens ratio).
    pub(crate) tokens_ratio_to_none: Option<f64>,
    /// Median re-runs per cell.
    pub(crate) median_reruns: f64,
    /// Median hidden re-runs per cell.
    pub(crate) median_reruns_hidden: f64,
    /// Total archive reads.
    pub(crate) archive_reads: usize,
    /// Total folds.
    pub(crate) folds: usize,
    /// Total premature folds.
    pub(crate) premature_folds: usize,
    /// Total fold regret.
    pub(crate) fold_regret: usize,
    /// Total compactions.
    pub(crate) compactions: usize,
    /// Total cost.
    pub(crate) cost: f64,
    /// Median provider-reported request size, when a real model reported one.
    pub(crate) median_provider_request_tokens: Option<f64>,
}

/// The Σ× of `cells` against their `none` cells: `tokens/task` summed over the cells that have a
/// `none` cell (neither ended in error) over the same sum of those `none` cells.
fn tokens_ratio(records: &[CellRecord], cells: &[&CellRecord]) -> Option<f64> {
    let base: BTreeMap<(String, String, u64), u64> = records
        .iter()
        .filter(|r| r.arm == "none" && r.status != Status::Error)
        .map(|r| (pair_key(r), r.metrics.tokens_per_task()))
        .collect();
    let (a, b) = cells
        .iter()
        .filter_map(|r| Some((r.metrics.tokens_per_task(), *base.get(&pair_key(r))?)))
        .fold((0u64, 0u64), |(a, b), (x, y)| {
            (a.saturating_add(x), b.saturating_add(y))
        });
    (b > 0).then(|| a as f64 / b as f64)
}

/// Groups records by arm (in first-seen order) and summarises each.
pub fn summarize(records: &[CellRecord]) -> Vec<ArmSummary> {
    let ratios = ratios_to_none(records);
    let mut arms: Vec<String> = Vec::new();
    for r in records {
        if !arms.contains(&r.arm) {
            arms.push(r.arm.clone());
        }
    }
    arms.into_iter()
        .map(|arm| {
            let cells: Vec<&CellRecord> = records.iter().filter(|r| r.arm == arm).collect();
            let ok: Vec<&CellRecord> = cells
                .iter()
                .copied()
                .filter(|r| r.status != Status::Error)
                .collect();
            let med = |f: &dyn Fn(&CellMetrics) -> f64| {
                median_f64(&ok.iter().map(|r| f(&r.metrics)).collect::<Vec<_>>())
            };
            let sum =
                |f: &dyn Fn(&CellMetrics) -> usize| ok.iter().map(|r| f(&r.metrics)).sum::<usize>();
            let rs: Vec<f64> = ok
                .iter()
                .filter_map(|r| ratios.get(&r.id).copied())
                .collect();
            let prov: Vec<f64> = ok
                .iter()
                .filter_map(|r| r.metrics.provider_request_tokens.map(|p| p.median))
                .collect();
            ArmSummary {
                arm,
                cells: cells.len(),
                successes: cells.iter().filter(|r| r.status == Status::Success).count(),
                errors: cells.len() - ok.len(),
                unchecked: cells
                    .iter()
                    .filter(|r| r.status == Status::Unchecked)
                    .count(),
                failed_requests: sum(&|m| m.failed_requests),
                lost_facts: sum(&|m| m.lost_facts),
                median_lost_facts: med(&|m| m.lost_facts as f64),
                median_request_tokens: med(&|m| m.request_tokens.median),
                median_tokens_per_task: med(&|m| m.tokens_per_task() as f64),
                median_last_request_tokens: med(&|m| m.request_tokens.last as f64),
                median_ratio_to_none: (!rs.is_empty()).then(|| median_f64(&rs)),
                tokens_ratio_to_none: tokens_ratio(records, &ok),
                median_reruns: med(&|m| m.reruns as f64),
                median_reruns_hidden: med(&|m| m.reruns_hidden as f64),
                archive_reads: sum(&|m| m.archive_reads),
                folds: sum(&|m| m.folds),
                premature_folds: sum(&|m| m.premature_folds),
                fold_regret: sum(&|m| m.fold_regret),
                compactions: sum(&|m| m.compactions),
                cost: ok.iter().map(|r| r.metrics.cost).sum::<f64>() + 0.0,
                median_provider_request_tokens: (!prov.is_empty()).then(|| median_f64(&prov)),
            }
        })
        .collect()
}

/// The per-arm summary as a display table (terminal and Markdown: `3/3`, `1,100`, ratios to two
/// decimals). CSV uses [`summary_csv`] instead.
pub fn summary_table(records: &[CellRecord]) -> Table {
    let rows = summarize(records);
    let provider = rows
        .iter()
        .any(|r| r.median_provider_request_tokens.is_some());
    let mut headers: Vec<String> = [
        "arm",
        "success",
        "lost",
        "median req",
        "tokens/task",
        "Σ× none",
        "last req",
        "re-runs",
        "hidden",
        "archive reads",
        "folds",
        "premature",
        "regret",
        "compactions",
        "cost $",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if provider {
        headers.push("provider req".into());
        headers.push("provider/o200k".into());
    }
    let failed = rows.iter().any(|r| r.failed_requests > 0);
    if failed {
        headers.push("failed req".into());
    }
    let rows = rows
        .iter()
        .map(|s| {
            let checked = s.cells - s.unchecked;
            let mut row = vec![
                s.arm.clone(),
                match (checked, s.unchecked, s.errors) {
                    (0, _, _) => "not checked".to_string(),
                    (_, 0, 0) => format!("{}/{}", s.successes, checked),
                    (_, 0, e) => format!("{}/{} ({e} err)", s.successes, checked),
                    (_, u, 0) => format!("{}/{} ({u} not checked)", s.successes, checked),
                    (_, u, e) => {
                        format!("{}/{} ({e} err, {u} not checked)", s.successes, checked)
                    }
                },
                s.lost_facts.to_string(),
                num(s.median_request_tokens),
                num(s.median_tokens_per_task),
                s.tokens_ratio_to_none
                    .map(|r| format!("{r:.2}"))
                    .unwrap_or_else(|| "–".into()),
                num(s.median_last_request_tokens),
                num(s.median_reruns),
                num(s.median_reruns_hidden),
                s.archive_reads.to_string(),
                s.folds.to_string(),
                s.premature_folds.to_string(),
                s.fold_regret.to_string(),
                s.compactions.to_string(),
                format!("{:.4}", s.cost),
            ];
            if provider {
                row.push(
                    s.median_provider_request_tokens
                        .map(num)
                        .unwrap_or_else(|| "–".into()),
                );
                row.push(match s.median_provider_request_tokens {
                    Some(p) if s.median_request_tokens > 0.0 => {
                        format!("{:.2}", p / s.median_request_tokens)
                    }
                    _ => "–".into(),
                });
            }
            if failed {
                row.push(s.failed_requests.to_string());
            }
            row
        })
        .collect();
    Table { headers, rows }
}

/// The per-arm summary as CSV with raw numbers: success as counts (`successes`, `failures`,
/// `errors`, `cells`) and as a fraction (`success_rate`), ratios as plain decimals, no thousands
/// separators, an empty field where there is no value. The columns are [`ArmSummary`]'s fields,
/// the same names the JSON output uses.
pub fn summary_csv(records: &[CellRecord]) -> String {
    let headers: Vec<String> = [
        "arm",
        "cells",
        "successes",
        "failures",
        "errors",
        "unchecked",
        "success_rate",
        "lost_facts",
        "median_lost_facts",
        "median_request_tokens",
        "median_tokens_per_task",
        "median_ratio_to_none",
        "tokens_ratio_to_none",
        "median_last_request_tokens",
        "median_reruns",
        "median_reruns_hidden",
        "archive_reads",
        "folds",
        "premature_folds",
        "fold_regret",
        "compactions",
        "cost",
        "median_provider_request_tokens",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rows: Vec<Vec<String>> = summarize(records)
        .iter()
        .map(|s| {
            let checked = s.cells - s.unchecked;
            let rate = (checked > 0).then(|| s.successes as f64 / checked as f64);
            let f = |x: f64| raw(Some(x));
            vec![
                s.arm.clone(),
                s.cells.to_string(),
                s.successes.to_string(),
                (checked - s.successes - s.errors).to_string(),
                s.errors.to_string(),
                s.unchecked.to_string(),
                raw(rate),
                s.lost_facts.to_string(),
                f(s.median_lost_facts),
                f(s.median_request_tokens),
                f(s.median_tokens_per_task),
                raw(s.median_ratio_to_none),
                raw(s.tokens_ratio_to_none),
                f(s.median_last_request_tokens),
                f(s.median_reruns),
                f(s.median_reruns_hidden),
                s.archive_reads.to_string(),
                s.folds.to_string(),
                s.premature_folds.to_string(),
                s.fold_regret.to_string(),
                s.compactions.to_string(),
                f(s.cost),
                raw(s.median_provider_request_tokens),
            ]
        })
        .collect();
    write_csv(std::iter::once(&headers).chain(&rows))
}

/// The metrics of the A/B table; `with_children` adds the delegated child sessions' figures
/// (when an arm delegated).
pub(crate) fn ab_metrics(with_folds: bool, with_children: bool) -> Vec<&'static RecordMetric> {
    let mut names = vec![
        "success",
        "lost_facts",
        "reruns",
        "reruns_hidden",
        "median_request_tokens",
        "tokens_per_task",
        "last_request_tokens",
        "total_request_tokens",
        "archive_reads",
        "compactions",
    ];
    if with_folds {
        names.extend([
            "folds",
            "premature_folds",
            "rewritten_tokens_median_per_fold",
            "rewritten_tokens_total",
        ]);
    }
    if with_children {
        names.extend(["child_requests", "child_input_tokens", "receipt_tokens"]);
    }
    harness_core::record_metrics(&names)
}

/// The A/B table: for each metric, each arm's runs side by side and the arm's median, like the
/// essay's "4, 4, 4 against 0, 1, 1". `arms` gives the column order.
pub fn ab_table(records: &[CellRecord], arms: &[String]) -> Table {
    let with_folds = records
        .iter()
        .any(|r| r.metrics.folds > 0 || r.arm.starts_with("fold"));
    let mut headers = vec!["metric".to_string()];
    for a in arms {
        headers.push(format!("{a}: runs"));
        headers.push(format!("{a}: median"));
    }
    let mut rows = Vec::new();
    let with_children = records.iter().any(|r| r.metrics.delegations > 0);
    for m in ab_metrics(with_folds, with_children) {
        let mut row = vec![m.label.to_string()];
        for a in arms {
            let mut cells: Vec<&CellRecord> = records.iter().filter(|r| &r.arm == a).collect();
            cells.sort_by_key(|r| r.seed);
            let values: Vec<f64> = cells
                .iter()
                .filter(|r| r.status != Status::Error)
                .map(|r| (m.value)(r))
                .collect();
            let runs: Vec<String> = cells
                .iter()
                .map(|r| {
                    if r.status == Status::Error {
                        "err".into()
                    } else {
                        num((m.value)(r))
                    }
                })
                .collect();
            row.push(runs.join(", "));
            row.push(num(median_f64(&values)));
        }
        rows.push(row);
    }
    Table { headers, rows }
}

/// Per-cell rows (for `report --cells`, in every format): raw numbers throughout (no thousands
/// separators, ratios and costs as plain decimals), so the CSV reads back as numbers.
pub fn cells_table(records: &[CellRecord]) -> Table {
    let ratios = ratios_to_none(records);
    let headers = [
        "id",
        "status",
        "requests",
        "failed",
        "median req",
        "p90 req",
        "max req",
        "last req",
        "total req",
        "tokens/task",
        "req ÷ none",
        "tool calls",
        "re-runs",
        "hidden",
        "visible",
        "archive reads",
        "lost facts",
        "recovered: re-run",
        "recovered: archive",
        "folds",
        "rejected",
        "cards",
        "ignored",
        "card tokens",
        "premature",
        "regret",
        "compactions",
        "cached",
        "written",
        "cost $",
        "wall ms",
        "error",
    ];
    let rows = records
        .iter()
        .map(|r| {
            let m = &r.metrics;
            vec![
                r.id.clone(),
                r.status.as_str().to_string(),
                m.requests.to_string(),
                m.failed_requests.to_string(),
                raw(Some(m.request_tokens.median)),
                m.request_tokens.p90.to_string(),
                m.request_tokens.max.to_string(),
                m.request_tokens.last.to_string(),
                m.request_tokens.total.to_string(),
                m.tokens_per_task().to_string(),
                raw(ratios.get(&r.id).copied()),
                m.tool_calls.to_string(),
                m.reruns.to_string(),
                m.reruns_hidden.to_string(),
                m.reruns_visible.to_string(),
                m.archive_reads.to_string(),
                m.lost_facts.to_string(),
                m.recovered_facts.rerun.to_string(),
                m.recovered_facts.archive.to_string(),
                m.folds.to_string(),
                m.fold_calls_rejected.to_string(),
                m.cards_shown.to_string(),
                m.cards_ignored.to_string(),
                m.card_tokens.to_string(),
                m.premature_folds.to_string(),
                m.fold_regret.to_string(),
                m.compactions.to_string(),
                m.cached_tokens.to_string(),
                m.written_tokens.to_string(),
                raw(Some(m.cost)),
                r.wall_ms.to_string(),
                r.error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    Table::new(&headers, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_table_shows_control_characters_escaped_and_keeps_lines() {
        let t = Table {
            headers: vec!["id".into(), "error".into()],
            rows: vec![vec![
                "t/none/sim/1".into(),
                "setup failed\n\x1b]0;owned\x07\x1b[2J[1/1] ok".into(),
            ]],
        };
        let text = t.to_terminal();
        assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
        assert!(
            text.contains("\\x1b]0;owned\\x07\\x1b[2J[1/1] ok"),
            "{text}"
        );
        assert!(text.lines().any(|l| l.contains("setup failed")));
    }

    fn record(arm: &str, seed: u64, lost: usize, total: u64, compaction: u64) -> CellRecord {
        let mut metrics = CellMetrics {
            lost_facts: lost,
            compaction_input_tokens: compaction,
            ..CellMetrics::default()
        };
        metrics.request_tokens.total = total;
        crate::testing::record("t", arm, seed, metrics)
    }

    #[test]
    fn cells_nothing_checked_are_not_counted_as_successes() {
        let mut proxy = record("proxy", 1, 0, 100, 0);
        proxy.status = Status::Unchecked;
        let t = summary_table(&[proxy.clone()]);
        assert_eq!(t.rows[0][1], "not checked", "{t:?}");
        let mut checked = record("proxy", 2, 0, 100, 0);
        checked.arm = "proxy".into();
        proxy.arm = "proxy".into();
        let t = summary_table(&[proxy.clone(), checked]);
        assert_eq!(t.rows[0][1], "1/1 (1 not checked)", "{t:?}");
        let cells = cells_table(&[proxy.clone()]);
        assert_eq!(cells.rows[0][1], "unchecked");
        let csv = summary_csv(&[proxy]);
        let rows: Vec<&str> = csv.lines().collect();
        assert!(rows[0].contains("unchecked"), "{csv}");
        assert!(
            rows[1].starts_with("proxy,1,0,0,0,1,,"),
            "no success, no failure, no rate: {csv}"
        );
    }

    #[test]
    fn failed_requests_have_a_column_of_their_own() {
        let mut m = CellMetrics {
            requests: 3,
            failed_requests: 2,
            ..CellMetrics::default()
        };
        m.request_tokens.total = 300;
        let r = crate::testing::record("proxy", "fold", 1, m);
        let t = summary_table(std::slice::from_ref(&r));
        let at = t
            .headers
            .iter()
            .position(|h| h == "failed req")
            .expect("the column");
        assert_eq!(t.rows[0][at], "2");
        let cells = cells_table(std::slice::from_ref(&r));
        let at = cells
            .headers
            .iter()
            .position(|h| h == "failed")
            .expect("the column");
        assert_eq!(cells.rows[0][at], "2");
        // Without failed requests, the summary has no such column.
        let plain = crate::testing::record("t", "none", 1, CellMetrics::default());
        assert!(!summary_table(&[plain])
            .headers
            .iter()
            .any(|h| h == "failed req"));
    }

    #[test]
    fn tables_show_lost_facts_and_tokens_per_task() {
        let rs = vec![
            record("trim", 1, 0, 100, 0),
            record("trim", 2, 2, 300, 0),
            record("trim", 3, 1, 500, 50),
        ];
        let t = summary_table(&rs);
        let col = |h: &str| t.headers.iter().position(|x| x == h).unwrap();
        assert_eq!(t.rows[0][col("lost")], "3", "total over cells");
        assert_eq!(
            t.rows[0][col("tokens/task")],
            "300",
            "median of 100, 300, 550"
        );
        let ab = ab_table(&rs, &["trim".to_string()]);
        let lost = ab.rows.iter().find(|r| r[0] == "lost facts").unwrap();
        assert_eq!((lost[1].as_str(), lost[2].as_str()), ("0, 2, 1", "1"));
        let tokens = ab.rows.iter().find(|r| r[0] == "tokens per task").unwrap();
        assert_eq!(tokens[1], "100, 300, 550");
    }

    #[test]
    fn the_table_and_the_verdict_give_one_ratio_of_sums_and_the_median_beside_it() {
        // A small task that trim leaves alone (100 → 100) and a large one it halves (10,000 →
        // 5,000; 4,500 of requests and 500 of compaction calls): the ratio of summed totals is
        // 5,100 / 10,100 = 0.505, the median of the per-task ratios (1.0, 0.5) 0.75.
        let mut rs = vec![
            record("none", 1, 0, 100, 0),
            record("none", 2, 0, 10_000, 0),
            record("trim", 1, 0, 100, 0),
            record("trim", 2, 0, 4_500, 500),
        ];
        for r in &mut rs {
            r.task = format!("t{}", r.seed);
            r.id = format!("t{}/{}/sim/1", r.seed, r.arm);
            r.seed = 1;
        }
        let t = summary_table(&rs);
        let col = |h: &str| t.headers.iter().position(|x| x == h).unwrap();
        assert_eq!(t.rows[1][0], "trim");
        assert_eq!(t.rows[1][col("Σ× none")], "0.50");
        assert_eq!(t.rows[0][col("Σ× none")], "1.00");
        let s = summarize(&rs);
        assert!((s[1].tokens_ratio_to_none.unwrap() - 5_100.0 / 10_100.0).abs() < 1e-12);
        let (_, answers) = crate::headline::run_answers(&rs, None);
        let lines = crate::headline::lines(&answers);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[1].starts_with("trim: saves 50% [") && lines[1].contains(", med× 0.75;"),
            "{}",
            lines[1]
        );
        let v = &crate::verdict::run_verdicts(&rs, "none")[0];
        assert_eq!(
            v.tokens.point,
            s[1].tokens_ratio_to_none.unwrap(),
            "one definition"
        );
        assert!((v.tokens_median - 0.75).abs() < 1e-12);
    }

    #[test]
    fn csv_carries_raw_numbers_not_display_strings() {
        let mut rs = vec![
            record("none", 1, 0, 2200, 0),
            record("none", 2, 0, 2200, 0),
            record("trim", 1, 0, 1100, 0),
            record("trim", 2, 1, 1100, 0),
        ];
        for r in &mut rs {
            r.metrics.request_tokens.median = r.metrics.request_tokens.total as f64 / 2.0;
            r.metrics.cost = 0.1 + 0.2;
        }
        let display = summary_table(&rs);
        assert!(
            display.rows[1].iter().any(|c| c == "1/2"),
            "display keeps 1/2"
        );
        let csv = summary_csv(&rs);
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let headers = reader.headers().unwrap().clone();
        let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
        let get = |row: usize, h: &str| {
            let i = headers.iter().position(|x| x == h).unwrap();
            rows[row][i].to_string()
        };
        assert_eq!(get(1, "arm"), "trim");
        assert_eq!(
            (get(1, "successes"), get(1, "failures"), get(1, "cells")),
            ("1".into(), "1".into(), "2".into())
        );
        assert_eq!(get(1, "success_rate"), "0.5");
        assert_eq!(
            get(0, "median_request_tokens"),
            "1100",
            "no thousands separator"
        );
        assert_eq!(
            get(1, "median_ratio_to_none"),
            "0.5",
            "a plain decimal, no ×"
        );
        assert_eq!(get(1, "cost").parse::<f64>().unwrap(), 2.0 * (0.1 + 0.2));
        for row in &rows {
            for field in row {
                assert!(
                    field.is_empty()
                        || field.parse::<f64>().is_ok()
                        || field == "none"
                        || field == "trim",
                    "not a raw number: {field:?}"
                );
            }
        }
        let cells = cells_table(&rs).to_csv();
        assert!(
            cells.contains(",0.5,"),
            "the cell's ratio unrounded: {cells}"
        );
        assert!(!cells.contains("1,100"));
    }

    #[test]
    fn csv_and_markdown_escape() {
        let t = Table {
            headers: vec!["a".into(), "b".into()],
            rows: vec![vec!["x,y".into(), "p|q".into()]],
        };
        assert_eq!(t.to_csv(), "a,b\n\"x,y\",p|q\n");
        let q = Table {
            headers: vec!["a".into()],
            rows: vec![vec!["say \"hi\"\r".into()], vec![" lead".into()]],
        };
        assert_eq!(q.to_csv(), "a\n\"say \"\"hi\"\"\r\"\n lead\n");
        assert!(t.to_markdown().contains("p\\|q"));
        assert!(t.to_terminal().contains("x,y"));
        assert_eq!(num(1234.0), "1,234");
        assert_eq!(num(2.5), "2.5");
        assert_eq!(num(114293.5), "114,293.5");
        assert_eq!(num(-4.0), "-4");
        assert_eq!(num(-1234.25), "-1,234.3");
    }
}
