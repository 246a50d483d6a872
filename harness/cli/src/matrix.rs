//! The matrix flags: which matrix file and profile to read (`--config`, `--profile`) and which
//! shard to run (`--partition`). What they select is the runner's `harness_runner::plan`.

use std::path::PathBuf;

use harness_config::matrix::Partition;
use harness_runner::plan::MatrixSource;

/// Which matrix file and profile to read.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConfigArgs {
    /// The matrix file (default: ./foldbench.yaml when it exists).
    #[arg(long = "config", value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// The profile of the matrix file: default, ci, nightly, peers or your own (layered on
    /// default).
    #[arg(long)]
    pub profile: Option<String>,
}

impl ConfigArgs {
    /// The file and profile as the runner takes them.
    pub fn source(&self) -> MatrixSource {
        MatrixSource {
            file: self.file.clone(),
            profile: self.profile.clone(),
        }
    }
}

/// The matrix file, the profile and the shard.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct MatrixArgs {
    #[command(flatten)]
    /// File and profile.
    pub config: ConfigArgs,
    /// One shard of the matrix: `hash:K/N` (a cell keeps its shard when cells are added) or
    /// `slice:K/N` (round robin over the matrix order).
    #[arg(long, value_name = "hash:K/N|slice:K/N")]
    pub partition: Option<Partition>,
}
