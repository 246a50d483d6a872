//! The HTTP engine shared by the provider backends: a per-provider cap on requests in flight,
//! retries with exponential backoff and jitter, `Retry-After`, time-outs, and error messages that
//! never carry a secret.
//!
//! What is retried: HTTP 408, 429 and every 5xx status, connection errors, time-outs, and 2xx
//! answers whose body was cut short (the connection closed early, or the JSON ends early). Any
//! other status fails at once. A body larger than [`MAX_RESPONSE_BYTES`] is refused (not
//! retried) without being read to its end. A `Retry-After` header given in seconds (integer or
//! decimal) replaces the computed backoff for that wait, bounded by the policy's
//! [`RetryPolicy::max_retry_wait`] (`--max-retry-wait`, default [`DEFAULT_MAX_RETRY_WAIT`]); the
//! warning printed before the wait says when the bound cut the server's wish. The HTTP-date form
//! is ignored.
//! Between attempts the request holds no slot of the in-flight cap, so a waiting request does not
//! block the others.
//!
//! Secrets: error messages never include request headers or the request URL (the base URL comes
//! from the host environment); bodies of error responses are included with every known secret
//! replaced by `[redacted]` and cut to `ERROR_BODY_LIMIT` characters.
//!
//! Terminals: what a server sent reaches a message only through
//! [`harness_core::printable`]: control characters shown as escapes (`\x1b`), never sent, the
//! text cut, and a gzip or binary body described by its kind and size, never printed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderValue, CONTENT_TYPE};
use reqwest::StatusCode;
use tokio::sync::Semaphore;

use crate::backends::model::ModelError;

/// The largest response body read from a provider, in bytes (32 MiB; a chat answer is a few
/// kilobytes). A larger answer is refused without being read to its end.
pub const MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

/// The largest part of an error response's body read (for the excerpt in the error message).
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// The longest error-response body excerpt kept in an error message, in characters.
pub(crate) const ERROR_BODY_LIMIT: usize = 500;

/// The longest malformed-answer message, in characters (it may quote the server).
const MESSAGE_LIMIT: usize = 2_000;

/// The longest wait a `Retry-After` header imposes unless told otherwise (`--max-retry-wait`).
pub const DEFAULT_MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// The largest `Retry-After` value kept as asked (about 31 years); a larger one is read as this.
const RETRY_AFTER_CEILING: Duration = Duration::from_secs(1_000_000_000);

/// The longest computed backoff between two attempts.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How often and how patiently a request is tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so at most `max_retries + 1` attempts).
    pub max_retries: u32,
    /// The first backoff; each further one doubles, up to `MAX_BACKOFF`, with jitter.
    pub base_delay: Duration,
    /// Time-out of one attempt, from sending the request to the end of the response body.
    pub timeout: Duration,
    /// The longest wait a server's `Retry-After` imposes between two attempts; a longer one is
    /// cut to this, and the warning says so.
    pub max_retry_wait: Duration,
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1` after attempt `attempt` (1-based) failed, without a
    /// `Retry-After`: `base_delay * 2^(attempt-1)`, capped, then jittered into `[d/2, d]`.
    pub(crate) fn backoff(&self, attempt: u32) -> Duration {
        let exp = attempt.saturating_sub(1).min(20);
        let full = self.base_delay.saturating_mul(1u32 << exp).min(MAX_BACKOFF);
        let half = full / 2;
        let span = u64::try_from((full - half).as_nanos()).unwrap_or(u64::MAX);
        let extra = if span == 0 {
            0
        } else {
            jitter_u64() % (span + 1)
        };
        half + Duration::from_nanos(extra)
    }

    /// The wait after attempt `attempt` failed, and the note to print when the server asked for
    /// a longer wait than [`RetryPolicy::max_retry_wait`] allows.
    pub(crate) fn wait(
        &self,
        attempt: u32,
        retry_after: Option<Duration>,
    ) -> (Duration, Option<String>) {
        match retry_after {
            None => (self.backoff(attempt), None),
            Some(asked) if asked > self.max_retry_wait => (
                self.max_retry_wait,
                Some(format!(
                    "the server asked for {} (Retry-After), more than --max-retry-wait {}",
                    secs(asked),
                    secs(self.max_retry_wait)
                )),
            ),
            Some(asked) => (asked, None),
        }
    }
}

/// A duration as `12s` or `0.5s`.
fn secs(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.2}s", d.as_secs_f64())
    }
}

/// A number from a tiny xorshift generator seeded by the clock and a counter; good enough to
/// spread retries of concurrent requests apart.
fn jitter_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut x = nanos ^ COUNTER.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    if x == 0 {
        x = 0x2545_f491_4f6c_dd1d;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

/// The in-flight cap shared by every model of one provider endpoint (`key`, e.g.
/// `openai https://api.openai.com/v1`) built with the same `cap` (a run uses one cap, so in
/// practice: by every model of the endpoint).
pub fn provider_semaphore(key: &str, cap: usize) -> Arc<Semaphore> {
    let cap = cap.max(1);
    let key = format!("{key} cap={cap}");
    static REGISTRY: OnceLock<Mutex<HashMap<String, Arc<Semaphore>>>> = OnceLock::new();
    let registry = REGISTRY.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = match registry.lock() {
        Ok(map) => map,
        Err(poisoned) => poisoned.into_inner(),
    };
    map.entry(key)
        .or_insert_with(|| Arc::new(Semaphore::new(cap)))
        .clone()
}

/// Replaces every secret (non-empty) in `text` with `[redacted]`.
pub(crate) fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for s in secrets.iter().filter(|s| !s.is_empty()) {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), "[redacted]");
        }
    }
    out
}

/// Redacts `text`, then makes it printable: control characters escaped, cut to `limit`
/// characters (the cut marked) — [`harness_core::printable`].
pub(crate) fn excerpt(text: &str, secrets: &[String], limit: usize) -> String {
    harness_core::printable(&redact(text.trim(), secrets), limit)
}

/// [`excerpt`] of a body of bytes; a gzip or binary body is described (kind and size), not
/// shown.
pub(crate) fn excerpt_bytes(body: &[u8], secrets: &[String], limit: usize) -> String {
    harness_core::binary_note(body)
        .unwrap_or_else(|| excerpt(&String::from_utf8_lossy(body), secrets, limit))
}

/// The outcome of one attempt.
enum Attempt {
    /// A 2xx answer with its body.
    Done(Vec<u8>),
    /// Worth another try; `retry_after` if the server asked for a wait.
    Retry {
        reason: String,
        retry_after: Option<Duration>,
    },
    /// Final.
    Fatal(ModelError),
}

/// Posts JSON to one provider with the cap, retries and redaction described in the module docs.
pub struct Engine {
    /// Model name for error messages (`openai:gpt-4o-mini`).
    model: String,
    client: reqwest::Client,
    semaphore: Arc<Semaphore>,
    policy: RetryPolicy,
    secrets: Vec<String>,
}

impl Engine {
    /// An engine for `model` (the name used in errors), sharing `semaphore` with the other models
    /// of its provider; `secrets` are redacted from every message.
    pub fn new(
        model: &str,
        semaphore: Arc<Semaphore>,
        policy: RetryPolicy,
        secrets: Vec<String>,
    ) -> Result<Engine, crate::backends::BackendError> {
        let client = reqwest::Client::builder()
            .timeout(policy.timeout)
            .build()
            .map_err(|source| crate::backends::BackendError::HttpClient {
                model: model.to_string(),
                source,
            })?;
        let secrets = secrets.into_iter().filter(|s| !s.is_empty()).collect();
        Ok(Engine {
            model: model.to_string(),
            client,
            semaphore,
            policy,
            secrets,
        })
    }

    /// The model's name in messages (`openai:gpt-4o-mini`).
    pub(crate) fn model(&self) -> &str {
        &self.model
    }

    /// POSTs `body` to `url` with `headers`, retrying as the module docs say, and returns the
    /// parsed JSON answer.
    pub async fn post_json(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: &serde_json::Value,
    ) -> Result<serde_json::Value, ModelError> {
        self.post_json_timed(url, headers, body)
            .await
            .map(|(v, _)| v)
    }

    /// [`Engine::post_json`], with the time the answering attempt took from sending the request
    /// to the end of the answer: no time waiting for a slot of the in-flight cap, no earlier
    /// attempt, no backoff.
    pub(crate) async fn post_json_timed(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: &serde_json::Value,
    ) -> Result<(serde_json::Value, Duration), ModelError> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| self.other(format!("cannot encode the request: {e}")))?;
        let attempts = self.policy.max_retries.saturating_add(1);
        let mut last = String::new();
        for attempt in 1..=attempts {
            let (outcome, took) = {
                let _permit = self.semaphore.acquire().await.map_err(|_| {
                    self.other("the provider's request limiter was closed".to_string())
                })?;
                let began = std::time::Instant::now();
                let outcome = self
                    .attempt(url, headers, bytes.clone(), attempt, attempts)
                    .await;
                (outcome, began.elapsed())
            };
            let (reason, retry_after) = match outcome {
                Attempt::Done(body) => match self.parse(&body) {
                    Ok(v) => return Ok((v, took)),
                    // A body cut short (the connection closed early) is worth another try.
                    // The reason goes after `model NAME:` in the warning: without its own.
                    Err((err, true)) if attempt < attempts => (err.detail(), None),
                    Err((err, _)) => return Err(err),
                },
                Attempt::Fatal(err) => return Err(err),
                Attempt::Retry {
                    reason,
                    retry_after,
                } => (reason, retry_after),
            };
            if attempt < attempts {
                let (wait, bounded) = self.policy.wait(attempt, retry_after);
                let bounded = bounded.map(|b| format!("; {b}")).unwrap_or_default();
                crate::progress::warn(&format!(
                    "model {}: {} (attempt {attempt} of {attempts}){bounded}; retrying in {:.2}s",
                    self.model,
                    first_line(&reason),
                    wait.as_secs_f64()
                ));
                tokio::time::sleep(wait).await;
            }
            last = reason;
        }
        Err(ModelError::Transport {
            model: self.model.clone(),
            message: format!("gave up after {attempts} attempts: {last}"),
        })
    }

    async fn attempt(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: Vec<u8>,
        attempt: u32,
        attempts: u32,
    ) -> Attempt {
        let mut rb = self
            .client
            .post(url)
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value) in headers {
            rb = rb.header(*name, value.as_str());
        }
        let resp = match rb.body(body).send().await {
            Ok(resp) => resp,
            Err(e) => {
                return Attempt::Retry {
                    reason: self.describe(&e),
                    retry_after: None,
                }
            }
        };
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let cap = if status.is_success() {
            MAX_RESPONSE_BYTES
        } else {
            MAX_ERROR_BODY_BYTES
        };
        let body = read_capped(resp, cap).await;
        if status.is_success() {
            return match body {
                Ok(Capped::Whole(b)) => Attempt::Done(b),
                Ok(Capped::Over) => Attempt::Fatal(self.malformed(format!(
                    "the response body is larger than {} MiB, the most foldbench reads (MAX_RESPONSE_BYTES); not retried",
                    MAX_RESPONSE_BYTES / (1024 * 1024)
                ))),
                // Time-outs and bodies cut short by a closed connection are tried again.
                Err(e) => Attempt::Retry {
                    reason: format!("the response body was cut short: {}", self.describe(&e)),
                    retry_after: None,
                },
            };
        }
        let detail = match body {
            Ok(Capped::Whole(b)) => excerpt_bytes(&b, &self.secrets, ERROR_BODY_LIMIT),
            _ => String::new(),
        };
        let reason = if detail.is_empty() {
            format!("http {status}")
        } else {
            format!("http {status}: {detail}")
        };
        if retryable(status) {
            Attempt::Retry {
                reason,
                retry_after,
            }
        } else {
            Attempt::Fatal(ModelError::Transport {
                model: self.model.clone(),
                message: format!("{reason} (not retried; attempt {attempt} of {attempts})"),
            })
        }
    }

    /// The JSON of a body; on failure the error and whether the body looks cut short (empty, or
    /// JSON that ends early), which is worth another attempt.
    fn parse(&self, body: &[u8]) -> Result<serde_json::Value, (ModelError, bool)> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Err((
                self.malformed("the response body is empty".to_string()),
                true,
            ));
        }
        serde_json::from_slice(body).map_err(|e| {
            let cut = e.is_eof();
            let what = if e.is_eof() {
                "the response body is truncated JSON"
            } else {
                "the response body is not JSON"
            };
            (
                self.malformed(format!(
                    "{what} ({e}); body starts: {}",
                    excerpt_bytes(body, &self.secrets, 200)
                )),
                cut,
            )
        })
    }

    /// A reqwest error in words, without the URL, redacted.
    fn describe(&self, e: &reqwest::Error) -> String {
        let kind = if e.is_timeout() {
            format!(
                "request timed out after {:.1}s",
                self.policy.timeout.as_secs_f64()
            )
        } else if e.is_connect() {
            "connection failed".to_string()
        } else if e.is_body() || e.is_decode() {
            "reading the response body failed".to_string()
        } else {
            "request failed".to_string()
        };
        let mut chain = Vec::new();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            chain.push(s.to_string());
            source = s.source();
        }
        if chain.is_empty() {
            kind
        } else {
            redact(&format!("{kind}: {}", chain.join(": ")), &self.secrets)
        }
    }

    /// A malformed-response error for this model: `message` (which may quote the server)
    /// redacted and made printable.
    pub(crate) fn malformed(&self, message: String) -> ModelError {
        ModelError::Malformed {
            model: self.model.clone(),
            message: excerpt(&message, &self.secrets, MESSAGE_LIMIT),
        }
    }

    fn other(&self, message: String) -> ModelError {
        ModelError::Other {
            model: self.model.clone(),
            message,
        }
    }
}

/// A body read up to a cap.
enum Capped {
    /// The whole body.
    Whole(Vec<u8>),
    /// The body is longer than the cap (reading stopped there).
    Over,
}

/// Reads a response body, stopping as soon as it is known to exceed `cap` bytes (by its
/// `Content-Length` or by what arrived).
async fn read_capped(mut resp: reqwest::Response, cap: usize) -> Result<Capped, reqwest::Error> {
    if resp
        .content_length()
        .is_some_and(|n| n > u64::try_from(cap).unwrap_or(u64::MAX))
    {
        return Ok(Capped::Over);
    }
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if out.len() + chunk.len() > cap {
            return Ok(Capped::Over);
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Capped::Whole(out))
}

fn first_line(s: &str) -> &str {
    let line = s.lines().next().unwrap_or("");
    match line.char_indices().nth(160) {
        Some((at, _)) => &line[..at],
        None => line,
    }
}

/// Whether a status is worth another attempt: 408, 429, 5xx.
pub(crate) fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status.is_server_error()
}

/// A `Retry-After` value in seconds (integer or decimal), as asked; `None` for
/// dates and nonsense. The policy's [`RetryPolicy::max_retry_wait`] bounds the wait itself.
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    if secs.is_finite() && secs >= 0.0 {
        Some(Duration::from_secs_f64(
            secs.min(RETRY_AFTER_CEILING.as_secs_f64()),
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_cap() {
        let p = RetryPolicy {
            max_retries: 4,
            base_delay: Duration::from_millis(100),
            timeout: Duration::from_secs(1),
            max_retry_wait: DEFAULT_MAX_RETRY_WAIT,
        };
        for _ in 0..50 {
            let d1 = p.backoff(1);
            assert!(
                d1 >= Duration::from_millis(50) && d1 <= Duration::from_millis(100),
                "{d1:?}"
            );
            let d3 = p.backoff(3);
            assert!(
                d3 >= Duration::from_millis(200) && d3 <= Duration::from_millis(400),
                "{d3:?}"
            );
            assert!(p.backoff(40) <= MAX_BACKOFF);
        }
    }

    #[test]
    fn retry_after_seconds_only() {
        assert_eq!(parse_retry_after("1"), Some(Duration::from_secs(1)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-3"), None);
        assert_eq!(
            parse_retry_after("100000"),
            Some(Duration::from_secs(100_000))
        );
        assert_eq!(parse_retry_after("1e300"), Some(RETRY_AFTER_CEILING));
    }

    #[test]
    fn a_retry_after_longer_than_the_bound_waits_the_bound_and_says_so() {
        let p = RetryPolicy {
            max_retries: 4,
            base_delay: Duration::from_millis(100),
            timeout: Duration::from_secs(5),
            max_retry_wait: Duration::from_secs(7),
        };
        let (wait, note) = p.wait(1, parse_retry_after("100000"));
        assert_eq!(wait, Duration::from_secs(7));
        let note = note.expect("a note");
        assert!(
            note.contains("asked for 100000s") && note.contains("--max-retry-wait 7s"),
            "{note}"
        );
        assert_eq!(
            p.wait(1, Some(Duration::from_secs(3))),
            (Duration::from_secs(3), None)
        );
        let (backoff, note) = p.wait(1, None);
        assert!(backoff <= Duration::from_millis(100) && note.is_none());
    }

    #[test]
    fn excerpt_redacts_then_truncates() {
        let secrets = vec!["sk-secret".to_string()];
        let body = format!("bad key sk-secret {}", "x".repeat(1000));
        let e = excerpt(&body, &secrets, ERROR_BODY_LIMIT);
        assert!(!e.contains("sk-secret"));
        assert!(e.starts_with("bad key [redacted] xxx"));
        assert!(e.ends_with("… (519 more characters)"), "{e}");
        assert_eq!(excerpt("short", &secrets, 500), "short");
    }

    #[test]
    fn bodies_are_escaped_and_gzip_is_described() {
        let body = b"\x1b]0;pwned\x07\x1b[2J[1/1] ok sk-secret";
        let e = excerpt_bytes(body, &["sk-secret".to_string()], 500);
        assert_eq!(e, "\\x1b]0;pwned\\x07\\x1b[2J[1/1] ok [redacted]");
        let gz = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
        assert_eq!(
            excerpt_bytes(&gz, &[], 500),
            "(a gzip body of 10 bytes, not shown)"
        );
    }

    #[test]
    fn retryable_statuses() {
        assert!(retryable(StatusCode::TOO_MANY_REQUESTS));
        assert!(retryable(StatusCode::INTERNAL_SERVER_ERROR));
        assert!(retryable(StatusCode::from_u16(529).unwrap()));
        assert!(!retryable(StatusCode::BAD_REQUEST));
        assert!(!retryable(StatusCode::UNAUTHORIZED));
    }
}
