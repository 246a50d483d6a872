//! Ending a tool call's processes, all of them.
//!
//! A shell call runs in its own process group, which is killed when the call ends. A process that
//! left the group (`setsid`, `setpgid`) escapes that kill and would outlive the call, the cell and
//! the run. Two more nets catch it:
//!
//! - **The marker.** Every call carries a marker in its environment (`CALL_ENV``=<pid>-<n>`,
//!   inherited by every descendant), and ending the call kills every process whose environment
//!   holds it.
//! - **The subreaper.** foldbench makes itself the child subreaper of its descendants
//!   (`PR_SET_CHILD_SUBREAPER`), so a process whose parent exits is re-parented to foldbench, not
//!   to init. Ending a call kills (and reaps) those orphans that are in a session of their own
//!   (`setsid`) and were started after the call began (to the clock tick of `/proc`, 10 ms) —
//!   unless another call still in flight
//!   began before them (with `--jobs` above 1 it may be theirs): they then die when the last
//!   such call ends. This catches `setsid env -i sleep 1000 &`, which clears the marker.
//!
//! What is left without bubblewrap: a descendant that clears its environment *and* leaves the
//! call's process group without a session of its own (`setpgid`), or that makes its parent
//! outlive the call some other way. A sandbox with its own PID namespace, killed as a whole,
//! closes those gaps.
//!
//! **Where the nets look.** Without bubblewrap every process in `/proc` is looked at (a marked
//! process could have been handed to another parent by a daemon). In bubblewrap
//! (`begin_isolated_call`) the kernel kills everything in the call's PID namespace when the
//! namespace's first process exits, but bubblewrap's outer process can return before those
//! deaths are complete; ending the call waits for them, and everything it waits for descends
//! from foldbench (the namespace's first process is re-parented to foldbench, the subreaper). So
//! an isolated call looks at foldbench's descendants only (`/proc/PID/task/TID/children`): a
//! handful of processes instead of the whole machine's, which on a busy machine was a fifth of
//! foldbench's own CPU time over a matrix. A process that list misses (it can skip a child while
//! a sibling exits) is one the kernel is already killing; without that list (an old kernel) the
//! whole of `/proc` is read as before.
//!
//! Calls in flight are registered (`begin_call` returns a guard that ends the call when it is
//! dropped, so a cancelled cell ends its calls too), and [`end_all_calls`] ends them all when the
//! run is stopped by a signal.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitOptions};

/// The environment variable that marks a call's processes.
pub(crate) const CALL_ENV: &str = "FOLDBENCH_CALL";

/// How many times the process table is scanned for a call's processes (a process may fork while
/// it is being killed; each round kills what the previous one missed).
const ROUNDS: usize = 4;

/// How long ending a call waits for a killed process to exit (so its children are re-parented
/// and found by the next round), per round.
const DEATH_WAIT: Duration = Duration::from_secs(2);

/// Set by [`end_all_calls`]: a call that starts afterwards is ended as soon as it has a process.
static STOPPED: AtomicBool = AtomicBool::new(false);

/// A call in flight: its process group and when it began (clock ticks since boot, the unit of
/// `/proc/PID/stat`'s start time).
#[derive(Debug, Clone, Copy)]
struct Live {
    group: Option<u32>,
    start: u64,
}

/// Which processes ending a call looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Every process in `/proc`.
    All,
    /// This process's descendants (a call in its own PID namespace).
    Descendants,
}

fn live() -> &'static Mutex<HashMap<String, Live>> {
    static LIVE: OnceLock<Mutex<HashMap<String, Live>>> = OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Makes this process the child subreaper of its descendants, once; whether it is.
fn subreaper() -> bool {
    static SET: OnceLock<bool> = OnceLock::new();
    *SET.get_or_init(|| {
        rustix::process::set_child_subreaper(Some(rustix::process::getpid())).is_ok()
    })
}

/// Now, in clock ticks since boot (the clock of a process's start time in `/proc/PID/stat`).
fn now_ticks() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    let hz = u128::from(rustix::param::clock_ticks_per_second().max(1));
    let ns = u128::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000
        + u128::try_from(t.tv_nsec).unwrap_or(0);
    u64::try_from(ns * hz / 1_000_000_000).unwrap_or(u64::MAX)
}

/// A tool call in flight: its marker and, once spawned, its process group. Dropping it ends the
/// call ([`CallGuard::end`]).
#[derive(Debug)]
pub(crate) struct CallGuard {
    marker: String,
    group: Option<u32>,
    start: u64,
    scope: Scope,
    ended: bool,
}

/// Registers a new call and returns its guard (and, the first time, makes this process the
/// child subreaper of its descendants).
pub(crate) fn begin_call() -> CallGuard {
    begin_call_in(Scope::All)
}

/// [`begin_call`] for a call that runs in a PID namespace of its own (bubblewrap): ending it
/// looks at this process's descendants rather than at every process (see the module's notes).
pub(crate) fn begin_isolated_call() -> CallGuard {
    begin_call_in(Scope::Descendants)
}

fn begin_call_in(scope: Scope) -> CallGuard {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    subreaper();
    let marker = format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let start = now_ticks();
    if let Ok(mut l) = live().lock() {
        l.insert(marker.clone(), Live { group: None, start });
    }
    CallGuard {
        marker,
        group: None,
        start,
        scope,
        ended: false,
    }
}

impl CallGuard {
    /// The value of [`CALL_ENV`] for this call's processes.
    pub(crate) fn marker(&self) -> &str {
        &self.marker
    }

    /// Records the call's process group (the pid of its leader). After [`end_all_calls`] the
    /// call is ended at once.
    pub(crate) fn set_group(&mut self, pgid: Option<u32>) {
        self.group = pgid;
        if let Ok(mut l) = live().lock() {
            l.insert(
                self.marker.clone(),
                Live {
                    group: pgid,
                    start: self.start,
                },
            );
        }
        if STOPPED.load(Ordering::SeqCst) {
            self.end();
        }
    }

    /// Ends the call now: kills its process group, every process carrying its marker and the
    /// orphans it left (see the module's notes).
    pub(crate) fn end(&mut self) {
        if !self.ended {
            self.ended = true;
            if let Ok(mut l) = live().lock() {
                l.remove(&self.marker);
            }
            end_call_from(&self.marker, self.group, Some(self.start), self.scope);
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
pub(crate) fn end_call(marker: &str, group: Option<u32>) {
    end_call_from(marker, group, None, Scope::All);
}

/// [`end_call`], and with `start` (the call's beginning, in clock ticks) the orphans it left.
fn end_call_from(marker: &str, group: Option<u32>, start: Option<u64>, scope: Scope) {
    if let Some(g) = group {
        kill_process_group(g);
        // Its children are re-parented when the leader has exited.
        wait_dead(&[g]);
    }
    for _ in 0..ROUNDS {
        let mut doomed = marked_processes(marker, scope);
        let orphans = start.map(|s| orphans_since(s, scope)).unwrap_or_default();
        doomed.extend(orphans.iter().copied());
        if doomed.is_empty() {
            break;
        }
        for &pid in &doomed {
            signal_kill(pid);
        }
        wait_dead(&doomed);
        reap(&orphans);
    }
}

/// Ends every call in flight, and every call that starts afterwards (on SIGINT/SIGTERM, before
/// the process exits).
pub fn end_all_calls() {
    STOPPED.store(true, Ordering::SeqCst);
    let calls: Vec<(String, Live)> = match live().lock() {
        Ok(mut l) => l.drain().collect(),
        Err(_) => return,
    };
    for (marker, call) in calls {
        end_call_from(&marker, call.group, Some(call.start), Scope::All);
    }
}

/// What `/proc/PID/stat` says of a process.
struct Stat {
    state: u8,
    ppid: u32,
    session: u32,
    start: u64,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name (which may hold spaces and parentheses): state, ppid, pgrp,
    // session, ... and the start time as the 20th field.
    let (_, rest) = text.rsplit_once(')')?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        state: *f.first()?.as_bytes().first()?,
        ppid: f.get(1)?.parse().ok()?,
        session: f.get(3)?.parse().ok()?,
        start: f.get(19)?.parse().ok()?,
    })
}

/// The processes a scan of `scope` looks at: this process's descendants (or, when the kernel
/// does not list children or this process is not the subreaper, every process), or every
/// process.
fn candidates(scope: Scope) -> Vec<u32> {
    match scope {
        Scope::Descendants if subreaper() => descendants().unwrap_or_else(pids),
        _ => pids(),
    }
}

/// The children of every thread of `pid` (`/proc/PID/task/TID/children`), `None` when the
/// kernel does not provide the list. The list is read twice and the two joined: a read can skip
/// a child while one of its siblings exits.
fn children(pid: u32) -> Option<Vec<u32>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut out = Vec::new();
    let mut any = false;
    for task in tasks.flatten() {
        let file = task.path().join("children");
        for _ in 0..2 {
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            any = true;
            out.extend(
                text.split_whitespace()
                    .filter_map(|n| n.parse::<u32>().ok()),
            );
        }
    }
    out.sort_unstable();
    out.dedup();
    any.then_some(out)
}

/// This process's descendants, `None` when the kernel does not list children.
fn descendants() -> Option<Vec<u32>> {
    let me = std::process::id();
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut stack = children(me)?;
    while let Some(pid) = stack.pop() {
        if !seen.insert(pid) {
            continue;
        }
        out.push(pid);
        // A process that has just exited lists nothing: nothing of its own is left to find.
        stack.extend(children(pid).unwrap_or_default());
    }
    Some(out)
}

/// The pids in `/proc`.
fn pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .collect()
}

/// The orphans a call that began at `start` left: this process's children (re-parented to it
/// as the subreaper) in a session other than this process's, started at or after `start`, that
/// are no call's process group leader and that no call still in flight may own (one that began
/// at or before them). Those already dead are reaped on the way.
fn orphans_since(start: u64, scope: Scope) -> Vec<u32> {
    if !subreaper() {
        return Vec::new();
    }
    let me = std::process::id();
    // Read from /proc as every other process's is: a process whose session leader lies outside
    // its PID namespace (a container's first process, `unshare --pid`) is in session 0, which
    // `getsid` cannot return as a `Pid`.
    let Some(my_session) = stat(me).map(|s| s.session) else {
        return Vec::new();
    };
    let others: Vec<Live> = match live().lock() {
        Ok(l) => l.values().copied().collect(),
        Err(_) => return Vec::new(),
    };
    let mut out = Vec::new();
    let mut dead = Vec::new();
    let mine = match scope {
        Scope::Descendants => children(me).unwrap_or_else(pids),
        Scope::All => pids(),
    };
    for pid in mine {
        let Some(st) = stat(pid) else { continue };
        let ours = st.ppid == me
            && st.session != my_session
            && st.start >= start
            && !others
                .iter()
                .any(|o| o.group == Some(pid) || o.start <= st.start);
        if !ours {
            continue;
        }
        if st.state == b'Z' || st.state == b'X' {
            dead.push(pid);
        } else {
            out.push(pid);
        }
    }
    reap(&dead);
    out
}

/// Collects the exit status of those of `pids` that are this process's exited children (never
/// any other child: `waitpid` is given each pid).
fn reap(pids: &[u32]) {
    for &pid in pids {
        let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
            continue;
        };
        let _ = rustix::process::waitpid(Some(p), WaitOptions::NOHANG);
    }
}

/// Waits (up to [`DEATH_WAIT`]) until every one of `pids` has exited (is gone or a zombie).
fn wait_dead(pids: &[u32]) {
    let until = Instant::now() + DEATH_WAIT;
    for &pid in pids {
        while stat(pid).is_some_and(|s| s.state != b'Z' && s.state != b'X') {
            if Instant::now() >= until {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// The live processes (zombies excluded) whose environment holds `CALL_ENV=marker`. Processes
/// of other users are unreadable and skipped.
fn marked_processes(marker: &str, scope: Scope) -> Vec<u32> {
    let needle = format!("{CALL_ENV}={marker}");
    let me = std::process::id();
    let mut out = Vec::new();
    for pid in candidates(scope) {
        if pid == me {
            continue;
        }
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if env.split(|b| *b == 0).any(|v| v == needle.as_bytes()) && !is_zombie(pid) {
            out.push(pid);
        }
    }
    out
}

fn is_zombie(pid: u32) -> bool {
    match stat(pid) {
        Some(s) => s.state == b'Z' || s.state == b'X',
        None => true,
    }
}

/// Sends SIGKILL to the process `id`; a failure (ESRCH: already gone) is ignored.
fn signal_kill(id: u32) {
    if id <= 1 || id == std::process::id() {
        return;
    }
    if let Some(pid) = i32::try_from(id).ok().and_then(Pid::from_raw) {
        let _ = rustix::process::kill_process(pid, Signal::KILL);
    }
}

/// Sends SIGKILL to the process group `pgid` (a group [`crate::execution::process`] created with
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
        let run = crate::execution::process::run_shell(
            dir.path(),
            "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!",
            Duration::from_secs(10),
            10_000,
            &crate::execution::sandbox::Sandbox::unconfined(),
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

    /// A child and its own child are listed as this process's descendants (the list an
    /// isolated call's end looks at).
    #[test]
    fn descendants_are_read_from_the_childrens_lists() {
        subreaper();
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 300 & echo $!; wait"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        let grandchild: u32 = line.trim().parse().unwrap();
        let found = descendants().expect("this kernel lists children");
        signal_kill(grandchild);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(found.contains(&child.id()), "{found:?}");
        assert!(found.contains(&grandchild), "{found:?}");
    }

    /// An isolated call (bubblewrap) looks only at foldbench's descendants, and still returns
    /// only when every process it started is gone: bubblewrap's outer process exits before the
    /// kernel has finished ending the call's PID namespace.
    #[tokio::test]
    async fn an_isolated_calls_processes_are_gone_when_it_returns() {
        let sb = match crate::execution::sandbox::Sandbox::detect(
            crate::execution::sandbox::SandboxMode::Bwrap,
        ) {
            Ok(s) => s,
            Err(e) if std::env::var("FOLDBENCH_REQUIRE_SANDBOX").as_deref() == Ok("1") => {
                panic!("FOLDBENCH_REQUIRE_SANDBOX=1 but {e}")
            }
            Err(_) => return,
        };
        let dir = tempfile::tempdir().unwrap();
        // `sleep 4343.N` marks them; some leave the process group, some the session; none
        // holds the output pipe (the call would wait for that pipe to close).
        let script = "for i in 1 2 3 4 5 6; do sleep 4343.$i >/dev/null 2>&1 & \
                      setsid sleep 4343.1$i >/dev/null 2>&1 & done; \
                      (setsid sh -c 'sleep 4343.7 >/dev/null 2>&1 &'); echo started";
        for round in 0..15 {
            let run = crate::execution::process::run_shell(
                dir.path(),
                script,
                Duration::from_secs(20),
                10_000,
                &sb,
            )
            .await
            .unwrap();
            assert!(run.output.contains("started"), "{run:?}");
            // At once: not a moment later.
            let left: Vec<u32> = pids()
                .into_iter()
                .filter(|&p| {
                    std::fs::read(format!("/proc/{p}/cmdline"))
                        .is_ok_and(|c| String::from_utf8_lossy(&c).contains("4343."))
                        && !is_zombie(p)
                })
                .collect();
            for &p in &left {
                signal_kill(p);
            }
            assert!(left.is_empty(), "round {round}: {left:?} outlived the call");
        }
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
        assert_eq!(marked_processes(g.marker(), Scope::All), vec![child.id()]);
        g.end();
        let status = child.wait().unwrap();
        assert!(!status.success());
        assert!(marked_processes(g.marker(), Scope::All).is_empty());
        assert_eq!(other.try_wait().unwrap(), None, "another call's process");
        other.kill().unwrap();
        other.wait().unwrap();
    }
}
