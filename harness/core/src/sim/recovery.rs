//! The sim's means of getting a missing fact back: the calls the request's text allows, by the
//! behaviour profile's means (re-read, re-run, search, archive read).

use std::collections::HashSet;

use serde_json::json;

use super::regex_escape;
use crate::fold::archive_pointer;
use crate::message::{canonical_json, MessageKind, Role};
use crate::request::Request;
use crate::spec::{strings_of, Action, Need, Step};
use crate::tools;

/// The means of recovery, as the behaviour profile names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Recovery {
    /// Re-explore from what is visible: read a path a message names, list the workspace, read a
    /// listed file whose name shares a word with the request.
    Reread,
    /// A call the request shows, again.
    Rerun,
    /// A grep of the workspace for the cue.
    Workspace,
    /// A grep of the visible archives for the cue.
    Archive,
}

/// The means in the profile's order ([`crate::behaviour::Means::shares`]).
pub(super) const MEANS: [Recovery; 4] = [
    Recovery::Reread,
    Recovery::Rerun,
    Recovery::Workspace,
    Recovery::Archive,
];

/// How a tried recovery call is remembered within its turn.
pub(super) fn tried_key(kind: Recovery, name: &str, args: &serde_json::Value) -> String {
    let kind = match kind {
        Recovery::Archive => "archive",
        Recovery::Rerun => "rerun",
        Recovery::Reread => "reread",
        Recovery::Workspace => "workspace",
    };
    format!("{kind} {name} {}", canonical_json(args))
}

/// Extensions of the words in a message that are taken for file paths.
const PATH_EXTENSIONS: [&str; 15] = [
    "py", "md", "txt", "log", "csv", "ini", "toml", "json", "jsonl", "yaml", "yml", "cfg", "sql",
    "sh", "rs",
];

/// Every recovery call the request's text allows for `need`, by means: the archive grep (cue
/// visible, an archive pointed to), the re-runs (calls shown without their result), the
/// re-explorations (reads of paths the messages name; a listing of the workspace, and once one
/// is in view, reads of the listed files whose names share a word with the request), the
/// workspace grep (cue visible). Within a means, the calls about what the step at hand works on
/// come first.
pub(super) fn recovery_candidates(
    req: &Request,
    need: &Need,
    focus: &[String],
) -> Vec<(Recovery, String, serde_json::Value)> {
    let cue = need
        .cue
        .as_deref()
        .filter(|c| !c.is_empty() && req.contains_text(c));
    let mut out = Vec::new();
    if let Some(grep) = cue.and_then(|cue| archive_grep(req, cue)) {
        out.push((Recovery::Archive, "grep".to_string(), grep));
    }
    out.extend(calls_again(req, focus));
    if let Some(cue) = cue {
        out.push((
            Recovery::Workspace,
            "grep".to_string(),
            json!({ "pattern": regex_escape(cue) }),
        ));
    }
    out
}

/// The arguments of a grep for `cue` of the archive the request's fold results (or strategy
/// reports, or a summary quoting one) point to: the folder holding them when several do.
fn archive_grep(req: &Request, cue: &str) -> Option<serde_json::Value> {
    let mut archives: Vec<String> = Vec::new();
    for line in archive_lines(req) {
        if let Some((_, _, path)) = archive_pointer(line) {
            if !archives.contains(&path) {
                archives.push(path);
            }
        }
    }
    let path = match archives.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        many => common_folder(many),
    }?;
    Some(json!({ "pattern": regex_escape(cue), "path": path }))
}

/// The re-runs (calls the request shows without their result) and the re-explorations (reads of
/// paths its messages name; a listing of the workspace, and once one is in view, reads of the
/// listed files whose names share a word with the rest of the request), each list with the calls
/// about what the step at hand works on first.
fn calls_again(req: &Request, focus: &[String]) -> Vec<(Recovery, String, serde_json::Value)> {
    // Calls whose output is in the request already would show the same again.
    let shown: HashSet<String> = req
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool && m.kind == MessageKind::Plain)
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect::<HashSet<&str>>()
        .into_iter()
        .flat_map(|id| {
            req.messages
                .iter()
                .flat_map(|m| &m.tool_calls)
                .filter(move |c| c.id == id)
                .map(|c| format!("{} {}", c.name, c.canonical_args()))
        })
        .collect();
    let mut seen: Vec<(String, serde_json::Value)> = Vec::new();
    let mut add = |kind: Recovery,
                   name: &str,
                   args: serde_json::Value,
                   into: &mut Vec<(Recovery, String, serde_json::Value)>| {
        let key = format!("{name} {}", canonical_json(&args));
        if !shown.contains(&key) && !seen.iter().any(|(n, a)| n == name && *a == args) {
            seen.push((name.to_string(), args.clone()));
            into.push((kind, name.to_string(), args));
        }
    };
    let mut reruns = Vec::new();
    for c in req.messages.iter().flat_map(|m| &m.tool_calls) {
        if tools::find(&c.name).is_some_and(|t| t.sim_reruns) {
            add(Recovery::Rerun, &c.name, c.args.clone(), &mut reruns);
        }
    }
    let mut rereads = Vec::new();
    for m in req.messages.iter().filter(|m| m.role != Role::Tool) {
        for path in paths_in(&m.text) {
            add(
                Recovery::Reread,
                "read_file",
                json!({ "path": path }),
                &mut rereads,
            );
        }
    }
    match listed_files(req) {
        None => add(Recovery::Reread, "list_files", json!({}), &mut rereads),
        Some(listed) => {
            for path in listed {
                add(
                    Recovery::Reread,
                    "read_file",
                    json!({ "path": path }),
                    &mut rereads,
                );
            }
        }
    }
    // The ones about what the step at hand works on first (a read of `data/stock-levels.csv`
    // before an edit of `depot/stock.py`), else in the order the request shows them.
    let overlap = |args: &serde_json::Value| {
        let mut texts = Vec::new();
        strings_of(args, &mut texts);
        let words: HashSet<String> = texts.iter().flat_map(|t| path_words(t)).collect();
        focus.iter().filter(|w| words.contains(*w)).count()
    };
    for list in [&mut reruns, &mut rereads] {
        list.sort_by_key(|(_, _, args)| std::cmp::Reverse(overlap(args)));
    }
    reruns.extend(rereads);
    reruns
}

/// With a listing of the workspace in view: its files whose names share a word with the rest
/// of the request; `None` with no listing.
fn listed_files(req: &Request) -> Option<Vec<String>> {
    let listings: Vec<&str> = req
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool && m.tool_name.as_deref() == Some("list_files"))
        .map(|m| m.text.as_str())
        .collect();
    if listings.is_empty() {
        return None;
    }
    let words: HashSet<String> = req
        .messages
        .iter()
        .filter(|m| m.tool_name.as_deref() != Some("list_files"))
        .flat_map(|m| {
            let args = m.tool_calls.iter().map(|c| c.args.to_string());
            std::iter::once(m.text.clone())
                .chain(args)
                .collect::<Vec<_>>()
        })
        .flat_map(|t| path_words(&t))
        .collect();
    Some(
        listings
            .iter()
            .flat_map(|l| paths_in(l))
            .filter(|p| path_words(p).iter().any(|w| words.contains(w)))
            .collect(),
    )
}

/// The words of the paths a step works on (its `path` argument and the paths its texts name),
/// which rank the re-runs tried for the facts it needs.
pub(super) fn focus_words(step: &Step) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    if let Action::Tool { args, .. } = &step.action {
        if let Some(p) = args.get("path").and_then(|p| p.as_str()) {
            paths.push(p.to_string());
        }
    }
    for t in step.written_texts() {
        paths.extend(paths_in(&t));
    }
    for w in paths.iter().flat_map(|p| path_words(p)) {
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// The name words of the paths in `text` (`data/stock-levels.csv`: `data`, `stock`, `levels`),
/// lower-cased, without extensions and words of one or two letters.
fn path_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() > 2 && !PATH_EXTENSIONS.contains(w))
        .map(str::to_ascii_lowercase)
        .collect()
}

/// The lines of the request's host messages (fold results, strategy reports, summaries quoting
/// them) from where a fold result or strategy report begins.
pub(super) fn archive_lines(req: &Request) -> impl Iterator<Item = &str> {
    req.messages
        .iter()
        .filter(|m| m.role == Role::User && !m.is_human())
        .flat_map(|m| m.text.lines())
        .filter_map(|line| {
            let at = line.find("[fold]").or_else(|| line.find("[strategy"))?;
            Some(&line[at..])
        })
}

/// The folder that holds every one of `paths` (`None` when they share none).
pub(super) fn common_folder(paths: &[String]) -> Option<String> {
    let first: Vec<&str> = paths.first()?.split('/').collect();
    let mut n = first.len().saturating_sub(1);
    for p in &paths[1..] {
        let segs: Vec<&str> = p.split('/').collect();
        n = n.min(segs.len().saturating_sub(1));
        n = (0..n).find(|&i| first[i] != segs[i]).unwrap_or(n);
    }
    (n > 0).then(|| first[..n].join("/"))
}

/// The words of `text` that name files: relative paths (no leading `.` or `/`, no `..`) ending
/// in a known extension, in order of appearance, each once.
pub(crate) fn paths_in(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let words = text.split(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c)));
    for w in words {
        let w = w.trim_end_matches(['.', '-', '/']);
        if w.is_empty() || w.starts_with(['.', '/', '-']) || w.contains("..") || w.contains("//") {
            continue;
        }
        let Some((stem, ext)) = w.rsplit_once('.') else {
            continue;
        };
        let stem_name = stem.rsplit('/').next().unwrap_or(stem);
        if stem_name.is_empty() || !PATH_EXTENSIONS.contains(&ext) {
            continue;
        }
        if !out.iter().any(|p| p == w) {
            out.push(w.to_string());
        }
    }
    out
}
