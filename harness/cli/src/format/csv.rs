//! `--format csv` and `-o FILE.csv`: the command's main table as CSV (RFC 4180).

use super::{given, Document, Outputs, Renderer};
use crate::error::Error;

/// CSV.
#[derive(Debug)]
pub(super) struct Csv;

impl Renderer for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["csv"]
    }
    fn file_hint(&self) -> &'static str {
        ".csv"
    }
    fn help(&self, outputs: &Outputs) -> Option<&'static str> {
        outputs.csv
    }
    fn render(&self, doc: &dyn Document) -> Result<String, Error> {
        given(doc.csv(), self)
    }
}
