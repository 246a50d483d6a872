//! `--behaviour-end` on the command line: which end of the behaviour profile's intervals the
//! sim reads (the profile itself is read by `harness_runner::sessions::behaviour`).

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
