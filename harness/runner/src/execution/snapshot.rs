//! What the tool cache knows of a workspace: a snapshot of its work tree (every folder, file and
//! symlink with its mode and content hash) and of what else a command can see (`.git` and the
//! archive folder), the state string the cache keys on, and the file changes between two
//! snapshots — stored with a command's result and applied on a hit, so the workspace ends as the
//! real call left it.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The folders at the root that are not part of the work tree.
const NOT_TREE: [&str; 2] = [".git", ".foldbench"];

/// One entry of the work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    /// A folder with its permission bits.
    Dir {
        /// `mode & 0o7777`.
        mode: u32,
    },
    /// A regular file with its permission bits and the sha256 of its content ([`hash_file`]).
    File {
        /// `mode & 0o7777`.
        mode: u32,
        /// sha256 of the content, or of its size and samples for a file over [`HASH_WHOLE_MAX`].
        sha: [u8; 32],
        /// Whether `sha` is of the whole content.
        whole: bool,
    },
    /// A symlink (never followed) and where it points.
    Link {
        /// The link's target as written.
        target: PathBuf,
    },
}

/// A work tree (`.git` and `.foldbench` at the root left out) by relative path, as
/// [`work_tree`] reads it.
pub(crate) type Tree = BTreeMap<String, Entry>;

/// A workspace as a command can see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    /// The work tree (`.git` and `.foldbench` at the root left out), by relative path.
    pub(crate) tree: Tree,
    /// The digest of `.git` and the archive folder (see [`meta_of`]).
    pub(crate) meta: [u8; 32],
    /// Whether every file was hashed whole: a file over [`HASH_WHOLE_MAX`] is known by its size
    /// and samples only, so the state does not determine the workspace and the tool cache
    /// neither looks it up nor stores it.
    pub(crate) exact: bool,
}

/// The largest file a snapshot (and so the fingerprint and the tool cache's key) hashes whole,
/// streamed in pieces of 64 KiB: 64 MiB. A larger file is hashed by its size and its first and
/// last MiB, so a 2 GB file the agent made costs two reads of 1 MiB, not 2 GB of hashing.
pub(crate) const HASH_WHOLE_MAX: u64 = 64 << 20;

/// The most bytes of one file the tool cache stores with a call's changes: 8 MiB. A call that
/// wrote a larger file, or more than [`CHANGES_MAX`] in all, is not stored (it runs each time).
pub(crate) const CHANGE_FILE_MAX: u64 = 8 << 20;

/// The most bytes of file content the tool cache stores for one call: 32 MiB.
pub(crate) const CHANGES_MAX: u64 = 32 << 20;

/// How much of each end of a file over [`HASH_WHOLE_MAX`] its hash samples.
const SAMPLE: u64 = 1 << 20;

/// The sha256 of a regular file (opened as the tools open files: never a FIFO, non-blocking),
/// and whether it is of the whole content: a file up to [`HASH_WHOLE_MAX`] is hashed whole in
/// pieces (memory stays bounded), a larger one by its size and its first and last
/// [`SAMPLE`] bytes. The size is measured on the open file before anything is read.
pub(crate) fn hash_file(path: &Path) -> io::Result<([u8; 32], bool)> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = harness_import::open_regular(path)?;
    let len = file.metadata()?.len();
    let mut h = Sha256::new();
    if len <= HASH_WHOLE_MAX {
        io::copy(&mut (&mut file).take(HASH_WHOLE_MAX), &mut h)?;
        return Ok((h.finalize().into(), true));
    }
    h.update(b"sampled\0");
    h.update(len.to_le_bytes());
    io::copy(&mut (&mut file).take(SAMPLE), &mut h)?;
    file.seek(SeekFrom::Start(len - SAMPLE))?;
    io::copy(&mut file.take(SAMPLE), &mut h)?;
    Ok((h.finalize().into(), false))
}

impl Snapshot {
    /// Takes the snapshot of the workspace at `root`.
    pub(crate) fn take(root: &Path) -> io::Result<Snapshot> {
        Snapshot::with_tree(root, work_tree(root)?)
    }

    /// The snapshot of the workspace at `root` whose work tree foldbench knows to be `tree`
    /// (see [`Known`]): only `.git` and the archive folder are read.
    pub(crate) fn with_tree(root: &Path, tree: Tree) -> io::Result<Snapshot> {
        Snapshot::from_parts(root, tree, None)
    }

    /// [`Snapshot::with_tree`] with `.git` and the archive known to be `meta` (read when it is
    /// `None`; checked against a read in builds with debug assertions).
    pub(crate) fn from_parts(root: &Path, tree: Tree, meta: Option<Meta>) -> io::Result<Snapshot> {
        let (meta, meta_exact) = match meta {
            Some(m) => {
                check_carried("digest of .git and the archive", &m, || meta_of(root), root)?;
                m
            }
            None => meta_of(root)?,
        };
        let exact = meta_exact
            && tree
                .values()
                .all(|e| !matches!(e, Entry::File { whole: false, .. }));
        Ok(Snapshot { tree, meta, exact })
    }

    /// The work tree's fingerprint ([`tree_fingerprint`]), from this snapshot.
    #[cfg(test)]
    pub(crate) fn fingerprint(&self) -> String {
        tree_fingerprint(&self.tree)
    }

    /// The state string of the cache key: a hex sha256 over every entry and the meta digest.
    /// Two workspaces made from the same fixture and changed the same way have the same state.
    pub(crate) fn state(&self) -> String {
        let mut h = Sha256::new();
        for (rel, e) in &self.tree {
            h.update(rel.as_bytes());
            h.update([0u8]);
            match e {
                Entry::Dir { mode } => {
                    h.update(b"d");
                    h.update(mode.to_le_bytes());
                }
                Entry::File { mode, sha, .. } => {
                    h.update(b"f");
                    h.update(mode.to_le_bytes());
                    h.update(sha);
                }
                Entry::Link { target } => {
                    h.update(b"l");
                    h.update(target.as_os_str().as_encoded_bytes());
                }
            }
            h.update([0u8]);
        }
        h.update(b"meta");
        h.update(self.meta);
        harness_core::hex(&h.finalize())
    }
}

/// The work tree at `root` (`.git` and `.foldbench` left out), by relative path.
pub(crate) fn work_tree(root: &Path) -> io::Result<Tree> {
    let mut tree = BTreeMap::new();
    walk_tree(root, "", &mut tree)?;
    Ok(tree)
}

/// What a snapshot holds besides the work tree: the digest of `.git` and the archive folder
/// ([`meta_of`]) and whether every file under them was hashed whole.
pub(crate) type Meta = ([u8; 32], bool);

/// The workspace as foldbench last knew it, carried from one step of a cell to the next so a
/// step does not read and hash every file again (the tool cache's key, the workspace
/// fingerprint): its work tree and, apart, `.git` and the archive ([`Meta`]). Both are known,
/// never guessed: a step's own result says what it left —
///
/// - a tool that only reads leaves both as they were;
/// - a shell call answered by the tool cache leaves the tree before it with the stored changes
///   applied ([`applied`]: what [`apply`] wrote, hashed from the bytes written) and `.git` and
///   the archive as they were (a call that changed them is never stored); one that ran through
///   the cache leaves the snapshot taken after it (its processes had ended);
/// - a file tool that wrote a file leaves the tree with that file and the folders above it read
///   again ([`refreshed`]), and `.git` and the archive as they were unless it wrote there;
/// - archives written at a turn's end, or set aside for the checks, leave the archive unknown;
/// - anything else (a shell call outside the cache, a failed write, a real agent's turn) leaves
///   the workspace unknown, and the next step reads it.
///
/// Builds with debug assertions (every `cargo test`) check what is carried against a fresh read
/// of the workspace when it is used, so a step that changed the workspace behind foldbench's
/// back fails the tests rather than a cache key.
#[derive(Debug, Clone, Default)]
pub(crate) struct Known {
    tree: Option<Tree>,
    meta: Option<Meta>,
}

impl Known {
    /// Nothing known: the next step reads the workspace.
    pub(crate) fn unknown() -> Known {
        Known::default()
    }

    /// `tree` is the work tree; `.git` and the archive are not known.
    pub(crate) fn tree(tree: Tree) -> Known {
        Known {
            tree: Some(tree),
            meta: None,
        }
    }

    /// The workspace is as `snap` saw it.
    pub(crate) fn of(snap: Snapshot) -> Known {
        // An inexact snapshot does not say whether its inexact file was under `.git`.
        let meta = snap.exact.then_some((snap.meta, true));
        Known {
            tree: Some(snap.tree),
            meta,
        }
    }

    /// `.git` and the archive are no longer known (archives were written or moved).
    pub(crate) fn forget_meta(&mut self) {
        self.meta = None;
    }

    /// The work tree at `root`, the known one or read, and what is known of `.git` and the
    /// archive (to hand on to [`Known::snapshot`] or to the next step).
    pub(crate) fn tree_or_read(self, root: &Path) -> io::Result<(Tree, Option<Meta>)> {
        let tree = match self.tree {
            Some(tree) => {
                check_carried("work tree", &tree, || work_tree(root), root)?;
                tree
            }
            None => work_tree(root)?,
        };
        Ok((tree, self.meta))
    }

    /// The workspace's snapshot: what is known of it, the rest read.
    pub(crate) fn snapshot(self, root: &Path) -> io::Result<Snapshot> {
        let (tree, meta) = self.tree_or_read(root)?;
        Snapshot::from_parts(root, tree, meta)
    }

    /// The work tree at `root`: the known one, else read.
    #[cfg(test)]
    pub(crate) fn or_read(self, root: &Path) -> io::Result<Tree> {
        self.tree_or_read(root).map(|(tree, _)| tree)
    }

    /// A workspace whose work tree is `tree` and whose `.git` and archive are `meta`.
    pub(crate) fn parts(tree: Tree, meta: Option<Meta>) -> Known {
        Known {
            tree: Some(tree),
            meta,
        }
    }
}

/// In builds with debug assertions, reads the workspace again (`read`) and panics when what
/// foldbench carried is not what it reads (see [`Known`]); in other builds, nothing: `read` is
/// not called.
#[cfg_attr(not(debug_assertions), allow(unused_variables))]
fn check_carried<T: PartialEq + std::fmt::Debug>(
    what: &str,
    carried: &T,
    read: impl FnOnce() -> io::Result<T>,
    root: &Path,
) -> io::Result<()> {
    #[cfg(debug_assertions)]
    {
        let read = read()?;
        assert!(
            *carried == read,
            "the {what} foldbench carried differs from the workspace's at {}: carried \
             {carried:?}, read {read:?}",
            root.display()
        );
    }
    Ok(())
}

/// The workspace fingerprint ([`crate::execution::workspace::Workspace::fingerprint`]): hex sha256 over the
/// regular files of a work tree in order of their relative paths, each contributing its path
/// bytes, a 0 byte, the sha256 of its content and a 0 byte. Folders, modes and symlinks are not
/// in it.
pub(crate) fn tree_fingerprint(tree: &BTreeMap<String, Entry>) -> String {
    let mut h = Sha256::new();
    for (rel, e) in tree {
        if let Entry::File { sha, .. } = e {
            h.update(rel.as_bytes());
            h.update([0u8]);
            h.update(sha);
            h.update([0u8]);
        }
    }
    harness_core::hex(&h.finalize())
}

fn walk_tree(dir: &Path, prefix: &str, out: &mut BTreeMap<String, Entry>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if prefix.is_empty() && NOT_TREE.contains(&name.as_str()) {
            continue;
        }
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let path = entry.path();
        let meta = fs::symlink_metadata(&path)?;
        let ft = meta.file_type();
        let mode = meta.mode() & 0o7777;
        if ft.is_dir() {
            out.insert(rel.clone(), Entry::Dir { mode });
            walk_tree(&path, &rel, out)?;
        } else if ft.is_file() {
            let (sha, whole) = hash_file(&path)?;
            out.insert(rel, Entry::File { mode, sha, whole });
        } else if ft.is_symlink() {
            out.insert(
                rel,
                Entry::Link {
                    target: fs::read_link(&path)?,
                },
            );
        }
        // Sockets, fifos and devices have no content a later command reads back as a file:
        // left out, as the fingerprint leaves them out.
    }
    Ok(())
}

/// The digest of what a command can see besides the work tree. Under `.git`: the content of
/// HEAD, refs and config, the names and sizes of the objects (named by their hash), and neither
/// the index nor the reflogs (they hold times and inode numbers that differ between two
/// workspaces of the same commit). Under the archive folder: names and sizes (the harness writes
/// each archive once, named by its range). A file under `.git` is hashed as [`hash_file`] does;
/// the second value says whether every one was hashed whole.
fn meta_of(root: &Path) -> io::Result<([u8; 32], bool)> {
    let mut h = Sha256::new();
    let mut exact = true;
    for top in NOT_TREE {
        let mut files = Vec::new();
        let dir = root.join(top);
        // Never followed: a `.git` or `.foldbench` that is a link (to a host folder, say) is
        // its target's name, not the folder's content.
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => collect_files(&dir, top, &mut files)?,
            Ok(m) if m.file_type().is_symlink() => {
                h.update(top.as_bytes());
                h.update(b"\0link\0");
                h.update(fs::read_link(&dir)?.as_os_str().as_encoded_bytes());
                h.update([0u8]);
            }
            _ => {}
        }
        files.sort_by(|a, b| a.0.cmp(&b.0));
        for (rel, abs) in files {
            h.update(rel.as_bytes());
            h.update([0u8]);
            if rel == ".git/index" || rel.starts_with(".git/logs/") {
                continue;
            }
            if top == ".git" && !rel.starts_with(".git/objects/") {
                let (sha, whole) = hash_file(&abs)?;
                h.update(sha);
                exact &= whole;
            } else {
                h.update(fs::symlink_metadata(&abs)?.len().to_le_bytes());
            }
            h.update([0u8]);
        }
    }
    Ok((h.finalize().into(), exact))
}

fn collect_files(dir: &Path, prefix: &str, out: &mut Vec<(String, PathBuf)>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let rel = format!("{prefix}/{}", entry.file_name().to_string_lossy());
        let ft = entry.file_type()?;
        if ft.is_dir() {
            collect_files(&entry.path(), &rel, out)?;
        } else if ft.is_file() {
            out.push((rel, entry.path()));
        }
    }
    Ok(())
}

/// The bytes of a changed file: text when it is UTF-8 (readable on disk), else raw bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Content {
    /// UTF-8 content.
    Text(String),
    /// Any other content.
    Bytes(Vec<u8>),
}

impl Content {
    fn of(bytes: Vec<u8>) -> Content {
        match String::from_utf8(bytes) {
            Ok(s) => Content::Text(s),
            Err(e) => Content::Bytes(e.into_bytes()),
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Content::Text(s) => s.as_bytes(),
            Content::Bytes(b) => b,
        }
    }

    /// The content with every occurrence of `from` replaced by `to`.
    pub(crate) fn replaced(&self, from: &str, to: &str) -> Content {
        match self {
            Content::Text(s) if s.contains(from) => Content::Text(s.replace(from, to)),
            Content::Text(s) => Content::Text(s.clone()),
            Content::Bytes(b) => Content::Bytes(replace_bytes(b, from.as_bytes(), to.as_bytes())),
        }
    }
}

fn replace_bytes(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    if from.is_empty() {
        return hay.to_vec();
    }
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

/// One change of the work tree, relative to the workspace root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Change {
    /// A file or symlink that is gone (or changes kind).
    Remove {
        /// Relative path.
        path: String,
    },
    /// A folder that is gone (applied after what was inside it).
    RemoveDir {
        /// Relative path.
        path: String,
    },
    /// A new folder (its mode is set after its content is written).
    Dir {
        /// Relative path.
        path: String,
        /// Permission bits.
        mode: u32,
    },
    /// A folder whose permission bits changed.
    DirMode {
        /// Relative path.
        path: String,
        /// Permission bits.
        mode: u32,
    },
    /// A file written (new, or with new content or mode).
    File {
        /// Relative path.
        path: String,
        /// Permission bits.
        mode: u32,
        /// The whole content.
        content: Content,
    },
    /// A new symlink.
    Link {
        /// Relative path.
        path: String,
        /// Where it points.
        target: PathBuf,
    },
}

impl Change {
    /// The change with the workspace root's path written as `to` instead of `from` in file
    /// contents (a file a command wrote can hold the absolute path of its workspace).
    pub(crate) fn replaced(&self, from: &str, to: &str) -> Change {
        match self {
            Change::File {
                path,
                mode,
                content,
            } => Change::File {
                path: path.clone(),
                mode: *mode,
                content: content.replaced(from, to),
            },
            Change::Link { path, target } => {
                let t = target.to_string_lossy();
                Change::Link {
                    path: path.clone(),
                    target: if t.contains(from) {
                        PathBuf::from(t.replace(from, to))
                    } else {
                        target.clone()
                    },
                }
            }
            other => other.clone(),
        }
    }
}

/// The changes that turn the work tree of `before` into that of `after`, with the content of
/// written files read from `root` (which holds `after`). In the order [`apply`] needs them:
/// removals deepest first, then creations shallowest first, then folder modes deepest first.
/// `None` when they are too large to store: a written file over [`CHANGE_FILE_MAX`] or more
/// than [`CHANGES_MAX`] in all (each file's size is measured before it is read).
pub(crate) fn changes(
    before: &Snapshot,
    after: &Snapshot,
    root: &Path,
) -> io::Result<Option<Vec<Change>>> {
    let mut out = Vec::new();
    let mut total = 0u64;
    for (rel, old) in before.tree.iter().rev() {
        let same_kind = matches!(
            (old, after.tree.get(rel)),
            (Entry::Dir { .. }, Some(Entry::Dir { .. }))
                | (Entry::File { .. }, Some(Entry::File { .. }))
                | (Entry::Link { .. }, Some(Entry::Link { .. }))
        );
        if !same_kind {
            let path = rel.clone();
            out.push(match old {
                Entry::Dir { .. } => Change::RemoveDir { path },
                _ => Change::Remove { path },
            });
        }
    }
    let mut modes = Vec::new();
    for (rel, new) in &after.tree {
        let old = before.tree.get(rel);
        if old == Some(new) {
            continue;
        }
        let path = rel.clone();
        match new {
            Entry::Dir { mode } => match old {
                Some(Entry::Dir { .. }) => modes.push(Change::DirMode { path, mode: *mode }),
                _ => {
                    out.push(Change::Dir {
                        path: path.clone(),
                        mode: *mode,
                    });
                    modes.push(Change::DirMode { path, mode: *mode });
                }
            },
            Entry::File { mode, .. } => {
                let Some(bytes) = read_change(&root.join(rel), &mut total)? else {
                    return Ok(None);
                };
                let content = Content::of(bytes);
                out.push(Change::File {
                    path,
                    mode: *mode,
                    content,
                });
            }
            Entry::Link { target } => {
                if matches!(old, Some(Entry::Link { .. })) {
                    out.push(Change::Remove { path: path.clone() });
                }
                out.push(Change::Link {
                    path,
                    target: target.clone(),
                });
            }
        }
    }
    modes.reverse();
    out.extend(modes);
    Ok(Some(out))
}

/// A written file's content for [`changes`], `None` when it is over [`CHANGE_FILE_MAX`] or
/// takes `total` past [`CHANGES_MAX`]: measured on the open file, then read at most that far.
fn read_change(path: &Path, total: &mut u64) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let file = harness_import::open_regular(path)?;
    let len = file.metadata()?.len();
    if len > CHANGE_FILE_MAX || *total + len > CHANGES_MAX {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.take(CHANGE_FILE_MAX + 1).read_to_end(&mut bytes)?;
    *total += bytes.len() as u64;
    if bytes.len() as u64 > CHANGE_FILE_MAX || *total > CHANGES_MAX {
        return Ok(None);
    }
    Ok(Some(bytes))
}

/// The work tree `changes` (from [`changes`]) make of `tree` when [`apply`] writes them, worked
/// out without reading the disk: a written file's hash is that of the bytes written, a new
/// folder gets the mode its `DirMode` sets.
pub(crate) fn applied(mut tree: Tree, changes: &[Change]) -> Tree {
    for c in changes {
        match c {
            Change::Remove { path } | Change::RemoveDir { path } => {
                tree.remove(path);
            }
            Change::Dir { path, mode } | Change::DirMode { path, mode } => {
                tree.insert(path.clone(), Entry::Dir { mode: *mode });
            }
            Change::File {
                path,
                mode,
                content,
            } => {
                tree.insert(
                    path.clone(),
                    Entry::File {
                        mode: *mode,
                        sha: Sha256::digest(content.bytes()).into(),
                        // Stored changes are at most CHANGE_FILE_MAX bytes a file.
                        whole: true,
                    },
                );
            }
            Change::Link { path, target } => {
                tree.insert(
                    path.clone(),
                    Entry::Link {
                        target: target.clone(),
                    },
                );
            }
        }
    }
    tree
}

/// Whether the workspace-relative path `rel` is in `.git` or the archive folder, which the
/// work tree leaves out (and [`Meta`] covers).
pub(crate) fn beside_tree(rel: &str) -> bool {
    NOT_TREE.contains(&rel.split('/').next().unwrap_or(""))
}

/// `tree` with the entry at `rel` (workspace-relative, `/`-separated, no `.` or `..`) and each
/// folder above it read again from the workspace at `root`: what a file tool that wrote `rel`
/// (making the folders on the way) changed. `None` when the path is not one such a tool writes
/// (a folder above it is not a folder any more), so the tree is no longer known.
pub(crate) fn refreshed(mut tree: Tree, root: &Path, rel: &str) -> io::Result<Option<Tree>> {
    let parts: Vec<&str> = rel.split('/').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return Ok(None);
    }
    if beside_tree(rel) {
        // `.git` and the archive are not in the work tree.
        return Ok(Some(tree));
    }
    for depth in 1..=parts.len() {
        let here = parts[..depth].join("/");
        let path = root.join(&here);
        let meta = match fs::symlink_metadata(&path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let leaf = depth == parts.len();
        match meta {
            Some(m) if m.is_dir() && !leaf => {
                tree.insert(
                    here,
                    Entry::Dir {
                        mode: m.mode() & 0o7777,
                    },
                );
            }
            Some(m) if leaf && m.is_file() => {
                let (sha, whole) = hash_file(&path)?;
                tree.insert(
                    here,
                    Entry::File {
                        mode: m.mode() & 0o7777,
                        sha,
                        whole,
                    },
                );
            }
            // A folder above it that is not one, or a written path that is not a file.
            _ => return Ok(None),
        }
    }
    Ok(Some(tree))
}

/// Applies `changes` (from [`changes`]) to the work tree at `root`. A file is written aside and
/// renamed over its path, so a file with other hard links is replaced, never written through.
pub(crate) fn apply(root: &Path, changes: &[Change]) -> io::Result<()> {
    for c in changes {
        match c {
            Change::Remove { path } => fs::remove_file(root.join(path))?,
            Change::RemoveDir { path } => fs::remove_dir(root.join(path))?,
            Change::Dir { path, .. } => fs::create_dir(root.join(path))?,
            Change::DirMode { path, mode } => {
                fs::set_permissions(root.join(path), fs::Permissions::from_mode(*mode))?
            }
            Change::File {
                path,
                mode,
                content,
            } => {
                let target = root.join(path);
                let dir = target.parent().unwrap_or(root);
                let mut tmp = tempfile::Builder::new()
                    .prefix(".foldbench-replay-")
                    .tempfile_in(dir)?;
                io::Write::write_all(&mut tmp, content.bytes())?;
                tmp.as_file()
                    .set_permissions(fs::Permissions::from_mode(*mode))?;
                tmp.persist(&target).map_err(|e| e.error)?;
            }
            Change::Link { path, target } => std::os::unix::fs::symlink(target, root.join(path))?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
