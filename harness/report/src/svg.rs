//! SVG charts drawn by hand from records: the request size over the requests of a session, one
//! line per policy (the essay's side-by-side picture), and a bar chart of re-runs per arm.
//!
//! The output needs no fonts or files: text is plain `<text>` in the generic `sans-serif`
//! family, so any browser or SVG viewer renders it. Renderers are pure and return the document.

use serde::Deserialize;

use crate::junit::escape;
use crate::render::num;
use harness_core::CellRecord;
use harness_core::Purpose;

/// Colours of the series (Tableau 10), chosen to stay apart for common colour blindness.
const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// The colour of the `i`-th series (or segment) of every chart, this module's and the HTML
/// page's, so an arm keeps its colour from chart to chart.
pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// A chart's size and the margins around its plot area, in pixels: what every chart (this
/// module's, the HTML page's request charts, the frontier) places its marks by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Frame {
    pub(crate) width: f64,
    pub(crate) height: f64,
    pub(crate) left: f64,
    pub(crate) right: f64,
    pub(crate) top: f64,
    pub(crate) bottom: f64,
}

impl Frame {
    /// A frame `width` × `height` with the margins left, right, top and bottom.
    pub(crate) const fn new(width: f64, height: f64, margins: [f64; 4]) -> Frame {
        let [left, right, top, bottom] = margins;
        Frame {
            width,
            height,
            left,
            right,
            top,
            bottom,
        }
    }

    /// The plot area's width.
    pub(crate) fn plot_width(&self) -> f64 {
        self.width - self.left - self.right
    }

    /// The plot area's height.
    pub(crate) fn plot_height(&self) -> f64 {
        self.height - self.top - self.bottom
    }

    /// Where `v` stands across, on an axis from 0 at the plot's left edge to `max` at its right.
    pub(crate) fn x(&self, v: f64, max: f64) -> f64 {
        self.left + self.plot_width() * v / max
    }

    /// Where `v` stands up, on an axis from 0 at the plot's bottom edge to `max` at its top.
    pub(crate) fn y(&self, v: f64, max: f64) -> f64 {
        let ph = self.plot_height();
        self.top + ph - ph * v / max
    }
}

/// The points of a `<polyline>`: `x,y` with one decimal each, separated by spaces (so the same
/// chart is the same bytes).
pub(crate) fn polyline_points(at: impl IntoIterator<Item = (f64, f64)>) -> String {
    let pts: Vec<String> = at
        .into_iter()
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect();
    pts.join(" ")
}

/// Dash patterns, so lines that coincide stay visible as two.
const DASHES: [&str; 5] = ["", "8 4", "3 3", "12 4 3 4", "1 5"];

/// The frame of this module's charts (the legend in the right margin).
const FRAME: Frame = Frame::new(960.0, 500.0, [80.0, 250.0, 50.0, 60.0]);

/// One line of a [`LineChart`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Series {
    /// Legend label.
    pub label: String,
    /// (x, y) points in x order.
    pub(crate) points: Vec<(f64, f64)>,
}

/// A line chart.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    /// Title.
    pub(crate) title: String,
    /// Label of the x axis.
    pub(crate) x_label: String,
    /// Label of the y axis.
    pub(crate) y_label: String,
    /// The lines.
    pub(crate) series: Vec<Series>,
}

/// One bar of a [`BarChart`]: stacked segments.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bar {
    /// Label under the bar.
    pub(crate) label: String,
    /// Segment values, bottom first, in the order of [`BarChart::segments`].
    pub(crate) values: Vec<f64>,
}

/// A stacked bar chart.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    /// Title.
    pub(crate) title: String,
    /// Label of the y axis.
    pub(crate) y_label: String,
    /// Names of the stacked segments.
    pub(crate) segments: Vec<String>,
    /// The bars.
    pub(crate) bars: Vec<Bar>,
}

/// "Nice" ticks from 0 (or `lo`) to at least `hi`: steps of 1, 2 or 5 × 10^k.
pub(crate) fn ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    let span = (hi - lo).max(1e-9);
    let raw = span / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= target as f64 + 0.5)
        .unwrap_or(10.0 * mag);
    let start = (lo / step).floor() * step;
    let mut out = Vec::new();
    let mut t = start;
    while t < hi + step * 0.999 && out.len() < 100 {
        out.push(t);
        if t >= hi {
            break;
        }
        t += step;
    }
    out
}

fn fmt_tick(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        num(x)
    } else {
        format!("{x:.1}")
    }
}

fn header(title: &str) -> String {
    let Frame { width, height, .. } = FRAME;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <title>{t}</title>\n\
         <rect x=\"0\" y=\"0\" width=\"{width}\" height=\"{height}\" fill=\"#ffffff\"/>\n\
         <text x=\"{x}\" y=\"28\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\" fill=\"#222222\">{t}</text>\n",
        t = escape(title),
        x = FRAME.left + FRAME.plot_width() / 2.0,
    )
}

/// The plot area's edges: left, right, bottom (the x axis) and top.
fn edges() -> (f64, f64, f64, f64) {
    let f = FRAME;
    (f.left, f.width - f.right, f.height - f.bottom, f.top)
}

/// Axes, grid and tick labels for a y range, and the axis titles. Returns the y mapping's top.
fn axes(s: &mut String, y_ticks: &[f64], x_label: &str, y_label: &str) {
    let (x0, x1, y0, y1) = edges();
    let ymax = y_ticks.last().copied().unwrap_or(1.0).max(1e-9);
    let ymin = y_ticks.first().copied().unwrap_or(0.0);
    for t in y_ticks {
        let y = y0 - (t - ymin) / (ymax - ymin).max(1e-9) * (y0 - y1);
        s.push_str(&format!(
            "<line x1=\"{x0}\" y1=\"{y:.1}\" x2=\"{x1}\" y2=\"{y:.1}\" stroke=\"#e5e5e5\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#444444\">{}</text>\n",
            x0 - 6.0,
            y + 4.0,
            fmt_tick(*t)
        ));
    }
    s.push_str(&format!(
        "<line x1=\"{x0}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y0}\" stroke=\"#333333\"/>\n<line x1=\"{x0}\" y1=\"{y0}\" x2=\"{x0}\" y2=\"{y1}\" stroke=\"#333333\"/>\n"
    ));
    s.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#222222\">{}</text>\n",
        (x0 + x1) / 2.0,
        FRAME.height - 14.0,
        escape(x_label)
    ));
    s.push_str(&format!(
        "<text x=\"18\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#222222\" transform=\"rotate(-90 18 {:.1})\">{}</text>\n",
        (y0 + y1) / 2.0,
        (y0 + y1) / 2.0,
        escape(y_label)
    ));
}

/// Draws a line chart.
pub fn line_chart(c: &LineChart) -> String {
    let mut s = header(&c.title);
    let (x0, x1, y0, y1) = edges();
    let points = c.series.iter().flat_map(|l| l.points.iter());
    let (mut xmin, mut xmax, mut ymax) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    for (x, y) in points {
        xmin = xmin.min(*x);
        xmax = xmax.max(*x);
        ymax = ymax.max(*y);
    }
    if !xmin.is_finite() {
        (xmin, xmax) = (0.0, 1.0);
    }
    if xmax - xmin < 1.0 {
        xmax = xmin + 1.0;
    }
    let yt = ticks(0.0, ymax.max(1.0), 6);
    let ytop = yt.last().copied().unwrap_or(1.0);
    axes(&mut s, &yt, &c.x_label, &c.y_label);
    let px = |x: f64| x0 + (x - xmin) / (xmax - xmin) * (x1 - x0);
    let py = |y: f64| y0 - y / ytop * (y0 - y1);
    for t in ticks(xmin, xmax, 10) {
        if t < xmin - 1e-9 || t > xmax + 1e-9 {
            continue;
        }
        let x = px(t);
        s.push_str(&format!(
            "<line x1=\"{x:.1}\" y1=\"{y0}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#333333\"/>\n<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#444444\">{}</text>\n",
            y0 + 5.0,
            y0 + 19.0,
            fmt_tick(t)
        ));
    }
    for (i, l) in c.series.iter().enumerate() {
        let colour = colour(i);
        let dash = DASHES[i % DASHES.len()];
        s.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"{} points=\"{}\"/>\n",
            if dash.is_empty() {
                String::new()
            } else {
                format!(" stroke-dasharray=\"{dash}\"")
            },
            polyline_points(l.points.iter().map(|(x, y)| (px(*x), py(*y))))
        ));
        if l.points.len() <= 80 {
            for (x, y) in &l.points {
                s.push_str(&format!(
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{colour}\"/>\n",
                    px(*x),
                    py(*y)
                ));
            }
        }
        // Legend: swatch, label, and the last and largest value.
        let ly = FRAME.top + 10.0 + i as f64 * 36.0;
        let lx = x1 + 20.0;
        let last = l.points.last().map(|p| p.1).unwrap_or(0.0);
        let max = l.points.iter().map(|p| p.1).fold(0.0, f64::max);
        s.push_str(&format!(
            "<line x1=\"{lx}\" y1=\"{ly}\" x2=\"{:.1}\" y2=\"{ly}\" stroke=\"{colour}\" stroke-width=\"3\"{}/>\n<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#222222\">{}</text>\n<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#666666\" font-size=\"10\">{} req · max {} · last {}</text>\n",
            lx + 28.0,
            if dash.is_empty() { String::new() } else { format!(" stroke-dasharray=\"{dash}\"") },
            lx + 36.0,
            ly + 4.0,
            escape(&l.label),
            lx + 36.0,
            ly + 18.0,
            l.points.len(),
            num(max),
            num(last)
        ));
    }
    s.push_str("</svg>\n");
    s
}

/// Draws a stacked bar chart, with each bar's total above it.
pub fn bar_chart(c: &BarChart) -> String {
    let mut s = header(&c.title);
    let (x0, x1, y0, y1) = edges();
    let ymax = c
        .bars
        .iter()
        .map(|b| b.values.iter().sum::<f64>())
        .fold(0.0, f64::max);
    // Headroom for the totals above the bars.
    let yt = ticks(0.0, (ymax * 1.08).max(1.0), 6);
    let ytop = yt.last().copied().unwrap_or(1.0);
    axes(&mut s, &yt, "arm", &c.y_label);
    let n = c.bars.len().max(1) as f64;
    let slot = (x1 - x0) / n;
    let width = (slot * 0.6).min(90.0);
    let rotate = c.bars.len() > 6;
    for (i, b) in c.bars.iter().enumerate() {
        let cx = x0 + slot * (i as f64 + 0.5);
        let mut acc = 0.0;
        for (j, v) in b.values.iter().enumerate() {
            let h = v / ytop * (y0 - y1);
            let top = y0 - (acc + v) / ytop * (y0 - y1);
            if *v > 0.0 {
                s.push_str(&format!(
                    "<rect x=\"{:.1}\" y=\"{top:.1}\" width=\"{width:.1}\" height=\"{h:.1}\" fill=\"{}\"/>\n",
                    cx - width / 2.0,
                    colour(j)
                ));
            }
            acc += v;
        }
        let top = y0 - acc / ytop * (y0 - y1);
        s.push_str(&format!(
            "<text x=\"{cx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#222222\">{}</text>\n",
            top - 6.0,
            fmt_tick(acc)
        ));
        if rotate {
            s.push_str(&format!(
                "<text x=\"{cx:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#444444\" transform=\"rotate(-30 {cx:.1} {:.1})\">{}</text>\n",
                y0 + 16.0,
                y0 + 16.0,
                escape(&b.label)
            ));
        } else {
            s.push_str(&format!(
                "<text x=\"{cx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#444444\">{}</text>\n",
                y0 + 18.0,
                escape(&b.label)
            ));
        }
    }
    for (j, name) in c.segments.iter().enumerate() {
        let ly = FRAME.top + 10.0 + j as f64 * 24.0;
        let lx = x1 + 20.0;
        s.push_str(&format!(
            "<rect x=\"{lx}\" y=\"{:.1}\" width=\"14\" height=\"14\" fill=\"{}\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#222222\">{}</text>\n",
            ly - 7.0,
            colour(j),
            lx + 22.0,
            ly + 4.0,
            escape(name)
        ));
    }
    s.push_str("</svg>\n");
    s
}

/// The fields of a `requests.jsonl` line a chart needs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RequestPoint {
    /// Cell id.
    pub(crate) cell: String,
    /// 0-based index of the request in its cell.
    pub(crate) index: usize,
    /// Why it was made.
    #[serde(default)]
    pub(crate) purpose: Purpose,
    /// o200k tokens.
    pub(crate) tokens: u64,
}

/// Which session the request chart shows; unset fields are chosen (see [`request_chart`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionChoice {
    /// Task name.
    pub task: Option<String>,
    /// Seed.
    pub seed: Option<u64>,
    /// Model label.
    pub model: Option<String>,
}

/// Why there is no request chart to draw.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChartError {
    /// No cell of the chosen task fits the chosen seed and model.
    #[error("no cell of task `{0}` with the chosen seed and model")]
    NoCellOfTask(String),
    /// No cell fits the choice.
    #[error("no cell to chart")]
    NoCell,
    /// The chosen session's cells recorded no request.
    #[error("no requests recorded for task `{task}`, seed {seed}, model `{model}`; is requests.jsonl in the run directory?")]
    NoRequests {
        /// The task.
        task: String,
        /// The seed.
        seed: u64,
        /// The model label.
        model: String,
    },
}

/// The request-size chart: for one task, seed and model, each arm's turn requests in order
/// (compaction calls are left out). Unless chosen: the first task with the longest session, the
/// first model, the smallest seed.
pub fn request_chart(
    records: &[CellRecord],
    requests: &[RequestPoint],
    choice: &SessionChoice,
) -> Result<LineChart, ChartError> {
    let fits = |r: &&CellRecord| {
        choice.task.as_ref().is_none_or(|t| &r.task == t)
            && choice.seed.is_none_or(|s| r.seed == s)
            && choice.model.as_ref().is_none_or(|m| &r.model == m)
    };
    let cands: Vec<&CellRecord> = records.iter().filter(fits).collect();
    let Some(first) = cands.first() else {
        return Err(match &choice.task {
            Some(t) => ChartError::NoCellOfTask(t.clone()),
            None => ChartError::NoCell,
        });
    };
    let task = match &choice.task {
        Some(t) => t.clone(),
        None => {
            let mut best = (first.task.clone(), 0usize);
            for r in &cands {
                if r.metrics.requests > best.1 {
                    best = (r.task.clone(), r.metrics.requests);
                }
            }
            best.0
        }
    };
    let in_task: Vec<&CellRecord> = cands.iter().copied().filter(|r| r.task == task).collect();
    let model = choice
        .model
        .clone()
        .or_else(|| in_task.first().map(|r| r.model.clone()))
        .unwrap_or_default();
    let seed = choice.seed.unwrap_or_else(|| {
        in_task
            .iter()
            .filter(|r| r.model == model)
            .map(|r| r.seed)
            .min()
            .unwrap_or(0)
    });
    let mut series = Vec::new();
    for r in in_task
        .iter()
        .filter(|r| r.model == model && r.seed == seed)
    {
        if series.iter().any(|s: &Series| s.label == r.arm) {
            continue;
        }
        let mut reqs: Vec<&RequestPoint> = requests
            .iter()
            .filter(|q| q.cell == r.id && q.purpose == Purpose::Turn)
            .collect();
        reqs.sort_by_key(|q| q.index);
        series.push(Series {
            label: r.arm.clone(),
            points: reqs
                .iter()
                .enumerate()
                .map(|(i, q)| ((i + 1) as f64, q.tokens as f64))
                .collect(),
        });
    }
    if series.iter().all(|s| s.points.is_empty()) {
        return Err(ChartError::NoRequests { task, seed, model });
    }
    Ok(LineChart {
        title: format!("Request size — {task}, seed {seed}, {model}"),
        x_label: "request of the session (turn requests, in order)".into(),
        y_label: "request tokens (o200k)".into(),
        series,
    })
}

/// Re-runs per arm: the total over the arm's cells, hidden (the earlier result was not visible)
/// below visible. Cells that ended in error are left out.
pub fn reruns_chart(records: &[CellRecord]) -> BarChart {
    let mut bars: Vec<Bar> = Vec::new();
    let mut cells: Vec<usize> = Vec::new();
    for r in records
        .iter()
        .filter(|r| r.status != harness_core::Status::Error)
    {
        let i = match bars.iter().position(|b| b.label == r.arm) {
            Some(i) => i,
            None => {
                bars.push(Bar {
                    label: r.arm.clone(),
                    values: vec![0.0, 0.0],
                });
                cells.push(0);
                bars.len() - 1
            }
        };
        bars[i].values[0] += r.metrics.reruns_hidden as f64;
        bars[i].values[1] += r.metrics.reruns_visible as f64;
        cells[i] += 1;
    }
    let n = cells.iter().max().copied().unwrap_or(0);
    BarChart {
        title: "Re-runs per arm".into(),
        y_label: format!("re-run tool calls (total, {n} cells per arm)"),
        segments: vec!["hidden (result not visible)".into(), "visible".into()],
        bars,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ticks() {
        assert_eq!(ticks(0.0, 10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(0.0, 2003.0, 6).last().copied(), Some(2500.0));
        assert_eq!(ticks(1.0, 13.0, 10).first().copied(), Some(0.0));
    }

    #[test]
    fn a_frame_places_values_in_its_plot_area() {
        let f = Frame::new(100.0, 50.0, [10.0, 10.0, 5.0, 5.0]);
        assert_eq!((f.plot_width(), f.plot_height()), (80.0, 40.0));
        assert_eq!(
            (f.x(0.0, 4.0), f.x(1.0, 4.0), f.x(4.0, 4.0)),
            (10.0, 30.0, 90.0)
        );
        // Up is smaller: 0 on the bottom edge, the maximum on the top one.
        assert_eq!(
            (f.y(0.0, 2.0), f.y(1.0, 2.0), f.y(2.0, 2.0)),
            (45.0, 25.0, 5.0)
        );
        assert_eq!(
            polyline_points([(1.04, 2.06), (3.0, 40.0)]),
            "1.0,2.1 3.0,40.0"
        );
        assert_eq!(polyline_points([]), "");
        assert_eq!(colour(0), colour(PALETTE.len()));
    }

    #[test]
    fn charts_are_well_formed() {
        let c = LineChart {
            title: "a <b>".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![
                Series {
                    label: "none".into(),
                    points: vec![(1.0, 100.0), (2.0, 300.0)],
                },
                Series {
                    label: "trim".into(),
                    points: vec![(1.0, 100.0), (2.0, 150.0)],
                },
            ],
        };
        let s = line_chart(&c);
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"));
        assert_eq!(s.matches("<polyline").count(), 2);
        assert!(s.contains("a &lt;b&gt;"));
        assert!(s.contains("font-family=\"sans-serif\""));
        let b = bar_chart(&BarChart {
            title: "r".into(),
            y_label: "n".into(),
            segments: vec!["hidden".into(), "visible".into()],
            bars: vec![Bar {
                label: "trim".into(),
                values: vec![4.0, 1.0],
            }],
        });
        assert_eq!(b.matches("<rect").count(), 1 + 2 + 2, "{b}");
        let empty = line_chart(&LineChart {
            title: String::new(),
            x_label: String::new(),
            y_label: String::new(),
            series: vec![],
        });
        assert!(empty.ends_with("</svg>\n"));
    }
}
