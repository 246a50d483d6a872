//! A cell's workspace: a temp dir holding a copy of the task's fixture, committed as the first
//! commit of a fresh git repo, with the archive folder (`.foldbench/`) excluded from git. The
//! copy and the repository are made once per fixture and process and written out per cell
//! (`crate::template`).
//!
//! The workspace gives the runner what it needs around the tools: the setup commands, a
//! fingerprint of the files (to check that two arms start from and end in the same state) and
//! the diff against the fixture (saved with the cell's record).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use git2::{DiffFormat, DiffOptions, IndexAddOption, Oid, Repository, Signature, Time};
use tempfile::TempDir;

use crate::tools::{self, ToolLimits};

/// The archive folder, relative to the workspace root. Policies write folded turns and strategy
/// branches here; the model may read them back; git ignores them.
pub use harness_core::session::ARCHIVE_DIR;

/// A changed file larger than this (in bytes, before or after) is named in the diff with its
/// size instead of its content.
pub const DIFF_FILE_CAP: u64 = 1 << 20;

/// The most bytes of diff text kept (`diff.patch`); the rest is left out with a note saying how
/// much.
pub const DIFF_CAP: usize = 4 << 20;

/// The folder excluded from git (and from the fingerprint and the diff), holding the archive.
const FOLDBENCH_DIR: &str = ".foldbench";

/// Errors of creating or using a workspace.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// A filesystem operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, naming the path.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A git operation failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    /// The fixture cannot be used as it is (not a directory, contains a symlink, ...).
    #[error("fixture {path}: {problem}")]
    Fixture {
        /// The offending path in the fixture.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A setup command failed (non-zero exit or timeout).
    #[error("setup command `{command}` failed ({reason}); its output:\n{output}")]
    Setup {
        /// The command as written in the task spec.
        command: String,
        /// `exit code N`, `timed out after Ns`, ...
        reason: String,
        /// What the command printed (stdout and stderr merged, capped).
        output: String,
    },
}

/// The name prefix of a kept workspace (`--keep-workspaces`): never swept.
pub const KEPT_PREFIX: &str = "foldbench-kept-";

/// The folder cells' workspaces are made in: `$TMPDIR` when it is set; else `/dev/shm` when it
/// is a tmpfs of at least [`SHM_MIN`] this process can write (a cell creates and removes hundreds
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
fn shm_usable(mounts: &str) -> bool {
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
fn pid_namespace() -> Option<u64> {
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
fn owner_of(name: &str) -> Option<u32> {
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
static CLOSED: std::sync::Mutex<bool> = std::sync::Mutex::new(false);

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

fn sweep(tmp: &Path, remove: impl Fn(u32) -> bool) -> usize {
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

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> WorkspaceError {
    let context = context.into();
    move |source| WorkspaceError::Io { context, source }
}

/// `.foldbench/` set aside by [`Workspace::set_archive_aside`]; dropping it puts the folder back.
#[derive(Debug)]
pub struct ArchiveAside {
    from: PathBuf,
    aside: PathBuf,
    _tmp: TempDir,
}

impl Drop for ArchiveAside {
    fn drop(&mut self) {
        // A rename within one folder's file system: it fails only if the workspace is gone.
        let _ = fs::rename(&self.aside, &self.from);
    }
}

/// A fixture copy in a temp dir, committed as the first commit of a fresh git repo.
///
/// Dropping it removes the temp dir, unless it was created with `keep`.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    base: Oid,
    /// The first commit's objects: the diff reads them, never the workspace's `.git`.
    objects: std::sync::Arc<crate::git::BaseObjects>,
    /// Owns the temp dir (removed on drop); `None` when the workspace is kept.
    _tmp: Option<TempDir>,
}

impl Workspace {
    /// Same as the module's [`ARCHIVE_DIR`].
    pub const ARCHIVE_DIR: &'static str = ARCHIVE_DIR;

    /// Creates a workspace from the fixture folder: a fresh folder in [`workspaces_dir`] (named
    /// `foldbench-p<PID>-n<NS>-…` after the process that owns it ([`owned_prefix`]), so
    /// [`sweep_stale`] can tell a dead
    /// run's workspace; `foldbench-kept-…` with `keep`), the
    /// fixture copied into it (regular files and directories, executable bits kept; a symlink
    /// in the fixture is an error), `git init`, everything staged and committed as the first
    /// commit (author and committer `foldbench <foldbench@localhost>` at time 0, so the ids are
    /// deterministic), and `.foldbench/` written to `.git/info/exclude`.
    ///
    /// With `keep`, the temp dir is left in place when the workspace is dropped.
    pub fn create(fixture: &Path, keep: bool) -> Result<Workspace, WorkspaceError> {
        let meta = fs::symlink_metadata(fixture)
            .map_err(io_err(format!("cannot read fixture {}", fixture.display())))?;
        if meta.file_type().is_symlink() {
            return Err(WorkspaceError::Fixture {
                path: fixture.to_path_buf(),
                problem: "a symbolic link; a fixture must be a real folder inside the tasks folder"
                    .to_string(),
            });
        }
        if !meta.is_dir() {
            return Err(WorkspaceError::Fixture {
                path: fixture.to_path_buf(),
                problem: "not a directory".to_string(),
            });
        }
        let prefix = if keep {
            KEPT_PREFIX.to_string()
        } else {
            owned_prefix(std::process::id())
        };
        let tmp = {
            let guard = CLOSED.lock().unwrap_or_else(|p| p.into_inner());
            if *guard {
                return Err(WorkspaceError::Io {
                    context: "cannot create a workspace".into(),
                    source: io::Error::other("the run is stopping"),
                });
            }
            let parent = if keep {
                std::env::temp_dir()
            } else {
                workspaces_dir()
            };
            let tmp = tempfile::Builder::new()
                .prefix(&prefix)
                .tempdir_in(parent)
                .map_err(io_err("cannot create a temp dir"));
            drop(guard);
            tmp?
        };
        let root = tmp
            .path()
            .canonicalize()
            .map_err(io_err("cannot resolve the temp dir"))?;
        // The fixture copied and committed, written from the task's prepared workspace.
        let (base, objects) = crate::template::instantiate(fixture, &root)?;
        let tmp = if keep {
            let _ = tmp.keep();
            None
        } else {
            Some(tmp)
        };
        Ok(Workspace {
            root,
            base,
            objects,
            _tmp: tmp,
        })
    }

    /// The workspace root (absolute, canonical).
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The archive folder's absolute path (it need not exist yet).
    pub fn archive_dir(&self) -> PathBuf {
        self.root.join(ARCHIVE_DIR)
    }

    /// Moves `.foldbench/` (the archive) out of the work tree until the returned guard is
    /// dropped: the task's checks judge the repository the agent left, which is then the same
    /// folder under every arm (an archive holds old versions of the code a `grep -r` would find),
    /// and their tool-cache keys do not change with the archive. `None` when there is none. The
    /// folder waits in a sibling temp folder of this process (swept like a workspace).
    pub fn set_archive_aside(&self) -> io::Result<Option<ArchiveAside>> {
        let from = self.root.join(".foldbench");
        if !from.exists() {
            return Ok(None);
        }
        let parent = self.root.parent().unwrap_or(Path::new("/"));
        let tmp = tempfile::Builder::new()
            .prefix(&owned_prefix(std::process::id()))
            .tempdir_in(parent)?;
        let aside = tmp.path().join(".foldbench");
        fs::rename(&from, &aside)?;
        Ok(Some(ArchiveAside {
            from,
            aside,
            _tmp: tmp,
        }))
    }

    /// The id of the first commit (the fixture as it was copied).
    pub fn base_commit(&self) -> String {
        self.base.to_string()
    }

    /// Same as the module's [`is_archive_path`].
    pub fn is_archive_path(rel: &str) -> bool {
        is_archive_path(rel)
    }

    /// Runs the task's setup commands in order, with the shell tool's runner (same directory,
    /// sandbox, environment and process-group handling; `limits`' shell timeout per command). The first command that exits non-zero or times
    /// out is an error naming it, with its output.
    pub async fn run_setup(
        &self,
        commands: &[String],
        limits: &ToolLimits,
    ) -> Result<(), WorkspaceError> {
        let timeout = limits.shell_timeout;
        for command in commands {
            let (run, _) = tools::run_shell_for(&self.root, command, timeout, limits)
                .await
                .map_err(io_err(format!("cannot run setup command `{command}`")))?;
            if run.success() {
                continue;
            }
            let reason = if run.timed_out {
                format!("timed out after {}s", timeout.as_secs_f64())
            } else {
                match run.status {
                    Some(s) => match s.code() {
                        Some(code) => format!("exit code {code}"),
                        None => format!("terminated: {s}"),
                    },
                    None => "no exit status".to_string(),
                }
            };
            return Err(WorkspaceError::Setup {
                command: command.clone(),
                reason,
                output: run.output,
            });
        }
        Ok(())
    }

    /// Hex sha256 over every regular file below the root except `.git/` and `.foldbench/`: the
    /// files in order of their relative paths, each contributing its path bytes, a 0 byte, the
    /// sha256 of its content and a 0 byte. Symlinks are not followed. Equal files give equal
    /// fingerprints, and a tool-cache snapshot of the workspace gives the same one
    /// ([`crate::snapshot`]) without reading the files again.
    pub fn fingerprint(&self) -> io::Result<String> {
        Ok(crate::snapshot::tree_fingerprint(
            &crate::snapshot::work_tree(&self.root)?,
        ))
    }

    /// The state a shell command's output can depend on, for the tool cache: every folder, file
    /// and symlink of the work tree with its mode and content, plus what identifies the
    /// repository's commits and refs and the archives (see [`crate::snapshot`]). Two workspaces
    /// made from the same fixture and changed the same way have the same state.
    pub fn cache_state(&self) -> io::Result<String> {
        Ok(crate::snapshot::Snapshot::take(&self.root)?.state())
    }

    /// The changes since the first commit as a unified diff (git patch text): the first
    /// commit's tree against the working tree (through the index), untracked files included
    /// with their content, the archive folder excluded. Empty when nothing changed. Bounded: a
    /// file larger than [`DIFF_FILE_CAP`] is named with its size, not its content, and the text
    /// stops at [`DIFF_CAP`] bytes with a note of what was left out.
    ///
    /// The workspace's `.git` is not read (its configuration, index, objects and links are the
    /// agent's to change): the first commit comes from foldbench's own copy of its objects and
    /// the work tree is read as files (`git::detached`). Nested repositories are
    /// listed, never opened.
    pub fn diff(&self) -> Result<String, WorkspaceError> {
        let repo = crate::git::detached(&self.root, &self.objects)?;
        let tree = repo.find_commit(self.base)?.tree()?;
        let mut opts = DiffOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .show_untracked_content(true)
            .ignore_submodules(true)
            // Larger files count as binary: git never loads them to compute a patch.
            .max_size(i64::try_from(DIFF_FILE_CAP).unwrap_or(i64::MAX));
        let diff = repo.diff_tree_to_workdir(Some(&tree), Some(&mut opts))?;
        let mut out = Vec::new();
        let mut cut = Cut::default();
        diff.print(DiffFormat::Patch, |delta, _hunk, line| {
            let (old, new) = (delta.old_file(), delta.new_file());
            let in_archive = [old.path(), new.path()]
                .into_iter()
                .flatten()
                .any(|p| p.starts_with(FOLDBENCH_DIR));
            if in_archive {
                return true;
            }
            let mut piece = Vec::new();
            if matches!(line.origin(), '+' | '-' | ' ') {
                piece.push(line.origin() as u8);
            }
            let size = old.size().max(new.size());
            if line.origin() == 'B' && size > DIFF_FILE_CAP {
                let name = new.path().or(old.path()).unwrap_or(Path::new("?"));
                piece.extend_from_slice(
                    format!(
                        "{}: {size} bytes, larger than {DIFF_FILE_CAP} bytes; content left out\n",
                        name.display()
                    )
                    .as_bytes(),
                );
            } else {
                piece.extend_from_slice(line.content());
            }
            let file = new.path().or(old.path()).map(Path::to_path_buf);
            if cut.bytes > 0 || out.len() + piece.len() > DIFF_CAP {
                cut.add(file, piece.len());
            } else {
                out.extend_from_slice(&piece);
            }
            true
        })?;
        if cut.bytes > 0 {
            out.extend_from_slice(
                format!(
                    "[… the diff is cut at {DIFF_CAP} bytes: {} more bytes of {} file{} left out …]\n",
                    cut.bytes,
                    cut.files,
                    if cut.files == 1 { "" } else { "s" }
                )
                .as_bytes(),
            );
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

/// What [`Workspace::diff`] left out past [`DIFF_CAP`].
#[derive(Default)]
struct Cut {
    bytes: usize,
    files: usize,
    last: Option<PathBuf>,
}

impl Cut {
    fn add(&mut self, file: Option<PathBuf>, bytes: usize) {
        self.bytes += bytes;
        if file != self.last {
            self.files += 1;
            self.last = file;
        }
    }
}

/// Whether a workspace-relative path is inside the archive folder (`.foldbench/archive` or
/// below). The path is normalised lexically first (`./`, `a/../`); paths that cannot be
/// normalised (absolute, escaping) are not archive paths.
pub fn is_archive_path(rel: &str) -> bool {
    match tools::normalize(rel) {
        Ok(norm) => {
            norm == ARCHIVE_DIR
                || norm
                    .strip_prefix(ARCHIVE_DIR)
                    .is_some_and(|rest| rest.starts_with('/'))
        }
        Err(_) => false,
    }
}

/// Copies the fixture tree `src` into the existing directory `dst`.
pub(crate) fn copy_tree(src: &Path, dst: &Path) -> Result<(), WorkspaceError> {
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(src)
        .map_err(io_err(format!("cannot read fixture dir {}", src.display())))?
        .collect::<Result<_, _>>()
        .map_err(io_err(format!("cannot read fixture dir {}", src.display())))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let from = entry.path();
        let to = dst.join(entry.file_name());
        let ft = entry
            .file_type()
            .map_err(io_err(format!("cannot stat {}", from.display())))?;
        if ft.is_symlink() {
            return Err(WorkspaceError::Fixture {
                path: from,
                problem: "symlinks are not allowed in fixtures".to_string(),
            });
        }
        if entry.file_name() == ".git" {
            return Err(WorkspaceError::Fixture {
                path: from,
                problem: "a fixture must not contain a `.git` folder".to_string(),
            });
        }
        if ft.is_dir() {
            fs::create_dir(&to).map_err(io_err(format!("cannot create {}", to.display())))?;
            copy_tree(&from, &to)?;
        } else if ft.is_file() {
            // fs::copy copies the permission bits too (the executable bit included).
            fs::copy(&from, &to).map_err(io_err(format!(
                "cannot copy {} to {}",
                from.display(),
                to.display()
            )))?;
        } else {
            return Err(WorkspaceError::Fixture {
                path: from,
                problem: "only regular files and directories are allowed in fixtures".to_string(),
            });
        }
    }
    Ok(())
}

/// `git init`, exclude `.foldbench/`, stage everything, commit; returns the commit's id.
pub(crate) fn init_repo(root: &Path) -> Result<Oid, WorkspaceError> {
    crate::git::hermetic();
    let mut init = git2::RepositoryInitOptions::new();
    init.initial_head("main");
    let repo = Repository::init_opts(root, &init)?;

    let info = repo.path().join("info");
    fs::create_dir_all(&info).map_err(io_err(format!("cannot create {}", info.display())))?;
    let exclude = info.join("exclude");
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&exclude)
        .map_err(io_err(format!("cannot open {}", exclude.display())))?;
    f.write_all(format!("\n{FOLDBENCH_DIR}/\n").as_bytes())
        .map_err(io_err(format!("cannot write {}", exclude.display())))?;

    let mut index = repo.index()?;
    index.add_all(["*"], IndexAddOption::DEFAULT, None)?;
    index.write()?;
    let tree_id = index.write_tree()?;
    let tree = repo.find_tree(tree_id)?;
    let sig = Signature::new("foldbench", "foldbench@localhost", &Time::new(0, 0))?;
    let oid = repo.commit(Some("HEAD"), &sig, &sig, "fixture", &tree, &[])?;
    Ok(oid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn fixture() -> TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path();
        fs::create_dir_all(p.join("src/pkg")).expect("mkdir");
        fs::write(p.join("src/session.py"), "PORT = 8080\n").expect("write");
        fs::write(p.join("src/pkg/__init__.py"), "").expect("write");
        fs::write(p.join("README.md"), "# fixture\n").expect("write");
        fs::write(p.join("run.sh"), "#!/bin/sh\necho hi\n").expect("write");
        fs::set_permissions(p.join("run.sh"), fs::Permissions::from_mode(0o755)).expect("chmod");
        dir
    }

    fn write_archive(ws: &Workspace) {
        fs::create_dir_all(ws.archive_dir()).expect("mkdir");
        fs::write(ws.archive_dir().join("x"), "archived turn\n").expect("write");
    }

    #[test]
    fn a_snapshot_gives_the_workspace_fingerprint() {
        let fx = fixture();
        let ws = Workspace::create(fx.path(), false).expect("create");
        let snap = || crate::snapshot::Snapshot::take(ws.path()).expect("snapshot");
        assert_eq!(snap().fingerprint(), ws.fingerprint().expect("fp"));
        let before = ws.fingerprint().expect("fp");
        fs::write(ws.path().join("src/session.py"), "PORT = 9090\n").expect("write");
        assert_ne!(ws.fingerprint().expect("fp"), before);
        assert_eq!(snap().fingerprint(), ws.fingerprint().expect("fp"));
        // Modes and empty folders are the cache's business, not the fingerprint's.
        let fp = ws.fingerprint().expect("fp");
        fs::create_dir(ws.path().join("empty")).expect("mkdir");
        fs::set_permissions(
            ws.path().join("README.md"),
            fs::Permissions::from_mode(0o600),
        )
        .expect("chmod");
        assert_eq!(ws.fingerprint().expect("fp"), fp);
        assert_eq!(snap().fingerprint(), fp);
    }

    #[test]
    fn the_archive_set_aside_is_out_of_the_tree_until_the_guard_drops() {
        let fx = fixture();
        let ws = Workspace::create(fx.path(), false).expect("create");
        assert!(
            ws.set_archive_aside().expect("aside").is_none(),
            "no archive yet"
        );
        write_archive(&ws);
        let before = crate::snapshot::Snapshot::take(ws.path()).expect("snapshot");
        let guard = ws.set_archive_aside().expect("aside").expect("an archive");
        assert!(!ws.path().join(".foldbench").exists());
        let during = crate::snapshot::Snapshot::take(ws.path()).expect("snapshot");
        let plain = Workspace::create(fx.path(), false).expect("create");
        let fresh = crate::snapshot::Snapshot::take(plain.path()).expect("snapshot");
        assert_eq!(
            during.state(),
            fresh.state(),
            "the state of a workspace without archive"
        );
        assert_ne!(before.state(), fresh.state());
        drop(guard);
        assert_eq!(
            fs::read_to_string(ws.archive_dir().join("x")).expect("back"),
            "archived turn\n"
        );
        let after = crate::snapshot::Snapshot::take(ws.path()).expect("snapshot");
        assert_eq!(after.state(), before.state());
    }

    #[test]
    fn create_commits_the_fixture() {
        let fx = fixture();
        let ws = Workspace::create(fx.path(), false).expect("create");
        assert!(ws
            .path()
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("foldbench-")));
        let repo = Repository::open(ws.path()).expect("open");
        let head = repo.head().expect("head").peel_to_commit().expect("commit");
        assert_eq!(head.id().to_string(), ws.base_commit());
        assert_eq!(head.parent_count(), 0);
        assert_eq!(head.author().name(), Some("foldbench"));
        assert_eq!(head.author().email(), Some("foldbench@localhost"));
        assert_eq!(head.time().seconds(), 0);
        let tree = head.tree().expect("tree");
        for path in [
            "src/session.py",
            "src/pkg/__init__.py",
            "README.md",
            "run.sh",
        ] {
            assert!(tree.get_path(Path::new(path)).is_ok(), "{path} committed");
        }
        let run = tree.get_path(Path::new("run.sh")).expect("run.sh");
        assert_eq!(run.filemode(), 0o100755, "executable bit kept");
        let mode = fs::metadata(ws.path().join("run.sh"))
            .expect("stat")
            .permissions()
            .mode();
        assert_ne!(mode & 0o111, 0);
        assert_eq!(
            fs::read_to_string(ws.path().join("src/session.py")).expect("read"),
            "PORT = 8080\n"
        );
        // Same fixture, same commit id.
        let ws2 = Workspace::create(fx.path(), false).expect("create");
        assert_eq!(ws.base_commit(), ws2.base_commit());
        assert_eq!(
            ws.fingerprint().expect("fp"),
            ws2.fingerprint().expect("fp")
        );
        assert!(ws.diff().expect("diff").is_empty());
    }

    #[test]
    fn archive_is_invisible_to_git_fingerprint_and_diff() {
        let fx = fixture();
        let ws = Workspace::create(fx.path(), false).expect("create");
        let before = ws.fingerprint().expect("fp");
        write_archive(&ws);
        let repo = Repository::open(ws.path()).expect("open");
        let mut opts = git2::StatusOptions::new();
        opts.include_untracked(true).recurse_untracked_dirs(true);
        let statuses = repo.statuses(Some(&mut opts)).expect("status");
        assert_eq!(statuses.len(), 0, "git status is clean");
        assert_eq!(ws.diff().expect("diff"), "");
        assert_eq!(ws.fingerprint().expect("fp"), before);
        let exclude =
            fs::read_to_string(ws.path().join(".git/info/exclude")).expect("read exclude");
        assert!(exclude.lines().any(|l| l == ".foldbench/"));
    }

    #[test]
    fn fingerprint_changes_with_files() {
        let fx = fixture();
        let ws = Workspace::create(fx.path(), false).expect("create");
        let a = ws.fingerprint().expect("fp");
        assert_eq!(a.len(), 64);
        fs::write(ws.path().join("src/session.py"), "PORT = 0\n").expect("write");
        let b = ws.fingerprint().expect("fp");
        assert_ne!(a, b);
        fs::write(ws.path().join("src/session.py"), "PORT = 8080\n").expect("write");
        assert_eq!(
            ws.fingerprint().expect("fp"),
            a,
            "same files, same fingerprint"
        );
        fs::write(ws.path().join("new.txt"), "").expect("write");
        assert_ne!(ws.fingerprint().expect("fp"), a);
    }

    #[test]
    fn diff_shows_edits_and_new_files() {
        let fx = fixture();
        let ws = Workspace::create(fx.path(), false).expect("create");
        write_archive(&ws);
        fs::write(ws.path().join("src/session.py"), "PORT = 0\n").expect("write");
        fs::write(ws.path().join("notes.txt"), "new file\n").expect("write");
        let diff = ws.diff().expect("diff");
        assert!(
            diff.contains("diff --git a/src/session.py b/src/session.py"),
            "{diff}"
        );
        assert!(diff.contains("-PORT = 8080\n"), "{diff}");
        assert!(diff.contains("+PORT = 0\n"), "{diff}");
        assert!(diff.contains("b/notes.txt"), "{diff}");
        assert!(diff.contains("+new file\n"), "{diff}");
        assert!(!diff.contains("archived turn"), "{diff}");
        assert!(!diff.contains(".foldbench"), "{diff}");
    }

    /// `n` bytes of text lines.
    fn text_of(n: usize) -> String {
        let line = "the quick brown fox jumps over the lazy dog 0123456789\n";
        line.repeat(n / line.len() + 1)[..n].to_string()
    }

    #[test]
    fn a_large_new_file_is_named_in_the_diff_not_copied() {
        let fx = fixture();
        let ws = Workspace::create(fx.path(), false).expect("create");
        fs::write(
            ws.path().join("big.log"),
            text_of(3 * DIFF_FILE_CAP as usize),
        )
        .expect("write");
        fs::write(ws.path().join("notes.txt"), "new file\n").expect("write");
        let diff = ws.diff().expect("diff");
        assert!(diff.len() < 4096, "{} bytes", diff.len());
        assert!(diff.contains("b/big.log"), "{diff}");
        assert!(
            diff.contains(&format!("larger than {DIFF_FILE_CAP} bytes")),
            "{diff}"
        );
        assert!(diff.contains("+new file\n"), "{diff}");
    }

    #[test]
    fn the_whole_diff_is_capped_with_a_note() {
        let fx = fixture();
        let ws = Workspace::create(fx.path(), false).expect("create");
        let each = DIFF_FILE_CAP as usize - 1000;
        let files = DIFF_CAP / each + 3;
        for i in 0..files {
            fs::write(ws.path().join(format!("f{i:02}.txt")), text_of(each)).expect("write");
        }
        let diff = ws.diff().expect("diff");
        assert!(diff.len() <= DIFF_CAP + 200, "{} bytes", diff.len());
        let note = diff.lines().last().unwrap_or("");
        assert!(
            note.starts_with("[… the diff is cut at ")
                && note.contains("files left out")
                && note.ends_with(" …]"),
            "{note}"
        );
    }

    #[test]
    fn fixture_symlink_is_refused() {
        let fx = fixture();
        symlink("/etc/passwd", fx.path().join("passwd")).expect("symlink");
        let err = Workspace::create(fx.path(), false).expect_err("must fail");
        assert!(matches!(err, WorkspaceError::Fixture { .. }), "{err}");
        assert!(err.to_string().contains("symlink"), "{err}");
    }

    #[test]
    fn missing_fixture_is_an_error() {
        let fx = fixture();
        let err = Workspace::create(&fx.path().join("nope"), false).expect_err("must fail");
        assert!(matches!(err, WorkspaceError::Io { .. }), "{err}");
    }

    #[test]
    fn workspaces_of_dead_runs_are_swept_and_live_or_kept_ones_stay() {
        let tmp = tempfile::tempdir().expect("tempdir");
        // A pid that surely belongs to no process any more: a child that has exited and been
        // reaped.
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let dead = child.id();
        child.wait().expect("wait");
        let dead_ws = tmp.path().join(format!("{}abc", owned_prefix(dead)));
        let live_ws = tmp
            .path()
            .join(format!("{}abc", owned_prefix(std::process::id())));
        let kept_ws = tmp.path().join(format!("{KEPT_PREFIX}abc"));
        let other = tmp.path().join("foldbench-pnotapid-x");
        // The same dead pid in another PID namespace (a container sharing the folder): not
        // this namespace's process, so not swept.
        let ns = pid_namespace().expect("a PID namespace");
        let foreign = tmp
            .path()
            .join(format!("foldbench-p{dead}-n{}-abc", ns + 1));
        // A name from before the namespace was written counts as this namespace's.
        let legacy = tmp.path().join(format!("foldbench-p{dead}-legacy"));
        for d in [&dead_ws, &live_ws, &kept_ws, &other, &foreign, &legacy] {
            fs::create_dir_all(d.join("src")).expect("mkdir");
        }
        assert_eq!(sweep_stale(tmp.path()), 2);
        assert!(!dead_ws.exists() && !legacy.exists());
        assert!(live_ws.exists() && kept_ws.exists() && other.exists() && foreign.exists());
        let me = std::process::id();
        assert_eq!(sweep(tmp.path(), |pid| pid == me), 1);
        assert!(!live_ws.exists() && kept_ws.exists());
    }

    #[test]
    fn workspaces_are_named_after_their_process() {
        let fx = fixture();
        let ws = Workspace::create(fx.path(), false).expect("create");
        let name = ws.path().file_name().unwrap().to_string_lossy().to_string();
        assert_eq!(owner_of(&name), Some(std::process::id()), "{name}");
        let kept = Workspace::create(fx.path(), true).expect("create");
        let path = kept.path().to_path_buf();
        assert!(path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(KEPT_PREFIX));
        fs::remove_dir_all(&path).expect("cleanup");
    }

    #[test]
    fn keep_leaves_the_dir() {
        let fx = fixture();
        let ws = Workspace::create(fx.path(), true).expect("create");
        let path = ws.path().to_path_buf();
        drop(ws);
        assert!(path.join("src/session.py").exists());
        fs::remove_dir_all(&path).expect("cleanup");

        let ws = Workspace::create(fx.path(), false).expect("create");
        let path = ws.path().to_path_buf();
        drop(ws);
        assert!(!path.exists());
    }

    #[test]
    fn dev_shm_is_used_when_it_is_a_large_enough_tmpfs() {
        let host =
            "sysfs /sys sysfs rw 0 0\ntmpfs /dev/shm tmpfs rw,nosuid,nodev,size=24684084k 0 0\n";
        assert!(shm_usable(host));
        assert!(shm_usable("tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n"));
        // A container's default, a disk, none, and a small tmpfs mounted over a large one.
        assert!(!shm_usable(
            "shm /dev/shm tmpfs rw,nosuid,size=65536k 0 0\n"
        ));
        assert!(!shm_usable("/dev/vda /dev/shm ext4 rw 0 0\n"));
        assert!(!shm_usable("proc /proc proc rw 0 0\n"));
        assert!(!shm_usable(&format!(
            "{host}shm /dev/shm tmpfs rw,size=65536k 0 0\n"
        )));
    }

    #[test]
    fn archive_paths() {
        assert!(is_archive_path(".foldbench/archive"));
        assert!(is_archive_path(".foldbench/archive/fold-1-2.md"));
        assert!(is_archive_path("./.foldbench/archive/x"));
        assert!(Workspace::is_archive_path("src/../.foldbench/archive/x"));
        assert!(!is_archive_path(".foldbench/archived"));
        assert!(!is_archive_path(".foldbench"));
        assert!(!is_archive_path("src/.foldbench/archive/x"));
        assert!(!is_archive_path("../.foldbench/archive/x"));
        assert_eq!(Workspace::ARCHIVE_DIR, ".foldbench/archive");
    }

    fn secs(n: u64) -> ToolLimits {
        ToolLimits {
            shell_timeout: std::time::Duration::from_secs(n),
            ..ToolLimits::default()
        }
    }

    #[tokio::test]
    async fn setup_runs_and_reports_failures() {
        let fx = fixture();
        let ws = Workspace::create(fx.path(), false).expect("create");
        ws.run_setup(
            &[
                "echo made > made.txt".to_string(),
                "test -f made.txt".to_string(),
            ],
            &secs(10),
        )
        .await
        .expect("setup ok");
        assert!(ws.path().join("made.txt").exists());

        let err = ws
            .run_setup(
                &[
                    "true".to_string(),
                    "echo broken-step; exit 4".to_string(),
                    "touch never.txt".to_string(),
                ],
                &secs(10),
            )
            .await
            .expect_err("must fail");
        let text = err.to_string();
        assert!(text.contains("`echo broken-step; exit 4`"), "{text}");
        assert!(text.contains("exit code 4"), "{text}");
        assert!(text.contains("broken-step"), "{text}");
        assert!(!ws.path().join("never.txt").exists());

        let err = ws
            .run_setup(&["sleep 100".to_string()], &secs(1))
            .await
            .expect_err("must time out");
        assert!(err.to_string().contains("timed out"), "{err}");
    }
}
