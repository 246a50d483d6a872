//! The page of `foldbench replay`: the terminal report's tables, then one chart per session with
//! every policy's requests, and a drill-down with the turns (each policy's request size at the
//! end of every turn), the folds (range, tokens, sha256 of the archive the replay computed) and
//! the compactions.

use crate::report::short_id;
use crate::subagents::{duration, SessionSubagents};
use crate::{PolicyReplay, SessionReplay};
use harness_core::fold::group_thousands;
use harness_core::metrics::SizeStats;
use harness_core::Purpose;
use harness_import::ImportedSession;
use harness_report::html::{self, cut, Block, Chart, Group, Mark, MarkKind, Page, Series, Span};
use harness_report::render::{self, Table};

/// One policy's line: its turn requests, a mark on the first turn request after each fold (spliced
/// at the end of its turn) and after each compaction call.
fn series(p: &PolicyReplay) -> Series {
    let mut sizes = Vec::new();
    let mut marks = Vec::new();
    let mut compactions = p.compactions.iter();
    let mut pending: Vec<Mark> = Vec::new();
    let mut folds = p.folds.iter().peekable();
    for r in &p.requests {
        if r.purpose != Purpose::Turn {
            if let Some(c) = compactions.next() {
                pending.push(Mark {
                    at: 0,
                    kind: MarkKind::Compaction,
                    note: format!(
                        "{}compaction in turn {}: {} tokens summarized into {}{}",
                        if c.emergency { "emergency " } else { "" },
                        c.turn,
                        group_thousands(c.input_tokens),
                        group_thousands(c.output_tokens),
                        if c.recorded_summary {
                            " (the recorded summary)"
                        } else {
                            ""
                        }
                    ),
                });
            }
            continue;
        }
        while let Some(f) = folds.next_if(|f| f.turn < r.turn) {
            pending.push(Mark {
                at: 0,
                kind: MarkKind::Fold,
                note: format!(
                    "fold of turns {}–{} at the end of turn {}: {} → {} tokens",
                    f.from,
                    f.to,
                    f.turn,
                    group_thousands(f.folded_tokens),
                    group_thousands(f.result_tokens)
                ),
            });
        }
        sizes.push(r.tokens);
        for mut m in pending.drain(..) {
            m.at = sizes.len() - 1;
            marks.push(m);
        }
    }
    // Edits after the last request (a fold at the end of the last turn): on the last point.
    for f in folds {
        pending.push(Mark {
            at: 0,
            kind: MarkKind::Fold,
            note: format!(
                "fold of turns {}–{} at the end of turn {}: {} → {} tokens",
                f.from,
                f.to,
                f.turn,
                group_thousands(f.folded_tokens),
                group_thousands(f.result_tokens)
            ),
        });
    }
    if let Some(last) = sizes.len().checked_sub(1) {
        for mut m in pending {
            m.at = last;
            m.note.push_str(" (after the last request)");
            marks.push(m);
        }
    }
    Series {
        label: p.policy.clone(),
        sizes,
        marks,
    }
}

/// Each subagent of a parent on its request chart: from the request that made the call to the
/// first request after its receipt.
fn spans(sub: Option<&SessionSubagents>, session: Option<&ImportedSession>) -> Vec<Span> {
    let (Some(sub), Some(session)) = (sub, session) else {
        return Vec::new();
    };
    let last = session.requests.len().saturating_sub(1);
    sub.children
        .iter()
        .filter_map(|c| {
            let from = session
                .requests
                .iter()
                .position(|r| r.message == c.call_message)?;
            let after = c.receipt_message.unwrap_or(c.call_message);
            let to = session
                .requests
                .iter()
                .position(|r| r.message > after)
                .unwrap_or(last)
                .max(from);
            Some(Span {
                from,
                to,
                note: format!(
                    "subagent {}{}: {} requests over {}, {} tokens of work, {} of brief and receipt",
                    c.id,
                    c.description
                        .as_deref()
                        .map(|d| format!(" ({})", cut(d, 80)))
                        .unwrap_or_default(),
                    c.requests,
                    duration(c.span_ms()),
                    group_thousands(c.work_tokens),
                    group_thousands(c.brief_tokens + c.receipt_tokens)
                ),
            })
        })
        .collect()
}

fn table(headers: Vec<String>, rows: Vec<Vec<String>>) -> Table {
    Table { headers, rows }
}

/// The drill-down of one session: its turns, the folds (with their results), the compactions
/// and the hidden references.
fn drill(s: &SessionReplay, session: Option<&ImportedSession>) -> Vec<Block> {
    let mut out = vec![turns_block(s, session)];
    out.extend(fold_blocks(s));
    out.extend(compaction_block(s));
    out.push(hidden_block(s));
    out
}

/// Each turn: the user's words, the recorded requests, each policy's last request.
fn turns_block(s: &SessionReplay, session: Option<&ImportedSession>) -> Block {
    let mut headers: Vec<String> = ["turn", "user", "recorded requests"]
        .iter()
        .map(|h| h.to_string())
        .collect();
    headers.extend(s.policies.iter().map(|p| format!("{}: last req", p.policy)));
    let mut rows = Vec::new();
    for t in 1..=s.session.turns {
        let user = session
            .and_then(|x| x.human_turns.iter().find(|h| h.turn == t))
            .map(|h| cut(&h.text, 240))
            .unwrap_or_default();
        let recorded = s.policies.first().map_or(0, |p| {
            p.requests
                .iter()
                .filter(|r| r.purpose == Purpose::Turn && r.turn == t)
                .count()
        });
        let mut row = vec![t.to_string(), user, recorded.to_string()];
        for p in &s.policies {
            row.push(
                p.requests
                    .iter()
                    .rfind(|r| r.purpose == Purpose::Turn && r.turn == t)
                    .map(|r| group_thousands(r.tokens))
                    .unwrap_or_default(),
            );
        }
        rows.push(row);
    }
    Block::Table {
        title: "Turns".into(),
        table: table(headers, rows),
    }
}

/// What each policy folded, and each fold's result.
fn fold_blocks(s: &SessionReplay) -> Vec<Block> {
    let mut out = Vec::new();
    let folds: Vec<Vec<String>> = s
        .policies
        .iter()
        .flat_map(|p| {
            p.folds.iter().map(move |f| {
                vec![
                    p.policy.clone(),
                    f.turn.to_string(),
                    format!("{}–{}", f.from, f.to),
                    group_thousands(f.folded_tokens),
                    group_thousands(f.result_tokens),
                    group_thousands(f.rewritten_tokens),
                    match f.premature {
                        Some(true) => "yes",
                        Some(false) => "no",
                        None => "unlabelled",
                    }
                    .into(),
                    f.sha256.clone(),
                ]
            })
        })
        .collect();
    out.push(if folds.is_empty() {
        Block::Text("No policy folded in this session.".into())
    } else {
        Block::Table {
            title: "Folds: what each archived (the replay computes the archive's sha256; nothing is written)".into(),
            table: table(
                ["policy", "turn", "range", "folded tokens", "result tokens", "rewritten", "premature", "sha256"]
                    .iter()
                    .map(|h| h.to_string())
                    .collect(),
                folds,
            ),
        }
    });
    for p in &s.policies {
        for f in p.folds.iter().filter(|f| !f.result.is_empty()) {
            out.push(Block::Pre {
                title: format!(
                    "{}: the result of turns {}–{} (folded at turn {})",
                    p.policy, f.from, f.to, f.turn
                ),
                text: f.result.clone(),
            });
        }
    }
    out
}

/// The compactions, if any.
fn compaction_block(s: &SessionReplay) -> Option<Block> {
    let comps: Vec<Vec<String>> = s
        .policies
        .iter()
        .flat_map(|p| {
            p.compactions.iter().map(move |c| {
                vec![
                    p.policy.clone(),
                    c.turn.to_string(),
                    if c.emergency { "yes" } else { "no" }.into(),
                    if c.recorded_summary {
                        "recorded"
                    } else {
                        "mechanical"
                    }
                    .into(),
                    group_thousands(c.input_tokens),
                    group_thousands(c.output_tokens),
                    group_thousands(c.rewritten_tokens),
                ]
            })
        })
        .collect();
    (!comps.is_empty()).then(|| Block::Table {
        title: "Compactions".into(),
        table: table(
            [
                "policy",
                "turn",
                "emergency",
                "summary",
                "input tokens",
                "summary tokens",
                "rewritten",
            ]
            .iter()
            .map(|h| h.to_string())
            .collect(),
            comps,
        ),
    })
}

/// How many hidden references of one policy the drill-down lists.
const HIDDEN_SHOWN: usize = 200;

/// The hidden references of the session: per policy and request, the strings a recorded
/// response used that the policy's request no longer showed, with where each could come back
/// from.
fn hidden_block(s: &SessionReplay) -> Block {
    let mut rows = Vec::new();
    for p in &s.policies {
        let refs = p
            .requests
            .iter()
            .flat_map(|r| r.hidden.iter().map(move |h| (r, h)))
            .take(HIDDEN_SHOWN);
        for (r, h) in refs {
            rows.push(vec![
                p.policy.clone(),
                r.turn.to_string(),
                h.from_turn.to_string(),
                match h.source {
                    crate::hidden::Source::Archive => "archive",
                    crate::hidden::Source::Rerun => "re-run needed",
                    crate::hidden::Source::None => "gone",
                }
                .into(),
                h.text.clone(),
            ]);
        }
    }
    if rows.is_empty() {
        return Block::Text("No policy hid a reference a later response used.".into());
    }
    Block::Table {
        title: format!(
            "Hidden references (the first {HIDDEN_SHOWN} per policy): what a response used that the policy's request no longer showed"
        ),
        table: table(
            ["policy", "turn", "from turn", "could come back from", "text"]
                .iter()
                .map(|h| h.to_string())
                .collect(),
            rows,
        ),
    }
}

/// The page of a replay: `opening` comes first (the verdict and the frontier's chart), then
/// `tables`, the terminal report's (caption, table) in order (the first, the policy table, with
/// its savings beside its losses), and `notes`, its notes (the caveats among them); `sessions`
/// are the imported sessions (for the users' words), matched by id; `subagents` the parents'
/// delegations, each subagent marked on its parent's chart.
pub fn replay_page(
    heading: &str,
    opening: Vec<Block>,
    tables: Vec<(String, Table)>,
    notes: Vec<String>,
    replays: &[SessionReplay],
    sessions: &[ImportedSession],
    subagents: &[SessionSubagents],
) -> Page {
    let mut blocks: Vec<Block> = opening;
    for (i, (title, table)) in tables.into_iter().enumerate() {
        // The policy table: what each saves, then what it loses, side by side.
        let table = if i == 0 {
            html::savings_beside_loss(&table)
        } else {
            table
        };
        blocks.push(Block::Table { title, table });
    }
    if !notes.is_empty() {
        blocks.push(Block::Lines(notes));
    }
    let groups = replays
        .iter()
        .map(|s| {
            let session = sessions.iter().find(|x| x.id == s.session.id && x.source == s.session.source);
            let sub = subagents
                .iter()
                .find(|x| x.session == s.session.id && x.source == s.session.source);
            let mut facts = vec![format!("{} ({})", s.session.source, s.session.id)];
            facts.extend(s
                .policies
                .iter()
                .map(|p| {
                    let st = SizeStats::of(&p.sizes());
                    format!(
                        "{}: median {} · last {} · total {} tokens · {} cards · {} folds · {} compactions · {}",
                        p.policy,
                        render::num(st.median),
                        group_thousands(st.last),
                        group_thousands(p.total_input()),
                        p.cards,
                        p.folds.len(),
                        p.compactions.len(),
                        harness_report::fmt::money(p.cost())
                    )
                }));
            Group {
                title: format!(
                    "{} · {} · {} turns · {} requests",
                    short_id(&s.session.id),
                    s.session.format,
                    s.session.turns,
                    s.recorded.len()
                ),
                facts,
                chart: Some(Chart {
                    spans: spans(sub, session),
                    x_label: "request of the session (the recorded requests, in order)".into(),
                    y_label: "request tokens (o200k)".into(),
                    series: s.policies.iter().map(series).collect(),
                }),
                drill: drill(s, session),
                drill_label: String::new(),
            }
        })
        .collect();
    blocks.push(Block::Groups {
        title: "Sessions (every policy on one chart; ▼ fold, ■ compaction)".into(),
        groups,
    });
    Page {
        title: "foldbench replay".into(),
        subtitle: vec![heading.to_string()],
        blocks,
    }
}
