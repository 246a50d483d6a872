//! The results store (DESIGN §10): `results/<run-id>/`.
//!
//! ```text
//! matrix.json            the resolved matrix (cells with ids, arms, seeds, models, options)
//! cells.jsonl            one CellRecord per line (format: harness_core::record), appended and
//!                        flushed as each cell ends
//! requests.jsonl         one line per request: {"cell": id, ...RequestRecord}
//! cells/<cell>/transcript.jsonl   every message the session appended
//! cells/<cell>/events.jsonl       the events
//! cells/<cell>/diff.patch         the workspace diff against the fixture
//! cells/<cell>/archive/…          the archives the cell wrote
//! ```
//!
//! Opening an existing run directory resumes it: the cells already in `cells.jsonl` are finished
//! and not run again. A line torn by a kill in the middle of a write is cut off first.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use harness_core::record::CellRecord;

use crate::cell::CellOutput;

/// An open run directory.
#[derive(Debug)]
pub struct RunDir {
    root: PathBuf,
    cells: File,
    requests: File,
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
pub fn repair_jsonl(path: &Path) -> std::io::Result<()> {
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

/// Reads the cell records of a run directory (skipping lines that do not parse).
pub fn read_records(dir: &Path) -> Result<Vec<CellRecord>, String> {
    let path = dir.join("cells.jsonl");
    let f = File::open(&path).map_err(|e| {
        format!(
            "cannot open {}: {e}; is this a run directory?",
            path.display()
        )
    })?;
    let mut out = Vec::new();
    for (i, line) in BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|e| format!("{}:{}: cannot read: {e}", path.display(), i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<CellRecord>(&line) {
            Ok(r) => out.push(r),
            Err(e) => {
                return Err(format!(
                    "{}:{}:{}: not a cell record: {e}",
                    path.display(),
                    i + 1,
                    e.column()
                ))
            }
        }
    }
    Ok(out)
}

impl RunDir {
    /// Creates or reopens a run directory. `matrix` is the resolved matrix as JSON; reopening a
    /// directory that holds another matrix is refused.
    pub fn open(
        root: &Path,
        matrix: &serde_json::Value,
    ) -> Result<(RunDir, HashSet<String>), String> {
        fs::create_dir_all(root.join("cells"))
            .map_err(|e| format!("cannot create {}: {e}", root.display()))?;
        let mpath = root.join("matrix.json");
        if let Ok(old) = fs::read_to_string(&mpath) {
            let old: serde_json::Value =
                serde_json::from_str(&old).map_err(|e| format!("{}: {e}", mpath.display()))?;
            // The same matrix and the same part of it (a shard, or an explicit cell list).
            if ["cells", "partition", "only"]
                .iter()
                .any(|k| old.get(k) != matrix.get(k))
            {
                return Err(format!(
                    "{} holds a run of a different matrix; give another --out to start a new run, or the same arguments to resume it",
                    root.display()
                ));
            }
        } else {
            let text = serde_json::to_string_pretty(matrix).map_err(|e| e.to_string())?;
            write_atomic(&mpath, text.as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", mpath.display()))?;
        }
        let cpath = root.join("cells.jsonl");
        let rpath = root.join("requests.jsonl");
        repair_jsonl(&cpath).map_err(|e| format!("cannot repair {}: {e}", cpath.display()))?;
        repair_jsonl(&rpath).map_err(|e| format!("cannot repair {}: {e}", rpath.display()))?;
        let done: HashSet<String> = if cpath.exists() {
            read_records(root)?.into_iter().map(|r| r.id).collect()
        } else {
            HashSet::new()
        };
        let open = |p: &Path| {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| format!("cannot open {}: {e}", p.display()))
        };
        Ok((
            RunDir {
                root: root.to_path_buf(),
                cells: open(&cpath)?,
                requests: open(&rpath)?,
            },
            done,
        ))
    }

    /// The folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Writes a finished cell: its files first, then its requests, then its record (the record
    /// is what marks the cell finished, so it goes last).
    pub fn write_cell(&mut self, out: &CellOutput) -> std::io::Result<()> {
        let dir = self.root.join("cells").join(cell_folder(&out.record.id));
        fs::create_dir_all(&dir)?;
        let mut transcript = String::new();
        for m in &out.transcript {
            transcript.push_str(&serde_json::to_string(&**m).map_err(std::io::Error::other)?);
            transcript.push('\n');
        }
        write_atomic(&dir.join("transcript.jsonl"), transcript.as_bytes())?;
        let mut events = String::new();
        for e in &out.events {
            events.push_str(&serde_json::to_string(e).map_err(std::io::Error::other)?);
            events.push('\n');
        }
        write_atomic(&dir.join("events.jsonl"), events.as_bytes())?;
        write_atomic(&dir.join("diff.patch"), out.diff.as_bytes())?;
        for a in &out.archives {
            let name = Path::new(&a.path)
                .file_name()
                .map(|n| n.to_owned())
                .unwrap_or_default();
            fs::create_dir_all(dir.join("archive"))?;
            write_atomic(&dir.join("archive").join(name), &a.bytes)?;
        }
        let mut reqs = String::new();
        for e in &out.events {
            if let harness_core::events::Event::Request(r) = e {
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
        self.cells.flush()?;
        self.cells.sync_data()
    }
}

/// Writes a file through a temporary name and a rename, so it is never seen half-written.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!(
        "{}.tmp",
        path.extension().and_then(|e| e.to_str()).unwrap_or("")
    ));
    {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, path)
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
    fn folder_names_are_safe() {
        assert_eq!(
            cell_folder("t/compact:window=4000/sim/1"),
            "t_compact_window=4000_sim_1"
        );
    }
}
