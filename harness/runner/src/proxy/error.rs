//! Why the proxy could not start, stop, record or reach its upstream, and why an upstream
//! answer was not read to its end.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Why the proxy could not start, stop, record or reach its upstream.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The policy does not build.
    #[error(transparent)]
    Policy(#[from] policies::PolicyError),
    /// The listening address cannot be bound.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The socket's error.
        #[source]
        source: std::io::Error,
    },
    /// The bound socket has no address.
    #[error(transparent)]
    Address(std::io::Error),
    /// The HTTP client to the upstream cannot be built.
    #[error("cannot build the HTTP client")]
    HttpClient(#[source] reqwest::Error),
    /// A conversation's saved state does not read (it cannot be brought back into memory).
    #[error("{}:{line}:{column}: not a conversation's state, so the conversation cannot be brought back into memory (its requests get this error)", path.display())]
    State {
        /// `cells/<cell>/state.json`.
        path: std::path::PathBuf,
        /// Where it stops reading.
        line: usize,
        /// The column.
        column: usize,
        /// What is wrong.
        #[source]
        source: serde_json::Error,
    },
    /// A lock of the proxy's state was poisoned by a panic.
    #[error("the {0} was poisoned")]
    Poisoned(&'static str),
    /// A file or folder of the run folder cannot be made, read or written.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// `create`, `open`, `lock`, `write`, `repair`.
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// Another run or proxy holds the run folder's lock.
    #[error("{} is in use by another foldbench run or proxy; stop it, or give another --out", root.display())]
    Busy {
        /// The run folder.
        root: PathBuf,
    },
    /// A record or event that does not encode as JSON.
    #[error(transparent)]
    Encode(#[from] serde_json::Error),
    /// The run folder's records (an earlier proxy's) do not read.
    #[error(transparent)]
    Records(#[from] crate::results::ReadError),
    /// The agent's method is not one the HTTP client takes.
    #[error("method")]
    Method(#[source] hyper::http::method::InvalidMethod),
    /// The upstream cannot be reached (no connection, or it was refused).
    #[error("the upstream {url} could not be reached: {cause}")]
    Unreachable {
        /// The upstream URL.
        url: String,
        /// The client's error and its causes, in words (said once: the client's error repeats
        /// its causes' words, so it is not kept as a source).
        cause: String,
    },
    /// The upstream was reached and answered with something that is not an HTTP answer
    /// (a bad byte in a header, two `Content-Length`s, `Transfer-Encoding` beside
    /// `Content-Length`, headers too large), or closed the connection before its answer.
    #[error("the upstream {url} answered with a malformed HTTP response: {cause}")]
    Malformed {
        /// The upstream URL.
        url: String,
        /// What was wrong, in the client's words (its error and causes, said once).
        cause: String,
    },
    /// The upstream did not answer within the answer's time limit.
    #[error("the upstream {url} did not answer within {} s, the proxy's limit for an answer (--answer-time)", .limit.as_secs())]
    Slow {
        /// The upstream URL.
        url: String,
        /// The limit.
        limit: std::time::Duration,
    },
    /// A splice's archive could not be written in the agent's folder.
    #[error("archive {path}")]
    Archive {
        /// The archive's workspace-relative path.
        path: String,
        /// The write's error.
        #[source]
        source: std::io::Error,
    },
    /// A splice's archive has nowhere to go.
    #[error("archive {path}: no working folder is known (give the proxy --workdir, or an agent whose system prompt names its folder)")]
    NoWorkdir {
        /// The archive's workspace-relative path.
        path: String,
    },
    /// The folder the agent's system prompt names is outside the one archives may go under.
    #[error("archive {path}: the working folder {} that the agent's system prompt names is outside {}, the folder archives may be written under; nothing was written (give the proxy --workdir, or --archives-under a folder that holds it)", named.display(), under.display())]
    Outside {
        /// The archive's workspace-relative path.
        path: String,
        /// The folder named (as it resolves).
        named: PathBuf,
        /// The folder given at start.
        under: PathBuf,
    },
}

impl ProxyError {
    /// An [`ProxyError::Io`] maker for `action` on `path`.
    pub(crate) fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |source| ProxyError::Io {
            action,
            path,
            source,
        }
    }
}

/// Why an upstream answer was not read to its end.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum AnswerError {
    /// It passed the cap.
    #[error("the upstream's answer passed {} MiB, the most the proxy reads of one answer (--answer-cap-mib); it was cut there", .0 >> 20)]
    TooLarge(usize),
    /// It took longer than the time limit.
    #[error("the upstream's answer took longer than {} s, the proxy's limit for an answer (--answer-time); it was cut there", .0.as_secs())]
    TooSlow(std::time::Duration),
    /// The connection broke in the middle.
    #[error("the upstream's answer was cut: {0}")]
    Cut(String),
    /// Its body's framing does not decode (a chunk size that is not one, a length it does not
    /// have).
    #[error("the upstream answered with a malformed HTTP response: {0}")]
    Malformed(String),
}
