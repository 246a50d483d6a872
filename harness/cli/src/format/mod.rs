//! The output formats of the commands that print tables and reports — `report`, `replay`,
//! `analyze`, `judge build`, `judge run`, `compare` — one [`Renderer`] each, listed in
//! [`FORMATS`].
//!
//! A command builds its output once as a [`Document`] (its text for the terminal and Markdown,
//! its CSV table, its JSON, …) and declares which of these it gives in its [`Outputs`], beside
//! the document (`report::OUTPUTS`, `replay::OUTPUTS`, `judge::OUTPUTS`, `compare::OUTPUTS`).
//! A renderer takes the form it prints from the document. The `--format` words, their help
//! lines and the `-o FILE` extensions are made from [`FORMATS`] ([`parser`], [`for_path`]); a
//! value a command does not take is refused by clap with its own message, which lists the ones
//! it does and suggests the nearest:
//!
//! ```text
//! error: invalid value 'html' for '--format <FORMAT>'
//!   [possible values: table, md, csv, json]
//! ```
//!
//! A new format is one renderer module here and one line in [`FORMATS`] (ARCHITECTURE.md has
//! a worked example).

mod csv;
mod html;
mod json;
mod junit;
mod markdown;
mod svg;
mod table;

use std::path::Path;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

use crate::error::Error;

pub(crate) use markdown::MarkdownText;
pub(crate) use table::TerminalText;

/// One output format: its `--format` word, its file extensions, the line its help shows for a
/// command, and how it prints a command's [`Document`]. No method has a default, so a format
/// that leaves one out does not compile.
pub trait Renderer: Sync + std::fmt::Debug {
    /// The word `--format` takes (`table`, `md`, …).
    fn name(&self) -> &'static str;
    /// The extensions of `-o FILE` that pick it, lower case (matched in any case); the first is
    /// the one error messages name.
    fn extensions(&self) -> &'static [&'static str];
    /// How error messages name its extension (`.xml (JUnit)`).
    fn file_hint(&self) -> &'static str;
    /// Its help line for a command that gives `outputs`; `None` when the command cannot print
    /// it (its `--format` then does not offer it).
    fn help(&self, outputs: &Outputs) -> Option<&'static str>;
    /// `doc` in this format: the bytes to print or write.
    fn render(&self, doc: &dyn Document) -> Result<String, Error>;
}

/// Every output format, in the order `--format`'s help lists them (the first, `table`, is the
/// default).
pub static FORMATS: &[&'static dyn Renderer] = &[
    &table::Table,
    &markdown::Markdown,
    &csv::Csv,
    &json::Json,
    &junit::Junit,
    &svg::Svg,
    &html::Html,
];

/// A format as a flag holds it.
pub type Format = &'static dyn Renderer;

/// The format `--format` defaults to: terminal tables.
pub fn default() -> Format {
    FORMATS[0]
}

/// What a command can print, each with the help line its `--format` shows (`None`: it cannot).
#[derive(Debug, Clone, Copy, Default)]
pub struct Outputs {
    /// Text for the terminal.
    pub terminal: Option<&'static str>,
    /// Markdown.
    pub markdown: Option<&'static str>,
    /// A CSV table.
    pub csv: Option<&'static str>,
    /// A JSON document.
    pub json: Option<&'static str>,
    /// JUnit XML.
    pub junit: Option<&'static str>,
    /// An SVG chart.
    pub chart: Option<&'static str>,
    /// One self-contained HTML page.
    pub page: Option<&'static str>,
}

/// One form of a command's output: `None` when the command does not give it, else the bytes to
/// print or the error that stopped them.
pub type Form = Option<Result<String, Error>>;

/// What a command prints, in no format yet: one method per form, each `None` when the command
/// does not give it (and says so in its [`Outputs`]).
pub trait Document {
    /// Text for the terminal (tables fitted to its width).
    fn terminal(&self) -> Form;
    /// Markdown.
    fn markdown(&self) -> Form;
    /// The CSV table.
    fn csv(&self) -> Form;
    /// The JSON document.
    fn json(&self) -> Form;
    /// JUnit XML.
    fn junit(&self) -> Form;
    /// An SVG chart.
    fn chart(&self) -> Form;
    /// One self-contained HTML page.
    fn page(&self) -> Form;
}

/// `form` of a document, or the refusal of a format the command does not print (its parser
/// does not offer it, so this is reached only through `-o FILE` of a command that filters the
/// extensions itself).
fn given(form: Form, format: &dyn Renderer) -> Result<String, Error> {
    form.unwrap_or_else(|| {
        Err(Error::Usage(format!(
            "this command does not print {}",
            format.name()
        )))
    })
}

/// The format a file's extension asks for, in any case, among those `outputs` offers.
pub fn for_path(p: &Path, outputs: &Outputs) -> Option<Format> {
    let ext = p.extension()?.to_str()?.to_ascii_lowercase();
    FORMATS
        .iter()
        .copied()
        .find(|f| f.help(outputs).is_some() && f.extensions().contains(&ext.as_str()))
}

/// The extensions `-o FILE` takes for a command giving `outputs`, as error messages list them:
/// `.md, .json or .txt` (the terminal table's `.txt` last, as the plain-text fallback).
pub fn extension_hints(outputs: &Outputs) -> String {
    let mut hints: Vec<&str> = FORMATS
        .iter()
        .filter(|f| f.help(outputs).is_some())
        .map(|f| f.file_hint())
        .collect();
    hints.rotate_left(1);
    match hints.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => hints.join(""),
    }
}

/// The clap value parser of a `--format` for a command giving `outputs`
/// (`#[arg(value_parser = format::parser(&OUTPUTS))]`).
pub fn parser(outputs: &'static Outputs) -> FormatParser {
    FormatParser(outputs)
}

/// A `--format` flag's parser: the words of the formats a command gives, each with its help,
/// and clap's own refusal of any other word.
#[derive(Debug, Clone, Copy)]
pub struct FormatParser(&'static Outputs);

impl FormatParser {
    fn offered(&self) -> impl Iterator<Item = (Format, &'static str)> + '_ {
        FORMATS
            .iter()
            .filter_map(|f| f.help(self.0).map(|help| (*f, help)))
    }

    fn values(&self) -> impl Iterator<Item = PossibleValue> + '_ {
        self.offered()
            .map(|(f, help)| PossibleValue::new(f.name()).help(help))
    }
}

impl TypedValueParser for FormatParser {
    type Value = Format;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Format, clap::Error> {
        // The words' parser refuses any other word as clap refuses a value of an enum.
        let name = PossibleValuesParser::new(self.values()).parse_ref(cmd, arg, value)?;
        self.offered()
            .map(|(f, _)| f)
            .find(|f| f.name() == name)
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidValue).with_cmd(cmd))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.values()))
    }
}

/// Readable text a command writes once for both the terminal ([`TerminalText`]) and Markdown
/// ([`MarkdownText`]): headings, prose, tables. Each method appends to the text.
pub trait Text {
    /// A heading: `### ` in Markdown, broken to the width in a terminal.
    fn heading(&mut self, text: &str);
    /// Lines of prose: broken at the terminal's width (continuations indented), or as they are
    /// in Markdown (a blank line after each).
    fn lines(&mut self, lines: &[String]);
    /// A table of `kind`, in `view`'s columns in a terminal, every column in Markdown.
    fn table(
        &mut self,
        t: &harness_report::render::Table,
        kind: harness_report::view::Kind,
        view: crate::view::ViewArgs,
    );
    /// A table under a title of its own line (`### ` in Markdown), every column.
    fn titled_table(&mut self, title: &str, t: &harness_report::render::Table);
    /// A replay's verdict: its heading and one line per policy, broken to the terminal's width
    /// or a Markdown list.
    fn verdict(
        &mut self,
        answers: &[harness_report::headline::Answer],
        sessions: &str,
        profile: &str,
    );
    /// A blank line in Markdown between blocks that the terminal runs together.
    fn gap(&mut self);
    /// One line as it is.
    fn line(&mut self, line: &str);
    /// The text written.
    fn finish(self: Box<Self>) -> String;
}

#[cfg(test)]
mod tests;
