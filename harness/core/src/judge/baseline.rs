//! Boundary judges: which ranges of a card to fold. The simulated agent answers cards with one of
//! these, and the judge benchmark uses them as baselines.

use serde::{Deserialize, Serialize};

/// How a card is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Judge {
    /// Fold exactly the closed units, from the labels.
    #[default]
    Oracle,
    /// Fold everything before the current turn.
    Eager,
    /// The essay's first try: a user message of 60 characters or less continues the previous unit.
    Lexical,
    /// Never fold.
    Never,
}

impl Judge {
    /// Parses `oracle`, `eager`, `lexical`, `never`.
    pub fn parse(s: &str) -> Option<Judge> {
        match s {
            "oracle" => Some(Judge::Oracle),
            "eager" => Some(Judge::Eager),
            "lexical" => Some(Judge::Lexical),
            "never" => Some(Judge::Never),
            _ => None,
        }
    }

    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Judge::Oracle => "oracle",
            Judge::Eager => "eager",
            Judge::Lexical => "lexical",
            Judge::Never => "never",
        }
    }
}

/// The lexical rule's threshold: messages this short continue the previous unit.
pub const LEXICAL_SHORT: usize = 60;

/// What a judge sees at a card point.
pub struct CardPoint<'a> {
    /// The turns the card offers, ascending.
    pub offered: &'a [u32],
    /// The turn in progress.
    pub current: u32,
    /// The user message of a turn (offered turns and the current one).
    pub user: &'a dyn Fn(u32) -> Option<String>,
    /// The gold unit of a turn, when labels exist (any turn of the session).
    pub unit: &'a dyn Fn(u32) -> Option<String>,
    /// The last turn of the session (for the oracle: is a unit continued later?).
    pub last_turn: u32,
}

/// Whether the unit of `turn` is still open at `current`: some turn at or after `current`
/// carries the same label.
pub(crate) fn is_open(p: &CardPoint, turn: u32) -> bool {
    let Some(u) = (p.unit)(turn) else { return true };
    (p.current..=p.last_turn).any(|t| (p.unit)(t).as_deref() == Some(u.as_str()))
}

/// The ranges a judge folds at a card point, in order.
pub fn ranges(judge: Judge, p: &CardPoint) -> Vec<(u32, u32)> {
    let offered: Vec<u32> = p
        .offered
        .iter()
        .copied()
        .filter(|t| *t < p.current)
        .collect();
    if offered.is_empty() {
        return Vec::new();
    }
    match judge {
        Judge::Never => Vec::new(),
        Judge::Eager => vec![(offered[0], offered[offered.len() - 1])],
        Judge::Oracle => runs(&offered, |t| !is_open(p, t)),
        Judge::Lexical => {
            // Segment the offered turns and the current one into units by the rule; everything
            // before the segment the current turn belongs to is closed.
            let short = |t: u32| {
                (p.user)(t)
                    .map(|u| u.chars().count() <= LEXICAL_SHORT)
                    .unwrap_or(false)
            };
            let mut open_start = p.current;
            if short(p.current) {
                // The current turn continues the previous segment: walk back while short.
                let mut t = p.current - 1;
                while offered.contains(&t) {
                    open_start = t;
                    if !short(t) || t == offered[0] {
                        break;
                    }
                    t -= 1;
                }
            }
            runs(&offered, |t| t < open_start)
        }
    }
}

/// Maximal runs of consecutive turns for which `keep` holds.
pub fn runs(turns: &[u32], keep: impl Fn(u32) -> bool) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for &t in turns {
        if !keep(t) {
            continue;
        }
        match out.last_mut() {
            Some((_, b)) if *b + 1 == t => *b = t,
            _ => out.push((t, t)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(
        users: &'static [&'static str],
        units: &'static [&'static str],
        current: u32,
    ) -> Vec<(Judge, Vec<(u32, u32)>)> {
        let offered: Vec<u32> = (1..current).collect();
        let user = move |t: u32| users.get(t as usize - 1).map(|s| s.to_string());
        let unit = move |t: u32| units.get(t as usize - 1).map(|s| s.to_string());
        let p = CardPoint {
            offered: &offered,
            current,
            user: &user,
            unit: &unit,
            last_turn: units.len() as u32,
        };
        [Judge::Oracle, Judge::Eager, Judge::Lexical, Judge::Never]
            .into_iter()
            .map(|j| (j, ranges(j, &p)))
            .collect()
    }

    #[test]
    fn the_seed_example() {
        // login, build, "ok, turn it off" continues build.
        let users: &[&str] = &[
            "the login test fails now and then, find out why, it is annoying everyone on the team",
            "the build takes ages, why? look at the build script and the CI config please",
            "ok, turn it off",
        ];
        let units: &[&str] = &["login", "build", "build"];
        let r = point(users, units, 3);
        assert_eq!(r[0].1, vec![(1, 1)], "oracle folds login only");
        assert_eq!(r[1].1, vec![(1, 2)], "eager folds everything");
        assert_eq!(
            r[2].1,
            vec![(1, 1)],
            "lexical: the short message continues build"
        );
        assert!(r[3].1.is_empty());
    }

    #[test]
    fn oracle_keeps_units_that_return_later() {
        let users: &[&str] = &[
            "a long first message about the login problem we have",
            "build things now please, it is slow",
            "more build",
        ];
        let units: &[&str] = &["login", "build", "build", "login"];
        let r = point(users, units, 3);
        assert!(
            r[0].1.is_empty(),
            "login returns at turn 4, build continues: nothing closed"
        );
        let users2: &[&str] = &["x", "y", "z", "w"];
        let units2: &[&str] = &["a", "b", "a", "c", "c"];
        let r2 = point(users2, units2, 4);
        assert_eq!(r2[0].1, vec![(1, 3)]);
    }

    #[test]
    fn lexical_errs_on_short_new_work() {
        // A short message that starts a new unit: lexical keeps the old one open (a late fold).
        let users: &[&str] = &[
            "please investigate why the nightly job keeps failing on the runners",
            "now fix the README",
        ];
        let units: &[&str] = &["nightly", "readme"];
        let r = point(users, units, 2);
        assert_eq!(r[0].1, vec![(1, 1)]);
        assert!(r[2].1.is_empty());
    }
}
