//! What `foldbench replay` opens with and closes its policy table with: the verdict (one line
//! per policy: its saving after recovery, its loss, its place on the frontier) and the cost–loss
//! frontier, in the terminal (broken to its width), Markdown and the HTML page's opening.

use harness_report::headline::Answer;
use harness_report::html::Block;
use harness_report::view::Kind;

use crate::format::Text;
use crate::view::ViewArgs;

/// The verdict a replay opens with: one line per policy (its saving after recovery, its loss,
/// its place on the frontier), broken to the terminal's width, or a Markdown list; then what
/// flips over the behaviour profile's intervals.
pub(crate) fn write_verdict(
    out: &mut dyn Text,
    answers: &[Answer],
    sessions: &str,
    profile: &str,
    sensitivity: &[String],
) {
    if answers.is_empty() {
        return;
    }
    out.verdict(answers, sessions, profile);
    out.lines(sensitivity);
}

/// The page's opening: the verdict's heading and lines, what flips over the behaviour
/// profile's intervals, the frontier's chart and its legend.
pub(crate) fn page_opening(
    answers: &[Answer],
    sessions: &str,
    profile: &str,
    sensitivity: &[String],
) -> Vec<Block> {
    let mut opening = Vec::new();
    if answers.is_empty() {
        return opening;
    }
    opening.push(Block::Heading(format!(
        "{} ({sessions})",
        harness_report::headline::replay_heading(profile)
    )));
    opening.push(Block::Lines(harness_report::headline::lines(answers)));
    opening.push(Block::Lines(sensitivity.to_vec()));
    let points = harness_replay::headline::points(answers);
    if points.len() > 1 {
        opening.push(Block::Frontier {
            points,
            axes: harness_report::frontier::Axes::replay(),
        });
        opening.push(Block::Lines(vec![harness_report::frontier::LEGEND.into()]));
    }
    opening
}

/// The frontier table under the policy table's notes, with its legend.
pub(crate) fn write_frontier(out: &mut dyn Text, answers: &[Answer], view: ViewArgs) {
    let axes = harness_report::frontier::Axes::replay();
    let Some(t) =
        harness_report::frontier::table(&harness_replay::headline::points(answers), &axes)
    else {
        return;
    };
    out.heading("The cost–loss frontier (cheapest first; ◆ on the frontier)");
    out.table(&t, Kind::Plain, view);
    out.lines(&[harness_report::frontier::LEGEND.to_string()]);
}
