//! The binary's one error type and its exit codes. Commands return `Result<Code, Error>`; only
//! `main` prints an error and turns it into a process exit code.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | all good ([`Code::Ok`]) |
//! | 1 | foldbench itself failed: a file it could not write, the runtime ([`Error::Internal`]) |
//! | 2 | bad usage or bad input: a flag, a spec, a matrix file, a run folder ([`Error::Usage`]) |
//! | 4 | no cell selected ([`Code::NoCells`]) |
//! | 100 | a cell ended in an infrastructure error, a cell failed under `--fail-on-failure`, a regression or missing cells under `compare --fail-on-regression`, cells in no shard (`merge`) ([`Code::Failed`]) |
//! | 130, 143 | `run`/`ab` stopped by SIGINT, SIGTERM (its workspaces removed first; `cli`) |

use std::fmt;
use std::process::ExitCode;

/// How a command that ran to its end went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Everything passed.
    Ok,
    /// The selection left no cell to run.
    NoCells,
    /// A cell ended in an infrastructure error (or failed its checks under
    /// `--fail-on-failure`), or `compare --fail-on-regression` found a regression or missing
    /// cells.
    Failed,
    /// The exit code of a program foldbench ran in its place (`agent-bridge` passes on the
    /// agent's).
    Exit(u8),
}

/// Why a command stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Bad usage or bad input; the message says what and where (exit code 2).
    Usage(String),
    /// foldbench itself failed (exit code 1).
    Internal(String),
    /// Several problems, each already a whole line (`file:line:col: what`), after a header
    /// line; printed as they are (exit code 2).
    Problems(Vec<String>),
}

impl Error {
    /// An [`Error::Usage`] from anything printable.
    pub fn usage(e: impl fmt::Display) -> Error {
        Error::Usage(e.to_string())
    }

    /// An [`Error::Internal`] from anything printable.
    pub fn internal(e: impl fmt::Display) -> Error {
        Error::Internal(e.to_string())
    }
}

/// Every problem of an input on its own line, then `error: N problems in WHAT`.
pub fn problems(problems: &[impl fmt::Display], what: &str) -> Error {
    let mut lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
    lines.push(format!(
        "error: {} problem{} in {what}",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    ));
    Error::Problems(lines)
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::Internal(m) => write!(f, "error: {m}"),
            Error::Problems(lines) => write!(f, "{}", lines.join("\n")),
        }
    }
}

/// Process exit code 0.
pub const EXIT_OK: u8 = 0;
/// Process exit code of [`Error::Internal`].
pub const EXIT_INTERNAL: u8 = 1;
/// Process exit code of [`Error::Usage`] and [`Error::Problems`].
pub const EXIT_USAGE: u8 = 2;
/// Process exit code of [`Code::NoCells`].
pub const EXIT_NO_CELLS: u8 = 4;
/// Process exit code of [`Code::Failed`].
pub const EXIT_FAILED: u8 = 100;

/// The exit code of a command's result.
pub fn code_of(result: &Result<Code, Error>) -> u8 {
    match result {
        Ok(Code::Ok) => EXIT_OK,
        Ok(Code::NoCells) => EXIT_NO_CELLS,
        Ok(Code::Failed) => EXIT_FAILED,
        Ok(Code::Exit(c)) => *c,
        Err(Error::Internal(_)) => EXIT_INTERNAL,
        Err(Error::Usage(_) | Error::Problems(_)) => EXIT_USAGE,
    }
}

/// The process exit code of a command's result, after printing its error to stderr (clap's
/// own usage errors come as an empty [`Error::Problems`]: clap has printed them).
pub fn exit_code(result: Result<Code, Error>) -> ExitCode {
    match &result {
        Err(Error::Problems(lines)) if lines.is_empty() => {}
        Err(e) => eprintln!("{e}"),
        Ok(_) => {}
    }
    ExitCode::from(code_of(&result))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_print_as_before_and_map_to_their_codes() {
        assert_eq!(Error::usage("bad flag").to_string(), "error: bad flag");
        assert_eq!(
            Error::Problems(vec!["2 problems:".into(), "a.yaml:1:1: x".into()]).to_string(),
            "2 problems:\na.yaml:1:1: x"
        );
        for (r, c) in [
            (Ok(Code::Ok), EXIT_OK),
            (Ok(Code::NoCells), EXIT_NO_CELLS),
            (Ok(Code::Failed), EXIT_FAILED),
            (Err(Error::internal("disk")), EXIT_INTERNAL),
            (Err(Error::usage("flag")), EXIT_USAGE),
        ] {
            assert_eq!(exit_code(r), ExitCode::from(c));
        }
    }
}
