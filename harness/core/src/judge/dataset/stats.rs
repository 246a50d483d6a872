//! What a dataset says about the host's filter (the counting threshold) and the lexical rule.

use super::*;

/// What a dataset says about the host's filter and the lexical rule, per source.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct SourceStats {
    /// `task`, `claude-code`, ... or `all`.
    pub source: String,
    /// Sessions.
    pub sessions: usize,
    /// Turn boundaries (items).
    pub items: usize,
    /// Items where the counting threshold showed a card.
    pub shown: usize,
    /// Items kept away from the model by the threshold.
    pub kept_away: usize,
    /// Kept-away items with a labelled previous turn.
    pub kept_labelled: usize,
    /// Kept-away items where a unit ended with the previous turn.
    pub kept_boundary: usize,
    /// Kept-away items whose card would have offered a closed unit.
    pub kept_closed: usize,
    /// Labelled boundaries (both turns labelled).
    pub boundaries: usize,
    /// Boundaries where the lexical rule is wrong (continuation or not).
    pub lexical_wrong: usize,
    /// Boundaries whose new message is 60 characters or less.
    pub short: usize,
    /// Of those, where the lexical rule is wrong (a short message that starts new work).
    pub short_wrong: usize,
    /// Boundaries whose new message is longer.
    pub long: usize,
    /// Of those, where the lexical rule is wrong (a long message that continues).
    pub long_wrong: usize,
}

impl SourceStats {
    fn add(&mut self, it: &Item) {
        self.items += 1;
        if it.threshold {
            self.shown += 1;
        } else {
            self.kept_away += 1;
            if let Some(b) = it.gold.boundary {
                self.kept_labelled += 1;
                self.kept_boundary += usize::from(b);
            }
            self.kept_closed += usize::from(!it.gold.closed.is_empty());
        }
        if let Some(cont) = it.gold.continues {
            self.boundaries += 1;
            let short = it.typed(it.current).unwrap_or("").chars().count() <= LEXICAL_SHORT;
            let wrong = short != cont;
            self.lexical_wrong += usize::from(wrong);
            if short {
                self.short += 1;
                self.short_wrong += usize::from(wrong);
            } else {
                self.long += 1;
                self.long_wrong += usize::from(wrong);
            }
        }
    }
}

/// Per-source statistics of a dataset, then `all`.
pub fn dataset_stats(items: &[Item]) -> Vec<SourceStats> {
    let mut by: BTreeMap<String, (SourceStats, BTreeSet<String>)> = BTreeMap::new();
    let mut all = SourceStats {
        source: "all".into(),
        ..SourceStats::default()
    };
    let mut all_sessions = BTreeSet::new();
    for it in items {
        let e = by.entry(it.source.clone()).or_insert_with(|| {
            (
                SourceStats {
                    source: it.source.clone(),
                    ..SourceStats::default()
                },
                BTreeSet::new(),
            )
        });
        e.0.add(it);
        e.1.insert(it.session.clone());
        all.add(it);
        all_sessions.insert((it.source.clone(), it.session.clone()));
    }
    let mut out: Vec<SourceStats> = by
        .into_values()
        .map(|(mut s, sessions)| {
            s.sessions = sessions.len();
            s
        })
        .collect();
    if out.len() > 1 {
        all.sessions = all_sessions.len();
        out.push(all);
    }
    out
}
