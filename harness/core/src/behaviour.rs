//! The behaviour profile: what agents do after they lose context, measured on real sessions,
//! as data that the sim and the replay both follow.
//!
//! `foldbench replay … --behaviour-out FILE` measures it (`harness_replay::losses`) and writes
//! it; `--behaviour FILE` reads one back; `foldbench report --behaviour-out` writes a real
//! agent's. The repository ships one, measured from its own fixtures ([`Profile::shipped`]).
//! The format is documented in docs/replay.md ("The behaviour profile").
//!
//! Per kind of loss ([`LossKind`]: a summary in place of what was lost, or nothing), it holds:
//!
//! - how often the model re-fetches what it lost: re-fetch calls per call in the
//!   [`Profile::window_calls`] calls after a loss, the same over equal windows with no loss (the
//!   base rate), and their difference;
//! - [`KindProfile::recover`]: the probability that a lost fact is fetched back *because* it was
//!   lost — of the references to lost content that the summary did not hold, the share a
//!   re-fetch brought back before their use, less the share of references re-fetched in the base
//!   windows, where everything was still in view (ordinary re-reading);
//! - how it does it ([`Means`]: re-read, re-run, search, archive read) and what it fetches
//!   ([`Sizes`]: the re-fetched outputs' tokens);
//! - how often it goes on with no visible source ([`KindProfile::no_source`]);
//! - where it came from ([`Provenance`]).
//!
//! Every rate has a 95% interval ([`Rate`]); [`Profile::at`] gives the profile at either end,
//! for the verdict's sensitivity.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The `format` field every profile carries.
pub const FORMAT: &str = "foldbench-behaviour";
/// The version this build reads and writes.
pub const VERSION: u32 = 1;

/// The profile the repository ships: measured from its own fixtures
/// (`tests/fixtures/compactions`, docs/replay.md says how).
pub(crate) const SHIPPED: &str = include_str!("behaviour/shipped.json");

/// What the host left in place of what was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossKind {
    /// A summary: a compaction's (readable, or held encrypted), a fold result, a strategy's
    /// report.
    Summary,
    /// Nothing but the user's own messages (Codex's replacement history without a summary,
    /// `trim`'s dropped results).
    None,
}

impl LossKind {
    /// Both, in report order.
    pub const ALL: [LossKind; 2] = [LossKind::Summary, LossKind::None];

    /// `summary` or `none`.
    pub fn name(self) -> &'static str {
        match self {
            LossKind::Summary => "summary",
            LossKind::None => "none",
        }
    }
}

/// A rate with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rate {
    /// Over all the data.
    pub point: f64,
    /// The interval's low end.
    pub lo: f64,
    /// The interval's high end.
    pub hi: f64,
}

impl Rate {
    /// A rate with no spread.
    pub fn exact(x: f64) -> Rate {
        Rate {
            point: x,
            lo: x,
            hi: x,
        }
    }

    /// The figure at `end`.
    pub fn at(&self, end: End) -> f64 {
        match end {
            End::Low => self.lo,
            End::Point => self.point,
            End::High => self.hi,
        }
    }
}

/// Where in a rate's interval to read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// The low end.
    Low,
    /// The point estimate.
    Point,
    /// The high end.
    High,
}

impl End {
    /// `low`, `point`, `high`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            End::Low => "low",
            End::Point => "point",
            End::High => "high",
        }
    }
}

/// How re-fetches were made: each kind's share of them (all 0 when none was made).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Means {
    /// Re-reads of a file read before (and not changed since).
    pub reread: f64,
    /// Commands run again, identical.
    pub rerun: f64,
    /// Searches whose output was shown before.
    pub search: f64,
    /// Reads of the transcript or archive.
    pub archive: f64,
}

impl Means {
    /// The shares of counts.
    pub fn of(reread: u64, rerun: u64, search: u64, archive: u64) -> Means {
        let n = (reread + rerun + search + archive) as f64;
        if n == 0.0 {
            return Means::default();
        }
        Means {
            reread: reread as f64 / n,
            rerun: rerun as f64 / n,
            search: search as f64 / n,
            archive: archive as f64 / n,
        }
    }

    /// The four shares, in the order re-read, re-run, search, archive.
    pub fn shares(&self) -> [f64; 4] {
        [self.reread, self.rerun, self.search, self.archive]
    }
}

/// Tokens of the re-fetched outputs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sizes {
    /// Re-fetches measured.
    pub count: u64,
    /// Mean tokens.
    pub mean: f64,
    /// Median tokens.
    pub median: f64,
    /// 90th percentile.
    pub p90: f64,
}

/// The references to pre-loss content in the windows after the losses, by where they came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct References {
    /// Held by the summary (the host's carry-over).
    pub held: u64,
    /// Brought back by a re-fetch.
    pub refetched: u64,
    /// Shown again by a call that was not a re-fetch.
    pub new_output: u64,
    /// Used with no visible source.
    pub no_source: u64,
}

/// What agents do after one kind of loss.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KindProfile {
    /// Losses measured.
    pub losses: u64,
    /// Tool calls in the windows after them.
    pub calls: u64,
    /// Of them, re-fetches.
    pub refetches: u64,
    /// Tool calls in the base windows (no loss before them).
    pub base_calls: u64,
    /// Of them, re-fetches.
    pub base_refetches: u64,
    /// Re-fetches per call after a loss.
    pub refetch_rate: Rate,
    /// Re-fetches per call with no loss: the base rate.
    pub base_rate: Rate,
    /// `refetch_rate − base_rate`.
    pub excess_rate: Rate,
    /// The references to pre-loss content, by source.
    pub references: References,
    /// The references to earlier content in the base windows: `held` is those in view (all
    /// of them but the re-fetched and the newly shown).
    pub base_references: References,
    /// The probability a lost fact is fetched back because it was lost (see the module doc).
    pub recover: Rate,
    /// Of the references to lost content not held by the summary, the share used with no
    /// visible source.
    pub no_source: Rate,
    /// How.
    pub means: Means,
    /// What it fetches.
    pub sizes: Sizes,
}

/// One session a profile was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvenanceSession {
    /// The session's id.
    pub id: String,
    /// Its file, as given to the command.
    pub source: String,
    /// The agent (the transcript's format), or `foldbench` for a run's cell.
    pub agent: String,
    /// The model most of its requests name.
    #[serde(default)]
    pub model: Option<String>,
    /// Its losses.
    pub losses: u64,
}

/// Where a profile came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// The command that measured it.
    pub measured_with: String,
    /// The sessions with a loss or a base window.
    pub sessions: Vec<ProvenanceSession>,
    /// Losses per agent.
    pub agents: BTreeMap<String, u64>,
    /// Losses per model.
    pub models: BTreeMap<String, u64>,
    /// Losses measured.
    pub losses: u64,
    /// Base windows measured.
    pub base_windows: u64,
    /// A word on the data.
    #[serde(default)]
    pub note: String,
}

/// The behaviour profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Always [`FORMAT`].
    pub format: String,
    /// The format's version ([`VERSION`]).
    pub version: u32,
    /// A name the verdicts show.
    pub name: String,
    /// Tool calls measured after each loss.
    pub window_calls: u32,
    /// After a loss with a summary in its place; `None` when none was measured.
    #[serde(default)]
    pub summary: Option<KindProfile>,
    /// After a loss with nothing in its place; `None` when none was measured.
    #[serde(default)]
    pub none: Option<KindProfile>,
    /// Where it came from.
    pub provenance: Provenance,
}

/// A profile that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{column}: {message}; {hint}")]
pub struct ProfileError {
    /// 1-based line.
    pub(crate) line: usize,
    /// 1-based column.
    pub(crate) column: usize,
    /// What is wrong.
    pub(crate) message: String,
    /// What to do.
    pub(crate) hint: &'static str,
}

/// What to do about a bad profile.
pub(crate) const HINT: &str = "write a profile with `foldbench replay SESSIONS --behaviour-out FILE` (the format: docs/replay.md, \"The behaviour profile\")";

impl Profile {
    /// The profile the repository ships (`SHIPPED`).
    pub fn shipped() -> &'static Profile {
        static P: OnceLock<Profile> = OnceLock::new();
        P.get_or_init(|| Profile::parse(SHIPPED).expect("the shipped profile is valid"))
    }

    /// Reads a profile from its JSON text, checking every figure.
    pub fn parse(text: &str) -> Result<Profile, ProfileError> {
        let p: Profile = serde_json::from_str(text).map_err(|e| ProfileError {
            line: e.line(),
            column: e.column(),
            message: e
                .to_string()
                .split(" at line ")
                .next()
                .unwrap_or("")
                .to_string(),
            hint: HINT,
        })?;
        p.check(text)?;
        Ok(p)
    }

    fn check(&self, text: &str) -> Result<(), ProfileError> {
        let fail = |path: &[&str], message: String| {
            let (line, column) = locate(text, path);
            Err(ProfileError {
                line,
                column,
                message,
                hint: HINT,
            })
        };
        if self.format != FORMAT {
            return fail(
                &["format"],
                format!("`format` is {:?}, not {FORMAT:?}", self.format),
            );
        }
        if self.version != VERSION {
            return fail(
                &["version"],
                format!(
                    "version {} is not one this build reads (it reads {VERSION})",
                    self.version
                ),
            );
        }
        if self.window_calls == 0 {
            return fail(&["window_calls"], "`window_calls` is 0".into());
        }
        if self.summary.is_none() && self.none.is_none() {
            return fail(
                &["summary"],
                "the profile holds no loss of either kind (`summary`, `none`)".into(),
            );
        }
        for (name, k) in [("summary", &self.summary), ("none", &self.none)] {
            let Some(k) = k else { continue };
            let probs = [("recover", k.recover), ("no_source", k.no_source)];
            for (field, r) in probs {
                for (end, x) in [("lo", r.lo), ("point", r.point), ("hi", r.hi)] {
                    if !(0.0..=1.0).contains(&x) {
                        return fail(
                            &[name, field, end],
                            format!("{name}.{field}.{end} is {x}, not a probability in [0, 1]"),
                        );
                    }
                }
            }
            let rates = [
                ("recover", k.recover),
                ("no_source", k.no_source),
                ("refetch_rate", k.refetch_rate),
                ("base_rate", k.base_rate),
                ("excess_rate", k.excess_rate),
            ];
            for (field, r) in rates {
                if !(r.lo <= r.point && r.point <= r.hi && r.point.is_finite()) {
                    return fail(
                        &[name, field],
                        format!(
                            "{name}.{field}: lo {} ≤ point {} ≤ hi {} does not hold",
                            r.lo, r.point, r.hi
                        ),
                    );
                }
            }
            let m = k.means.shares();
            let sum: f64 = m.iter().sum();
            if m.iter().any(|x| !(0.0..=1.0).contains(x))
                || (sum != 0.0 && (sum - 1.0).abs() > 1e-5)
            {
                return fail(
                    &[name, "means"],
                    format!("{name}.means: the four shares must each be in [0, 1] and add up to 1 (or all be 0); they add up to {sum}"),
                );
            }
        }
        Ok(())
    }

    /// The profile as its JSON file.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a profile serializes");
        s.push('\n');
        s
    }

    /// What agents do after a loss of `kind`; the other kind's when it was not measured.
    pub fn kind(&self, kind: LossKind) -> &KindProfile {
        let (own, other) = match kind {
            LossKind::Summary => (&self.summary, &self.none),
            LossKind::None => (&self.none, &self.summary),
        };
        own.as_ref()
            .or(other.as_ref())
            .expect("a checked profile holds a kind")
    }

    /// Whether `kind` was measured (else [`Profile::kind`] answers with the other).
    pub fn measured(&self, kind: LossKind) -> bool {
        match kind {
            LossKind::Summary => self.summary.is_some(),
            LossKind::None => self.none.is_some(),
        }
    }

    /// The profile with every rate read at `end` of its interval (the point unchanged when
    /// `end` is [`End::Point`]); its name says which end.
    pub fn at(&self, end: End) -> Profile {
        let mut p = self.clone();
        if end == End::Point {
            return p;
        }
        for k in [&mut p.summary, &mut p.none].into_iter().flatten() {
            for r in [
                &mut k.recover,
                &mut k.no_source,
                &mut k.refetch_rate,
                &mut k.base_rate,
                &mut k.excess_rate,
            ] {
                *r = Rate::exact(r.at(end));
            }
        }
        p.name = format!("{} ({} end)", self.name, end.name());
        p
    }

    /// The shipped profile with both kinds set to recover with probability `recover` (no
    /// interval) by `means`: a what-if, and the fixed behaviour tests reason about.
    pub fn uniform(name: &str, recover: f64, means: Means) -> Profile {
        let mut p = Profile::shipped().clone();
        p.name = name.to_string();
        let kind = p.kind(LossKind::Summary).clone();
        for k in [&mut p.summary, &mut p.none] {
            let mut kp = k.clone().unwrap_or_else(|| kind.clone());
            kp.recover = Rate::exact(recover);
            kp.means = means;
            *k = Some(kp);
        }
        p
    }

    /// The sim's settings of this profile.
    pub fn sim(&self) -> SimBehaviour {
        let of = |k: LossKind| {
            let kp = self.kind(k);
            KindBehaviour {
                recover: kp.recover.point,
                means: kp.means,
                ordered: false,
            }
        };
        SimBehaviour {
            summary: of(LossKind::Summary),
            none: of(LossKind::None),
        }
    }
}

/// What the sim draws from after one kind of loss.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KindBehaviour {
    /// The probability it tries to get a missing fact back (else it goes on without it).
    pub recover: f64,
    /// How it tries first: the shares of re-read, re-run, search and archive read.
    pub(crate) means: Means,
    /// Whether it tries the means by their shares, most used first, with no draw (tests).
    pub(crate) ordered: bool,
}

/// The profile as the sim uses it: small and `Copy`, so the sim's settings stay plain data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimBehaviour {
    /// After a loss with a summary (or fold result) in view.
    pub summary: KindBehaviour,
    /// After a loss with nothing in its place.
    pub none: KindBehaviour,
}

impl SimBehaviour {
    /// The settings for `kind`.
    pub(crate) fn kind(&self, kind: LossKind) -> KindBehaviour {
        match kind {
            LossKind::Summary => self.summary,
            LossKind::None => self.none,
        }
    }

    /// A sim that always tries to get a fact back, by the means `means` gives any weight, most
    /// used first, with no draw (tests that follow one order).
    pub fn ordered(means: Means) -> SimBehaviour {
        let k = KindBehaviour {
            recover: 1.0,
            means,
            ordered: true,
        };
        SimBehaviour {
            summary: k,
            none: k,
        }
    }

    /// A sim that never tries to get a fact back: it goes on without every fact it cannot see.
    pub fn never() -> SimBehaviour {
        let k = KindBehaviour {
            recover: 0.0,
            means: Means::default(),
            ordered: true,
        };
        SimBehaviour {
            summary: k,
            none: k,
        }
    }
}

impl Default for SimBehaviour {
    /// The shipped profile's.
    fn default() -> Self {
        Profile::shipped().sim()
    }
}

/// The 1-based line and column of the last key of `path` in `text`, found as the keys occur in
/// order (`["summary", "recover", "point"]`); the start when a key is not found.
fn locate(text: &str, path: &[&str]) -> (usize, usize) {
    let mut at = 0usize;
    for key in path {
        let needle = format!("\"{key}\"");
        match text[at..].find(&needle) {
            Some(k) => at += k,
            None => break,
        }
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(at, |n| at - n - 1) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_profile_reads_and_round_trips() {
        let p = Profile::shipped();
        assert_eq!(p.format, FORMAT);
        assert_eq!(Profile::parse(&p.to_json()).unwrap(), *p);
    }

    #[test]
    fn a_bad_figure_is_placed_by_line_and_column() {
        let mut p = Profile::shipped().clone();
        let k = p.summary.as_mut().or(p.none.as_mut()).unwrap();
        k.recover.point = 1.5;
        k.recover.hi = 1.6;
        let text = p.to_json();
        let e = Profile::parse(&text).unwrap_err();
        assert!(e.message.contains("not a probability"), "{e}");
        let line = text.lines().nth(e.line - 1).unwrap();
        assert!(
            line.contains("\"point\": 1.5") || line.contains("\"lo\""),
            "{line}"
        );
    }

    #[test]
    fn broken_json_and_unknown_fields_say_where() {
        let e = Profile::parse("{\n  \"format\": \"foldbench-behaviour\",\n  \"versoin\": 1\n}")
            .unwrap_err();
        assert_eq!((e.line, e.column), (3, 11));
        assert!(e.message.contains("unknown field `versoin`"), "{e}");
        let e = Profile::parse("{\n  \"format\": ").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("--behaviour-out"), "{e}");
    }

    #[test]
    fn the_ends_of_the_interval_replace_the_rates() {
        let p = Profile::shipped();
        let lo = p.at(End::Low);
        for k in LossKind::ALL {
            assert_eq!(lo.kind(k).recover.point, p.kind(k).recover.lo);
        }
        assert!(lo.name.ends_with("(low end)"));
    }
}
