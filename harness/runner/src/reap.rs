//! Ending a tool call's processes, all of them.
//!
//! A shell call runs in its own process group, which is killed when the call ends. A process that
//! left the group (`setsid`, `setpgid`) escapes that kill and would outlive the call, the cell and
//! the run. So every call also carries a marker in its environment ([`CALL_ENV`]`=<pid>-<n>`,
//! inherited by every descendant), and ending the call kills, besides the group, every process
//! whose environment holds the marker ([`end_call`]). A descendant that clears its environment
//! escapes the marker; a sandbox with its own PID namespace, killed as a whole, closes that gap.
//!
//! Calls in flight are registered ([`begin_call`] returns a guard that ends the call when it is
//! dropped, so a cancelled cell ends its calls too), and [`end_all_calls`] ends them all when the
//! run is stopped by a signal.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The environment variable that marks a call's processes.
pub const CALL_ENV: &str = "FOLDBENCH_CALL";

/// How many times the process table is scanned for marked processes (a process may fork while
/// it is being killed; each round kills what the previous one missed).
const ROUNDS: usize = 4;

/// Set by [`end_all_calls`]: a call that starts afterwards is ended as soon as it has a process.
static STOPPED: AtomicBool = AtomicBool::new(false);

fn live() -> &'static Mutex<HashMap<String, Option<u32>>> {
    static LIVE: OnceLock<Mutex<HashMap<String, Option<u32>>>> = OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// A tool call in flight: its marker and, once spawned, its process group. Dropping it ends the
/// call ([`end_call`]).
#[derive(Debug)]
pub struct CallGuard {
    marker: String,
    group: Option<u32>,
    ended: bool,
}

/// Registers a new call and returns its guard.
pub fn begin_call() -> CallGuard {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let marker = format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    if let Ok(mut l) = live().lock() {
        l.insert(marker.clone(), None);
    }
    CallGuard {
        marker,
        group: None,
        ended: false,
    }
}

impl CallGuard {
    /// The value of [`CALL_ENV`] for this call's processes.
    pub fn marker(&self) -> &str {
        &self.marker
    }

    /// Records the call's process group (the pid of its leader). After [`end_all_calls`] the
    /// call is ended at once.
    pub fn set_group(&mut self, pgid: Option<u32>) {
        self.group = pgid;
        if let Ok(mut l) = live().lock() {
            l.insert(self.marker.clone(), pgid);
        }
        if STOPPED.load(Ordering::SeqCst) {
            self.end();
        }
    }

    /// Ends the call now: kills its process group and every process carrying its marker.
    pub fn end(&mut self) {
        if !self.ended {
            self.ended = true;
            end_call(&self.marker, self.group);
            if let Ok(mut l) = live().lock() {
                l.remove(&self.marker);
            }
        }
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.end();
    }
}

/// Kills the process group `group` (when given) and every process whose environment holds
/// `CALL_ENV=marker`.
pub fn end_call(marker: &str, group: Option<u32>) {
    if let Some(g) = group {
        crate::tools::kill_process_group(g);
    }
    for _ in 0..ROUNDS {
        let marked = marked_processes(marker);
        if marked.is_empty() {
            break;
        }
        for pid in marked {
            signal_kill(pid);
        }
    }
}

/// Ends every call in flight, and every call that starts afterwards (on SIGINT/SIGTERM, before
/// the process exits).
pub fn end_all_calls() {
    STOPPED.store(true, Ordering::SeqCst);
    let calls: Vec<(String, Option<u32>)> = match live().lock() {
        Ok(mut l) => l.drain().collect(),
        Err(_) => return,
    };
    for (marker, group) in calls {
        end_call(&marker, group);
    }
}

/// The live processes (zombies excluded) whose environment holds `CALL_ENV=marker`. Processes
/// of other users are unreadable and skipped.
fn marked_processes(marker: &str) -> Vec<u32> {
    let needle = format!("{CALL_ENV}={marker}");
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|b| *b == 0).any(|v| v == needle.as_bytes()) && !is_zombie(pid) {
            out.push(pid);
        }
    }
    out
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

/// Sends SIGKILL to the process `id`.
#[allow(unsafe_code)]
fn signal_kill(id: u32) {
    let Ok(id) = libc::pid_t::try_from(id) else {
        return;
    };
    if id <= 1 || id == std::process::id() as libc::pid_t {
        return;
    }
    // SAFETY: kill(2) only takes two integers and touches no memory of this process. The target
    // is a process that carries one of this runner's call markers;
    // a failure (ESRCH: already gone) is harmless and ignored.
    unsafe {
        libc::kill(id, libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn alive(pid: u32) -> bool {
        std::path::Path::new(&format!("/proc/{pid}")).exists() && !is_zombie(pid)
    }

    /// A `setsid` child leaves the call's process group, so the group kill misses it; the
    /// marker does not (without bubblewrap: inside it the PID namespace ends them all).
    #[tokio::test]
    async fn a_setsid_child_does_not_outlive_its_shell_call() {
        let dir = tempfile::tempdir().unwrap();
        let run = crate::tools::run_shell(
            dir.path(),
            "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!",
            Duration::from_secs(10),
            10_000,
            &crate::sandbox::Sandbox::unconfined(),
        )
        .await
        .unwrap();
        let pid: u32 = run
            .output
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{run:?}"));
        // Give the kernel a moment to deliver the kill and the parent to reap.
        for _ in 0..50 {
            if !alive(pid) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let escaped = alive(pid);
        if escaped {
            signal_kill(pid);
        }
        assert!(!escaped, "setsid child {pid} outlived its call");
    }

    /// Only this call's processes (ending every call would end other tests' calls too: they
    /// share this process).
    #[test]
    fn ending_a_call_kills_every_process_with_its_marker() {
        let mut g = begin_call();
        let mut child = std::process::Command::new("sleep")
            .arg("300")
            .env(CALL_ENV, g.marker())
            .spawn()
            .unwrap();
        let mut other = std::process::Command::new("sleep")
            .arg("300")
            .env(CALL_ENV, format!("{}-other", g.marker()))
            .spawn()
            .unwrap();
        g.set_group(None);
        assert_eq!(marked_processes(g.marker()), vec![child.id()]);
        g.end();
        let status = child.wait().unwrap();
        assert!(!status.success());
        assert!(marked_processes(g.marker()).is_empty());
        assert_eq!(other.try_wait().unwrap(), None, "another call's process");
        other.kill().unwrap();
        other.wait().unwrap();
    }
}
