//! Real-model backends over HTTP and cassettes (DESIGN §8).
//!
//! - [`openai`]: any OpenAI-compatible chat-completions server with tool calling;
//! - [`anthropic`]: the Messages API with prompt-cache breakpoints;
//! - [`cassette`]: `--record DIR` (a decorator around any model) and `replay:DIR`;
//! - [`retry`]: the HTTP engine both providers share: in-flight cap, retries, redaction.
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

use crate::model::Model;

pub mod anthropic;
pub mod cassette;
pub mod openai;
pub mod retry;

pub use anthropic::AnthropicModel;
pub use cassette::{canonical_request, cassette_key, Recorder, ReplayModel};
pub use openai::OpenAiModel;
pub use retry::RetryPolicy;

/// The argument key under which a tool call's unreadable arguments are kept, raw.
pub const INVALID_ARGUMENTS: &str = "__invalid_arguments";

/// The environment variables whose values are secrets: never written to a cassette, an error
/// message or a log.
pub const SECRET_VARS: &[&str] = &["OPENAI_API_KEY", "ANTHROPIC_API_KEY"];

/// Settings shared by the backends of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendOptions {
    /// `--record DIR`: write every successful exchange to this cassette directory.
    pub record: Option<PathBuf>,
    /// Requests in flight per provider endpoint (default 4).
    pub in_flight: usize,
    /// Time-out of one attempt (default 120 s).
    pub timeout: Duration,
    /// Retries after the first attempt (default 4).
    pub max_retries: u32,
    /// First backoff between attempts; it doubles each time, with jitter (default 500 ms).
    pub base_delay: Duration,
    /// The run's epoch/seed, part of every cassette key (default 0).
    pub epoch: u64,
}

impl Default for BackendOptions {
    fn default() -> BackendOptions {
        BackendOptions {
            record: None,
            in_flight: 4,
            timeout: Duration::from_secs(120),
            max_retries: 4,
            base_delay: Duration::from_millis(500),
            epoch: 0,
        }
    }
}

impl BackendOptions {
    /// The retry policy these options describe.
    pub fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_retries: self.max_retries,
            base_delay: self.base_delay,
            timeout: self.timeout,
        }
    }
}

/// The known model specs, for error messages.
pub const KNOWN_MODELS: &str = "sim, openai:<name>, anthropic:<name>, replay:<dir>";

/// Builds the model a `--model` spec names: `openai:<name>`, `anthropic:<name>` or
/// `replay:<dir>`, wrapped in a [`Recorder`] when `opts.record` is set. `sim` is the caller's.
pub fn parse_model(spec: &str, opts: &BackendOptions) -> Result<Arc<dyn Model>, String> {
    let spec = spec.trim();
    let (prefix, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let model: Arc<dyn Model> = match prefix {
        "openai" => Arc::new(OpenAiModel::from_env(rest, opts)?),
        "anthropic" => Arc::new(AnthropicModel::from_env(rest, opts)?),
        "replay" => {
            if rest.trim().is_empty() {
                return Err(
                    "replay: the cassette directory is missing (write replay:<dir>)".to_string(),
                );
            }
            Arc::new(ReplayModel::open(Path::new(rest), opts.epoch)?)
        }
        "sim" => {
            return Err(
                "the sim model is built by the runner, not by the http backends".to_string(),
            )
        }
        _ => {
            return Err(format!(
                "unknown model {spec:?}; known models: {KNOWN_MODELS}"
            ))
        }
    };
    with_recording(model, opts)
}

/// Wraps `model` in a [`Recorder`] when `opts.record` is set; returns it unchanged otherwise.
pub fn with_recording(
    model: Arc<dyn Model>,
    opts: &BackendOptions,
) -> Result<Arc<dyn Model>, String> {
    match &opts.record {
        Some(dir) => Ok(Arc::new(Recorder::new(
            model,
            dir,
            opts.epoch,
            env_secrets(),
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
    ) -> Result<Endpoint, String> {
        if model.trim().is_empty() {
            return Err(format!(
                "{provider}: the model name is empty (write {provider}:<name>)"
            ));
        }
        let base = base_url.trim().trim_end_matches('/');
        if base.is_empty() {
            return Err(format!("{provider}: the base url is empty"));
        }
        let semaphore = retry::provider_semaphore(&format!("{provider} {base}"), opts.in_flight);
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
        })
    }

    /// Posts a JSON body and parses the answer with `parse`; a parse failure is a malformed answer.
    async fn call(
        &self,
        body: &serde_json::Value,
        parse: fn(&serde_json::Value) -> Result<harness_core::request::Response, String>,
    ) -> Result<harness_core::request::Response, crate::model::ModelError> {
        let answer = self
            .engine
            .post_json(&self.url, &self.headers, body)
            .await?;
        parse(&answer).map_err(|m| self.engine.malformed(m))
    }
}

/// An environment variable's value, when it is set and not blank.
fn env_value(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

/// The non-empty values of [`SECRET_VARS`] in this process's environment.
pub fn env_secrets() -> Vec<String> {
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
        assert!(
            err.contains("openai:<name>") && err.contains("replay:<dir>"),
            "{err}"
        );
        let err = parse_model("replay:", &BackendOptions::default())
            .err()
            .unwrap();
        assert!(err.contains("cassette directory"), "{err}");
        let err = parse_model("replay:/no/such/dir", &BackendOptions::default())
            .err()
            .unwrap();
        assert!(err.contains("does not exist"), "{err}");
        let err = parse_model("openai:", &BackendOptions::default())
            .err()
            .unwrap();
        assert!(err.contains("empty"), "{err}");
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
}
