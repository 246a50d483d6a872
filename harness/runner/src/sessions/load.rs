//! Reading recorded sessions and their unit labels from disk: every file under the paths given
//! (or your own history, [`super::history`]) imported by `harness_import::import_paths`, the files that
//! could not be and the lines skipped said, the filters applied; the labels files read and
//! parsed, every problem said.
//!
//! What a command should know besides the result goes, one line at a time, to the `say` sink
//! the caller passes (`harness_runner::progress::say` in the binary): skipped files, counted
//! import warnings, what the filters kept.

use std::path::{Path, PathBuf};
use std::time::Instant;

use harness_core::judge::SessionLabels;
use harness_import::{Format, ImportedSession, Warning};
use harness_import::{ImportReport, Prefilter};
use harness_report::fmt::count;

use super::history::{self, Filter};
use super::SessionsError;

/// Sessions read from the paths.
#[derive(Debug)]
pub struct Loaded {
    /// The sessions the filters kept, in file order.
    pub sessions: Vec<ImportedSession>,
    /// How many files were read.
    pub files: usize,
    /// Seconds the import (reading and tokenizing) took.
    pub seconds: f64,
}

/// Reads the sessions under `paths` (your own history when there is none; `command` names the
/// command in the message that says none was found) in `input_format` (`auto` or a format's
/// name) and keeps those `filter` selects; says skipped files, counted warnings and what the
/// filters kept through `say`.
pub fn load_sessions(
    paths: &[PathBuf],
    input_format: &str,
    filter: &Filter,
    command: &str,
    say: &dyn Fn(&str),
) -> Result<Loaded, SessionsError> {
    let paths = if paths.is_empty() {
        history::resolve(command, say)?
    } else {
        paths.to_vec()
    };
    let format = match input_format {
        "auto" => None,
        f => Some(
            f.parse::<Format>()
                .map_err(|refused| SessionsError::InputFormat { refused })?,
        ),
    };
    let mut loaded = import_all(&paths, format, &filter.prefilter(), say)?;
    if filter.is_active() {
        let before = loaded.sessions.len();
        loaded.sessions.retain(|s| filter.keeps(s));
        say(&format!(
            "{} of {} selected by the filters",
            loaded.sessions.len(),
            count(before, "session")
        ));
        if loaded.sessions.is_empty() {
            return Err(SessionsError::NoMatch);
        }
    }
    Ok(loaded)
}

/// The longest text of a transcript quoted in a warning, in characters.
const QUOTE_LIMIT: usize = 500;

/// Text from a transcript (a file name, a line's content) as a warning shows it: control
/// characters escaped, cut at [`QUOTE_LIMIT`] characters.
fn shown(text: &str) -> String {
    harness_core::printable(text, QUOTE_LIMIT)
}

/// How many skipped files or unreadable entries are named one by one; the rest are counted.
const NAMED: usize = 5;

/// Says the files that could not be imported and the entries that could not be read: the
/// first [`NAMED`] of each, then a count of the rest.
fn say_skipped(report: &ImportReport, say: &dyn Fn(&str)) {
    for (_, e) in report.errors.iter().take(NAMED) {
        say(&format!(
            "warning: skipped {}",
            shown(&harness_core::one_line(e))
        ));
    }
    if report.errors.len() > NAMED {
        say(&format!(
            "warning: … and {} more files skipped ({} of {} files in all)",
            report.errors.len() - NAMED,
            report.errors.len(),
            report.files
        ));
    }
    for (path, why) in report.unreadable.iter().take(NAMED) {
        say(&format!(
            "warning: cannot read {}: {}; not replayed",
            shown(&path.display().to_string()),
            shown(why)
        ));
    }
    if report.unreadable.len() > NAMED {
        say(&format!(
            "warning: … and {} more entries that cannot be read ({} in all)",
            report.unreadable.len() - NAMED,
            report.unreadable.len()
        ));
    }
}

/// Says what the walk left out: files the prefilter ruled out, symlink loops, duplicates.
fn say_left_out(report: &ImportReport, say: &dyn Fn(&str)) {
    if report.left_out > 0 {
        say(&format!(
            "{} of {} left unread by the filters (no session in {} can match)",
            report.left_out,
            count(report.files, "file"),
            if report.left_out == 1 { "it" } else { "them" }
        ));
    }
    if report.loops > 0 {
        say(&format!(
            "warning: skipped {} symlink{} to a folder that contains {} (a loop)",
            report.loops,
            if report.loops == 1 { "" } else { "s" },
            if report.loops == 1 { "it" } else { "them" }
        ));
    }
    if report.duplicates > 0 {
        say(&format!(
            "note: {} duplicate session{} skipped (same session id and same file content as one already read)",
            report.duplicates,
            if report.duplicates == 1 { "" } else { "s" }
        ));
    }
}

/// Imports every session under `paths` (in `format`, or each file's own when `None`) that
/// `pre` does not rule out unread; says what was skipped and the import warnings through
/// `say`. No session at all is an error that says what was expected.
pub(crate) fn import_all(
    paths: &[PathBuf],
    format: Option<Format>,
    pre: &Prefilter,
    say: &dyn Fn(&str),
) -> Result<Loaded, SessionsError> {
    let began = Instant::now();
    let report = harness_import::import_paths_filtered(paths, format, pre).map_err(|e| {
        SessionsError::Unreadable {
            paths: paths.to_vec(),
            source: e,
        }
    })?;
    let seconds = began.elapsed().as_secs_f64();
    say_skipped(&report, say);
    say_left_out(&report, say);
    for line in warning_lines(&report.sessions) {
        say(&line);
    }
    if report.sessions.is_empty() {
        return Err(SessionsError::NoSession {
            files: report.files,
            unreadable: report.unreadable.len(),
            paths: paths.to_vec(),
        });
    }
    Ok(Loaded {
        sessions: report.sessions,
        files: report.files,
        seconds,
    })
}

/// The most files [`warning_lines`] names one by one.
const WARNED_FILES: usize = 20;

/// The import warnings per file: how many of its lines were skipped with what its sessions kept,
/// the first of those lines ([`skipped_lines`]), lines kept with a warning, and what the importer
/// says about the file as a whole (records joined across damage); after [`WARNED_FILES`] files,
/// one line for the rest.
fn warning_lines(sessions: &[ImportedSession]) -> Vec<String> {
    let mut files: Vec<(&str, Vec<&Warning>)> = Vec::new();
    for w in sessions.iter().flat_map(|s| &s.warnings) {
        match files.iter_mut().find(|(f, _)| *f == w.file) {
            Some((_, ws)) => ws.push(w),
            None => files.push((&w.file, vec![w])),
        }
    }
    let skipped = |w: &&&Warning| w.line > 0 && w.message.starts_with("skipped");
    let mut out = Vec::new();
    for (name, ws) in files.iter().take(WARNED_FILES) {
        let file = shown(name);
        let lines: Vec<&&Warning> = ws.iter().filter(skipped).collect();
        if !lines.is_empty() {
            out.extend(skipped_lines(name, &lines, sessions));
        }
        // Lines kept with a warning (bytes replaced, figures not counted), apart.
        let other: Vec<&&Warning> = ws.iter().filter(|w| w.line > 0 && !skipped(w)).collect();
        if let Some(first) = other.first() {
            out.push(format!(
                "warning: {file}: {} (nothing skipped; first: line {}: {})",
                count(other.len(), "other import warning"),
                first.line,
                shown(&first.message)
            ));
        }
        for w in ws.iter().filter(|w| w.line == 0) {
            out.push(format!("warning: {}", shown(&w.to_string())));
        }
    }
    if files.len() > WARNED_FILES {
        let rest = &files[WARNED_FILES..];
        let lines: usize = rest
            .iter()
            .map(|(_, ws)| ws.iter().filter(skipped).count())
            .sum();
        out.push(format!(
            "warning: {} more file{} with warnings ({} skipped in all)",
            rest.len(),
            if rest.len() == 1 { "" } else { "s" },
            count(lines, "line")
        ));
    }
    out
}

/// The skipped lines shown one by one after a file's header line.
const SKIPPED_SHOWN: usize = 3;

/// A file's skipped lines: a header with their count and what the file's sessions kept (so a
/// session that shrank says so), then the first [`SKIPPED_SHOWN`] lines, each with its number
/// and why, then a count of the rest.
fn skipped_lines(file: &str, lines: &[&&Warning], sessions: &[ImportedSession]) -> Vec<String> {
    let kept: Vec<&ImportedSession> = sessions.iter().filter(|s| s.source == file).collect();
    let turns: usize = kept.iter().map(|s| s.human_turns.len()).sum();
    let requests: usize = kept.iter().map(|s| s.requests.len()).sum();
    let mut out = vec![format!(
        "warning: {}: {} skipped while importing; what is left: {} · {} · {}",
        shown(file),
        count(lines.len(), "line"),
        count(kept.len(), "session"),
        count(turns, "human turn"),
        count(requests, "recorded request")
    )];
    for w in lines.iter().take(SKIPPED_SHOWN) {
        let why = w.message.strip_prefix("skipped: ").unwrap_or(&w.message);
        out.push(format!("  line {}: {}", w.line, shown(why)));
    }
    if lines.len() > SKIPPED_SHOWN {
        let rest = lines.len() - SKIPPED_SHOWN;
        out.push(format!(
            "  … and {rest} more skipped line{}",
            if rest == 1 { "" } else { "s" }
        ));
    }
    out
}

/// The labels files under a path (a file, or *.yaml / *.yml in a folder, recursively; symlinks
/// followed, loops skipped). Only regular files are listed.
fn label_files(path: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if !std::fs::metadata(path)?.is_dir() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    for entry in walkdir::WalkDir::new(path)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .flatten()
    {
        let yaml = entry
            .path()
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml");
        if entry.file_type().is_file() && yaml {
            out.push(entry.into_path());
        }
    }
    Ok(())
}

/// One labels file, read and parsed.
#[derive(Debug, Clone)]
pub struct LabelFile {
    /// The file, as its problems name it.
    pub name: String,
    /// What it labels.
    pub labels: SessionLabels,
}

/// Reads the labels files under `paths` (files, or folders of *.yaml / *.yml) and parses them
/// (`harness_config::parse_labels`). Every file that cannot be read and every problem is said
/// through `say`, then counted in the error; files that label no prompt at all are said too.
pub fn load_labels(paths: &[PathBuf], say: &dyn Fn(&str)) -> Result<Vec<LabelFile>, SessionsError> {
    let mut files = Vec::new();
    for p in paths {
        label_files(p, &mut files).map_err(|source| SessionsError::Labels {
            path: p.clone(),
            source,
        })?;
    }
    let mut out = Vec::new();
    let mut problems = 0;
    for f in &files {
        let name = f.display().to_string();
        let text = match harness_import::read_regular(f, crate::tasks::MAX_SPEC_BYTES)
            .and_then(|b| String::from_utf8(b).map_err(std::io::Error::other))
        {
            Ok(t) => t,
            Err(e) => {
                say(&format!("error: cannot read labels {name}: {e}"));
                problems += 1;
                continue;
            }
        };
        match harness_config::parse_labels(&name, &text) {
            Ok(labels) => out.push(LabelFile { name, labels }),
            Err(ps) => {
                for p in &ps {
                    say(&p.to_string());
                }
                problems += ps.len();
            }
        }
    }
    if problems > 0 {
        return Err(SessionsError::LabelProblems { count: problems });
    }
    if out.iter().all(|f| f.labels.prompts() == 0) {
        say(&format!(
            "warning: no labelled prompt in {} labels file(s)",
            files.len()
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
