//! The repository copy and init: a task's fixture copied into a folder and committed as the
//! first commit of a fresh git repo, with the archive folder (`.foldbench/`) excluded from git;
//! the errors of making and using a workspace; the one time a workspace's files are given.
//!
//! The template ([`crate::execution::template`]) does this once per fixture and process; the
//! [`crate::execution::workspace`] writes the result out per cell.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use git2::{IndexAddOption, Oid, Repository, Signature, Time};

/// The folder excluded from git (and from the fingerprint and the diff), holding the archive.
pub(crate) const FOLDBENCH_DIR: &str = ".foldbench";

/// The modification and access time of every file, folder and link of a workspace once the
/// task's setup has run, in seconds since the epoch: 2024-05-03 00:00:00 UTC (the tasks' own
/// dates are in spring 2024). The fixture's copy and the files setup commands write would
/// otherwise carry the moment this cell ran, and `ls -l` would print it: a different output on
/// every run, which a fold's archive and a request's token count carry on. The shell gets it as
/// `SOURCE_DATE_EPOCH` too. Files the agent writes later carry the real time of the write.
pub(crate) const FILE_TIME: i64 = 1_714_694_400;

/// Errors of creating or using a workspace.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// A filesystem operation failed.
    #[error("{context}")]
    Io {
        /// What was being done, naming the path.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A git operation failed.
    #[error("git")]
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

pub(crate) fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> WorkspaceError {
    let context = context.into();
    move |source| WorkspaceError::Io { context, source }
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
    crate::execution::git::hermetic();
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
