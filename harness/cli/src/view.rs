//! `--view NAME` and the terminal's width: the terminal tables of `run`, `ab`, `report` and
//! `replay` show their view's columns, fitted to the terminal (`COLUMNS` when set, else the
//! width of the terminal standard output is, else 120), at most 120 columns
//! (harness_report::view, docs/report.md "Terminal views and widths").

use harness_report::render::Table;
use harness_report::view::{self, Kind, View, MAX_WIDTH};

/// The views, as clap parses them (an unknown one is a usage error, exit 2, listing them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ViewName {
    /// The columns that decide.
    #[default]
    Default,
    /// What each policy loses: lost facts, re-runs, hidden references, premature folds.
    Loss,
    /// Request sizes, cache and cost.
    Cache,
    /// The essay's figures: median and last request, re-runs, lost facts.
    Essay,
    /// Every column, never cut to the terminal's width.
    All,
}

impl From<ViewName> for View {
    fn from(v: ViewName) -> View {
        match v {
            ViewName::Default => View::Default,
            ViewName::Loss => View::Loss,
            ViewName::Cache => View::Cache,
            ViewName::Essay => View::Essay,
            ViewName::All => View::All,
        }
    }
}

/// The `--view` flag.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct ViewArgs {
    /// The terminal table's columns: default (the columns that decide, fitted to the terminal,
    /// at most 120 wide), loss, cache, essay, or all (every column). Markdown, CSV, JSON and
    /// HTML always have every column.
    #[arg(long, value_enum, default_value_t = ViewName::Default)]
    pub view: ViewName,
}

impl ViewArgs {
    /// `t` (a table of `kind`) for the terminal in this view.
    pub fn render(&self, t: &Table, kind: Kind) -> String {
        view::terminal(t, kind, self.view.into(), width())
    }
}

/// The width the tables fit: `COLUMNS` when it is a number, else the terminal's, else 120;
/// never more than 120.
pub fn width() -> usize {
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0);
    columns
        .or_else(terminal_columns)
        .unwrap_or(MAX_WIDTH)
        .min(MAX_WIDTH)
}

/// The columns of the terminal standard output is, when it is one.
#[allow(unsafe_code)]
fn terminal_columns() -> Option<usize> {
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` through the pointer, which points at one; on a
    // descriptor that is not a terminal it fails and writes nothing.
    let rc = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) };
    (rc == 0 && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
}
