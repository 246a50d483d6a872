//! The sessions module's one error type: why recorded sessions or their labels could not be read,
//! or no session was left to replay.
//!
//! Each error's `Display` says what failed, printed after `error: `; a `source()` is the typed
//! cause (the IO error), which the command line prints on a `caused by: ` line of its own.

use std::io;
use std::path::PathBuf;

use super::history::Place;

/// Why the sessions (or the labels) of a command could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionsError {
    /// No path was given and none of the default places is a folder.
    #[error(
        "no session folder found: looked in {}. Pass session files or folders instead, e.g. `foldbench {command} path/to/sessions`, or set CLAUDE_CONFIG_DIR / CODEX_HOME",
        looked_in(.looked)
    )]
    NoFolder {
        /// The default places, none of them a folder.
        looked: Vec<Place>,
        /// The command, as its example names it (`replay`, `judge build --from`).
        command: String,
    },
    /// `--since` or `--until` is not a date `YYYY-MM-DD`.
    #[error("{flag} `{text}`: expected a date YYYY-MM-DD (UTC), e.g. 2025-07-01")]
    BadDate {
        /// The flag (`--since`, `--until`).
        flag: &'static str,
        /// Its value as given.
        text: String,
    },
    /// `--until` is before `--since`.
    #[error("--until {until} is before --since {since}")]
    UntilBeforeSince {
        /// `--since` as given.
        since: String,
        /// `--until` as given.
        until: String,
    },
    /// The format asked for is none the importers know.
    #[error("--input-format: {refused} or auto")]
    InputFormat {
        /// The importers' refusal (the message itself, not a cause).
        refused: harness_import::UnknownFormatName,
    },
    /// The paths given could not be walked.
    #[error("cannot read {}", names(.paths))]
    Unreadable {
        /// The paths, as given.
        paths: Vec<PathBuf>,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Nothing under the paths imported as a session.
    #[error(
        "no session found in {files} file{}{} under {}; expected {}",
        if *.files == 1 { "" } else { "s" },
        unreadable_note(*.unreadable),
        names(.paths),
        harness_import::EXPECTED
    )]
    NoSession {
        /// Files read.
        files: usize,
        /// Entries that could not be read (each named on standard error before).
        unreadable: usize,
        /// The paths, as given.
        paths: Vec<PathBuf>,
    },
    /// The filters kept no session.
    #[error("no session matches --since/--until/--project/--session as given")]
    NoMatch,
    /// A `--labels` path that cannot be read.
    #[error("cannot read labels {}", path.display())]
    Labels {
        /// The path, as given.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Labels files with problems (each printed on standard error before).
    #[error("{count} problem{} in the labels", if *.count == 1 { "" } else { "s" })]
    LabelProblems {
        /// How many.
        count: usize,
    },
}

/// `a, b`: the paths as given.
fn names(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where [`SessionsError::NoFolder`] looked.
fn looked_in(places: &[Place]) -> String {
    if places.is_empty() {
        return "nothing (HOME, CLAUDE_CONFIG_DIR and CODEX_HOME are unset)".to_string();
    }
    places
        .iter()
        .map(|p| format!("{} ({}, from {})", p.path.display(), p.agent, p.from))
        .collect::<Vec<_>>()
        .join(", ")
}

/// ` (2 entries could not be read, named above)`, or nothing.
fn unreadable_note(n: usize) -> String {
    match n {
        0 => String::new(),
        n => format!(
            " ({n} entr{} could not be read, named above)",
            if n == 1 { "y" } else { "ies" }
        ),
    }
}
