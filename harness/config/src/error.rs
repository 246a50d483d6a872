//! The config crate's errors outside a file's located problems ([`crate::yaml::Problem`]): a
//! profile the matrix file does not define, seeds and a partition as given on the command line.
//!
//! Each error's `Display` is the whole message the command line prints; `source()` gives only
//! a cause the message does not already hold (the number parser's error behind a bad seed).

use std::num::ParseIntError;

use crate::matrix::MAX_SEED_RANGE;

/// Why a profile, seeds or a partition is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MatrixError {
    /// `--profile NAME` names a profile the file does not define.
    #[error("{file} has no profile `{name}`; {}", defines(.defined))]
    NoProfile {
        /// The matrix file, as named in messages.
        file: String,
        /// The profile asked for.
        name: String,
        /// The profiles it defines, in file order.
        defined: Vec<String>,
    },
    /// A range `FIRST-LAST` whose ends are no whole numbers.
    #[error("bad seed range `{range}`")]
    BadSeedRange {
        /// The range as written.
        range: String,
        /// The parser's complaint.
        #[source]
        source: ParseIntError,
    },
    /// A range whose first seed is after its last.
    #[error(
        "bad seed range `{range}`: {first} is after {last}; write FIRST-LAST with FIRST ≤ LAST"
    )]
    SeedsBackwards {
        /// The range as written.
        range: String,
        /// Its first seed.
        first: u64,
        /// Its last seed.
        last: u64,
    },
    /// A range of more than `MAX_SEED_RANGE` seeds.
    #[error("seed range `{range}` gives {}, more than {MAX_SEED_RANGE}, the most one range gives; write a shorter range such as {first}-{}", seeds(.first, .last), .first.saturating_add(MAX_SEED_RANGE - 1))]
    TooManySeeds {
        /// The range as written.
        range: String,
        /// Its first seed.
        first: u64,
        /// Its last seed.
        last: u64,
    },
    /// A seed that is no whole number.
    #[error("bad seed `{seed}`; write 1-3 or 1,2,5")]
    BadSeed {
        /// The seed as written.
        seed: String,
        /// The parser's complaint.
        #[source]
        source: ParseIntError,
    },
    /// No seed at all.
    #[error("no seeds given")]
    NoSeeds,
    /// A seed given twice.
    #[error("seed {0} is given twice")]
    SeedTwice(u64),
    /// A partition not of the form `hash:K/N` or `slice:K/N` with 1 ≤ K ≤ N.
    #[error("bad partition `{0}`; write hash:K/N or slice:K/N with 1 ≤ K ≤ N")]
    BadPartition(String),
}

fn defines(defined: &[String]) -> String {
    if defined.is_empty() {
        "it defines none (add a `profiles:` section)".to_string()
    } else {
        format!("it defines: {}", defined.join(", "))
    }
}

fn seeds(first: &u64, last: &u64) -> String {
    format!("{} seeds", u128::from(last - first) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_to_write_and_keep_the_parsers_cause() {
        use std::error::Error as _;
        let e = crate::matrix::parse_seeds("1-x").unwrap_err();
        assert_eq!(e.to_string(), "bad seed range `1-x`");
        assert_eq!(
            e.source().map(ToString::to_string),
            "x".parse::<u64>().err().map(|p| p.to_string())
        );
        let e = MatrixError::NoProfile {
            file: "f.yaml".into(),
            name: "ci".into(),
            defined: vec![],
        };
        assert_eq!(
            e.to_string(),
            "f.yaml has no profile `ci`; it defines none (add a `profiles:` section)"
        );
        assert!(e.source().is_none());
    }
}
