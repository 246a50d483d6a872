//! The six workspace tools the agent calls (docs/design.md §6) and the sandbox they run in.
//!
//! Every tool resolves its paths through [`resolve`]: absolute paths, paths whose normalisation
//! leaves the root (`..`) and paths that go through a symlink to outside the workspace are refused
//! with an error result, never executed; so are paths into `.git`, and writes to a file with more
//! than one hard link (its other names may be outside the workspace). The shell runs `sh -c` in
//! the workspace root inside the [`Sandbox`] (bubblewrap when the machine has it), in its own
//! process group (killed as a whole on timeout), with an allow-listed environment
//! ([`crate::sandbox::allowed_env`]).
//!
//! Tool errors are results the model reads ([`ToolOutput::is_error`]), never panics or `Err`s.
//!
//! Output formats (task specs' `expect` strings rely on them):
//!
//! - `read_file`: `format!("{:>6}\t{}", lineno, line)` per line, joined with `\n`.
//! - `list_files`: one workspace-relative path per line, sorted.
//! - `grep`: `path:lineno:text` per match, files in sorted order; `no matches` when none.
//! - `edit_file`: `edited PATH`; `write_file`: `wrote N bytes to PATH`.
//! - `shell`: the merged stdout/stderr, then `\n[exit code: N]` when non-zero, or
//!   `\n[killed: timed out after Ns]` on timeout.
//! - Long outputs keep their head and tail around a line
//!   `[… N bytes cut from the middle of the output …]`.

use std::collections::VecDeque;
use std::fs;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Component, Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use harness_core::message::{ToolCall, ToolSpec};
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use crate::sandbox::Sandbox;
use crate::tool_cache::{self, Source, ToolCache};
use crate::workspace::is_archive_path;
use std::sync::Arc;

/// How long the shell tool waits, after `sh` itself exited, for background children that still
/// hold its output pipe before it kills them.
const EXIT_GRACE: Duration = Duration::from_millis(250);

/// How long to drain what is left in the pipe after the process group was killed.
const DRAIN_TIMEOUT: Duration = Duration::from_millis(500);

/// Names of the tools this module executes, in the order [`tool_specs`] lists them.
pub const TOOL_NAMES: [&str; 6] = [
    "read_file",
    "list_files",
    "grep",
    "edit_file",
    "write_file",
    "shell",
];

/// Limits that apply to tool calls, the sandbox their shell commands run in, and the run's tool
/// cache.
#[derive(Debug, Clone)]
pub struct ToolLimits {
    /// Wall-clock limit of one `shell` call; on expiry its whole process group is killed.
    pub shell_timeout: Duration,
    /// Maximum size in bytes of a tool's output (shell, read_file, grep, list_files); longer
    /// output keeps its first and last halves with a note in between.
    pub output_cap: usize,
    /// Where shell commands run (bubblewrap when this machine has it, by default).
    pub sandbox: Sandbox,
    /// The run's cache of shell commands (`None`: every command runs).
    pub cache: Option<Arc<ToolCache>>,
    /// Commands never taken from the cache (a task's `cache: false` steps and commands).
    pub uncached: Arc<[String]>,
}

impl Default for ToolLimits {
    fn default() -> Self {
        ToolLimits {
            shell_timeout: Duration::from_secs(30),
            output_cap: 50_000,
            sandbox: Sandbox::default(),
            cache: None,
            uncached: Arc::from(Vec::new()),
        }
    }
}

/// The result of one tool call, as the model will see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text of the result.
    pub text: String,
    /// Whether the call failed (bad arguments, refused path, missing file, shell timeout...). A
    /// shell command that exits non-zero is *not* an error: its output is a normal result.
    pub is_error: bool,
    /// The normalised workspace-relative path the call reads, writes or searches (`.` for
    /// `grep`/`list_files` without a path); `None` for `shell`, unknown tools and paths that
    /// could not be normalised.
    pub target: Option<String>,
    /// Whether a `shell` result came from the run's tool cache instead of a process.
    pub cached: bool,
}

impl ToolOutput {
    fn ok(text: String, target: Option<String>) -> Self {
        ToolOutput {
            text,
            is_error: false,
            target,
            cached: false,
        }
    }

    fn err(text: String, target: Option<String>) -> Self {
        ToolOutput {
            text,
            is_error: true,
            target,
            cached: false,
        }
    }
}

/// The JSON schemas of the six workspace tools, in the order of [`TOOL_NAMES`].
pub fn tool_specs() -> Vec<ToolSpec> {
    fn spec(name: &str, description: &str, parameters: Value) -> ToolSpec {
        ToolSpec {
            name: name.to_string(),
            description: description.to_string(),
            parameters,
        }
    }
    let path_desc = "Path relative to the workspace root.";
    vec![
        spec(
            "read_file",
            "Read a text file; lines are shown numbered (cat -n style). Use offset/limit for a \
             part of a long file.",
            json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": path_desc },
                    "offset": { "type": "integer", "minimum": 1,
                                "description": "First line to show, 1-based (default 1)." },
                    "limit": { "type": "integer", "minimum": 1,
                               "description": "Maximum number of lines to show (default: all)." }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        ),
        spec(
            "list_files",
            "List every file below a directory, recursively, one workspace-relative path per line.",
            json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string",
                              "description": "Directory relative to the workspace root (default: the root)." }
                },
                "additionalProperties": false
            }),
        ),
        spec(
            "grep",
            "Search files for a regular expression (Rust regex syntax), recursively below a \
             directory or in one file. Prints path:line:text for every matching line.",
            json!({
                "type": "object",
                "properties": {
                    "pattern": { "type": "string", "description": "Regular expression." },
                    "path": { "type": "string",
                              "description": "File or directory relative to the workspace root (default: the root)." }
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        ),
        spec(
            "edit_file",
            "Replace text in a file: `old` must occur exactly once in the file; it is replaced \
             by `new`. Include enough context in `old` to make it unique.",
            json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": path_desc },
                    "old": { "type": "string", "description": "Exact text to replace; must be unique in the file." },
                    "new": { "type": "string", "description": "Replacement text." }
                },
                "required": ["path", "old", "new"],
                "additionalProperties": false
            }),
        ),
        spec(
            "write_file",
            "Create or overwrite a file with the given content; missing parent directories are \
             created.",
            json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": path_desc },
                    "content": { "type": "string", "description": "The whole new content of the file." }
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        ),
        spec(
            "shell",
            "Run a command with `sh -c` in the workspace root (stderr merged into stdout, no \
             network guarantees, time-limited). Non-zero exit codes are reported after the output.",
            json!({
                "type": "object",
                "properties": {
                    "command": { "type": "string", "description": "Shell command line." }
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        ),
    ]
}

/// Executes one tool call in the workspace at `ws_root`. Never panics on bad input: unknown
/// tools, missing or ill-typed arguments, refused paths and IO failures become error results.
pub async fn execute(ws_root: &Path, call: &ToolCall, limits: &ToolLimits) -> ToolOutput {
    // Some providers hand the arguments over as a JSON string; accept that too.
    let parsed;
    let args = match &call.args {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v) => {
                parsed = v;
                &parsed
            }
            Err(_) => &call.args,
        },
        other => other,
    };
    let a = Args {
        tool: &call.name,
        args,
    };
    match call.name.as_str() {
        "read_file" => read_file(ws_root, &a, limits),
        "list_files" => list_files(ws_root, &a, limits),
        "grep" => grep(ws_root, &a, limits),
        "edit_file" => edit_file(ws_root, &a),
        "write_file" => write_file(ws_root, &a),
        "shell" => shell(ws_root, &a, limits).await,
        other => ToolOutput::err(
            format!(
                "error: unknown tool `{other}`; the tools are {}",
                TOOL_NAMES.join(", ")
            ),
            None,
        ),
    }
}

/// Typed access to a call's arguments, with error texts that name the tool and the argument.
struct Args<'a> {
    tool: &'a str,
    args: &'a Value,
}

impl<'a> Args<'a> {
    fn get(&self, key: &str) -> Option<&'a Value> {
        match self.args.get(key) {
            None | Some(Value::Null) => None,
            Some(v) => Some(v),
        }
    }

    fn req_str(&self, key: &str) -> Result<&'a str, String> {
        match self.get(key) {
            Some(Value::String(s)) => Ok(s),
            _ => Err(format!(
                "error: {} needs a string argument `{key}`",
                self.tool
            )),
        }
    }

    fn opt_str(&self, key: &str) -> Result<Option<&'a str>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(format!(
                "error: {} argument `{key}` must be a string",
                self.tool
            )),
        }
    }

    fn opt_uint(&self, key: &str) -> Result<Option<u64>, String> {
        let bad = || {
            format!(
                "error: {} argument `{key}` must be a non-negative integer",
                self.tool
            )
        };
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(v) => Ok(Some(v)),
                // Accept whole floats such as 10.0.
                None => match n.as_f64() {
                    Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64 => {
                        Ok(Some(f as u64))
                    }
                    _ => Err(bad()),
                },
            },
            Some(Value::String(s)) => s.trim().parse::<u64>().map(Some).map_err(|_| bad()),
            Some(_) => Err(bad()),
        }
    }
}

/// Normalises a workspace-relative path lexically: drops `.` components, resolves `..`, joins
/// with `/`; the root itself is `.`. Refuses absolute paths and paths that leave the root.
pub fn normalize(rel: &str) -> Result<String, String> {
    let outside = || {
        format!(
            "error: path `{rel}` is outside the workspace; use a path relative to the workspace root"
        )
    };
    let mut parts: Vec<&str> = Vec::new();
    for comp in Path::new(rel).components() {
        match comp {
            Component::CurDir => {}
            Component::ParentDir => {
                if parts.pop().is_none() {
                    return Err(outside());
                }
            }
            Component::Normal(s) => match s.to_str() {
                Some(s) => parts.push(s),
                None => return Err(format!("error: path `{rel}` is not valid UTF-8")),
            },
            Component::RootDir | Component::Prefix(_) => return Err(outside()),
        }
    }
    if parts.is_empty() {
        Ok(".".to_string())
    } else {
        Ok(parts.join("/"))
    }
}

/// Resolves a workspace-relative path to an absolute path inside the workspace.
///
/// Refuses absolute paths, paths whose normalisation escapes the root (`..`), and paths that go
/// through a symlink to outside the root (every existing component is resolved; a dangling
/// symlink on the way is refused too, since its target cannot be checked). The part of the path
/// that does not exist yet is appended as is. Paths inside the archive folder are allowed.
pub fn resolve(ws_root: &Path, rel: &str) -> Result<PathBuf, String> {
    let norm = normalize(rel)?;
    resolve_normalized(ws_root, rel, &norm)
}

fn resolve_normalized(ws_root: &Path, rel: &str, norm: &str) -> Result<PathBuf, String> {
    let root = ws_root
        .canonicalize()
        .map_err(|e| format!("error: the workspace root is not accessible: {e}"))?;
    let comps: Vec<&str> = if norm == "." {
        Vec::new()
    } else {
        norm.split('/').collect()
    };
    let mut cur = root.clone();
    for (i, comp) in comps.iter().enumerate() {
        let next = cur.join(comp);
        match fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => match next.canonicalize() {
                Ok(target) if target.starts_with(&root) => cur = target,
                Ok(_) => {
                    return Err(format!(
                        "error: path `{rel}` resolves through a symlink to outside the workspace; \
                         use a path relative to the workspace root"
                    ))
                }
                Err(_) => {
                    return Err(format!(
                        "error: path `{rel}` goes through the symlink `{}` whose target does not \
                         exist",
                        comps[..=i].join("/")
                    ))
                }
            },
            Ok(_) => cur = next,
            Err(_) => {
                // This component does not exist (or its parent is not a directory): nothing
                // below it can be a symlink; the operation itself will report the problem.
                let mut out = next;
                for c in &comps[i + 1..] {
                    out.push(c);
                }
                return Ok(out);
            }
        }
    }
    Ok(cur)
}

/// Normalises and resolves `rel` for a file tool; on failure returns the error result to hand
/// to the model. Paths into the workspace's `.git` folder are refused, also through a symlink:
/// the file tools read and write the work tree, never the repository (its hooks and config run
/// code).
fn resolve_arg(ws_root: &Path, rel: &str) -> Result<(PathBuf, String), ToolOutput> {
    let norm = normalize(rel).map_err(|e| ToolOutput::err(e, None))?;
    let abs = resolve_normalized(ws_root, rel, &norm)
        .map_err(|e| ToolOutput::err(e, Some(norm.clone())))?;
    let in_git = |p: &Path| p.components().next() == Some(Component::Normal(".git".as_ref()));
    let through_git = ws_root
        .canonicalize()
        .ok()
        .and_then(|root| abs.strip_prefix(root).ok().map(in_git))
        .unwrap_or(false);
    if in_git(Path::new(&norm)) || through_git {
        return Err(ToolOutput::err(
            format!(
                "error: `{rel}` is inside `.git`, which the file tools do not touch; \
                 use the shell's `git` to look at the repository"
            ),
            Some(norm),
        ));
    }
    Ok((abs, norm))
}

/// Refuses to write a file that has more than one hard link: its other names may be outside the
/// workspace, so writing it would change a file there.
fn refuse_hard_link(abs: &Path, norm: &str) -> Result<(), ToolOutput> {
    use std::os::unix::fs::MetadataExt;
    match fs::metadata(abs) {
        Ok(m) if m.is_file() && m.nlink() > 1 => Err(ToolOutput::err(
            format!(
                "error: {norm} has {} hard links, and its other names may be outside the \
                 workspace; refusing to write it (write a new file instead)",
                m.nlink()
            ),
            Some(norm.to_string()),
        )),
        _ => Ok(()),
    }
}

// ---------------------------------------------------------------------------------------------
// Output cap

/// Collects bytes, keeping the first half and the last half of `cap` bytes.
struct CappedBuf {
    cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: usize,
}

impl CappedBuf {
    fn new(cap: usize) -> Self {
        CappedBuf {
            cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    fn head_cap(&self) -> usize {
        self.cap / 2
    }

    fn tail_cap(&self) -> usize {
        self.cap - self.cap / 2
    }

    fn push(&mut self, data: &[u8]) {
        self.total += data.len();
        let room = self.head_cap().saturating_sub(self.head.len());
        let (to_head, rest) = data.split_at(room.min(data.len()));
        self.head.extend_from_slice(to_head);
        self.tail.extend(rest);
        let tail_cap = self.tail_cap();
        if self.tail.len() > tail_cap {
            let excess = self.tail.len() - tail_cap;
            self.tail.drain(..excess);
        }
    }

    fn finish(self) -> String {
        let tail: Vec<u8> = self.tail.into_iter().collect();
        if self.total <= self.cap {
            let mut all = self.head;
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        // Cut on char boundaries: drop an incomplete sequence at the end of the head and
        // continuation bytes at the start of the tail.
        let head_len = match std::str::from_utf8(&self.head) {
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            _ => self.head.len(),
        };
        let tail_skip = tail
            .iter()
            .take(3)
            .take_while(|b| (**b & 0xC0) == 0x80)
            .count();
        let head = &self.head[..head_len];
        let tail = &tail[tail_skip..];
        let cut = self.total - head.len() - tail.len();
        format!(
            "{}\n[… {cut} bytes cut from the middle of the output …]\n{}",
            String::from_utf8_lossy(head),
            String::from_utf8_lossy(tail)
        )
    }
}

/// Caps a text at `cap` bytes, keeping its head and tail around a note.
pub fn cap_output(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    let mut buf = CappedBuf::new(cap);
    buf.push(text.as_bytes());
    buf.finish()
}

// ---------------------------------------------------------------------------------------------
// File tools

#[cfg(test)]
mod file_tests;

/// The largest file `read_file` and `grep` read: 64 MiB (their output is capped separately, at
/// [`ToolLimits::output_cap`]).
pub const MAX_READ_BYTES: u64 = 64 << 20;

/// How much of a file's start decides whether it is binary.
const BINARY_SNIFF: usize = 8192;

/// Whether bytes look binary: a NUL byte in the first 8 KiB, or more than one in ten of its
/// characters invalid UTF-8 or control characters (tab, newline, carriage return, form feed
/// and escape are text).
fn looks_binary(bytes: &[u8]) -> bool {
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

/// Reads a workspace file for `read_file`/`grep`: regular files only (a FIFO, socket or device
/// is refused before it is opened, and the open is non-blocking), at most [`MAX_READ_BYTES`].
fn read_workspace_file(abs: &Path, norm: &str) -> Result<Vec<u8>, String> {
    match harness_import::fs::read_regular(abs, MAX_READ_BYTES) {
        Ok(b) => Ok(b),
        Err(e) => Err(match fs::metadata(abs) {
            Ok(m) if m.is_dir() => {
                format!("error: {norm} is a directory; use list_files to see its files")
            }
            Ok(m) if !m.is_file() => format!(
                "error: {norm} is not a regular file (a FIFO, socket or device); the file tools read regular files only"
            ),
            Ok(m) if m.len() > MAX_READ_BYTES => format!(
                "error: {norm} is {} bytes; read_file and grep read files up to {MAX_READ_BYTES} bytes (use shell with head, tail or sed -n for parts of it)",
                m.len()
            ),
            _ => file_error(abs, norm, &e),
        }),
    }
}

fn read_file(ws_root: &Path, a: &Args<'_>, limits: &ToolLimits) -> ToolOutput {
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
        Err(e) => return ToolOutput::err(e, target),
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
fn file_error(abs: &Path, norm: &str, e: &io::Error) -> String {
    if e.kind() == io::ErrorKind::NotFound {
        format!("error: no such file: {norm}")
    } else if abs.is_dir() {
        format!("error: {norm} is a directory; use list_files to see its files")
    } else {
        format!("error: cannot read {norm}: {e}")
    }
}

/// Collects every non-directory entry below `dir` (not following symlinks), with paths formed
/// as `prefix/name`; skips `.git` everywhere and `.foldbench` unless the walk started inside it.
fn walk(dir: &Path, prefix: &str, out: &mut Vec<(String, PathBuf, fs::FileType)>) {
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
fn files_at(abs: &Path, norm: &str) -> Vec<(String, PathBuf, fs::FileType)> {
    let mut out = Vec::new();
    match fs::metadata(abs) {
        Ok(m) if m.is_dir() => walk(abs, norm, &mut out),
        Ok(m) => out.push((norm.to_string(), abs.to_path_buf(), m.file_type())),
        Err(_) => {}
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn list_files(ws_root: &Path, a: &Args<'_>, limits: &ToolLimits) -> ToolOutput {
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
    let listing: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    ToolOutput::ok(cap_output(&listing.join("\n"), limits.output_cap), target)
}

fn grep(ws_root: &Path, a: &Args<'_>, limits: &ToolLimits) -> ToolOutput {
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
            Err(e) if single => return ToolOutput::err(e, target),
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
                buf.push(format!("{path}:{}:{line}", i + 1).as_bytes());
                matches += 1;
            }
        }
    }
    if matches == 0 {
        return ToolOutput::ok("no matches".to_string(), target);
    }
    ToolOutput::ok(buf.finish(), target)
}

fn edit_file(ws_root: &Path, a: &Args<'_>) -> ToolOutput {
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
    let bytes = match fs::read(&abs) {
        Ok(b) => b,
        Err(e) => return ToolOutput::err(file_error(&abs, &norm, &e), target),
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

fn write_file(ws_root: &Path, a: &Args<'_>) -> ToolOutput {
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

// ---------------------------------------------------------------------------------------------
// Shell

async fn shell(ws_root: &Path, a: &Args<'_>, limits: &ToolLimits) -> ToolOutput {
    let command = match a.req_str("command") {
        Ok(c) => c,
        Err(e) => return ToolOutput::err(e, None),
    };
    match run_shell_for(ws_root, command, limits.shell_timeout, limits).await {
        Ok((run, source)) => ToolOutput {
            text: run.render(limits.shell_timeout),
            is_error: run.timed_out,
            target: None,
            cached: source == Source::Hit,
        },
        Err(e) => ToolOutput::err(format!("error: could not start `sh`: {e}"), None),
    }
}

/// Runs a shell command of a cell (the agent's, a setup command, a check) in `root` with
/// `limits`' sandbox and output cap: from the run's tool cache when it has one and the command
/// is not marked `cache: false`, else for real.
pub(crate) async fn run_shell_for(
    root: &Path,
    command: &str,
    timeout: Duration,
    limits: &ToolLimits,
) -> io::Result<(ShellRun, Source)> {
    let (cap, sandbox) = (limits.output_cap, &limits.sandbox);
    let fresh = || run_shell(root, command, timeout, cap, sandbox);
    let cache = match &limits.cache {
        Some(c) if !limits.uncached.iter().any(|u| u == command) => c,
        _ => return Ok((fresh().await?, Source::Ran)),
    };
    let before = crate::snapshot::Snapshot::take(root)?;
    let key = tool_cache::key(command, &before.state(), sandbox, timeout, cap);
    cache
        .run(
            root,
            &key,
            &before,
            || crate::snapshot::Snapshot::take(root),
            fresh,
        )
        .await
}

/// What one shell run produced.
#[derive(Debug)]
pub(crate) struct ShellRun {
    /// stdout and stderr merged, capped.
    pub output: String,
    /// The exit status of `sh`, if it was collected.
    pub status: Option<ExitStatus>,
    /// Whether the timeout expired and the process group was killed.
    pub timed_out: bool,
}

impl ShellRun {
    /// The text the model sees: the output plus the exit-code or timeout note.
    pub fn render(&self, timeout: Duration) -> String {
        let mut text = self.output.clone();
        if self.timed_out {
            text.push_str(&format!(
                "\n[killed: timed out after {}s]",
                timeout.as_secs_f64()
            ));
        } else if let Some(status) = self.status {
            if let Some(code) = status.code() {
                if code != 0 {
                    text.push_str(&format!("\n[exit code: {code}]"));
                }
            } else if let Some(sig) = status.signal() {
                text.push_str(&format!("\n[killed by signal {sig}]"));
            }
        }
        text
    }

    /// Whether the command ran to the end with exit code 0.
    pub fn success(&self) -> bool {
        !self.timed_out && self.status.is_some_and(|s| s.success())
    }
}

/// Runs `command` with `sh -c` in `root`, in its own process group with the sandbox environment,
/// stderr merged into stdout. Returns when `sh` exited and its output is closed, or at the
/// timeout; either way the whole process group is killed afterwards, so background children do
/// not outlive the call (children that keep the output open get [`EXIT_GRACE`] after `sh` exits).
pub(crate) async fn run_shell(
    root: &Path,
    command: &str,
    timeout: Duration,
    cap: usize,
    sandbox: &Sandbox,
) -> io::Result<ShellRun> {
    let mut cmd = sandbox.command(root, &format!("exec 2>&1\n{command}"));
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // Ends the call's process group and every descendant that left it (see `crate::reap`).
    let mut call = crate::reap::begin_call();
    cmd.env(crate::reap::CALL_ENV, call.marker());
    let mut child = cmd.spawn()?;
    call.set_group(child.id());
    let mut stdout = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("no stdout pipe"))?;
    let stderr = child.stderr.take();

    let mut buf = CappedBuf::new(cap);
    let mut chunk = vec![0u8; 16 * 1024];
    let deadline = Instant::now() + timeout;
    let mut status: Option<ExitStatus> = None;
    let mut eof = false;
    let mut timed_out = false;
    let mut grace_deadline: Option<Instant> = None;
    while !(eof && status.is_some()) {
        let grace = grace_deadline.unwrap_or(deadline);
        tokio::select! {
            r = stdout.read(&mut chunk), if !eof => match r {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => buf.push(&chunk[..n]),
            },
            s = child.wait(), if status.is_none() => match s {
                Ok(s) => {
                    status = Some(s);
                    grace_deadline = Some(Instant::now() + EXIT_GRACE);
                }
                // Cannot happen for a child we spawned; stop waiting and kill the group.
                Err(_) => break,
            },
            _ = tokio::time::sleep_until(grace), if grace_deadline.is_some() => break,
            _ = tokio::time::sleep_until(deadline) => {
                timed_out = true;
                break;
            },
        }
    }
    call.end();
    if !eof {
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, async {
            loop {
                match stdout.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.push(&chunk[..n]),
                }
            }
        })
        .await;
    }
    if status.is_none() {
        status = tokio::time::timeout(DRAIN_TIMEOUT, child.wait())
            .await
            .ok()
            .and_then(Result::ok);
    }
    // `sh`'s own stderr before `exec 2>&1` took effect (normally nothing).
    if let Some(mut err) = stderr {
        let mut bytes = Vec::new();
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, err.read_to_end(&mut bytes)).await;
        buf.push(&bytes);
    }
    Ok(ShellRun {
        output: buf.finish(),
        status,
        timed_out,
    })
}

/// Sends SIGKILL to the process group `pgid` (a group this module created with
/// `process_group(0)`, whose id is the pid of its `sh`).
#[allow(unsafe_code)]
pub(crate) fn kill_process_group(pgid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) only takes two integers and touches no memory of this process; the
    // negative pid addresses exactly the process group we created for the shell. A failure
    // (ESRCH: the group is already gone) is harmless and ignored.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall {
            id: "c1".to_string(),
            name: name.to_string(),
            args,
        }
    }

    fn ws() -> tempfile::TempDir {
        let dir = tempfile::Builder::new()
            .prefix("foldbench-test-")
            .tempdir()
            .expect("tempdir");
        fs::create_dir_all(dir.path().join("src")).expect("mkdir");
        fs::write(
            dir.path().join("src/a.py"),
            "PORT = 8080\nHOST = 'x'\n\ndef f():\n    return PORT\n",
        )
        .expect("write");
        fs::write(dir.path().join("src/b.py"), "import a\nPORT = a.PORT\n").expect("write");
        fs::write(dir.path().join("README.md"), "hello\n").expect("write");
        fs::create_dir_all(dir.path().join(".git/objects")).expect("mkdir");
        fs::write(dir.path().join(".git/config"), "PORT = 1\n").expect("write");
        dir
    }

    async fn run(root: &Path, name: &str, args: Value) -> ToolOutput {
        execute(root, &call(name, args), &ToolLimits::default()).await
    }

    fn limits(timeout_s: u64, cap: usize) -> ToolLimits {
        ToolLimits {
            shell_timeout: Duration::from_secs(timeout_s),
            output_cap: cap,
            ..ToolLimits::default()
        }
    }

    /// Processes of the process group `pgid` that are alive (not zombies), read from /proc.
    fn live_members(pgid: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let Ok(entries) = fs::read_dir("/proc") else {
            return out;
        };
        for e in entries.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            let Some(close) = stat.rfind(')') else {
                continue;
            };
            let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
            // fields[0] = state, fields[1] = ppid, fields[2] = pgrp
            if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" {
                out.push(pid);
            }
        }
        out
    }

    async fn assert_group_gone(pgid: u32) {
        for _ in 0..40 {
            if live_members(pgid).is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "process group {pgid} still has members: {:?}",
            live_members(pgid)
        );
    }

    #[tokio::test]
    async fn live_members_sees_a_running_group() {
        // Checks the helper the kill tests rely on, so that they cannot pass vacuously.
        let mut child = tokio::process::Command::new("sleep")
            .arg("100")
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .expect("spawn sleep");
        let pgid = child.id().expect("pid");
        assert_eq!(live_members(pgid), vec![pgid]);
        kill_process_group(pgid);
        let _ = child.wait().await;
        assert_group_gone(pgid).await;
    }

    fn first_line_pid(text: &str) -> u32 {
        text.lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .expect("pid on the first line")
    }

    #[test]
    fn normalize_paths() {
        assert_eq!(normalize("src/./a.py").as_deref(), Ok("src/a.py"));
        assert_eq!(normalize("src/../README.md").as_deref(), Ok("README.md"));
        assert_eq!(normalize("").as_deref(), Ok("."));
        assert_eq!(normalize("./").as_deref(), Ok("."));
        assert!(normalize("..").is_err());
        assert!(normalize("/etc").is_err());
    }

    #[test]
    fn resolve_refuses_parent_escape() {
        let dir = ws();
        let err = resolve(dir.path(), "../../etc/passwd").expect_err("must be refused");
        assert_eq!(
            err,
            "error: path `../../etc/passwd` is outside the workspace; use a path relative to the \
             workspace root"
        );
        assert!(resolve(dir.path(), "src/../../x").is_err());
    }

    #[test]
    fn resolve_refuses_absolute() {
        let dir = ws();
        let err = resolve(dir.path(), "/etc/passwd").expect_err("must be refused");
        assert!(err.contains("outside the workspace"), "{err}");
    }

    #[test]
    fn resolve_allows_inside_and_archive() {
        let dir = ws();
        let root = dir.path().canonicalize().expect("canon");
        assert_eq!(
            resolve(dir.path(), "src/a.py").expect("ok"),
            root.join("src/a.py")
        );
        assert_eq!(
            resolve(dir.path(), "new/dir/file.txt").expect("ok"),
            root.join("new/dir/file.txt")
        );
        assert_eq!(
            resolve(dir.path(), ".foldbench/archive/fold-1.md").expect("ok"),
            root.join(".foldbench/archive/fold-1.md")
        );
        assert_eq!(resolve(dir.path(), ".").expect("ok"), root);
        // A symlink that stays inside is fine.
        symlink(root.join("src"), root.join("srclink")).expect("symlink");
        assert_eq!(
            resolve(dir.path(), "srclink/a.py").expect("ok"),
            root.join("src/a.py")
        );
    }

    #[tokio::test]
    async fn symlink_to_outside_is_refused() {
        let dir = ws();
        symlink("/etc", dir.path().join("etc")).expect("symlink");
        let err = resolve(dir.path(), "etc/passwd").expect_err("must be refused");
        assert!(err.contains("symlink to outside the workspace"), "{err}");
        assert!(resolve(dir.path(), "etc").is_err());

        let out = run(dir.path(), "read_file", json!({"path": "etc/passwd"})).await;
        assert!(out.is_error);
        assert!(out.text.contains("outside the workspace"), "{}", out.text);
        assert!(!out.text.contains("root:"));

        let out = run(dir.path(), "list_files", json!({"path": "etc"})).await;
        assert!(out.is_error, "{}", out.text);

        // Walking the root does not follow the symlink either.
        let out = run(dir.path(), "grep", json!({"pattern": "root"})).await;
        assert_eq!(out.text, "no matches");

        // A dangling symlink cannot be written through.
        symlink(
            "/tmp/foldbench-should-not-exist",
            dir.path().join("dangling"),
        )
        .expect("symlink");
        let out = run(
            dir.path(),
            "write_file",
            json!({"path": "dangling", "content": "x"}),
        )
        .await;
        assert!(out.is_error, "{}", out.text);
        assert!(!Path::new("/tmp/foldbench-should-not-exist").exists());
    }

    #[tokio::test]
    async fn tools_refuse_escapes() {
        let dir = ws();
        for (tool, args) in [
            ("read_file", json!({"path": "../../etc/passwd"})),
            ("read_file", json!({"path": "/etc/passwd"})),
            ("list_files", json!({"path": ".."})),
            ("grep", json!({"pattern": "root", "path": "/etc"})),
            (
                "edit_file",
                json!({"path": "/etc/passwd", "old": "a", "new": "b"}),
            ),
            ("write_file", json!({"path": "../x.txt", "content": "x"})),
        ] {
            let out = run(dir.path(), tool, args).await;
            assert!(out.is_error, "{tool}: {}", out.text);
            assert!(out.text.contains("outside the workspace"), "{}", out.text);
            assert_eq!(out.target, None);
        }
        assert!(!dir.path().parent().expect("parent").join("x.txt").exists());
    }

    #[tokio::test]
    async fn read_file_format_offset_limit() {
        let dir = ws();
        let out = run(dir.path(), "read_file", json!({"path": "src/a.py"})).await;
        assert!(!out.is_error);
        assert_eq!(
            out.text,
            "     1\tPORT = 8080\n     2\tHOST = 'x'\n     3\t\n     4\tdef f():\n     5\t    return PORT"
        );
        assert_eq!(out.target.as_deref(), Some("src/a.py"));

        let out = run(
            dir.path(),
            "read_file",
            json!({"path": "./src/a.py", "offset": 2, "limit": 2}),
        )
        .await;
        assert_eq!(out.text, "     2\tHOST = 'x'\n     3\t");
        assert_eq!(out.target.as_deref(), Some("src/a.py"));

        let out = run(
            dir.path(),
            "read_file",
            json!({"path": "src/a.py", "offset": 5}),
        )
        .await;
        assert_eq!(out.text, "     5\t    return PORT");

        let out = run(
            dir.path(),
            "read_file",
            json!({"path": "src/a.py", "offset": 9}),
        )
        .await;
        assert!(!out.is_error);
        assert!(out.text.contains("past the end"), "{}", out.text);

        let out = run(dir.path(), "read_file", json!({"path": "src/nope.py"})).await;
        assert!(out.is_error);
        assert_eq!(out.text, "error: no such file: src/nope.py");

        let out = run(dir.path(), "read_file", json!({"path": "src"})).await;
        assert!(out.is_error);
        assert!(out.text.contains("is a directory"), "{}", out.text);
    }

    #[tokio::test]
    async fn argument_errors() {
        let dir = ws();
        let out = run(dir.path(), "read_file", json!({})).await;
        assert!(out.is_error);
        assert_eq!(out.text, "error: read_file needs a string argument `path`");

        let out = run(dir.path(), "read_file", json!({"path": 3})).await;
        assert_eq!(out.text, "error: read_file needs a string argument `path`");

        let out = run(
            dir.path(),
            "read_file",
            json!({"path": "src/a.py", "offset": "x"}),
        )
        .await;
        assert!(out.is_error);
        assert!(out.text.contains("`offset`"), "{}", out.text);

        let out = run(
            dir.path(),
            "edit_file",
            json!({"path": "src/a.py", "old": "x"}),
        )
        .await;
        assert_eq!(out.text, "error: edit_file needs a string argument `new`");

        let out = run(dir.path(), "shell", json!({"cmd": "ls"})).await;
        assert_eq!(out.text, "error: shell needs a string argument `command`");

        let out = run(dir.path(), "list_files", json!({"path": 1})).await;
        assert_eq!(
            out.text,
            "error: list_files argument `path` must be a string"
        );

        let out = run(dir.path(), "delete_everything", json!({})).await;
        assert!(out.is_error);
        assert!(out
            .text
            .starts_with("error: unknown tool `delete_everything`"));

        // Arguments passed as a JSON string are accepted.
        let out = run(
            dir.path(),
            "read_file",
            Value::String(r#"{"path":"README.md"}"#.into()),
        )
        .await;
        assert_eq!(out.text, "     1\thello");
    }

    #[tokio::test]
    async fn list_files_format() {
        let dir = ws();
        fs::create_dir_all(dir.path().join(".foldbench/archive")).expect("mkdir");
        fs::write(dir.path().join(".foldbench/archive/fold-1.md"), "x").expect("write");
        let out = run(dir.path(), "list_files", json!({})).await;
        assert!(!out.is_error);
        assert_eq!(out.text, "README.md\nsrc/a.py\nsrc/b.py");
        assert_eq!(out.target.as_deref(), Some("."));

        let out = run(dir.path(), "list_files", json!({"path": "src/"})).await;
        assert_eq!(out.text, "src/a.py\nsrc/b.py");
        assert_eq!(out.target.as_deref(), Some("src"));

        let out = run(
            dir.path(),
            "list_files",
            json!({"path": ".foldbench/archive"}),
        )
        .await;
        assert_eq!(out.text, ".foldbench/archive/fold-1.md");

        let out = run(dir.path(), "list_files", json!({"path": "nope"})).await;
        assert!(out.is_error);
        assert_eq!(out.text, "error: no such file or directory: nope");
    }

    #[tokio::test]
    async fn grep_format() {
        let dir = ws();
        let out = run(dir.path(), "grep", json!({"pattern": "PORT\\s*="})).await;
        assert!(!out.is_error);
        assert_eq!(out.text, "src/a.py:1:PORT = 8080\nsrc/b.py:2:PORT = a.PORT");
        assert_eq!(out.target.as_deref(), Some("."));

        let out = run(
            dir.path(),
            "grep",
            json!({"pattern": "PORT", "path": "src/a.py"}),
        )
        .await;
        assert_eq!(
            out.text,
            "src/a.py:1:PORT = 8080\nsrc/a.py:5:    return PORT"
        );
        assert_eq!(out.target.as_deref(), Some("src/a.py"));

        let out = run(dir.path(), "grep", json!({"pattern": "nothing-like-this"})).await;
        assert!(!out.is_error);
        assert_eq!(out.text, "no matches");

        let out = run(dir.path(), "grep", json!({"pattern": "("})).await;
        assert!(out.is_error);
        assert!(
            out.text.starts_with("error: invalid regex `(`"),
            "{}",
            out.text
        );
    }

    #[tokio::test]
    async fn edit_file_unique_zero_many() {
        let dir = ws();
        let out = run(
            dir.path(),
            "edit_file",
            json!({"path": "src/a.py", "old": "PORT = 8080", "new": "PORT = 0"}),
        )
        .await;
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(out.text, "edited src/a.py");
        let text = fs::read_to_string(dir.path().join("src/a.py")).expect("read");
        assert!(text.starts_with("PORT = 0\n"));

        let out = run(
            dir.path(),
            "edit_file",
            json!({"path": "src/a.py", "old": "PORT = 8080", "new": "x"}),
        )
        .await;
        assert!(out.is_error);
        assert_eq!(out.text, "error: `old` not found in src/a.py");

        let out = run(
            dir.path(),
            "edit_file",
            json!({"path": "src/a.py", "old": "PORT", "new": "P"}),
        )
        .await;
        assert!(out.is_error);
        assert_eq!(
            out.text,
            "error: `old` occurs 2 times in src/a.py; give more context so it is unique"
        );
        let after = fs::read_to_string(dir.path().join("src/a.py")).expect("read");
        assert_eq!(after, text, "a refused edit changes nothing");

        let out = run(
            dir.path(),
            "edit_file",
            json!({"path": "nope.py", "old": "a", "new": "b"}),
        )
        .await;
        assert_eq!(out.text, "error: no such file: nope.py");
    }

    #[tokio::test]
    async fn write_file_creates_parents() {
        let dir = ws();
        let out = run(
            dir.path(),
            "write_file",
            json!({"path": "new/deep/f.txt", "content": "héllo\n"}),
        )
        .await;
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(out.text, "wrote 7 bytes to new/deep/f.txt");
        assert_eq!(out.target.as_deref(), Some("new/deep/f.txt"));
        let text = fs::read_to_string(dir.path().join("new/deep/f.txt")).expect("read");
        assert_eq!(text, "héllo\n");

        let out = run(
            dir.path(),
            "write_file",
            json!({"path": ".foldbench/archive/fold-1.md", "content": "x"}),
        )
        .await;
        assert!(out.is_error);
        assert!(out.text.contains("read-only"), "{}", out.text);
    }

    #[tokio::test]
    async fn shell_runs_in_workspace_with_exit_code() {
        let dir = ws();
        let out = run(
            dir.path(),
            "shell",
            json!({"command": "cat README.md; echo oops >&2; exit 3"}),
        )
        .await;
        assert!(!out.is_error, "a failing command is a normal result");
        assert_eq!(out.text, "hello\noops\n\n[exit code: 3]");
        assert_eq!(out.target, None);

        let out = run(
            dir.path(),
            "shell",
            json!({"command": "echo \"$HOME\"; pwd"}),
        )
        .await;
        let root = dir.path().canonicalize().expect("canon");
        let expected = format!("{}\n{}\n", dir.path().display(), root.display());
        assert_eq!(out.text, expected);
    }

    #[tokio::test]
    async fn shell_timeout_kills_process_group() {
        let dir = ws();
        let start = std::time::Instant::now();
        let out = execute(
            dir.path(),
            &call("shell", json!({"command": "echo $$; sleep 100"})),
            &limits(1, 50_000),
        )
        .await;
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "returned promptly"
        );
        assert!(out.is_error);
        assert!(
            out.text.ends_with("\n[killed: timed out after 1s]"),
            "{}",
            out.text
        );
        let pgid = first_line_pid(&out.text);
        assert_group_gone(pgid).await;
    }

    #[tokio::test]
    async fn shell_timeout_kills_background_children() {
        let dir = ws();
        let start = std::time::Instant::now();
        let out = execute(
            dir.path(),
            &call(
                "shell",
                json!({"command": "echo $$; sleep 100 & sleep 100"}),
            ),
            &limits(1, 50_000),
        )
        .await;
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(
            out.text.contains("[killed: timed out after 1s]"),
            "{}",
            out.text
        );
        let pgid = first_line_pid(&out.text);
        assert_group_gone(pgid).await;
    }

    #[tokio::test]
    async fn shell_background_child_does_not_block_or_survive() {
        let dir = ws();
        let start = std::time::Instant::now();
        let out = execute(
            dir.path(),
            &call(
                "shell",
                json!({"command": "echo $$; sleep 100 & echo started"}),
            ),
            &limits(10, 50_000),
        )
        .await;
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        assert!(!out.is_error, "{}", out.text);
        assert!(out.text.ends_with("started\n"), "{}", out.text);
        let pgid = first_line_pid(&out.text);
        assert_group_gone(pgid).await;
    }

    #[tokio::test]
    async fn file_tools_keep_out_of_git() {
        let dir = ws();
        fs::create_dir_all(dir.path().join(".git/hooks")).expect("mkdir");
        let hook = json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\nrm -rf ~\n"});
        let out = run(dir.path(), "write_file", hook).await;
        assert!(
            out.is_error && out.text.contains("inside `.git`"),
            "{}",
            out.text
        );
        assert!(!dir.path().join(".git/hooks/pre-commit").exists());
        let cfg = json!({"path": ".git/config", "old": "PORT = 1", "new": "PORT = 2"});
        let out = run(dir.path(), "edit_file", cfg).await;
        assert!(
            out.is_error && out.text.contains("inside `.git`"),
            "{}",
            out.text
        );
        let out = run(
            dir.path(),
            "read_file",
            json!({"path": "src/../.git/config"}),
        )
        .await;
        assert!(
            out.is_error && out.text.contains("inside `.git`"),
            "{}",
            out.text
        );
        // Through a symlink inside the workspace.
        symlink(".git", dir.path().join("g")).expect("symlink");
        let out = run(
            dir.path(),
            "write_file",
            json!({"path": "g/hooks/pre-commit", "content": "x"}),
        )
        .await;
        assert!(
            out.is_error && out.text.contains("inside `.git`"),
            "{}",
            out.text
        );
        assert!(!dir.path().join(".git/hooks/pre-commit").exists());
        assert_eq!(
            fs::read_to_string(dir.path().join(".git/config")).unwrap(),
            "PORT = 1\n"
        );
    }

    #[tokio::test]
    async fn writes_to_a_hard_linked_file_are_refused() {
        let outside = tempfile::tempdir().expect("tempdir");
        let victim = outside.path().join("victim.txt");
        fs::write(&victim, "PORT = 8080\n").expect("write");
        let dir = ws();
        fs::hard_link(&victim, dir.path().join("linked.txt")).expect("hard link");
        let edit = json!({"path": "linked.txt", "old": "8080", "new": "6666"});
        let out = run(dir.path(), "edit_file", edit).await;
        assert!(
            out.is_error && out.text.contains("hard links"),
            "{}",
            out.text
        );
        let write = json!({"path": "linked.txt", "content": "owned"});
        let out = run(dir.path(), "write_file", write).await;
        assert!(
            out.is_error && out.text.contains("hard links"),
            "{}",
            out.text
        );
        assert_eq!(fs::read_to_string(&victim).unwrap(), "PORT = 8080\n");
        // Reading it is fine, and so is writing a file with one link.
        let out = run(dir.path(), "read_file", json!({"path": "linked.txt"})).await;
        assert!(!out.is_error, "{}", out.text);
        let out = run(
            dir.path(),
            "edit_file",
            json!({"path": "src/a.py", "old": "8080", "new": "1"}),
        )
        .await;
        assert!(!out.is_error, "{}", out.text);
    }

    #[tokio::test]
    async fn shell_env_is_an_allow_list() {
        // Secrets a deny-list let through, and one it caught.
        let secrets = [
            ("AZURE_OPENAI_KEY", "azure-s3cret"),
            ("GEMINI_KEY", "gemini-s3cret"),
            ("SECRET_KEY", "django-s3cret"),
            ("PGPASSWORD", "pg-s3cret"),
            ("DATABASE_URL", "postgres://u:db-s3cret@h/db"),
            ("SLACK_WEBHOOK_URL", "https://hooks.example/slack-s3cret"),
            ("FOO_API_KEY", "foo-s3cret"),
        ];
        for (k, v) in secrets {
            std::env::set_var(k, v);
        }
        std::env::set_var("TZ", "Europe/Berlin");
        let dir = ws();
        let out = run(dir.path(), "shell", json!({"command": "env"})).await;
        assert!(!out.is_error, "{}", out.text);
        assert!(!out.text.contains("s3cret"), "{}", out.text);
        let names: Vec<&str> = out
            .text
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, _)| k))
            .collect();
        for want in [
            "HOME",
            "LANG",
            "PATH",
            "PYTHONDONTWRITEBYTECODE",
            "PYTHONHASHSEED",
            "TERM",
            "TZ",
        ] {
            assert!(names.contains(&want), "{want} missing: {}", out.text);
        }
        // Nothing else but what the shell itself sets (PWD, SHLVL, `_`) and the call's marker
        // (`crate::reap`).
        for name in &names {
            assert!(
                [
                    "HOME",
                    "LANG",
                    "PATH",
                    "PYTHONDONTWRITEBYTECODE",
                    "PYTHONHASHSEED",
                    "TERM",
                    "TZ",
                    "PWD",
                    "SHLVL",
                    "_",
                    "OLDPWD",
                    crate::reap::CALL_ENV
                ]
                .contains(name),
                "{name} passed through: {}",
                out.text
            );
        }
        assert!(out.text.contains("LANG=C.UTF-8"));
        assert!(out.text.contains("TZ=Europe/Berlin"));
        assert!(out.text.contains(&format!("HOME={}", dir.path().display())));
    }

    #[test]
    fn a_tasks_own_variables_join_the_allow_list_and_win() {
        let env = crate::sandbox::allowed_env(&[
            ("APP_MODE".to_string(), "test".to_string()),
            ("LANG".to_string(), "de_DE.UTF-8".to_string()),
        ]);
        assert!(env.contains(&("APP_MODE".to_string(), "test".to_string())));
        assert!(env.contains(&("LANG".to_string(), "de_DE.UTF-8".to_string())));
        assert_eq!(env.iter().filter(|(k, _)| k == "LANG").count(), 1);
    }

    #[tokio::test]
    async fn shell_python_sees_the_standard_library_only() {
        let dir = ws();
        let probe = "import sys; print(sys.prefix != sys.base_prefix); \
                     print([p for p in sys.path if 'packages' in p])";
        for exe in ["python3", "python"] {
            let command = format!("{exe} -c \"{probe}\"");
            let out = run(dir.path(), "shell", json!({ "command": command })).await;
            assert!(!out.is_error, "{}", out.text);
            assert_eq!(out.text, "True\n[]\n", "{exe}");
        }
    }

    #[test]
    fn a_bare_environment_is_made_once_and_an_unwritable_folder_is_an_error() {
        let out = std::process::Command::new("python3")
            .args([
                "-c",
                "import os, sys; print(os.path.realpath(sys.executable))",
            ])
            .output()
            .expect("python3 runs");
        let exe = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        let home = exe.parent().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let bin = crate::sandbox::bare_python_in(cache.path(), "py", &exe, home, "3").unwrap();
        assert_eq!(bin, cache.path().join("py/bin"));
        let cfg = fs::read_to_string(cache.path().join("py/pyvenv.cfg")).unwrap();
        assert!(
            cfg.contains("include-system-site-packages = false"),
            "{cfg}"
        );
        // Made once: a second call finds it, and no temp folder is left behind.
        assert_eq!(
            crate::sandbox::bare_python_in(cache.path(), "py", &exe, home, "3").unwrap(),
            bin
        );
        let names: Vec<_> = fs::read_dir(cache.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("py")]);
        assert!(crate::sandbox::bare_python_in(
            Path::new("/proc/foldbench"),
            "py",
            &exe,
            home,
            "3"
        )
        .is_err());
    }

    #[tokio::test]
    async fn output_cap_keeps_head_and_tail() {
        let dir = ws();
        // 20 lines "line-NN\n", 8 bytes each = 160 bytes; cap 40 keeps 20 + 20.
        let out = execute(
            dir.path(),
            &call(
                "shell",
                json!({"command": "i=10; while [ $i -lt 30 ]; do echo line-$i; i=$((i+1)); done"}),
            ),
            &limits(10, 40),
        )
        .await;
        assert!(!out.is_error);
        assert_eq!(
            out.text,
            "line-10\nline-11\nline\n[… 120 bytes cut from the middle of the output …]\n\
             -27\nline-28\nline-29\n"
        );

        let capped = cap_output(&"é".repeat(100), 41);
        // 20 bytes of head = 10 chars; 21 bytes of tail -> 20 bytes after skipping a partial char.
        assert_eq!(
            capped,
            format!(
                "{}\n[… 160 bytes cut from the middle of the output …]\n{}",
                "é".repeat(10),
                "é".repeat(10)
            )
        );
        assert_eq!(cap_output("short", 40), "short");

        let limits = limits(10, 30);
        let out = execute(
            dir.path(),
            &call("read_file", json!({"path": "src/a.py"})),
            &limits,
        )
        .await;
        assert!(out.text.starts_with("     1\tPORT = 8"), "{}", out.text);
        assert!(out.text.contains("bytes cut from the middle of the output"));
        assert!(out.text.ends_with("return PORT"));
    }

    #[test]
    fn specs_cover_the_tools() {
        let specs = tool_specs();
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, TOOL_NAMES);
        for s in &specs {
            assert_eq!(s.parameters["type"], "object");
            assert!(!s.description.is_empty());
        }
        assert_eq!(specs[0].parameters["required"], json!(["path"]));
        assert_eq!(
            specs[3].parameters["required"],
            json!(["path", "old", "new"])
        );
    }
}
