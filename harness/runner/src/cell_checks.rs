//! A cell's checks, run in its final workspace (the part of [`crate::cell`] that runs after
//! the session).

use std::collections::HashMap;
use std::path::Path;

use harness_core::spec::{Check, TaskSpec};
use harness_core::CheckResult;

use crate::execution::snapshot::Known;
use crate::execution::workspace::Workspace;
use crate::tools::{self, ToolLimits};

/// Runs a task's checks in the final workspace.
pub async fn run_checks(
    ws: &Workspace,
    spec: &TaskSpec,
    closings: &HashMap<u32, String>,
    limits: &ToolLimits,
) -> Vec<CheckResult> {
    run_checks_known(ws, spec, closings, limits, Known::unknown()).await
}

/// [`run_checks`] in a workspace whose work tree is `known` (read when it is not; see
/// `snapshot::Known`): each shell check starts from the tree the one before it left.
pub(crate) async fn run_checks_known(
    ws: &Workspace,
    spec: &TaskSpec,
    closings: &HashMap<u32, String>,
    limits: &ToolLimits,
    mut known: Known,
) -> Vec<CheckResult> {
    let mut out = Vec::new();
    // Checks see the work tree and `.git`, not foldbench's archive (see `set_archive_aside`);
    // if it cannot be moved they see it, and the tool cache keys on it as for any command.
    let _aside = ws.set_archive_aside().ok().flatten();
    // The archive is out of sight (or was not there): the checks' keys read `.git` and it again.
    known.forget_meta();
    let timeout = limits.check_timeout;
    for c in &spec.checks {
        let (passed, detail) = match c {
            Check::Shell(cmd) => {
                let ran = crate::execution::shell::run_shell_known(
                    ws.path(),
                    cmd,
                    timeout,
                    limits,
                    std::mem::take(&mut known),
                )
                .await
                .map(|(r, _, after)| {
                    known = after;
                    r
                });
                match ran {
                    Ok(r) if r.success() => (true, String::new()),
                    // The output's end, its workspace paths made relative first: the end of
                    // the absolute text would start at a point that moves with the length of
                    // the workspace's path (its process id's digits).
                    Ok(r) if r.timed_out => (
                        false,
                        format!(
                        "timed out after {}s, the time limit of a check (--tool-timeout, at least \
                         {}s)\n{}",
                        timeout.as_secs_f64(),
                        tools::MIN_CHECK_TIMEOUT.as_secs(),
                        tail(&relative_to(ws.path(), r.output), 2000)
                    ),
                    ),
                    Ok(r) => (
                        false,
                        tail(&relative_to(ws.path(), r.render(timeout)), 2000),
                    ),
                    Err(e) => (false, format!("could not run: {e}")),
                }
            }
            Check::FileContains { path, text } | Check::FileLacks { path, text } => {
                let want = matches!(c, Check::FileContains { .. });
                // As the file tools open files: a regular file only, opened non-blocking (a
                // FIFO planted at the path is refused, never waited on), read in pieces.
                let found = tools::resolve(ws.path(), path)
                    .map_err(|e| harness_core::one_line(&e))
                    .and_then(|p| {
                        tools::file_contains(&p, text)
                            .map_err(|e| format!("cannot read {path}: {e}"))
                    });
                match found {
                    Ok(found) if found == want => (true, String::new()),
                    Ok(_) => (
                        false,
                        format!(
                            "{path} {} {text:?}",
                            if want {
                                "does not contain"
                            } else {
                                "still contains"
                            }
                        ),
                    ),
                    Err(e) => (false, e),
                }
            }
            Check::AnswerContains { turn, text } => {
                let got = closings.get(turn).map(String::as_str).unwrap_or("");
                if got.contains(text.as_str()) {
                    (true, String::new())
                } else {
                    (
                        false,
                        format!(
                            "the closing message of turn {turn} does not contain {text:?}: {got:?}"
                        ),
                    )
                }
            }
        };
        let detail = relative_to(ws.path(), detail);
        out.push(CheckResult {
            label: c.label(),
            passed,
            detail,
        });
    }
    out
}

fn tail(s: &str, n: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    chars[chars.len().saturating_sub(n)..].iter().collect()
}

/// Makes the workspace's absolute paths in a text relative (`/tmp/foldbench-x1y2/src/a.py` →
/// `src/a.py`), so outputs do not depend on the temp folder's random name: transcripts, cassette
/// keys and records stay the same from run to run.
pub fn relative_to(root: &Path, text: String) -> String {
    let prefix = format!("{}/", root.display());
    if text.contains(&prefix) {
        text.replace(&prefix, "")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execution::tool_cache::ToolCache;
    use std::sync::Arc;

    fn task(checks: Vec<Check>) -> TaskSpec {
        TaskSpec {
            name: "t".into(),
            description: String::new(),
            repo: ".".into(),
            setup: vec![],
            network: false,
            cache: true,
            env: vec![],
            turns: vec![],
            checks,
        }
    }

    /// A failed check's detail is the end of its output with the workspace's paths made
    /// relative, whatever the length of the workspace's own path.
    #[tokio::test]
    async fn a_failed_checks_detail_does_not_move_with_the_workspaces_path() {
        let fx = tempfile::tempdir().expect("tempdir");
        std::fs::write(fx.path().join("a.py"), "A = 1\n").expect("write");
        let ws = Workspace::create(fx.path(), false).expect("create");
        let spec = task(vec![Check::Shell(
            "head -c 1990 /dev/zero | tr '\\0' x; echo; echo \"$PWD/a.py failed\"; exit 1".into(),
        )]);
        let got = run_checks(&ws, &spec, &HashMap::new(), &ToolLimits::default()).await;
        let whole = format!("{}\na.py failed\n\n[exit code: 1]", "x".repeat(1990));
        assert!(!got[0].passed);
        assert_eq!(got[0].detail, tail(&whole, 2000));
    }

    #[tokio::test]
    async fn checks_do_not_see_the_archive_and_share_results_across_arms() {
        let fx = tempfile::tempdir().expect("tempdir");
        std::fs::write(fx.path().join("app.py"), "NEW = 1\n").expect("write");
        let limits = ToolLimits {
            cache: Some(Arc::new(ToolCache::new())),
            ..ToolLimits::default()
        };
        // The check a task writes to say the old name is gone; the archive still holds it.
        let spec = task(vec![Check::Shell(
            "test ! -e .foldbench && ! grep -rq OLD_NAME .".into(),
        )]);
        let folded = Workspace::create(fx.path(), false).expect("create");
        std::fs::create_dir_all(folded.archive_dir()).expect("mkdir");
        std::fs::write(
            folded.archive_dir().join("fold-turns-001-002.txt"),
            "OLD_NAME = 1\n",
        )
        .expect("write");
        let plain = Workspace::create(fx.path(), false).expect("create");
        for ws in [&plain, &folded] {
            let got = run_checks(ws, &spec, &HashMap::new(), &limits).await;
            assert!(got[0].passed, "{:?}", got[0]);
        }
        assert!(
            folded
                .archive_dir()
                .join("fold-turns-001-002.txt")
                .is_file(),
            "put back"
        );
        let stats = limits.cache.as_ref().expect("cache").stats();
        assert_eq!(
            (stats.misses, stats.hits),
            (1, 1),
            "the folded arm's check is a hit"
        );
    }
}
