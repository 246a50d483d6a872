//! Policy processes kept between sessions.
//!
//! A process that answered the handshake with protocol 2 serves one session after another:
//! each is opened (`open`) and closed (`close`) in turn. When a session ends with its `close`
//! answered, its process waits here, idle, for the next session of the same policy — the same
//! `exec:` text, mode, sandbox and working folder — instead of being ended; the next
//! [`super::ExecPolicy::start`] takes it and opens a session in it. A process that failed, or
//! that speaks protocol 1, is never kept: it is ended with its session, and the next session
//! gets a fresh process.
//!
//! At most [`MAX_IDLE`] processes wait at once (the oldest is ended to make room); [`end_idle`]
//! ends them all (`foldbench` calls it before it exits). A process is held by one session at a
//! time, so sessions running in parallel use as many processes as run at once.

use std::path::PathBuf;
use std::sync::Mutex;

use crate::execution::sandbox::Sandbox;

use super::process::Process;

/// Idle processes kept at most, all policies together.
pub const MAX_IDLE: usize = 16;

/// What a process may serve: sessions of the same policy text, in the same mode, sandbox and
/// working folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Key {
    /// The canonical `exec:` text (its options included).
    pub(crate) text: String,
    /// Replay (`true`) or run.
    pub(crate) replay: bool,
    /// The sandbox it was started in.
    pub(crate) sandbox: Sandbox,
    /// The folder it was started in.
    pub(crate) cwd: PathBuf,
}

/// A running policy process and what belongs to it for its whole life.
pub(crate) struct Worker {
    /// The process (dropped first: ended before its home is removed).
    pub(crate) process: Process,
    /// Its private `HOME`, removed after it ended.
    pub(crate) _home: tempfile::TempDir,
    /// What it may serve.
    pub(crate) key: Key,
    /// The protocol it answered the handshake with.
    pub(crate) protocol: u64,
    /// The id of the next request (ids count from 0 over the process's life).
    pub(crate) next_request: u64,
    /// Sessions opened in it so far.
    pub(crate) sessions: u64,
    /// Under bubblewrap, the folders bound in (the working folder, then the `read=` ones): a
    /// process that exits is told which of the paths its command names the sandbox hides.
    pub(crate) unseen_by: Option<Vec<PathBuf>>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("key", &self.key)
            .field("protocol", &self.protocol)
            .field("sessions", &self.sessions)
            .finish_non_exhaustive()
    }
}

fn idle() -> &'static Mutex<Vec<Worker>> {
    static IDLE: Mutex<Vec<Worker>> = Mutex::new(Vec::new());
    &IDLE
}

/// An idle process that may serve `key`, the one that waited least (its caches warmest).
pub(crate) fn take(key: &Key) -> Option<Worker> {
    let mut idle = idle().lock().unwrap_or_else(|e| e.into_inner());
    let at = idle.iter().rposition(|w| w.key == *key)?;
    Some(idle.remove(at))
}

/// Keeps `worker` for the next session of its policy; the oldest idle process is ended when
/// [`MAX_IDLE`] already wait.
pub(crate) fn put(worker: Worker) {
    let evicted = {
        let mut idle = idle().lock().unwrap_or_else(|e| e.into_inner());
        idle.push(worker);
        let extra = idle.len().saturating_sub(MAX_IDLE);
        idle.drain(..extra).collect::<Vec<_>>()
    };
    end_all(evicted);
}

/// Ends every idle policy process (their standard input closed, so each can exit on its own;
/// then their groups and marked processes killed and each reaped). `foldbench` calls it before
/// it exits; a session started afterwards starts a fresh process.
pub fn end_idle() {
    let all = std::mem::take(&mut *idle().lock().unwrap_or_else(|e| e.into_inner()));
    end_all(all);
}

/// Ends `workers`: every standard input closed first, so they exit together, not one after the
/// other.
fn end_all(mut workers: Vec<Worker>) {
    for w in &mut workers {
        w.process.close_input();
    }
    for mut w in workers {
        w.process.end(true);
    }
}
