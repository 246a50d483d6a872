//! `foldbench tasks` (and `list` with no matrix in play): the task specs with their turns,
//! units, scripted tool calls and fixture size; and [`load`], the specs every command that
//! takes task arguments reads.

use std::path::PathBuf;

use harness_runner::tasks::{self, LoadedTask};

use crate::error::{Code, Error};

/// The tasks of the arguments (files, folders, globs or task names; none: the task folder),
/// every problem of every spec printed.
pub fn load(paths: Vec<PathBuf>) -> Result<Vec<LoadedTask>, Error> {
    let paths = tasks::given_or_default(paths)?;
    tasks::load_tasks(&paths)
        .map_err(|problems| crate::error::problems(&problems, "the task specs"))
}

/// Runs `foldbench tasks`.
pub fn cmd(paths: Vec<PathBuf>) -> Result<Code, Error> {
    let tasks = load(paths)?;
    crate::out::line(&tasks::table(&tasks).to_terminal())?;
    Ok(Code::Ok)
}
