//! What a replay's numbers do not say by themselves, stated beside them (terminal, Markdown and
//! the HTML page take the same lines): `fold+strategies` on recorded sessions, `compact`'s
//! mechanical summary, how often the lexical judge is wrong at the labelled boundaries, and that
//! the hidden references of one session depend on the sessions replayed with it.

use std::collections::BTreeSet;

use harness_import::ImportedSession;

use crate::labels::Labels;
use crate::points::{JudgeKind, Turns};
use crate::report::PolicySummary;
use crate::SessionReplay;

/// The lexical rule against the labels: at each labelled boundary (two consecutive human turns
/// both labelled) whether the rule's call — a prompt of 60 characters or less continues the unit,
/// a longer one starts a new one — is the labels' call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LexicalAgreement {
    /// Sessions the labels cover.
    pub(crate) sessions: usize,
    /// Labelled boundaries.
    pub(crate) boundaries: usize,
    /// Boundaries where the lexical rule is wrong.
    pub(crate) wrong: usize,
}

impl LexicalAgreement {
    /// The rule against the labels over `sessions` (those the labels do not cover are skipped).
    pub fn of(sessions: &[ImportedSession], labels: &Labels) -> LexicalAgreement {
        let mut out = LexicalAgreement::default();
        for s in sessions {
            let t = Turns::new(s, JudgeKind::Lexical, Some(labels));
            let Some((boundaries, wrong)) = t.lexical_against_labels() else {
                continue;
            };
            out.sessions += 1;
            out.boundaries += boundaries;
            out.wrong += wrong;
        }
        out
    }
}

/// The projects of the replayed sessions (a session file's folder,
/// [`crate::hidden::index::project`]).
pub(crate) fn projects(replays: &[SessionReplay]) -> usize {
    replays
        .iter()
        .map(|s| crate::hidden::index::project(&s.session.source))
        .collect::<BTreeSet<_>>()
        .len()
}

/// The caveat lines, each only when it applies: `judge` is the judge asked for, `agreement` the
/// lexical rule against the labels given (`None`: no `--labels`).
pub fn caveat_notes(
    replays: &[SessionReplay],
    rows: &[PolicySummary],
    judge: JudgeKind,
    agreement: Option<LexicalAgreement>,
) -> Vec<String> {
    let mut notes = Vec::new();
    let row = |p: &str| rows.iter().find(|r| r.policy == p);
    if let Some(fs) = row("fold+strategies") {
        let extra = row("fold").map_or_else(String::new, |f| {
            format!(
                " (here {} more input tokens than fold in all)",
                harness_core::fold::group_thousands(fs.total_input.saturating_sub(f.total_input))
            )
        });
        notes.push(format!(
            "fold+strategies: a recorded session contains no strategy, so it folds as fold does; it differs only by the strategy tools' definitions in every request{extra}. `replay` leaves it out unless --policy names it."
        ));
    }
    if let Some(c) = rows.iter().find(|r| r.policy.starts_with("compact")) {
        let (made, recorded) = replays
            .iter()
            .filter_map(|s| s.policy(&c.policy))
            .flat_map(|p| &p.compactions)
            .fold((0, 0), |(n, r), e| {
                (n + 1, r + usize::from(e.recorded_summary))
            });
        const MECHANICAL: &str = "the mechanical one (each message quoted up to 2,000 bytes), not a model's, unless the session recorded its own compaction";
        notes.push(if made == 0 {
            format!(
                "{}: had it fired, its summary would be {MECHANICAL}; `foldbench run` has a model write it.",
                c.policy
            )
        } else {
            format!(
                "{}: the summary is {MECHANICAL} ({recorded} of {made} compactions here used a recorded summary); a model's summary is shorter and may lose more; `foldbench run` has a model write it.",
                c.policy
            )
        });
    }
    if judge == JudgeKind::Lexical {
        notes.push(match agreement {
            Some(a) if a.boundaries > 0 => format!(
                "Fold points are the lexical judge's (a prompt of 60 characters or less continues the unit), which is wrong at {} of the {} labelled boundaries of these {} labelled sessions ({:.1}%); --judge labels --labels DIR folds at the labelled units.",
                a.wrong,
                a.boundaries,
                a.sessions,
                100.0 * a.wrong as f64 / a.boundaries as f64
            ),
            _ => "Fold points are the lexical judge's (a prompt of 60 characters or less continues the unit), which is wrong at about half of the labelled boundaries measured (docs/judge.md); --judge labels --labels DIR folds at the labelled units.".to_string(),
        });
    }
    if rows.iter().any(|r| r.hidden_references > 0) {
        let n = projects(replays);
        notes.push(if n < crate::hidden::index::COMMON_MIN_GROUPS {
            format!(
                "Hidden references: with {n} project replayed no string counts as common to the corpus, so a session counts more of them here than inside a replay of several projects; compare a session's counts within one replay."
            )
        } else {
            format!(
                "Hidden references leave out strings common to the {n} projects replayed together (in {} or more of them and {:.0}% or more), so one session's counts depend on the sessions replayed with it (alone, with --session, it counts more); compare a session's counts within one replay.",
                crate::hidden::index::COMMON_MIN_GROUPS
                    .max((crate::hidden::index::COMMON_SHARE * n as f64).ceil() as usize),
                100.0 * crate::hidden::index::COMMON_SHARE
            )
        });
    }
    notes
}
