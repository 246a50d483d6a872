//! `exec:COMMAND`: a policy of your own, in any language, as a process that speaks JSON lines
//! on its standard input and output (docs/policy-protocol.md; the schema of every message is
//! docs/policy-protocol.schema.json).
//!
//! [`ExecPolicy`] implements the [`Policy`] trait by asking the process, started in the sandbox
//! of shell calls (no network, an allow-listed environment, so it never sees an API key), in
//! the folder foldbench was started in (read-only) with a private temporary `HOME`. An
//! `ExecPolicy` is one session (a cell; a session and policy in replay). A process that speaks
//! protocol 2 serves one session after another, each opened and closed in turn, and waits in
//! `pool` between them; one that speaks protocol 1 serves one session and ends with it. Each request carries only what was appended
//! to the context since the last one (`mirror`), so the bytes sent grow linearly with the
//! session. A process that does not start, exits, hangs past the per-answer time limit, writes
//! a line that is not a message of the protocol or floods its output, or proposes an illegal
//! splice, fails the policy: [`Policy::failed`] then gives the reason (the offending line and
//! the tail of its standard error quoted), the session loop ends the cell with status `error`,
//! and the process and every process it started are ended.
//!
//! A process that says in its session's opening that it saves its state (`saves_state`) is
//! asked for it (`save`) when the host keeps a conversation across taking it out of memory (the
//! proxy: [`Policy::saved_state`]), and given it back (`restore`) in the session that brings the
//! conversation back ([`Policy::restore_state`]); its messages then carry their fingerprints,
//! which outlive the session as protocol ids do not. A process that does not say so starts
//! again from the context.

pub(crate) mod mirror;
pub(crate) mod pool;
mod process;
mod reply;
mod state;

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use harness_core::policy::{ArchiveRef, CardOffer, Plan, Policy, Splice, ToolReply};
use harness_core::Context;
use harness_core::{Message, MessageKind, ToolCall, ToolSpec};
use policies::registry::{Entry, Registry};
use policies::PolicyError;
use serde_json::{json, Map, Value};

use crate::execution::sandbox::{Sandbox, Unseen};
use pool::{Key, Worker};
use process::{Fault, Process};

pub use pool::end_idle;

/// The policy's name: `exec:COMMAND`.
pub(crate) const NAME: &str = "exec";

/// The protocol's newest version, offered in the handshake: 2, a process serving many
/// sessions, each opened (`open`) and closed (`close`) in turn ([`pool`]).
pub(crate) const PROTOCOL: u64 = 2;

/// The oldest version still spoken: 1, a process serving one session, its handshake the
/// session's opening and its end the session's.
pub(crate) const PROTOCOL_MIN: u64 = 1;

/// The default time limit of one answer.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The default limit of one answer line, in bytes.
pub(crate) const DEFAULT_MAX_LINE: usize = 16 << 20;

/// The environment variable naming a file every exchanged line is appended to (`> ` before a
/// line foldbench sent, `< ` before one it read): for debugging a policy, and for the test that
/// validates the messages against the schema.
pub(crate) const LOG_ENV: &str = "FOLDBENCH_EXEC_LOG";

/// Why an `exec:` policy's text does not read, or its process could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// `timeout=` that is not a number of seconds above 0.
    #[error("policy `exec`: timeout={0} is not a number of seconds above 0")]
    Timeout(String),
    /// `max_line=` that is not a number of bytes above 0.
    #[error("policy `exec`: max_line={0} is not a number of bytes above 0")]
    MaxLine(String),
    /// `read=` without a path.
    #[error("policy `exec`: read= needs a path: read=FOLDER, e.g. `exec:read=/tmp/policies python3 /tmp/policies/p.py`")]
    ReadPath,
    /// No command after the options.
    #[error("policy `exec` needs a command: write exec:COMMAND, e.g. `exec:python3 my_policy.py`")]
    NoCommand,
    /// A `read=` path that is not there.
    #[error("read={path}")]
    ReadMissing {
        /// The path, as resolved against the working folder.
        path: PathBuf,
        /// Why it cannot be looked at.
        #[source]
        source: std::io::Error,
    },
    /// A `read=` path the sandbox cannot show.
    #[error("read={}: {why}; {}", path.display(), read_advice(why))]
    ReadHidden {
        /// The path, as resolved against the working folder.
        path: PathBuf,
        /// What hides it.
        why: Unseen,
    },
    /// The process's private home folder cannot be made.
    #[error("cannot make its home folder")]
    Home(#[source] std::io::Error),
    /// The process did not start.
    #[error("cannot start `{command}`")]
    Start {
        /// The command.
        command: String,
        /// Why it did not start.
        #[source]
        source: std::io::Error,
    },
    /// The process started without its pipes.
    #[error("cannot start `{command}`: its pipes were not made")]
    Pipes {
        /// The command.
        command: String,
    },
}

pub(crate) use reply::ProtocolError;

/// The text after `exec:`: options, then the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecText {
    /// Time limit of each answer (`timeout=SECONDS`).
    pub(crate) timeout: Duration,
    /// Longest answer line (`max_line=BYTES`).
    pub(crate) max_line: usize,
    /// Folders (or files) shown read-only in the sandbox (`read=PATH`, repeatable): a policy's
    /// script in a folder the sandbox hides (below the home folder, `/tmp`). Relative to the
    /// folder foldbench starts in.
    pub(crate) reads: Vec<PathBuf>,
    /// The command, run with `sh -c`.
    pub(crate) command: String,
}

impl ExecText {
    /// Parses `[timeout=SECONDS] [max_line=BYTES] [read=PATH]... COMMAND`.
    pub fn parse(text: &str) -> Result<ExecText, ExecError> {
        let mut out = ExecText {
            timeout: DEFAULT_TIMEOUT,
            max_line: DEFAULT_MAX_LINE,
            reads: Vec::new(),
            command: String::new(),
        };
        let mut rest = text.trim();
        loop {
            let word = rest.split_whitespace().next().unwrap_or("");
            let value = |k: &str| word.strip_prefix(k).and_then(|v| v.strip_prefix('='));
            if let Some(v) = value("timeout") {
                let secs: f64 = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| *s > 0.0 && s.is_finite())
                    .ok_or_else(|| ExecError::Timeout(v.to_string()))?;
                out.timeout = Duration::from_secs_f64(secs);
            } else if let Some(v) = value("max_line") {
                out.max_line = v
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| ExecError::MaxLine(v.to_string()))?;
            } else if let Some(v) = value("read") {
                if v.is_empty() {
                    return Err(ExecError::ReadPath);
                }
                out.reads.push(PathBuf::from(v));
            } else {
                break;
            }
            rest = rest[word.len()..].trim_start();
        }
        if rest.is_empty() {
            return Err(ExecError::NoCommand);
        }
        out.command = rest.to_string();
        Ok(out)
    }

    /// The canonical text: the options that differ from the defaults, then the command.
    pub(crate) fn canonical(&self) -> String {
        let mut s = String::new();
        if self.timeout != DEFAULT_TIMEOUT {
            s.push_str(&format!("timeout={} ", self.timeout.as_secs_f64()));
        }
        if self.max_line != DEFAULT_MAX_LINE {
            s.push_str(&format!("max_line={} ", self.max_line));
        }
        for r in &self.reads {
            s.push_str(&format!("read={} ", r.display()));
        }
        s.push_str(&self.command);
        s
    }
}

/// The registry entry of `exec:COMMAND`.
pub(crate) fn entry() -> Entry {
    Entry::new(NAME, |_, b| {
        let text = ExecText::parse(b.spec.arg.as_deref().unwrap_or_default()).map_err(invalid)?;
        Ok(Box::new(ExecPolicy::start(text, b.window)) as Box<dyn Policy>)
    })
    .raw(|_, text| ExecText::parse(text).map(|t| t.canonical()).map_err(invalid))
    .check(|_, spec| {
        ExecText::parse(spec.arg.as_deref().unwrap_or_default())
            .map(|_| ())
            .map_err(invalid)
    })
    .sweep(sweep_command)
    .summary("a policy of your own as a process speaking JSON lines: exec:COMMAND (docs/policy-protocol.md)")
    .source("your own, in any language")
    .param("timeout", "10", "seconds", "time limit of each answer, written before the command")
    .param("max_line", "16777216", "bytes", "longest answer line, written before the command")
    .param("read", "none", "path", "a folder shown read-only in the sandbox (repeatable; its script below the home folder or /tmp), written before the command")
}

/// The arms of an `exec:` text (after `exec:`): one per value of each sweep in its command,
/// crossed in the order written. A sweep is a word `KEY=VALUE` outside quotes (`--keep=0..2`,
/// `keep=[1,3]`, `--mode=[a,b]`) whose value is a range or a list of two or more, written as a
/// parameter's sweep is (`policies::sweep`); each arm's command has the word with one value in
/// its place, the other words as written. A quoted word (`'--keep=0..2'`) is the command's own.
fn sweep_command(text: &str) -> Result<Vec<policies::sweep::Point>, PolicyError> {
    use policies::sweep::{is_sweep, values, Point, MAX_POINTS};
    let parsed = ExecText::parse(text).map_err(invalid)?;
    let command = parsed.command.clone();
    let mut swept: Vec<(std::ops::Range<usize>, String, Vec<String>)> = Vec::new();
    for range in unquoted_words(&command) {
        let word = &command[range.clone()];
        let Some((key, value)) = word.split_once('=') else {
            continue;
        };
        let name = key.trim_start_matches('-');
        let is_key = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
        let list = value.starts_with('[');
        if !is_key || !is_sweep(value) || (list && !value.contains(',')) {
            continue;
        }
        swept.push((range, key.to_string(), values(key, value)?));
    }
    if swept.is_empty() {
        return Ok(vec![Point {
            text: text.trim().to_string(),
            values: Vec::new(),
        }]);
    }
    let count = swept.iter().map(|(_, _, v)| v.len()).product::<usize>();
    if count > MAX_POINTS {
        return Err(policies::SweepError::TooManyArms {
            policy: format!("{NAME}:{text}"),
        }
        .into());
    }
    let mut points = Vec::with_capacity(count);
    for k in 0..count {
        let mut rest = k;
        let mut picked: Vec<(String, String)> = vec![(String::new(), String::new()); swept.len()];
        for (i, (_, key, vals)) in swept.iter().enumerate().rev() {
            picked[i] = (key.clone(), vals[rest % vals.len()].clone());
            rest /= vals.len();
        }
        let mut cmd = String::with_capacity(command.len());
        let mut at = 0;
        for ((range, _, _), (key, v)) in swept.iter().zip(&picked) {
            cmd.push_str(&command[at..range.start]);
            cmd.push_str(&format!("{key}={v}"));
            at = range.end;
        }
        cmd.push_str(&command[at..]);
        let arm = ExecText {
            command: cmd,
            ..parsed.clone()
        };
        points.push(Point {
            text: arm.canonical(),
            values: picked,
        });
    }
    Ok(points)
}

/// The byte ranges of the words of a shell command that hold no quote and no backslash (the
/// words a sweep may be written in).
fn unquoted_words(command: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut quote: Option<char> = None;
    let mut plain = true;
    for (i, c) in command.char_indices().chain([(command.len(), ' ')]) {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c.is_whitespace() => {
                if let Some(s) = start.take() {
                    if plain {
                        out.push(s..i);
                    }
                }
                plain = true;
            }
            None => {
                start.get_or_insert(i);
                if c == '\'' || c == '"' {
                    quote = Some(c);
                    plain = false;
                } else if c == '\\' {
                    plain = false;
                }
            }
        }
    }
    out
}

/// What to do about a `read=` path the sandbox cannot show.
fn read_advice(why: &Unseen) -> &'static str {
    match why {
        Unseen::Own(_) => "no folder of the host is shown there",
        Unseen::Hidden(_) | Unseen::Private(_) => {
            "name a folder inside it (read= shows a folder below a hidden one, never a hidden folder whole)"
        }
    }
}

/// The paths a command names that exist on the host: each word (quotes taken off) or the value
/// of a `KEY=VALUE` word that is an absolute path, or a relative one found in `cwd`.
fn named_paths(command: &str, cwd: &std::path::Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for word in command.split_whitespace() {
        let word = word.trim_matches(|c| c == '\'' || c == '"');
        let value = word.split_once('=').map_or(word, |(_, v)| v);
        for w in [word, value] {
            if w.is_empty() || w.starts_with('-') {
                continue;
            }
            let path = cwd.join(w);
            if std::fs::symlink_metadata(&path).is_ok() && !out.contains(&path) {
                out.push(path);
            }
        }
    }
    out
}

/// An `exec:` text's error as the registry takes it: a policy from outside the policies crate
/// says what is wrong in its own words.
fn invalid(e: ExecError) -> PolicyError {
    PolicyError::Invalid(harness_core::one_line(&e))
}

/// `registry` with the `exec` policy added (when it has none of that name).
pub fn with_exec(mut registry: Registry) -> Registry {
    if registry.get(NAME).is_none() {
        // The name is free and well formed: registering cannot fail.
        let _ = registry.register(entry());
    }
    registry
}

/// Whether the policies started from now on replay recorded sessions ([`set_replay`]).
static REPLAY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Says to the `exec:` policies started from now on, in their handshake's `mode`, whether they
/// replay recorded sessions (`foldbench replay`: the calls they see are the recorded agent's,
/// and no workspace tool runs) or run sessions (the default).
pub fn set_replay(replay: bool) {
    REPLAY.store(replay, std::sync::atomic::Ordering::Relaxed);
}

fn sandbox_slot() -> &'static RwLock<Option<Sandbox>> {
    static SLOT: RwLock<Option<Sandbox>> = RwLock::new(None);
    &SLOT
}

/// The sandbox policy processes run in from now on (a run's `--sandbox`); without it, the
/// machine's default ([`Sandbox::default`]: bubblewrap when it works).
pub fn set_sandbox(sandbox: Sandbox) {
    let mut slot = sandbox_slot().write().unwrap_or_else(|e| e.into_inner());
    *slot = Some(sandbox.for_task(false, &[]));
}

fn sandbox() -> Sandbox {
    static DEFAULT: OnceLock<Sandbox> = OnceLock::new();
    let slot = sandbox_slot().read().unwrap_or_else(|e| e.into_inner());
    slot.clone().unwrap_or_else(|| {
        DEFAULT
            .get_or_init(|| {
                // The first policy process waits for both the sandbox's probe and the search for
                // the host's interpreter (its PATH's first folder), each a process or more and
                // paid once: the search runs beside the probe.
                let _ = std::thread::Builder::new()
                    .name("find-python".into())
                    .spawn(|| {
                        let _ = crate::execution::sandbox::python_bin();
                    });
                Sandbox::default()
            })
            .clone()
    })
}

/// A policy answered by a process.
pub struct ExecPolicy {
    inner: RefCell<Inner>,
}

impl std::fmt::Debug for ExecPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecPolicy")
            .field("command", &self.inner.borrow().text.command)
            .finish_non_exhaustive()
    }
}

struct Inner {
    text: ExecText,
    /// The process serving this session (from [`pool`] or started for it).
    worker: Option<Worker>,
    failure: Option<String>,
    tools: Vec<ToolSpec>,
    filters_workspace_tools: bool,
    /// Whether the process said in the session's opening that it saves its state.
    saves_state: bool,
    /// The state the process last gave (`save`) or took (`restore`), while no other request
    /// was made since: asked again only after the process was.
    state: Option<Option<Value>>,
    mirror: mirror::Mirror,
    memo: reply::Memo,
    /// The result text the process gave each splice it proposed, by range.
    texts: HashMap<(u32, u32), Option<String>>,
    log: Option<std::fs::File>,
}

impl ExecPolicy {
    /// A session of the policy `text`: served by an idle process of the same policy when one
    /// waits (`pool`: a process of protocol 2 whose last session was closed), else by a
    /// process started for it, which shakes hands; a failure is kept ([`Policy::failed`]).
    pub fn start(text: ExecText, window: u64) -> ExecPolicy {
        let log = std::env::var_os(LOG_ENV).and_then(|p| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(PathBuf::from(p))
                .ok()
        });
        let mut inner = Inner {
            text,
            worker: None,
            failure: None,
            tools: Vec::new(),
            filters_workspace_tools: false,
            saves_state: false,
            state: None,
            mirror: mirror::Mirror::default(),
            memo: reply::Memo::default(),
            texts: HashMap::new(),
            log,
        };
        let key = Key {
            text: inner.text.canonical(),
            replay: REPLAY.load(std::sync::atomic::Ordering::Relaxed),
            sandbox: sandbox(),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
        };
        while let Some(worker) = pool::take(&key) {
            inner.worker = Some(worker);
            if inner.open(window) {
                return ExecPolicy {
                    inner: RefCell::new(inner),
                };
            }
            // A process that waited and cannot open a session (it exited meanwhile) is ended;
            // the session goes to another, or to a fresh one.
            inner.worker = None;
            inner.failure = None;
        }
        inner.launch(key, window);
        ExecPolicy {
            inner: RefCell::new(inner),
        }
    }

    /// The id of the process serving this session (bubblewrap's, in the sandbox); `None` when
    /// none started. For the tests of process reuse.
    #[cfg(test)]
    fn process_id(&self) -> Option<u32> {
        self.inner.borrow().worker.as_ref().map(|w| w.process.id())
    }

    /// The protocol the serving process speaks (0 when it did not shake hands). For the tests.
    #[cfg(test)]
    fn protocol(&self) -> u64 {
        self.inner
            .borrow()
            .worker
            .as_ref()
            .map_or(0, |w| w.protocol)
    }
}

impl Drop for ExecPolicy {
    /// Ends the session: a process of protocol 2 that has not failed is sent `close` and, once
    /// it answered, kept for the next session (`pool`); any other is ended with its session.
    fn drop(&mut self) {
        let s = self.inner.get_mut();
        let serves_more = s.failure.is_none() && s.worker.as_ref().is_some_and(|w| w.protocol >= 2);
        if serves_more {
            let session = s.worker.as_ref().map_or(0, |w| w.sessions);
            let closed = s.ask("close", json!({ "session": session }), &["ok"]);
            if closed.is_some() && s.failure.is_none() {
                if let Some(w) = s.worker.take() {
                    pool::put(w);
                }
            }
        }
    }
}

/// The handshake's and a session's `mode` and `workspace_tools`: in replay no tool runs (the
/// calls in the view are the recorded agent's).
fn session_fields() -> (&'static str, Vec<String>) {
    if REPLAY.load(std::sync::atomic::Ordering::Relaxed) {
        ("replay", Vec::new())
    } else {
        let tools = crate::tools::tool_specs().into_iter().map(|t| t.name);
        ("run", tools.collect())
    }
}

impl Inner {
    /// Starts a process for `key` and shakes hands; with protocol 2, opens this session in it.
    fn launch(&mut self, key: Key, window: u64) {
        let home = match tempfile::Builder::new()
            .prefix("foldbench-policy-")
            .tempdir()
        {
            Ok(h) => h,
            Err(e) => return self.fail_plain(ExecError::Home(e)),
        };
        let sandbox = key.sandbox.clone();
        let mut binds = vec![key.cwd.clone()];
        for r in &self.text.reads {
            let path = key.cwd.join(r);
            if let Err(source) = std::fs::metadata(&path) {
                return self.fail_plain(ExecError::ReadMissing { path, source });
            }
            binds.push(path);
        }
        let mut unseen_by = None;
        if sandbox.is_isolated() {
            let all: Vec<&std::path::Path> = binds.iter().map(PathBuf::as_path).collect();
            for path in &binds[1..] {
                if let Some(why) = crate::execution::sandbox::unseen(path, &all) {
                    let path = path.clone();
                    return self.fail_plain(ExecError::ReadHidden { path, why });
                }
            }
            unseen_by = Some(binds.clone());
        }
        let process = match Process::start(
            &sandbox,
            home.path(),
            &binds,
            &self.text.command,
            self.text.max_line,
        ) {
            Ok(p) => p,
            Err(e) => return self.fail_plain(e),
        };
        self.worker = Some(Worker {
            process,
            _home: home,
            key,
            protocol: 0,
            next_request: 0,
            sessions: 0,
            unseen_by,
        });
        let (mode, workspace) = session_fields();
        let hello = self.ask(
            "hello",
            json!({"protocol": PROTOCOL, "window": window, "mode": mode, "workspace_tools": workspace}),
            &["hello"],
        );
        let Some((v, line)) = hello else { return };
        let protocol = v.get("protocol").and_then(Value::as_u64);
        match protocol {
            Some(p @ PROTOCOL_MIN..=PROTOCOL) => {
                if let Some(w) = self.worker.as_mut() {
                    w.protocol = p;
                }
            }
            _ => {
                let got = v
                    .get("protocol")
                    .map_or("(none)".to_string(), Value::to_string);
                return self.fail(&ProtocolError::Protocol { got }, Some(&line));
            }
        }
        if protocol == Some(1) {
            // Version 1: the handshake is the session's opening.
            if let Err(e) = self.take_opening(&v) {
                self.fail(harness_core::one_line(&e), Some(&line));
            }
        } else {
            self.open(window);
        }
    }

    /// Opens a session in a process of protocol 2 (`open`); whether it answered.
    fn open(&mut self, window: u64) -> bool {
        let Some(w) = self.worker.as_mut() else {
            return false;
        };
        w.sessions += 1;
        let session = w.sessions;
        let (mode, workspace) = session_fields();
        let fields = json!({"session": session, "window": window, "mode": mode, "workspace_tools": workspace});
        let Some((v, line)) = self.ask("open", fields, &["open"]) else {
            return false;
        };
        match self.take_opening(&v) {
            Ok(()) => true,
            Err(e) => {
                self.fail(harness_core::one_line(&e), Some(&line));
                false
            }
        }
    }

    /// The session's `tools`, `filters_workspace_tools` and `saves_state`, from the answer to
    /// `hello` (protocol 1) or `open` (protocol 2).
    fn take_opening(&mut self, v: &Value) -> Result<(), ProtocolError> {
        if let Some(tools) = v.get("tools") {
            self.tools = serde_json::from_value(tools.clone()).map_err(ProtocolError::Tools)?;
        }
        self.filters_workspace_tools = v
            .get("filters_workspace_tools")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        self.saves_state = reply::saves_state(v)?;
        self.mirror.send_fingerprints(self.saves_state);
        Ok(())
    }

    /// Sends request `kind` with `fields`; returns the answer (one of `expect`) and its line.
    /// Anything else fails the policy and gives `None`.
    fn ask(&mut self, kind: &str, fields: Value, expect: &[&str]) -> Option<(Value, String)> {
        if self.failure.is_some() {
            return None;
        }
        if kind != "save" && kind != "restore" {
            // Any other request may change what the process remembers.
            self.state = None;
        }
        let worker = self.worker.as_mut()?;
        let id = worker.next_request;
        worker.next_request += 1;
        let mut msg = Map::new();
        msg.insert("type".into(), kind.into());
        msg.insert("id".into(), id.into());
        if let Value::Object(f) = fields {
            msg.extend(f);
        }
        let line = Value::Object(msg).to_string();
        self.log_line("> ", &line);
        let timeout = self.text.timeout;
        let process = &mut self.worker.as_mut()?.process;
        process.send(&line);
        let got = process.receive(timeout);
        let bytes = match got {
            Ok(b) => b,
            Err(fault) => {
                let what = self.describe(&fault, kind);
                let quoted = match &fault {
                    Fault::TooLong(start) => Some(String::from_utf8_lossy(start).into_owned()),
                    _ => None,
                };
                self.fail(&what, quoted.as_deref());
                return None;
            }
        };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        self.log_line("< ", &text);
        match reply::check(&bytes, id, kind, expect) {
            Ok(v) => Some((v, text)),
            Err(e) => {
                self.fail(harness_core::one_line(&e), Some(&text));
                None
            }
        }
    }

    fn describe(&mut self, fault: &Fault, kind: &str) -> String {
        match fault {
            Fault::Eof => {
                let status = self
                    .worker
                    .as_mut()
                    .and_then(|w| w.process.exit_status())
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default();
                format!(
                    "exited{status} before answering the `{kind}` request{}",
                    self.unseen_hint()
                )
            }
            Fault::TooLong(_) => format!(
                "wrote a line longer than {} bytes (max_line) answering the `{kind}` request",
                self.text.max_line
            ),
            Fault::Timeout(t) => format!(
                "did not answer the `{kind}` request within {}s (write exec:timeout=SECONDS COMMAND for more)",
                t.as_secs_f64()
            ),
            Fault::Io(e) => format!("could not be read answering the `{kind}` request: {e}"),
        }
    }

    /// For a process that exited under bubblewrap: the paths its command names (its script, a
    /// file it reads) and its working folder that the sandbox does not show, each with why and
    /// the `read=` that shows it; empty when there is none.
    fn unseen_hint(&self) -> String {
        let Some(binds) = self.worker.as_ref().and_then(|w| w.unseen_by.as_ref()) else {
            return String::new();
        };
        let all: Vec<&std::path::Path> = binds.iter().map(PathBuf::as_path).collect();
        let cwd = &binds[0];
        let mut out = String::new();
        for path in named_paths(&self.text.command, cwd) {
            let Some(why) = crate::execution::sandbox::unseen(&path, &all) else {
                continue;
            };
            out.push_str(&format!(
                "; {} is not visible in the sandbox ({why})",
                path.display()
            ));
            let dir = path.parent().unwrap_or(&path);
            let below_cover =
                matches!(why, Unseen::Hidden(_) | Unseen::Private(_)) && dir != why.cover();
            if below_cover {
                let mut text = self.text.clone();
                text.reads.push(dir.to_path_buf());
                out.push_str(&format!("; show it with exec:{}", text.canonical()));
            } else {
                out.push_str(&format!(
                    "; move it into a folder of its own below {} and show that folder with exec:read=FOLDER {}",
                    why.cover().display(),
                    self.text.command
                ));
            }
        }
        if out.is_empty() {
            if let Some(why) = crate::execution::sandbox::unseen(cwd, &all) {
                out.push_str(&format!(
                    "; its working folder {} (the folder foldbench was started in) is not visible in the sandbox ({why}): name the policy's files by paths the sandbox shows, or show their folder with exec:read=FOLDER",
                    cwd.display()
                ));
            }
        }
        out
    }

    fn log_line(&mut self, dir: &str, line: &str) {
        if let Some(f) = &mut self.log {
            let _ = f.write_all(format!("{dir}{line}\n").as_bytes());
        }
    }

    /// Fails the policy: `what` it did, the offending line quoted, the tail of its standard
    /// error; the process is ended first (so its standard error is complete).
    fn fail(&mut self, what: impl std::fmt::Display, line: Option<&str>) {
        let mut stderr = String::new();
        if let Some(w) = self.worker.as_mut() {
            w.process.end(false);
            stderr = w.process.stderr_tail();
        }
        let mut reason = format!("policy process `{}` {what}", self.text.command);
        if let Some(l) = line {
            let l: String = l.chars().take(200).collect();
            reason.push_str(&format!("; the line: {l}"));
        }
        if stderr.is_empty() {
            reason.push_str("; its standard error is empty");
        } else {
            let chars: Vec<char> = stderr.chars().collect();
            let tail: String = chars[chars.len().saturating_sub(600)..].iter().collect();
            reason.push_str(&format!("; its standard error ends: {tail}"));
        }
        self.failure = Some(reason);
    }

    fn fail_plain(&mut self, what: ExecError) {
        self.failure = Some(format!(
            "policy process `{}`: {}",
            self.text.command,
            harness_core::one_line(&what)
        ));
    }

    fn context(&mut self, ctx: &Context) -> Value {
        self.mirror.delta(ctx)
    }
}

impl Policy for ExecPolicy {
    fn name(&self) -> String {
        format!("{NAME}:{}", self.inner.borrow().text.canonical())
    }

    fn tools(&self) -> Vec<ToolSpec> {
        self.inner.borrow().tools.clone()
    }

    fn card(&mut self, ctx: &Context, prefix_tokens: u32) -> Option<CardOffer> {
        let s = self.inner.get_mut();
        let context = s.context(ctx);
        let fields = json!({"turn": ctx.turn, "prefix_tokens": prefix_tokens, "context": context});
        let (v, line) = s.ask("card", fields, &["card"])?;
        match reply::card(&v) {
            Ok(c) => c,
            Err(e) => {
                s.fail(harness_core::one_line(&e), Some(&line));
                None
            }
        }
    }

    fn plan(&mut self, ctx: &Context, prefix_tokens: u32) -> Plan {
        let s = self.inner.get_mut();
        let context = s.context(ctx);
        let fields = json!({"turn": ctx.turn, "prefix_tokens": prefix_tokens, "context": context});
        let fallback = || Plan::Send {
            messages: ctx.messages.clone(),
            action: None,
        };
        let Some((v, line)) = s.ask("plan", fields, &["send", "compact"]) else {
            return fallback();
        };
        match reply::plan(&v, ctx, &mut s.memo) {
            Ok(p) => p,
            Err(e) => {
                s.fail(harness_core::one_line(&e), Some(&line));
                fallback()
            }
        }
    }

    fn apply_compaction(&mut self, ctx: &mut Context, summary: Arc<Message>) {
        ctx.compact(summary);
        let s = self.inner.get_mut();
        let context = s.context(ctx);
        s.ask(
            "compacted",
            json!({"turn": ctx.turn, "context": context}),
            &["ok"],
        );
    }

    fn owns_tool(&self, name: &str) -> bool {
        self.inner.borrow().tools.iter().any(|t| t.name == name)
    }

    fn handle_tool(&mut self, ctx: &Context, call: &ToolCall) -> ToolReply {
        let s = self.inner.get_mut();
        let context = s.context(ctx);
        let fields = json!({"turn": ctx.turn, "call": call, "context": context});
        let failed = || ToolReply::refused("error: the policy process failed".into());
        let Some((v, line)) = s.ask("tool", fields, &["tool_reply"]) else {
            return failed();
        };
        match reply::tool_reply(&v) {
            Ok(r) => r,
            Err(e) => {
                s.fail(harness_core::one_line(&e), Some(&line));
                failed()
            }
        }
    }

    fn refuse_workspace_tool(&self, call: &ToolCall) -> Option<String> {
        let mut s = self.inner.borrow_mut();
        if !s.filters_workspace_tools {
            return None;
        }
        let (v, line) = s.ask("workspace_tool", json!({"call": call}), &["workspace_tool"])?;
        match v.get("refuse") {
            None | Some(Value::Null) => None,
            Some(Value::String(r)) => Some(r.clone()),
            Some(_) => {
                s.fail(ProtocolError::Refuse, Some(&line));
                None
            }
        }
    }

    fn end_turn(&mut self, ctx: &Context, next_user: Option<&str>) -> Vec<Splice> {
        let s = self.inner.get_mut();
        let context = s.context(ctx);
        let fields = json!({"turn": ctx.turn, "next_user": next_user, "context": context});
        let Some((v, line)) = s.ask("end_turn", fields, &["splices"]) else {
            return Vec::new();
        };
        match reply::splices(&v, ctx) {
            Ok(list) => list
                .into_iter()
                .map(|(splice, text)| {
                    s.texts.insert((splice.from, splice.to), text);
                    splice
                })
                .collect(),
            Err(e) => {
                s.fail(harness_core::one_line(&e), Some(&line));
                Vec::new()
            }
        }
    }

    fn apply_splice(
        &mut self,
        ctx: &mut Context,
        splice: &Splice,
        archive: &ArchiveRef,
    ) -> Option<Arc<Message>> {
        let s = self.inner.get_mut();
        let text = s.texts.remove(&(splice.from, splice.to)).flatten();
        let msg = if !splice.kind.is_fold() {
            None
        } else if let Some(text) = text {
            ctx.turn_range(splice.from, splice.to).map(|(a, b)| {
                let kind = MessageKind::FoldResult {
                    from: splice.from,
                    to: splice.to,
                    archive: archive.path.clone(),
                    sha256: archive.sha256.clone(),
                };
                let text = format!(
                    "{text}\nArchive: {} (sha256 {})",
                    archive.path, archive.sha256
                );
                let m = Message::host(splice.to, text, kind);
                ctx.splice(a, b, Arc::clone(&m));
                m
            })
        } else {
            harness_core::fold::splice_fold(
                ctx,
                splice.from,
                splice.to,
                &archive.path,
                &archive.sha256,
            )
        };
        let context = s.context(ctx);
        let fields = json!({
            "turn": ctx.turn, "from": splice.from, "to": splice.to, "applied": msg.is_some(),
            "archive": archive.path, "sha256": archive.sha256, "context": context,
        });
        s.ask("spliced", fields, &["ok"]);
        msg
    }

    /// The process's own state, asked with `save` when it declared `saves_state` (and only
    /// when it was asked something since it last gave or took it); `None` otherwise.
    fn saved_state(&self) -> Option<Value> {
        self.inner.borrow_mut().save()
    }

    /// Gives the process back its state with `restore`, when it declared `saves_state`; a
    /// process that did not starts again from the context.
    fn restore_state(&mut self, state: &Value) {
        self.inner.get_mut().restore(state);
    }

    fn failed(&self) -> Option<String> {
        self.inner.borrow().failure.clone()
    }
}

#[cfg(test)]
mod tests;
