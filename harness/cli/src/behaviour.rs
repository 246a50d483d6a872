//! The behaviour profile on the command line: `--behaviour FILE` (read, every problem placed),
//! else the profile foldbench ships; `--behaviour-end` for the sim.

use std::path::Path;

use harness_core::behaviour::{End, Profile};

use crate::error::Error;

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

/// The profile of `--behaviour FILE`, else the shipped one; a bad file is refused (exit 2) with
/// its place and what to do.
pub fn profile(path: Option<&Path>) -> Result<Profile, Error> {
    match path {
        Some(p) => harness_runner::sessions::behaviour::read(p).map_err(Error::refused),
        None => Ok(Profile::shipped().clone()),
    }
}

/// How a record names the profile the sim followed: its name, and the end of its intervals
/// when not the point (`fixtures`, `mine at high`).
pub fn describe(profile: Profile, end: BehaviourEnd) -> String {
    match end {
        BehaviourEnd::Point => profile.name,
        BehaviourEnd::Low => format!("{} at low", profile.name),
        BehaviourEnd::High => format!("{} at high", profile.name),
    }
}
