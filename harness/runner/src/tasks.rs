//! Loading task specs from files and folders, with the file-system checks the pure parser cannot
//! make (the fixture folder exists).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use harness_config::spec;
use harness_config::yaml::Problem;
use harness_core::spec::TaskSpec;

/// Why task spec files could not be found, or the built-in suite could not be written out.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// A folder of specs cannot be listed.
    #[error("cannot read folder {}", dir.display())]
    ReadDir {
        /// The folder.
        dir: PathBuf,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// A path that names no spec file.
    #[error("no task spec at {}{suggestion}: give a .yaml file or a folder of them", path.display())]
    NoSpec {
        /// The path as given.
        path: PathBuf,
        /// ` (did you mean `…`?)` when a file beside it has a close name, else empty.
        suggestion: String,
    },
    /// A file of the suite's name is there with other contents.
    #[error("{} exists and differs from the built-in suite; move it away or pick another folder", path.display())]
    Differs {
        /// The file.
        path: PathBuf,
    },
    /// A folder of the suite cannot be made or a file written.
    #[error(transparent)]
    File(#[from] crate::file_error::FileError),
    /// The unpacked suite's mark of completion cannot be written.
    #[error("cannot write in {}", dir.display())]
    Complete {
        /// The folder being unpacked.
        dir: PathBuf,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// The suite is not in its folder after unpacking.
    #[error("cannot unpack the built-in task suite into {}", dir.display())]
    Unpack {
        /// The folder.
        dir: PathBuf,
    },
}

/// A loaded task and the folder its paths are relative to.
#[derive(Debug, Clone)]
pub struct LoadedTask {
    /// The spec.
    pub spec: Arc<TaskSpec>,
    /// The spec file.
    pub file: PathBuf,
    /// Its folder.
    pub dir: PathBuf,
}

/// ` (did you mean `tasks/x.yaml`?)` when a spec file in the same folder has a close name.
fn sibling_suggestion(p: &std::path::Path) -> String {
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (Some(name), Ok(entries)) = (p.file_name(), std::fs::read_dir(&dir)) else {
        return String::new();
    };
    let names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    match harness_core::closest(&name.to_string_lossy(), names.iter().map(String::as_str)) {
        Some(c) => format!(" (did you mean `{}`?)", dir.join(c).display()),
        None => String::new(),
    }
}

/// The spec files named by `paths` (files as they are; folders: their `*.yaml`/`*.yml`, sorted).
pub fn spec_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, TaskError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|source| TaskError::ReadDir {
                    dir: p.clone(),
                    source,
                })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    f.is_file()
                        && matches!(f.extension().and_then(|x| x.to_str()), Some("yaml" | "yml"))
                })
                .collect();
            files.sort();
            out.extend(files);
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            let matches: Vec<PathBuf> = glob::glob(&p.to_string_lossy())
                .map(|g| g.filter_map(Result::ok).collect())
                .unwrap_or_default();
            if matches.is_empty() {
                return Err(TaskError::NoSpec {
                    path: p.clone(),
                    suggestion: sibling_suggestion(p),
                });
            }
            out.extend(matches);
        }
    }
    Ok(out)
}

/// The largest spec file read: 64 MiB (a 100,000-turn spec is about 17 MB).
pub const MAX_SPEC_BYTES: u64 = 64 << 20;

/// What is wrong with the fixture `repo` of a spec in `dir`, if anything: it must be a folder
/// that resolves inside `dir` — no symbolic link on the way to it (`fixtures/link -> /opt/x`)
/// and none inside it (a fixture holds regular files and folders; a link is never followed, so
/// its copy could not hold what the link points to).
fn fixture_problem(dir: &Path, repo: &str) -> Option<String> {
    let fixture = dir.join(repo);
    let mut at = dir.to_path_buf();
    for part in Path::new(repo).components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&at)
                    .map(|t| format!(" (to {})", t.display()))
                    .unwrap_or_default();
                return Some(format!(
                    "fixture folder `{repo}`: {} is a symbolic link{to}; a fixture must be a real folder inside the tasks folder {} (copy the files there instead)",
                    at.display(),
                    dir.display()
                ));
            }
            Ok(_) => {}
            Err(_) => {
                return Some(format!(
                "fixture folder `{repo}` does not exist (looked for {}); create it or fix `repo`",
                fixture.display()
            ))
            }
        }
    }
    if !std::fs::symlink_metadata(&fixture).is_ok_and(|m| m.is_dir()) {
        return Some(format!(
            "fixture folder `{repo}` is not a folder ({}); make it one or fix `repo`",
            fixture.display()
        ));
    }
    let link = first_link(&fixture)?;
    let to = std::fs::read_link(&link)
        .map(|t| format!(" (to {})", t.display()))
        .unwrap_or_default();
    Some(format!(
        "fixture folder `{repo}` holds a symbolic link, {}{to}; a fixture holds regular files and folders only (copy what it points to, or remove it)",
        link.display()
    ))
}

/// The first symbolic link below `dir` (in name order), links never followed.
fn first_link(dir: &Path) -> Option<PathBuf> {
    let mut entries: Vec<std::fs::DirEntry> = std::fs::read_dir(dir).ok()?.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_symlink() {
            return Some(e.path());
        }
        if ft.is_dir() {
            if let Some(l) = first_link(&e.path()) {
                return Some(l);
            }
        }
    }
    None
}

/// Loads one spec file and checks its fixture folder. Only a regular file is read: a FIFO or a
/// device named as a spec is refused without being opened.
pub fn load_task(file: &Path) -> Result<LoadedTask, Vec<Problem>> {
    let name = file.display().to_string();
    let text = harness_import::read_regular(file, MAX_SPEC_BYTES).map_err(|e| {
        vec![Problem {
            file: name.clone(),
            line: 1,
            col: 1,
            message: format!("cannot read the spec: {e}"),
        }]
    })?;
    let text = String::from_utf8(text).map_err(|_| {
        vec![Problem {
            file: name.clone(),
            line: 1,
            col: 1,
            message: "the spec is not UTF-8 text".into(),
        }]
    })?;
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let loaded = spec::load_with_repo(&name, &text);
    let fixture_problem = loaded.repo.and_then(|(repo, (line, col))| {
        fixture_problem(&dir, &repo).map(|message| Problem {
            file: name.clone(),
            line,
            col,
            message,
        })
    });
    let spec = match loaded.spec {
        Ok(s) => s,
        Err(mut problems) => {
            problems.extend(fixture_problem);
            problems.sort_by_key(|p| (p.line, p.col));
            return Err(problems);
        }
    };
    if let Some(p) = fixture_problem {
        return Err(vec![p]);
    }
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if stem != spec.name {
        return Err(vec![Problem {
            file: name,
            line: 1,
            col: 1,
            message: format!(
                "the task is named `{}` but its file is `{stem}`; make them equal",
                spec.name
            ),
        }]);
    }
    Ok(LoadedTask {
        spec: Arc::new(spec),
        file: file.to_path_buf(),
        dir,
    })
}

/// Loads every spec under `paths`; returns the tasks, or every problem of every spec.
pub fn load_tasks(paths: &[PathBuf]) -> Result<Vec<LoadedTask>, Vec<Problem>> {
    let files = spec_files(paths).map_err(|m| {
        vec![Problem {
            file: paths
                .first()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            line: 1,
            col: 1,
            message: m.to_string(),
        }]
    })?;
    let mut tasks = Vec::new();
    let mut problems = Vec::new();
    for f in &files {
        match load_task(f) {
            Ok(t) => tasks.push(t),
            Err(p) => problems.extend(p),
        }
    }
    let mut names: Vec<&str> = tasks.iter().map(|t| t.spec.name.as_str()).collect();
    names.sort_unstable();
    for w in names.windows(2) {
        if w[0] == w[1] {
            problems.push(Problem {
                file: paths
                    .first()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                line: 1,
                col: 1,
                message: format!("two tasks are named `{}`", w[0]),
            });
        }
    }
    if problems.is_empty() {
        Ok(tasks)
    } else {
        Err(problems)
    }
}

pub use embedded::write_to as write_embedded;

/// The task suite built into the binary (`tasks/` of the checkout it was built from), so an
/// installed `foldbench` works outside a checkout.
pub(crate) mod embedded {
    use std::path::{Path, PathBuf};

    use sha2::{Digest, Sha256};

    use super::TaskError;

    include!(concat!(env!("OUT_DIR"), "/suite.rs"));

    /// Writes the suite into `dir` (which becomes the `tasks/` folder); refuses to write over a
    /// file that is there with other contents.
    pub fn write_to(dir: &Path) -> Result<usize, TaskError> {
        for (rel, bytes) in FILES {
            let path = dir.join(rel);
            if let Ok(old) = std::fs::read(&path) {
                if old != *bytes {
                    return Err(TaskError::Differs { path });
                }
            }
        }
        for (rel, bytes) in FILES {
            let path = dir.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(crate::file_error::FileError::on("create", parent))?;
            }
            if let Err(source) = std::fs::write(&path, bytes) {
                return Err(crate::file_error::FileError::on("write", &path)(source).into());
            }
        }
        Ok(FILES.len())
    }

    /// The folder the suite is unpacked to for a run outside a checkout: under the user's cache
    /// (`$XDG_CACHE_HOME`, else `~/.cache`, else the temporary folder), named by the hash of the
    /// suite so each build's suite has its own and an unpacked one is reused.
    pub(crate) fn unpacked() -> Result<PathBuf, TaskError> {
        let mut h = Sha256::new();
        for (rel, bytes) in FILES {
            h.update(rel.as_bytes());
            h.update([0]);
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        }
        let hash: String = h.finalize()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        let dir = cache.join("foldbench").join(format!("tasks-{hash}"));
        if dir.join(".complete").is_file() {
            return Ok(dir);
        }
        // Unpack beside, then rename: a reader never sees half a suite.
        let staging = cache
            .join("foldbench")
            .join(format!("tasks-{hash}.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        write_to(&staging)?;
        if let Err(source) = std::fs::write(staging.join(".complete"), b"") {
            return Err(TaskError::Complete {
                dir: staging,
                source,
            });
        }
        if std::fs::rename(&staging, &dir).is_err() {
            // Another process unpacked it first.
            let _ = std::fs::remove_dir_all(&staging);
        }
        if dir.join(".complete").is_file() {
            Ok(dir)
        } else {
            Err(TaskError::Unpack { dir })
        }
    }
}

/// The task folder when none is named: `tasks/` under `base` when it exists, else the built-in
/// suite (unpacked under the user's cache; said on standard error).
pub fn default_dir(base: &Path) -> Result<PathBuf, TaskError> {
    let here = base.join("tasks");
    if here.exists() || embedded::FILES.is_empty() {
        return Ok(here);
    }
    let dir = embedded::unpacked()?;
    crate::progress::say(&format!(
        "no tasks/ folder here: using the task suite built into foldbench ({} files, unpacked \
         at {}); `foldbench init` writes it into this folder",
        embedded::FILES.len(),
        dir.display()
    ));
    Ok(dir)
}

/// Why task arguments (spec files, folders, globs or task names) name no spec files.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskPathError {
    /// The task folder cannot be found, or the built-in suite cannot be unpacked
    /// ([`default_dir`]): foldbench's own failure, not the user's input.
    #[error(transparent)]
    Folder(TaskError),
    /// The task folder cannot be listed to find a task by its name.
    #[error("cannot read the task folder {}", dir.display())]
    ReadFolder {
        /// The task folder.
        dir: PathBuf,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// A name that is no task of the task folder.
    #[error(
        "no task named `{name}` in {}{suggestion}; give a task name that `foldbench list` shows \
         or a spec file (tasks/NAME.yaml)",
        dir.display()
    )]
    Unknown {
        /// The name given.
        name: String,
        /// The task folder looked in.
        dir: PathBuf,
        /// ` (did you mean `…`?)` when a task has a close name, else empty.
        suggestion: String,
    },
    /// A path that names no spec file ([`spec_files`]).
    #[error(transparent)]
    Spec(TaskError),
}

impl TaskPathError {
    /// Whether the user is to fix it (a name or a path that names no spec) rather than
    /// foldbench failing to find or unpack its task folder.
    pub fn is_usage(&self) -> bool {
        !matches!(self, TaskPathError::Folder(_))
    }
}

/// The spec paths of task arguments, or the task folder ([`default_dir`] of the current folder)
/// when none is given; see [`resolve`].
pub fn given_or_default(paths: Vec<PathBuf>) -> Result<Vec<PathBuf>, TaskPathError> {
    if paths.is_empty() {
        Ok(vec![
            default_dir(Path::new("")).map_err(TaskPathError::Folder)?
        ])
    } else {
        resolve(paths)
    }
}

/// Task arguments as given, with a bare task name (`trim-rerun`, as `list --task` takes it)
/// resolved to its spec file in the task folder (`tasks/`, else the built-in suite). A name that
/// is no task, or a path that names no spec, is refused with what to give (and no made-up file
/// position).
pub fn resolve(paths: Vec<PathBuf>) -> Result<Vec<PathBuf>, TaskPathError> {
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        match bare_name(&p) {
            Some(name) if !p.exists() => {
                let dir = default_dir(Path::new("")).map_err(TaskPathError::Folder)?;
                out.push(named_in(&dir, name)?);
            }
            _ => out.push(p),
        }
    }
    spec_files(&out).map_err(TaskPathError::Spec)?;
    Ok(out)
}

/// `p` as a task name: one path component, no glob, not a `.yaml`/`.yml` file name.
fn bare_name(p: &Path) -> Option<&str> {
    let s = p.to_str()?;
    let spec_like = matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"));
    (!s.is_empty() && !spec_like && !s.contains(['/', '*', '?', '[']) && s != "." && s != "..")
        .then_some(s)
}

/// The spec file of the task named `name` in the task folder `dir` (a spec's file is named
/// after its task).
fn named_in(dir: &Path, name: &str) -> Result<PathBuf, TaskPathError> {
    let mut names: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .map_err(|source| TaskPathError::ReadFolder {
            dir: dir.to_path_buf(),
            source,
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|f| matches!(f.extension().and_then(|x| x.to_str()), Some("yaml" | "yml")))
        .filter_map(|f| Some((f.file_stem()?.to_str()?.to_string(), f.clone())))
        .collect();
    names.sort();
    if let Some((_, file)) = names.iter().find(|(n, _)| n == name) {
        return Ok(file.clone());
    }
    Err(TaskPathError::Unknown {
        name: name.to_string(),
        dir: dir.to_path_buf(),
        suggestion: harness_core::did_you_mean(name, names.iter().map(|(n, _)| n.as_str())),
    })
}

/// The table `foldbench tasks` and `foldbench list` print: each task with its turns, units,
/// scripted tool calls, fixture size and description.
pub fn table(tasks: &[LoadedTask]) -> harness_report::render::Table {
    harness_report::render::Table {
        headers: [
            "task",
            "turns",
            "units",
            "tool calls",
            "fixture",
            "description",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: tasks
            .iter()
            .map(|t| {
                vec![
                    t.spec.name.clone(),
                    t.spec.turns.len().to_string(),
                    t.spec.units().len().to_string(),
                    t.spec.scripted_tool_calls().to_string(),
                    format!(
                        "{:.1} KB",
                        dir_size(&t.dir.join(&t.spec.repo)) as f64 / 1024.0
                    ),
                    t.spec.description.clone(),
                ]
            })
            .collect(),
    }
}

/// Bytes of the files under `p`, recursively (0 for what cannot be read).
fn dir_size(p: &Path) -> u64 {
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            // Links are not followed (a fixture holds none; `load_task` says so).
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                n += dir_size(&e.path());
            } else if m.is_file() {
                n += m.len();
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_named_as_a_spec_is_refused_without_blocking() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("task.yaml");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(status.success());
        // A folder lists regular files only; a FIFO named directly reaches the loader.
        assert_eq!(
            spec_files(&[dir.path().to_path_buf()]).unwrap(),
            Vec::<PathBuf>::new()
        );
        assert_eq!(
            spec_files(std::slice::from_ref(&fifo)).unwrap(),
            vec![fifo.clone()]
        );
        let (tx, rx) = std::sync::mpsc::channel();
        let f = fifo.clone();
        std::thread::spawn(move || {
            let _ = tx.send(load_task(&f).map(|_| ()));
        });
        let problems = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("load_task returns within 20 s")
            .unwrap_err();
        assert_eq!(
            problems[0].to_string(),
            format!(
                "{0}:1:1: cannot read the spec: {0} is a FIFO, not a regular file",
                fifo.display()
            )
        );
    }

    #[test]
    fn a_bare_name_is_a_task_name_and_a_path_or_glob_is_not() {
        for name in ["trim-rerun", "x.json"] {
            assert_eq!(bare_name(Path::new(name)), Some(name));
        }
        for path in [
            "tasks/x", "x.yaml", "x.yml", "*.yaml", "t?", "[ab]", ".", "..", "",
        ] {
            assert_eq!(bare_name(Path::new(path)), None, "{path}");
        }
    }

    #[test]
    fn a_task_name_finds_its_spec_in_the_folder_or_says_what_is_close() {
        let dir = tempfile::tempdir().expect("tempdir");
        for f in ["trim-rerun.yaml", "fold-unit.yml", "notes.txt"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        assert_eq!(
            named_in(dir.path(), "fold-unit").unwrap(),
            dir.path().join("fold-unit.yml")
        );
        let e = named_in(dir.path(), "trim-rerum").unwrap_err();
        assert!(e.is_usage());
        assert_eq!(
            e.to_string(),
            format!(
                "no task named `trim-rerum` in {}{}; give a task name that `foldbench list` shows \
                 or a spec file (tasks/NAME.yaml)",
                dir.path().display(),
                harness_core::did_you_mean("trim-rerum", ["fold-unit", "trim-rerun"])
            )
        );
        assert!(named_in(dir.path(), "notes").is_err());
        let gone = dir.path().join("gone");
        assert!(matches!(
            named_in(&gone, "x"),
            Err(TaskPathError::ReadFolder { .. })
        ));
    }

    #[test]
    fn an_existing_path_is_kept_as_given() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spec = dir.path().join("t.yaml");
        std::fs::write(&spec, "").unwrap();
        assert_eq!(resolve(vec![spec.clone()]).unwrap(), vec![spec]);
        let missing = dir.path().join("missing.yaml");
        assert!(matches!(
            resolve(vec![missing]),
            Err(TaskPathError::Spec(TaskError::NoSpec { .. }))
        ));
    }
}
