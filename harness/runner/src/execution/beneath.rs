//! Files foldbench itself writes into a workspace, opened beneath its root without following a
//! link the agent may have planted.
//!
//! foldbench runs outside the sandbox with its own privileges, so a path it writes must not
//! lead anywhere the agent chose: `.foldbench/archive -> /etc` or a file
//! `.foldbench/archive/fold-turns-001-001.txt -> /opt/victim.txt` made by a shell call would
//! otherwise turn an archive write into a write on the host. [`write_new`] opens every folder
//! of the path relative to the one before it with `O_NOFOLLOW | O_DIRECTORY` (a symlink at any
//! step is refused, `..` never occurs: the path is normalised first), writes the bytes to a new
//! file made with `O_CREAT | O_EXCL | O_NOFOLLOW` beside the target and renames it over the
//! target, so neither a symlink nor a hard link at the target is written through. The refusal
//! is an error the caller records.
//!
//! The calls go through `rustix`, whose system-call wrappers are safe functions, so the crate
//! keeps `unsafe_code = "deny"`.

use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags};

/// Opens `root` itself (a folder foldbench made, canonical).
fn open_root(root: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// The components of the workspace-relative path `rel`, normalised (`.` dropped, `..`
/// resolved lexically); an absolute path or one that leaves the root is refused.
fn components(rel: &str) -> io::Result<Vec<String>> {
    let norm = crate::execution::workspace::normalize(rel).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            e.to_string().trim_start_matches("error: ").to_string(),
        )
    })?;
    Ok(if norm == "." {
        Vec::new()
    } else {
        norm.split('/').map(str::to_string).collect()
    })
}

/// The error for a step of `shown` that is not a real folder or file of the workspace.
fn refused(shown: &str, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "`{shown}` is {what}; foldbench writes only through real folders of the workspace and \
             never follows a link"
        ),
    )
}

/// Says what `name` in `dir` is when opening it as a folder failed with `e`.
fn explain(dir: &OwnedFd, name: &str, shown: &str, e: rustix::io::Errno) -> io::Error {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink() => {
            refused(shown, "a symlink")
        }
        Ok(st) if !rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir() => {
            refused(shown, "not a folder")
        }
        _ => io::Error::from(e),
    }
}

/// Opens the folder `parts` beneath `root`, one component at a time and never through a
/// symlink; missing folders are made when `create`.
fn open_dir(root: &Path, parts: &[String], create: bool) -> io::Result<OwnedFd> {
    let mut dir = open_root(root)?;
    for (i, name) in parts.iter().enumerate() {
        let shown = parts[..=i].join("/");
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let next = match rustix::fs::openat(&dir, name.as_str(), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) if create => {
                match rustix::fs::mkdirat(&dir, name.as_str(), Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                rustix::fs::openat(&dir, name.as_str(), flags, Mode::empty())
                    .map_err(|e| explain(&dir, name, &shown, e))?
            }
            Err(e) => return Err(explain(&dir, name, &shown, e)),
        };
        dir = next;
    }
    Ok(dir)
}

/// Reads the file `rel` beneath `root`, at most `max` bytes, never through a symlink (on the way
/// or at the file): `None` when it does not exist; a link, a folder or a larger file is an
/// error that says so.
pub(crate) fn read_existing(root: &Path, rel: &str, max: u64) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let mut parts = components(rel)?;
    let Some(name) = parts.pop() else {
        return Err(refused(rel, "the workspace root, not a file"));
    };
    let dir = match open_dir(root, &parts, false) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(&dir, name.as_str(), flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => return Err(refused(rel, "a symlink")),
        Err(e) => return Err(e.into()),
    };
    let file = std::fs::File::from(fd);
    if !file.metadata()?.is_file() {
        return Err(refused(rel, "not a file"));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(refused(rel, "larger than foldbench reads"));
    }
    Ok(Some(bytes))
}

/// Writes `bytes` as the file `rel` beneath `root` and flushes it to disk: the folders on the
/// way are opened (or made) without following a symlink, and the file is written aside and
/// renamed over `rel`, so a symlink or a hard link planted at `rel` is replaced, never written
/// through. A folder on the way that is a symlink or not a folder is an error that names it.
pub(crate) fn write_new(root: &Path, rel: &str, bytes: &[u8]) -> io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut parts = components(rel)?;
    let Some(name) = parts.pop() else {
        return Err(refused(rel, "the workspace root, not a file"));
    };
    let dir = open_dir(root, &parts, true)?;
    // A name of our own beside the target; one the agent planted there is skipped.
    let (tmp, fd) = loop {
        let tmp = format!(
            ".{name}.foldbench-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match rustix::fs::openat(&dir, tmp.as_str(), flags, Mode::from_raw_mode(0o644)) {
            Ok(fd) => break (tmp, fd),
            Err(rustix::io::Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    };
    let written = (|| -> io::Result<()> {
        let mut file = std::fs::File::from(fd);
        file.write_all(bytes)?;
        file.sync_all()?;
        rustix::fs::renameat(&dir, tmp.as_str(), &dir, name.as_str()).map_err(|e| {
            if e == rustix::io::Errno::ISDIR || e == rustix::io::Errno::NOTEMPTY {
                refused(rel, "a folder")
            } else {
                e.into()
            }
        })
    })();
    if written.is_err() {
        let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), AtFlags::empty());
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_file_is_written_with_its_folders_and_replaced_whole() {
        let ws = tempfile::tempdir().unwrap();
        write_new(ws.path(), ".foldbench/archive/a.txt", b"one").unwrap();
        write_new(ws.path(), "./.foldbench/archive/a.txt", b"two").unwrap();
        let dir = ws.path().join(".foldbench/archive");
        assert_eq!(std::fs::read(dir.join("a.txt")).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "no temporary file is left");
    }

    /// Every planted link of the issue: the file, its folder, and the folder above.
    #[test]
    fn planted_links_are_refused_or_replaced_and_the_host_file_is_untouched() {
        let host = tempfile::tempdir().unwrap();
        let victim = host.path().join("victim.txt");
        std::fs::write(&victim, "host file").unwrap();
        let rel = ".foldbench/archive/fold-turns-001-001.txt";

        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join(".foldbench/archive")).unwrap();
        symlink(&victim, ws.path().join(rel)).unwrap();
        write_new(ws.path(), rel, b"archive").unwrap();
        assert!(!std::fs::symlink_metadata(ws.path().join(rel))
            .unwrap()
            .file_type()
            .is_symlink());

        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join(".foldbench/archive")).unwrap();
        std::fs::hard_link(&victim, ws.path().join(rel)).unwrap_or_else(|_| {
            // Another file system: a hard link cannot be planted, a copy stands in.
            std::fs::write(ws.path().join(rel), "host file").unwrap();
        });
        write_new(ws.path(), rel, b"archive").unwrap();

        for planted in [".foldbench/archive", ".foldbench"] {
            let ws = tempfile::tempdir().unwrap();
            let link = ws.path().join(planted);
            std::fs::create_dir_all(link.parent().unwrap()).unwrap();
            symlink(host.path(), &link).unwrap();
            let err = write_new(ws.path(), rel, b"archive").unwrap_err();
            assert!(
                err.to_string()
                    .contains(&format!("`{planted}` is a symlink")),
                "{err}"
            );
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "host file");
        let names: Vec<_> = std::fs::read_dir(host.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "nothing was written in the host folder");
    }

    #[test]
    fn a_file_is_read_beneath_the_root_and_never_through_a_link() {
        let root = tempfile::tempdir().unwrap();
        let host = tempfile::tempdir().unwrap();
        let secret = host.path().join("secret");
        std::fs::write(&secret, "host").unwrap();
        assert_eq!(
            read_existing(root.path(), ".git/info/exclude", 64).unwrap(),
            None
        );
        write_new(root.path(), ".git/info/exclude", b"*.o\n").unwrap();
        assert_eq!(
            read_existing(root.path(), ".git/info/exclude", 64).unwrap(),
            Some(b"*.o\n".to_vec())
        );
        assert!(
            read_existing(root.path(), ".git/info/exclude", 2).is_err(),
            "over the cap"
        );
        std::fs::remove_file(root.path().join(".git/info/exclude")).unwrap();
        std::os::unix::fs::symlink(&secret, root.path().join(".git/info/exclude")).unwrap();
        let e = read_existing(root.path(), ".git/info/exclude", 64).unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        std::fs::remove_dir_all(root.path().join(".git")).unwrap();
        std::os::unix::fs::symlink(host.path(), root.path().join(".git")).unwrap();
        assert!(read_existing(root.path(), ".git/secret", 64).is_err());
    }

    #[test]
    fn paths_out_of_the_root_are_refused() {
        let ws = tempfile::tempdir().unwrap();
        for bad in ["../x", "/etc/x", "a/../../x", "."] {
            assert!(write_new(ws.path(), bad, b"x").is_err(), "{bad}");
        }
        std::fs::write(ws.path().join("file"), "").unwrap();
        let err = write_new(ws.path(), "file/x", b"x").unwrap_err();
        assert!(err.to_string().contains("`file` is not a folder"), "{err}");
    }
}
