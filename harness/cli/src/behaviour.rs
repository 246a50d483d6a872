//! `--behaviour-end` on the command line: which end of the behaviour profile's intervals the
//! sim reads (the profile itself is read by `harness_runner::sessions::read_or_shipped`); the
//! name and command a measured profile records (`--behaviour-out`).

use std::path::Path;

use harness_core::behaviour::End;

/// `--behaviour-end`: which end of the profile's intervals the sim reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BehaviourEnd {
    /// The low end.
    Low,
    /// The point estimate.
    Point,
    /// The high end.
    High,
}

impl From<BehaviourEnd> for End {
    fn from(e: BehaviourEnd) -> Self {
        match e {
            BehaviourEnd::Low => End::Low,
            BehaviourEnd::Point => End::Point,
            BehaviourEnd::High => End::High,
        }
    }
}

/// The name a profile written to `path` takes (the file's stem) and the command that measured
/// it (this process's arguments), for `--behaviour-out`.
pub(crate) fn name_and_command(path: &Path) -> (String, String) {
    let name = path
        .file_stem()
        .map_or("measured".into(), |s| s.to_string_lossy().into_owned());
    let command = std::iter::once("foldbench".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ");
    (name, command)
}
