//! A task's prepared workspace, made once per process and written out for each cell.
//!
//! Every cell of a task starts from the same state: the fixture copied and committed as the
//! first commit of a fresh repository. Making it per cell (copy, `git init`, one loose object
//! file and folder per blob and tree, the commit) cost more than the rest of a lean cell, so the
//! first cell of a fixture makes it once in a scratch folder, packs the objects into one pack,
//! and keeps every file of the result in memory; each workspace is then a plain write of those
//! files (the work tree, and a `.git` of a dozen files). The repository is the one the direct way
//! makes — same commit id, same tree, same refs — with its objects in a pack instead of loose.
//!
//! A template is keyed by the fixture's path and checked against a signature of the fixture
//! (each entry's path, kind, size, mode and modification time), so a fixture edited between
//! two cells is prepared again.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use git2::Oid;
use sha2::{Digest, Sha256};

use crate::execution::git::BaseObjects;
use crate::execution::repo::WorkspaceError;
use crate::execution::snapshot::Tree;

/// One entry of a prepared workspace, relative to its root.
#[derive(Debug)]
enum Item {
    /// A folder (created with the default mode, as the direct copy does).
    Dir(String),
    /// A file with its exact permission bits and content.
    File {
        rel: String,
        mode: u32,
        bytes: Vec<u8>,
    },
}

/// A prepared workspace.
#[derive(Debug)]
struct Template {
    /// The fixture's signature when it was prepared.
    signature: [u8; 32],
    /// Folders before what they hold.
    items: Vec<Item>,
    /// The first commit.
    base: Oid,
    /// The first commit's objects, for diffs that never open a workspace's `.git`.
    objects: Arc<BaseObjects>,
    /// The work tree every workspace written from it starts with, read from the first one
    /// (the folders' modes are this process's umask's).
    tree: std::sync::OnceLock<Tree>,
}

static TEMPLATES: Mutex<Option<HashMap<PathBuf, Arc<Template>>>> = Mutex::new(None);

/// Writes the prepared workspace of `fixture` into the empty folder `root` (preparing it first
/// when this process has not, or when the fixture changed since); returns the first commit's id,
/// its objects and the work tree written (what `snapshot::work_tree` reads there).
pub(crate) fn instantiate(
    fixture: &Path,
    root: &Path,
) -> Result<(Oid, Arc<BaseObjects>, Tree), WorkspaceError> {
    let template = template_of(fixture)?;
    for item in &template.items {
        match item {
            Item::Dir(rel) => {
                let p = root.join(rel);
                fs::create_dir(&p).map_err(io_err(format!("cannot create {}", p.display())))?;
            }
            Item::File { rel, mode, bytes } => {
                let p = root.join(rel);
                let write = || -> io::Result<()> {
                    let mut f = fs::File::create(&p)?;
                    f.write_all(bytes)?;
                    f.set_permissions(fs::Permissions::from_mode(*mode))
                };
                write().map_err(io_err(format!("cannot write {}", p.display())))?;
            }
        }
    }
    let tree = match template.tree.get() {
        Some(t) => t.clone(),
        None => {
            let t = crate::execution::snapshot::work_tree(root)
                .map_err(io_err(format!("cannot read {}", root.display())))?;
            template.tree.get_or_init(|| t).clone()
        }
    };
    Ok((template.base, Arc::clone(&template.objects), tree))
}

fn template_of(fixture: &Path) -> Result<Arc<Template>, WorkspaceError> {
    let signature = signature_of(fixture)
        .map_err(io_err(format!("cannot read fixture {}", fixture.display())))?;
    let mut guard = TEMPLATES.lock().unwrap_or_else(|p| p.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    if let Some(t) = map.get(fixture) {
        if t.signature == signature {
            return Ok(Arc::clone(t));
        }
    }
    let t = Arc::new(prepare(fixture, signature)?);
    map.insert(fixture.to_path_buf(), Arc::clone(&t));
    Ok(t)
}

/// Makes the workspace the direct way in a scratch folder, packs its objects and reads it in.
fn prepare(fixture: &Path, signature: [u8; 32]) -> Result<Template, WorkspaceError> {
    let scratch = crate::execution::dirs::owned_tempdir_in(
        &format!(
            "{}template-",
            crate::execution::dirs::owned_prefix(std::process::id())
        ),
        &crate::execution::dirs::workspaces_dir(),
    )
    .map_err(io_err("cannot create a temp dir"))?;
    let root = scratch.path();
    crate::execution::repo::copy_tree(fixture, root)?;
    let base = crate::execution::repo::init_repo(root)?;
    let objects = root.join(".git/objects");
    let base_objects = {
        crate::execution::git::hermetic();
        let repo = git2::Repository::open(root)?;
        let mut pack = repo.packbuilder()?;
        pack.insert_commit(base)?;
        pack.write(&objects.join("pack"), 0o444)?;
        BaseObjects::read(&repo, base)?
    };
    let mut items = Vec::new();
    read_in(root, "", &mut items).map_err(io_err(format!("cannot read {}", root.display())))?;
    // The loose objects are in the pack now.
    items.retain(|i| {
        let rel = match i {
            Item::Dir(r) | Item::File { rel: r, .. } => r,
        };
        match rel.strip_prefix(".git/objects/") {
            Some(rest) => rest.starts_with("pack") || rest.starts_with("info"),
            None => true,
        }
    });
    Ok(Template {
        signature,
        items,
        base,
        objects: Arc::new(base_objects),
        tree: std::sync::OnceLock::new(),
    })
}

/// Reads every folder and file below `dir` (sorted by name, folders before their content).
fn read_in(dir: &Path, prefix: &str, out: &mut Vec<Item>) -> io::Result<()> {
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let rel = format!("{prefix}{}", e.file_name().to_string_lossy());
        let meta = fs::symlink_metadata(e.path())?;
        if meta.is_dir() {
            out.push(Item::Dir(rel.clone()));
            read_in(&e.path(), &format!("{rel}/"), out)?;
        } else if meta.is_file() {
            out.push(Item::File {
                rel,
                mode: meta.mode() & 0o7777,
                bytes: fs::read(e.path())?,
            });
        } else {
            return Err(io::Error::other(format!(
                "{}: not a file or folder",
                e.path().display()
            )));
        }
    }
    Ok(())
}

/// A digest of the fixture's entries: path, kind, size, mode and modification time.
fn signature_of(fixture: &Path) -> io::Result<[u8; 32]> {
    let mut h = Sha256::new();
    h.update(fixture.as_os_str().as_encoded_bytes());
    sign(fixture, &mut h)?;
    Ok(h.finalize().into())
}

fn sign(dir: &Path, h: &mut Sha256) -> io::Result<()> {
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let m = fs::symlink_metadata(e.path())?;
        h.update(e.file_name().as_encoded_bytes());
        h.update([0u8]);
        for n in [
            u64::from(m.mode()),
            m.size(),
            m.mtime() as u64,
            m.mtime_nsec() as u64,
            m.ino(),
        ] {
            h.update(n.to_le_bytes());
        }
        if m.is_dir() {
            sign(&e.path(), h)?;
            h.update([1u8]);
        }
    }
    Ok(())
}

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> WorkspaceError {
    let context = context.into();
    move |source| WorkspaceError::Io { context, source }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("src/pkg")).unwrap();
        fs::write(d.path().join("src/pkg/a.py"), "A = 1\n").unwrap();
        fs::write(d.path().join("run.sh"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(d.path().join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        d
    }

    /// The direct way: copy, init, commit.
    fn direct(fixture: &Path) -> (tempfile::TempDir, Oid) {
        let d = tempfile::tempdir().unwrap();
        crate::execution::repo::copy_tree(fixture, d.path()).unwrap();
        let oid = crate::execution::repo::init_repo(d.path()).unwrap();
        (d, oid)
    }

    #[test]
    fn a_workspace_from_the_template_is_the_repository_the_direct_way_makes() {
        let fx = fixture();
        let (want, want_oid) = direct(fx.path());
        for _ in 0..2 {
            let got = tempfile::tempdir().unwrap();
            let (oid, _, tree) = instantiate(fx.path(), got.path()).unwrap();
            assert_eq!(oid, want_oid);
            let (a, b) = (
                crate::execution::snapshot::Snapshot::take(got.path()).unwrap(),
                crate::execution::snapshot::Snapshot::take(want.path()).unwrap(),
            );
            assert_eq!(a.tree, b.tree, "same work tree, modes included");
            assert_eq!(tree, a.tree, "the tree it says it wrote");
            let repo = git2::Repository::open(got.path()).unwrap();
            let head = repo.head().unwrap().peel_to_commit().unwrap();
            assert_eq!(head.id(), want_oid);
            let blob = head
                .tree()
                .unwrap()
                .get_path(Path::new("src/pkg/a.py"))
                .unwrap();
            assert_eq!(
                repo.find_blob(blob.id()).unwrap().content(),
                b"A = 1\n",
                "objects readable from the pack"
            );
            let mut opts = git2::StatusOptions::new();
            opts.include_untracked(true);
            assert_eq!(repo.statuses(Some(&mut opts)).unwrap().len(), 0, "clean");
        }
    }

    #[test]
    fn an_edited_fixture_is_prepared_again() {
        let fx = fixture();
        let first = tempfile::tempdir().unwrap();
        let (a, _, _) = instantiate(fx.path(), first.path()).unwrap();
        fs::write(fx.path().join("src/pkg/a.py"), "A = 22\n").unwrap();
        let second = tempfile::tempdir().unwrap();
        let (b, _, _) = instantiate(fx.path(), second.path()).unwrap();
        assert_ne!(a, b);
        assert_eq!(
            fs::read_to_string(second.path().join("src/pkg/a.py")).unwrap(),
            "A = 22\n"
        );
        assert_eq!(b, direct(fx.path()).1);
    }
}
