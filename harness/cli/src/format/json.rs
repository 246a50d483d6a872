//! `--format json` and `-o FILE.json`: the command's JSON document.

use super::{given, Document, Outputs, Renderer};
use crate::error::Error;

/// JSON.
#[derive(Debug)]
pub(super) struct Json;

impl Renderer for Json {
    fn name(&self) -> &'static str {
        "json"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["json"]
    }
    fn file_hint(&self) -> &'static str {
        ".json"
    }
    fn help(&self, outputs: &Outputs) -> Option<&'static str> {
        outputs.json
    }
    fn render(&self, doc: &dyn Document) -> Result<String, Error> {
        given(doc.json(), self)
    }
}
