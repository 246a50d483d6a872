//! # Backends: the models a cell talks to
//!
//! - `model`: the [`model::Model`] trait every backend implements, and the `sim` backend;
//! - `openai`: any OpenAI-compatible chat-completions server with tool calling;
//! - `anthropic`: the Messages API with prompt-cache breakpoints;
//! - `cassette`: `--record DIR` (a decorator around any model) and `replay:DIR`;
//! - `retry`: the HTTP engine both providers share: in-flight cap, retries, redaction;
//! - `slots`: how many requests a server takes at once (one for a server on this machine).
//!
//! [`parse_model`] turns a `--model` spec into a model; `sim` is built by the caller, which can
//! wrap it for recording with [`with_recording`].
//!
//! Tool-call arguments that are not a JSON object reach the runner as
//! `{"__invalid_arguments": "<raw text>"}` ([`INVALID_ARGUMENTS`]): the tool layer then answers
//! with an error the model sees, and the cell goes on.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub(crate) mod anthropic;
pub(crate) mod cassette;
pub(crate) mod model;
pub use model::{Model, ModelError, ModelFuture, SharedModel, SimModel};
pub(crate) mod openai;
pub(crate) mod retry;
pub use retry::{
    provider_semaphore, Engine, RetryPolicy, DEFAULT_MAX_RETRY_WAIT, MAX_RESPONSE_BYTES,
};
pub(crate) mod slots;

pub use anthropic::{body as anthropic_body, AnthropicModel};
pub use cassette::{canonical_request, cassette_key, Recorder, ReplayModel};
pub use openai::{body as openai_body, parse_arguments, OpenAiModel};

/// Why a model cannot be built from its spec and options: each is the user's to fix (a flag, a
/// missing key or folder), said before anything is asked of a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// `--temperature` outside 0 to `MAX_TEMPERATURE`.
    #[error("{value} is outside 0 to {MAX_TEMPERATURE}: give 0 for the most likely answer, or up to {MAX_TEMPERATURE} (Anthropic's API takes up to 1)")]
    TemperatureRange {
        /// The value given.
        value: f64,
    },
    /// `--temperature` that is not a number.
    #[error("`{text}` is not a number: give a temperature from 0 to {MAX_TEMPERATURE}, such as 0 or 0.7")]
    TemperatureNotNumber {
        /// The text given.
        text: String,
    },
    /// A temperature over 1 for the Anthropic Messages API.
    #[error("anthropic:{model}: --temperature {value} is over 1, the most the Messages API takes; give 0 to 1")]
    AnthropicTemperature {
        /// The model's name.
        model: String,
        /// The value given.
        value: f64,
    },
    /// The model needs an API key the environment does not hold.
    #[error("the model {spec} needs the environment variable {var}{why}, which is not set; export {var}=… and run again")]
    MissingKey {
        /// The model spec (`anthropic:claude-…`).
        spec: String,
        /// The variable.
        var: &'static str,
        /// Why it is needed, when that is not plain (` (it talks to …)`), else empty.
        why: String,
    },
    /// `replay:` without a folder.
    #[error("replay: the cassette directory is missing (write replay:<dir>)")]
    NoCassetteDir,
    /// `replay:DIR` whose folder does not exist.
    #[error("replay: the cassette directory {} does not exist", dir.display())]
    NoSuchCassette {
        /// The folder named.
        dir: PathBuf,
    },
    /// The sim, which the runner builds itself.
    #[error("the sim model is built by the runner, not by the http backends")]
    Sim,
    /// A spec of no known backend.
    #[error("unknown model {spec:?}; known models: {KNOWN_MODELS}")]
    UnknownModel {
        /// The spec as written.
        spec: String,
    },
    /// `openai:` or `anthropic:` without a model name.
    #[error("{provider}: the model name is empty (write {provider}:<name>)")]
    EmptyModelName {
        /// `openai`, `anthropic`.
        provider: String,
    },
    /// An empty base URL.
    #[error("{provider}: the base url is empty")]
    EmptyBaseUrl {
        /// `openai`, `anthropic`.
        provider: String,
    },
    /// The HTTP client cannot be built.
    #[error("model {model}: cannot build the http client")]
    HttpClient {
        /// The model (`openai:gpt-4o-mini`).
        model: String,
        /// reqwest's error.
        #[source]
        source: reqwest::Error,
    },
    /// `--record DIR` whose folder cannot be created.
    #[error("cannot create the cassette directory {}", dir.display())]
    CassetteDir {
        /// The folder.
        dir: PathBuf,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// `sim:judge=X` of no known judge.
    #[error("sim: unknown judge `{0}`; expected oracle, eager, lexical, never")]
    SimJudge(String),
    /// `sim:recheck=X` that is not a probability.
    #[error("sim: recheck must be a probability, not `{0}`")]
    SimRecheck(String),
    /// A `sim:` setting of no known name.
    #[error("sim: unknown setting `{0}`; write sim:judge=oracle|eager|lexical|never,recheck=0.1")]
    SimSetting(String),
}

/// What is wrong with a provider's answer (which then is a [`model::ModelError::Malformed`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum AnswerError {
    /// The body is JSON but not an object.
    #[error("the answer is not a JSON object")]
    NotObject,
    /// The server's answer is an error object.
    #[error("the server answered with an error: {message}")]
    Server {
        /// The server's message, made printable.
        message: String,
    },
    /// A field the answer must have is missing.
    #[error("missing field `{field}`")]
    Missing {
        /// The field's path (`choices[0].message`).
        field: String,
    },
    /// A field has the wrong shape.
    #[error("field `{field}` {problem}")]
    Shape {
        /// The field's path.
        field: String,
        /// What is wrong (`is not an array`, `is empty`, `is not a count`).
        problem: &'static str,
    },
}

impl AnswerError {
    fn missing(field: impl Into<String>) -> AnswerError {
        AnswerError::Missing {
            field: field.into(),
        }
    }

    fn shape(field: impl Into<String>, problem: &'static str) -> AnswerError {
        AnswerError::Shape {
            field: field.into(),
            problem,
        }
    }
}

/// The argument key under which a tool call's unreadable arguments are kept, raw.
pub const INVALID_ARGUMENTS: &str = "__invalid_arguments";

/// Why a tool call cannot be executed as the model sent it: no tool name, or arguments that are
/// not a JSON object ([`INVALID_ARGUMENTS`]). The text is the error result the model reads; the
/// cell goes on.
pub(crate) fn malformed_call(call: &harness_core::ToolCall) -> Option<String> {
    if call.name.trim().is_empty() {
        return Some(
            "error: the tool call has no tool name; call one of the tools listed in the request by its name"
                .to_string(),
        );
    }
    let raw = call.args.get(INVALID_ARGUMENTS)?;
    let raw = raw
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| raw.to_string());
    let shown = match raw.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &raw[..at]),
        None => raw.clone(),
    };
    let why = match serde_json::from_str::<serde_json::Value>(&raw) {
        Err(e) => format!("not valid JSON ({e})"),
        Ok(_) => "valid JSON but not an object".to_string(),
    };
    Some(format!(
        "error: the arguments of `{}` are {why}: {shown:?}; send the arguments as one JSON object, e.g. {{\"path\": \"src/main.py\"}}",
        call.name
    ))
}

/// Gives every tool call of one answer a distinct id: a repeated id (or an empty one) gets a
/// suffix `-2`, `-3`, … (or a fresh `call_fb…`), so every tool result answers exactly one call.
pub(crate) fn unique_call_ids(calls: &mut [harness_core::ToolCall]) {
    let mut seen = std::collections::HashSet::new();
    for c in calls.iter_mut() {
        if c.id.is_empty() {
            c.id = "call".to_string();
        }
        if !seen.insert(c.id.clone()) {
            let base = c.id.clone();
            let mut n = 2;
            while seen.contains(&format!("{base}-{n}")) {
                n += 1;
            }
            c.id = format!("{base}-{n}");
            seen.insert(c.id.clone());
        }
    }
}

/// The environment variables whose values are secrets: never written to a cassette, an error
/// message or a log.
pub(crate) const SECRET_VARS: &[&str] = &["OPENAI_API_KEY", "ANTHROPIC_API_KEY"];

/// Settings shared by the backends of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendOptions {
    /// `--record DIR`: write every successful exchange to this cassette directory.
    pub record: Option<PathBuf>,
    /// With `record`: answer the keys the cassette already holds from it and ask only the
    /// missing ones (an interrupted recording goes on where it stopped).
    pub resume_recording: bool,
    /// `--max-output-tokens N`: the most tokens a model may write per answer, sent as
    /// `max_tokens` (OpenAI-compatible servers; Anthropic's default is
    /// `anthropic::MAX_TOKENS`). `None`: the provider's default.
    pub max_output_tokens: Option<u32>,
    /// `--temperature T`: the sampling temperature, sent as `temperature` to both providers
    /// (0 asks for the most likely answer, so a model answers a request the same way each
    /// time, as far as its server is deterministic). `None`: none is sent, and the provider
    /// samples at its default (llama.cpp's servers: 0.8 with a random seed). Not part of a
    /// cassette key: record each setting into its own folder.
    pub temperature: Option<f64>,
    /// Requests in flight per provider endpoint (default 4).
    pub in_flight: usize,
    /// Time-out of one attempt (default 120 s).
    pub timeout: Duration,
    /// Retries after the first attempt (default 4).
    pub max_retries: u32,
    /// First backoff between attempts; it doubles each time, with jitter (default 500 ms).
    pub base_delay: Duration,
    /// The longest wait a server's `Retry-After` imposes between attempts (default
    /// [`retry::DEFAULT_MAX_RETRY_WAIT`], 60 s).
    pub max_retry_wait: Duration,
    /// The run's epoch/seed, part of every cassette key (default 0).
    pub epoch: u64,
}

impl Default for BackendOptions {
    fn default() -> BackendOptions {
        BackendOptions {
            record: None,
            resume_recording: false,
            max_output_tokens: None,
            temperature: None,
            in_flight: 4,
            timeout: Duration::from_secs(120),
            max_retries: 4,
            base_delay: Duration::from_millis(500),
            max_retry_wait: retry::DEFAULT_MAX_RETRY_WAIT,
            epoch: 0,
        }
    }
}

impl BackendOptions {
    /// The retry policy these options describe.
    pub(crate) fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_retries: self.max_retries,
            base_delay: self.base_delay,
            timeout: self.timeout,
            max_retry_wait: self.max_retry_wait,
        }
    }
}

/// The highest `--temperature` a provider takes (OpenAI's API: 2; Anthropic's: 1, checked when
/// the model is built).
pub(crate) const MAX_TEMPERATURE: f64 = 2.0;

/// Reads a `--temperature` value: a number from 0 to `MAX_TEMPERATURE`.
pub fn parse_temperature(s: &str) -> Result<f64, BackendError> {
    match s.trim().parse::<f64>() {
        Ok(t) if (0.0..=MAX_TEMPERATURE).contains(&t) => Ok(t),
        Ok(value) => Err(BackendError::TemperatureRange { value }),
        Err(_) => Err(BackendError::TemperatureNotNumber {
            text: s.to_string(),
        }),
    }
}

/// The known model specs, for error messages.
pub const KNOWN_MODELS: &str = "sim, openai:<name>, anthropic:<name>, replay:<dir>";

/// Builds the model a `--model` spec names: `openai:<name>`, `anthropic:<name>` or
/// `replay:<dir>`, wrapped in a [`Recorder`] when `opts.record` is set. `sim` is the caller's.
pub fn parse_model(spec: &str, opts: &BackendOptions) -> Result<Arc<dyn Model>, BackendError> {
    let spec = spec.trim();
    let (prefix, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let model: Arc<dyn Model> = match prefix {
        "openai" => Arc::new(OpenAiModel::from_env(rest, opts)?),
        "anthropic" => Arc::new(AnthropicModel::from_env(rest, opts)?),
        "replay" => {
            if rest.trim().is_empty() {
                return Err(BackendError::NoCassetteDir);
            }
            Arc::new(ReplayModel::open(Path::new(rest), opts.epoch)?)
        }
        "sim" => return Err(BackendError::Sim),
        _ => {
            return Err(BackendError::UnknownModel {
                spec: spec.to_string(),
            })
        }
    };
    with_recording(model, opts)
}

/// Checks, before anything is created, that the environment holds the API key a `--model` spec
/// needs: `anthropic:*` needs `ANTHROPIC_API_KEY`; `openai:*` needs `OPENAI_API_KEY` unless
/// `OPENAI_BASE_URL` points at another server (local servers need no key). The error names the
/// variable.
pub(crate) fn check_keys(spec: &str) -> Result<(), BackendError> {
    let spec = spec.trim();
    let (prefix, _) = spec.split_once(':').unwrap_or((spec, ""));
    let needed = match prefix {
        "anthropic" => Some(("ANTHROPIC_API_KEY", String::new())),
        "openai" if env_value("OPENAI_BASE_URL").is_none() => Some((
            "OPENAI_API_KEY",
            format!(
                " (it talks to {} as OPENAI_BASE_URL is not set)",
                openai::DEFAULT_BASE_URL
            ),
        )),
        _ => None,
    };
    match needed {
        Some((var, why)) if env_value(var).is_none() => Err(BackendError::MissingKey {
            spec: spec.to_string(),
            var,
            why,
        }),
        _ => Ok(()),
    }
}

/// Wraps `model` in a [`Recorder`] when `opts.record` is set; returns it unchanged otherwise.
pub fn with_recording(
    model: Arc<dyn Model>,
    opts: &BackendOptions,
) -> Result<Arc<dyn Model>, BackendError> {
    match &opts.record {
        Some(dir) => Ok(Arc::new(Recorder::new(
            model,
            dir,
            opts.epoch,
            env_secrets(),
            opts.resume_recording,
        )?)),
        None => Ok(model),
    }
}

/// One provider endpoint as both HTTP backends use it: the model, the URL its requests go to,
/// their headers, and the retrying engine with the provider's in-flight cap.
struct Endpoint {
    model: String,
    url: String,
    headers: Vec<(&'static str, String)>,
    engine: retry::Engine,
    /// Implausible usage figures met so far (the warning is printed for the first only).
    implausible: std::sync::atomic::AtomicU64,
}

impl Endpoint {
    /// Checks the model and base URL and builds the engine. `provider` prefixes names and
    /// messages (`openai`), `path` is appended to the base URL, `keys` are redacted from errors.
    fn new(
        provider: &str,
        model: &str,
        base_url: &str,
        path: &str,
        headers: Vec<(&'static str, String)>,
        keys: Vec<String>,
        opts: &BackendOptions,
    ) -> Result<Endpoint, BackendError> {
        let provider_name = || provider.to_string();
        if model.trim().is_empty() {
            return Err(BackendError::EmptyModelName {
                provider: provider_name(),
            });
        }
        let base = base_url.trim().trim_end_matches('/');
        if base.is_empty() {
            return Err(BackendError::EmptyBaseUrl {
                provider: provider_name(),
            });
        }
        let cap = slots::in_flight_cap_from_env(base, opts.in_flight);
        let semaphore = retry::provider_semaphore(&format!("{provider} {base}"), cap);
        let secrets = secrets_with(keys.into_iter());
        let engine = retry::Engine::new(
            &format!("{provider}:{model}"),
            semaphore,
            opts.retry_policy(),
            secrets,
        )?;
        Ok(Endpoint {
            model: model.to_string(),
            url: format!("{base}{path}"),
            headers,
            engine,
            implausible: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Posts a JSON body and parses the answer with `parse`; a parse failure is a malformed answer.
    async fn call(
        &self,
        body: &serde_json::Value,
        parse: fn(&serde_json::Value) -> Result<harness_core::Response, AnswerError>,
    ) -> Result<harness_core::Response, crate::backends::model::ModelError> {
        let (answer, took) = self
            .engine
            .post_json_timed(&self.url, &self.headers, body)
            .await?;
        let mut resp = parse(&answer).map_err(|m| self.engine.malformed(m.to_string()))?;
        if let Some((field, n)) = resp.usage.as_ref().and_then(|u| u.implausible()) {
            let seen = self
                .implausible
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if seen == 0 {
                crate::progress::warn(&format!(
                    "warning: model {}: the server's usage says {field} = {n}, more than any real context window ({} tokens); not counted: this answer's tokens and cost are foldbench's own count (said once; every such answer is counted so)",
                    self.engine.model(),
                    harness_core::MAX_PLAUSIBLE_TOKENS
                ));
            }
            resp.usage = None;
        }
        unique_call_ids(&mut resp.tool_calls);
        resp.model_ms = Some(u64::try_from(took.as_millis()).unwrap_or(u64::MAX));
        Ok(resp)
    }
}

/// An environment variable's value, when it is set and not blank.
fn env_value(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

/// The non-empty values of [`SECRET_VARS`] in this process's environment.
pub(crate) fn env_secrets() -> Vec<String> {
    secrets_with(std::iter::empty())
}

/// [`env_secrets`] plus `extra`, without empty values.
fn secrets_with(extra: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = SECRET_VARS
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .collect();
    out.extend(extra);
    out.retain(|s| !s.trim().is_empty());
    out.iter_mut().for_each(|s| *s = s.trim().to_string());
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_prefix_lists_known_models() {
        let err = parse_model("gemini:pro", &BackendOptions::default())
            .err()
            .unwrap();
        assert!(matches!(err, BackendError::UnknownModel { .. }), "{err}");
        let err = err.to_string();
        assert!(
            err.contains("openai:<name>") && err.contains("replay:<dir>"),
            "{err}"
        );
        let err = parse_model("replay:", &BackendOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("cassette directory"), "{err}");
        let err = parse_model("replay:/no/such/dir", &BackendOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("does not exist"), "{err}");
        let err = parse_model("openai:", &BackendOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("empty"), "{err}");
    }

    fn call(id: &str, name: &str, args: serde_json::Value) -> harness_core::ToolCall {
        harness_core::ToolCall {
            id: id.into(),
            name: name.into(),
            args,
        }
    }

    #[test]
    fn repeated_and_empty_call_ids_become_unique() {
        let mut calls = vec![
            call("x", "grep", serde_json::json!({})),
            call("x-2", "grep", serde_json::json!({})),
            call("x", "grep", serde_json::json!({})),
            call("", "grep", serde_json::json!({})),
            call("", "grep", serde_json::json!({})),
        ];
        unique_call_ids(&mut calls);
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, vec!["x", "x-2", "x-3", "call", "call-2"]);
    }

    #[test]
    fn unreadable_arguments_and_empty_names_are_named_in_the_error() {
        assert_eq!(
            malformed_call(&call("a", "grep", serde_json::json!({"pattern": "x"}))),
            None
        );
        let e = malformed_call(&call("a", " ", serde_json::json!({}))).unwrap();
        assert!(e.contains("no tool name"), "{e}");
        let bad = openai::parse_arguments("{\"path\": ");
        let e = malformed_call(&call("a", "read_file", bad)).unwrap();
        assert!(e.contains("are not valid JSON (EOF"), "{e}");
        let e = malformed_call(&call("a", "read_file", openai::parse_arguments("[1]"))).unwrap();
        assert!(e.contains("valid JSON but not an object"), "{e}");
    }

    #[test]
    fn keys_are_checked_by_variable_name() {
        // Only the prefixes that need no key, so the test does not depend on the environment.
        assert!(check_keys("sim").is_ok());
        assert!(check_keys("replay:/x").is_ok());
        if std::env::var_os("ANTHROPIC_API_KEY").is_none() {
            let e = check_keys("anthropic:claude").unwrap_err().to_string();
            assert!(e.contains("ANTHROPIC_API_KEY"), "{e}");
        }
    }

    #[test]
    fn replay_and_openai_specs_build() {
        let dir = tempfile::tempdir().unwrap();
        let spec = format!("replay:{}", dir.path().display());
        let m = parse_model(&spec, &BackendOptions::default()).unwrap();
        assert_eq!(m.name(), spec);
        let rec = BackendOptions {
            record: Some(dir.path().join("rec")),
            ..BackendOptions::default()
        };
        let m = parse_model("openai:some-model", &rec).unwrap();
        assert_eq!(m.name(), "openai:some-model");
        assert!(dir.path().join("rec").is_dir());
    }

    #[test]
    fn a_temperature_outside_0_to_2_is_refused_with_what_to_give() {
        assert_eq!(parse_temperature("0").ok(), Some(0.0));
        assert_eq!(parse_temperature(" 0.7 ").ok(), Some(0.7));
        assert_eq!(parse_temperature("2").ok(), Some(2.0));
        let high = parse_temperature("2.5").unwrap_err().to_string();
        assert!(high.contains("outside 0 to 2"), "{high}");
        let neg = parse_temperature("-1").unwrap_err().to_string();
        assert!(neg.contains("outside 0 to 2"), "{neg}");
        let word = parse_temperature("hot").unwrap_err().to_string();
        assert!(word.contains("`hot` is not a number"), "{word}");
        let nan = parse_temperature("NaN").unwrap_err().to_string();
        assert!(nan.contains("outside"), "{nan}");
    }
}
