//! The cost–loss frontier: each arm as a point — cost: its tokens after recovery as a ratio of
//! summed totals to the baseline's (Σ×); loss: lost facts per cell in runs, hidden references
//! gone (not fetched back) per 100 responses in replay — and the arms no other arm
//! beats on both marked as the frontier.
//!
//! An arm is beaten (dominated) by another that is as cheap or cheaper *and* loses as little or
//! less, better on at least one. Ties: two arms at the same point do not beat each other, so both
//! are on the frontier when nothing else beats them; an arm as cheap as another but losing more
//! is off it. Arms of one policy with different parameters (a sweep: `trim:keep=1`,
//! `trim:keep=2`, … — the name before `:` is the same) form a `sweeps` group, joined by a line
//! in the chart (`svg`).

use harness_core::{CellRecord, Status};

use crate::html::escape;
use crate::render::Table;
use crate::svg::{colour, polyline_points, ticks, Frame};

/// One arm on the two axes.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The arm.
    pub arm: String,
    /// Cost: the arm's tokens after recovery over the baseline's, summed over the pairs (Σ×).
    pub cost: f64,
    /// Loss: lost facts per cell (runs) or references gone per 100 responses (replay).
    pub loss: f64,
    /// Whether no other arm beats it on both axes.
    pub frontier: bool,
}

/// What the axes measure, as a table's headers and a chart's labels say it.
#[derive(Debug, Clone, PartialEq)]
pub struct Axes {
    /// The cost axis (`cost: tokens incl. recovery Σ× none`).
    pub(crate) cost: String,
    /// The loss axis (`loss: lost facts/cell`).
    pub(crate) loss: String,
}

impl Axes {
    /// The axes of a run: tokens incl. recovery (every input token a cell sent, its recovery
    /// requests among them) Σ× the baseline, lost facts per cell.
    pub fn run(baseline: &str) -> Axes {
        Axes {
            cost: format!("cost: {} Σ× {baseline}", crate::headline::COST_WORDS),
            loss: "loss: lost facts/cell".into(),
        }
    }

    /// The axes of a replay: tokens incl. recovery Σ× none, references gone per 100 responses.
    pub fn replay() -> Axes {
        Axes {
            cost: format!("cost: {} Σ× none", crate::headline::COST_WORDS),
            loss: "loss: refs gone/100 resp".into(),
        }
    }
}

/// The line under a frontier table, saying what `◆` means and how ties count.
pub const LEGEND: &str = "◆ on the frontier: no other arm is as cheap and loses as little \
(better on one, no worse on the other); arms at the same point do not beat each other";

/// Whether `a` (cost, loss) beats `b`: no worse on both, better on one.
pub(crate) fn beats(a: (f64, f64), b: (f64, f64)) -> bool {
    a.0 <= b.0 && a.1 <= b.1 && (a.0 < b.0 || a.1 < b.1)
}

/// Marks the points no other point beats (`beats`).
pub fn mark(points: &mut [Point]) {
    let snapshot: Vec<(f64, f64)> = points.iter().map(|p| (p.cost, p.loss)).collect();
    for (i, p) in points.iter_mut().enumerate() {
        p.frontier = !snapshot
            .iter()
            .enumerate()
            .any(|(j, &q)| j != i && beats(q, (p.cost, p.loss)));
    }
}

/// The policy an arm's label names: the text before its first `:` (`trim:keep=2` → `trim`).
pub(crate) fn family(arm: &str) -> &str {
    arm.split(':').next().unwrap_or(arm)
}

/// The sweeps among `points`: for each policy with two or more arms (see [`family`]), the
/// indexes of its points in the order given. Policies with one arm are left out.
pub(crate) fn sweeps(points: &[Point]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, p) in points.iter().enumerate() {
        let f = family(&p.arm);
        match groups.iter_mut().find(|(g, _)| *g == f) {
            Some((_, v)) => v.push(i),
            None => groups.push((f, vec![i])),
        }
    }
    groups
        .into_iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(_, v)| v)
        .collect()
}

/// The arms of a run as points against `baseline`, frontier marked: cost is the verdict's
/// tokens Σ× (`crate::verdict::run_verdicts`: `tokens/task`, recovery requests and compaction
/// calls included, summed over cells paired by task, model and seed), the baseline at 1; loss the
/// lost facts per cell (cells that ended in error left out). Arms with no cell paired with the
/// baseline are left out (no cost to place them at).
pub fn run_points(records: &[CellRecord], baseline: &str) -> Vec<Point> {
    let verdicts = crate::verdict::run_verdicts(records, baseline);
    let mut arms: Vec<&str> = Vec::new();
    for r in records {
        if !arms.contains(&r.arm.as_str()) {
            arms.push(&r.arm);
        }
    }
    let mut points: Vec<Point> = arms
        .into_iter()
        .filter_map(|arm| {
            let cost = if arm == baseline {
                records
                    .iter()
                    .any(|r| r.arm == arm && r.status != Status::Error)
                    .then_some(1.0)?
            } else {
                verdicts.iter().find(|v| v.arm == arm)?.tokens.point
            };
            Some(Point {
                arm: arm.to_string(),
                cost,
                loss: lost_per_cell(records, arm),
                frontier: false,
            })
        })
        .collect();
    mark(&mut points);
    points
}

/// Lost facts per cell of `arm` (cells that ended in error left out; 0 with none).
pub(crate) fn lost_per_cell(records: &[CellRecord], arm: &str) -> f64 {
    let ok: Vec<&CellRecord> = records
        .iter()
        .filter(|r| r.arm == arm && r.status != Status::Error)
        .collect();
    let lost: usize = ok.iter().map(|r| r.metrics.lost_facts).sum();
    lost as f64 / ok.len().max(1) as f64
}

/// The frontier table: one row per arm, cheapest first (then least loss), `◆` on the frontier;
/// `None` with fewer than two arms.
pub fn table(points: &[Point], axes: &Axes) -> Option<Table> {
    if points.len() < 2 {
        return None;
    }
    let mut points = points.to_vec();
    points.sort_by(|a, b| a.cost.total_cmp(&b.cost).then(a.loss.total_cmp(&b.loss)));
    Some(Table {
        headers: vec![
            "arm".into(),
            axes.cost.clone(),
            axes.loss.clone(),
            "frontier".into(),
        ],
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

/// The frontier chart's frame (the arms' labels may use the right margin).
const FRAME: Frame = Frame::new(640.0, 320.0, [60.0, 150.0, 14.0, 44.0]);

/// The frontier as an inline SVG chart in a `<figure class="frontier">`: cost across, loss up,
/// one `circle.arm` per point (`data-arm`, filled on the frontier, hollow off it, in the arm's
/// colour of the request charts, with its label and a tooltip), a `polyline.sweep` joining each
/// sweep's points in order, and a `polyline.frontier-line` through the frontier, cheapest first.
/// The same points give the same bytes.
pub(crate) fn svg(points: &[Point], axes: &Axes) -> String {
    let xmax_data = points.iter().map(|p| p.cost).fold(1.0f64, f64::max);
    let ymax_data = points.iter().map(|p| p.loss).fold(0.0f64, f64::max);
    let xt = ticks(0.0, xmax_data, 5);
    let xmax = xt.last().copied().unwrap_or(xmax_data).max(xmax_data);
    let yt = ticks(0.0, if ymax_data > 0.0 { ymax_data } else { 1.0 }, 4);
    let ymax = yt.last().copied().unwrap_or(1.0).max(ymax_data).max(1e-9);
    let Frame {
        width,
        height,
        left,
        top,
        ..
    } = FRAME;
    let (pw, ph) = (FRAME.plot_width(), FRAME.plot_height());
    let x = |v: f64| FRAME.x(v, xmax);
    let y = |v: f64| FRAME.y(v, ymax);
    let on = points.iter().filter(|p| p.frontier).count();
    let mut s = format!(
        "<figure class=\"frontier\" data-points=\"{}\" data-frontier=\"{on}\">\n<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"the cost–loss frontier\" style=\"width:100%;max-width:{width}px;height:auto;display:block\" font-family=\"sans-serif\" font-size=\"11\">\n",
        points.len()
    );
    for t in &yt {
        s.push_str(&format!(
            "<line x1=\"{left}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\" stroke=\"#e3e3e3\"/><text x=\"{2:.1}\" y=\"{3:.1}\" text-anchor=\"end\" fill=\"#555\">{4}</text>\n",
            y(*t),
            left + pw,
            left - 6.0,
            y(*t) + 4.0,
            tick(*t)
        ));
    }
    for t in &xt {
        s.push_str(&format!(
            "<line x1=\"{0:.1}\" y1=\"{top}\" x2=\"{0:.1}\" y2=\"{1:.1}\" stroke=\"#e3e3e3\"/><text x=\"{0:.1}\" y=\"{2:.1}\" text-anchor=\"middle\" fill=\"#555\">{3}×</text>\n",
            x(*t),
            top + ph,
            top + ph + 16.0,
            tick(*t)
        ));
    }
    s.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#333\">{}</text>\n<text x=\"12\" y=\"{:.1}\" transform=\"rotate(-90 12 {:.1})\" text-anchor=\"middle\" fill=\"#333\">{}</text>\n",
        left + pw / 2.0,
        height - 8.0,
        escape(&axes.cost),
        top + ph / 2.0,
        top + ph / 2.0,
        escape(&axes.loss)
    ));
    let at: Vec<(f64, f64)> = points.iter().map(|p| (x(p.cost), y(p.loss))).collect();
    for sweep in sweeps(points) {
        s.push_str(&format!(
            "<polyline class=\"sweep\" data-sweep=\"{}\" points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/>\n",
            escape(family(&points[sweep[0]].arm)),
            polyline_points(sweep.iter().map(|&i| at[i])),
            colour(sweep[0])
        ));
    }
    let mut front: Vec<&Point> = points.iter().filter(|p| p.frontier).collect();
    front.sort_by(|a, b| a.cost.total_cmp(&b.cost).then(b.loss.total_cmp(&a.loss)));
    s.push_str(&format!(
        "<polyline class=\"frontier-line\" points=\"{}\" fill=\"none\" stroke=\"#222\" stroke-width=\"2\"/>\n",
        polyline_points(front.iter().map(|p| (x(p.cost), y(p.loss))))
    ));
    for (i, p) in points.iter().enumerate() {
        let c = colour(i);
        s.push_str(&format!(
            "<circle class=\"arm\" data-arm=\"{0}\" data-frontier=\"{1}\" cx=\"{2:.1}\" cy=\"{3:.1}\" r=\"5\" fill=\"{4}\" stroke=\"{5}\" stroke-width=\"2\"><title>{0}: cost {6:.2}× · loss {7:.2}{8}</title></circle>\n",
            escape(&p.arm),
            p.frontier,
            at[i].0,
            at[i].1,
            if p.frontier { c } else { "#fff" },
            c,
            p.cost,
            p.loss,
            if p.frontier { " · on the frontier" } else { "" },
        ));
    }
    // The cost axis's numbers under the plot: no label over them.
    let ticks_row = (
        left - 20.0,
        top + ph + 4.0,
        left + pw + 20.0,
        top + ph + 20.0,
    );
    for l in place_labels(points, &at, &[ticks_row]) {
        let spans: Vec<String> = l
            .arms
            .iter()
            .map(|&i| {
                let p = &points[i];
                format!(
                    "<tspan data-arm=\"{0}\">{1}{0}</tspan>",
                    escape(&p.arm),
                    if p.frontier { "◆ " } else { "" }
                )
            })
            .collect();
        s.push_str(&format!(
            "<text class=\"arm-label\" x=\"{:.1}\" y=\"{:.1}\" fill=\"#222\">{}</text>\n",
            l.x,
            l.y,
            spans.join(", ")
        ));
    }
    s.push_str(&format!(
        "</svg>\n<figcaption>Each arm's cost ({}) and loss ({}); filled and ◆: on the frontier, the black line through them, cheapest first; dashed: one policy's sweep, in its order.</figcaption>\n</figure>\n",
        escape(&axes.cost),
        escape(&axes.loss)
    ));
    s
}

/// The label of one or more arms at (nearly) one place on the chart.
#[derive(Debug, Clone, PartialEq)]
struct Label {
    /// The arms it names (indexes into the points), in their order.
    arms: Vec<usize>,
    /// Its estimated width in pixels.
    w: f64,
    /// Where its baseline starts.
    x: f64,
    y: f64,
}

/// A text's width per character and its line height at the chart's 11-pixel font (an
/// estimate on the wide side).
const CHAR_W: f64 = 6.5;
const LINE_H: f64 = 12.0;

/// A box: left, top, right, bottom.
type Rect = (f64, f64, f64, f64);

fn overlap(a: Rect, b: Rect) -> bool {
    a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
}

/// The labels of the points drawn at `at`: arms within 4 pixels of each other share one label
/// (so coinciding points do not print their names over each other), and each label goes at the
/// first of a few places beside its point (right and above, right and below, left, then
/// further up or down) that stays inside the chart and covers no point, no label placed before
/// it and nothing of `avoid`; where none does, at the first.
fn place_labels(points: &[Point], at: &[(f64, f64)], avoid: &[Rect]) -> Vec<Label> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, &(px, py)) in at.iter().enumerate() {
        let near = |g: &&mut Vec<usize>| {
            let (gx, gy) = at[g[0]];
            (px - gx).abs() < 4.0 && (py - gy).abs() < 4.0
        };
        match groups.iter_mut().find(near) {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    let dots: Vec<Rect> = at
        .iter()
        .map(|&(cx, cy)| (cx - 6.0, cy - 6.0, cx + 6.0, cy + 6.0))
        .chain(avoid.iter().copied())
        .collect();
    let mut placed: Vec<Rect> = Vec::new();
    let mut out = Vec::new();
    for arms in groups {
        let text = arms
            .iter()
            .map(|&i| {
                let p = &points[i];
                format!("{}{}", if p.frontier { "◆ " } else { "" }, p.arm)
            })
            .collect::<Vec<_>>()
            .join(", ");
        let w = text.chars().count() as f64 * CHAR_W;
        let (cx, cy) = at[arms[0]];
        let mut places = vec![
            (cx + 8.0, cy - 6.0),
            (cx + 8.0, cy + 16.0),
            (cx - 8.0 - w, cy - 6.0),
            (cx - 8.0 - w, cy + 16.0),
        ];
        for k in 1..=8 {
            let d = LINE_H * f64::from(k);
            places.extend([(cx + 8.0, cy - 6.0 - d), (cx + 8.0, cy + 16.0 + d)]);
        }
        let rect = |(lx, ly): (f64, f64)| (lx, ly - LINE_H + 2.0, lx + w, ly + 3.0);
        let fits = |r: Rect| {
            r.0 >= 0.0
                && r.1 >= 0.0
                && r.2 <= FRAME.width
                && r.3 <= FRAME.height
                && !placed.iter().chain(&dots).any(|&o| overlap(r, o))
        };
        let (lx, ly) = places
            .iter()
            .copied()
            .find(|&p| fits(rect(p)))
            .unwrap_or(places[0]);
        placed.push(rect((lx, ly)));
        out.push(Label {
            arms,
            w,
            x: lx,
            y: ly,
        });
    }
    out
}

fn tick(t: f64) -> String {
    if (t - t.round()).abs() < 1e-9 {
        format!("{t:.0}")
    } else if (t * 10.0 - (t * 10.0).round()).abs() < 1e-9 {
        format!("{t:.1}")
    } else {
        format!("{t:.2}")
    }
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
        crate::testing::record(task, arm, 1, metrics)
    }

    fn pt(arm: &str, cost: f64, loss: f64) -> Point {
        Point {
            arm: arm.into(),
            cost,
            loss,
            frontier: false,
        }
    }

    fn on(points: &[Point]) -> Vec<&str> {
        points
            .iter()
            .filter(|p| p.frontier)
            .map(|p| p.arm.as_str())
            .collect()
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
        let pts = run_points(&rs, "none");
        assert_eq!(on(&pts), ["none", "cheap", "tie", "mid"]);
        let bad = pts.iter().find(|p| p.arm == "bad").unwrap();
        assert_eq!((bad.cost, bad.loss, bad.frontier), (0.6, 1.0, false));
        let t = table(&pts, &Axes::run("none")).unwrap();
        assert_eq!(
            t.rows.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(),
            ["cheap", "tie", "mid", "bad", "none"]
        );
        assert_eq!(t.rows[3], ["bad", "0.60", "1.00", ""]);
        assert_eq!(t.rows[0], ["cheap", "0.20", "1.00", "◆"]);
        assert_eq!(t.headers[1], "cost: tokens incl. recovery Σ× none");
    }

    #[test]
    fn ties_and_equal_costs_on_constructed_points() {
        // a and b at the same point: neither beats the other, both on it. c as cheap as a but
        // losing more: off. d loses as little as a but costs more: off. e cheaper than all and
        // losing most: on. f beats nothing and nothing beats it only if alone — here a beats it.
        let mut pts = vec![
            pt("a", 0.5, 1.0),
            pt("b", 0.5, 1.0),
            pt("c", 0.5, 2.0),
            pt("d", 0.7, 1.0),
            pt("e", 0.2, 5.0),
            pt("f", 0.9, 1.5),
        ];
        mark(&mut pts);
        assert_eq!(on(&pts), ["a", "b", "e"]);
        // One point alone is on it; an empty set has none.
        let mut one = vec![pt("x", 3.0, 9.0)];
        mark(&mut one);
        assert!(one[0].frontier);
        mark(&mut []);
        assert!(beats((0.5, 1.0), (0.5, 2.0)));
        assert!(!beats((0.5, 1.0), (0.5, 1.0)));
        assert!(!beats((0.4, 2.0), (0.5, 1.0)));
    }

    #[test]
    fn sweeps_group_a_policys_arms_in_order() {
        let pts = vec![
            pt("none", 1.0, 0.0),
            pt("trim:keep=1", 0.4, 3.0),
            pt("fold", 0.6, 1.0),
            pt("trim:keep=2", 0.5, 2.0),
            pt("trim:keep=3", 0.6, 1.5),
        ];
        assert_eq!(sweeps(&pts), vec![vec![1, 3, 4]]);
        assert_eq!(family("compact:window=6000"), "compact");
        assert_eq!(family("none"), "none");
    }

    #[test]
    fn the_chart_has_a_point_per_arm_the_sweeps_and_the_frontier_line() {
        let mut pts = vec![
            pt("none", 1.0, 0.0),
            pt("trim:keep=1", 0.4, 3.0),
            pt("trim:keep=2", 0.5, 2.0),
            pt("bad", 0.8, 2.5),
        ];
        mark(&mut pts);
        let s = svg(&pts, &Axes::run("none"));
        assert!(s.starts_with("<figure class=\"frontier\" data-points=\"4\" data-frontier=\"3\">"));
        assert_eq!(s.matches("<circle class=\"arm\"").count(), 4);
        assert!(s.contains("data-arm=\"bad\" data-frontier=\"false\""));
        assert_eq!(
            s.matches("<polyline class=\"sweep\" data-sweep=\"trim\"")
                .count(),
            1
        );
        // The frontier line: keep=1 (0.4, 3), keep=2 (0.5, 2), none (1, 0), in that order.
        // x = 60 + 430 × cost / 1; y = 14 + 262 − 262 × loss / 3.
        assert!(
            s.contains("class=\"frontier-line\" points=\"232.0,14.0 275.0,101.3 490.0,276.0\""),
            "{s}"
        );
        assert_eq!(s, svg(&pts, &Axes::run("none")));
    }

    #[test]
    fn arms_at_one_point_share_a_label_and_no_two_labels_overlap() {
        // Replay's usual picture: none, compact and fold at (1.00, 0), trim apart.
        let mut pts = vec![
            pt("none", 1.0, 0.0),
            pt("trim", 0.74, 26.5),
            pt("compact", 1.0, 0.0),
            pt("fold", 1.002, 0.0),
            pt("trim:keep=2", 0.76, 25.0),
        ];
        mark(&mut pts);
        let at: Vec<(f64, f64)> = pts
            .iter()
            .map(|p| (60.0 + 430.0 * p.cost / 1.2, 276.0 - 262.0 * p.loss / 30.0))
            .collect();
        let labels = place_labels(&pts, &at, &[]);
        let arms: Vec<&[usize]> = labels.iter().map(|l| l.arms.as_slice()).collect();
        assert_eq!(arms, [&[0, 2, 3][..], &[1], &[4]], "{labels:?}");
        // "◆ none, ◆ compact, fold": 23 characters.
        assert_eq!(labels[0].w, 23.0 * CHAR_W);
        let rect = |l: &Label| (l.x, l.y - LINE_H + 2.0, l.x + l.w, l.y + 3.0);
        for (i, a) in labels.iter().enumerate() {
            let r = rect(a);
            assert!(
                r.0 >= 0.0 && r.2 <= FRAME.width && r.1 >= 0.0 && r.3 <= FRAME.height,
                "{a:?}"
            );
            for b in &labels[i + 1..] {
                assert!(!overlap(r, rect(b)), "{a:?} and {b:?}");
            }
        }
        // The page's SVG names every arm once, in the labels' spans.
        let s = svg(&pts, &Axes::replay());
        for p in &pts {
            let span = format!("<tspan data-arm=\"{}\">", p.arm);
            assert_eq!(s.matches(&span).count(), 1, "{}", p.arm);
        }
        assert_eq!(s.matches("<text class=\"arm-label\"").count(), 3);
    }
}
