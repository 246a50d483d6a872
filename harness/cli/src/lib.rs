//! foldbench's command line as a library: the `foldbench` binary is [`main`], and a program of
//! your own that registers its own policies is [`main_with`] — every command (`run`, `ab`,
//! `replay`, `list`, the matrix file, `--help`, `foldbench policies`) then knows them.
//!
//! ```no_run
//! use foldbench::policies::registry::{Entry, Registry};
//! use foldbench::policies::NonePolicy;
//!
//! fn main() -> std::process::ExitCode {
//!     let mut registry = Registry::builtin();
//!     registry
//!         .register(Entry::new("keep-all", |_, b| Ok(Box::new(NonePolicy::new(b.window)))))
//!         .expect("a new name");
//!     foldbench::main_with(registry)
//! }
//! ```
//!
//! `examples/embed-policy/` in the repository is such a program, built by CI.

// The doc comments of the command-line types are clap's help text, written for a terminal
// (`results/<run-id>`), not rustdoc's HTML.
#![allow(rustdoc::invalid_html_tags)]

mod ab;
mod behaviour;
mod cli;
mod compare;
mod error;
mod fold;
mod format;
mod init;
mod judge;
mod limits;
mod list;
mod matrix;
mod merge;
mod out;
mod policy;
mod proxy;
mod replay;
mod replay_headline;
mod replay_json;
mod replay_losses;
mod replay_subagents;
mod report;
mod run;
mod serve;
mod signals;
mod tasks;
mod validate;
mod view;

pub use harness_core;
pub use policies;

/// The `foldbench` command line with the built-in policies.
pub fn main() -> std::process::ExitCode {
    main_with(policies::Registry::builtin())
}

/// The `foldbench` command line with the policies of `registry` (the built-in ones and your
/// own) and `exec:COMMAND` (a policy as a process): it becomes the registry every command
/// builds policies through.
pub fn main_with(registry: policies::Registry) -> std::process::ExitCode {
    out::guard();
    restore_sigpipe();
    policies::registry::install(harness_runner::exec_policy::with_exec(registry));
    let code = error::exit_code(cli::main());
    // Policy processes kept between sessions end with the command, not with the machine.
    harness_runner::exec_policy::end_idle();
    code
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
