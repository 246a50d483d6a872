//! Claude Code session JSONL.
//!
//! Records (`type: user | assistant | system | attachment | progress | ...`) form a tree through
//! `parentUuid`. The importer:
//!
//! - follows the **active branch**: from the leaf back through `parentUuid` (and
//!   `logicalParentUuid` across a compaction boundary, whose `parentUuid` is null; a boundary
//!   whose `logicalParentUuid` the file does not hold is joined to the record before it); records of
//!   abandoned branches (edits, rewinds) are not read. The leaf is the last `user`/`assistant`
//!   record that descends from the last assistant record: the last record of the file is not
//!   always on the branch (bash-mode and local-command records can hang from the root);
//! - **merges the lines of one API response** (same `message.id` + `requestId`, one content block
//!   per line) into one assistant message: text blocks joined, `tool_use` blocks as calls;
//!   thinking blocks are kept as the message's thinking on the models that keep them in later
//!   requests ([`keeps_thinking`]: Claude Opus 4.5 on, Sonnet 4.6 on) and dropped on the
//!   others (the provider strips them from later requests). The lines of a
//!   response with parallel calls chain one after another, and each result hangs under its own
//!   call's line, so a result may sit off the `parentUuid` chain: results whose nearest
//!   user/assistant ancestor is a line of a response on the branch are read too;
//! - **merges parallel tool results**: one tool message per `tool_result` block, in the order of
//!   the calls (whatever order the lines came in); `toolUseResult` (a viewer copy) is ignored;
//! - keeps **human turns** apart: a `user` record whose content has text (not only `tool_result`
//!   blocks), not `isMeta`, not `isCompactSummary`, and whose text is not a slash-command wrapper
//!   (`<command-name>`, `<command-message>`, `<command-args>`, `<local-command-stdout>`,
//!   `<local-command-stderr>`, `<local-command-caveat>`), a bash-mode record (`<bash-input>`,
//!   `<bash-stdout>`, `<bash-stderr>`) or an interruption notice (`[Request interrupted by
//!   user`). Those non-prompts are **kept as user messages of the turn in progress** (Claude Code
//!   sends them to the model, so they count in its context) but are not in `human_turns`. The
//!   prompt's [`crate::HumanTurn::text`] is its words only: without the IDE context blocks
//!   (`<ide_opened_file>`, `<ide_selection>`, `<system-reminder>`) and image placeholders that
//!   the message itself keeps;
//! - replaces **images** (base64) by `[image]` in the message text: base64 is never tokenized;
//! - **sidechains** (`isSidechain: true`, the Task tool's subagents) become their own sessions,
//!   one per sidechain root, with `parent` set to the `sessionId`; their id is
//!   `agent-<agentId>` when the records carry an `agentId` (subagent files), else
//!   `<sessionId>/sidechain-<n>`. Inside a sidechain session the parent agent's task prompt is
//!   turn 1 (the `isSidechain` rule only keeps sidechain records out of the main session);
//! - keeps **compaction points**: a `compact_boundary` system record is an event (trigger and
//!   `preTokens` from `compactMetadata`), an `isCompactSummary` record a summary message
//!   ([`harness_core::MessageKind::Summary`]) and an event; requests after it read from
//!   the summary on ([`crate::RecordedRequest::context_start`]); a user record that is not
//!   `isMeta` and begins with `CONTINUED` without the flag is a summary too, and, with no
//!   boundary before it, a compaction point of kind [`crate::EventKind::Continued`] (a session
//!   that begins where an earlier one ran out of context);
//! - keeps each request's `message.model`, the session's first `cwd`, and its first and last
//!   record timestamps on the branch ([`crate::ImportedSession::started_ms`], `ended_ms`), and
//!   each message's ([`crate::ImportedSession::message_ms`]: a response's last line);
//! - keeps `message.usage` per request (field-wise maximum over the response's lines: the lines
//!   repeat the input counts and grow the output count);
//! - drops assistant records of model `<synthetic>` (Claude Code's own error and notice messages,
//!   not model calls), `attachment`, `progress`, hook `system` records, `summary` titles,
//!   snapshots and queue records (not model context, or not recorded in a readable form).

use std::collections::{HashMap, HashSet};

use harness_core::ToolCall;
use serde_json::{Map, Value};

use crate::builder::Builder;
use crate::error::ImportError;
use crate::json::{self, bool_field, json_lines, push_part, str_field, Line};
use crate::session::{EventKind, Format, ImportedSession};

/// Record types Claude Code writes that carry no conversation content.
const KNOWN_TYPES: &[&str] = &[
    "user",
    "assistant",
    "system",
    "attachment",
    "progress",
    "summary",
    "file-history-snapshot",
    "queue-operation",
    "permission-mode",
    "last-prompt",
    "custom-title",
    "agent-name",
    "tag",
];

/// Prefixes of user text that is not a prompt.
const NOT_PROMPTS: &[&str] = &[
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "[Request interrupted by user",
];

/// Prefixes of context blocks that accompany a prompt but are not its words.
const CONTEXT_BLOCKS: &[&str] = &[
    "<ide_opened_file>",
    "<ide_selection>",
    "<system-reminder>",
    "<ide_diagnostics>",
];

/// Whether a parsed JSON-lines file looks like Claude Code (for detection).
pub(crate) fn looks_like(v: &Map<String, Value>) -> bool {
    let t = str_field(v, "type").unwrap_or("");
    ((v.contains_key("sessionId") || v.contains_key("parentUuid")) && KNOWN_TYPES.contains(&t))
        || (t == "file-history-snapshot" && v.contains_key("snapshot"))
        || (t == "summary" && v.contains_key("leafUuid"))
}

/// Imports one Claude Code file: the main session (when it has one) then its sidechains.
pub(crate) fn import(file: &str, text: &str) -> Result<Vec<ImportedSession>, ImportError> {
    let (lines, warnings) = json_lines(file, text)?;
    if !lines.iter().any(|l| looks_like(&l.v)) {
        return Err(ImportError::WrongShape {
            file: file.to_string(),
            format: Format::ClaudeCode,
            detail: "no record has a Claude Code `type` with `sessionId`/`parentUuid`".into(),
        });
    }
    // Records of types this importer does not know (new Claude Code versions add some) carry no
    // conversation content it can read and are passed over; a record without a type is counted.
    let skipped: Vec<usize> = lines
        .iter()
        .filter(|l| str_field(&l.v, "type").is_none())
        .map(|l| l.no)
        .collect();
    let damaged: Vec<usize> = warnings.iter().map(|w| w.line).collect();
    let tree = Tree::new(&lines, &damaged);
    let session_id = session_id(file, &lines);

    let mut sessions = Vec::new();
    // The main session.
    let main: Vec<usize> = (0..lines.len())
        .filter(|&i| tree.is_node(i) && !tree.sidechain[i])
        .collect();
    if main.iter().any(|&i| tree.is_turn_record(i)) {
        let mut b = Builder::new(session_id.clone(), Format::ClaudeCode, file);
        build(&mut b, &lines, &tree, &main, false);
        sessions.push(b.finish());
    }
    // Sidechains, one session per root, in order of first appearance.
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut group_of_root: HashMap<usize, usize> = HashMap::new();
    for i in (0..lines.len()).filter(|&i| tree.is_node(i) && tree.sidechain[i]) {
        let root = tree.sidechain_root(i);
        let g = *group_of_root.entry(root).or_insert_with(|| {
            groups.push((root, Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push(i);
    }
    let mut ids_used: HashMap<String, usize> = HashMap::new();
    let mut anonymous = 0;
    for (_, members) in &groups {
        if !members.iter().any(|&i| tree.is_turn_record(i)) {
            continue;
        }
        let agent = members
            .iter()
            .find_map(|&i| str_field(&lines[i].v, "agentId"));
        let base = match agent {
            Some(a) => format!("agent-{a}"),
            None => {
                anonymous += 1;
                format!("{session_id}/sidechain-{anonymous}")
            }
        };
        let n = ids_used.entry(base.clone()).or_insert(0);
        *n += 1;
        let id = if *n == 1 { base } else { format!("{base}-{n}") };
        let parent = members
            .iter()
            .find_map(|&i| str_field(&lines[i].v, "sessionId"))
            .map(str::to_string);
        let mut b = Builder::new(id, Format::ClaudeCode, file);
        b.set_parent(parent.or_else(|| Some(session_id.clone())));
        build(&mut b, &lines, &tree, members, true);
        sessions.push(b.finish());
    }
    let mut file_warnings = warnings;
    if tree.bridged > 0 {
        file_warnings.push(crate::Warning {
            file: file.to_string(),
            line: 0,
            message: format!(
                "{} record{} whose parent was on a skipped line joined to the record before {} \
                 (the conversation goes on past the damage; the skipped records are lost)",
                tree.bridged,
                if tree.bridged == 1 { "" } else { "s" },
                if tree.bridged == 1 { "it" } else { "them" }
            ),
        });
    }
    file_warnings.extend(skipped.into_iter().map(|line| crate::Warning {
        file: file.to_string(),
        line,
        message: "skipped: a record without `type`".to_string(),
    }));
    match sessions.first_mut() {
        Some(first) => {
            let mut w = file_warnings;
            w.append(&mut first.warnings);
            first.warnings = w;
        }
        None => {
            if let Some(w) = file_warnings.first() {
                return Err(ImportError::NoRecords {
                    file: file.to_string(),
                    lines: text.split('\n').filter(|l| !l.trim().is_empty()).count(),
                    skipped: file_warnings.len(),
                    first_line: w.line,
                    first: w.message.clone(),
                });
            }
        }
    }
    Ok(sessions)
}

/// The session's id: the file's own name when a record names it (a resumed session's file may
/// carry records of the session it resumed), else the first `sessionId`.
fn session_id(file: &str, lines: &[Line]) -> String {
    let stem = file_stem(file);
    if lines
        .iter()
        .any(|l| str_field(&l.v, "sessionId") == Some(stem.as_str()))
    {
        stem
    } else {
        lines
            .iter()
            .find_map(|l| str_field(&l.v, "sessionId"))
            .map(str::to_string)
            .unwrap_or(stem)
    }
}

/// The file name without folders and extension.
pub(crate) fn file_stem(file: &str) -> String {
    let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let base = base.strip_suffix(".jsonl").unwrap_or(base);
    base.to_string()
}

/// The `parentUuid` tree of a file.
struct Tree {
    /// Per line: the record's uuid (None for records outside the tree).
    uuid: Vec<Option<String>>,
    /// Per line: the parent line index (`parentUuid`, or `logicalParentUuid` when that is null).
    parent: Vec<Option<usize>>,
    /// Per line: `isSidechain`.
    sidechain: Vec<bool>,
    /// Per line: the record type.
    kind: Vec<String>,
    /// Per line: the response key of an assistant record (`message.id` + `requestId`).
    key: Vec<Option<String>>,
    /// Records whose parent is missing with a damaged line before them, joined to the record
    /// before them.
    bridged: usize,
}

impl Tree {
    /// The tree of a file's records. `damaged` holds the 1-based numbers of the lines that
    /// could not be read, ascending: a record whose named parent is missing and that follows a
    /// damaged line (after the node before it) most likely had its parent on that line, so it
    /// is joined to the node before it (of the same chain, main or sidechain). Without that, a
    /// damaged line cuts the conversation and everything before it is lost.
    fn new(lines: &[Line], damaged: &[usize]) -> Tree {
        let mut index = HashMap::new();
        let mut uuid = Vec::with_capacity(lines.len());
        for (i, l) in lines.iter().enumerate() {
            let u = str_field(&l.v, "uuid").map(str::to_string);
            if let Some(u) = &u {
                index.entry(u.clone()).or_insert(i);
            }
            uuid.push(u);
        }
        // A duplicate uuid later in the file is the same record written again: not a node.
        for (i, u) in uuid.iter_mut().enumerate() {
            if u.as_ref().is_some_and(|u| index.get(u) != Some(&i)) {
                *u = None;
            }
        }
        let sidechain: Vec<bool> = lines
            .iter()
            .map(|l| bool_field(&l.v, "isSidechain"))
            .collect();
        // The last node seen, per chain (main, sidechain).
        let mut last: [Option<usize>; 2] = [None, None];
        let mut bridged = 0;
        let mut parent = Vec::with_capacity(lines.len());
        for (i, l) in lines.iter().enumerate() {
            let named =
                str_field(&l.v, "parentUuid").or_else(|| str_field(&l.v, "logicalParentUuid"));
            let mut p = named
                .and_then(|p| index.get(p).copied())
                .filter(|&p| p != i);
            let chain = usize::from(sidechain[i]);
            if let (Some(_), None, Some(before)) = (named, p, last[chain]) {
                let (from, to) = (lines[before].no, l.no);
                let i_damaged = damaged.partition_point(|&d| d <= from);
                if damaged.get(i_damaged).is_some_and(|&d| d < to) {
                    p = Some(before);
                    bridged += 1;
                } else if str_field(&l.v, "subtype") == Some("compact_boundary") {
                    // The conversation it compacted is the one before it in the file, whatever
                    // uuid its `logicalParentUuid` names (a copy of the session may not hold it).
                    p = Some(before);
                }
            }
            parent.push(p);
            if uuid[i].is_some() {
                last[chain] = Some(i);
            }
        }
        let kind = lines
            .iter()
            .map(|l| str_field(&l.v, "type").unwrap_or("").to_string())
            .collect();
        let key = lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                if str_field(&l.v, "type") != Some("assistant") {
                    return None;
                }
                let msg = l.v.get("message");
                let id = msg.and_then(|m| m.get("id")).and_then(Value::as_str);
                match id {
                    Some(id) => Some(format!(
                        "{id}\u{1f}{}",
                        str_field(&l.v, "requestId").unwrap_or("")
                    )),
                    None => Some(format!("\u{1f}line{i}")),
                }
            })
            .collect();
        Tree {
            uuid,
            parent,
            sidechain,
            kind,
            key,
            bridged,
        }
    }

    /// Whether line `i` is a node of the conversation tree.
    fn is_node(&self, i: usize) -> bool {
        self.uuid[i].is_some()
    }

    /// Whether line `i` is a user or assistant record.
    fn is_turn_record(&self, i: usize) -> bool {
        matches!(self.kind[i].as_str(), "user" | "assistant")
    }

    /// The first record of the sidechain line `i` belongs to.
    fn sidechain_root(&self, i: usize) -> usize {
        let mut cur = i;
        let mut seen = HashSet::new();
        while let Some(p) = self.parent[cur] {
            if !self.sidechain[p] || !seen.insert(p) {
                break;
            }
            cur = p;
        }
        cur
    }

    /// Whether `i` is `ancestor` or descends from it (memoised; cycles count as no).
    fn descends(&self, i: usize, ancestor: usize, memo: &mut HashMap<usize, bool>) -> bool {
        let mut path = Vec::new();
        let mut cur = Some(i);
        let answer = loop {
            let Some(c) = cur else { break false };
            if c == ancestor {
                break true;
            }
            if let Some(&known) = memo.get(&c) {
                break known;
            }
            if path.len() > self.parent.len() {
                break false;
            }
            path.push(c);
            cur = self.parent[c];
        };
        for p in path {
            memo.insert(p, answer);
        }
        answer
    }

    /// The nearest ancestor of `i` that is a user or assistant record.
    fn anchor(&self, i: usize) -> Option<usize> {
        let mut cur = self.parent[i];
        let mut steps = 0;
        while let Some(p) = cur {
            if self.is_turn_record(p) {
                return Some(p);
            }
            steps += 1;
            if steps > self.parent.len() {
                return None;
            }
            cur = self.parent[p];
        }
        None
    }
}

/// Whether a user record holds tool results.
fn has_tool_result(v: &Map<String, Value>) -> bool {
    v.get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        })
}

/// The active branch of a group of records, in file order.
fn active_branch(lines: &[Line], tree: &Tree, members: &[usize]) -> Vec<usize> {
    let in_group: HashSet<usize> = members.iter().copied().collect();
    // The leaf: the last record that descends from the last model answer. (The last record of
    // the file is not always on the active branch: bash-mode and local-command records may hang
    // anywhere in the tree.)
    let Some(&answer) = members
        .iter()
        .rev()
        .find(|&&i| tree.kind[i] == "assistant")
        .or_else(|| members.iter().rev().find(|&&i| tree.is_turn_record(i)))
    else {
        return Vec::new();
    };
    let mut memo: HashMap<usize, bool> = HashMap::new();
    let leaf = members
        .iter()
        .rev()
        .copied()
        .filter(|&i| tree.is_turn_record(i))
        .find(|&i| tree.descends(i, answer, &mut memo))
        .unwrap_or(answer);
    let mut included: HashSet<usize> = HashSet::new();
    let mut cur = Some(leaf);
    while let Some(i) = cur {
        if !in_group.contains(&i) || !included.insert(i) {
            break;
        }
        cur = tree.parent[i];
    }
    // Every line of a response on the branch.
    let keys: HashSet<&str> = included
        .iter()
        .filter_map(|&i| tree.key[i].as_deref())
        .collect();
    for &i in members {
        if tree.key[i].as_deref().is_some_and(|k| keys.contains(k)) {
            included.insert(i);
        }
    }
    // Results hanging under a line of an included response, off the chain. A result can itself
    // be the parent of the next result, so repeat until nothing changes.
    loop {
        let mut added = false;
        for &i in members {
            if included.contains(&i) || tree.kind[i] != "user" || !has_tool_result(&lines[i].v) {
                continue;
            }
            if tree.anchor(i).is_some_and(|a| included.contains(&a)) {
                included.insert(i);
                added = true;
            }
        }
        if !added {
            break;
        }
    }
    let mut out: Vec<usize> = included.into_iter().collect();
    out.sort_unstable();
    out
}

/// Feeds the active branch of `members` to the builder.
fn build(b: &mut Builder, lines: &[Line], tree: &Tree, members: &[usize], sidechain: bool) {
    let branch = active_branch(lines, tree, members);
    // All branch lines of each response, in file order.
    let mut response_lines: HashMap<&str, Vec<usize>> = HashMap::new();
    for &i in &branch {
        if let Some(k) = tree.key[i].as_deref() {
            response_lines.entry(k).or_default().push(i);
        }
    }
    let mut done: HashSet<&str> = HashSet::new();
    for &i in &branch {
        let l = &lines[i];
        if let Some(t) = str_field(&l.v, "timestamp") {
            b.stamp(t);
        }
        if let Some(cwd) = str_field(&l.v, "cwd") {
            b.set_cwd(cwd);
        }
        match tree.kind[i].as_str() {
            "assistant" => {
                let Some(k) = tree.key[i].as_deref() else {
                    continue;
                };
                if !done.insert(k) {
                    continue;
                }
                let parts = response_lines.get(k).map(Vec::as_slice).unwrap_or(&[]);
                assistant(b, lines, parts);
            }
            "user" => user(b, l, sidechain),
            "system" if str_field(&l.v, "subtype") == Some("compact_boundary") => {
                let meta = l.v.get("compactMetadata");
                let trigger = meta
                    .and_then(|m| m.get("trigger"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let pre = meta
                    .and_then(|m| m.get("preTokens"))
                    .and_then(Value::as_u64);
                b.compaction(EventKind::CompactBoundary, trigger, pre);
            }
            _ => {}
        }
    }
}

/// One API response from its lines.
fn assistant(b: &mut Builder, lines: &[Line], parts: &[usize]) {
    let mut text = String::new();
    let mut thinking = String::new();
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut usage = None;
    let mut response_id = None;
    let mut synthetic = false;
    for &i in parts {
        let l = &lines[i];
        if let Some(t) = str_field(&l.v, "timestamp") {
            // The message's time is its response's last line.
            b.stamp(t);
        }
        let Some(msg) = l.v.get("message").and_then(Value::as_object) else {
            b.warn(l.no, "skipped: an assistant record without `message`");
            continue;
        };
        match str_field(msg, "model") {
            Some("<synthetic>") => synthetic = true,
            model => b.set_model(model),
        }
        if response_id.is_none() {
            response_id = str_field(msg, "id").map(str::to_string);
        }
        usage = json::max_usage(usage, msg.get("usage").and_then(json::usage));
        match msg.get("content") {
            Some(Value::String(t)) => push_part(&mut text, t),
            Some(Value::Array(blocks)) => {
                for blk in blocks {
                    match blk.get("type").and_then(Value::as_str) {
                        Some("text") => push_part(
                            &mut text,
                            blk.get("text").and_then(Value::as_str).unwrap_or(""),
                        ),
                        Some("tool_use" | "server_tool_use") => {
                            let id = blk.get("id").and_then(Value::as_str).unwrap_or("");
                            if id.is_empty() {
                                b.warn(l.no, "skipped: a tool_use block without `id`");
                            } else if !calls.iter().any(|c| c.id == id) {
                                calls.push(ToolCall {
                                    id: id.to_string(),
                                    name: blk
                                        .get("name")
                                        .and_then(Value::as_str)
                                        .unwrap_or("")
                                        .to_string(),
                                    args: blk
                                        .get("input")
                                        .cloned()
                                        .unwrap_or(Value::Object(Map::new())),
                                });
                            }
                        }
                        Some("thinking") => push_part(
                            &mut thinking,
                            blk.get("thinking").and_then(Value::as_str).unwrap_or(""),
                        ),
                        _ => {} // redacted_thinking: no text to count
                    }
                }
            }
            _ => {}
        }
    }
    if synthetic {
        return;
    }
    // The thinking stays in later requests only on models that keep it there.
    let kept = (!thinking.is_empty() && b.model().is_some_and(keeps_thinking)).then_some(thinking);
    b.assistant_thinking(text, kept, calls, response_id, usage);
}

/// Whether a model keeps the thinking of earlier assistant turns in its context (Anthropic's
/// extended-thinking docs: by default from Claude Opus 4.5 and Sonnet 4.6 on; earlier models
/// strip it from later requests).
pub fn keeps_thinking(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    let version = |family: &str| -> Option<(u32, u32)> {
        let rest = m.split(family).nth(1)?;
        let mut it = rest.split('-').filter(|x| !x.is_empty());
        let major = it.next()?.parse().ok()?;
        let minor = it
            .next()
            .and_then(|x| x.parse().ok())
            .filter(|&x: &u32| x < 100)
            .unwrap_or(0);
        Some((major, minor))
    };
    match (version("opus-"), version("sonnet-"), version("haiku-")) {
        (Some(v), _, _) => v >= (4, 5),
        (_, Some(v), _) => v >= (4, 6),
        (_, _, Some(v)) => v >= (5, 0),
        _ => m.contains("mythos"),
    }
}

/// How Claude Code's summary of an earlier conversation begins.
pub(crate) const CONTINUED: &str = "This session is being continued from a previous conversation";

/// One user record: tool results, a prompt, a compaction summary or another user message.
fn user(b: &mut Builder, l: &Line, sidechain: bool) {
    let Some(content) = l.v.get("message").and_then(|m| m.get("content")) else {
        b.warn(l.no, "skipped: a user record without `message.content`");
        return;
    };
    let mut texts: Vec<String> = Vec::new();
    match content {
        Value::String(t) => texts.push(t.clone()),
        Value::Array(blocks) => {
            for blk in blocks {
                if blk.get("type").and_then(Value::as_str) == Some("tool_result") {
                    let id = blk.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
                    let out = json::content_text(blk.get("content").unwrap_or(&Value::Null));
                    let is_error = blk
                        .get("is_error")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    b.tool_result(l.no, id, out, is_error);
                } else {
                    let t = json::block_text(blk);
                    if !t.is_empty() {
                        texts.push(t);
                    }
                }
            }
        }
        _ => {
            b.warn(
                l.no,
                "skipped: user content that is neither text nor blocks",
            );
            return;
        }
    }
    if texts.is_empty() {
        return;
    }
    let mut all = String::new();
    for t in &texts {
        push_part(&mut all, t);
    }
    if bool_field(&l.v, "isCompactSummary") {
        b.summary(all, EventKind::CompactSummary);
        return;
    }
    if all.trim_start().starts_with(CONTINUED) && !bool_field(&l.v, "isMeta") {
        // A summary of an earlier conversation with no `isCompactSummary` flag: this file
        // begins after a loss (or, mid-file, a compaction whose boundary was not recorded).
        b.summary(all, EventKind::Continued);
        return;
    }
    let not_prompt = |t: &String| {
        let t = t.trim_start();
        NOT_PROMPTS.iter().any(|p| t.starts_with(p))
    };
    let is_prompt = !bool_field(&l.v, "isMeta")
        && (sidechain || !bool_field(&l.v, "isSidechain"))
        && !texts.iter().all(not_prompt)
        && !texts.iter().all(|t| t.trim().is_empty());
    if !is_prompt {
        b.user(all);
        return;
    }
    let mut words = String::new();
    for t in &texts {
        let tt = t.trim_start();
        if t != json::IMAGE && !CONTEXT_BLOCKS.iter().any(|p| tt.starts_with(p)) {
            push_part(&mut words, t);
        }
    }
    if words.is_empty() {
        words = all.clone();
    }
    b.human(all, words, str_field(&l.v, "uuid").map(str::to_string));
}
