//! `foldbench init`: writes the built-in task suite into `DIR/tasks`.

use std::path::Path;

use harness_runner::tasks;

use crate::error::{Code, Error};

/// Runs `foldbench init`.
pub fn cmd(dir: &Path) -> Result<Code, Error> {
    let target = dir.join("tasks");
    let n = tasks::write_embedded(&target).map_err(Error::refused)?;
    crate::out::line(&format!(
        "wrote the task suite ({n} files) to {}; try: foldbench run --tasks {} --seeds 1",
        target.display(),
        target.join("trim-rerun.yaml").display()
    ))?;
    Ok(Code::Ok)
}
