//! `foldbench merge SHARD_DIR... -o DIR`: joins the run directories of the shards of one matrix
//! (`foldbench run --partition hash:K/N`) into one run directory, as if the matrix had run in one
//! go: `matrix.json` without the partition, `cells.jsonl` and `requests.jsonl` in matrix order,
//! and each cell's folder.
//!
//! Shards must record the same matrix (cells, arms with their parameters, models, seeds, task
//! names); a cell recorded by two shards is refused, so is a record of a cell outside the matrix.
//! Cells of the matrix that no shard recorded are reported: the merge is written, and the
//! command exits 100 so a CI job notices the lost shard.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use harness_core::CellRecord;

use crate::file_error::FileError;
use crate::results::{cell_folder, read_records, write_atomic};
use crate::run::MatrixCell;

/// Why a merge was refused or failed; [`MergeError::is_usage`] tells shards that do not fit
/// together (exit 2) from a read or write that failed (exit 1).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// No shard was given.
    #[error("give at least one shard directory")]
    NoShards,
    /// The output folder already holds something.
    #[error("{} exists and is not empty; merge into a new directory", out.display())]
    OutputInUse {
        /// The output folder.
        out: PathBuf,
    },
    /// A shard's `matrix.json` cannot be read.
    #[error("cannot read {} (is {} a run directory?)", path.display(), dir.display())]
    NotARun {
        /// The shard's folder.
        dir: PathBuf,
        /// Its `matrix.json`.
        path: PathBuf,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// A shard's `matrix.json` is not JSON, or its `cells` not a list of cells.
    #[error("{}{}: {what}", path.display(), position(source))]
    BadMatrix {
        /// The file.
        path: PathBuf,
        /// What it is not (`not a matrix`, `` `cells` is not a list of cells ``).
        what: &'static str,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// Two shards record different matrices.
    #[error(
        "{} and {} are runs of different matrices (their `{field}` differ); merge shards of one matrix, run with the same matrix file, profile and flags",
        first.display(),
        other.display()
    )]
    DifferentMatrices {
        /// The first shard.
        first: PathBuf,
        /// The shard that differs.
        other: PathBuf,
        /// The part of the matrix that differs.
        field: &'static str,
    },
    /// A shard's records cannot be read.
    #[error(transparent)]
    Records(crate::results::ReadError),
    /// A shard records a cell its matrix does not have.
    #[error("{} holds a record of {cell}, which is not a cell of its matrix", dir.display())]
    NotInMatrix {
        /// The shard.
        dir: PathBuf,
        /// The cell's id.
        cell: String,
    },
    /// Two shards record the same cell.
    #[error(
        "the cell {cell} is in both {} and {}; each cell belongs to one shard (give each shard once, with different --partition)",
        first.display(),
        second.display()
    )]
    Twice {
        /// The cell's id.
        cell: String,
        /// The shard that recorded it first.
        first: PathBuf,
        /// The shard that recorded it again.
        second: PathBuf,
    },
    /// A file or folder cannot be read or written.
    #[error(transparent)]
    Io(#[from] crate::file_error::FileError),
    /// The merged matrix or a record cannot be written as JSON.
    #[error(transparent)]
    Json(serde_json::Error),
}

impl MergeError {
    /// Whether the shards do not fit together (exit 2) rather than a read or write that failed
    /// (exit 1).
    pub fn is_usage(&self) -> bool {
        !matches!(self, MergeError::Io(_) | MergeError::Json(_))
    }
}

/// `:LINE:COL` of a parser's error that has a position in the text (none for a value that does
/// not fit the type after parsing).
fn position(e: &serde_json::Error) -> String {
    if e.line() == 0 {
        String::new()
    } else {
        format!(":{}:{}", e.line(), e.column())
    }
}

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// Shards merged.
    pub shards: usize,
    /// Cells recorded in the merged run.
    pub cells: usize,
    /// Cells of the matrix.
    pub matrix_cells: usize,
    /// Cells of the matrix that no shard recorded, in matrix order.
    pub missing: Vec<String>,
}

/// A shard's `matrix.json`: the full matrix, and the value itself.
fn read_matrix(dir: &Path) -> Result<(Vec<MatrixCell>, serde_json::Value), MergeError> {
    let path = dir.join(crate::results::MATRIX_FILE);
    let text = fs::read_to_string(&path).map_err(|source| MergeError::NotARun {
        dir: dir.to_path_buf(),
        path: path.clone(),
        source,
    })?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| MergeError::BadMatrix {
            path: path.clone(),
            what: "not a matrix",
            source,
        })?;
    let cells: Vec<MatrixCell> =
        serde_json::from_value(v.get("cells").cloned().unwrap_or_default()).map_err(|source| {
            MergeError::BadMatrix {
                path: path.clone(),
                what: "`cells` is not a list of cells",
                source,
            }
        })?;
    Ok((cells, v))
}

/// The parts of a `matrix.json` that must agree between shards, by name.
fn identity(v: &serde_json::Value) -> Vec<(&'static str, serde_json::Value)> {
    let task_names = v
        .get("tasks")
        .and_then(|t| t.as_array())
        .map(|ts| {
            ts.iter()
                .map(|t| t.get("name").cloned().unwrap_or_default())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    vec![
        ("version", v.get("version").cloned().unwrap_or_default()),
        ("tasks", serde_json::Value::Array(task_names)),
        ("arms", v.get("arms").cloned().unwrap_or_default()),
        ("models", v.get("models").cloned().unwrap_or_default()),
        ("seeds", v.get("seeds").cloned().unwrap_or_default()),
        ("cells", v.get("cells").cloned().unwrap_or_default()),
    ]
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::create_dir_all(to)?;
    for e in fs::read_dir(from)? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &target)?;
        } else {
            fs::copy(e.path(), target)?;
        }
    }
    Ok(())
}

/// Merges shard run directories into `out`.
pub fn merge(shards: &[PathBuf], out: &Path) -> Result<Merged, MergeError> {
    let Some(first_dir) = shards.first() else {
        return Err(MergeError::NoShards);
    };
    if out.exists()
        && fs::read_dir(out)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(MergeError::OutputInUse {
            out: out.to_path_buf(),
        });
    }
    let (cells, first) = read_matrix(first_dir)?;
    let want = identity(&first);
    let mut owner: HashMap<String, usize> = HashMap::new();
    let mut records: HashMap<String, CellRecord> = HashMap::new();
    let in_matrix: HashSet<&str> = cells.iter().map(|c| c.id.as_str()).collect();
    for (i, dir) in shards.iter().enumerate() {
        let (_, v) = read_matrix(dir)?;
        for ((name, a), (_, b)) in want.iter().zip(identity(&v)) {
            if *a != b {
                return Err(MergeError::DifferentMatrices {
                    first: first_dir.clone(),
                    other: dir.clone(),
                    field: name,
                });
            }
        }
        for r in read_records(dir).map_err(MergeError::Records)? {
            if !in_matrix.contains(r.id.as_str()) {
                return Err(MergeError::NotInMatrix {
                    dir: dir.clone(),
                    cell: r.id,
                });
            }
            if let Some(j) = owner.insert(r.id.clone(), i) {
                return Err(MergeError::Twice {
                    cell: r.id,
                    first: shards[j].clone(),
                    second: dir.clone(),
                });
            }
            records.insert(r.id.clone(), r);
        }
    }
    let io = |what: &'static str, p: &Path, source: std::io::Error| -> MergeError {
        FileError::on(what, p)(source).into()
    };
    fs::create_dir_all(out.join("cells")).map_err(|e| io("create", out, e))?;
    let mut matrix = first.clone();
    if let Some(o) = matrix.as_object_mut() {
        o.remove("partition");
        o.remove("only");
    }
    let text = serde_json::to_string_pretty(&matrix).map_err(MergeError::Json)?;
    let mpath = out.join(crate::results::MATRIX_FILE);
    write_atomic(&mpath, text.as_bytes()).map_err(|e| io("write", &mpath, e))?;
    // Cell folders and requests first; the records last (a record means a complete cell).
    let mut requests: HashMap<String, Vec<String>> = HashMap::new();
    for (i, dir) in shards.iter().enumerate() {
        for (id, _) in owner.iter().filter(|(_, o)| **o == i) {
            let from = dir.join("cells").join(cell_folder(id));
            if from.is_dir() {
                let to = out.join("cells").join(cell_folder(id));
                copy_dir(&from, &to).map_err(|e| io("copy", &from, e))?;
            }
        }
        let rpath = dir.join(crate::results::REQUESTS_FILE);
        let Ok(f) = fs::File::open(&rpath) else {
            continue;
        };
        for line in BufReader::new(f).lines() {
            let line = line.map_err(|e| io("read", &rpath, e))?;
            let cell = serde_json::from_str::<serde_json::Value>(&line)
                .ok()
                .and_then(|v| v.get("cell").and_then(|c| c.as_str()).map(str::to_string));
            // Requests of a cell without a record (a torn shard) are dropped with the cell.
            if let Some(cell) = cell.filter(|c| owner.get(c) == Some(&i)) {
                requests.entry(cell).or_default().push(line);
            }
        }
    }
    let mut req_text = String::new();
    let mut cell_text = String::new();
    let mut missing = Vec::new();
    for c in &cells {
        match records.get(&c.id) {
            Some(r) => {
                for l in requests.get(&c.id).into_iter().flatten() {
                    req_text.push_str(l);
                    req_text.push('\n');
                }
                cell_text.push_str(&serde_json::to_string(r).map_err(MergeError::Json)?);
                cell_text.push('\n');
            }
            None => missing.push(c.id.clone()),
        }
    }
    let rpath = out.join(crate::results::REQUESTS_FILE);
    write_atomic(&rpath, req_text.as_bytes()).map_err(|e| io("write", &rpath, e))?;
    let cpath = out.join(crate::results::CELLS_FILE);
    write_atomic(&cpath, cell_text.as_bytes()).map_err(|e| io("write", &cpath, e))?;
    Ok(Merged {
        shards: shards.len(),
        cells: records.len(),
        matrix_cells: cells.len(),
        missing,
    })
}
