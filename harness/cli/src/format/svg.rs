//! `--format svg` and `-o FILE.svg`: an SVG chart (`report --chart`).

use super::{given, Document, Outputs, Renderer};
use crate::error::Error;

/// An SVG chart.
#[derive(Debug)]
pub(super) struct Svg;

impl Renderer for Svg {
    fn name(&self) -> &'static str {
        "svg"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["svg"]
    }
    fn file_hint(&self) -> &'static str {
        ".svg"
    }
    fn help(&self, outputs: &Outputs) -> Option<&'static str> {
        outputs.chart
    }
    fn render(&self, doc: &dyn Document) -> Result<String, Error> {
        given(doc.chart(), self)
    }
}
