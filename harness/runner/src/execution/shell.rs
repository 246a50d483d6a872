//! Every shell command of a cell (the agent's, a setup command, a check) under a cell's
//! [`ToolLimits`]: from the run's tool cache ([`crate::execution::tool_cache`]) when it has one,
//! else run for real (`execution::process`).

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::execution::process::{run_shell, ShellRun};
use crate::execution::sandbox::Sandbox;
use crate::execution::snapshot::{Known, Snapshot};
use crate::execution::tool_cache::{self, Source, ToolCache};

/// The shortest time limit of a shell check: a task's test suite may take longer than one
/// tool call of the agent.
pub const MIN_CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// Limits that apply to tool calls, the sandbox their shell commands run in, and the run's tool
/// cache.
#[derive(Debug, Clone)]
pub struct ToolLimits {
    /// Wall-clock limit of one `shell` call; on expiry its whole process group is killed.
    pub shell_timeout: Duration,
    /// Wall-clock limit of one shell check of a task (`--tool-timeout`, at least
    /// [`MIN_CHECK_TIMEOUT`]).
    pub check_timeout: Duration,
    /// Maximum size in bytes of a tool's output (shell, read_file, grep, list_files); longer
    /// output keeps its first and last halves with a note in between.
    pub output_cap: usize,
    /// Where shell commands run (bubblewrap when this machine has it, by default).
    pub sandbox: Sandbox,
    /// The run's cache of shell commands (`None`: every command runs).
    pub cache: Option<Arc<ToolCache>>,
    /// Commands never taken from the cache (a task's `cache: false` steps and commands).
    pub uncached: Arc<[String]>,
}

impl Default for ToolLimits {
    fn default() -> Self {
        ToolLimits {
            shell_timeout: Duration::from_secs(30),
            check_timeout: MIN_CHECK_TIMEOUT,
            output_cap: 50_000,
            sandbox: Sandbox::default(),
            cache: None,
            uncached: Arc::from(Vec::new()),
        }
    }
}

/// Runs a shell command of a cell (the agent's, a setup command, a check) in `root` with
/// `limits`' sandbox and output cap: from the run's tool cache when it has one and the command
/// is not marked `cache: false`, else for real. The workspace is as `known` says (what it does
/// not say is read); what the call left is returned as far as it is known (see [`Known`]).
pub(crate) async fn run_shell_known(
    root: &Path,
    command: &str,
    timeout: Duration,
    limits: &ToolLimits,
    known: Known,
) -> io::Result<(ShellRun, Source, Known)> {
    let before = match uses_cache(command, limits) {
        true => Some(known.snapshot(root)?),
        false => None,
    };
    run_shell_with(root, command, timeout, limits, before).await
}

/// Whether `command` is answered through the tool cache under `limits` (then a call takes a
/// snapshot of the workspace first).
fn uses_cache(command: &str, limits: &ToolLimits) -> bool {
    limits.cache.is_some() && !limits.uncached.iter().any(|u| u == command)
}

/// [`run_shell_known`] with the workspace's snapshot when the caller has just taken it; also
/// returns the work tree the call left when that is known (see [`Known`]).
pub(crate) async fn run_shell_with(
    root: &Path,
    command: &str,
    timeout: Duration,
    limits: &ToolLimits,
    before: Option<Snapshot>,
) -> io::Result<(ShellRun, Source, Known)> {
    let (cap, sandbox) = (limits.output_cap, &limits.sandbox);
    let fresh = || run_shell(root, command, timeout, cap, sandbox);
    let cache = match &limits.cache {
        Some(c) if uses_cache(command, limits) => c,
        _ => return Ok((fresh().await?, Source::Ran, Known::unknown())),
    };
    let before = match before {
        Some(b) => b,
        None => Snapshot::take(root)?,
    };
    if !before.exact {
        // A file too large to hash whole: the state does not determine the workspace.
        cache.count_unkeyed();
        return Ok((fresh().await?, Source::Ran, Known::unknown()));
    }
    let key = tool_cache::key(command, &before.state(), sandbox, timeout, cap);
    cache
        .run(root, &key, &before, || Snapshot::take(root), fresh)
        .await
}
