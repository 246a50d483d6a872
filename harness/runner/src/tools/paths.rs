//! Paths the tools take: normalised, confined to the workspace, `.git` and hard-linked files refused.

use super::*;

pub(crate) use crate::execution::workspace::{normalize, PathError};

/// Why a path cannot be resolved inside the workspace; its display is the whole text a tool
/// result shows the model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ResolveError {
    /// The path does not normalise (absolute, leaving the root, not UTF-8).
    #[error(transparent)]
    Path(#[from] PathError),
    /// The workspace root itself cannot be resolved.
    #[error("error: the workspace root is not accessible")]
    Root(#[source] io::Error),
    /// A symlink on the way points outside the workspace.
    #[error(
        "error: path `{rel}` resolves through a symlink to outside the workspace; \
         use a path relative to the workspace root"
    )]
    SymlinkOutside {
        /// The path as given.
        rel: String,
    },
    /// A symlink on the way points at nothing, so its target cannot be checked.
    #[error("error: path `{rel}` goes through the symlink `{link}` whose target does not exist")]
    DanglingSymlink {
        /// The path as given.
        rel: String,
        /// The symlink, workspace-relative.
        link: String,
    },
}

/// Resolves a workspace-relative path to an absolute path inside the workspace.
///
/// Refuses absolute paths, paths whose normalisation escapes the root (`..`), and paths that go
/// through a symlink to outside the root (every existing component is resolved; a dangling
/// symlink on the way is refused too, since its target cannot be checked). The part of the path
/// that does not exist yet is appended as is. Paths inside the archive folder are allowed.
pub(crate) fn resolve(ws_root: &Path, rel: &str) -> Result<PathBuf, ResolveError> {
    let norm = normalize(rel)?;
    resolve_normalized(ws_root, rel, &norm)
}

pub(super) fn resolve_normalized(
    ws_root: &Path,
    rel: &str,
    norm: &str,
) -> Result<PathBuf, ResolveError> {
    let root = ws_root.canonicalize().map_err(ResolveError::Root)?;
    let comps: Vec<&str> = if norm == "." {
        Vec::new()
    } else {
        norm.split('/').collect()
    };
    let mut cur = root.clone();
    for (i, comp) in comps.iter().enumerate() {
        let next = cur.join(comp);
        match fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => match next.canonicalize() {
                Ok(target) if target.starts_with(&root) => cur = target,
                Ok(_) => {
                    return Err(ResolveError::SymlinkOutside {
                        rel: rel.to_string(),
                    })
                }
                Err(_) => {
                    return Err(ResolveError::DanglingSymlink {
                        rel: rel.to_string(),
                        link: comps[..=i].join("/"),
                    })
                }
            },
            Ok(_) => cur = next,
            Err(_) => {
                // This component does not exist (or its parent is not a directory): nothing
                // below it can be a symlink; the operation itself will report the problem.
                let mut out = next;
                for c in &comps[i + 1..] {
                    out.push(c);
                }
                return Ok(out);
            }
        }
    }
    Ok(cur)
}

/// Normalises and resolves `rel` for a file tool; on failure returns the error result to hand
/// to the model. Paths into the workspace's `.git` folder are refused, also through a symlink:
/// the file tools read and write the work tree, never the repository (its hooks and config run
/// code).
pub(super) fn resolve_arg(ws_root: &Path, rel: &str) -> Result<(PathBuf, String), ToolOutput> {
    let norm = normalize(rel).map_err(|e| ToolOutput::err(e, None))?;
    let abs = resolve_normalized(ws_root, rel, &norm)
        .map_err(|e| ToolOutput::err(harness_core::one_line(&e), Some(norm.clone())))?;
    let in_git = |p: &Path| p.components().next() == Some(Component::Normal(".git".as_ref()));
    let through_git = ws_root
        .canonicalize()
        .ok()
        .and_then(|root| abs.strip_prefix(root).ok().map(in_git))
        .unwrap_or(false);
    if in_git(Path::new(&norm)) || through_git {
        return Err(ToolOutput::err(
            format!(
                "error: `{rel}` is inside `.git`, which the file tools do not touch; \
                 use the shell's `git` to look at the repository"
            ),
            Some(norm),
        ));
    }
    Ok((abs, norm))
}

/// Refuses to write a file that has more than one hard link: its other names may be outside the
/// workspace, so writing it would change a file there.
pub(super) fn refuse_hard_link(abs: &Path, norm: &str) -> Result<(), ToolOutput> {
    use std::os::unix::fs::MetadataExt;
    match fs::metadata(abs) {
        Ok(m) if m.is_file() && m.nlink() > 1 => Err(ToolOutput::err(
            format!(
                "error: {norm} has {} hard links, and its other names may be outside the \
                 workspace; refusing to write it (write a new file instead)",
                m.nlink()
            ),
            Some(norm.to_string()),
        )),
        _ => Ok(()),
    }
}
