//! The request-size chart as inline SVG: one polyline per policy (`class="series"`,
//! `data-policy`, each with its own colour and dash pattern), fold points as triangles, strategy
//! exits as diamonds and compaction points as squares on their line, a shaded band per span (a
//! subagent's run: a mark where it started), a `<title>` tooltip on every
//! mark, a ring on each point of a line that lies on an earlier one, and an HTML legend whose
//! swatches show each line's dash. Coordinates are rounded to one decimal,
//! so the same chart is the same bytes.

use super::{escape, Chart, MarkKind};
use crate::svg::colour;
use crate::svg::{polyline_points, ticks, Frame};
use harness_core::fold::group_thousands;

/// Dash patterns, so lines that coincide stay visible as two.
const DASHES: [&str; 5] = ["", "7 4", "3 3", "10 3 3 3", "1 4"];

/// The frame of a request chart (the legend is HTML, below it).
const FRAME: Frame = Frame::new(900.0, 300.0, [72.0, 16.0, 14.0, 44.0]);

/// The chart as a `<figure class="chart">` holding the SVG and its legend.
pub fn chart_svg(c: &Chart) -> String {
    let n = c.series.iter().map(|s| s.sizes.len()).max().unwrap_or(0);
    let top = c
        .series
        .iter()
        .flat_map(|s| s.sizes.iter().copied())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let yt = ticks(0.0, top, 5);
    let ymax = yt.last().copied().unwrap_or(top).max(top);
    let Frame {
        width,
        height,
        left,
        right,
        top,
        ..
    } = FRAME;
    let (pw, ph) = (FRAME.plot_width(), FRAME.plot_height());
    let x = |i: usize| {
        if n <= 1 {
            left + pw / 2.0
        } else {
            FRAME.x(i as f64, (n - 1) as f64)
        }
    };
    let y = |v: u64| FRAME.y(v as f64, ymax);
    let mut s = format!(
        "<figure class=\"chart\" data-series=\"{}\">\n<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{}\">\n",
        c.series.len(),
        escape(&c.y_label)
    );
    // Axes and grid.
    for t in &yt {
        let ty = FRAME.y(*t, ymax);
        s.push_str(&format!(
            "<line class=\"grid\" x1=\"{left}\" y1=\"{ty:.1}\" x2=\"{:.1}\" y2=\"{ty:.1}\"/><text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
            width - right,
            left - 6.0,
            ty + 4.0,
            group_thousands(t.round() as u64)
        ));
    }
    let xt = if n <= 1 {
        vec![1.0]
    } else {
        ticks(1.0, n as f64, 10)
    };
    for t in xt.iter().filter(|t| **t >= 1.0 && **t <= n.max(1) as f64) {
        let tx = x(*t as usize - 1);
        s.push_str(&format!(
            "<text class=\"tick\" x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
            top + ph + 16.0,
            *t as u64
        ));
    }
    s.push_str(&format!(
        "<line class=\"axis\" x1=\"{left}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\"/>\n<text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n<text class=\"label\" transform=\"translate(14 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
        top + ph,
        width - right,
        top + ph,
        left + pw / 2.0,
        height - 6.0,
        escape(&c.x_label),
        top + ph / 2.0,
        escape(&c.y_label)
    ));
    // Bands behind the lines, each with a mark at its start along the top.
    for sp in &c.spans {
        let (a, b) = (x(sp.from), x(sp.to.max(sp.from)));
        s.push_str(&format!(
            "<g class=\"span\"><rect x=\"{:.1}\" y=\"{top}\" width=\"{:.1}\" height=\"{ph:.1}\" fill=\"#8a6fb0\" fill-opacity=\"0.10\"/><path d=\"M{a:.1},{top} l5,-9 l-10,0 z\" fill=\"#8a6fb0\"/><title>{}</title></g>\n",
            a.min(b) - 2.0,
            (b - a).abs() + 4.0,
            escape(&sp.note)
        ));
    }
    // One line per policy, then its marks.
    for i in 0..c.series.len() {
        series_svg(&mut s, c, i, &x, &y);
    }
    s.push_str("</svg>\n<figcaption class=\"legend\">");
    legend(&mut s, c);
    if !c.spans.is_empty() {
        s.push_str(&format!(
            "<span class=\"key span\"><svg class=\"swatch\" width=\"28\" height=\"8\" aria-hidden=\"true\"><rect width=\"28\" height=\"8\" fill=\"#8a6fb0\" fill-opacity=\"0.3\"/></svg><small>{} subagent{}: ▼ where it started, the band while it ran</small></span>",
            c.spans.len(),
            if c.spans.len() == 1 { "" } else { "s" }
        ));
    }
    s.push_str("</figcaption>\n</figure>\n");
    s
}

/// One policy's line, the rings of a line that lies on an earlier one, and its marks.
fn series_svg(
    s: &mut String,
    c: &Chart,
    i: usize,
    x: &dyn Fn(usize) -> f64,
    y: &dyn Fn(u64) -> f64,
) {
    let ser = &c.series[i];
    let line = polyline_points(ser.sizes.iter().enumerate().map(|(k, v)| (x(k), y(*v))));
    s.push_str(&format!(
            "<polyline class=\"series\" data-policy=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" stroke-dasharray=\"{}\" points=\"{}\"><title>{}</title></polyline>\n",
            escape(&ser.label),
            colour(i),
            DASHES[i % DASHES.len()],
            line,
            escape(&ser.label)
        ));
    // A line that lies on an earlier one gets a marker on every point (up to 60 points), so
    // both stay visible and its legend says which it equals.
    if same_as(c, i).is_some() && ser.sizes.len() <= 60 {
        for (k, v) in ser.sizes.iter().enumerate() {
            s.push_str(&format!(
                    "<circle class=\"dot same\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.2\"/>\n",
                    x(k),
                    y(*v),
                    colour(i)
                ));
        }
    }
    if ser.sizes.len() == 1 {
        s.push_str(&format!(
            "<circle class=\"dot\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{}\"/>\n",
            x(0),
            y(ser.sizes[0]),
            colour(i)
        ));
    }
    for m in &ser.marks {
        let Some(v) = ser.sizes.get(m.at) else {
            continue;
        };
        let (mx, my) = (x(m.at), y(*v));
        let shape = match m.kind {
            MarkKind::Fold => format!("<path d=\"M{:.1},{:.1} l6,-10 l-12,0 z\"", mx, my - 2.0),
            MarkKind::Strategy => {
                format!(
                    "<path d=\"M{:.1},{:.1} l5,-5 l-5,-5 l-5,5 z\"",
                    mx,
                    my - 1.0
                )
            }
            MarkKind::Compaction => format!(
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"9\" height=\"9\"",
                mx - 4.5,
                my - 4.5
            ),
        };
        s.push_str(&format!(
                "{shape} class=\"mark {}\" data-policy=\"{}\" fill=\"{}\" stroke=\"#222\" stroke-width=\"0.8\"><title>{}: {}</title>{}\n",
                m.kind.name(),
                escape(&ser.label),
                colour(i),
                escape(&ser.label),
                escape(&m.note),
                match m.kind {
                    MarkKind::Fold | MarkKind::Strategy => "</path>",
                    MarkKind::Compaction => "</rect>",
                }
            ));
    }
}

/// The first earlier series whose requests are the same as series `i`'s (its line lies on that
/// one), if any.
pub(crate) fn same_as(c: &Chart, i: usize) -> Option<&str> {
    let me = c.series.get(i)?;
    c.series[..i]
        .iter()
        .find(|o| o.sizes == me.sizes)
        .map(|o| o.label.as_str())
}

/// The legend: a key per series (its colour and dash pattern) with its request count and marks,
/// counted by kind as the facts line counts them, and which earlier line it lies on.
fn legend(s: &mut String, c: &Chart) {
    for (i, ser) in c.series.iter().enumerate() {
        let mut extra = Vec::new();
        for kind in [MarkKind::Fold, MarkKind::Strategy, MarkKind::Compaction] {
            let n = ser.marks.iter().filter(|m| m.kind == kind).count();
            if n > 0 {
                extra.push(format!(
                    "{n} {} {}{}",
                    kind.symbol(),
                    kind.name(),
                    if n == 1 { "" } else { "s" }
                ));
            }
        }
        if let Some(other) = same_as(c, i) {
            extra.push(format!(
                "the same requests as {}: on its line, ○ on each point",
                escape(other)
            ));
        }
        s.push_str(&format!(
            "<span class=\"key\" data-policy=\"{}\"><svg class=\"swatch\" width=\"28\" height=\"8\" aria-hidden=\"true\"><line x1=\"0\" y1=\"4\" x2=\"28\" y2=\"4\" stroke=\"{}\" stroke-width=\"3\" stroke-dasharray=\"{}\"/></svg>{} <small>{} requests{}</small></span>",
            escape(&ser.label),
            colour(i),
            DASHES[i % DASHES.len()],
            escape(&ser.label),
            ser.sizes.len(),
            if extra.is_empty() {
                String::new()
            } else {
                format!(", {}", extra.join(", "))
            }
        ));
    }
}
