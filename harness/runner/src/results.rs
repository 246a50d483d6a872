//! The results store: `results/<run-id>/`.
//!
//! ```text
//! matrix.json            the resolved matrix (cells with ids, arms, seeds, models, options)
//! cells.jsonl            one CellRecord per line (`harness_core::CellRecord`), appended and
//!                        flushed as each cell ends
//! requests.jsonl         one line per request: {"cell": id, ...RequestRecord}
//! cells/<cell>/transcript.jsonl   every message the session appended
//! cells/<cell>/events.jsonl       the events
//! cells/<cell>/diff.patch         the workspace diff against the fixture
//! cells/<cell>/archive/…          the archives the cell wrote
//! ```
//!
//! Opening an existing run directory resumes it: the cells already in `cells.jsonl` are finished
//! and not run again. Before that the folder is repaired:
//!
//! - a line torn by a kill in the middle of a write (no final newline) is cut off;
//! - a whole line that is not a cell record is moved to `cells.jsonl.bad` (with a warning), so
//!   its cell runs again;
//! - rows of `requests.jsonl` whose cell has no record are dropped: a cell's record is the commit
//!   point of its rows too, so a kill between the rows and the record does not duplicate them
//!   when the cell runs again.
//!
//! A run holds `run.lock` (an exclusive lock on that file, holding the run's pid) from opening the
//! folder to the end; a second run on the same folder is refused ([`RunDirError::Busy`]) instead
//! of writing the same cells twice. Readers ([`read_records`]: `report`, `merge`, `compare`)
//! refuse a `cells.jsonl` that records one cell twice, naming the cell and both lines.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use harness_core::{CellRecord, Status};

use crate::cell::CellOutput;
use crate::file_error::FileError;

/// The lock file of a run directory (see the module docs).
pub(crate) const LOCK_FILE: &str = "run.lock";
/// The run's records, one cell per line, appended as cells finish.
pub const CELLS_FILE: &str = "cells.jsonl";
/// One line per model request of every cell.
pub const REQUESTS_FILE: &str = "requests.jsonl";
/// The whole matrix and which part of it the run is.
pub(crate) const MATRIX_FILE: &str = "matrix.json";
/// A cell's messages as the model saw them (in its folder under `cells/`).
pub const TRANSCRIPT_FILE: &str = "transcript.jsonl";
/// A cell's events (in its folder under `cells/`).
pub const EVENTS_FILE: &str = "events.jsonl";
/// A cell's workspace diff against the fixture (in its folder under `cells/`).
pub(crate) const DIFF_FILE: &str = "diff.patch";

/// An open run directory. It holds the folder's lock until it is dropped.
#[derive(Debug)]
pub struct RunDir {
    root: PathBuf,
    cells: File,
    requests: File,
    _lock: File,
}

/// Why a run folder cannot be opened or written; `RunDirError::is_usage` tells the user's
/// problem (exit 2) from a failed read or write (exit 1).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunDirError {
    /// Another run holds the folder's lock.
    #[error(
        "{} is in use by another foldbench run{}, which holds {}; wait for it to end, or give another --out",
        root.display(),
        holder.as_ref().map(|p| format!(" (pid {p})")).unwrap_or_default(),
        lock.display()
    )]
    Busy {
        /// The run folder.
        root: PathBuf,
        /// Its lock file.
        lock: PathBuf,
        /// The pid the lock file holds, when it holds one.
        holder: Option<String>,
    },
    /// The folder holds a run of another matrix.
    #[error(
        "{} holds a run of a different matrix; give another --out to start a new run, or the same arguments to resume it",
        root.display()
    )]
    DifferentMatrix {
        /// The run folder.
        root: PathBuf,
    },
    /// The folder's `matrix.json` is not JSON.
    #[error("{}", path.display())]
    BadMatrix {
        /// The file.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// The folder's records cannot be read (a record twice, a damaged line).
    #[error(transparent)]
    Records(ReadError),
    /// A file or folder cannot be read or written.
    #[error(transparent)]
    Io(#[from] crate::file_error::FileError),
    /// The matrix cannot be written as JSON.
    #[error(transparent)]
    Json(serde_json::Error),
}

impl RunDirError {
    /// Whether the user is to fix it (a folder in use or holding another run: exit 2) rather
    /// than a read or write that failed (exit 1).
    pub(crate) fn is_usage(&self) -> bool {
        matches!(
            self,
            RunDirError::Busy { .. }
                | RunDirError::DifferentMatrix { .. }
                | RunDirError::BadMatrix { .. }
                | RunDirError::Records(_)
        )
    }
}

/// Takes the run folder's lock, writing this process's pid into the lock file.
fn lock(root: &Path) -> Result<File, RunDirError> {
    let path = root.join(LOCK_FILE);
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(FileError::on("open", &path))?;
    match f.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            let holder = fs::read_to_string(&path).unwrap_or_default();
            let holder = holder.trim();
            return Err(RunDirError::Busy {
                root: root.to_path_buf(),
                lock: path.clone(),
                holder: (!holder.is_empty()).then(|| holder.to_string()),
            });
        }
        Err(fs::TryLockError::Error(source)) => {
            return Err(FileError::on("lock", &path)(source).into())
        }
    }
    let pid = format!("{}\n", std::process::id());
    f.set_len(0)
        .and_then(|_| f.write_all(pid.as_bytes()))
        .and_then(|_| f.flush())
        .map_err(FileError::on("write", &path))?;
    Ok(f)
}

/// Moves every whole line of `cells.jsonl` that is not a cell record to `cells.jsonl.bad`
/// (appended), warning once per line; returns how many lines were moved.
pub(crate) fn quarantine_bad_records(path: &Path) -> std::io::Result<usize> {
    set_aside(path, |i, line| {
        match serde_json::from_str::<CellRecord>(line) {
            Ok(_) => None,
            Err(e) => {
                crate::progress::warn(&format!(
                "warning: {}:{}:{}: not a cell record ({e}); moved to {}.bad, its cell runs again",
                path.display(),
                i + 1,
                e.column(),
                path.display()
            ));
                Some("jsonl.bad")
            }
        }
    })
}

/// Moves the records of cells that ended in an infrastructure error (`status: error`) to
/// `cells.jsonl.retried`, so a resumed run runs those cells again; failed checks stay (they are
/// results). Returns how many were moved.
pub(crate) fn set_aside_errors(path: &Path) -> std::io::Result<usize> {
    set_aside(path, |_, line| {
        serde_json::from_str::<CellRecord>(line)
            .is_ok_and(|r| r.status == Status::Error)
            .then_some("jsonl.retried")
    })
}

/// Moves the lines of the JSONL file `path` for which `aside` names an extension to the file
/// with that extension (appended and synced first), and rewrites `path` with the rest
/// atomically. Blank lines are dropped. Returns how many lines moved.
fn set_aside(
    path: &Path,
    aside: impl Fn(usize, &str) -> Option<&'static str>,
) -> std::io::Result<usize> {
    let Ok(text) = fs::read_to_string(path) else {
        return Ok(0);
    };
    let mut keep = String::with_capacity(text.len());
    let mut moved: BTreeMap<&'static str, String> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let to = match aside(i, line) {
            Some(ext) => moved.entry(ext).or_default(),
            None => &mut keep,
        };
        to.push_str(line);
        to.push('\n');
    }
    let count = moved.values().map(|t| t.lines().count()).sum();
    if count > 0 {
        for (ext, lines) in &moved {
            let mut f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path.with_extension(ext))?;
            f.write_all(lines.as_bytes())?;
            f.sync_all()?;
        }
        write_atomic(path, keep.as_bytes())?;
    }
    Ok(count)
}

/// Drops the rows of `requests.jsonl` whose cell is not in `done` (rows of a cell killed before
/// its record was written); returns how many were dropped.
pub(crate) fn drop_uncommitted_requests(
    path: &Path,
    done: &HashSet<String>,
) -> std::io::Result<usize> {
    let Ok(text) = fs::read_to_string(path) else {
        return Ok(0);
    };
    let mut keep = String::with_capacity(text.len());
    let mut dropped = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let cell = serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .and_then(|v| v.get("cell").and_then(|c| c.as_str()).map(str::to_string));
        if cell.is_some_and(|c| done.contains(&c)) {
            keep.push_str(line);
            keep.push('\n');
        } else {
            dropped += 1;
        }
    }
    if dropped > 0 {
        write_atomic(path, keep.as_bytes())?;
    }
    Ok(dropped)
}

/// A path-safe folder name for a cell id.
pub fn cell_folder(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '=' | '+') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Cuts a torn last line (no trailing newline, or not valid JSON) off a JSONL file.
pub(crate) fn repair_jsonl(path: &Path) -> std::io::Result<()> {
    let Ok(bytes) = fs::read(path) else {
        return Ok(());
    };
    if bytes.is_empty() {
        return Ok(());
    }
    let mut keep = bytes.len();
    if !bytes.ends_with(b"\n") {
        keep = bytes
            .iter()
            .rposition(|b| *b == b'\n')
            .map(|i| i + 1)
            .unwrap_or(0);
    }
    if keep != bytes.len() {
        let f = OpenOptions::new().write(true).open(path)?;
        f.set_len(keep as u64)?;
        f.sync_all()?;
    }
    Ok(())
}

/// Why a run folder's records or a JSON-lines file do not read; each names the file and, for a
/// line, its number.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// `cells.jsonl` cannot be opened.
    #[error("cannot open {} (is this a run directory?)", path.display())]
    NoRecords {
        /// The file.
        path: PathBuf,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file cannot be read.
    #[error(transparent)]
    File(crate::file_error::FileError),
    /// A line cannot be read.
    #[error("{}:{line}: cannot read", path.display())]
    Line {
        /// The file.
        path: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// A cell recorded twice.
    #[error("{}:{line}: the cell {cell} is recorded twice (also at line {first}): two runs wrote this folder at once; keep one of the lines, or run the matrix again into a new folder", path.display())]
    Twice {
        /// The file.
        path: PathBuf,
        /// The second record's line.
        line: usize,
        /// The cell.
        cell: String,
        /// The first record's line.
        first: usize,
    },
    /// A line of `cells.jsonl` that is not a cell record.
    #[error("{}:{line}:{}: not a cell record", path.display(), source.column())]
    NotRecord {
        /// The file.
        path: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A line that does not read as the type asked.
    #[error("{}:{line}:{}", path.display(), source.column())]
    Json {
        /// The file.
        path: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
}

/// Reads the cell records of a run directory. A line that is not a cell record, or a second
/// record of one cell (two runs wrote the folder at once), is an error naming the line.
pub fn read_records(dir: &Path) -> Result<Vec<CellRecord>, ReadError> {
    let path = dir.join(CELLS_FILE);
    let f = match File::open(&path) {
        Ok(f) => f,
        Err(source) => return Err(ReadError::NoRecords { path, source }),
    };
    let mut out = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, line) in BufReader::new(f).lines().enumerate() {
        let line = match line {
            Ok(l) => l,
            Err(source) => {
                return Err(ReadError::Line {
                    path,
                    line: i + 1,
                    source,
                })
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<CellRecord>(&line) {
            Ok(r) => {
                if let Some(first) = seen.insert(r.id.clone(), i + 1) {
                    return Err(ReadError::Twice {
                        path,
                        line: i + 1,
                        cell: r.id,
                        first,
                    });
                }
                out.push(r)
            }
            Err(source) => {
                return Err(ReadError::NotRecord {
                    path,
                    line: i + 1,
                    source,
                })
            }
        }
    }
    Ok(out)
}

impl RunDir {
    /// Creates or reopens a run directory, taking its lock and repairing it as the module docs
    /// say. `matrix` is the resolved matrix as JSON; reopening a directory that holds another
    /// matrix is refused.
    pub fn open(
        root: &Path,
        matrix: &serde_json::Value,
        retry_errors: bool,
    ) -> Result<(RunDir, HashSet<String>), RunDirError> {
        let io = |what: &'static str, p: &Path, source: std::io::Error| -> RunDirError {
            FileError::on(what, p)(source).into()
        };
        fs::create_dir_all(root.join("cells")).map_err(|e| io("create", root, e))?;
        let lock = lock(root)?;
        let mpath = root.join(MATRIX_FILE);
        if let Ok(old) = fs::read_to_string(&mpath) {
            let old: serde_json::Value =
                serde_json::from_str(&old).map_err(|source| RunDirError::BadMatrix {
                    path: mpath.clone(),
                    source,
                })?;
            // The same matrix and the same part of it (a shard, or an explicit cell list).
            if ["cells", "partition", "only"]
                .iter()
                .any(|k| old.get(k) != matrix.get(k))
            {
                return Err(RunDirError::DifferentMatrix {
                    root: root.to_path_buf(),
                });
            }
        } else {
            let text = serde_json::to_string_pretty(matrix).map_err(RunDirError::Json)?;
            write_atomic(&mpath, text.as_bytes()).map_err(|e| io("write", &mpath, e))?;
        }
        let cpath = root.join(CELLS_FILE);
        let rpath = root.join(REQUESTS_FILE);
        repair_jsonl(&cpath).map_err(|e| io("repair", &cpath, e))?;
        repair_jsonl(&rpath).map_err(|e| io("repair", &rpath, e))?;
        quarantine_bad_records(&cpath).map_err(|e| io("repair", &cpath, e))?;
        if retry_errors {
            let n = set_aside_errors(&cpath).map_err(|e| io("repair", &cpath, e))?;
            if n > 0 {
                crate::progress::say(&format!(
                    "note: {n} cell(s) ended in an infrastructure error last time and run again \
                     (their records are kept in {}.retried; --no-retry-errors keeps them as \
                     they are)",
                    cpath.display()
                ));
            }
        }
        let done: HashSet<String> = if cpath.exists() {
            read_records(root)
                .map_err(RunDirError::Records)?
                .into_iter()
                .map(|r| r.id)
                .collect()
        } else {
            HashSet::new()
        };
        drop_uncommitted_requests(&rpath, &done).map_err(|e| io("repair", &rpath, e))?;
        let open = |p: &Path| {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| io("open", p, e))
        };
        Ok((
            RunDir {
                root: root.to_path_buf(),
                cells: open(&cpath)?,
                requests: open(&rpath)?,
                _lock: lock,
            },
            done,
        ))
    }

    /// The folder.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Writes a finished cell: its files first, then its requests, then its record (the record
    /// is what marks the cell finished, so it goes last).
    pub fn write_cell(&mut self, out: &CellOutput) -> std::io::Result<()> {
        write_cell_files(&self.root, out)?;
        self.append_record(out)?;
        self.sync_records()
    }

    /// The second half of [`RunDir::write_cell`]: the cell's request rows, then its record,
    /// appended (not yet synced: [`RunDir::sync_records`] syncs the records appended so far, so
    /// the cells that finish together share one sync). Call it only after [`write_cell_files`]
    /// succeeded for the cell, so a record still means the cell's files are complete.
    pub(crate) fn append_record(&mut self, out: &CellOutput) -> std::io::Result<()> {
        let mut reqs = String::new();
        for e in &out.events {
            if let harness_core::Event::Request(r) = e {
                let mut v = serde_json::to_value(r).map_err(std::io::Error::other)?;
                if let Some(o) = v.as_object_mut() {
                    o.remove("visible_results");
                    o.insert(
                        "cell".into(),
                        serde_json::Value::String(out.record.id.clone()),
                    );
                }
                reqs.push_str(&v.to_string());
                reqs.push('\n');
            }
        }
        self.requests.write_all(reqs.as_bytes())?;
        self.requests.flush()?;
        let mut line = serde_json::to_string(&out.record).map_err(std::io::Error::other)?;
        line.push('\n');
        self.cells.write_all(line.as_bytes())?;
        self.cells.flush()
    }

    /// Syncs the records appended so far to the disk.
    pub(crate) fn sync_records(&mut self) -> std::io::Result<()> {
        self.cells.sync_data()
    }
}

/// The first half of [`RunDir::write_cell`]: a cell's own files (transcript, events, diff,
/// archives), each written aside, synced and renamed into `root/cells/<cell>/`. Cells write
/// theirs concurrently; the run's single writer then appends the records in turn.
pub(crate) fn write_cell_files(root: &Path, out: &CellOutput) -> std::io::Result<()> {
    let dir = root.join("cells").join(cell_folder(&out.record.id));
    fs::create_dir_all(&dir)?;
    let mut transcript = String::new();
    for m in &out.transcript {
        transcript.push_str(&serde_json::to_string(&**m).map_err(std::io::Error::other)?);
        transcript.push('\n');
    }
    write_atomic(&dir.join(TRANSCRIPT_FILE), transcript.as_bytes())?;
    let mut events = String::new();
    for e in &out.events {
        events.push_str(&serde_json::to_string(e).map_err(std::io::Error::other)?);
        events.push('\n');
    }
    write_atomic(&dir.join(EVENTS_FILE), events.as_bytes())?;
    write_atomic(&dir.join(DIFF_FILE), out.diff.as_bytes())?;
    for a in &out.archives {
        let name = Path::new(&a.path)
            .file_name()
            .map(|n| n.to_owned())
            .unwrap_or_default();
        fs::create_dir_all(dir.join("archive"))?;
        write_atomic(&dir.join("archive").join(name), &a.bytes)?;
    }
    Ok(())
}

/// A cell's transcript (its messages sealed, their token counts computed) and events, from its
/// folder under the run folder `dir`; either is empty when its file is missing.
pub fn read_cell_files(
    dir: &Path,
    id: &str,
) -> Result<
    (
        Vec<std::sync::Arc<harness_core::Message>>,
        Vec<harness_core::Event>,
    ),
    ReadError,
> {
    let folder = dir.join("cells").join(cell_folder(id));
    let transcript: Vec<harness_core::Message> =
        read_jsonl(&folder.join(TRANSCRIPT_FILE))?.unwrap_or_default();
    let events = read_jsonl(&folder.join(EVENTS_FILE))?.unwrap_or_default();
    let transcript = transcript
        .into_iter()
        .map(harness_core::Message::sealed)
        .collect();
    Ok((transcript, events))
}

/// The lines of a JSON-lines file (`None` when there is no file), each read as a `T`; the
/// first line that does not read is an error naming its file, line and column.
pub fn read_jsonl<T: serde::de::DeserializeOwned>(
    path: &Path,
) -> Result<Option<Vec<T>>, ReadError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(ReadError::File(FileError::on("read", path)(source))),
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push(
            serde_json::from_str(line).map_err(|source| ReadError::Json {
                path: path.to_path_buf(),
                line: i + 1,
                source,
            })?,
        );
    }
    Ok(Some(out))
}

/// Writes a file through a temporary name and a rename, so it is never seen half-written
/// ([`crate::atomic`]: a failed write leaves no temporary file behind).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::atomic::write(path, bytes)
}

/// Writes `lines` to `path`, one per line, through a temporary file renamed into place (so a
/// reader never sees half a file, and a failed write leaves none), creating the parent folder;
/// returns how many lines. A device (`/dev/stdout`) is written in place ([`crate::atomic`]).
pub fn write_lines(path: &Path, lines: impl Iterator<Item = String>) -> std::io::Result<usize> {
    crate::atomic::write_with(path, |f| {
        let mut n = 0;
        for l in lines {
            f.write_all(l.as_bytes())?;
            f.write_all(b"\n")?;
            n += 1;
        }
        Ok(n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torn_lines_are_cut() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("c.jsonl");
        fs::write(&p, "{\"a\":1}\n{\"b\":").unwrap();
        repair_jsonl(&p).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "{\"a\":1}\n");
        fs::write(&p, "{\"b\":").unwrap();
        repair_jsonl(&p).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "");
    }

    #[test]
    fn a_second_open_of_a_run_folder_is_refused_while_the_first_holds_it() {
        let d = tempfile::tempdir().unwrap();
        let m = serde_json::json!({"cells": []});
        let (first, _) = RunDir::open(d.path(), &m, true).unwrap();
        let err = RunDir::open(d.path(), &m, true).unwrap_err();
        assert!(matches!(err, RunDirError::Busy { .. }), "{err:?}");
        let text = err.to_string();
        assert!(text.contains("in use by another foldbench run"), "{text}");
        assert!(
            text.contains(&format!("pid {}", std::process::id())),
            "{text}"
        );
        drop(first);
        // Other tests of this process fork children; a child holds a copy of the lock's file
        // descriptor until it execs, so the lock may outlive the drop by a moment.
        let mut again = RunDir::open(d.path(), &m, true);
        for _ in 0..100 {
            if again.is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            again = RunDir::open(d.path(), &m, true);
        }
        assert!(again.is_ok(), "free again once closed: {again:?}");
    }

    #[test]
    fn folder_names_are_safe() {
        assert_eq!(
            cell_folder("t/compact:window=4000/sim/1"),
            "t_compact_window=4000_sim_1"
        );
    }
}
