//! What `foldbench replay` opens with and closes its policy table with: the verdict (one line
//! per policy: its saving after recovery, its loss, its place on the frontier) and the cost–loss
//! frontier, in the terminal (broken to its width), Markdown and the HTML page's opening.

use harness_report::answer::Answer;
use harness_report::html::Block;
use harness_report::view::Kind;

use crate::error::Error;
use crate::format::OutputFormat;
use crate::view::ViewArgs;

/// The verdict a replay opens with: one line per policy (its saving after recovery, its loss,
/// its place on the frontier), broken to the terminal's width, or a Markdown list.
pub(crate) fn print_verdict(
    answers: &[Answer],
    sessions: &str,
    profile: &str,
    sensitivity: &[String],
    format: OutputFormat,
) -> Result<(), Error> {
    if answers.is_empty() {
        return Ok(());
    }
    if format == OutputFormat::Md {
        crate::out::line(&format!(
            "### {} ({sessions})\n",
            harness_report::answer::replay_heading(profile),
        ))?;
        for l in harness_report::answer::lines(answers) {
            crate::out::line(&format!("- {l}"))?;
        }
        crate::out::line("")?;
        return print_lines(sensitivity, format);
    }
    let width = crate::view::width();
    for l in harness_replay::answer::block(answers, sessions, profile, width) {
        crate::out::line(&l)?;
    }
    print_lines(sensitivity, format)
}

/// Lines of prose: broken at the terminal's width (continuations indented), or as they are in
/// Markdown (a blank line after them).
pub(crate) fn print_lines(lines: &[String], format: OutputFormat) -> Result<(), Error> {
    if format == OutputFormat::Md {
        for l in lines {
            crate::out::line(l)?;
            crate::out::line("")?;
        }
        return Ok(());
    }
    let width = crate::view::width();
    for l in lines {
        for w in harness_report::answer::wrap(l, width, 2) {
            crate::out::line(&w)?;
        }
    }
    Ok(())
}

/// A heading: `### ` in Markdown, broken to the width in a terminal.
pub(crate) fn print_heading(text: &str, format: OutputFormat) -> Result<(), Error> {
    match format {
        OutputFormat::Md => crate::out::line(&format!("### {text}\n")),
        _ => print_lines(&[text.to_string()], format),
    }
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
        harness_report::answer::replay_heading(profile)
    )));
    opening.push(Block::Lines(harness_report::answer::lines(answers)));
    opening.push(Block::Lines(sensitivity.to_vec()));
    let points = harness_replay::answer::points(answers);
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
pub(crate) fn print_frontier(
    answers: &[Answer],
    format: OutputFormat,
    view: ViewArgs,
) -> Result<(), Error> {
    let axes = harness_report::frontier::Axes::replay();
    let Some(t) = harness_report::frontier::table(&harness_replay::answer::points(answers), &axes)
    else {
        return Ok(());
    };
    print_heading(
        "The cost–loss frontier (cheapest first; ◆ on the frontier)",
        format,
    )?;
    match format {
        OutputFormat::Md => crate::out::line(&t.to_markdown())?,
        _ => crate::out::line(&view.render(&t, Kind::Plain))?,
    }
    print_lines(&[harness_report::frontier::LEGEND.to_string()], format)
}
