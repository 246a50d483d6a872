//! Where the cells' workspaces are made (`$TMPDIR`, `/dev/shm` or the system's temp folder),
//! each named after the process that owns it, and the sweep that removes a dead run's.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The name prefix of a kept workspace (`--keep-workspaces`): never swept.
pub const KEPT_PREFIX: &str = "foldbench-kept-";

/// The folder cells' workspaces are made in: `$TMPDIR` when it is set; else `/dev/shm` when it
/// is a tmpfs of at least `SHM_MIN` this process can write (a cell creates and removes hundreds
/// of small files, and on a journaled disk allocating their inodes costs more than the rest of
/// the cell: docs/performance.md); else the system's temp folder. Kept workspaces
/// (`--keep-workspaces`) go to the temp folder, on disk.
pub fn workspaces_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        if std::env::var_os("TMPDIR").is_some() {
            return std::env::temp_dir();
        }
        let shm = Path::new("/dev/shm");
        let usable = fs::read_to_string("/proc/self/mounts").is_ok_and(|m| shm_usable(&m));
        if usable && tempfile::tempdir_in(shm).is_ok() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        }
    })
    .clone()
}

/// The smallest `/dev/shm` workspaces go to (a container's default of 64 MB is too small for a
/// task that writes logs, times the cells running at once).
pub const SHM_MIN: u64 = 1 << 30;

/// Whether the mount table (`/proc/self/mounts`) shows `/dev/shm` as a tmpfs of at least
/// [`SHM_MIN`] (a tmpfs without a `size=` option is half the memory). The last mount of the
/// folder is the one in effect.
pub(crate) fn shm_usable(mounts: &str) -> bool {
    let Some(line) = mounts
        .lines()
        .rev()
        .find(|l| l.split_whitespace().nth(1) == Some("/dev/shm"))
    else {
        return false;
    };
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.get(2) != Some(&"tmpfs") {
        return false;
    }
    let size = f
        .get(3)
        .into_iter()
        .flat_map(|o| o.split(','))
        .find_map(|o| o.strip_prefix("size="));
    let Some(size) = size else {
        return true;
    };
    let (digits, unit) = size.split_at(
        size.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(size.len()),
    );
    let scale: u64 = match unit {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        _ => return false,
    };
    digits
        .parse::<u64>()
        .is_ok_and(|n| n.saturating_mul(scale) >= SHM_MIN)
}

/// The name prefix of the workspaces of process `pid` of this PID namespace:
/// `foldbench-p<PID>-n<NS>-`, `NS` the namespace's inode (`/proc/self/ns/pid`). A pid means a
/// process only in its own namespace, so a run in a container or under `unshare --pid` sharing
/// the temp folder neither sweeps the host's workspaces nor has its own swept by the host.
pub fn owned_prefix(pid: u32) -> String {
    match pid_namespace() {
        Some(ns) => format!("foldbench-p{pid}-n{ns}-"),
        None => format!("foldbench-p{pid}-"),
    }
}

/// This process's PID namespace: the inode in `/proc/self/ns/pid` (`pid:[4026531836]`).
pub(crate) fn pid_namespace() -> Option<u64> {
    static NS: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *NS.get_or_init(|| {
        let link = fs::read_link("/proc/self/ns/pid").ok()?;
        let text = link.to_str()?;
        text.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
    })
}

/// The owner's pid of a workspace folder named `foldbench-p<PID>-n<NS>-…` in this PID
/// namespace (`None` for another namespace's: its pids are not this one's). A name without the
/// namespace (`foldbench-p<PID>-…`, before it was written) counts as this namespace's.
pub(crate) fn owner_of(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("foldbench-p")?;
    let (pid, rest) = rest.split_once('-')?;
    let pid = pid.parse().ok()?;
    let ns = rest
        .strip_prefix('n')
        .and_then(|r| r.split_once('-'))
        .and_then(|(n, _)| n.parse::<u64>().ok());
    match (ns, pid_namespace()) {
        (Some(theirs), Some(ours)) if theirs != ours => None,
        _ => Some(pid),
    }
}

/// Removes the workspaces in `tmp` whose owning process no longer exists (a run killed with
/// SIGKILL leaves its cells' workspaces behind); returns how many were removed. Workspaces of
/// live processes and kept ones are left alone. Does nothing where `/proc` is missing.
pub fn sweep_stale(tmp: &Path) -> usize {
    if !Path::new("/proc/self").exists() {
        return 0;
    }
    sweep(tmp, |pid| !Path::new(&format!("/proc/{pid}")).exists())
}

/// Whether this process stopped creating workspaces ([`close_and_sweep_own`]); the lock is held
/// while a workspace's folder is created, so none appears after the sweep.
pub(crate) static CLOSED: std::sync::Mutex<bool> = std::sync::Mutex::new(false);

/// Creates a folder of this process's own under `parent` named `prefix…`, unless the run is
/// stopping ([`close_and_sweep_own`] ran): the [`CLOSED`] lock is held while the folder is
/// created, so no folder of this process appears after the sweep.
pub(crate) fn owned_tempdir_in(prefix: &str, parent: &Path) -> io::Result<tempfile::TempDir> {
    let guard = CLOSED.lock().unwrap_or_else(|p| p.into_inner());
    if *guard {
        return Err(io::Error::other("the run is stopping"));
    }
    tempfile::Builder::new().prefix(prefix).tempdir_in(parent)
}

/// Stops this process from creating workspaces, then removes its own workspaces in `tmp` (on
/// SIGINT/SIGTERM, before exiting); returns how many were removed.
pub fn close_and_sweep_own(tmp: &Path) -> usize {
    match CLOSED.lock() {
        Ok(mut c) => *c = true,
        Err(p) => *p.into_inner() = true,
    }
    let me = std::process::id();
    // Cells still running may write into a workspace while it is removed (its removal then
    // fails); try again a few times.
    let mut removed = 0;
    for _ in 0..20 {
        removed += sweep(tmp, |pid| pid == me);
        if count(tmp, |pid| pid == me) == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    removed
}

fn count(tmp: &Path, of: impl Fn(u32) -> bool) -> usize {
    fs::read_dir(tmp)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_str().and_then(owner_of).is_some_and(&of))
                .count()
        })
        .unwrap_or(0)
}

pub(crate) fn sweep(tmp: &Path, remove: impl Fn(u32) -> bool) -> usize {
    let Ok(entries) = fs::read_dir(tmp) else {
        return 0;
    };
    let mut n = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(owner_of) else {
            continue;
        };
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && remove(pid) && fs::remove_dir_all(e.path()).is_ok() {
            n += 1;
        }
    }
    n
}
