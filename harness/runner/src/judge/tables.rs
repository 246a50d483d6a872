//! The boundary-judgement tables (docs/judge.md): models' scores side by side, the host's filter
//! and the lexical rule per source. Pure: aggregates in, a [`Table`] out.

use harness_core::judge::{Aggregate, SourceStats};

use harness_report::render::Table;

fn pct(part: usize, whole: usize) -> String {
    if whole == 0 {
        "–".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

fn count_pct(part: usize, whole: usize) -> String {
    if whole == 0 {
        "–".into()
    } else {
        format!("{part} ({})", pct(part, whole))
    }
}

/// The titled tables `judge build` prints: the host's filter and the lexical rule per source.
pub fn build_tables(stats: &[SourceStats]) -> Vec<(&'static str, Table)> {
    vec![
        ("The host's filter", filter_table(stats)),
        (
            "The lexical rule at labelled turn boundaries",
            lexical_table(stats),
        ),
    ]
}

/// The titled tables `judge run` prints and its page shows: the scores, then
/// [`build_tables`]'s.
pub fn run_tables(aggs: &[Aggregate], stats: &[SourceStats]) -> Vec<(&'static str, Table)> {
    let mut out = vec![("Boundary judgement", scores_table(aggs))];
    out.extend(build_tables(stats));
    out
}

/// The side-by-side table of models' scores.
pub fn scores_table(aggs: &[Aggregate]) -> Table {
    let headers = [
        "model",
        "answer",
        "items",
        "exact",
        "units folded",
        "premature",
        "late/missed",
        "illegal",
        "unparsable",
        "ignored, nothing closed",
        "card tok",
        "answer tok",
        "latency ms",
        "cost $",
        "cut",
        "too long",
        "errors",
    ];
    Table::new(
        &headers,
        aggs.iter()
            .map(|a| {
                let answered = a.items - a.errors - a.too_long;
                vec![
                    a.model.clone(),
                    a.answer.clone(),
                    a.items.to_string(),
                    count_pct(a.exact, answered),
                    count_pct(a.folded_units, a.closed_units),
                    format!(
                        "{} ({} of items)",
                        a.premature,
                        pct(a.items_premature, answered)
                    ),
                    count_pct(a.missed_units, a.closed_units),
                    a.illegal.to_string(),
                    if a.answer.starts_with("text") {
                        count_pct(a.unparsable, answered)
                    } else {
                        "–".into()
                    },
                    count_pct(a.ignored_when_nothing_closed, a.nothing_closed),
                    format!("{:.0}", a.mean_card_tokens),
                    format!("{:.1}", a.mean_output_tokens),
                    format!("{:.0}", a.median_latency_ms),
                    format!("{:.4}", a.cost),
                    a.cut.to_string(),
                    a.too_long.to_string(),
                    a.errors.to_string(),
                ]
            })
            .collect(),
    )
}

/// The host's filter: how many turn boundaries the counting threshold keeps away from the model,
/// and how many of those were unit boundaries after all.
pub fn filter_table(stats: &[SourceStats]) -> Table {
    let headers = [
        "source",
        "sessions",
        "turn boundaries",
        "card shown",
        "kept away",
        "kept away: a unit ended",
        "kept away: plainly continuing",
        "kept away: closed work on the card",
    ];
    Table::new(
        &headers,
        stats
            .iter()
            .map(|s| {
                vec![
                    s.source.clone(),
                    s.sessions.to_string(),
                    s.items.to_string(),
                    s.shown.to_string(),
                    count_pct(s.kept_away, s.items),
                    count_pct(s.kept_boundary, s.kept_labelled),
                    count_pct(s.kept_labelled - s.kept_boundary, s.kept_labelled),
                    count_pct(s.kept_closed, s.kept_away),
                ]
            })
            .collect(),
    )
}

/// The lexical rule (60 characters or less continues) checked against the labels at every
/// labelled turn boundary.
pub fn lexical_table(stats: &[SourceStats]) -> Table {
    let headers = [
        "source",
        "labelled boundaries",
        "lexical wrong",
        "short (≤60 chars)",
        "short: wrong (new work)",
        "long",
        "long: wrong (continues)",
    ];
    Table::new(
        &headers,
        stats
            .iter()
            .map(|s| {
                vec![
                    s.source.clone(),
                    s.boundaries.to_string(),
                    count_pct(s.lexical_wrong, s.boundaries),
                    count_pct(s.short, s.boundaries),
                    count_pct(s.short_wrong, s.short),
                    count_pct(s.long, s.boundaries),
                    count_pct(s.long_wrong, s.long),
                ]
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(t: &Table, row: usize, header: &str) -> String {
        let col = t.headers.iter().position(|h| h == header).unwrap();
        t.rows[row][col].clone()
    }

    #[test]
    fn scores_show_the_answer_mode_and_unparsable_for_text_only() {
        let text = Aggregate {
            model: "openai:m".into(),
            answer: "text+grammar".into(),
            items: 3,
            exact: 1,
            unparsable: 1,
            ..Aggregate::default()
        };
        let baseline = Aggregate {
            model: "oracle".into(),
            answer: "–".into(),
            items: 2,
            exact: 2,
            ..Aggregate::default()
        };
        let t = scores_table(&[text, baseline]);
        assert_eq!(cell(&t, 0, "answer"), "text+grammar");
        assert_eq!(cell(&t, 0, "unparsable"), "1 (33.3%)");
        assert_eq!(cell(&t, 0, "exact"), "1 (33.3%)");
        assert_eq!(cell(&t, 1, "answer"), "–");
        assert_eq!(
            cell(&t, 1, "unparsable"),
            "–",
            "a tool answer cannot be unparsable"
        );
        assert_eq!(cell(&t, 1, "exact"), "2 (100.0%)");
    }

    #[test]
    fn the_filter_and_lexical_tables_count_per_source() {
        let s = SourceStats {
            source: "all".into(),
            items: 5,
            kept_away: 5,
            boundaries: 5,
            lexical_wrong: 4,
            ..SourceStats::default()
        };
        assert_eq!(
            cell(&filter_table(std::slice::from_ref(&s)), 0, "kept away"),
            "5 (100.0%)"
        );
        assert_eq!(cell(&lexical_table(&[s]), 0, "lexical wrong"), "4 (80.0%)");
    }
}
