//! One shell command run for real: `sh -c` in the sandbox, in its own process group, with a
//! time limit and an output cap; the group and every process the call left are ended after it
//! ([`crate::execution::reap`]).

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use crate::execution::output::CappedBuf;
use crate::execution::sandbox::Sandbox;

/// How long the shell tool waits, after `sh` itself exited, for background children that still
/// hold its output pipe before it kills them.
const EXIT_GRACE: Duration = Duration::from_millis(250);

/// How long to drain what is left in the pipe after the process group was killed.
const DRAIN_TIMEOUT: Duration = Duration::from_millis(500);

/// What one shell run produced.
#[derive(Debug)]
pub(crate) struct ShellRun {
    /// stdout and stderr merged, capped.
    pub(crate) output: String,
    /// The exit status of `sh`, if it was collected.
    pub(crate) status: Option<ExitStatus>,
    /// Whether the timeout expired and the process group was killed.
    pub(crate) timed_out: bool,
}

impl ShellRun {
    /// The text the model sees: the output plus the exit-code or timeout note.
    pub(crate) fn render(&self, timeout: Duration) -> String {
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
    pub(crate) fn success(&self) -> bool {
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
    // Ends the call's process group and every descendant that left it (see `crate::execution::reap`;
    // in bubblewrap, its own PID namespace, the kernel ends them and only foldbench's
    // descendants are looked at).
    let mut call = if sandbox.is_isolated() {
        crate::execution::reap::begin_isolated_call()
    } else {
        crate::execution::reap::begin_call()
    };
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
