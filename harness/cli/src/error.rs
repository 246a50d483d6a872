//! The binary's one error type and its exit codes. Commands return `Result<Code, Error>`; only
//! `main` prints an error and turns it into a process exit code ([`exit_code`], through
//! [`code_of`], the one place an error is mapped to a code).
//!
//! | code | meaning |
//! |---|---|
//! | 0 | all good ([`Code::Ok`]) |
//! | 1 | foldbench itself failed: a file it could not write, the runtime ([`Error::Write`], [`Error::Stdout`], [`Error::Failed`], …) |
//! | 2 | bad usage or bad input: a flag, a spec, a matrix file, a run folder ([`Error::Usage`], [`Error::RefusedBy`], [`Error::Policy`], …) |
//! | 4 | no cell selected ([`Code::NoCells`]) |
//! | 100 | a cell ended in an infrastructure error, a cell failed under `--fail-on-failure`, a regression or missing cells under `compare --fail-on-regression`, cells in no shard (`merge`) ([`Code::Failed`]) |
//! | 130, 143 | `run`/`ab` stopped by SIGINT, SIGTERM (its workspaces removed first; `cli`) |
//!
//! An error that a library gave carries it, typed, as its [`std::error::Error::source`]. A
//! message says what failed and never repeats its cause's words; [`print()`] walks the chain once,
//! as nextest does:
//!
//! ```text
//! error: --sandbox bwrap: bubblewrap does not work here; install bubblewrap (Debian: apt install bubblewrap) or pass --sandbox auto
//! caused by: cannot run /usr/bin/bwrap
//! caused by: Permission denied (os error 13)
//! ```

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use harness_runner::run::RunError;
use harness_runner::MergeError;

/// A library's error, kept whole as a source: a typed error, or the words of a library function
/// that still says what is wrong in a `String` (boxed as an error of its own).
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

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

/// Why a command stopped. Each message says what failed and keeps its cause as the
/// [`std::error::Error::source`]; [`print()`] writes `error: ` and the message, then one
/// `caused by: ` line per cause.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Bad usage or bad input the command line found itself; the message says what and where
    /// (exit code 2).
    #[error("{0}")]
    Usage(String),
    /// Several problems, each already a whole line (`file:line:col: what`), after a header
    /// line; printed as they are (exit code 2).
    #[error("{}", .0.join("\n"))]
    Problems(Vec<String>),
    /// A policy text or an arm list refused (exit code 2), given in `context` (`--policy`).
    #[error("{context}")]
    Policy {
        /// Where it was given (a flag, its value).
        context: String,
        /// The refusal.
        #[source]
        source: harness_runner::arms::ArmError,
    },
    /// A policy text or an arm list refused, in the refusal's own words (exit code 2).
    #[error(transparent)]
    PolicyText(harness_runner::arms::ArmError),
    /// Recorded sessions, their filters or their labels refused (exit code 2).
    #[error(transparent)]
    Sessions(#[from] harness_runner::sessions::SessionsError),
    /// Policies a replay cannot start with (exit code 2).
    #[error(transparent)]
    Replay(#[from] harness_replay::ReplayError),
    /// A `--price` flag refused (exit code 2).
    #[error("--price")]
    Price(#[source] harness_core::prices::PriceError),
    /// A report's output or input refused (exit code 2).
    #[error(transparent)]
    Report(#[from] crate::report::ReportError),
    /// A file or folder the user named that cannot be read (exit code 2).
    #[error("cannot read {what}")]
    Read {
        /// What it is (`the matrix file foldbench.yaml`, a path).
        what: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A file foldbench could not write (exit code 1).
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Standard output could not be written (exit code 1).
    #[error("cannot write to standard output")]
    Stdout(#[source] io::Error),
    /// A document that did not serialize (exit code 1).
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A run the runner refused (exit code 2) or could not record (exit code 1).
    #[error(transparent)]
    Run(RunError),
    /// Shards that do not fit together (exit code 2), or a merge that could not be written
    /// (exit code 1).
    #[error(transparent)]
    Merge(#[from] MergeError),
    /// The user's input, refused by a library in its own words alone (exit code 2).
    #[error(transparent)]
    RefusedBy(Cause),
    /// A library failed at what it was asked (exit code 1): `context` says what, its error is
    /// the cause.
    #[error("{context}")]
    Failed {
        /// What failed (`cannot start the runtime`).
        context: String,
        /// The library's error.
        #[source]
        source: Cause,
    },
    /// A library failed at what it was asked, in its own words alone (exit code 1).
    #[error(transparent)]
    FailedBy(Cause),
}

impl Error {
    /// An [`Error::RefusedBy`]: the library's message is the whole message.
    pub fn refused(source: impl Into<Cause>) -> Error {
        Error::RefusedBy(source.into())
    }

    /// An [`Error::FailedBy`]: the library's message is the whole message.
    pub fn failed(source: impl Into<Cause>) -> Error {
        Error::FailedBy(source.into())
    }

    /// An [`Error::Failed`]: `context` says what failed.
    pub fn failed_in(context: impl Into<String>, source: impl Into<Cause>) -> Error {
        Error::Failed {
            context: context.into(),
            source: source.into(),
        }
    }

    /// An [`Error::Policy`] given in `context` ([`Error::PolicyText`] when `context` is empty).
    pub fn policy(
        context: impl Into<String>,
        source: impl Into<harness_runner::arms::ArmError>,
    ) -> Error {
        let context = context.into();
        if context.is_empty() {
            Error::PolicyText(source.into())
        } else {
            Error::Policy {
                context,
                source: source.into(),
            }
        }
    }
}

impl From<RunError> for Error {
    fn from(e: RunError) -> Error {
        Error::Run(e)
    }
}

impl From<harness_runner::plan::PlanError> for Error {
    /// A matrix that cannot be planned: its problems each on a line as [`problems`] prints
    /// them, any other refusal as the runner words it (exit code 2 either way).
    fn from(e: harness_runner::plan::PlanError) -> Error {
        match e {
            harness_runner::plan::PlanError::Problems { what, problems: p } => problems(&p, &what),
            e => Error::refused(e),
        }
    }
}

impl From<harness_runner::settings::SettingsError> for Error {
    /// Run settings that make no run (exit code 2).
    fn from(e: harness_runner::settings::SettingsError) -> Error {
        Error::refused(e)
    }
}

impl From<harness_runner::tasks::TaskPathError> for Error {
    /// Task arguments that name no spec (exit code 2), or a task folder foldbench cannot find
    /// or unpack (exit code 1).
    fn from(e: harness_runner::tasks::TaskPathError) -> Error {
        if e.is_usage() {
            Error::refused(e)
        } else {
            Error::failed(e)
        }
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

/// Process exit code 0.
pub const EXIT_OK: u8 = 0;
/// Process exit code of foldbench's own failures ([`Error::Write`], [`Error::Failed`] and the
/// like).
pub const EXIT_INTERNAL: u8 = 1;
/// Process exit code of bad usage and bad input ([`Error::Usage`], [`Error::Problems`] and
/// the like).
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
        Err(
            Error::Write { .. }
            | Error::Stdout(_)
            | Error::Json(_)
            | Error::Failed { .. }
            | Error::FailedBy(_),
        ) => EXIT_INTERNAL,
        Err(Error::Run(e)) if e.is_usage() => EXIT_USAGE,
        Err(Error::Merge(e)) if e.is_usage() => EXIT_USAGE,
        Err(Error::Run(_) | Error::Merge(_)) => EXIT_INTERNAL,
        Err(
            Error::Usage(_)
            | Error::Problems(_)
            | Error::Policy { .. }
            | Error::PolicyText(_)
            | Error::Sessions(_)
            | Error::Replay(_)
            | Error::Price(_)
            | Error::Report(_)
            | Error::Read { .. }
            | Error::RefusedBy(_),
        ) => EXIT_USAGE,
    }
}

/// The text [`print()`] writes for an error: `error: ` and its message, then `caused by: ` and
/// each cause down the chain, one to a line. [`Error::Problems`] is its lines as they are (each
/// says its own `file:line:col`; the last is the `error: N problems` line).
pub fn render(error: &Error) -> String {
    if let Error::Problems(lines) = error {
        return lines.join("\n");
    }
    let mut text = String::new();
    for (i, e) in harness_core::chain(error).enumerate() {
        if i > 0 {
            text.push('\n');
        }
        text.push_str(if i == 0 { "error: " } else { "caused by: " });
        text.push_str(&e.to_string());
    }
    text
}

/// Prints an error on stderr as [`render`] writes it (clap's own usage errors come as an empty
/// [`Error::Problems`]: clap has printed them).
pub fn print(error: &Error) {
    match error {
        Error::Problems(lines) if lines.is_empty() => {}
        e => eprintln!("{}", render(e)),
    }
}

/// The process exit code of a command's result, after printing its error to stderr.
pub fn exit_code(result: Result<Code, Error>) -> ExitCode {
    if let Err(e) = &result {
        print(e);
    }
    ExitCode::from(code_of(&result))
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;
    use std::sync::Arc;

    use harness_runner::execution::{ProbeError, SandboxError};
    use harness_runner::FileError;

    use super::*;

    #[test]
    fn errors_print_as_before_and_map_to_their_codes() {
        assert_eq!(render(&Error::Usage("bad flag".into())), "error: bad flag");
        assert_eq!(
            render(&Error::Problems(vec![
                "2 problems:".into(),
                "a.yaml:1:1: x".into()
            ])),
            "2 problems:\na.yaml:1:1: x"
        );
        let cases: Vec<(Result<Code, Error>, u8)> = vec![
            (Ok(Code::Ok), EXIT_OK),
            (Ok(Code::NoCells), EXIT_NO_CELLS),
            (Ok(Code::Failed), EXIT_FAILED),
            (Err(Error::Usage("flag".into())), EXIT_USAGE),
            (Err(Error::refused("no such task")), EXIT_USAGE),
            (Err(Error::failed("disk full")), EXIT_INTERNAL),
            (
                Err(Error::failed_in("cannot start", "disk full")),
                EXIT_INTERNAL,
            ),
            (
                Err(Error::Run(RunError::DelegateUnderAgent { arm: "x".into() })),
                EXIT_USAGE,
            ),
            (
                Err(Error::Run(RunError::Sync(io::Error::other("x")))),
                EXIT_INTERNAL,
            ),
            (
                Err(Error::Merge(MergeError::OutputInUse { out: "x".into() })),
                EXIT_USAGE,
            ),
            (
                Err(Error::Merge(MergeError::Io(FileError {
                    what: "write",
                    path: "x".into(),
                    source: io::Error::other("disk full"),
                }))),
                EXIT_INTERNAL,
            ),
        ];
        for (r, c) in cases {
            assert_eq!(code_of(&r), c, "{r:?}");
            assert_eq!(exit_code(r), ExitCode::from(c));
        }
    }

    #[test]
    fn a_three_level_chain_prints_once() {
        let e = Error::refused(SandboxError::Bwrap(ProbeError::Run {
            path: PathBuf::from("/usr/bin/bwrap"),
            source: Arc::new(io::Error::from(io::ErrorKind::PermissionDenied)),
        }));
        let text = render(&e);
        assert_eq!(
            text,
            "error: --sandbox bwrap: bubblewrap does not work here; install bubblewrap \
             (Debian: apt install bubblewrap) or pass --sandbox auto\n\
             caused by: cannot run /usr/bin/bwrap\n\
             caused by: permission denied"
        );
        let lines: Vec<&str> = text.lines().collect();
        let words: Vec<&str> = lines
            .iter()
            .map(|l| {
                l.trim_start_matches("error: ")
                    .trim_start_matches("caused by: ")
            })
            .collect();
        for (i, a) in words.iter().enumerate() {
            for (j, b) in words.iter().enumerate() {
                assert!(
                    i == j || !a.contains(b),
                    "line {i} repeats line {j}: {text}"
                );
            }
        }
        assert_eq!(harness_core::one_line(&e), words.join(": "));
        assert_eq!(code_of(&Err(e)), EXIT_USAGE);
    }

    #[test]
    fn a_librarys_error_is_the_source_and_the_message_says_what_failed() {
        let io = io::Error::new(io::ErrorKind::NotFound, "No such file or directory");
        let e = Error::Write {
            path: PathBuf::from("out/x.json"),
            source: io,
        };
        assert_eq!(
            render(&e),
            "error: cannot write out/x.json\ncaused by: No such file or directory"
        );
        let source = e.source().expect("the IO error is kept");
        assert_eq!(
            source.downcast_ref::<io::Error>().map(io::Error::kind),
            Some(io::ErrorKind::NotFound)
        );
        assert_eq!(code_of(&Err(e)), EXIT_INTERNAL);

        let policy = policies::parse_policy("nosuch").unwrap_err();
        let e = Error::policy("--policy", policy.clone());
        assert_eq!(render(&e), format!("error: --policy\ncaused by: {policy}"));
        assert!(e
            .source()
            .is_some_and(|s| s.to_string() == policy.to_string()));
        assert_eq!(code_of(&Err(e)), EXIT_USAGE);
        let e = Error::policy("", policy.clone());
        assert_eq!(render(&e), format!("error: {policy}"));

        let e = Error::refused("not found");
        assert_eq!(render(&e), "error: not found");
    }

    #[test]
    fn a_run_folders_file_system_error_is_kept_down_the_chain() {
        use harness_runner::RunDirError;
        let e = Error::Run(RunError::Dir(RunDirError::Io(FileError {
            what: "lock",
            path: PathBuf::from("out/run.lock"),
            source: io::Error::new(io::ErrorKind::PermissionDenied, "Permission denied"),
        })));
        assert_eq!(
            render(&e),
            "error: cannot lock out/run.lock\ncaused by: Permission denied"
        );
        let mut chain = Vec::new();
        let mut at: Option<&dyn std::error::Error> = e.source();
        while let Some(s) = at {
            chain.push(s);
            at = s.source();
        }
        assert!(
            chain.iter().any(|s| s
                .downcast_ref::<io::Error>()
                .is_some_and(|io| io.kind() == io::ErrorKind::PermissionDenied)),
            "{chain:?}"
        );
        assert_eq!(code_of(&Err(e)), EXIT_INTERNAL);
        let busy = Error::Run(RunError::Dir(RunDirError::Busy {
            root: PathBuf::from("out"),
            lock: PathBuf::from("out/run.lock"),
            holder: Some("42".into()),
        }));
        assert_eq!(
            render(&busy),
            "error: out is in use by another foldbench run (pid 42), which holds out/run.lock; \
             wait for it to end, or give another --out"
        );
        assert_eq!(code_of(&Err(busy)), EXIT_USAGE);
    }
}
