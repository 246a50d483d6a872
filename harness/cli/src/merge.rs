//! `foldbench merge`: join the run directories of one matrix's shards.

use std::path::PathBuf;

use harness_runner::merge;

use crate::error::{Code, Error};

#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The shards' run directories.
    #[arg(required = true, value_name = "SHARD_DIR")]
    pub shards: Vec<PathBuf>,
    /// The merged run directory (new, or empty).
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: PathBuf,
}

/// Runs `foldbench merge`.
pub fn cmd(a: MergeArgs) -> Result<Code, Error> {
    match merge(&a.shards, &a.out) {
        Ok(m) => {
            eprintln!(
                "merged {} shard{}: {} of {} cells → {}",
                m.shards,
                if m.shards == 1 { "" } else { "s" },
                m.cells,
                m.matrix_cells,
                a.out.display()
            );
            if m.missing.is_empty() {
                Ok(Code::Ok)
            } else {
                for id in m.missing.iter().take(20) {
                    eprintln!("missing {id}");
                }
                if m.missing.len() > 20 {
                    eprintln!("… and {} more", m.missing.len() - 20);
                }
                eprintln!(
                    "error: {} of the matrix {} in no shard; did a shard fail or was one left out?",
                    if m.missing.len() == 1 {
                        "1 cell".to_string()
                    } else {
                        format!("{} cells", m.missing.len())
                    },
                    if m.missing.len() == 1 { "is" } else { "are" }
                );
                Ok(Code::Failed)
            }
        }
        Err(e) => Err(Error::Merge(e)),
    }
}
