//! The proxy's run folder: the same files as a run's, so `report`, `-o report.html` and
//! `compare` read it, plus the proxy's own log.
//!
//! ```text
//! matrix.json                     the proxy's settings (policy, arm, upstream) and its arm
//! cells.jsonl                     one CellRecord per conversation, written when the proxy stops
//! requests.jsonl                  one row per request the upstream got: {"cell", …RequestRecord}
//! exchanges.jsonl                 one line per agent request: what it was (main, side,
//!                                 passthrough, compaction, branch, refused), the status, and
//!                                 what happened (an upstream error passed through, a stream
//!                                 cut, an agent gone); and when a conversation left
//!                                 memory (evicted, why) and came back (reloaded)
//! cells/<cell>/events.jsonl       the conversation's events (requests, answers, the agent's
//!                                 tool calls, folds, compactions), appended as they happen
//! cells/<cell>/transcript.jsonl   every message the model read, once, in order
//! cells/<cell>/archive/…          copies of the archives written in the agent's folder
//! ```
//!
//! A conversation is a cell `TASK/ARM/MODEL/N` (task `proxy` unless a caller names it, `N` its
//! number from 1). No header and no request body is written: the agent's key stays in memory.
//! A proxy started again on the same folder continues it: the records already there are kept,
//! new conversations are numbered after them, and a conversation begun before the restart goes
//! on in its own cell — `cells/<cell>/state.json` (written when the turn, the edits, the cards
//! or the branch change, and whenever the conversation leaves memory or the proxy stops) keeps
//! the units it saw, the edits and cards to apply again, its turn, what the policy remembers
//! (`Policy::saved_state`; an `exec:` process's own when it saves it), whether the policy
//! failed, and the breaker; its events come back from `events.jsonl`. The same
//! files bring back a conversation that left memory ([`super::MemoryLimits`]).

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use harness_core::metrics::{self, Price};
use harness_core::Event;
use harness_core::{CellRecord, Status, RECORD_VERSION};
use serde::Serialize;

use super::conversation::Saved;
use super::{Entry, ProxyConfig, ProxyError};
use crate::results::{
    self, cell_folder, CELLS_FILE, EVENTS_FILE, MATRIX_FILE, REQUESTS_FILE, TRANSCRIPT_FILE,
};

/// A conversation's state kept for a restart (in its folder under `cells/`).
pub(crate) const STATE_FILE: &str = "state.json";

/// The proxy's own log in the run folder.
pub(crate) const EXCHANGES_FILE: &str = "exchanges.jsonl";

/// One line of `exchanges.jsonl`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Exchange {
    /// `main`, `side`, `passthrough`, `compaction`, `branch` or `refused`; `evicted` and
    /// `reloaded` when a conversation leaves memory and comes back.
    pub(crate) kind: String,
    /// The request's path (no query).
    pub(crate) path: String,
    /// The conversation's cell, for a request of one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cell: Option<String>,
    /// The status the agent got (0 while a stream was still going).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<u16>,
    /// The index of the conversation's request it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) index: Option<usize>,
    /// Whether the answer was streamed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) stream: bool,
    /// What happened, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) note: Option<String>,
}

impl Exchange {
    /// An exchange of `kind` at `path`.
    pub(crate) fn new(kind: &str, path: &str) -> Exchange {
        Exchange {
            kind: kind.into(),
            path: path.into(),
            cell: None,
            status: None,
            index: None,
            stream: false,
            note: None,
        }
    }

    /// With its conversation's cell.
    pub(crate) fn cell(mut self, cell: &str) -> Exchange {
        self.cell = Some(cell.into());
        self
    }

    /// With the status the agent got.
    pub(crate) fn status(mut self, s: u16) -> Exchange {
        self.status = Some(s);
        self
    }

    /// With the conversation's request index.
    pub(crate) fn index(mut self, i: usize) -> Exchange {
        self.index = Some(i);
        self
    }

    /// Marked as streamed.
    pub(crate) fn stream(mut self) -> Exchange {
        self.stream = true;
        self
    }

    /// With a note.
    pub(crate) fn note(mut self, n: &str) -> Exchange {
        self.note = Some(n.into());
        self
    }
}

/// Writes the run folder.
pub(crate) struct Recorder {
    root: PathBuf,
    exchanges: File,
    requests: File,
    /// The run folder's lock, held until [`Recorder::release`] (the proxy stopped) or the drop.
    lock: Option<File>,
    /// Records already in the folder (a proxy started again on it), and this run's.
    records: BTreeMap<String, CellRecord>,
    order: Vec<String>,
    first_number: u64,
    /// Conversations of an earlier proxy on the folder, to continue.
    restored: Vec<Saved>,
}

/// What a conversation's record is made of.
pub(crate) struct Finished<'a> {
    pub(crate) cell: &'a str,
    pub(crate) model: &'a str,
    /// The policy's name with its parameters.
    pub(crate) policy: &'a str,
    /// Why the policy failed, if it did.
    pub(crate) failed: Option<String>,
    pub(crate) turns: u32,
    pub(crate) events: &'a [Event],
}

impl Recorder {
    /// Opens the run folder (made when missing), taking its lock; a folder of an earlier proxy
    /// run is continued.
    pub(crate) fn open(cfg: &ProxyConfig) -> Result<Recorder, ProxyError> {
        let root = cfg.out.clone();
        let io = ProxyError::io;
        fs::create_dir_all(root.join("cells")).map_err(io("create", &root))?;
        let lock_path = root.join(results::LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&lock_path)
            .map_err(io("open", &lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => return Err(ProxyError::Busy { root }),
            Err(fs::TryLockError::Error(e)) => return Err(io("lock", &lock_path)(e)),
        }
        let mpath = root.join(MATRIX_FILE);
        if !mpath.exists() {
            let m = serde_json::json!({
                "proxy": {
                    "policy": cfg.policy.label(),
                    "arm": cfg.arm,
                    "task": cfg.task,
                    "upstream": cfg.upstream,
                },
                "arms": [cfg.arm],
                "cells": [],
            });
            let text = serde_json::to_string_pretty(&m)?;
            results::write_atomic(&mpath, text.as_bytes()).map_err(io("write", &mpath))?;
        }
        let cpath = root.join(CELLS_FILE);
        let rpath = root.join(REQUESTS_FILE);
        let xpath = root.join(EXCHANGES_FILE);
        for p in [&cpath, &rpath, &xpath] {
            results::repair_jsonl(p).map_err(io("repair", p))?;
        }
        let mut records = BTreeMap::new();
        let mut order = Vec::new();
        if cpath.exists() {
            for r in results::read_records(&root)? {
                order.push(r.id.clone());
                records.insert(r.id.clone(), r);
            }
        }
        // Numbers already taken: recorded cells, and folders of conversations whose proxy was
        // killed before it wrote their records.
        let mut taken = records.values().map(|r| r.seed).max().unwrap_or(0);
        if let Ok(dir) = fs::read_dir(root.join("cells")) {
            for d in dir.flatten() {
                let name = d.file_name().to_string_lossy().to_string();
                if let Some(n) = name.rsplit('_').next().and_then(|n| n.parse::<u64>().ok()) {
                    taken = taken.max(n);
                }
            }
        }
        let open = |p: &Path| {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(io("open", p))
        };
        let restored = restore(&root);
        Ok(Recorder {
            restored,
            exchanges: open(&xpath)?,
            requests: open(&rpath)?,
            root,
            lock: Some(lock),
            records,
            order,
            first_number: taken + 1,
        })
    }

    /// The conversations an earlier proxy left in the folder (their saved state, without its
    /// messages: a conversation comes back whole when a request of it comes), to continue;
    /// taken once.
    pub(crate) fn take_restored(&mut self) -> Vec<Saved> {
        std::mem::take(&mut self.restored)
    }

    /// Gives the run folder's lock back: the proxy stopped, its records are written, and a
    /// proxy started again on the folder may take it at once (a task of the stopped one that
    /// still holds the recorder for a moment does not keep it).
    pub(crate) fn release(&mut self) {
        self.lock = None;
    }

    /// A conversation's saved state and events, from its folder (one out of memory, brought
    /// back).
    pub(crate) fn load_cell(&self, cell: &str) -> Result<(Saved, Vec<Event>), ProxyError> {
        let dir = self.cell_dir(cell);
        let state = dir.join(STATE_FILE);
        let text = fs::read_to_string(&state).map_err(ProxyError::io("read", &state))?;
        let saved: Saved = serde_json::from_str(&text).map_err(|e| ProxyError::State {
            path: state.clone(),
            line: e.line(),
            column: e.column(),
            source: e,
        })?;
        Ok((saved, read_events(&dir.join(EVENTS_FILE))))
    }

    /// The number the first conversation of this run gets.
    pub(crate) fn next_number(&self) -> u64 {
        self.first_number
    }

    /// Appends an exchange to `exchanges.jsonl`.
    pub(crate) fn exchange(&mut self, e: &Exchange) {
        if let Ok(mut line) = serde_json::to_string(e) {
            line.push('\n');
            if let Err(err) = self.exchanges.write_all(line.as_bytes()) {
                crate::progress::warn(&format!("warning: cannot write {EXCHANGES_FILE}: {err}"));
            }
        }
    }

    fn cell_dir(&self, cell: &str) -> PathBuf {
        self.root.join("cells").join(cell_folder(cell))
    }

    /// Appends a conversation's new events, request rows and messages to its files.
    pub(crate) fn flush_entry(&mut self, e: &mut Entry) -> Result<(), ProxyError> {
        let dir = self.cell_dir(&e.cell);
        fs::create_dir_all(&dir).map_err(ProxyError::io("create", &dir))?;
        let mut events = String::new();
        let mut rows = String::new();
        for ev in &e.conv.events[e.written_events.min(e.conv.events.len())..] {
            events.push_str(&serde_json::to_string(ev)?);
            events.push('\n');
            if let Event::Request(r) = ev {
                let mut v = serde_json::to_value(r)?;
                if let Some(o) = v.as_object_mut() {
                    o.remove("visible_results");
                    o.insert("cell".into(), serde_json::Value::String(e.cell.clone()));
                }
                rows.push_str(&v.to_string());
                rows.push('\n');
            }
        }
        let mut transcript = String::new();
        for m in &e.conv.transcript {
            transcript.push_str(&serde_json::to_string(&**m)?);
            transcript.push('\n');
        }
        append(&dir.join(EVENTS_FILE), events.as_bytes())?;
        append(&dir.join(TRANSCRIPT_FILE), transcript.as_bytes())?;
        self.requests
            .write_all(rows.as_bytes())
            .map_err(ProxyError::io("write", Path::new(REQUESTS_FILE)))?;
        e.written_events = e.conv.events.len();
        // Written: the file holds them, memory need not (the messages still in the context
        // are held there).
        e.conv.transcript.clear();
        let generation = e.conv.generation();
        if e.saved != Some(generation) {
            let mut saved = e.conv.save();
            saved.cell = e.cell.clone();
            saved.model = e.model.clone();
            saved.tools = e.tools;
            saved.keys = e.keys.clone();
            let text = serde_json::to_string(&saved)?;
            let path = dir.join(STATE_FILE);
            results::write_atomic(&path, text.as_bytes())
                .map_err(ProxyError::io("write", &path))?;
            e.saved = Some(generation);
        }
        Ok(())
    }

    /// Keeps a copy of an archive the proxy wrote in the agent's folder.
    pub(crate) fn archive(&mut self, cell: &str, rel: &str, bytes: &[u8]) {
        let name = Path::new(rel)
            .file_name()
            .map(|n| n.to_owned())
            .unwrap_or_default();
        let path = self.cell_dir(cell).join("archive").join(name);
        if let Err(err) = results::write_atomic(&path, bytes) {
            crate::progress::warn(&format!("warning: cannot write {}: {err}", path.display()));
        }
    }

    /// The record of a conversation in memory.
    pub(crate) fn finish_entry(&mut self, cfg: &ProxyConfig, e: &Entry) -> Result<(), ProxyError> {
        self.finish(
            cfg,
            Finished {
                cell: &e.cell,
                model: &e.model,
                policy: &e.conv.policy_name(),
                failed: e.conv.policy_failed(),
                turns: e.conv.turn(),
                events: &e.conv.events,
            },
        )
    }

    /// The record of a conversation, from its events (no checks: its status is `unchecked`).
    pub(crate) fn finish(&mut self, cfg: &ProxyConfig, f: Finished<'_>) -> Result<(), ProxyError> {
        let n = f
            .cell
            .rsplit('/')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let model_ms = f
            .events
            .iter()
            .map(|ev| match ev {
                Event::Response { model_ms, .. } => *model_ms,
                _ => 0,
            })
            .sum();
        let record = CellRecord {
            version: RECORD_VERSION,
            id: f.cell.to_string(),
            task: cfg.task.clone(),
            arm: cfg.arm.clone(),
            policy: f.policy.to_string(),
            model: if f.model.is_empty() {
                "unknown".into()
            } else {
                f.model.to_string()
            },
            seed: n,
            // Nothing is checked in a conversation through the proxy: neither a success nor a
            // failure, unless its policy failed.
            status: if f.failed.is_some() {
                Status::Error
            } else {
                Status::Unchecked
            },
            error: f.failed.map(|r| format!("the policy failed: {r}")),
            checks: Vec::new(),
            turns: f.turns,
            metrics: metrics::compute(f.events, None, &Price::default()),
            wall_ms: 0,
            model_ms,
            agent: None,
            behaviour: None,
        };
        if !self.records.contains_key(&record.id) {
            self.order.push(record.id.clone());
        }
        self.records.insert(record.id.clone(), record);
        Ok(())
    }

    /// The folder's conversations and the requests their model answered, as `report` counts
    /// them (the records of earlier runs on the folder and this run's).
    pub(crate) fn recorded(&self) -> (usize, u64) {
        let requests = self
            .records
            .values()
            .map(|r| r.metrics.requests as u64)
            .sum();
        (self.records.len(), requests)
    }

    /// Writes `cells.jsonl`: the records of earlier runs on the folder and this run's.
    pub(crate) fn write_records(&self) -> Result<(), ProxyError> {
        let lines = self
            .order
            .iter()
            .filter_map(|id| self.records.get(id))
            .filter_map(|r| serde_json::to_string(r).ok());
        let path = self.root.join(CELLS_FILE);
        results::write_lines(&path, lines)
            .map(|_| ())
            .map_err(ProxyError::io("write", &path))
    }
}

/// The saved conversations of the folder: each `cells/<cell>/state.json` that reads (a state
/// that does not is left out with a warning: that conversation starts again as a new one).
fn restore(root: &Path) -> Vec<Saved> {
    let mut out = Vec::new();
    let Ok(dir) = fs::read_dir(root.join("cells")) else {
        return out;
    };
    let mut dirs: Vec<PathBuf> = dir.flatten().map(|d| d.path()).collect();
    dirs.sort();
    for d in dirs {
        let state = d.join(STATE_FILE);
        let Ok(text) = fs::read_to_string(&state) else {
            continue;
        };
        match serde_json::from_str::<Saved>(&text) {
            Ok(s) => out.push(s.head()),
            Err(e) => crate::progress::warn(&format!(
                "warning: {}:{}:{}: not a conversation's state ({e}); it starts again as a new conversation",
                state.display(),
                e.line(),
                e.column()
            )),
        }
    }
    out
}

/// The events of an `events.jsonl` (a line that does not read is left out with a warning).
fn read_events(path: &Path) -> Vec<Event> {
    let mut events = Vec::new();
    for (i, line) in fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .enumerate()
    {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Event>(line) {
            Ok(e) => events.push(e),
            Err(e) => crate::progress::warn(&format!(
                "warning: {}:{}:{}: not an event ({e}); left out",
                path.display(),
                i + 1,
                e.column()
            )),
        }
    }
    events
}

fn append(path: &Path, bytes: &[u8]) -> Result<(), ProxyError> {
    if bytes.is_empty() && path.exists() {
        return Ok(());
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(ProxyError::io("write", path))
}
