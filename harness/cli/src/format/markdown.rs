//! `--format md` and `-o FILE.md`: Markdown (a CI job summary).

use harness_report::headline::Answer;
use harness_report::render::Table;
use harness_report::view::Kind;

use super::{given, Document, Outputs, Renderer, Text};
use crate::error::Error;
use crate::view::ViewArgs;

/// Markdown.
#[derive(Debug)]
pub(super) struct Markdown;

impl Renderer for Markdown {
    fn name(&self) -> &'static str {
        "md"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["md", "markdown"]
    }
    fn file_hint(&self) -> &'static str {
        ".md"
    }
    fn help(&self, outputs: &Outputs) -> Option<&'static str> {
        outputs.markdown
    }
    fn render(&self, doc: &dyn Document) -> Result<String, Error> {
        given(doc.markdown(), self)
    }
}

/// [`Text`] in Markdown.
#[derive(Default)]
pub(crate) struct MarkdownText {
    out: String,
}

impl MarkdownText {
    /// Empty Markdown.
    pub(crate) fn new() -> Box<MarkdownText> {
        Box::default()
    }
}

impl Text for MarkdownText {
    fn heading(&mut self, text: &str) {
        self.line(&format!("### {text}\n"));
    }
    fn lines(&mut self, lines: &[String]) {
        for l in lines {
            self.line(l);
            self.line("");
        }
    }
    fn table(&mut self, t: &Table, _: Kind, _: ViewArgs) {
        self.line(&t.to_markdown());
    }
    fn titled_table(&mut self, title: &str, t: &Table) {
        self.line(&format!("### {title}\n\n{}", t.to_markdown()));
    }
    fn verdict(&mut self, answers: &[Answer], sessions: &str, profile: &str) {
        self.line(&format!(
            "### {} ({sessions})\n",
            harness_report::headline::replay_heading(profile),
        ));
        for l in harness_report::headline::lines(answers) {
            self.line(&format!("- {l}"));
        }
        self.line("");
    }
    fn gap(&mut self) {
        self.line("");
    }
    fn line(&mut self, line: &str) {
        self.out.push_str(line);
        self.out.push('\n');
    }
    fn finish(self: Box<Self>) -> String {
        self.out
    }
}
