//! What the runner's test files share: the repository root and the `foldbench` binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `foldbench` binary of this build (`target/<profile>/foldbench`, beside `deps/`); it is
/// another package's (`harness/cli`), so `cargo test --workspace` builds it.
pub fn binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    dir.join("foldbench")
}
