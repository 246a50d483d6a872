//! `--format junit` and `-o FILE.xml`: JUnit XML, one test case per cell (`report`).

use super::{given, Document, Outputs, Renderer};
use crate::error::Error;

/// JUnit XML.
#[derive(Debug)]
pub(super) struct Junit;

impl Renderer for Junit {
    fn name(&self) -> &'static str {
        "junit"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["xml"]
    }
    fn file_hint(&self) -> &'static str {
        ".xml (JUnit)"
    }
    fn help(&self, outputs: &Outputs) -> Option<&'static str> {
        outputs.junit
    }
    fn render(&self, doc: &dyn Document) -> Result<String, Error> {
        given(doc.junit(), self)
    }
}
