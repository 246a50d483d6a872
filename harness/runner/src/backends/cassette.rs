//! Cassettes: recorded model exchanges, so a real-model matrix runs again offline.
//!
//! # Format (version 1)
//!
//! A cassette is a directory with one JSON file per exchange, named `<key>.json`:
//!
//! ```json
//! {
//!   "version": 1,
//!   "key": "<64 hex digits>",
//!   "model": "openai:gpt-4o-mini",
//!   "cell": "<the cell that recorded it>",
//!   "epoch": 0,
//!   "request": { "system": "…", "tools": [...], "messages": [...], "purpose": "turn" },
//!   "response": { "text": "…", "tool_calls": [...], "output_tokens": 12, "usage": {...} }
//! }
//! ```
//!
//! `request` is the *canonical request* ([`canonical_request`]): what the provider is shown, and
//! nothing else: the system prompt, the tools (`name`, `description`, `parameters`), and per
//! message its `role` (`user`, `assistant`, `tool`), its visible `text` (text and card), its
//! `tool_calls` (`id`, `name`, `args`; left out when there are none), its `tool_call_id` (tool
//! results) and `is_error` (only when true), then the request's `purpose` (`turn` or
//! `compaction`). Message ids, turn numbers, kinds and token counts are not part of it.
//!
//! `key` is the lowercase hex SHA-256 of `canonical(request) + "\n" + epoch` where
//! `canonical` is JSON with object keys sorted at every level and no white space
//! ([`canonical_string`]) and `epoch` is the run's epoch/seed in decimal. `response` is the
//! [`Response`] as foldbench stores it.
//!
//! # Recording and replaying
//!
//! `--record DIR` wraps any model in a [`Recorder`]: every successful exchange is written to
//! `DIR/<key>.json` (a temporary file renamed into place, so a reader never sees half a file);
//! errors are never recorded. Within one recording run, a request whose key was already answered
//! is not sent again: every cell asking it gets the same answer (concurrent askers wait for the
//! first), so a replay reproduces each cell exactly. Recording into a directory that already holds
//! a key overwrites it, unless the recorder *resumes* (`judge run --record DIR --resume`): then a
//! key the directory holds is answered from its file and only the missing ones are asked, so an
//! interrupted recording of many hours goes on where it stopped.
//!
//! `--model replay:DIR` is a [`ReplayModel`]: it computes the key of each request and answers with
//! the recorded response; a request with no file fails the cell with
//! [`ModelError::MissingRecording`], naming the directory, the key and the cell.
//!
//! The key does not include the model: record each model into its own directory.
//!
//! Secrets: the values of the provider key variables (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`) are
//! replaced by `[redacted]` wherever they would occur in a cassette file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use harness_core::{Message, Role};
use harness_core::{Purpose, Request, Response};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

use super::retry::redact;
use super::BackendError;
use crate::backends::model::{Model, ModelError, ModelFuture};

/// The cassette format version written and read.
pub(crate) const CASSETTE_VERSION: u64 = 1;

/// The canonical request: what the provider sees (see the module docs).
pub fn canonical_request(req: &Request) -> Value {
    let tools: Vec<Value> = req
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
        .collect();
    let messages: Vec<Value> = req.messages.iter().map(|m| canonical_message(m)).collect();
    let purpose = match req.purpose {
        Purpose::Turn => "turn",
        Purpose::Compaction => "compaction",
        Purpose::Child => "child",
    };
    json!({"system": &*req.system, "tools": tools, "messages": messages, "purpose": purpose})
}

fn canonical_message(m: &Message) -> Value {
    let role = match m.role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut o = Map::new();
    o.insert("role".into(), json!(role));
    let text = m.visible_text();
    let text = if m.role == Role::Tool {
        mask_durations(&text)
    } else {
        text
    };
    o.insert("text".into(), json!(text));
    if !m.tool_calls.is_empty() {
        let calls: Vec<Value> = m
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "name": c.name, "args": c.args}))
            .collect();
        o.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = &m.tool_call_id {
        o.insert("tool_call_id".into(), json!(id));
    }
    if m.is_error {
        o.insert("is_error".into(), json!(true));
    }
    Value::Object(o)
}

/// Masks durations in a tool's output (`Ran 3 tests in 0.001s` → `Ran 3 tests in <duration>`):
/// the only part of a tool result that differs between a recorded run and its replay, so the key
/// of a request does not depend on how fast a test suite happened to run.
pub(crate) fn mask_durations(text: &str) -> String {
    static DURATION: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    match DURATION.get_or_init(|| regex::Regex::new(r"\b\d+(\.\d+)?\s?(ms|s)\b").ok()) {
        Some(re) => re.replace_all(text, "<duration>").into_owned(),
        None => text.to_string(),
    }
}

/// JSON with object keys sorted at every level and no white space, whatever map type
/// `serde_json` was built with.
pub(crate) fn canonical_string(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(o) => {
                let mut keys: Vec<&String> = o.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(&o[k], out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(v, &mut out);
    out
}

/// The cassette key of a request under an epoch/seed.
pub fn cassette_key(req: &Request, epoch: u64) -> String {
    key_of(&canonical_string(&canonical_request(req)), epoch)
}

fn key_of(canonical: &str, epoch: u64) -> String {
    let mut h = Sha256::new();
    h.update(canonical.as_bytes());
    h.update(b"\n");
    h.update(epoch.to_string().as_bytes());
    harness_core::hex(&h.finalize())
}

/// Records every successful exchange of the model it wraps (see the module docs).
pub struct Recorder {
    inner: Arc<dyn Model>,
    dir: PathBuf,
    epoch: u64,
    secrets: Vec<String>,
    resume: bool,
    answered: Mutex<HashMap<String, Arc<OnceCell<Response>>>>,
}

impl Recorder {
    /// Wraps `inner`, writing into `dir` (created if needed); `secrets` are redacted from files.
    /// With `resume`, a request whose key `dir` already holds is answered from that file.
    pub fn new(
        inner: Arc<dyn Model>,
        dir: &Path,
        epoch: u64,
        secrets: Vec<String>,
        resume: bool,
    ) -> Result<Recorder, BackendError> {
        std::fs::create_dir_all(dir).map_err(|source| BackendError::CassetteDir {
            dir: dir.to_path_buf(),
            source,
        })?;
        let secrets = secrets.into_iter().filter(|s| !s.is_empty()).collect();
        Ok(Recorder {
            inner,
            dir: dir.to_path_buf(),
            epoch,
            secrets,
            resume,
            answered: Mutex::new(HashMap::new()),
        })
    }

    fn slot(&self, key: &str) -> Arc<OnceCell<Response>> {
        let mut map = match self.answered.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        map.entry(key.to_string()).or_default().clone()
    }

    fn write(
        &self,
        key: &str,
        request: Value,
        cell: &str,
        response: &Response,
    ) -> Result<(), ModelError> {
        let file = json!({
            "version": CASSETTE_VERSION,
            "key": key,
            "model": self.inner.name(),
            "cell": cell,
            "epoch": self.epoch,
            "request": request,
            "response": response,
        });
        let text = serde_json::to_string_pretty(&file)
            .map_err(|e| self.error(format!("cannot encode exchange {key}: {e}")))?;
        let text = redact(&text, &self.secrets) + "\n";
        crate::atomic::write(&self.dir.join(format!("{key}.json")), text.as_bytes())
            .map_err(|e| self.error(format!("cannot write cassette {}: {e}", self.dir.display())))
    }

    fn error(&self, message: String) -> ModelError {
        ModelError::Other {
            model: self.inner.name(),
            message,
        }
    }
}

impl Model for Recorder {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn window(&self) -> u64 {
        self.inner.window()
    }

    fn respond<'a>(&'a self, req: &'a Request, cell: &'a str) -> ModelFuture<'a> {
        Box::pin(async move {
            let request = canonical_request(req);
            let key = key_of(&canonical_string(&request), self.epoch);
            let slot = self.slot(&key);
            let response = slot
                .get_or_try_init(|| async {
                    if self.resume {
                        match load_exchange(&self.dir, &key, cell, &self.inner.name()) {
                            Err(ModelError::MissingRecording { .. }) => {}
                            recorded => return recorded,
                        }
                    }
                    let response = self.inner.respond(req, cell).await?;
                    self.write(&key, request, cell, &response)?;
                    Ok::<Response, ModelError>(response)
                })
                .await?;
            Ok(response.clone())
        })
    }
}

/// Answers from a cassette directory (see the module docs).
pub struct ReplayModel {
    dir: PathBuf,
    epoch: u64,
}

impl ReplayModel {
    /// Opens `dir`, which must exist, for the given epoch/seed.
    pub fn open(dir: &Path, epoch: u64) -> Result<ReplayModel, BackendError> {
        if !dir.is_dir() {
            return Err(BackendError::NoSuchCassette {
                dir: dir.to_path_buf(),
            });
        }
        Ok(ReplayModel {
            dir: dir.to_path_buf(),
            epoch,
        })
    }

    fn load(&self, key: &str, cell: &str) -> Result<Response, ModelError> {
        load_exchange(&self.dir, key, cell, &self.name())
    }
}

/// The recorded response of `key` in the cassette `dir`: [`ModelError::MissingRecording`] when
/// the directory has no such file, another error (naming the file) when it cannot be read.
fn load_exchange(dir: &Path, key: &str, cell: &str, model: &str) -> Result<Response, ModelError> {
    let path = dir.join(format!("{key}.json"));
    let bad = |message: String| ModelError::Other {
        model: model.to_string(),
        message,
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ModelError::MissingRecording {
                dir: dir.display().to_string(),
                key: key.to_string(),
                cell: cell.to_string(),
            })
        }
        Err(e) => return Err(bad(format!("cannot read cassette {}: {e}", path.display()))),
    };
    let file: Value = serde_json::from_str(&text)
        .map_err(|e| bad(format!("cassette {} is not JSON: {e}", path.display())))?;
    match file.get("version").and_then(Value::as_u64) {
        Some(CASSETTE_VERSION) => {}
        other => {
            return Err(bad(format!(
                "cassette {} has version {}, this foldbench reads version {CASSETTE_VERSION}",
                path.display(),
                other.map_or("none".to_string(), |v| v.to_string())
            )))
        }
    }
    if file.get("key").and_then(Value::as_str) != Some(key) {
        return Err(bad(format!(
            "cassette {} does not hold key {key}",
            path.display()
        )));
    }
    let response = file
        .get("response")
        .cloned()
        .ok_or_else(|| bad(format!("cassette {} has no response", path.display())))?;
    serde_json::from_value(response)
        .map_err(|e| bad(format!("cassette {}: bad response: {e}", path.display())))
}

impl Model for ReplayModel {
    fn name(&self) -> String {
        format!("replay:{}", self.dir.display())
    }

    fn respond<'a>(&'a self, req: &'a Request, cell: &'a str) -> ModelFuture<'a> {
        let result = self.load(&cassette_key(req, self.epoch), cell);
        Box::pin(async move { result })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_core::{MessageKind, ToolCall, ToolSpec};

    #[test]
    fn durations_in_tool_output_do_not_change_the_key() {
        assert_eq!(
            mask_durations("Ran 3 tests in 0.001s\nOK"),
            "Ran 3 tests in <duration>\nOK"
        );
        assert_eq!(
            mask_durations("took 12 ms, 3 tests, 2s"),
            "took <duration>, 3 tests, <duration>"
        );
        let call = ToolCall {
            id: "c".into(),
            name: "shell".into(),
            args: json!({"command": "t"}),
        };
        let key = |out: &str| {
            let msgs = vec![
                Message::user(1, "run the tests", None),
                Message::assistant(1, "", vec![call.clone()]),
                Message::tool_result(1, &call, out, false),
            ];
            cassette_key(
                &Request::new(
                    Arc::from("s"),
                    Arc::from(Vec::<ToolSpec>::new()),
                    0,
                    msgs,
                    Purpose::Turn,
                ),
                1,
            )
        };
        assert_eq!(key("Ran 3 tests in 0.001s"), key("Ran 3 tests in 0.000s"));
        assert_ne!(key("Ran 3 tests in 0.001s"), key("Ran 4 tests in 0.001s"));
    }

    fn request(card: Option<&str>) -> Request {
        let c = ToolCall {
            id: "c1".into(),
            name: "grep".into(),
            args: json!({"b": 1, "a": {"z": 0, "y": [1, {"q": 1, "p": 2}]}}),
        };
        Request::new(
            Arc::from("sys"),
            Arc::from(vec![ToolSpec {
                name: "grep".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }]),
            7,
            vec![
                Message::user(1, "hi", card.map(str::to_string)),
                Message::assistant(1, "", vec![c.clone()]),
                Message::tool_result(1, &c, "out", true),
                Message::host(1, "fold", MessageKind::Summary),
            ],
            Purpose::Turn,
        )
    }

    #[test]
    fn canonical_request_is_exact() {
        let got = canonical_string(&canonical_request(&request(Some("card"))));
        let want = concat!(
            r#"{"messages":[{"role":"user","text":"hi\n\ncard"},"#,
            r#"{"role":"assistant","text":"","tool_calls":[{"args":{"a":{"y":[1,{"p":2,"q":1}],"z":0},"b":1},"id":"c1","name":"grep"}]},"#,
            r#"{"is_error":true,"role":"tool","text":"out","tool_call_id":"c1"},"#,
            r#"{"role":"user","text":"fold"}],"#,
            r#""purpose":"turn","system":"sys","tools":[{"description":"d","name":"grep","parameters":{"type":"object"}}]}"#
        );
        assert_eq!(got, want);
    }

    #[test]
    fn key_ignores_ids_and_counts_but_not_text_or_epoch() {
        let a = request(Some("card"));
        let b = request(Some("card")); // fresh message ids
        assert_ne!(a.messages[0].id, b.messages[0].id);
        assert_eq!(cassette_key(&a, 3), cassette_key(&b, 3));
        assert_ne!(cassette_key(&a, 3), cassette_key(&a, 4));
        assert_ne!(cassette_key(&a, 3), cassette_key(&request(None), 3));
        assert_eq!(cassette_key(&a, 3).len(), 64);
    }
}
