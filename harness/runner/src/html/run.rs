//! The page of a run folder: the verdict lines, the run table, the A/B table when the run is one
//! task's A/B, the cells, and one chart per task, model and seed with every arm on it; its
//! drill-down holds the turns, the folds (range, tokens, archive, sha256), their result messages
//! and the checks, read from each cell's `events.jsonl` and `transcript.jsonl`.

use crate::results::read_jsonl;
use std::collections::BTreeMap;
use std::path::Path;

use harness_core::fold::group_thousands;
use harness_core::Event;
use harness_core::Purpose;
use harness_core::{CellRecord, Status};
use harness_core::{Message, MessageKind};
use harness_report::html::{self, cut, Block, Chart, Group, Mark, MarkKind, Page, Series};
use harness_report::render::{self, Table};

use crate::html::HtmlError;
use crate::results::cell_folder;

/// What one cell's events say, in the page's terms.
#[derive(Default)]
struct CellView {
    sizes: Vec<u64>,
    marks: Vec<Mark>,
    turns: Vec<Vec<String>>,
    folds: Vec<Vec<String>>,
    compactions: Vec<Vec<String>>,
    checks: Vec<Vec<String>>,
}

/// Walks a cell's events: the turn requests' sizes, a mark on the first request after each fold
/// or compaction, and the rows of the drill-down tables.
fn view(arm: &str, events: &[Event]) -> CellView {
    let mut v = CellView::default();
    let mut pending: Vec<Mark> = Vec::new();
    // The row of the turn in progress: turn, user, card, requests, tool calls, first, last.
    let mut row: Option<(u32, String, String, usize, usize, u64, u64)> = None;
    for e in events {
        match e {
            Event::TurnStarted {
                turn,
                user,
                card_tokens,
                ..
            } => {
                row = Some((
                    *turn,
                    cut(user, 240),
                    card_tokens.map(|c| c.to_string()).unwrap_or_default(),
                    0,
                    0,
                    0,
                    0,
                ))
            }
            Event::Request(r) if r.purpose == Purpose::Turn => {
                v.sizes.push(r.tokens);
                for mut m in pending.drain(..) {
                    m.at = v.sizes.len() - 1;
                    v.marks.push(m);
                }
                if let Some(t) = row.as_mut() {
                    if t.3 == 0 {
                        t.5 = r.tokens;
                    }
                    t.3 += 1;
                    t.6 = r.tokens;
                }
            }
            Event::ToolCall(_) => {
                if let Some(t) = row.as_mut() {
                    t.4 += 1;
                }
            }
            Event::TurnEnded { turn, closing, .. } => {
                let t = row
                    .take()
                    .unwrap_or((*turn, String::new(), String::new(), 0, 0, 0, 0));
                v.turns.push(vec![
                    arm.to_string(),
                    t.0.to_string(),
                    t.1,
                    t.2,
                    t.3.to_string(),
                    t.4.to_string(),
                    group_thousands(t.5),
                    group_thousands(t.6),
                    cut(closing, 240),
                ]);
            }
            Event::Fold { .. } | Event::Compaction { .. } => {
                if let Some((mark, row)) = edit(arm, e) {
                    match mark.kind {
                        MarkKind::Fold | MarkKind::Strategy => v.folds.push(row),
                        MarkKind::Compaction => v.compactions.push(row),
                    }
                    pending.push(mark);
                }
            }
            Event::Check {
                label,
                passed,
                detail,
            } => v.checks.push(vec![
                arm.to_string(),
                label.clone(),
                if *passed { "passed" } else { "FAILED" }.into(),
                cut(detail, 400),
            ]),
            _ => {}
        }
    }
    // An edit after the last request (a fold at the end of the last turn): on the last point.
    for mut m in pending {
        if let Some(last) = v.sizes.len().checked_sub(1) {
            m.at = last;
            m.note.push_str(" (after the last request)");
            v.marks.push(m);
        }
    }
    v
}

/// A fold's or a compaction's mark (placed later) and its row in the drill-down's table.
fn edit(arm: &str, e: &Event) -> Option<(Mark, Vec<String>)> {
    match e {
        Event::Fold {
            turn,
            from,
            to,
            archive,
            sha256,
            folded_tokens,
            result_tokens,
            rewritten_tokens,
            kind,
        } => {
            // A strategy's exit splices like a fold but is counted as a strategy, not a fold
            // (`CellMetrics::folds` counts `kind == "fold"`): its own mark, so the legend and
            // the facts line count the same things.
            let mark = Mark {
                at: 0,
                kind: if kind == "fold" {
                    MarkKind::Fold
                } else {
                    MarkKind::Strategy
                },
                note: format!(
                    "{kind} of turns {from}–{to} in turn {turn}: {} → {} tokens",
                    group_thousands(*folded_tokens),
                    group_thousands(*result_tokens)
                ),
            };
            Some((
                mark,
                vec![
                    arm.to_string(),
                    turn.to_string(),
                    format!("{from}–{to}"),
                    kind.clone(),
                    group_thousands(*folded_tokens),
                    group_thousands(*result_tokens),
                    group_thousands(*rewritten_tokens),
                    archive.clone(),
                    sha256.clone(),
                ],
            ))
        }
        Event::Compaction {
            turn,
            emergency,
            input_tokens,
            output_tokens,
            rewritten_tokens,
        } => {
            let mark = Mark {
                at: 0,
                kind: MarkKind::Compaction,
                note: format!(
                    "{}compaction in turn {turn}: {} tokens summarized into {}",
                    if *emergency { "emergency " } else { "" },
                    group_thousands(*input_tokens),
                    group_thousands(*output_tokens)
                ),
            };
            Some((
                mark,
                vec![
                    arm.to_string(),
                    turn.to_string(),
                    if *emergency { "yes" } else { "no" }.into(),
                    group_thousands(*input_tokens),
                    group_thousands(*output_tokens),
                    group_thousands(*rewritten_tokens),
                ],
            ))
        }
        _ => None,
    }
}

fn table(headers: &[&str], rows: Vec<Vec<String>>) -> Table {
    Table {
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows,
    }
}

/// The result messages a cell's transcript holds: fold results, strategy reports, summaries.
fn results(arm: &str, transcript: &[Message]) -> Vec<Block> {
    transcript
        .iter()
        .filter_map(|m| {
            let title = match &m.kind {
                MessageKind::FoldResult {
                    from,
                    to,
                    archive,
                    sha256,
                } => format!(
                    "{arm}: the result of turns {from}–{to} ({} tokens; archive {archive}, sha256 {sha256})",
                    m.tokens
                ),
                MessageKind::StrategyReport {
                    mode,
                    archive,
                    sha256,
                } => format!(
                    "{arm}: the report of the {mode} strategy ({} tokens; archive {archive}, sha256 {sha256})",
                    m.tokens
                ),
                MessageKind::Summary => {
                    format!("{arm}: the compaction summary of turn {} ({} tokens)", m.turn, m.tokens)
                }
                _ => return None,
            };
            Some(Block::Pre {
                title,
                text: m.text.clone(),
            })
        })
        .collect()
}

/// The facts line's folds: `2 folds`, and `· 1 strategy exit` when a strategy ended — the
/// legend counts ▼ folds and ◆ strategy exits the same way.
fn folds_fact(m: &harness_core::metrics::CellMetrics) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut s = plural(m.folds, "fold", "folds");
    if m.strategies_ended > 0 {
        s.push_str(" · ");
        s.push_str(&plural(
            m.strategies_ended,
            "strategy exit",
            "strategy exits",
        ));
    }
    s
}

/// One task, model and seed: every arm's line on one chart, and the drill-down.
fn group(dir: &Path, cells: &[&CellRecord]) -> Result<Group, HtmlError> {
    let first = cells[0];
    let mut series = Vec::new();
    let mut facts = Vec::new();
    let (mut turns, mut folds, mut comps, mut checks, mut pres) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for r in cells {
        let folder = dir.join("cells").join(cell_folder(&r.id));
        let events: Vec<Event> = read_jsonl(&folder.join(crate::results::EVENTS_FILE))
            .map_err(HtmlError::Damaged)?
            .unwrap_or_default();
        let transcript: Vec<Message> = read_jsonl(&folder.join(crate::results::TRANSCRIPT_FILE))
            .map_err(HtmlError::Damaged)?
            .unwrap_or_default();
        let v = view(&r.arm, &events);
        facts.push(format!(
            "{}: {}{} · {} requests · median {} · last {} · total {} tokens · {} · {} compactions",
            r.arm,
            r.status.as_str(),
            match (&r.error, r.status) {
                (Some(e), Status::Error) => format!(" ({})", cut(e, 120)),
                _ => String::new(),
            },
            r.metrics.requests,
            render::num(r.metrics.request_tokens.median),
            group_thousands(r.metrics.request_tokens.last),
            group_thousands(r.metrics.request_tokens.total),
            folds_fact(&r.metrics),
            r.metrics.compactions
        ));
        series.push(Series {
            label: r.arm.clone(),
            sizes: v.sizes,
            marks: v.marks,
        });
        turns.extend(v.turns);
        folds.extend(v.folds);
        comps.extend(v.compactions);
        checks.extend(v.checks);
        pres.extend(results(&r.arm, &transcript));
    }
    let mut drill = vec![Block::Table {
        title: "Turns".into(),
        table: table(
            &[
                "arm",
                "turn",
                "user",
                "card tokens",
                "requests",
                "tool calls",
                "first req",
                "last req",
                "closing message",
            ],
            turns,
        ),
    }];
    drill.push(if folds.is_empty() {
        Block::Text("No arm folded in this cell.".into())
    } else {
        Block::Table {
            title: "Folds: what each archived".into(),
            table: table(
                &[
                    "arm",
                    "turn",
                    "range",
                    "kind",
                    "folded tokens",
                    "result tokens",
                    "rewritten",
                    "archive",
                    "sha256",
                ],
                folds,
            ),
        }
    });
    if !comps.is_empty() {
        drill.push(Block::Table {
            title: "Compactions".into(),
            table: table(
                &[
                    "arm",
                    "turn",
                    "emergency",
                    "input tokens",
                    "summary tokens",
                    "rewritten",
                ],
                comps,
            ),
        });
    }
    drill.extend(pres);
    drill.push(Block::Table {
        title: "Checks".into(),
        table: table(&["arm", "check", "result", "detail"], checks),
    });
    Ok(Group {
        title: format!("{} · {} · seed {}", first.task, first.model, first.seed),
        facts,
        chart: Some(Chart {
            spans: Vec::new(),
            x_label: "request of the session (turn requests, in order)".into(),
            y_label: "request tokens (o200k)".into(),
            series,
        }),
        drill,
        drill_label: String::new(),
    })
}

/// The records with their arms in the matrix's order (`matrix.json`'s `arms`), so an arm keeps its
/// colour and place whatever order the cells finished in; arms the matrix does not name (or no
/// readable `matrix.json`) follow in the order of the records.
fn in_matrix_order(dir: &Path, records: &[CellRecord]) -> Vec<CellRecord> {
    let labels: Vec<String> = std::fs::read_to_string(dir.join(crate::results::MATRIX_FILE))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| {
            v.get("arms")?.as_array().map(|a| {
                a.iter()
                    .filter_map(|x| x.get("label")?.as_str().map(str::to_string))
                    .collect()
            })
        })
        .unwrap_or_default();
    let rank = |arm: &str| labels.iter().position(|l| l == arm).unwrap_or(labels.len());
    let mut out = records.to_vec();
    out.sort_by_key(|r| rank(&r.arm));
    out
}

/// The page of a run folder's records.
pub fn run_page(
    dir: &Path,
    records: &[CellRecord],
    baseline: Option<&str>,
    title: &str,
) -> Result<Page, HtmlError> {
    let records = &in_matrix_order(dir, records);
    let count = |s: Status| records.iter().filter(|r| r.status == s).count();
    let mut arms: Vec<String> = Vec::new();
    for r in records {
        if !arms.contains(&r.arm) {
            arms.push(r.arm.clone());
        }
    }
    let tasks: std::collections::BTreeSet<&str> = records.iter().map(|r| r.task.as_str()).collect();
    let mut blocks = Vec::new();
    let (base, answers) = harness_report::headline::run_answers(records, baseline);
    if !answers.is_empty() {
        blocks.push(Block::Heading(harness_report::headline::run_heading(
            &base, records,
        )));
        blocks.push(Block::Lines(harness_report::headline::lines(&answers)));
        let points = harness_report::frontier::run_points(records, &base);
        if points.len() > 1 {
            blocks.push(Block::Frontier {
                points,
                axes: harness_report::frontier::Axes::run(&base),
            });
        }
        blocks.push(Block::Lines(vec![
            harness_report::headline::RUN_TOKENS_NOTE.into(),
            harness_report::verdict::RATIO_LEGEND.into(),
            harness_report::frontier::LEGEND.into(),
        ]));
    }
    blocks.push(Block::Table {
        title: "Arms (what each saves, then what it loses)".into(),
        table: html::savings_beside_loss(&render::summary_table(records)),
    });
    if tasks.len() == 1 && arms.len() > 1 {
        blocks.push(Block::Table {
            title: "A/B: each run's figure and each arm's median".into(),
            table: render::ab_table(records, &arms),
        });
    }
    blocks.push(Block::Table {
        title: "Cells".into(),
        table: html::savings_beside_loss(&render::cells_table(records)),
    });
    let mut by: BTreeMap<(&str, &str, u64), Vec<&CellRecord>> = BTreeMap::new();
    for r in records {
        by.entry((r.task.as_str(), r.model.as_str(), r.seed))
            .or_default()
            .push(r);
    }
    let mut groups = Vec::new();
    for cells in by.values() {
        groups.push(group(dir, cells)?);
    }
    blocks.push(Block::Groups {
        title:
            "Request sizes per task, model and seed (every arm on one chart; ▼ fold, ■ compaction)"
                .into(),
        groups,
    });
    Ok(Page {
        title: format!("foldbench report: {title}"),
        subtitle: vec![format!(
            "{} cells over {} tasks and {} arms: {} success, {} failure, {} error{}",
            records.len(),
            tasks.len(),
            arms.len(),
            count(Status::Success),
            count(Status::Failure),
            count(Status::Error),
            match count(Status::Unchecked) {
                0 => String::new(),
                n => format!(", {n} not checked"),
            }
        )],
        blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_core::RequestRecord;

    fn request(index: usize, turn: u32, purpose: Purpose, tokens: u64) -> Event {
        Event::Request(RequestRecord {
            index,
            turn,
            purpose,
            tokens,
            cached_tokens: 0,
            written_tokens: 0,
            messages: 1,
            visible_results: vec![],
            action: None,
            mode: None,
            agent: None,
            model: None,
        })
    }

    #[test]
    fn a_mark_sits_on_the_first_turn_request_after_the_edit() {
        let events = vec![
            request(0, 1, Purpose::Turn, 100),
            request(1, 1, Purpose::Turn, 200),
            Event::Fold {
                turn: 1,
                from: 1,
                to: 1,
                archive: ".foldbench/archive/1-1.md".into(),
                sha256: "ab".repeat(32),
                folded_tokens: 150,
                result_tokens: 20,
                rewritten_tokens: 0,
                kind: "fold".into(),
            },
            request(2, 2, Purpose::Compaction, 80),
            Event::Compaction {
                turn: 2,
                emergency: false,
                input_tokens: 80,
                output_tokens: 10,
                rewritten_tokens: 0,
            },
            request(3, 2, Purpose::Turn, 60),
        ];
        let mut late = events.clone();
        late.push(late[2].clone());
        let v = view("fold", &late);
        assert_eq!(
            v.marks.len(),
            3,
            "a fold after the last request is on the last point"
        );
        assert_eq!(v.marks[2].at, 2);
        assert!(v.marks[2].note.ends_with("(after the last request)"));
        let v = view("fold", &events);
        assert_eq!(
            v.sizes,
            vec![100, 200, 60],
            "compaction calls are not on the line"
        );
        let at: Vec<(usize, MarkKind)> = v.marks.iter().map(|m| (m.at, m.kind)).collect();
        assert_eq!(at, vec![(2, MarkKind::Fold), (2, MarkKind::Compaction)]);
        assert_eq!(v.folds[0][2], "1–1");
        assert_eq!(v.folds[0][8], "ab".repeat(32));
    }

    #[test]
    fn a_strategy_exit_is_its_own_mark_and_the_facts_line_counts_it_as_the_legend_does() {
        // One fold and one strategy exit (which splices its report like a fold).
        let fold = |kind: &str, from: u32| Event::Fold {
            turn: from,
            from,
            to: from,
            archive: format!(".foldbench/archive/{from}.md"),
            sha256: "cd".repeat(32),
            folded_tokens: 100,
            result_tokens: 10,
            rewritten_tokens: 0,
            kind: kind.into(),
        };
        let events = vec![
            request(0, 1, Purpose::Turn, 100),
            fold("fold", 1),
            request(1, 2, Purpose::Turn, 120),
            Event::StrategyEnded {
                turn: 2,
                mode: "debug".into(),
                via_back: false,
                report_tokens: 10,
            },
            fold("strategy", 2),
            request(2, 3, Purpose::Turn, 90),
        ];
        let v = view("fold+strategies", &events);
        let kinds: Vec<MarkKind> = v.marks.iter().map(|m| m.kind).collect();
        assert_eq!(kinds, vec![MarkKind::Fold, MarkKind::Strategy]);
        let m =
            harness_core::metrics::compute(&events, None, &harness_core::metrics::Price::default());
        assert_eq!((m.folds, m.strategies_ended), (1, 1));
        assert_eq!(folds_fact(&m), "1 fold · 1 strategy exit");
        // The legend of the same line: one ▼ fold and one ◆ strategy exit, not "2 ▼ folds".
        let chart = Chart {
            spans: Vec::new(),
            series: vec![Series {
                label: "fold+strategies".into(),
                sizes: v.sizes,
                marks: v.marks,
            }],
            ..Default::default()
        };
        let svg = harness_report::html::chart_svg(&chart);
        assert!(svg.contains("1 ▼ fold, 1 ◆ strategy exit"), "{svg}");
        assert!(!svg.contains("2 ▼ folds"));
    }
}
