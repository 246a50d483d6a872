//! `foldbench validate`: reads task specs and says whether they are valid (every problem with
//! file:line:col otherwise).

use std::path::PathBuf;

use crate::error::{Code, Error};

/// Runs `foldbench validate`.
pub fn cmd(paths: Vec<PathBuf>) -> Result<Code, Error> {
    let named: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let t = crate::tasks::load(paths)?;
    if t.is_empty() {
        return Err(Error::Usage(format!(
            "no task spec found in {}; a task spec is a .yaml or .yml file (foldbench init writes the suite's into tasks/)",
            if named.is_empty() {
                "tasks/".to_string()
            } else {
                named.join(", ")
            }
        )));
    }
    crate::out::line(&format!(
        "{} task spec{} valid",
        t.len(),
        if t.len() == 1 { "" } else { "s" }
    ))?;
    Ok(Code::Ok)
}
