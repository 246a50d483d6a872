//! Standard output, checked. Every command prints through here, so a write that fails — a full
//! disk, `/dev/full`, a closed file — is an [`Error::Stdout`] (exit code 1) that says so,
//! never a panic or an exit 0 with the output lost. A closed pipe (`foldbench list | head -1`)
//! stays quiet: `main` restores SIGPIPE's default action, so the process ends as `cat` would;
//! where SIGPIPE is ignored anyway, the broken pipe is not reported either. A standard output
//! closed before foldbench started (`foldbench report RUN >&-`) is an error too, at the first
//! write ([`guard`]).

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::Error;

/// Whether standard output was closed when the process started.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Notes whether standard output is closed, before Rust's runtime starts: it runs from the
/// program's initialisers (`.init_array`), ahead of `main`, because the runtime then puts
/// `/dev/null` on a closed standard descriptor and a closed output can no longer be told from
/// `>/dev/null`. Without this, writes to a closed standard output (`foldbench report RUN >&-`)
/// would go to `/dev/null`: the output lost, and exit 0.
#[allow(unsafe_code)]
extern "C" fn note_closed_stdout() {
    // SAFETY: fcntl(F_GETFD) only reads descriptor 1's flags; it fails with EBADF when closed.
    let closed = unsafe { libc::fcntl(1, libc::F_GETFD) } == -1;
    STDOUT_CLOSED.store(closed, Ordering::Relaxed);
}

/// [`note_closed_stdout`] in the initialisers of every program linking this crate that calls
/// [`guard`] (which names it, so the linker keeps it).
#[allow(unsafe_code)]
#[used]
#[link_section = ".init_array"]
static NOTE_CLOSED_STDOUT: extern "C" fn() = note_closed_stdout;

/// Keeps [`NOTE_CLOSED_STDOUT`] in the program (the binary calls it first): a standard output
/// closed at start is then an [`Error::Stdout`] at its first write.
pub fn guard() {
    std::hint::black_box(&NOTE_CLOSED_STDOUT);
}

/// The error of a write to a standard output that was closed at start.
fn closed() -> Error {
    Error::Stdout(io::Error::other(
        "it was closed when foldbench started (`>&-`); give it a file, a pipe or /dev/null",
    ))
}

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
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Err(closed());
    }
    let mut out = io::stdout().lock();
    checked(out.write_all(bytes).and_then(|()| out.flush()))
}

/// The result of a write to standard output as the binary's: a broken pipe is no error; a
/// standard output closed at start is.
pub fn checked(result: io::Result<()>) -> Result<(), Error> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Err(closed());
    }
    match result {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(Error::Stdout(e)),
        _ => Ok(()),
    }
}
