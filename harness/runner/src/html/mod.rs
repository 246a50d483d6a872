//! `-o FILE.html`: the pages of `report`, `replay` and `judge run`. This module reads what a page
//! needs (a run folder's cell files) and builds a [`Page`]; `harness_report::html` renders it —
//! one self-contained file with inline style and script, no network, the same bytes for the same
//! records.

mod judge;
mod replay;
mod run;

use std::path::Path;

use harness_report::html::{self, Page};

pub use judge::judge_page;
pub use replay::replay_page;
pub use run::run_page;

/// Whether a path asks for an HTML page (`.html`, `.htm`).
pub fn is_html(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"))
}

/// Renders the page and writes it to `path` (its folder created); says where on stderr.
pub fn write(path: &Path, page: &Page) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(path, html::render(page))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}
