//! libgit2, kept from acting on what an agent planted.
//!
//! foldbench reads a workspace's repository outside the sandbox, with its own privileges, after
//! the agent's commands had their way with it. Nothing the agent wrote under `.git` may steer
//! that read: `git config core.worktree /host/dir` would make the diff carry host files,
//! `include.path` would read host files as configuration, `.git/objects/info/alternates` would
//! read another repository's objects, a `.git` file (`gitdir: /elsewhere`) or link would swap
//! the repository for a host one, a planted index could be of any size. So the diff never opens
//! the workspace's `.git` at all: [`detached`] builds a repository object around an object
//! database in memory holding the first commit's objects (kept from when the template was made,
//! [`BaseObjects`]), with an empty index in memory, no configuration file of the repository, and
//! the workspace as its work tree. libgit2 runs no programs (no hooks, no filter or textconv
//! drivers); the work tree's own `.gitattributes` and `.gitignore` are files of the workspace
//! like any other.
//!
//! [`hermetic`] also keeps the user's and the system's git configuration out of every
//! repository foldbench makes or reads (the first commit is the same on every machine).

use std::path::Path;
use std::sync::Once;

use git2::{ObjectType, Oid, Repository};

/// Every object reachable from the first commit of a prepared workspace (commit, trees,
/// blobs), as libgit2 stores them.
#[derive(Debug, Default)]
pub(crate) struct BaseObjects {
    objects: Vec<(ObjectType, Vec<u8>)>,
}

impl BaseObjects {
    /// The objects of `commit` in `repo`: the commit, its tree and everything below it.
    pub(crate) fn read(repo: &Repository, commit: Oid) -> Result<BaseObjects, git2::Error> {
        let odb = repo.odb()?;
        let tree = repo.find_commit(commit)?.tree()?;
        let mut ids = vec![commit, tree.id()];
        tree.walk(git2::TreeWalkMode::PreOrder, |_, entry| {
            ids.push(entry.id());
            git2::TreeWalkResult::Ok
        })?;
        let mut out = BaseObjects::default();
        for id in ids {
            let o = odb.read(id)?;
            out.objects.push((o.kind(), o.data().to_vec()));
        }
        Ok(out)
    }
}

/// Makes libgit2 read no configuration but a repository's own: the global, XDG, system and
/// program-data search paths are emptied, once per process, before the first use of libgit2
/// (every use in foldbench calls this first).
pub(crate) fn hermetic() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for level in [
            git2::ConfigLevel::System,
            git2::ConfigLevel::XDG,
            git2::ConfigLevel::Global,
            git2::ConfigLevel::ProgramData,
        ] {
            set_search_path(level);
        }
    });
}

#[allow(unsafe_code)]
fn set_search_path(level: git2::ConfigLevel) {
    // SAFETY: libgit2's options are process-global; this runs inside `hermetic`'s `Once`, which
    // every use of libgit2 in this crate goes through first, so no other thread is inside
    // libgit2 while the paths change. An error leaves the default path, which only matters on
    // a machine with a user or system git configuration.
    let _ = unsafe { git2::opts::set_search_path(level, "") };
}

/// A repository object reading only what foldbench gave it: the objects of `base` (in an
/// object database in memory), an empty index in memory, no configuration file, and `root` as
/// its work tree, with `.foldbench/` ignored. The workspace's `.git` is never opened.
pub(crate) fn detached(root: &Path, base: &BaseObjects) -> Result<Repository, git2::Error> {
    hermetic();
    let odb = git2::Odb::new()?;
    odb.add_new_mempack_backend(1)?;
    for (kind, data) in &base.objects {
        odb.write(*kind, data)?;
    }
    let repo = Repository::from_odb(odb)?;
    repo.set_workdir(root, false)?;
    repo.set_index(&mut git2::Index::new()?)?;
    repo.add_ignore_rule(".foldbench/\n")?;
    Ok(repo)
}
