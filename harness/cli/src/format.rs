//! The output formats of the commands that print tables and reports — `report`, `replay`,
//! `analyze`, `judge build`, `judge run`, `compare` — as one type, [`OutputFormat`], and per
//! command the formats its `--format` takes, each with the line its `--help` shows
//! ([`Choices`]: [`REPORT`], [`REPLAY`], [`JUDGE`], [`COMPARE`]). A value a command does not
//! take is refused by clap with its own message, which lists the ones it does and suggests the
//! nearest:
//!
//! ```text
//! error: invalid value 'html' for '--format <FORMAT>'
//!   [possible values: table, md, csv, json]
//! ```
//!
//! A new format is a variant here and a row in the lists of the commands that print it.

use std::fmt;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

/// A format a command prints in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Tables for the terminal.
    Table,
    /// Markdown.
    Md,
    /// CSV.
    Csv,
    /// JSON.
    Json,
    /// JUnit XML.
    Junit,
    /// An SVG chart.
    Svg,
    /// One self-contained HTML page.
    Html,
}

impl OutputFormat {
    /// The word `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::Table => "table",
            OutputFormat::Md => "md",
            OutputFormat::Csv => "csv",
            OutputFormat::Json => "json",
            OutputFormat::Junit => "junit",
            OutputFormat::Svg => "svg",
            OutputFormat::Html => "html",
        }
    }

    /// The format of a report file by its extension, as written (`report -o FILE`, `run -o
    /// FILE`): `.txt`, `.md` or `.markdown`, `.csv`, `.json`, `.xml` (JUnit), `.svg`, `.html` or
    /// `.htm`.
    pub fn of_extension(ext: &str) -> Option<OutputFormat> {
        Some(match ext {
            "md" | "markdown" => OutputFormat::Md,
            "csv" => OutputFormat::Csv,
            "json" => OutputFormat::Json,
            "xml" => OutputFormat::Junit,
            "svg" => OutputFormat::Svg,
            "txt" => OutputFormat::Table,
            "html" | "htm" => OutputFormat::Html,
            _ => return None,
        })
    }
}

impl fmt::Display for OutputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The formats one command's `--format` takes, in the order its help lists them, each with the
/// line the help shows.
pub type Choices = &'static [(OutputFormat, &'static str)];

/// `report --format`.
pub const REPORT: Choices = &[
    (OutputFormat::Table, "A terminal table"),
    (OutputFormat::Md, "Markdown (a CI job summary)"),
    (OutputFormat::Csv, "CSV"),
    (OutputFormat::Json, "JSON"),
    (OutputFormat::Junit, "JUnit XML, one test case per cell"),
    (OutputFormat::Svg, "An SVG chart (see `--chart`)"),
    (
        OutputFormat::Html,
        "One self-contained HTML page: the tables, a chart per task, model and seed with every arm, drill-downs to turns, folds and results (`harness_report::html`)",
    ),
];

/// `replay --format` and `analyze --format`.
pub const REPLAY: Choices = &[
    (OutputFormat::Table, "Terminal tables"),
    (OutputFormat::Md, "Markdown (for a CI job summary)"),
    (OutputFormat::Csv, "CSV: the main table only"),
    (OutputFormat::Json, "Everything as one JSON document"),
];

/// `judge build --format` and `judge run --format`.
pub const JUDGE: Choices = &[
    (OutputFormat::Table, "Terminal tables"),
    (OutputFormat::Md, "GitHub Markdown"),
    (
        OutputFormat::Csv,
        "CSV (the scores table only, for `run`; the filter table for `build`)",
    ),
    (OutputFormat::Json, "JSON"),
];

/// `compare --format`.
pub const COMPARE: Choices = &[
    (OutputFormat::Table, "A terminal table and notes"),
    (OutputFormat::Md, "Markdown (a CI job summary)"),
    (OutputFormat::Json, "JSON"),
];

/// The clap value parser of a `--format` that takes `choices`
/// (`#[arg(value_parser = format::parser(format::REPLAY))]`).
pub fn parser(choices: Choices) -> FormatParser {
    FormatParser(choices)
}

/// A `--format` flag's parser: the words of its [`Choices`], each with its help, and clap's own
/// refusal of any other word.
#[derive(Debug, Clone, Copy)]
pub struct FormatParser(Choices);

impl FormatParser {
    fn values(&self) -> impl Iterator<Item = PossibleValue> + '_ {
        self.0
            .iter()
            .map(|(f, help)| PossibleValue::new(f.name()).help(*help))
    }
}

impl TypedValueParser for FormatParser {
    type Value = OutputFormat;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<OutputFormat, clap::Error> {
        // The words' parser refuses any other word as clap refuses a value of an enum.
        let name = PossibleValuesParser::new(self.values()).parse_ref(cmd, arg, value)?;
        self.0
            .iter()
            .map(|(f, _)| *f)
            .find(|f| f.name() == name)
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidValue).with_cmd(cmd))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.values()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_command_lists_a_format_once_and_the_report_extensions_pick_theirs() {
        for choices in [REPORT, REPLAY, JUDGE, COMPARE] {
            for (f, _) in choices {
                assert_eq!(choices.iter().filter(|(g, _)| g == f).count(), 1, "{f}");
            }
            assert_eq!(choices[0].0, OutputFormat::Table, "the default comes first");
        }
        assert_eq!(OutputFormat::of_extension("xml"), Some(OutputFormat::Junit));
        assert_eq!(OutputFormat::of_extension("htm"), Some(OutputFormat::Html));
        assert_eq!(OutputFormat::of_extension("pdf"), None);
    }

    #[test]
    fn a_flag_takes_its_choices_and_refuses_the_others_listing_them() {
        let cmd = clap::Command::new("t").arg(
            clap::Arg::new("format")
                .long("format")
                .value_parser(parser(COMPARE)),
        );
        let m = cmd
            .clone()
            .try_get_matches_from(["t", "--format", "md"])
            .unwrap();
        assert_eq!(m.get_one::<OutputFormat>("format"), Some(&OutputFormat::Md));
        let e = cmd
            .try_get_matches_from(["t", "--format", "csv"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("invalid value 'csv' for '--format <format>'")
                && e.contains("[possible values: table, md, json]"),
            "{e}"
        );
    }
}
