//! The cost–loss frontier: each arm as a point (cost: its tokens Σ× the baseline's; loss: lost
//! facts per cell in runs), and the arms no other arm beats on both — as cheap or cheaper and
//! losing as little or less, better on at least one — marked as the frontier.

use harness_core::record::{CellRecord, Status};

use crate::render::{summarize, Table};

/// One arm on the two axes.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The arm.
    pub arm: String,
    /// Cost: tokens/task summed over the arm's cells paired with `none` over `none`'s (Σ×).
    pub cost: f64,
    /// Loss: lost facts per cell (cells that ended in error left out).
    pub loss: f64,
    /// Whether no other arm beats it on both axes.
    pub frontier: bool,
}

/// Marks the points no other point dominates (`cost` and `loss` both no larger, one smaller).
pub fn mark(points: &mut [Point]) {
    let snapshot: Vec<(f64, f64)> = points.iter().map(|p| (p.cost, p.loss)).collect();
    for (i, p) in points.iter_mut().enumerate() {
        p.frontier = !snapshot
            .iter()
            .enumerate()
            .any(|(j, &(c, l))| j != i && c <= p.cost && l <= p.loss && (c < p.cost || l < p.loss));
    }
}

/// The arms of a run as points, frontier marked; arms without a `none` cell to pair with are
/// left out (no cost to place them at).
pub fn run_points(records: &[CellRecord]) -> Vec<Point> {
    let mut points: Vec<Point> = summarize(records)
        .into_iter()
        .filter_map(|s| {
            let ok = records
                .iter()
                .filter(|r| r.arm == s.arm && r.status != Status::Error)
                .count();
            Some(Point {
                cost: s.tokens_ratio_to_none?,
                loss: s.lost_facts as f64 / ok.max(1) as f64,
                arm: s.arm,
                frontier: false,
            })
        })
        .collect();
    mark(&mut points);
    points
}

/// The frontier table of a run: one row per arm, cheapest first, `◆` on the frontier.
pub fn run_table(records: &[CellRecord]) -> Option<Table> {
    let mut points = run_points(records);
    if points.len() < 2 {
        return None;
    }
    points.sort_by(|a, b| a.cost.total_cmp(&b.cost).then(a.loss.total_cmp(&b.loss)));
    Some(Table {
        headers: [
            "arm",
            "cost: tokens Σ× none",
            "loss: lost facts/cell",
            "frontier",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: points
            .iter()
            .map(|p| {
                vec![
                    p.arm.clone(),
                    format!("{:.2}", p.cost),
                    format!("{:.2}", p.loss),
                    if p.frontier { "◆" } else { "" }.to_string(),
                ]
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_core::metrics::CellMetrics;

    fn cell(task: &str, arm: &str, tokens: u64, lost: usize) -> CellRecord {
        let mut metrics = CellMetrics {
            lost_facts: lost,
            ..CellMetrics::default()
        };
        metrics.request_tokens.total = tokens;
        CellRecord {
            version: harness_core::record::RECORD_VERSION,
            id: format!("{task}/{arm}/sim/1"),
            task: task.into(),
            arm: arm.into(),
            policy: arm.into(),
            model: "sim".into(),
            seed: 1,
            status: if lost > 0 {
                Status::Failure
            } else {
                Status::Success
            },
            error: None,
            checks: Vec::new(),
            turns: 1,
            metrics,
            wall_ms: 0,
            model_ms: 0,
            agent: None,
        }
    }

    #[test]
    fn the_frontier_is_the_arms_no_other_beats_on_both() {
        // Two tasks of 1,000 tokens under none. cheap: 0.2×, 1 fact lost per cell; mid: 0.5×,
        // 0.5 per cell; bad: 0.6× and 1 per cell (mid beats it on both); none: 1.0×, nothing
        // lost; tie: as cheap as mid and losing as much (neither beats the other).
        let mut rs = Vec::new();
        for t in ["a", "b"] {
            rs.push(cell(t, "none", 1000, 0));
            rs.push(cell(t, "cheap", 200, 1));
            rs.push(cell(t, "bad", 600, 1));
            rs.push(cell(t, "tie", 500, usize::from(t == "b")));
        }
        rs.push(cell("a", "mid", 500, 1));
        rs.push(cell("b", "mid", 500, 0));
        let pts = run_points(&rs);
        let on: Vec<&str> = pts
            .iter()
            .filter(|p| p.frontier)
            .map(|p| p.arm.as_str())
            .collect();
        assert_eq!(on, ["none", "cheap", "tie", "mid"]);
        let bad = pts.iter().find(|p| p.arm == "bad").unwrap();
        assert_eq!((bad.cost, bad.loss, bad.frontier), (0.6, 1.0, false));
        let t = run_table(&rs).unwrap();
        assert_eq!(
            t.rows.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(),
            ["cheap", "tie", "mid", "bad", "none"]
        );
        assert_eq!(t.rows[3], ["bad", "0.60", "1.00", ""]);
        assert_eq!(t.rows[0], ["cheap", "0.20", "1.00", "◆"]);
    }
}
