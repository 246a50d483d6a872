//! The real-session folders the `real_data` tests of `harness-import` and `harness-replay` run
//! on (the replay tests include this file by path).

use std::path::PathBuf;

/// The folders to run on: the in-repository subset (`tests/fixtures/real-sessions`) always, and
/// the full corpus when `FOLDBENCH_DATA` names it. A `FOLDBENCH_DATA` that names no such folder
/// is a failure, not a silent skip.
pub fn data_dirs() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut dirs = vec![root.join("tests/fixtures/real-sessions")];
    let Some(full) = std::env::var_os("FOLDBENCH_DATA").map(PathBuf::from) else {
        println!("note: FOLDBENCH_DATA is not set: the in-repository subset only");
        return dirs;
    };
    assert!(
        full.is_dir(),
        "FOLDBENCH_DATA={} is not a folder: set it to the real-session corpus, or unset it to run on the in-repository subset only",
        full.display()
    );
    dirs.push(full);
    dirs
}
