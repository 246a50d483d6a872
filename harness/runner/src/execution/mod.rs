//! # Execution: where a cell's commands run
//!
//! Everything between a cell and the operating system: the workspace a cell works in, the
//! sandbox its shell commands run in, the processes a call leaves behind, and the run's cache
//! of shell results. Nothing here knows about tools, models or policies; the [`crate::tools`]
//! module and the session loop ([`crate::cell`]) stand on top of it.
//!
//! - `workspace`: a fresh temp git repo per cell (tempfile + git2), fingerprints and diffs
//!   (which never read the workspace's own `.git`); made from a task's prepared `template`
//!   (once per process), through the libgit2 calls of `git` that keep an agent's planted files
//!   from steering the read.
//! - `sandbox`: bubblewrap (or a plain `sh`) with an allow-listed environment, for every
//!   shell command of a cell; `reap`: ending a call's processes, `setsid` descendants
//!   included, where there is no PID namespace to end.
//! - `tool_cache`: the run's cache of shell results with their file changes, keyed by
//!   `snapshot`s of the workspace.
//! - `beneath`: files foldbench itself writes into a workspace, never through a link the
//!   agent planted.
pub(crate) mod beneath;
mod dirs;
mod git;
pub(crate) mod output;
pub(crate) mod process;
pub(crate) mod reap;
pub use reap::end_all_calls;
mod repo;
pub(crate) mod sandbox;
pub use sandbox::{ProbeError, Sandbox, SandboxError, SandboxMode, UnknownSandbox, Unseen};
mod sandbox_error;
pub(crate) mod shell;
pub(crate) mod snapshot;
mod template;
pub(crate) mod tool_cache;
pub use tool_cache::{Stats, ToolCache};
pub(crate) mod workspace;
pub use workspace::{close_and_sweep_own, workspaces_dir, Workspace, WorkspaceError};
