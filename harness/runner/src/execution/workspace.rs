//! A cell's workspace: a temp dir holding a copy of the task's fixture, committed as the first
//! commit of a fresh git repo, with the archive folder (`.foldbench/`) excluded from git. The
//! copy and the repository are made once per fixture and process and written out per cell
//! (`crate::execution::template`).
//!
//! The workspace gives the runner what it needs around the tools: the setup commands, a
//! fingerprint of the files (to check that two arms start from and end in the same state) and
//! the diff against the fixture (saved with the cell's record).

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use git2::{DiffFormat, DiffOptions, Oid};
use tempfile::TempDir;

pub use crate::execution::dirs::{close_and_sweep_own, workspaces_dir};
pub(crate) use crate::execution::dirs::{owned_prefix, sweep_stale, KEPT_PREFIX};
pub use crate::execution::repo::WorkspaceError;
pub(crate) use crate::execution::repo::FILE_TIME;
use crate::execution::repo::{io_err, FOLDBENCH_DIR};
use crate::execution::shell::{self, ToolLimits};
use crate::execution::snapshot::Known;

/// The archive folder, relative to the workspace root. Policies write folded turns and strategy
/// branches here; the model may read them back; git ignores them.
pub use harness_core::ARCHIVE_DIR;

/// A changed file larger than this (in bytes, before or after) is named in the diff with its
/// size instead of its content.
pub(crate) const DIFF_FILE_CAP: u64 = 1 << 20;

/// The most bytes of diff text kept (`diff.patch`); the rest is left out with a note saying how
/// much.
pub(crate) const DIFF_CAP: usize = 4 << 20;

/// `.foldbench/` set aside by [`Workspace::set_archive_aside`]; dropping it puts the folder back.
#[derive(Debug)]
pub(crate) struct ArchiveAside {
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
    objects: std::sync::Arc<crate::execution::git::BaseObjects>,
    /// The work tree as it was written (see `snapshot::Known`).
    created: crate::execution::snapshot::Tree,
    /// Owns the temp dir (removed on drop); `None` when the workspace is kept.
    _tmp: Option<TempDir>,
}

impl Workspace {
    /// Same as the module's [`ARCHIVE_DIR`].
    pub(crate) const ARCHIVE_DIR: &'static str = ARCHIVE_DIR;

    /// Creates a workspace from the fixture folder: a fresh folder in [`workspaces_dir`] (named
    /// `foldbench-p<PID>-n<NS>-…` after the process that owns it (`owned_prefix`), so
    /// `sweep_stale` can tell a dead
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
        let parent = if keep {
            std::env::temp_dir()
        } else {
            workspaces_dir()
        };
        let tmp = crate::execution::dirs::owned_tempdir_in(&prefix, &parent)
            .map_err(io_err("cannot create a workspace"))?;
        let root = tmp
            .path()
            .canonicalize()
            .map_err(io_err("cannot resolve the temp dir"))?;
        // The fixture copied and committed, written from the task's prepared workspace.
        let (base, objects, created) = crate::execution::template::instantiate(fixture, &root)?;
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
            created,
            _tmp: tmp,
        })
    }

    /// The work tree as the workspace was made (before any setup command).
    pub(crate) fn created_tree(&self) -> Known {
        Known::tree(self.created.clone())
    }

    /// The workspace root (absolute, canonical).
    pub(crate) fn path(&self) -> &Path {
        &self.root
    }

    /// The archive folder's absolute path (it need not exist yet). For the tests.
    #[cfg(test)]
    pub(crate) fn archive_dir(&self) -> PathBuf {
        self.root.join(ARCHIVE_DIR)
    }

    /// Moves `.foldbench/` (the archive) out of the work tree until the returned guard is
    /// dropped: the task's checks judge the repository the agent left, which is then the same
    /// folder under every arm (an archive holds old versions of the code a `grep -r` would find),
    /// and their tool-cache keys do not change with the archive. `None` when there is none. The
    /// folder waits in a sibling temp folder of this process (swept like a workspace).
    pub(crate) fn set_archive_aside(&self) -> io::Result<Option<ArchiveAside>> {
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

    /// The id of the first commit (the fixture as it was copied). For the tests.
    #[cfg(test)]
    fn base_commit(&self) -> String {
        self.base.to_string()
    }

    /// Runs the task's setup commands in order, with the shell tool's runner (same directory,
    /// sandbox, environment and process-group handling; `limits`' shell timeout per command),
    /// then gives every file, folder and link of the work tree (the root and `.git` itself, not
    /// what `.git` holds) the time `FILE_TIME`. The first command that exits non-zero or times
    /// out is an error naming it, with its output.
    pub async fn run_setup(
        &self,
        commands: &[String],
        limits: &ToolLimits,
    ) -> Result<(), WorkspaceError> {
        self.run_setup_known(commands, limits, Known::unknown())
            .await
            .map(|_| ())
    }

    /// [`Workspace::run_setup`] from the work tree `known` (read when it is not), returning the
    /// work tree the setup left when that is known (see `snapshot::Known`; the file times it
    /// sets are not part of it).
    pub(crate) async fn run_setup_known(
        &self,
        commands: &[String],
        limits: &ToolLimits,
        mut known: Known,
    ) -> Result<Known, WorkspaceError> {
        let timeout = limits.shell_timeout;
        for command in commands {
            let (run, _, after) =
                shell::run_shell_known(&self.root, command, timeout, limits, known)
                    .await
                    .map_err(io_err(format!("cannot run setup command `{command}`")))?;
            known = after;
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
        set_file_times(&self.root, true)
            .map_err(io_err("cannot set the workspace's file times"))?;
        Ok(known)
    }

    /// Hex sha256 over every regular file below the root except `.git/` and `.foldbench/`: the
    /// files in order of their relative paths, each contributing its path bytes, a 0 byte, the
    /// sha256 of its content and a 0 byte. Symlinks are not followed. Equal files give equal
    /// fingerprints, and a tool-cache snapshot of the workspace gives the same one
    /// (`crate::execution::snapshot`) without reading the files again.
    pub fn fingerprint(&self) -> io::Result<String> {
        Ok(crate::execution::snapshot::tree_fingerprint(
            &crate::execution::snapshot::work_tree(&self.root)?,
        ))
    }

    /// The state a shell command's output can depend on, for the tool cache: every folder, file
    /// and symlink of the work tree with its mode and content, plus what identifies the
    /// repository's commits and refs and the archives (see `crate::execution::snapshot`). Two workspaces
    /// made from the same fixture and changed the same way have the same state.
    pub fn cache_state(&self) -> io::Result<String> {
        Ok(crate::execution::snapshot::Snapshot::take(&self.root)?.state())
    }

    /// The changes since the first commit as a unified diff (git patch text): the first
    /// commit's tree against the working tree (through the index), untracked files included
    /// with their content, the archive folder excluded. Empty when nothing changed. Bounded: a
    /// file larger than `DIFF_FILE_CAP` is named with its size, not its content, and the text
    /// stops at `DIFF_CAP` bytes with a note of what was left out.
    ///
    /// The workspace's `.git` is not read (its configuration, index, objects and links are the
    /// agent's to change): the first commit comes from foldbench's own copy of its objects and
    /// the work tree is read as files (`git::detached`). Nested repositories are
    /// listed, never opened.
    pub fn diff(&self) -> Result<String, WorkspaceError> {
        let repo = crate::execution::git::detached(&self.root, &self.objects)?;
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

/// Why a workspace-relative path cannot be normalised; its display is the whole text a tool
/// result shows the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum PathError {
    /// Absolute, or its `..` leave the root.
    #[error(
        "error: path `{rel}` is outside the workspace; use a path relative to the workspace root"
    )]
    Outside {
        /// The path as given.
        rel: String,
    },
    /// A component is not valid UTF-8.
    #[error("error: path `{rel}` is not valid UTF-8")]
    NotUtf8 {
        /// The path as given.
        rel: String,
    },
}

/// Normalises a workspace-relative path lexically: drops `.` components, resolves `..`, joins
/// with `/`; the root itself is `.`. Refuses absolute paths and paths that leave the root.
pub(crate) fn normalize(rel: &str) -> Result<String, PathError> {
    let outside = || PathError::Outside {
        rel: rel.to_string(),
    };
    let mut parts: Vec<&str> = Vec::new();
    for comp in Path::new(rel).components() {
        match comp {
            Component::CurDir => {}
            Component::ParentDir => {
                if parts.pop().is_none() {
                    return Err(outside());
                }
            }
            Component::Normal(s) => match s.to_str() {
                Some(s) => parts.push(s),
                None => {
                    return Err(PathError::NotUtf8 {
                        rel: rel.to_string(),
                    })
                }
            },
            Component::RootDir | Component::Prefix(_) => return Err(outside()),
        }
    }
    if parts.is_empty() {
        Ok(".".to_string())
    } else {
        Ok(parts.join("/"))
    }
}

/// Whether a workspace-relative path is inside the archive folder (`.foldbench/archive` or
/// below). The path is normalised lexically first (`./`, `a/../`); paths that cannot be
/// normalised (absolute, escaping) are not archive paths.
pub(crate) fn is_archive_path(rel: &str) -> bool {
    match normalize(rel) {
        Ok(norm) => {
            norm == ARCHIVE_DIR
                || norm
                    .strip_prefix(ARCHIVE_DIR)
                    .is_some_and(|rest| rest.starts_with('/'))
        }
        Err(_) => false,
    }
}

/// Sets the modification and access time of `path` (a link itself, not what it points to) and,
/// for a folder, of everything below it, to [`FILE_TIME`]; at the `root` of a workspace, `.git`
/// gets it and what `.git` holds does not.
fn set_file_times(path: &Path, root: bool) -> io::Result<()> {
    set_file_time(path)?;
    if !fs::symlink_metadata(path)?.is_dir() {
        return Ok(());
    }
    for entry in fs::read_dir(path)? {
        let entry = entry?;
        if root && entry.file_name() == ".git" {
            set_file_time(&entry.path())?;
        } else {
            set_file_times(&entry.path(), false)?;
        }
    }
    Ok(())
}

/// [`set_file_times`] of one entry.
fn set_file_time(path: &Path) -> io::Result<()> {
    let t = rustix::fs::Timespec {
        tv_sec: FILE_TIME,
        tv_nsec: 0,
    };
    let times = rustix::fs::Timestamps {
        last_access: t,
        last_modification: t,
    };
    rustix::fs::utimensat(
        rustix::fs::CWD,
        path,
        &times,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .map_err(|e| {
        io::Error::new(
            io::Error::from(e).kind(),
            format!("{}: {e}", path.display()),
        )
    })
}

#[cfg(test)]
mod tests;
