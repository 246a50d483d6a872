//! The [`Model`] trait the session loop talks to, and the `sim` backend.
//!
//! Backends: `sim` (the simulated agent, here), and the HTTP backends and cassettes in
//! [`crate::backends`].

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use harness_core::judge::Judge;
use harness_core::sim::Sim;
use harness_core::{Request, Response};

/// Why a model call failed. Any of these makes the cell an `error` with the message.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The provider could not be reached or kept failing after the last retry.
    #[error("model {model}: {message}")]
    Transport {
        /// Model name.
        model: String,
        /// What happened, with the status and attempts.
        message: String,
    },
    /// The provider answered with something foldbench cannot read.
    #[error("model {model}: malformed response: {message}")]
    Malformed {
        /// Model name.
        model: String,
        /// What was wrong.
        message: String,
    },
    /// A replayed run met a request with no recorded answer.
    #[error("cassette {dir}: no recorded answer for key {key} (cell {cell}); record the run again with --record")]
    MissingRecording {
        /// Cassette folder.
        dir: String,
        /// The request's key.
        key: String,
        /// The cell.
        cell: String,
    },
    /// Anything else.
    #[error("model {model}: {message}")]
    Other {
        /// Model name.
        model: String,
        /// What happened.
        message: String,
    },
}

impl ModelError {
    /// The message without the `model NAME: ` its display starts with, for a message that
    /// names the model already (a retry warning, a give-up).
    pub(crate) fn detail(&self) -> String {
        match self {
            ModelError::Transport { message, .. } | ModelError::Other { message, .. } => {
                message.clone()
            }
            ModelError::Malformed { message, .. } => format!("malformed response: {message}"),
            other => other.to_string(),
        }
    }
}

/// A boxed future, so the trait stays object-safe.
pub type ModelFuture<'a> = Pin<Box<dyn Future<Output = Result<Response, ModelError>> + Send + 'a>>;

/// Something that answers requests: the sim, an HTTP provider, a cassette.
pub trait Model: Send + Sync {
    /// The model's name as written in the arm (`sim`, `openai:gpt-4o-mini`, …).
    fn name(&self) -> String;

    /// The context window in tokens (the `compact` policy's default window).
    fn window(&self) -> u64 {
        200_000
    }

    /// Answers one request. `cell` names the cell for messages and cassette keys.
    fn respond<'a>(&'a self, req: &'a Request, cell: &'a str) -> ModelFuture<'a>;
}

/// The simulated agent as a [`Model`].
pub struct SimModel {
    sim: Mutex<Sim>,
}

impl SimModel {
    /// Wraps a sim.
    pub fn new(sim: Sim) -> SimModel {
        SimModel {
            sim: Mutex::new(sim),
        }
    }
}

impl Model for SimModel {
    fn name(&self) -> String {
        "sim".to_string()
    }

    fn respond<'a>(&'a self, req: &'a Request, _cell: &'a str) -> ModelFuture<'a> {
        let result = match self.sim.lock() {
            Ok(mut sim) => Ok(sim.respond(req)),
            Err(_) => Err(ModelError::Other {
                model: "sim".into(),
                message: "the simulated agent panicked earlier".into(),
            }),
        };
        Box::pin(async move { result })
    }
}

/// Shared handle to a model.
pub type SharedModel = Arc<dyn Model>;

/// The sim's settings as written in a model label: `sim`, `sim:judge=eager,recheck=0`.
#[derive(Debug, Clone, Copy)]
pub struct SimSettings {
    /// Re-check probability.
    pub recheck: f64,
    /// Judge.
    pub judge: Judge,
}

/// Parses a sim model label.
pub fn parse_sim(label: &str) -> Result<Option<SimSettings>, crate::backends::BackendError> {
    use crate::backends::BackendError;
    let Some(rest) = label.strip_prefix("sim") else {
        return Ok(None);
    };
    let mut s = SimSettings {
        recheck: 0.1,
        judge: Judge::Oracle,
    };
    let rest = match rest.strip_prefix(':') {
        Some(r) => r,
        None if rest.is_empty() => return Ok(Some(s)),
        None => return Ok(None),
    };
    for kv in rest.split(',').filter(|x| !x.is_empty()) {
        match kv.split_once('=') {
            Some(("judge", j)) => {
                s.judge = Judge::parse(j).ok_or_else(|| BackendError::SimJudge(j.to_string()))?
            }
            Some(("recheck", r)) => {
                s.recheck = r
                    .parse::<f64>()
                    .ok()
                    .filter(|x| (0.0..=1.0).contains(x))
                    .ok_or_else(|| BackendError::SimRecheck(r.to_string()))?
            }
            _ => return Err(BackendError::SimSetting(kv.to_string())),
        }
    }
    Ok(Some(s))
}
