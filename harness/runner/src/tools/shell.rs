//! The `shell` tool: the agent's command run as every shell command of a cell is
//! ([`crate::execution::shell`]), its output and exit status as the text the model sees.

use super::*;
use crate::execution::shell::run_shell_with;
use crate::execution::snapshot::{Known, Snapshot};

pub(super) async fn shell(
    ws_root: &Path,
    a: &Args<'_>,
    limits: &ToolLimits,
    before: Option<Snapshot>,
) -> (ToolOutput, Known) {
    let command = match a.req_str("command") {
        Ok(c) => c,
        Err(e) => return (ToolOutput::err(e, None), Known::unknown()),
    };
    match run_shell_with(ws_root, command, limits.shell_timeout, limits, before).await {
        Ok((run, source, after)) => (
            ToolOutput {
                text: run.render(limits.shell_timeout),
                is_error: run.timed_out,
                target: None,
                cached: source == Source::Hit,
            },
            after,
        ),
        Err(e) => (
            ToolOutput::err(format!("error: could not start `sh`: {e}"), None),
            Known::unknown(),
        ),
    }
}
