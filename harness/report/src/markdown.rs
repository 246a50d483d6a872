//! The Markdown report of a run (`foldbench report -o report.md`, a CI job summary): a heading
//! with the cell counts, the verdict the caller gives (it opens the report, before any table),
//! the summary (or per-cell) table, and the cells that did not succeed with why. A pure function
//! of the records.

use harness_core::{CellRecord, Status};

use crate::render;

/// The Markdown report: a heading, the counts, `verdict` (Markdown, empty for none), the
/// per-arm (or per-cell) table and the cells that did not succeed.
pub fn report(records: &[CellRecord], title: &str, cells: bool, verdict: &str) -> String {
    let count = |s: Status| records.iter().filter(|r| r.status == s).count();
    let mut s = format!(
        "## foldbench: {title}\n\n{} cells: {} success, {} failure, {} error{}\n\n",
        records.len(),
        count(Status::Success),
        count(Status::Failure),
        count(Status::Error),
        match count(Status::Unchecked) {
            0 => String::new(),
            n => format!(", {n} not checked"),
        }
    );
    if !verdict.is_empty() {
        s.push_str(verdict);
        s.push('\n');
    }
    let table = if cells {
        render::cells_table(records)
    } else {
        render::summary_table(records)
    };
    // The per-cell table holds raw numbers (for CSV): shown formatted, as on the pages.
    s.push_str(&crate::fmt::displayed(&table).to_markdown());
    let bad: Vec<&CellRecord> = records
        .iter()
        .filter(|r| !matches!(r.status, Status::Success | Status::Unchecked))
        .collect();
    if !bad.is_empty() {
        s.push_str("\n### Cells that did not succeed\n\n");
        for r in bad {
            let why = match &r.error {
                Some(e) => e.clone(),
                None => r
                    .checks
                    .iter()
                    .filter(|c| !c.passed)
                    .map(|c| c.label.clone())
                    .collect::<Vec<_>>()
                    .join("; "),
            };
            let lost = match r.metrics.lost_facts {
                0 => String::new(),
                n => format!(" ({n} lost facts)"),
            };
            s.push_str(&format!(
                "- `{}` {}{lost}: {}\n",
                r.id,
                r.status.as_str(),
                why.replace('\n', " ")
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_per_cell_table_shows_its_numbers_formatted_not_raw() {
        let cell = |arm: &str, median: f64, cost: f64| {
            let mut m = harness_core::metrics::CellMetrics::default();
            m.request_tokens.median = median;
            m.request_tokens.total = 12_345;
            m.cost = cost;
            crate::testing::record("t", arm, 1, m)
        };
        // trim's median over none's: 1000 / 1147 = 0.87183958...
        let records = [
            cell("none", 1147.0, 0.0101442),
            cell("trim", 1000.0, 0.0088),
        ];
        let md = report(&records, "run-1", true, "");
        let row = md
            .lines()
            .find(|l| l.starts_with("| t/trim/sim/1 |"))
            .unwrap_or_else(|| panic!("{md}"));
        assert!(row.contains("| 0.87× |"), "{row}");
        assert!(
            row.contains("| 12,345 |") && row.contains("| $0.0088 |"),
            "{row}"
        );
        assert!(!md.contains("0.8718"), "a raw ratio: {md}");
        assert!(!md.contains("0.0101442"), "a raw cost: {md}");
        // The CSV keeps the raw numbers.
        let csv = render::cells_table(&records).to_csv();
        assert!(csv.contains("0.8718395815170009"), "{csv}");
    }

    #[test]
    fn an_empty_run_has_its_counts_and_no_failure_list() {
        let md = report(&[], "run-1", false, "");
        assert!(md.starts_with("## foldbench: run-1\n\n0 cells"), "{md}");
        assert!(!md.contains("did not succeed"));
    }
}
