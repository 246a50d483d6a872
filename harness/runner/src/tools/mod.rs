//! The execution of the workspace tools the agent calls (docs/design.md §6; each described once
//! in [`harness_core::tools`]: name, schema, arguments) and the sandbox they run in.
//!
//! Every tool resolves its paths through `resolve`: absolute paths, paths whose normalisation
//! leaves the root (`..`) and paths that go through a symlink to outside the workspace are refused
//! with an error result, never executed; so are paths into `.git`, and writes to a file with more
//! than one hard link (its other names may be outside the workspace). The shell runs `sh -c` in
//! the workspace root inside the [`crate::execution::sandbox::Sandbox`] (bubblewrap when the machine has it), in its own
//! process group (killed as a whole on timeout), with an allow-listed environment
//! (`crate::execution::sandbox::allowed_env`).
//!
//! Tool errors are results the model reads (`ToolOutput::is_error`), never panics or `Err`s.
//!
//! Output formats (task specs' `expect` strings rely on them):
//!
//! - `read_file`: `format!("{:>6}\t{}", lineno, line)` per line, joined with `\n`.
//! - `list_files`: one workspace-relative path per line, sorted.
//! - `grep`: `path:lineno:text` per match, files in sorted order; `no matches` when none.
//! - `edit_file`: `edited PATH`; `write_file`: `wrote N bytes to PATH`.
//! - `shell`: the merged stdout/stderr, then `\n[exit code: N]` when non-zero, or
//!   `\n[killed: timed out after Ns]` on timeout.
//! - Long outputs keep their head and tail around a line
//!   `[… N bytes cut from the middle of the output …]`.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use harness_core::tools::{self, Tool};
use harness_core::{ToolCall, ToolSpec};
use serde_json::Value;

use crate::execution::tool_cache::Source;
use crate::execution::workspace::is_archive_path;

/// The result of one tool call, as the model will see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text of the result.
    pub text: String,
    /// Whether the call failed (bad arguments, refused path, missing file, shell timeout...). A
    /// shell command that exits non-zero is *not* an error: its output is a normal result.
    pub(crate) is_error: bool,
    /// The normalised workspace-relative path the call reads, writes or searches (`.` for
    /// `grep`/`list_files` without a path); `None` for `shell`, unknown tools and paths that
    /// could not be normalised.
    pub(crate) target: Option<String>,
    /// Whether a `shell` result came from the run's tool cache instead of a process.
    pub(crate) cached: bool,
}

impl ToolOutput {
    fn ok(text: String, target: Option<String>) -> Self {
        ToolOutput {
            text,
            is_error: false,
            target,
            cached: false,
        }
    }

    fn err(text: impl std::fmt::Display, target: Option<String>) -> Self {
        ToolOutput {
            text: text.to_string(),
            is_error: true,
            target,
            cached: false,
        }
    }
}

/// The JSON schemas of the workspace tools, from their descriptors
/// ([`harness_core::tools::TOOLS`]), in that order.
pub fn tool_specs() -> Vec<ToolSpec> {
    harness_core::tools::specs()
}

/// Executes one tool call in the workspace at `ws_root`. Never panics on bad input: unknown
/// tools, missing or ill-typed arguments, refused paths and IO failures become error results.
pub async fn execute(ws_root: &Path, call: &ToolCall, limits: &ToolLimits) -> ToolOutput {
    execute_with(ws_root, call, limits, None).await.0
}

/// [`execute`], with the workspace's tool-cache snapshot when the caller has just taken it (a
/// `shell` call then does not take it again); a `shell` call also returns the work tree it
/// left when that is known ([`crate::execution::snapshot::Known`]; unknown for the other tools,
/// whose effect the caller knows).
pub(crate) async fn execute_with(
    ws_root: &Path,
    call: &ToolCall,
    limits: &ToolLimits,
    before: Option<crate::execution::snapshot::Snapshot>,
) -> (ToolOutput, crate::execution::snapshot::Known) {
    let unknown = crate::execution::snapshot::Known::unknown;
    // Some providers hand the arguments over as a JSON string; accept that too.
    let parsed;
    let args = match &call.args {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v) => {
                parsed = v;
                &parsed
            }
            Err(_) => &call.args,
        },
        other => other,
    };
    let a = Args {
        tool: &call.name,
        args,
    };
    match tools::find(&call.name).map(|t| t.tool) {
        Some(Tool::ReadFile) => (read_file(ws_root, &a, limits), unknown()),
        Some(Tool::ListFiles) => (list_files(ws_root, &a, limits), unknown()),
        Some(Tool::Grep) => (grep(ws_root, &a, limits), unknown()),
        Some(Tool::EditFile) => (edit_file(ws_root, &a), unknown()),
        Some(Tool::WriteFile) => (write_file(ws_root, &a), unknown()),
        Some(Tool::Shell) => shell(ws_root, &a, limits, before).await,
        None => (
            ToolOutput::err(
                format!(
                    "error: unknown tool `{}`; the tools are {}",
                    call.name,
                    tools::names().join(", ")
                ),
                None,
            ),
            unknown(),
        ),
    }
}

/// Why a call's argument cannot be used; its display is the whole text a tool result shows the
/// model, naming the tool and the argument.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ArgError {
    /// A required string argument is missing or not a string.
    #[error("error: {tool} needs a string argument `{key}`")]
    MissingString {
        /// The tool.
        tool: String,
        /// The argument.
        key: String,
    },
    /// An optional argument is given but is not a string.
    #[error("error: {tool} argument `{key}` must be a string")]
    NotString {
        /// The tool.
        tool: String,
        /// The argument.
        key: String,
    },
    /// An optional argument is given but is not a non-negative integer.
    #[error("error: {tool} argument `{key}` must be a non-negative integer")]
    NotCount {
        /// The tool.
        tool: String,
        /// The argument.
        key: String,
    },
}

/// Typed access to a call's arguments, with error texts that name the tool and the argument.
struct Args<'a> {
    tool: &'a str,
    args: &'a Value,
}

impl<'a> Args<'a> {
    fn get(&self, key: &str) -> Option<&'a Value> {
        match self.args.get(key) {
            None | Some(Value::Null) => None,
            Some(v) => Some(v),
        }
    }

    fn req_str(&self, key: &str) -> Result<&'a str, ArgError> {
        match self.get(key) {
            Some(Value::String(s)) => Ok(s),
            _ => Err(ArgError::MissingString {
                tool: self.tool.to_string(),
                key: key.to_string(),
            }),
        }
    }

    fn opt_str(&self, key: &str) -> Result<Option<&'a str>, ArgError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(ArgError::NotString {
                tool: self.tool.to_string(),
                key: key.to_string(),
            }),
        }
    }

    fn opt_uint(&self, key: &str) -> Result<Option<u64>, ArgError> {
        let bad = || ArgError::NotCount {
            tool: self.tool.to_string(),
            key: key.to_string(),
        };
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(v) => Ok(Some(v)),
                // Accept whole floats such as 10.0.
                None => match n.as_f64() {
                    Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64 => {
                        Ok(Some(f as u64))
                    }
                    _ => Err(bad()),
                },
            },
            Some(Value::String(s)) => s.trim().parse::<u64>().map(Some).map_err(|_| bad()),
            Some(_) => Err(bad()),
        }
    }
}

mod files;
mod paths;
mod shell;

pub(crate) use crate::execution::output::cap_output;
use crate::execution::output::*;
pub use crate::execution::shell::{ToolLimits, MIN_CHECK_TIMEOUT};
pub(crate) use files::file_contains;
use files::*;
pub(crate) use paths::resolve;
use paths::*;
use shell::*;

#[cfg(test)]
mod file_tests;
#[cfg(test)]
mod tests;
