//! The `shell` tool and every shell command of a cell: the sandbox, a process group, the time
//! limit, the tool cache.

use super::*;
use crate::execution::snapshot::Snapshot;

pub(super) async fn shell(
    ws_root: &Path,
    a: &Args<'_>,
    limits: &ToolLimits,
    before: Option<Snapshot>,
) -> ToolOutput {
    let command = match a.req_str("command") {
        Ok(c) => c,
        Err(e) => return ToolOutput::err(e, None),
    };
    match run_shell_with(ws_root, command, limits.shell_timeout, limits, before).await {
        Ok((run, source)) => ToolOutput {
            text: run.render(limits.shell_timeout),
            is_error: run.timed_out,
            target: None,
            cached: source == Source::Hit,
        },
        Err(e) => ToolOutput::err(format!("error: could not start `sh`: {e}"), None),
    }
}

/// Runs a shell command of a cell (the agent's, a setup command, a check) in `root` with
/// `limits`' sandbox and output cap: from the run's tool cache when it has one and the command
/// is not marked `cache: false`, else for real.
pub(crate) async fn run_shell_for(
    root: &Path,
    command: &str,
    timeout: Duration,
    limits: &ToolLimits,
) -> io::Result<(ShellRun, Source)> {
    run_shell_with(root, command, timeout, limits, None).await
}

/// Whether `command` is answered through the tool cache under `limits` (then a call takes a
/// snapshot of the workspace first).
fn uses_cache(command: &str, limits: &ToolLimits) -> bool {
    limits.cache.is_some() && !limits.uncached.iter().any(|u| u == command)
}

/// [`run_shell_for`] with the workspace's snapshot when the caller has just taken it.
async fn run_shell_with(
    root: &Path,
    command: &str,
    timeout: Duration,
    limits: &ToolLimits,
    before: Option<Snapshot>,
) -> io::Result<(ShellRun, Source)> {
    let (cap, sandbox) = (limits.output_cap, &limits.sandbox);
    let fresh = || run_shell(root, command, timeout, cap, sandbox);
    let cache = match &limits.cache {
        Some(c) if uses_cache(command, limits) => c,
        _ => return Ok((fresh().await?, Source::Ran)),
    };
    let before = match before {
        Some(b) => b,
        None => Snapshot::take(root)?,
    };
    if !before.exact {
        // A file too large to hash whole: the state does not determine the workspace.
        cache.count_unkeyed();
        return Ok((fresh().await?, Source::Ran));
    }
    let key = tool_cache::key(command, &before.state(), sandbox, timeout, cap);
    cache
        .run(root, &key, &before, || Snapshot::take(root), fresh)
        .await
}

/// What one shell run produced.
#[derive(Debug)]
pub(crate) struct ShellRun {
    /// stdout and stderr merged, capped.
    pub output: String,
    /// The exit status of `sh`, if it was collected.
    pub status: Option<ExitStatus>,
    /// Whether the timeout expired and the process group was killed.
    pub timed_out: bool,
}

impl ShellRun {
    /// The text the model sees: the output plus the exit-code or timeout note.
    pub fn render(&self, timeout: Duration) -> String {
        let mut text = self.output.clone();
        if self.timed_out {
            text.push_str(&format!(
                "\n[killed: timed out after {}s]",
                timeout.as_secs_f64()
            ));
        } else if let Some(status) = self.status {
            if let Some(code) = status.code() {
                if code != 0 {
                    text.push_str(&format!("\n[exit code: {code}]"));
                }
            } else if let Some(sig) = status.signal() {
                text.push_str(&format!("\n[killed by signal {sig}]"));
            }
        }
        text
    }

    /// Whether the command ran to the end with exit code 0.
    pub fn success(&self) -> bool {
        !self.timed_out && self.status.is_some_and(|s| s.success())
    }
}

/// Runs `command` with `sh -c` in `root`, in its own process group with the sandbox environment,
/// stderr merged into stdout. Returns when `sh` exited and its output is closed, or at the
/// timeout; either way the whole process group is killed afterwards, so background children do
/// not outlive the call (children that keep the output open get [`EXIT_GRACE`] after `sh` exits).
pub(crate) async fn run_shell(
    root: &Path,
    command: &str,
    timeout: Duration,
    cap: usize,
    sandbox: &Sandbox,
) -> io::Result<ShellRun> {
    let mut cmd = sandbox.command(root, &format!("exec 2>&1\n{command}"));
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // Ends the call's process group and every descendant that left it (see `crate::execution::reap`).
    let mut call = crate::execution::reap::begin_call();
    cmd.env(crate::execution::reap::CALL_ENV, call.marker());
    let mut child = cmd.spawn()?;
    call.set_group(child.id());
    let mut stdout = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("no stdout pipe"))?;
    let stderr = child.stderr.take();

    let mut buf = CappedBuf::new(cap);
    let mut chunk = vec![0u8; 16 * 1024];
    // A time limit past what an `Instant` holds (a library caller's `Duration::MAX`) is no limit.
    let now = Instant::now();
    let deadline = now
        .checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400));
    let mut status: Option<ExitStatus> = None;
    let mut eof = false;
    let mut timed_out = false;
    let mut grace_deadline: Option<Instant> = None;
    while !(eof && status.is_some()) {
        let grace = grace_deadline.unwrap_or(deadline);
        tokio::select! {
            r = stdout.read(&mut chunk), if !eof => match r {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => buf.push(&chunk[..n]),
            },
            s = child.wait(), if status.is_none() => match s {
                Ok(s) => {
                    status = Some(s);
                    grace_deadline = Some(Instant::now() + EXIT_GRACE);
                }
                // Cannot happen for a child we spawned; stop waiting and kill the group.
                Err(_) => break,
            },
            _ = tokio::time::sleep_until(grace), if grace_deadline.is_some() => break,
            _ = tokio::time::sleep_until(deadline) => {
                timed_out = true;
                break;
            },
        }
    }
    call.end();
    if !eof {
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, async {
            loop {
                match stdout.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.push(&chunk[..n]),
                }
            }
        })
        .await;
    }
    if status.is_none() {
        status = tokio::time::timeout(DRAIN_TIMEOUT, child.wait())
            .await
            .ok()
            .and_then(Result::ok);
    }
    // `sh`'s own stderr before `exec 2>&1` took effect (normally nothing).
    if let Some(mut err) = stderr {
        let mut bytes = Vec::new();
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, err.read_to_end(&mut bytes)).await;
        buf.push(&bytes);
    }
    Ok(ShellRun {
        output: buf.finish(),
        status,
        timed_out,
    })
}

/// Sends SIGKILL to the process group `pgid` (a group this module created with
/// `process_group(0)`, whose id is the pid of its `sh`).
#[allow(unsafe_code)]
pub(crate) fn kill_process_group(pgid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) only takes two integers and touches no memory of this process; the
    // negative pid addresses exactly the process group we created for the shell. A failure
    // (ESRCH: the group is already gone) is harmless and ignored.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}
