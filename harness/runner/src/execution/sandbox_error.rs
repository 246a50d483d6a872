//! Why the sandbox a run asks for cannot be had here ([`SandboxError`]), and why bubblewrap does
//! not work on this machine ([`ProbeError`]): the errors of [`crate::execution::sandbox`].

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// Why the sandbox a run asks for cannot be had on this machine.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// `--sandbox bwrap`, and bubblewrap does not work here.
    #[error(
        "--sandbox bwrap: bubblewrap does not work here; install bubblewrap (Debian: apt install bubblewrap) \
         or pass --sandbox auto"
    )]
    Bwrap(#[source] ProbeError),
    /// `--sandbox auto` for a real model, whose commands must not run as plain `sh`, and
    /// bubblewrap does not work here.
    #[error(
        "--sandbox auto: bubblewrap does not work here, and a real model's shell commands would run as plain \
         `sh`, where /proc/$PPID/environ shows the API keys; install bubblewrap \
         (Debian: apt install bubblewrap), or pass --sandbox none to run without one \
         knowingly"
    )]
    RealModel(#[source] ProbeError),
}

/// Why bubblewrap does not work on this machine (the probe's finding, kept for the process).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// No `bwrap` on the `PATH`.
    #[error("`bwrap` is not on the PATH")]
    NotOnPath,
    /// `bwrap` could not be started.
    #[error("cannot run {}", path.display())]
    Run {
        /// The `bwrap` found.
        path: PathBuf,
        /// Why it did not start (shared: the finding is kept for the process).
        #[source]
        source: Arc<io::Error>,
    },
    /// The sandbox's commands keep capabilities or may gain privileges.
    #[error("{} leaves its commands privileges ({status})", path.display())]
    Privileged {
        /// The `bwrap` found.
        path: PathBuf,
        /// The lines of `/proc/self/status` that say so.
        status: String,
    },
    /// `bwrap` cannot create its namespaces here (a container without user namespaces).
    #[error("{} cannot create its namespaces here ({stderr})", path.display())]
    Namespaces {
        /// The `bwrap` found.
        path: PathBuf,
        /// What it printed.
        stderr: String,
    },
}
