//! `--format table`, the default, and `-o FILE.txt`: text for the terminal, tables fitted to its
//! width.

use harness_report::headline::Answer;
use harness_report::render::Table as Tbl;
use harness_report::view::Kind;

use super::{given, Document, Outputs, Renderer, Text};
use crate::error::Error;
use crate::view::ViewArgs;

/// Terminal tables.
#[derive(Debug)]
pub(super) struct Table;

impl Renderer for Table {
    fn name(&self) -> &'static str {
        "table"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["txt"]
    }
    fn file_hint(&self) -> &'static str {
        ".txt"
    }
    fn help(&self, outputs: &Outputs) -> Option<&'static str> {
        outputs.terminal
    }
    fn render(&self, doc: &dyn Document) -> Result<String, Error> {
        given(doc.terminal(), self)
    }
}

/// [`Text`] for the terminal, broken to `width`.
pub(crate) struct TerminalText {
    width: usize,
    out: String,
}

impl TerminalText {
    /// Text fitted to the terminal's width ([`crate::view::width`]).
    pub(crate) fn new() -> Box<TerminalText> {
        Box::new(TerminalText {
            width: crate::view::width(),
            out: String::new(),
        })
    }
}

impl Text for TerminalText {
    fn heading(&mut self, text: &str) {
        self.lines(&[text.to_string()]);
    }
    fn lines(&mut self, lines: &[String]) {
        for l in lines {
            for w in harness_report::headline::wrap(l, self.width, 2) {
                self.line(&w);
            }
        }
    }
    fn table(&mut self, t: &Tbl, kind: Kind, view: ViewArgs) {
        self.line(&view.render(t, kind));
    }
    fn titled_table(&mut self, title: &str, t: &Tbl) {
        self.line(&format!("{title}\n{}\n", t.to_terminal()));
    }
    fn verdict(&mut self, answers: &[Answer], sessions: &str, profile: &str) {
        for l in harness_replay::headline::block(answers, sessions, profile, self.width) {
            self.line(&l);
        }
    }
    fn gap(&mut self) {}
    fn line(&mut self, line: &str) {
        self.out.push_str(line);
        self.out.push('\n');
    }
    fn finish(self: Box<Self>) -> String {
        self.out
    }
}
