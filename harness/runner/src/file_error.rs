//! [`FileError`]: a file or folder the runner could not open, read, write, create or lock,
//! with what it was doing, the path and the file system's error as the source. The error types
//! of the run folder, the merge, the judge, the task suite and the pages hold it, so the
//! message reads the same everywhere: `cannot write out/x.json`, caused by `No space left on
//! device`.

use std::io;
use std::path::{Path, PathBuf};

/// A file or folder that could not be opened, read, written, created or locked.
#[derive(Debug, thiserror::Error)]
#[error("cannot {what} {}", path.display())]
pub struct FileError {
    /// What was being done: `open`, `read`, `write`, `create`, `lock`, `copy`, `repair`.
    pub what: &'static str,
    /// The file or folder.
    pub path: PathBuf,
    /// The file system's error.
    #[source]
    pub source: io::Error,
}

impl FileError {
    /// A `map_err` adapter: `fs::write(&p, b).map_err(FileError::on("write", &p))?`.
    pub(crate) fn on<'a>(
        what: &'static str,
        path: &'a Path,
    ) -> impl FnOnce(io::Error) -> FileError + 'a {
        move |source| FileError {
            what,
            path: path.to_path_buf(),
            source,
        }
    }
}
