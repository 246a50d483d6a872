//! The answer a report opens with: one line per arm — what it saves after recovery, what it
//! loses, whether it is on the cost–loss frontier — before any table, in the terminal, Markdown
//! and HTML.
//!
//! Runs and replays share one cost measure and its words, **tokens incl. recovery**: the saving
//! is `1 − Σ×` of the arm's tokens with recovery against the baseline's (the ratio of summed
//! totals over the pairs, with its 95% bootstrap interval, the same figure as the frontier's
//! cost), the median of the per-pair ratios (`med×`) beside it, and the money figure — dollars
//! with prompt caching, recovery included — as `$ Σ×`. In runs the tokens are every input token
//! a cell sent (`tokens/task`): the agent's recovery requests are requests of the cell; in
//! replay they are the recorded requests under the policy plus the recovery the behaviour
//! profile models (`harness_replay::hidden::recovery`), and `profile Σ× lo–hi` gives the figure
//! at the low and high ends of the profile's intervals.
//!
//! ```
//! use harness_report::headline::{Answer, lines};
//! use harness_report::verdict::Estimate;
//! let a = Answer {
//!     arm: "fold".into(),
//!     baseline: false,
//!     tokens: Estimate { point: 0.62, lo: 0.55, hi: 0.70 },
//!     tokens_median: 0.80,
//!     before_recovery: None,
//!     loss: 0.25,
//!     loss_unit: "lost facts/cell".into(),
//!     loss_note: None,
//!     success: None,
//!     cost: Some(0.71),
//!     range: None,
//!     frontier: true,
//! };
//! assert_eq!(
//!     lines(&[a])[0],
//!     "fold: saves 38% [30%, 45%] (tokens Σ× 0.62 [0.55, 0.70], med× 0.80; $ Σ× 0.71) · loses 0.25 lost facts/cell · ◆ frontier"
//! );
//! ```

use harness_core::CellRecord;

use crate::frontier;
use crate::verdict::{self, Estimate};

/// One arm's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The arm.
    pub arm: String,
    /// Whether this is the baseline the others are measured against.
    pub baseline: bool,
    /// Tokens after recovery over the baseline's (Σ×), with its interval.
    pub tokens: Estimate,
    /// The median over pairs of the per-pair ratio (med×).
    pub tokens_median: f64,
    /// Σ× before recovery, where it differs in kind (replay's `total input`).
    pub before_recovery: Option<f64>,
    /// The loss, in `loss_unit`.
    pub loss: f64,
    /// What the loss counts (`lost facts/cell`, `refs gone/100 resp`).
    pub loss_unit: String,
    /// A word on the loss (`13 gone, 4 recovered`).
    pub loss_note: Option<String>,
    /// Success rate, arm minus baseline, with its interval (runs only).
    pub success: Option<Estimate>,
    /// Dollars Σ× the baseline's, with prompt caching and recovery included.
    pub cost: Option<f64>,
    /// Tokens incl. recovery Σ× at the low and high ends of the behaviour profile's intervals
    /// (replay: the modelled recovery's sensitivity).
    pub range: Option<(f64, f64)>,
    /// On the cost–loss frontier.
    pub frontier: bool,
}

/// `38%` of a saving `1 − r` (negative: a cost).
fn pct(r: f64) -> String {
    format!("{:.0}%", (1.0 - r).abs() * 100.0)
}

fn signed(x: f64) -> String {
    let x = if x.abs() < 0.005 { 0.0 } else { x };
    if x > 0.0 {
        format!("+{x:.2}")
    } else if x < 0.0 {
        format!("−{:.2}", -x)
    } else {
        "±0.00".into()
    }
}

impl Answer {
    /// What it saves: `saves 38% [30%, 45%] (tokens Σ× 0.62 [0.55, 0.70], med× 0.80)`, or
    /// `costs 12% more …`, or `the baseline`.
    fn saving(&self) -> String {
        if self.baseline {
            return "the baseline (tokens Σ× 1.00)".into();
        }
        let t = &self.tokens;
        let head = if (1.0 - t.point).abs() < 0.005 {
            "no saving".to_string()
        } else if t.point <= 1.0 {
            if t.lo == t.hi {
                format!("saves {}", pct(t.point))
            } else {
                format!(
                    "saves {} [{}, {}]",
                    pct(t.point),
                    signed_pct(t.hi),
                    signed_pct(t.lo)
                )
            }
        } else {
            format!("costs {} more", pct(t.point))
        };
        let before = self
            .before_recovery
            .filter(|b| format!("{b:.2}") != format!("{:.2}", t.point))
            .map_or_else(String::new, |b| format!("; before recovery {b:.2}"));
        let dollars = self
            .cost
            .map_or_else(String::new, |c| format!("; $ Σ× {c:.2}"));
        let range = self
            .range
            .filter(|(lo, hi)| format!("{lo:.2}") != format!("{hi:.2}"))
            .map_or_else(String::new, |(lo, hi)| {
                format!("; profile Σ× {:.2}–{:.2}", lo.min(hi), lo.max(hi))
            });
        format!(
            "{head} (tokens {}, med× {:.2}{before}{dollars}{range})",
            t.ratio_text(),
            self.tokens_median
        )
    }

    /// The line, its arm name padded to `width` characters.
    pub(crate) fn line_padded(&self, width: usize) -> String {
        let mut s = format!(
            "{:<w$} {}",
            format!("{}:", self.arm),
            self.saving(),
            w = width + 1
        );
        let loss = if self.loss >= 10.0 {
            format!("{:.1}", self.loss)
        } else {
            format!("{:.2}", self.loss)
        };
        s.push_str(&format!(" · loses {loss} {}", self.loss_unit));
        if let Some(n) = &self.loss_note {
            s.push_str(&format!(" ({n})"));
        }
        if let Some(su) = &self.success {
            if !self.baseline {
                s.push_str(&format!(
                    " · success {} [{}, {}]",
                    signed(su.point),
                    signed(su.lo),
                    signed(su.hi)
                ));
            }
        }
        if self.frontier {
            s.push_str(" · ◆ frontier");
        }
        s
    }
}

/// A saving's end of an interval: `30%`, or `−5%` when the ratio's end is above 1.
fn signed_pct(r: f64) -> String {
    let v = (1.0 - r) * 100.0;
    if v < -0.5 {
        format!("−{:.0}%", -v)
    } else {
        format!("{:.0}%", v.max(0.0))
    }
}

/// One line per answer, names padded to the longest.
pub fn lines(answers: &[Answer]) -> Vec<String> {
    let w = answers
        .iter()
        .map(|a| a.arm.chars().count())
        .max()
        .unwrap_or(0);
    answers.iter().map(|a| a.line_padded(w)).collect()
}

/// The cost measure of every verdict, runs and replays alike.
pub(crate) const COST_WORDS: &str = "tokens incl. recovery";

/// The heading of a run's verdict, naming the behaviour profile(s) the records' sim followed
/// after a loss (none for real models and agents).
pub fn run_heading(baseline: &str, records: &[CellRecord]) -> String {
    let mut profiles: Vec<&str> = records
        .iter()
        .filter_map(|r| r.behaviour.as_deref())
        .collect();
    profiles.sort_unstable();
    profiles.dedup();
    let sim = match profiles.as_slice() {
        [] => String::new(),
        [one] => format!("; the sim after a loss: behaviour profile `{one}`"),
        many => format!(
            "; the sim after a loss: behaviour profiles {} (mixed records: compare with care)",
            many.iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    format!(
        "Verdict against {baseline}: {COST_WORDS} Σ× [95% interval over paired cells] (the agent's recovery requests are the cell's); $ with prompt caching; loss: lost facts per cell{sim}"
    )
}

/// The heading of a replay's verdict, naming the behaviour profile its recovery follows.
pub fn replay_heading(profile: &str) -> String {
    format!(
        "Verdict against none: {COST_WORDS} Σ× [95% interval over sessions] (recovery as the behaviour profile `{profile}` says; profile Σ×: at the low and high ends of its intervals); $ with prompt caching; loss: references gone (not fetched back) per 100 responses"
    )
}

/// The answers of a run against `baseline` (`requested`, else `none` when the records have it,
/// else the first arm): the baseline's line first, then each arm in first-seen order, with the
/// verdict's Σ× (`verdict::run_verdicts`) and the frontier's marks
/// ([`frontier::run_points`]). Returns the baseline with them.
pub fn run_answers(records: &[CellRecord], requested: Option<&str>) -> (String, Vec<Answer>) {
    let has = |arm: &str| records.iter().any(|r| r.arm == arm);
    let baseline = match requested {
        Some(b) => b.to_string(),
        None if has("none") => "none".to_string(),
        None => match records.first() {
            Some(r) => r.arm.clone(),
            None => return (String::new(), Vec::new()),
        },
    };
    let points = frontier::run_points(records, &baseline);
    let on = |arm: &str| points.iter().any(|p| p.arm == arm && p.frontier);
    let mut out = Vec::new();
    if has(&baseline) {
        out.push(Answer {
            arm: baseline.clone(),
            baseline: true,
            tokens: Estimate {
                point: 1.0,
                lo: 1.0,
                hi: 1.0,
            },
            tokens_median: 1.0,
            before_recovery: None,
            loss: frontier::lost_per_cell(records, &baseline),
            loss_unit: "lost facts/cell".into(),
            loss_note: None,
            success: None,
            cost: None,
            range: None,
            frontier: on(&baseline),
        });
    }
    for v in verdict::run_verdicts(records, &baseline) {
        // Cells nothing was checked in have no success to compare.
        let unchecked = records.iter().any(|r| {
            (r.arm == v.arm || r.arm == baseline) && r.status == harness_core::Status::Unchecked
        });
        out.push(Answer {
            loss: frontier::lost_per_cell(records, &v.arm),
            frontier: on(&v.arm),
            arm: v.arm,
            baseline: false,
            tokens: v.tokens,
            tokens_median: v.tokens_median,
            before_recovery: None,
            loss_unit: "lost facts/cell".into(),
            loss_note: None,
            success: (!unchecked).then_some(v.success),
            cost: Some(v.cost.point),
            range: None,
        });
    }
    (baseline, out)
}

/// The verdict block of a run for the terminal: the heading and one line per arm, each cut to
/// `width` columns at its ` · ` separators (continued on the next line, indented).
pub fn run_block(records: &[CellRecord], requested: Option<&str>, width: usize) -> Vec<String> {
    let (baseline, answers) = run_answers(records, requested);
    if answers.is_empty() {
        return Vec::new();
    }
    let mut out = wrap(&run_heading(&baseline, records), width, 2);
    for l in lines(&answers) {
        out.extend(wrap(&format!("  {l}"), width, 6));
    }
    out
}

/// What a run's `tokens/task` counts, printed under its table.
pub const RUN_TOKENS_NOTE: &str = "tokens/task: the median over the arm's cells of every input \
token a cell sent — its requests, recovery included (the agent's archive reads and re-runs are \
requests of the cell, so a run counts recovery as it happens), the cards and the fold calls and \
results in them, and its compaction calls (a fold policy's emergency ones too); Σ× none sums \
the cells instead, so an arm that saves only on the largest cells keeps none's median and \
still saves";

/// What a run's terminal output has under its table: what `tokens/task` counts, the ratios'
/// legend, and the frontier table with its legend, each fitted to `width`.
pub fn run_tail(records: &[CellRecord], requested: Option<&str>, width: usize) -> Vec<String> {
    let mut out = wrap(RUN_TOKENS_NOTE, width, 2);
    out.extend(wrap(verdict::RATIO_LEGEND, width, 2));
    let (baseline, _) = run_answers(records, requested);
    let axes = frontier::Axes::run(&baseline);
    if let Some(t) = frontier::table(&frontier::run_points(records, &baseline), &axes) {
        out.push("The cost–loss frontier (cheapest first; ◆ on the frontier):".into());
        out.push(crate::view::terminal(
            &t,
            crate::view::Kind::Plain,
            crate::view::View::Default,
            width,
        ));
        out.extend(wrap(frontier::LEGEND, width, 2));
    }
    out
}

/// A run's verdict as Markdown: a heading and one list item per arm (empty with no arm).
pub fn run_markdown(records: &[CellRecord], requested: Option<&str>) -> String {
    let (baseline, answers) = run_answers(records, requested);
    if answers.is_empty() {
        return String::new();
    }
    let mut s = format!("### {}\n\n", run_heading(&baseline, records));
    for l in lines(&answers) {
        s.push_str(&format!(
            "- {}\n",
            l.split_whitespace().collect::<Vec<_>>().join(" ")
        ));
    }
    s
}

/// A run's frontier and notes as Markdown: what `tokens/task` counts, the ratios' legend, the
/// frontier table and its legend.
pub fn run_markdown_tail(records: &[CellRecord], requested: Option<&str>) -> String {
    let mut s = format!("\n{RUN_TOKENS_NOTE}\n\n{}\n", verdict::RATIO_LEGEND);
    let (baseline, _) = run_answers(records, requested);
    let axes = frontier::Axes::run(&baseline);
    if let Some(t) = frontier::table(&frontier::run_points(records, &baseline), &axes) {
        s.push_str(&format!(
            "\n### The cost–loss frontier\n\n{}\n{}\n",
            t.to_markdown(),
            frontier::LEGEND
        ));
    }
    s
}

/// `text` in lines of at most `width` characters, broken at spaces (a word longer than the room
/// stays whole), the lines after the first indented by `indent` spaces.
pub fn wrap(text: &str, width: usize, indent: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    let lead = text.len() - text.trim_start().len();
    cur.push_str(&text[..lead]);
    let mut cur_len = lead;
    let mut fresh = true;
    for word in text[lead..].split(' ') {
        let n = word.chars().count();
        if !fresh && cur_len + 1 + n > width {
            out.push(std::mem::take(&mut cur));
            cur = " ".repeat(indent);
            cur_len = indent;
            fresh = true;
        }
        if !fresh {
            cur.push(' ');
            cur_len += 1;
        }
        cur.push_str(word);
        cur_len += n;
        fresh = false;
    }
    out.push(cur);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_core::metrics::CellMetrics;

    fn cell(task: &str, arm: &str, tokens: u64, lost: usize) -> CellRecord {
        let mut metrics = CellMetrics {
            lost_facts: lost,
            cost: tokens as f64 / 1e6,
            ..CellMetrics::default()
        };
        metrics.request_tokens.total = tokens;
        crate::testing::record(task, arm, 1, metrics)
    }

    #[test]
    fn a_runs_answer_is_its_saving_its_loss_and_its_place_on_the_frontier() {
        // One task: none 1,000 tokens, nothing lost; trim 600 and 2 facts lost; big 1,500, none
        // lost (none beats it: cheaper, losing as little).
        let rs = vec![
            cell("a", "none", 1000, 0),
            cell("a", "trim", 600, 2),
            cell("a", "big", 1500, 0),
        ];
        let (base, answers) = run_answers(&rs, None);
        assert_eq!(base, "none");
        let l = lines(&answers);
        assert_eq!(
            l,
            [
                "none: the baseline (tokens Σ× 1.00) · loses 0.00 lost facts/cell · ◆ frontier",
                "trim: saves 40% (tokens Σ× 0.60 [0.60, 0.60], med× 0.60; $ Σ× 0.60) · loses 2.00 lost facts/cell · success −1.00 [−1.00, −1.00] · ◆ frontier",
                "big:  costs 50% more (tokens Σ× 1.50 [1.50, 1.50], med× 1.50; $ Σ× 1.50) · loses 0.00 lost facts/cell · success ±0.00 [±0.00, ±0.00]",
            ]
        );
        let block = run_block(&rs, None, 80);
        assert!(block[0].starts_with("Verdict against none:"));
        assert!(block.iter().all(|l| l.chars().count() <= 80), "{block:#?}");
        assert!(block.iter().any(|l| l.starts_with("      ")), "{block:#?}");
        assert!(run_block(&[], None, 80).is_empty());
    }

    #[test]
    fn wrapping_breaks_at_spaces_and_indents() {
        assert_eq!(wrap("aa bb cc", 5, 1), ["aa bb", " cc"]);
        assert_eq!(wrap("  aaaaaaa b", 4, 4), ["  aaaaaaa", "    b"]);
        assert_eq!(wrap("short", 80, 2), ["short"]);
    }
}
