//! Writing a file whole or not at all: every file foldbench writes (a run's records and cell
//! files, `matrix.json`, cassettes, the `-o` outputs of `report`, `replay`, `compare` and
//! `judge`, `--requests-out`) goes to a temporary file beside it (`.NAME.PID.N.tmp`), is synced,
//! and is renamed into place, so a reader never sees half a file. When a write fails (a full
//! disk), the temporary file is removed and the file that was there is left as it was.
//!
//! A path that names a device, a FIFO or a socket (`/dev/stdout`, `/dev/full`, a pipe) is
//! written in place, since renaming over it would replace it; a failed write there is an error
//! like any other.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` as the module docs say, creating its folder.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, |w| w.write_all(bytes))
}

/// Writes what `fill` writes to `path` as the module docs say, creating its folder; returns
/// what `fill` returned. `fill` writes into a buffer; the file is only complete when this
/// returns `Ok`.
pub(crate) fn write_with<T>(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<T>,
) -> io::Result<T> {
    if let Ok(meta) = fs::metadata(path) {
        if !meta.is_file() && !meta.is_dir() {
            return write_in_place(path, fill);
        }
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir)?;
    }
    let tmp = temporary_name(path);
    let file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
    let written = fill_and_sync(file, fill).and_then(|v| fs::rename(&tmp, path).map(|()| v));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// A device, FIFO or socket: opened for writing as it is, flushed, errors returned.
fn write_in_place<T>(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<T>,
) -> io::Result<T> {
    let mut w = BufWriter::new(OpenOptions::new().write(true).open(path)?);
    let v = fill(&mut w)?;
    w.flush()?;
    Ok(v)
}

fn fill_and_sync<T>(
    file: File,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<T>,
) -> io::Result<T> {
    let mut w = BufWriter::new(file);
    let v = fill(&mut w)?;
    w.flush()?;
    w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(v)
}

/// `.NAME.PID.N.tmp` beside `path`: hidden, and unique among the writers of this process and
/// of others.
fn temporary_name(path: &Path) -> PathBuf {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".to_string());
    path.with_file_name(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_file_is_replaced_whole_and_its_folder_created() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/out.json");
        write(&p, b"one").unwrap();
        write(&p, b"two").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(names(&d.path().join("sub")), vec!["out.json"]);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("report.md");
        write(&p, b"old").unwrap();
        let err = write_with(&p, |w| {
            w.write_all(b"half")?;
            Err::<(), _>(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "disk full");
        assert_eq!(fs::read_to_string(&p).unwrap(), "old");
        assert_eq!(names(d.path()), vec!["report.md"]);
    }

    /// A device that fails every write with ENOSPC: as root a node of our own in `dir` (so a
    /// regression that renames over it cannot replace the machine's `/dev/full`), else
    /// `/dev/full`, which no other user can replace.
    fn full_device(dir: &Path) -> PathBuf {
        let own = dir.join("full");
        let made = std::process::Command::new("mknod")
            .arg(&own)
            .args(["c", "1", "7"])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if made {
            own
        } else {
            PathBuf::from("/dev/full")
        }
    }

    #[test]
    fn a_fifo_or_a_device_is_written_in_place_and_its_errors_returned() {
        use std::io::Read as _;
        use std::os::unix::fs::FileTypeExt as _;
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("pipe");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let mut s = String::new();
                File::open(&fifo).unwrap().read_to_string(&mut s).unwrap();
                s
            })
        };
        write(&fifo, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), "through the pipe");
        assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());

        let full = full_device(d.path());
        let err = write(&full, &[b'x'; 100_000]).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{err}");
        assert!(fs::metadata(&full).unwrap().file_type().is_char_device());
        assert_eq!(
            names(d.path()).len(),
            usize::from(full.starts_with(d.path())) + 1
        );
    }
}
