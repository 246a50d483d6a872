//! The file tools: `read_file`, `list_files`, `grep`, `edit_file`, `write_file`.

use super::*;

/// The largest file `read_file`, `grep` and `edit_file` read: 64 MiB (their output is capped separately, at
/// [`ToolLimits::output_cap`]).
pub(crate) const MAX_READ_BYTES: u64 = 64 << 20;

/// How much of a file's start decides whether it is binary.
pub(super) const BINARY_SNIFF: usize = 8192;

/// Whether bytes look binary: a NUL byte in the first 8 KiB, or more than one in ten of its
/// characters invalid UTF-8 or control characters (tab, newline, carriage return, form feed
/// and escape are text).
pub(super) fn looks_binary(bytes: &[u8]) -> bool {
    let sample = &bytes[..bytes.len().min(BINARY_SNIFF)];
    if sample.contains(&0) {
        return true;
    }
    let text = String::from_utf8_lossy(sample);
    let (mut odd, mut all) = (0usize, 0usize);
    for c in text.chars() {
        all += 1;
        if c == char::REPLACEMENT_CHARACTER
            || (c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\x0c' | '\x1b'))
        {
            odd += 1;
        }
    }
    // A multi-byte character cut at the end of the sample is not evidence.
    odd > 1 && odd * 10 > all
}

/// Why a workspace file cannot be read by the file tools; its display is the whole text a tool
/// result shows the model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ReadError {
    /// The path is a folder.
    #[error("error: {norm} is a directory; use list_files to see its files")]
    Directory {
        /// The workspace-relative path.
        norm: String,
    },
    /// A FIFO, socket or device.
    #[error("error: {norm} is not a regular file (a FIFO, socket or device); the file tools read regular files only")]
    NotRegular {
        /// The workspace-relative path.
        norm: String,
    },
    /// Larger than [`MAX_READ_BYTES`].
    #[error("error: {norm} is {len} bytes; read_file, grep and edit_file read files up to {MAX_READ_BYTES} bytes (use shell with head, tail or sed -n for parts of it)")]
    TooLarge {
        /// The workspace-relative path.
        norm: String,
        /// Its size in bytes.
        len: u64,
    },
    /// No such file.
    #[error("error: no such file: {norm}")]
    NotFound {
        /// The workspace-relative path.
        norm: String,
    },
    /// Any other failure of the read.
    #[error("error: cannot read {norm}")]
    Io {
        /// The workspace-relative path.
        norm: String,
        /// The read's error.
        #[source]
        source: io::Error,
    },
}

/// Reads a workspace file for `read_file`/`grep`/`edit_file`: regular files only (a FIFO, socket or device
/// is refused before it is opened, and the open is non-blocking), at most [`MAX_READ_BYTES`]
/// (measured before anything is read).
pub(super) fn read_workspace_file(abs: &Path, norm: &str) -> Result<Vec<u8>, ReadError> {
    let norm = norm.to_string();
    match harness_import::read_regular(abs, MAX_READ_BYTES) {
        Ok(b) => Ok(b),
        Err(e) => Err(match fs::metadata(abs) {
            Ok(m) if m.is_dir() => ReadError::Directory { norm },
            Ok(m) if !m.is_file() => ReadError::NotRegular { norm },
            Ok(m) if m.len() > MAX_READ_BYTES => ReadError::TooLarge { norm, len: m.len() },
            _ => file_error(abs, norm, e),
        }),
    }
}

/// Whether the regular file at `abs` holds `text`, read in pieces of at most 1 MiB (memory stays
/// bounded whatever the file's size; a FIFO, socket or device is refused before it is opened,
/// and the open is non-blocking). The checks `file_contains` and `file_lacks` use it.
pub(crate) fn file_contains(abs: &Path, text: &str) -> io::Result<bool> {
    use std::io::Read;
    let needle = text.as_bytes();
    if needle.is_empty() {
        return Ok(true);
    }
    let finder = memchr::memmem::Finder::new(needle);
    let mut file = harness_import::open_regular(abs)?;
    let keep = needle.len() - 1;
    // A piece the size of the file when it is smaller (most are): a checked file of a few KB
    // is not read through a zeroed MiB.
    let size = file.metadata().map_or(1 << 20, |m| m.len());
    let piece = usize::try_from(size.clamp(4 << 10, 1 << 20)).unwrap_or(1 << 20);
    let mut buf = vec![0u8; piece + keep];
    // `have` bytes at the start of `buf` are the end of the last piece, kept so a match across
    // two pieces is found.
    let mut have = 0;
    loop {
        let n = file.read(&mut buf[have..])?;
        if n == 0 {
            return Ok(false);
        }
        let end = have + n;
        if finder.find(&buf[..end]).is_some() {
            return Ok(true);
        }
        let from = end.saturating_sub(keep);
        buf.copy_within(from..end, 0);
        have = end - from;
    }
}

pub(super) fn read_file(ws_root: &Path, a: &Args<'_>, limits: &ToolLimits) -> ToolOutput {
    let (rel, offset, limit) = match (a.req_str("path"), a.opt_uint("offset"), a.opt_uint("limit"))
    {
        (Ok(p), Ok(o), Ok(l)) => (p, o, l),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return ToolOutput::err(e, None),
    };
    let (abs, norm) = match resolve_arg(ws_root, rel) {
        Ok(r) => r,
        Err(out) => return out,
    };
    let target = Some(norm.clone());
    let bytes = match read_workspace_file(&abs, &norm) {
        Ok(b) => b,
        Err(e) => return ToolOutput::err(harness_core::one_line(&e), target),
    };
    if looks_binary(&bytes) {
        return ToolOutput::err(
            format!(
                "error: {norm} is a binary file ({} bytes); read_file shows text files only",
                bytes.len()
            ),
            target,
        );
    }
    let text = String::from_utf8_lossy(&bytes);
    let offset = usize::try_from(offset.unwrap_or(1).max(1)).unwrap_or(usize::MAX);
    let limit = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    let total_lines = text.lines().count();
    if total_lines == 0 {
        return ToolOutput::ok(format!("({norm} is empty)"), target);
    }
    if offset > total_lines {
        return ToolOutput::ok(
            format!("({norm} has {total_lines} lines; offset {offset} is past the end)"),
            target,
        );
    }
    let mut buf = CappedBuf::new(limits.output_cap);
    for (i, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        if i + 1 > offset {
            buf.push(b"\n");
        }
        buf.push(format!("{:>6}\t{}", i + 1, line).as_bytes());
    }
    ToolOutput::ok(buf.finish(), target)
}

/// The error text for a failed read of an existing-or-not path.
pub(super) fn file_error(abs: &Path, norm: String, source: io::Error) -> ReadError {
    if source.kind() == io::ErrorKind::NotFound {
        ReadError::NotFound { norm }
    } else if abs.is_dir() {
        ReadError::Directory { norm }
    } else {
        ReadError::Io { norm, source }
    }
}

/// Collects every non-directory entry below `dir` (not following symlinks), with paths formed
/// as `prefix/name`; skips `.git` everywhere and `.foldbench` unless the walk started inside it.
pub(super) fn walk(dir: &Path, prefix: &str, out: &mut Vec<(String, PathBuf, fs::FileType)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let Ok(ft) = entry.file_type() else {
            continue;
        };
        let rel = if prefix == "." {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        if ft.is_dir() {
            if name == ".git" || (prefix == "." && name == ".foldbench") {
                continue;
            }
            walk(&entry.path(), &rel, out);
        } else {
            out.push((rel, entry.path(), ft));
        }
    }
}

/// The files below (or at) a resolved path, sorted by relative path.
pub(super) fn files_at(abs: &Path, norm: &str) -> Vec<(String, PathBuf, fs::FileType)> {
    let mut out = Vec::new();
    match fs::metadata(abs) {
        Ok(m) if m.is_dir() => walk(abs, norm, &mut out),
        Ok(m) => out.push((norm.to_string(), abs.to_path_buf(), m.file_type())),
        Err(_) => {}
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

pub(super) fn list_files(ws_root: &Path, a: &Args<'_>, limits: &ToolLimits) -> ToolOutput {
    let rel = match a.opt_str("path") {
        Ok(p) => p.unwrap_or("."),
        Err(e) => return ToolOutput::err(e, None),
    };
    let (abs, norm) = match resolve_arg(ws_root, rel) {
        Ok(r) => r,
        Err(out) => return out,
    };
    let target = Some(norm.clone());
    if !abs.exists() {
        return ToolOutput::err(format!("error: no such file or directory: {norm}"), target);
    }
    let files = files_at(&abs, &norm);
    if files.is_empty() {
        return ToolOutput::ok(format!("(no files below {norm})"), target);
    }
    let listing: Vec<String> = files.iter().map(|f| listed(&f.0)).collect();
    ToolOutput::ok(cap_output(&listing.join("\n"), limits.output_cap), target)
}

/// A path as a listing line shows it: as it is, or, when it holds a control character (a
/// newline would make one name look like two), a backslash or a quote, quoted with escapes
/// (`"a\nb.txt"`), as a JSON string of the path would be written.
pub(super) fn listed(path: &str) -> String {
    if path
        .chars()
        .any(|c| c.is_control() || c == '\\' || c == '"')
    {
        format!("{path:?}")
    } else {
        path.to_string()
    }
}

pub(super) fn grep(ws_root: &Path, a: &Args<'_>, limits: &ToolLimits) -> ToolOutput {
    let (pattern, rel) = match (a.req_str("pattern"), a.opt_str("path")) {
        (Ok(p), Ok(r)) => (p, r.unwrap_or(".")),
        (Err(e), _) | (_, Err(e)) => return ToolOutput::err(e, None),
    };
    let (abs, norm) = match resolve_arg(ws_root, rel) {
        Ok(r) => r,
        Err(out) => return out,
    };
    let target = Some(norm.clone());
    let re = match regex::Regex::new(pattern) {
        Ok(re) => re,
        Err(e) => return ToolOutput::err(format!("error: invalid regex `{pattern}`: {e}"), target),
    };
    if !abs.exists() {
        return ToolOutput::err(format!("error: no such file or directory: {norm}"), target);
    }
    let files = files_at(&abs, &norm);
    let single = files.len() == 1 && files[0].0 == norm;
    let mut buf = CappedBuf::new(limits.output_cap);
    let mut matches = 0usize;
    for (path, file, ft) in files {
        if !ft.is_file() {
            if single {
                // The path named a FIFO, socket or device itself.
                return ToolOutput::err(
                    format!("error: {norm} is not a regular file (a FIFO, socket or device); grep searches regular files only"),
                    target,
                );
            }
            continue; // never follow symlinks found while walking
        }
        let bytes = match read_workspace_file(&file, &path) {
            Ok(b) => b,
            Err(e) if single => return ToolOutput::err(harness_core::one_line(&e), target),
            Err(_) => continue,
        };
        if looks_binary(&bytes) {
            if single {
                return ToolOutput::err(
                    format!("error: {norm} is a binary file; grep searches text files"),
                    target,
                );
            }
            continue; // binary files in a folder are skipped, as grep -I does
        }
        let text = String::from_utf8_lossy(&bytes);
        for (i, line) in text.lines().enumerate() {
            if re.is_match(line) {
                if matches > 0 {
                    buf.push(b"\n");
                }
                buf.push(format!("{}:{}:{line}", listed(&path), i + 1).as_bytes());
                matches += 1;
            }
        }
    }
    if matches == 0 {
        return ToolOutput::ok("no matches".to_string(), target);
    }
    ToolOutput::ok(buf.finish(), target)
}

pub(super) fn edit_file(ws_root: &Path, a: &Args<'_>) -> ToolOutput {
    let (rel, old, new) = match (a.req_str("path"), a.req_str("old"), a.req_str("new")) {
        (Ok(p), Ok(o), Ok(n)) => (p, o, n),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return ToolOutput::err(e, None),
    };
    let (abs, norm) = match resolve_arg(ws_root, rel) {
        Ok(r) => r,
        Err(out) => return out,
    };
    let target = Some(norm.clone());
    if is_archive_path(&norm) {
        return ToolOutput::err(
            format!("error: {norm} is in the archive, which is read-only"),
            target,
        );
    }
    if old.is_empty() {
        return ToolOutput::err(
            "error: `old` is empty; give the exact text to replace (use write_file to create a file)"
                .to_string(),
            target,
        );
    }
    if let Err(out) = refuse_hard_link(&abs, &norm) {
        return out;
    }
    let bytes = match read_workspace_file(&abs, &norm) {
        Ok(b) => b,
        Err(e) => return ToolOutput::err(harness_core::one_line(&e), target),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return ToolOutput::err(
            format!("error: {norm} is not UTF-8 text; edit_file cannot edit it"),
            target,
        );
    };
    match text.matches(old).count() {
        0 => ToolOutput::err(format!("error: `old` not found in {norm}"), target),
        1 => {
            let edited = text.replacen(old, new, 1);
            match fs::write(&abs, edited) {
                Ok(()) => ToolOutput::ok(format!("edited {norm}"), target),
                Err(e) => ToolOutput::err(format!("error: cannot write {norm}: {e}"), target),
            }
        }
        n => ToolOutput::err(
            format!("error: `old` occurs {n} times in {norm}; give more context so it is unique"),
            target,
        ),
    }
}

pub(super) fn write_file(ws_root: &Path, a: &Args<'_>) -> ToolOutput {
    let (rel, content) = match (a.req_str("path"), a.req_str("content")) {
        (Ok(p), Ok(c)) => (p, c),
        (Err(e), _) | (_, Err(e)) => return ToolOutput::err(e, None),
    };
    let (abs, norm) = match resolve_arg(ws_root, rel) {
        Ok(r) => r,
        Err(out) => return out,
    };
    let target = Some(norm.clone());
    if norm == "." || abs.is_dir() {
        return ToolOutput::err(format!("error: {norm} is a directory"), target);
    }
    if is_archive_path(&norm) {
        return ToolOutput::err(
            format!("error: {norm} is in the archive, which is read-only"),
            target,
        );
    }
    if let Err(out) = refuse_hard_link(&abs, &norm) {
        return out;
    }
    if let Some(parent) = abs.parent() {
        if let Err(e) = fs::create_dir_all(parent) {
            return ToolOutput::err(
                format!("error: cannot create the parent directories of {norm}: {e}"),
                target,
            );
        }
    }
    match fs::write(&abs, content) {
        Ok(()) => ToolOutput::ok(format!("wrote {} bytes to {norm}", content.len()), target),
        Err(e) => ToolOutput::err(format!("error: cannot write {norm}: {e}"), target),
    }
}
