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
//!
//! Folders are walked following symlinks, with loop detection (a link to an ancestor is skipped
//! and counted); an entry that cannot be read (a folder without read permission, a dangling
//! link, a FIFO, socket or device under a transcript's name) is named and counted in
//! [`ImportReport::unreadable`], and a path given that cannot be
//! read is an error that says why; each session is imported once: a second file holding the same session (same
//! id, same bytes: a copy, or one file reached through two links) is skipped and counted. Only
//! regular files are read ([`open_regular`]): a FIFO, a socket or a device is never opened for
//! reading, so it cannot block.

use std::collections::HashSet;
use std::fs::File;
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

/// What a path is, for messages about files that are not regular files.
fn file_kind(ft: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a folder"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_char_device() || ft.is_block_device() {
        "a device"
    } else if ft.is_symlink() {
        "a symlink"
    } else {
        "a regular file"
    }
}

fn not_regular(path: &Path, ft: std::fs::FileType) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is {}, not a regular file",
            path.display(),
            file_kind(ft)
        ),
    )
}

/// Opens `path` for reading if it is a regular file (symlinks followed). The type is checked
/// before opening, so a FIFO, socket or device is refused without being opened; the open is
/// non-blocking, so a file swapped for a FIFO in between cannot block it either; and the type
/// is checked again on the open handle.
pub fn open_regular(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(not_regular(path, meta.file_type()));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(path, meta.file_type()));
    }
    Ok(file)
}

/// Reads a regular file whole ([`open_regular`]); a file longer than `cap` bytes is an error
/// that names its size and the cap. The size is measured on the open file before anything is
/// read, and the read stops past `cap` all the same (a file that grows meanwhile).
pub fn read_regular(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let len = file.metadata()?.len();
    let too_large = |what: String| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is {what}, larger than {cap} bytes, the most foldbench reads",
                path.display(),
            ),
        )
    };
    if len > cap {
        return Err(too_large(format!(
            "{len} bytes (refused before reading it)"
        )));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_large("growing while it was read".to_string()));
    }
    Ok(bytes)
}

/// The largest transcript file [`import_paths`] reads: 1 GiB (measured before it is read; a
/// larger one is refused unread).
pub const MAX_TRANSCRIPT_BYTES: u64 = 1 << 30;

/// How much of a transcript's start [`import_paths`] reads first to tell a binary file: 8 KiB.
pub(crate) const SNIFF_BYTES: u64 = 8 << 10;

/// Refuses a file that is binary from its first [`SNIFF_BYTES`] (a NUL byte: no transcript
/// holds one), before the rest of it is read.
fn refuse_binary(path: &Path) -> io::Result<()> {
    let mut head = Vec::new();
    open_regular(path)?
        .take(SNIFF_BYTES)
        .read_to_end(&mut head)?;
    if head.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is a binary file (a NUL byte in its first {SNIFF_BYTES} bytes), not a transcript; the rest was not read",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// What a walk found besides transcripts.
#[derive(Debug, Default)]
struct Walked {
    /// Symlinks to an ancestor folder, skipped.
    loops: usize,
    /// Entries that could not be read, with why.
    unreadable: Vec<(PathBuf, String)>,
}

/// Walks `path` (symlinks followed, loops detected) and pushes its transcripts; a file named
/// directly is taken whatever its name. `path` itself unreadable is an error; an entry below it
/// that cannot be read is recorded in `walked`.
fn walk(path: &Path, out: &mut Vec<PathBuf>, walked: &mut Walked) -> io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_dir() {
        if !meta.is_file() {
            return Err(not_regular(path, meta.file_type()));
        }
        out.push(path.to_path_buf());
        return Ok(());
    }
    let walker = walkdir::WalkDir::new(path)
        .follow_links(true)
        .sort_by_file_name();
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(e) if e.loop_ancestor().is_some() => {
                walked.loops += 1;
                continue;
            }
            Err(e) => {
                let at = e.path().unwrap_or(path).to_path_buf();
                let why = e
                    .io_error()
                    .map_or_else(|| e.to_string(), io::Error::to_string);
                if e.depth() == 0 {
                    // The folder given cannot be listed: nothing under it can be replayed.
                    let kind = e.io_error().map_or(io::ErrorKind::Other, io::Error::kind);
                    return Err(io::Error::new(
                        kind,
                        format!("the folder cannot be listed ({why})"),
                    ));
                }
                walked.unreadable.push((at, why));
                continue;
            }
        };
        let ft = entry.file_type();
        if !entry.file_name().to_str().is_some_and(is_transcript) || ft.is_dir() {
            continue;
        }
        if ft.is_file() {
            out.push(entry.into_path());
        } else {
            // A FIFO, a socket or a device under a transcript's name: said and counted as an
            // entry that cannot be read, never opened.
            let why = format!("{}, not a regular file", file_kind(ft));
            walked.unreadable.push((entry.into_path(), why));
        }
    }
    Ok(())
}

/// The `sessionId` the first record of a Claude Code file names (reads at most 64 KiB).
fn session_id_of(path: &Path) -> Option<String> {
    let mut buf = Vec::new();
    open_regular(path)
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
    Ok(discover_counting(paths)?.0)
}

/// [`discover`], and what else the walk met (loops, unreadable entries).
fn discover_counting(paths: &[PathBuf]) -> io::Result<(Vec<Discovered>, Walked)> {
    let mut files = Vec::new();
    let mut walked = Walked::default();
    for p in paths {
        walk(p, &mut files, &mut walked)?;
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
    Ok((out, walked))
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
    /// Sessions skipped because the same session (same id, from a file with the same bytes)
    /// was already imported: a copy, or one file reached through two symlinks.
    pub duplicates: usize,
    /// Symlinks to one of their own ancestor folders, skipped by the walk.
    pub loops: usize,
    /// Entries under the paths given that could not be read (a folder without read permission,
    /// a dangling link, a FIFO, socket or device named like a transcript), with why: not
    /// replayed, and said.
    pub unreadable: Vec<(PathBuf, String)>,
    /// Files read but not imported: the [`Prefilter`] ruled out every session they could hold.
    pub left_out: usize,
}

/// Why a file could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// It could not be read.
    #[error("cannot read {path}")]
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

/// What a session filter can tell from a file before it is imported (parsed and tokenized):
/// a file none of whose sessions can pass is left unread by [`import_paths_filtered`]. Every
/// test is a necessary condition of the full filter, so the sessions kept are the same as when
/// everything is imported and then filtered:
///
/// - `modified_since_ms`: a file last written more than a day before it holds no record after
///   it (records are appended as they happen; the day absorbs clock and time-zone skew);
/// - `session`: a session's id (or its parent's) comes from the file's text or its name, so a
///   file whose path and bytes both lack the prefix holds no session it names;
/// - `project`: the working folder is in the file's text and the project folder in its path.
///
/// - `until_ms` (and `modified_since_ms` again): a Codex rollout whose every line begins with its
///   timestamp holds a session active from its earliest to its latest line
///   ([`crate::codex::rollout_head`]); one that ends before the first day asked for or starts
///   after the last holds none that passes.
///
/// A Codex file is imported when it passes, and so is every rollout it may fork from — the
/// session its first `session_meta` names and those whose `session_meta` it replays (a fork's
/// file repeats its parent's), their parents in turn — so that [`crate::link_forks`] drops a
/// kept fork's replayed history as when everything is imported. (A fork that neither names
/// nor replays its parent is linked by its messages alone; with a filter, it is linked only when
/// its parent passes too.) A subagent file is imported when its session file was.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prefilter {
    /// Leave out files last modified more than a day before this time (ms since the epoch).
    pub modified_since_ms: Option<i64>,
    /// Leave out files whose path and bytes lack this text (a session id's prefix).
    pub session: Option<String>,
    /// Leave out files whose path and bytes lack this text, ASCII case-insensitively (lower
    /// case; a working or project folder's part).
    pub project: Option<String>,
    /// Leave out Codex rollouts whose every line is at or after this time (ms since the epoch:
    /// the end of the last day asked for).
    pub until_ms: Option<i64>,
}

/// A day in milliseconds: the margin of [`Prefilter::modified_since_ms`].
const DAY_MS: i64 = 86_400_000;

impl Prefilter {
    /// Whether it leaves every file in.
    pub(crate) fn is_empty(&self) -> bool {
        *self == Prefilter::default()
    }

    /// Whether a file modified at `mtime_ms` may hold a session that passes.
    fn by_time(&self, mtime_ms: Option<i64>) -> bool {
        match (self.modified_since_ms, mtime_ms) {
            (Some(since), Some(m)) => m >= since - DAY_MS,
            _ => true,
        }
    }

    /// Whether a session active from `span_ms.0` to `span_ms.1` may pass the dates.
    fn by_span(&self, span_ms: Option<(i64, i64)>) -> bool {
        let Some((first, last)) = span_ms else {
            return true;
        };
        self.modified_since_ms.is_none_or(|since| last >= since)
            && self.until_ms.is_none_or(|until| first < until)
    }

    /// [`Prefilter::by_text`] of a Codex rollout whose head was read: a session prefix is
    /// looked for in its id and the ids it may fork from (no scan of its bytes), unless its id
    /// could not be read.
    fn by_rollout(&self, path: &Path, bytes: &[u8], head: &crate::codex::RolloutHead) -> bool {
        let (Some(id), Some(prefix)) = (&head.id, &self.session) else {
            return self.by_text(path, bytes);
        };
        let named = std::iter::once(id)
            .chain(&head.parents)
            .any(|i| i.starts_with(prefix.as_str()));
        let rest = Prefilter {
            session: None,
            ..self.clone()
        };
        named && rest.by_text(path, bytes)
    }

    /// Whether a file with this path and these bytes may hold a session that passes.
    fn by_text(&self, path: &Path, bytes: &[u8]) -> bool {
        let path = path.to_string_lossy();
        if let Some(id) = self.session.as_deref().filter(|t| plain(t)) {
            if !path.contains(id) && !contains(bytes, id.as_bytes()) {
                return false;
            }
        }
        if let Some(p) = self.project.as_deref().filter(|t| plain(t)) {
            let lower = bytes.to_ascii_lowercase();
            // A JSON writer may escape `/` as `\/`.
            let escaped = p.replace('/', "\\/");
            if !path.to_lowercase().contains(p)
                && !contains(&lower, p.as_bytes())
                && !contains(&lower, escaped.as_bytes())
            {
                return false;
            }
        }
        true
    }
}

/// Text that JSON writes as it is (printable ASCII but `"` and `\`): only such text is looked
/// for in a file's bytes; other text leaves every file in.
fn plain(t: &str) -> bool {
    !t.is_empty()
        && t.bytes()
            .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
}

/// Whether `needle` occurs in `hay`.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

/// Discovers and imports every transcript under `paths`, then links Codex forks. A subagent
/// session without a `parent` gets its session file's id. One bad file never stops the others;
/// each session is imported once (by its id and its file's sha256).
pub fn import_paths(paths: &[PathBuf], format: Option<Format>) -> io::Result<ImportReport> {
    import_paths_filtered(paths, format, &Prefilter::default())
}

/// [`import_paths`], leaving unread the files `pre` rules out (counted in
/// [`ImportReport::left_out`]).
pub fn import_paths_filtered(
    paths: &[PathBuf],
    format: Option<Format>,
    pre: &Prefilter,
) -> io::Result<ImportReport> {
    let (found, walked) = discover_counting(paths)?;
    let mut report = ImportReport {
        loops: walked.loops,
        unreadable: walked.unreadable,
        ..ImportReport::default()
    };
    let mut owner_ids: Vec<(PathBuf, String)> = Vec::new();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut imported: HashSet<PathBuf> = HashSet::new();
    let codex = if pre.is_empty() {
        HashSet::new()
    } else {
        codex_needed(&found, format, pre)
    };
    for d in found {
        report.files += 1;
        let bytes = match read_transcript(&d.path) {
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
        if !pre.is_empty() && !keeps(pre, &d, &name, &bytes, format, (&imported, &codex)) {
            report.left_out += 1;
            continue;
        }
        imported.insert(d.path.clone());
        let hash = harness_core::sha256_hex(&bytes);
        match crate::import_bytes(&name, &bytes, format) {
            Ok(mut sessions) => {
                let before = sessions.len();
                sessions.retain(|s| seen.insert((s.id.clone(), hash.clone())));
                report.duplicates += before - sessions.len();
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

/// A transcript's bytes (a binary file refused, a file over the limit cut).
fn read_transcript(p: &Path) -> io::Result<Vec<u8>> {
    let len = open_regular(p)?.metadata()?.len();
    if len <= MAX_TRANSCRIPT_BYTES {
        refuse_binary(p)?;
    }
    read_regular(p, MAX_TRANSCRIPT_BYTES)
}

/// The format of a file from its first lines (a whole-file document cut short is no Codex
/// file), or `format` when given.
fn format_of(name: &str, bytes: &[u8], format: Option<Format>) -> Option<Format> {
    let head = &bytes[..bytes.len().min(1 << 20)];
    let head = String::from_utf8_lossy(head);
    let head: String = head.split_inclusive('\n').take(64).collect();
    format.or_else(|| crate::detect(name, &head).ok())
}

/// When a file was last modified (ms since the epoch).
fn mtime_ms(p: &Path) -> Option<i64> {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_millis()).ok())
}

/// The Codex files a filtered import needs (see [`Prefilter`]): those that may hold a session
/// that passes, and the rollouts they may fork from, transitively. A parent whose rollout is
/// not found by its id brings in every rollout whose id could not be read.
fn codex_needed(found: &[Discovered], format: Option<Format>, pre: &Prefilter) -> HashSet<PathBuf> {
    // (file, its id, the ids it may fork from); and the ids asked for.
    let mut rollouts: Vec<(PathBuf, Option<String>, Vec<String>)> = Vec::new();
    let mut needed: HashSet<PathBuf> = HashSet::new();
    let mut wanted: Vec<String> = Vec::new();
    for d in found {
        // A file that cannot be read is reported by the import.
        let Ok(bytes) = read_transcript(&d.path) else {
            continue;
        };
        let name = d.path.display().to_string();
        let head = match format_of(&name, &bytes, format) {
            Some(Format::Codex) => crate::codex::rollout_head(&bytes),
            Some(Format::CodexLegacy) => crate::codex::RolloutHead {
                id: crate::codex::legacy_id(&bytes),
                ..Default::default()
            },
            _ => continue,
        };
        if pre.by_time(mtime_ms(&d.path))
            && pre.by_span(head.span_ms)
            && pre.by_rollout(&d.path, &bytes, &head)
        {
            needed.insert(d.path.clone());
            wanted.extend(head.parents.iter().cloned());
        }
        rollouts.push((d.path.clone(), head.id, head.parents));
    }
    let mut asked: HashSet<String> = HashSet::new();
    while let Some(id) = wanted.pop() {
        if !asked.insert(id.clone()) {
            continue;
        }
        let by_id = rollouts.iter().any(|r| r.1.as_deref() == Some(id.as_str()));
        for (path, own, parents) in &rollouts {
            let holds = if by_id {
                own.as_deref() == Some(id.as_str())
            } else {
                own.is_none()
            };
            if holds && needed.insert(path.clone()) {
                wanted.extend(parents.iter().cloned());
            }
        }
    }
    needed
}

/// Whether [`import_paths_filtered`] imports a file: a subagent file whose session file was
/// imported (`done.0`), a Codex file when [`codex_needed`] found it needed (`done.1`), any other
/// file that passes `pre`.
fn keeps(
    pre: &Prefilter,
    d: &Discovered,
    name: &str,
    bytes: &[u8],
    format: Option<Format>,
    done: (&HashSet<PathBuf>, &HashSet<PathBuf>),
) -> bool {
    let (imported, codex) = done;
    if d.subagent_of.as_ref().is_some_and(|o| imported.contains(o)) {
        return true;
    }
    if matches!(
        format_of(name, bytes, format),
        Some(Format::Codex | Format::CodexLegacy)
    ) {
        return codex.contains(&d.path);
    }
    pre.by_time(mtime_ms(&d.path)) && pre.by_text(&d.path, bytes)
}
