//! Standard output, checked. Every command prints through here, so a write that fails — a full
//! disk, `/dev/full`, a closed file — is an [`Error::Stdout`] (exit code 1) that says so,
//! never a panic or an exit 0 with the output lost. A closed pipe (`foldbench list | head -1`)
//! stays quiet: `main` restores SIGPIPE's default action, so the process ends as `cat` would;
//! where SIGPIPE is ignored anyway, the broken pipe is not reported either.

use std::io::{self, Write};

use crate::error::Error;

/// Writes `text` to standard output as it is, and flushes it.
pub fn print(text: &str) -> Result<(), Error> {
    write_bytes(text.as_bytes())
}

/// Writes `text` and a newline to standard output, and flushes it.
pub fn line(text: &str) -> Result<(), Error> {
    let mut bytes = Vec::with_capacity(text.len() + 1);
    bytes.extend_from_slice(text.as_bytes());
    bytes.push(b'\n');
    write_bytes(&bytes)
}

/// Writes bytes to standard output and flushes them.
pub fn write_bytes(bytes: &[u8]) -> Result<(), Error> {
    let mut out = io::stdout().lock();
    checked(out.write_all(bytes).and_then(|()| out.flush()))
}

/// The result of a write to standard output as the binary's: a broken pipe is no error.
pub fn checked(result: io::Result<()>) -> Result<(), Error> {
    match result {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(Error::Stdout(e)),
        _ => Ok(()),
    }
}
