//! The policy process itself: started in the sandbox, spoken to one JSON line at a time, each
//! answer awaited with a time limit, and ended with every process it started.
//!
//! Three threads per process keep the session loop from ever blocking on it: one writes the
//! requests to its standard input (a process that stops reading cannot stall foldbench, and its
//! `SIGPIPE` is blocked there, so a process that exited is an error, not foldbench's death), one
//! reads its answers line by line (a line longer than the limit ends the reading: the process
//! floods), one keeps the tail of its standard error for the error message.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::execution::sandbox::Sandbox;

/// Bytes of standard error kept for the error message.
const STDERR_TAIL: usize = 2000;

/// How long a process whose standard input was closed may take to exit on its own.
const GRACE: Duration = Duration::from_millis(500);

/// How often a wait for an answer looks whether the process has exited.
const EXIT_POLL: Duration = Duration::from_millis(50);

/// How long the reader may take to pass on what an exited process wrote before it exited.
const DRAIN: Duration = Duration::from_millis(200);

/// What reading an answer line ended with, when it did not give a line.
#[derive(Debug)]
pub(crate) enum Fault {
    /// Standard output closed: the process exited or closed it.
    Eof,
    /// A line longer than the limit (its first bytes).
    TooLong(Vec<u8>),
    /// No answer within the time limit.
    Timeout(Duration),
    /// Reading or writing failed.
    Io(String),
}

/// A running policy process.
pub(crate) struct Process {
    child: Child,
    to_child: Option<Sender<Vec<u8>>>,
    lines: Receiver<Result<Vec<u8>, Fault>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Disconnected when the stderr thread has read to the end of the pipe.
    stderr_done: Receiver<()>,
    marker: String,
    group: Option<u32>,
    /// Started in bubblewrap: every process it starts lives in its PID namespace.
    contained: bool,
    ended: bool,
}

impl Process {
    /// Starts `command` with `sh -c` under `sandbox`: in the first of `binds` (its working
    /// folder), with every one of them shown read-only (where the sandbox hides it:
    /// `crate::execution::sandbox`), with `home` (a private folder, read-write) as its `HOME`
    /// and sandbox root, an allow-listed environment, its own process group and the reaper's
    /// marker.
    pub(crate) fn start(
        sandbox: &Sandbox,
        home: &Path,
        binds: &[PathBuf],
        command: &str,
        max_line: usize,
    ) -> Result<Process, super::ExecError> {
        let cwd = binds.first().map_or(Path::new("/"), PathBuf::as_path);
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let marker = format!(
            "{}-policy-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let script = format!(
            "cd {} && exec {command}",
            shell_quote(&cwd.display().to_string())
        );
        let extra: Vec<(&Path, bool)> = binds.iter().map(|b| (b.as_path(), false)).collect();
        let mut cmd = sandbox.std_command(home, &script, &extra);
        use std::os::unix::process::CommandExt;
        cmd.env(crate::execution::reap::CALL_ENV, &marker)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = spawn_kept(cmd).map_err(|source| super::ExecError::Start {
            command: command.to_string(),
            source,
        })?;
        let group = Some(child.id());
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            crate::execution::reap::end_call(&marker, group);
            let _ = child.wait();
            return Err(super::ExecError::Pipes {
                command: command.to_string(),
            });
        };
        let (to_child, requests) = mpsc::channel::<Vec<u8>>();
        std::thread::spawn(move || write_requests(stdin, requests));
        let (tx, lines) = mpsc::sync_channel(16);
        std::thread::spawn(move || read_lines(stdout, max_line, tx));
        let tail = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&tail);
        let (done, stderr_done) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            read_stderr(stderr, &keep);
            drop(done);
        });
        Ok(Process {
            child,
            to_child: Some(to_child),
            lines,
            stderr: tail,
            stderr_done,
            marker,
            group,
            contained: sandbox.is_isolated(),
            ended: false,
        })
    }

    /// Its process id (bubblewrap's, in the sandbox). For the tests of process reuse.
    #[cfg(test)]
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// Sends one line (without its newline).
    pub(crate) fn send(&mut self, line: &str) {
        if let Some(tx) = &self.to_child {
            let mut bytes = Vec::with_capacity(line.len() + 1);
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
            // A writer that is gone means the process is gone: reading says so.
            let _ = tx.send(bytes);
        }
    }

    /// The next line of the process's output, within `timeout`. The process exiting ends the
    /// wait as the end of its output does, even while a child it left holds the pipe open
    /// (without bubblewrap nothing kills the child with it): a line it wrote before it exited
    /// is still taken, and then the exit is the answer ([`Fault::Eof`]), not a time-out.
    pub(crate) fn receive(&mut self, timeout: Duration) -> Result<Vec<u8>, Fault> {
        let until = Instant::now() + timeout;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left.min(EXIT_POLL)) {
                Ok(r) => return r,
                Err(RecvTimeoutError::Disconnected) => return Err(Fault::Eof),
                Err(RecvTimeoutError::Timeout) if left <= EXIT_POLL => {
                    return Err(Fault::Timeout(timeout))
                }
                Err(RecvTimeoutError::Timeout) => {
                    if matches!(self.child.try_wait(), Ok(Some(_))) {
                        // What it wrote before exiting is in the pipe: the reader's last lines.
                        return match self.lines.recv_timeout(DRAIN) {
                            Ok(r) => r,
                            Err(_) => Err(Fault::Eof),
                        };
                    }
                }
            }
        }
    }

    /// The last bytes of its standard error, as text (after it ended, everything it wrote).
    pub(crate) fn stderr_tail(&self) -> String {
        let bytes = self.stderr.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).trim().to_string()
    }

    /// How it exited, if it has (`exit status 3`, `signal 9`).
    pub(crate) fn exit_status(&mut self) -> Option<String> {
        let until = Instant::now() + Duration::from_millis(200);
        loop {
            match self.child.try_wait() {
                Ok(Some(s)) => return Some(s.to_string()),
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
                _ => return None,
            }
        }
    }

    /// Closes its standard input: a process that reads to the end of its input exits.
    pub(crate) fn close_input(&mut self) {
        self.to_child = None;
    }

    /// Ends the process and every process it started: its standard input closed, a moment to
    /// exit on its own when `gently`, then its group and every process carrying its marker
    /// killed, and the process reaped.
    pub(crate) fn end(&mut self, gently: bool) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        self.to_child = None;
        if gently {
            let until = Instant::now() + GRACE;
            while Instant::now() < until && matches!(self.child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        // Under bubblewrap a process that exited took every process it started with it (the
        // PID namespace ends with its first process): nothing of it is left to look for, and
        // the look — every process's environment read for the marker — costs tens of
        // milliseconds on a busy machine.
        let exited = matches!(self.child.try_wait(), Ok(Some(_)));
        if !(exited && self.contained) {
            crate::execution::reap::end_call(&self.marker, self.group);
        }
        let _ = self.child.wait();
        // Its standard error read to the end before anyone quotes it: the reader thread may
        // not have run since the process wrote its last words. Every process of the group is
        // gone, so the pipe is closed; the bound only guards against a descendant that escaped.
        let _ = self.stderr_done.recv_timeout(Duration::from_secs(2));
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.end(true);
    }
}

/// Starts `cmd` from one thread that lives as long as foldbench does. bubblewrap's
/// `--die-with-parent` ends the sandbox when the *thread* that started it exits (the kernel's
/// parent-death signal follows the thread), and a process kept between sessions
/// ([`super::pool`]) must outlive the thread of the session that started it (a replay's worker,
/// a runtime's blocking thread).
fn spawn_kept(mut cmd: std::process::Command) -> std::io::Result<Child> {
    type Job = (std::process::Command, SyncSender<std::io::Result<Child>>);
    static KEEPER: std::sync::OnceLock<Option<Mutex<Sender<Job>>>> = std::sync::OnceLock::new();
    let keeper = KEEPER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("policy-starter".into())
            .spawn(move || {
                for (mut cmd, answer) in rx {
                    let _ = answer.send(cmd.spawn());
                }
            });
        thread.ok().map(|_| Mutex::new(tx))
    });
    // Without that thread (it could not be made), the process starts here: it then ends with
    // this thread, and the pool replaces it at its next session.
    let Some(keeper) = keeper else {
        return cmd.spawn();
    };
    let (answer, result) = mpsc::sync_channel(1);
    let sent = match keeper.lock() {
        Ok(tx) => tx.send((cmd, answer)),
        Err(e) => e.into_inner().send((cmd, answer)),
    };
    match sent {
        Ok(()) => result
            .recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("the policy starter thread ended"))),
        Err(mpsc::SendError((mut cmd, _))) => cmd.spawn(),
    }
}

/// A word quoted for `sh`.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The writer thread: each request written and flushed, until the channel closes or a write
/// fails (the process is gone). `SIGPIPE` is blocked in this thread, so a write to a process
/// that exited fails with `EPIPE` instead of killing foldbench (which restores the signal's
/// default action for its own output).
fn write_requests(mut stdin: std::process::ChildStdin, requests: Receiver<Vec<u8>>) {
    block_sigpipe();
    for bytes in requests {
        if stdin
            .write_all(&bytes)
            .and_then(|()| stdin.flush())
            .is_err()
        {
            return;
        }
    }
}

/// Blocks `SIGPIPE` in the calling thread.
#[allow(unsafe_code)]
fn block_sigpipe() {
    // SAFETY: the set is a local, initialised by sigemptyset before use; pthread_sigmask only
    // changes the calling thread's mask and reads the set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// The reader thread: one message per line; a line past `max_line` bytes ends the reading.
fn read_lines(
    stdout: std::process::ChildStdout,
    max_line: usize,
    tx: SyncSender<Result<Vec<u8>, Fault>>,
) {
    let mut r = BufReader::with_capacity(64 * 1024, stdout);
    let mut line: Vec<u8> = Vec::new();
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) => {
                let _ = tx.send(Err(Fault::Io(e.to_string())));
                return;
            }
        };
        if buf.is_empty() {
            let _ = tx.send(Err(Fault::Eof));
            return;
        }
        let (take, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (i, true),
            None => (buf.len(), false),
        };
        let room = (max_line + 1).saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        r.consume(if done { take + 1 } else { take });
        if line.len() > max_line {
            line.truncate(200);
            let _ = tx.send(Err(Fault::TooLong(line)));
            return;
        }
        if done && tx.send(Ok(std::mem::take(&mut line))).is_err() {
            return;
        }
    }
}

/// The stderr thread: keeps the last [`STDERR_TAIL`] bytes.
fn read_stderr(mut stderr: std::process::ChildStderr, tail: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 4096];
    loop {
        match stderr.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if let Ok(mut t) = tail.lock() {
                    t.extend_from_slice(&buf[..n]);
                    let extra = t.len().saturating_sub(STDERR_TAIL);
                    t.drain(..extra);
                }
            }
        }
    }
}
