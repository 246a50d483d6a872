//! The Markdown report of a run (`foldbench report -o report.md`, a CI job summary): a heading
//! with the cell counts, the verdict the caller gives (it opens the report, before any table),
//! the summary (or per-cell) table, and the cells that did not succeed with why. A pure function
//! of the records.

use harness_core::record::{CellRecord, Status};

use crate::render;

/// The Markdown report: a heading, the counts, `verdict` (Markdown, empty for none), the
/// per-arm (or per-cell) table and the cells that did not succeed.
pub fn report(records: &[CellRecord], title: &str, cells: bool, verdict: &str) -> String {
    let count = |s: Status| records.iter().filter(|r| r.status == s).count();
    let mut s = format!(
        "## foldbench: {title}\n\n{} cells: {} success, {} failure, {} error\n\n",
        records.len(),
        count(Status::Success),
        count(Status::Failure),
        count(Status::Error)
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
    s.push_str(&table.to_markdown());
    let bad: Vec<&CellRecord> = records
        .iter()
        .filter(|r| r.status != Status::Success)
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
    fn an_empty_run_has_its_counts_and_no_failure_list() {
        let md = report(&[], "run-1", false, "");
        assert!(md.starts_with("## foldbench: run-1\n\n0 cells"), "{md}");
        assert!(!md.contains("did not succeed"));
    }
}
