//! The `foldbench` binary: the command line (clap), one module per command, the exit codes.

// The doc comments of the command-line types are clap's help text, written for a terminal
// (`results/<run-id>`), not rustdoc's HTML.
#![allow(rustdoc::invalid_html_tags)]

mod cli;
mod compare;
mod error;
mod judge;
mod matrix;
mod merge;
mod replay;
mod report;

fn main() -> std::process::ExitCode {
    restore_sigpipe();
    error::exit_code(cli::main())
}

/// Rust ignores SIGPIPE, so `println!` into a closed pipe (`foldbench tasks | head -1`) panics.
/// A command-line tool should end quietly instead, as `cat` does: restore the default action.
#[allow(unsafe_code)]
fn restore_sigpipe() {
    // SAFETY: called once at start, before any thread exists; `signal` with SIG_DFL has no other
    // precondition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
