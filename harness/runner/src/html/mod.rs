//! `-o FILE.html`: the page of `report` and the writing of every page (the page of `judge run`
//! is built by [`crate::judge`], the page of `replay` by `harness_replay::replay_page`: neither reads a
//! run folder). This module reads what a page needs (a run folder's cell files) and builds a [`Page`]; `harness_report::html` renders it —
//! one self-contained file with inline style and script, no network, the same bytes for the same
//! records.

mod run;

use std::path::Path;

use harness_report::html::{self, Page};

pub use run::run_page;

/// Why a page could not be built or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HtmlError {
    /// A cell file of the run folder does not read.
    #[error("the run folder is damaged — run the cell again (resume) or leave out -o *.html")]
    Damaged(#[source] crate::results::ReadError),
    /// The page cannot be written.
    #[error(transparent)]
    Write(#[from] crate::file_error::FileError),
}

/// Whether a path asks for an HTML page (`.html`, `.htm`).
pub fn is_html(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"))
}

/// Renders the page and writes it to `path` whole or not at all ([`crate::atomic`]; its folder
/// created); says where on stderr.
pub fn write(path: &Path, page: &Page) -> Result<(), HtmlError> {
    crate::atomic::write(path, html::render(page).as_bytes()).map_err(|source| {
        HtmlError::Write(crate::file_error::FileError::on("write", path)(source))
    })?;
    crate::progress::say(&format!("wrote {}", path.display()));
    Ok(())
}
