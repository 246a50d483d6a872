//! `--format html` and `-o FILE.html` (or `.htm`): one self-contained HTML page.

use super::{given, Document, Outputs, Renderer};
use crate::error::Error;

/// One self-contained HTML page.
#[derive(Debug)]
pub(super) struct Html;

impl Renderer for Html {
    fn name(&self) -> &'static str {
        "html"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["html", "htm"]
    }
    fn file_hint(&self) -> &'static str {
        ".html"
    }
    fn help(&self, outputs: &Outputs) -> Option<&'static str> {
        outputs.page
    }
    fn render(&self, doc: &dyn Document) -> Result<String, Error> {
        given(doc.page(), self)
    }
}
