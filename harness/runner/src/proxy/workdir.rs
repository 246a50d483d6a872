//! Where a conversation's archives go: the folder given at start (`--workdir`), else the one the
//! agent's system prompt names on its own line, when it lies under the folder archives may go
//! under (`--archives-under`); never a folder a user's text or a tool's result names.

use std::path::{Path, PathBuf};

use super::conversation::Decoded;
use super::{ProxyConfig, ProxyError};

/// Where a conversation's archives go, as the proxy last found it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Root {
    /// No folder known (none given, none named).
    #[default]
    Unknown,
    /// This folder.
    Known(PathBuf),
    /// The agent named a folder outside the one archives may go under.
    Outside {
        /// The folder named (as it resolves).
        named: PathBuf,
        /// The folder given at start.
        under: PathBuf,
    },
}

impl Root {
    /// The folder, or why there is none, for the archive `path`.
    pub(crate) fn folder(&self, path: &str) -> Result<&Path, ProxyError> {
        match self {
            Root::Known(p) => Ok(p),
            Root::Unknown => Err(ProxyError::NoWorkdir { path: path.into() }),
            Root::Outside { named, under } => Err(ProxyError::Outside {
                path: path.into(),
                named: named.clone(),
                under: under.clone(),
            }),
        }
    }
}

/// Where archives go: the folder given at start (`--workdir`), else the one the agent's system
/// prompt names when it is under the folder archives may go under (`under`, canonical).
pub(super) fn archive_root(cfg: &ProxyConfig, under: &Path, req: &Decoded) -> Root {
    if let Some(w) = &cfg.workdir {
        return Root::Known(w.clone());
    }
    let Some(named) = working_folder(&req.env.system, req) else {
        return Root::Unknown;
    };
    // As it resolves: `..` and links (one planted inside pointing out) taken into account.
    let resolved = std::fs::canonicalize(&named).unwrap_or(named);
    if resolved.starts_with(under) {
        Root::Known(resolved)
    } else {
        Root::Outside {
            named: resolved,
            under: under.to_path_buf(),
        }
    }
}

/// The agent's working folder as its system prompt names it: Claude Code's "Primary working
/// directory: …", a `<cwd>…</cwd>`, in the top-level system prompt or a pinned entry (a
/// `system`/`developer` entry among the messages). Never a user's text, an answer or a tool's
/// result: a file the agent reads does not decide where the proxy writes.
fn working_folder(system: &str, req: &Decoded) -> Option<PathBuf> {
    let pinned = req
        .units
        .iter()
        .flatten()
        .filter(|u| u.kind == harness_wire::UnitKind::Pinned)
        .map(|u| u.raw.get());
    for t in std::iter::once(system).chain(pinned) {
        if let Some((_, rest)) = t.split_once("Primary working directory: ") {
            let line = rest.split(['\n', '\\', '"']).next().unwrap_or("").trim();
            if line.starts_with('/') {
                return Some(PathBuf::from(line));
            }
        }
        if let Some((_, rest)) = t.split_once("<cwd>") {
            if let Some((d, _)) = rest.split_once("</cwd>") {
                if d.trim().starts_with('/') {
                    return Some(PathBuf::from(d.trim()));
                }
            }
        }
    }
    None
}
