//! Where the units of a recorded session begin and end: the fold points a judge gives at a card
//! (replay) and the finished units of a request (analyze).
//!
//! - `lexical` (the default; no labels needed): the essay's first rule, [`Judge::Lexical`] — a
//!   prompt of 60 characters or less continues the unit before it; a longer one starts a new unit.
//! - `labels`: the labelled units as they stand at the card, without looking ahead: a turn whose
//!   unit differs from the current turn's is folded. A unit the user comes back to later can be
//!   folded too early (counted as premature).
//! - `oracle`: the labels with hindsight, [`Judge::Oracle`] — only units that no later turn
//!   continues are folded; never premature.
//!
//! A session the labels do not cover is judged `lexical` (the replay says how many).

use harness_core::judge::{self, CardPoint, Judge, LEXICAL_SHORT};
use harness_import::ImportedSession;
use serde::{Deserialize, Serialize};

use crate::labels::Labels;

/// Which judge gives the fold points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum JudgeKind {
    /// The essay's lexical rule.
    #[default]
    Lexical,
    /// The labels, as they stand at the card.
    Labels,
    /// The labels with hindsight.
    Oracle,
}

impl JudgeKind {
    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            JudgeKind::Lexical => "lexical",
            JudgeKind::Labels => "labels",
            JudgeKind::Oracle => "oracle",
        }
    }

    /// Whether the judge reads labels.
    pub fn needs_labels(self) -> bool {
        self != JudgeKind::Lexical
    }
}

/// The human turns of one session as the judges see them.
#[derive(Debug, Clone)]
pub(crate) struct Turns {
    /// The prompt of turn `t` at index `t - 1` (its words, as [`harness_import::HumanTurn::text`]).
    prompts: Vec<String>,
    /// The labelled unit of turn `t` at index `t - 1`, when the session is labelled.
    units: Option<Vec<Option<String>>>,
    /// The judge in effect for this session.
    judge: JudgeKind,
}

impl Turns {
    /// The turns of `session`, judged by `judge` (`lexical` when the labels do not cover it).
    pub(crate) fn new(
        session: &ImportedSession,
        judge: JudgeKind,
        labels: Option<&Labels>,
    ) -> Turns {
        let n = session.last_human_turn() as usize;
        let mut prompts = vec![String::new(); n];
        for h in &session.human_turns {
            if let Some(p) = prompts.get_mut((h.turn as usize).wrapping_sub(1)) {
                p.clone_from(&h.text);
            }
        }
        let units = labels.and_then(|l| l.units_of(session)).map(|by_prompt| {
            let mut units = vec![None; n];
            for (h, u) in session.human_turns.iter().zip(by_prompt) {
                if let Some(slot) = units.get_mut((h.turn as usize).wrapping_sub(1)) {
                    *slot = u;
                }
            }
            units
        });
        let judge = if judge.needs_labels() && units.is_none() {
            JudgeKind::Lexical
        } else {
            judge
        };
        Turns {
            prompts,
            units,
            judge,
        }
    }

    /// The judge in effect (the one asked for, or `lexical` for an unlabelled session).
    pub(crate) fn judge(&self) -> JudgeKind {
        self.judge
    }

    /// Whether the session is labelled.
    pub(crate) fn labelled(&self) -> bool {
        self.units.is_some()
    }

    /// The last turn.
    pub(crate) fn last(&self) -> u32 {
        u32::try_from(self.prompts.len()).unwrap_or(u32::MAX)
    }

    fn prompt(&self, t: u32) -> Option<&str> {
        self.prompts
            .get((t as usize).wrapping_sub(1))
            .map(String::as_str)
    }

    fn unit(&self, t: u32) -> Option<&str> {
        self.units
            .as_ref()?
            .get((t as usize).wrapping_sub(1))?
            .as_deref()
    }

    /// Whether the lexical rule starts a new unit at turn `t`.
    fn starts_lexically(&self, t: u32) -> bool {
        t <= 1
            || self
                .prompt(t)
                .is_none_or(|p| p.chars().count() > LEXICAL_SHORT)
    }

    /// The lexical rule against the labels: the labelled boundaries (turns `t - 1` and `t` both
    /// labelled) and at how many the rule's call (continues or not) is not the labels'; `None`
    /// when the session is not labelled.
    pub(crate) fn lexical_against_labels(&self) -> Option<(usize, usize)> {
        self.units.as_ref()?;
        let (mut boundaries, mut wrong) = (0, 0);
        for t in 2..=self.last() {
            let (Some(before), Some(now)) = (self.unit(t - 1), self.unit(t)) else {
                continue;
            };
            boundaries += 1;
            wrong += usize::from((before == now) == self.starts_lexically(t));
        }
        Some((boundaries, wrong))
    }

    /// The ranges the judge folds at a card offering `offered` during turn `current`.
    pub(crate) fn ranges(&self, offered: &[u32], current: u32) -> Vec<(u32, u32)> {
        let user = |t: u32| self.prompt(t).map(str::to_string);
        let unit = |t: u32| self.unit(t).map(str::to_string);
        let point = CardPoint {
            offered,
            current,
            user: &user,
            unit: &unit,
            last_turn: self.last(),
        };
        match self.judge {
            JudgeKind::Lexical => judge::ranges(Judge::Lexical, &point),
            JudgeKind::Oracle => judge::ranges(Judge::Oracle, &point),
            JudgeKind::Labels => {
                let now = self.unit(current);
                harness_core::judge::runs(offered, |t| {
                    t < current && self.unit(t).is_some_and(|u| Some(u) != now)
                })
            }
        }
    }

    /// Whether a fold of `from..=to` decided during turn `current` is premature: a turn in the
    /// range belongs to a unit that a turn from `current` on continues. `None` without labels.
    pub(crate) fn premature(&self, from: u32, to: u32, current: u32) -> Option<bool> {
        self.units.as_ref()?;
        Some((from..=to).any(|x| {
            self.unit(x)
                .is_some_and(|u| (current..=self.last()).any(|y| self.unit(y) == Some(u)))
        }))
    }

    /// The unit of every turn, as a number the same for the turns of one unit: index `t` for
    /// turn `t` (index 0, turn 0, is its own unit). For `analyze`: which turns' messages form
    /// one unit.
    pub(crate) fn unit_ids(&self) -> Vec<usize> {
        let n = self.prompts.len();
        let mut ids = Vec::with_capacity(n + 1);
        ids.push(0);
        let mut names: Vec<&str> = Vec::new();
        let mut start = 1;
        for t in 1..=self.last() {
            let id = match self.judge {
                JudgeKind::Lexical => {
                    if self.starts_lexically(t) {
                        start = t as usize;
                    }
                    start
                }
                _ => match self.unit(t) {
                    Some(u) => {
                        let k = names.iter().position(|x| *x == u).unwrap_or_else(|| {
                            names.push(u);
                            names.len() - 1
                        });
                        n + 1 + k
                    }
                    None => t as usize,
                },
            };
            ids.push(id);
        }
        ids
    }

    /// Whether the work of each turn `0..=current` is finished when turn `current` is in
    /// progress, indexed by turn (in one pass; for `analyze`). Lexical: the turn lies before the
    /// unit `current` belongs to. With labels: no turn from `current` on has its unit. Turn 0
    /// and the current turn are never finished.
    pub(crate) fn finished_at(&self, current: u32) -> Vec<bool> {
        let mut out = vec![false; current as usize + 1];
        match self.judge {
            JudgeKind::Lexical => {
                let mut start = current;
                while start > 1 && !self.starts_lexically(start) {
                    start -= 1;
                }
                for (t, f) in out.iter_mut().enumerate().take(start as usize).skip(1) {
                    *f = t < current as usize;
                }
            }
            JudgeKind::Labels | JudgeKind::Oracle => {
                let later: std::collections::HashSet<&str> = (current..=self.last())
                    .filter_map(|y| self.unit(y))
                    .collect();
                for (t, f) in out.iter_mut().enumerate().skip(1) {
                    let t = t as u32;
                    *f = t < current && self.unit(t).is_some_and(|u| !later.contains(u));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turns(prompts: &[&str], units: Option<&[&str]>, judge: JudgeKind) -> Turns {
        Turns {
            prompts: prompts.iter().map(|s| s.to_string()).collect(),
            units: units.map(|u| u.iter().map(|s| Some(s.to_string())).collect()),
            judge,
        }
    }

    impl Turns {
        /// Whether the work of turn `t` is finished when turn `current` is in progress, one turn
        /// at a time: the reference [`Turns::finished_at`] must agree with.
        fn finished(&self, t: u32, current: u32) -> bool {
            if t == 0 || t >= current {
                return false;
            }
            match self.judge {
                JudgeKind::Lexical => {
                    let mut start = current;
                    while start > 1 && !self.starts_lexically(start) {
                        start -= 1;
                    }
                    t < start
                }
                JudgeKind::Labels | JudgeKind::Oracle => match self.unit(t) {
                    None => false,
                    Some(u) => !(current..=self.last()).any(|y| self.unit(y) == Some(u)),
                },
            }
        }
    }

    const LONG: &str =
        "please look into why the nightly build fails on the linux runners since monday";

    #[test]
    fn lexical_folds_before_the_current_unit() {
        let t = turns(&[LONG, "ok go on", LONG, "yes"], None, JudgeKind::Lexical);
        assert_eq!(t.ranges(&[1, 2, 3], 4), vec![(1, 2)]);
        assert!(t.finished(2, 4) && !t.finished(3, 4) && !t.finished(0, 4));
        let ids = t.unit_ids();
        assert_eq!(ids[2], ids[1]);
        assert_ne!(ids[3], ids[2]);
        assert_eq!(ids[4], ids[3]);
        assert_eq!(t.finished_at(4), vec![false, true, true, false, false]);
        for c in 0..=4 {
            let one: Vec<bool> = (0..=c).map(|x| t.finished(x, c)).collect();
            assert_eq!(t.finished_at(c), one, "turn {c}");
        }
        assert_eq!(t.premature(1, 2, 4), None);
    }

    #[test]
    fn the_lexical_rule_is_counted_wrong_where_its_call_is_not_the_labels() {
        // Turn 2 short and continues (right), 3 long and new (right), 4 short but new work
        // (wrong), 5 long but continuing (wrong): 2 wrong of 4 boundaries.
        let units: &[&str] = &["a", "a", "b", "c", "c"];
        let t = turns(
            &[LONG, "ok go on", LONG, "yes", LONG],
            Some(units),
            JudgeKind::Lexical,
        );
        assert_eq!(t.lexical_against_labels(), Some((4, 2)));
        let unlabelled = turns(&[LONG, "ok"], None, JudgeKind::Lexical);
        assert_eq!(unlabelled.lexical_against_labels(), None);
    }

    #[test]
    fn labels_fold_now_oracle_waits_for_returning_units() {
        let units: &[&str] = &["a", "b", "c", "a"];
        let labels = turns(&["x", "y", "z", "w"], Some(units), JudgeKind::Labels);
        assert_eq!(labels.ranges(&[1, 2], 3), vec![(1, 2)]);
        assert_eq!(labels.premature(1, 2, 3), Some(true), "a comes back at 4");
        let oracle = turns(&["x", "y", "z", "w"], Some(units), JudgeKind::Oracle);
        assert_eq!(oracle.ranges(&[1, 2], 3), vec![(2, 2)]);
        assert_eq!(oracle.premature(2, 2, 3), Some(false));
        assert!(oracle.finished(2, 3) && !oracle.finished(1, 3));
        for c in 0..=4 {
            let one: Vec<bool> = (0..=c).map(|x| oracle.finished(x, c)).collect();
            assert_eq!(oracle.finished_at(c), one, "turn {c}");
        }
    }
}
