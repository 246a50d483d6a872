//! The [`Model`] trait the session loop talks to, and the `sim` backend.
//!
//! Backends: `sim` (the simulated agent, here), and the HTTP backends and cassettes in
//! [`crate::backends`].

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use harness_core::request::{Request, Response};
use harness_core::sim::Sim;

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
    pub fn detail(&self) -> String {
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
