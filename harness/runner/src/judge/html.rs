//! The page of `foldbench judge run`: the score tables, then one group per session with a
//! drill-down of its card points — the user's message, the card, the gold, and what every judge
//! answered with its verdicts.

use std::collections::BTreeMap;

use harness_core::judge::{Item, JudgedRecord};
use harness_report::html::{cut, Block, Group, Page};
use harness_report::render::Table;

fn ranges(r: &[(u32, u32)]) -> String {
    r.iter()
        .map(|(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}–{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn answer(r: &JudgedRecord) -> String {
    if r.score.unparsable {
        return format!("unparsable: {:?}", cut(&r.text, 80));
    }
    if r.calls.is_empty() {
        return if r.other_calls.is_empty() {
            "no fold".into()
        } else {
            format!("no fold ({})", r.other_calls.join(", "))
        };
    }
    r.calls
        .iter()
        .map(|c| {
            let range = match (c.from, c.to) {
                (Some(a), Some(b)) => format!("{a}–{b}"),
                _ => "?".into(),
            };
            let v = format!("{:?}", c.verdict).to_lowercase();
            if c.reason.is_empty() {
                format!("{range} {v}")
            } else {
                format!("{range} {v} ({})", cut(&c.reason, 80))
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The page of a judged dataset: `tables` are the terminal report's (caption, table).
pub fn judge_page(
    heading: &str,
    tables: Vec<(String, Table)>,
    items: &[Item],
    records: &[JudgedRecord],
) -> Page {
    let mut blocks: Vec<Block> = tables
        .into_iter()
        .map(|(title, table)| Block::Table { title, table })
        .collect();
    let mut by_session: BTreeMap<(&str, &str), Vec<&Item>> = BTreeMap::new();
    for i in items {
        by_session
            .entry((i.source.as_str(), i.session.as_str()))
            .or_default()
            .push(i);
    }
    let mut groups = Vec::new();
    for ((source, session), its) in by_session {
        let mut rows = Vec::new();
        let mut exact = BTreeMap::<&str, (usize, usize)>::new();
        for item in &its {
            for r in records.iter().filter(|r| r.item == item.id) {
                let e = exact.entry(r.model.as_str()).or_default();
                e.1 += 1;
                if r.score.exact {
                    e.0 += 1;
                }
                rows.push(vec![
                    item.current.to_string(),
                    cut(item.words.as_deref().unwrap_or(&item.user), 200),
                    if item.threshold { "yes" } else { "no" }.into(),
                    ranges(
                        &item
                            .turns
                            .iter()
                            .map(|t| (t.turn, t.turn))
                            .collect::<Vec<_>>(),
                    ),
                    ranges(&item.gold.closed),
                    item.gold
                        .open
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    r.model.clone(),
                    answer(r),
                    if r.score.exact { "yes" } else { "no" }.into(),
                    r.score.premature.to_string(),
                    r.score.illegal.to_string(),
                    r.score.missed_units.to_string(),
                    cut(&r.text, 200),
                ]);
            }
        }
        groups.push(Group {
            title: format!("{source} · {session} · {} card points", its.len()),
            facts: vec![exact
                .iter()
                .map(|(m, (e, n))| format!("{m}: {e}/{n} exact"))
                .collect::<Vec<_>>()
                .join(" · ")],
            chart: None,
            drill_label: "Card points and answers".into(),
            drill: vec![Block::Table {
                title: "Card points and answers".into(),
                table: Table {
                    headers: [
                        "turn",
                        "user",
                        "threshold",
                        "offered",
                        "gold closed",
                        "gold open",
                        "judge",
                        "fold_unit calls",
                        "exact",
                        "premature",
                        "illegal",
                        "missed",
                        "answer text",
                    ]
                    .iter()
                    .map(|h| h.to_string())
                    .collect(),
                    rows,
                },
            }],
        });
    }
    blocks.push(Block::Groups {
        title: "Sessions and their card points".into(),
        groups,
    });
    Page {
        title: "foldbench judge run".into(),
        subtitle: vec![heading.to_string()],
        blocks,
    }
}
