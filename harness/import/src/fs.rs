//! The file-system side: finding session files and reading them. **This is the only module of
//! the crate that touches the file system**; everything it reads goes through the pure
//! [`crate::import_bytes`].
//!
//! [`discover`] walks files and folders (e.g. `~/.claude/projects`, `~/.codex/sessions`) for
//! transcripts (`*.jsonl`, `*.traj`, `*.traj.json`) and pairs Claude Code subagent files
//! (`agent-*.jsonl`) with their session: the session `<id>.jsonl` beside a
//! `<id>/subagents/agent-*.jsonl`, or, for an `agent-*.jsonl` lying beside sessions, the
//! `<sessionId>.jsonl` its first record names. [`import_paths`] imports everything found and
//! links Codex forks ([`crate::link_forks`]).

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::error::ImportError;
use crate::session::{Format, ImportedSession};

/// A transcript file found by [`discover`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// The file.
    pub path: PathBuf,
    /// For a Claude Code subagent file: the session file it belongs to, when found.
    pub subagent_of: Option<PathBuf>,
}

/// Whether a file name is a transcript's.
fn is_transcript(name: &str) -> bool {
    name.ends_with(".jsonl") || name.ends_with(".traj") || name.ends_with(".traj.json")
}

fn is_subagent(name: &str) -> bool {
    name.starts_with("agent-") && name.ends_with(".jsonl")
}

fn walk(path: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if meta.is_file() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        let Ok(m) = std::fs::metadata(&p) else {
            continue;
        };
        if m.is_dir() {
            walk(&p, out)?;
        } else if p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(is_transcript)
        {
            out.push(p);
        }
    }
    Ok(())
}

/// The `sessionId` the first record of a Claude Code file names (reads at most 64 KiB).
fn session_id_of(path: &Path) -> Option<String> {
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(64 * 1024)
        .read_to_end(&mut buf)
        .ok()?;
    let text = String::from_utf8_lossy(&buf);
    text.lines().find_map(|l| {
        let v: serde_json::Value = serde_json::from_str(l).ok()?;
        v.get("sessionId")?.as_str().map(str::to_string)
    })
}

/// Finds the transcripts in `paths` (files are taken as given, folders walked recursively),
/// sorted, each session followed by its subagent files; subagent files whose session is not
/// found come last.
pub fn discover(paths: &[PathBuf]) -> io::Result<Vec<Discovered>> {
    let mut files = Vec::new();
    for p in paths {
        walk(p, &mut files)?;
    }
    files.sort();
    files.dedup();
    let mut mains: Vec<Discovered> = Vec::new();
    let mut subagents: Vec<Discovered> = Vec::new();
    for path in files {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !is_subagent(name) {
            mains.push(Discovered {
                path,
                subagent_of: None,
            });
            continue;
        }
        let dir = path.parent();
        let in_subagents = dir
            .and_then(|d| d.file_name())
            .is_some_and(|n| n == "subagents");
        let owner = if in_subagents {
            // <parent dir>/<session>/subagents/agent-x.jsonl -> <parent dir>/<session>.jsonl
            dir.and_then(Path::parent).and_then(|session_dir| {
                let stem = session_dir.file_name()?.to_str()?;
                Some(session_dir.with_file_name(format!("{stem}.jsonl")))
            })
        } else {
            session_id_of(&path).and_then(|id| dir.map(|d| d.join(format!("{id}.jsonl"))))
        };
        let owner = owner.filter(|o| o.is_file());
        subagents.push(Discovered {
            path,
            subagent_of: owner,
        });
    }
    let mut out = Vec::with_capacity(mains.len() + subagents.len());
    for m in mains {
        let path = m.path.clone();
        out.push(m);
        out.extend(
            subagents
                .iter()
                .filter(|s| s.subagent_of.as_deref() == Some(path.as_path()))
                .cloned(),
        );
    }
    out.extend(subagents.into_iter().filter(|s| s.subagent_of.is_none()));
    Ok(out)
}

/// Everything [`import_paths`] read.
#[derive(Debug, Default)]
pub struct ImportReport {
    /// The sessions, in file order.
    pub sessions: Vec<ImportedSession>,
    /// Files that could not be imported, with why.
    pub errors: Vec<(PathBuf, FileError)>,
    /// How many files were read.
    pub files: usize,
}

/// Why a file could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// It could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: io::Error,
    },
    /// It was read but is not a transcript.
    #[error(transparent)]
    Import(#[from] ImportError),
}

/// Discovers and imports every transcript under `paths`, then links Codex forks. A subagent
/// session without a `parent` gets its session file's id. One bad file never stops the others.
pub fn import_paths(paths: &[PathBuf], format: Option<Format>) -> io::Result<ImportReport> {
    let found = discover(paths)?;
    let mut report = ImportReport::default();
    let mut owner_ids: Vec<(PathBuf, String)> = Vec::new();
    for d in found {
        report.files += 1;
        let bytes = match std::fs::read(&d.path) {
            Ok(b) => b,
            Err(source) => {
                report.errors.push((
                    d.path.clone(),
                    FileError::Io {
                        path: d.path,
                        source,
                    },
                ));
                continue;
            }
        };
        let name = d.path.display().to_string();
        match crate::import_bytes(&name, &bytes, format) {
            Ok(mut sessions) => {
                if let Some(first) = sessions.first() {
                    owner_ids.push((d.path.clone(), first.id.clone()));
                }
                if let Some(owner) = &d.subagent_of {
                    let owner_id = owner_ids
                        .iter()
                        .find(|(p, _)| p == owner)
                        .map(|(_, id)| id.clone());
                    for s in &mut sessions {
                        if s.parent.is_none() {
                            s.parent.clone_from(&owner_id);
                        }
                    }
                }
                report.sessions.extend(sessions);
            }
            Err(e) => report.errors.push((d.path, FileError::Import(e))),
        }
    }
    crate::link_forks(&mut report.sessions);
    Ok(report)
}
