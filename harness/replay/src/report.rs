//! Reports of replays and analyses: plain values and [`Table`]s (terminal, Markdown, CSV through
//! [`harness_report::render`]). Pure: they return text; the runner prints it.
//!
//! Ratios to `none` are taken per session, like the essay's figures ("the median request was 0.2×
//! the size ... by the end of the session it was a sixth"), then summarised over sessions by
//! their median; the token-weighted ratio over the corpus (sum of every request under the
//! policy over the sum under `none`) is given beside them.

use harness_core::fold::group_thousands;
use harness_core::metrics::{median_f64, SizeStats};
use harness_report::render::Table;
use serde::{Deserialize, Serialize};

use crate::analyze::{Composition, SessionComposition};
use crate::engine::SessionReplay;
use crate::hidden::{BySource, ProbeCounts, ProbeFractions, Recovery};
use crate::truth::{error_stats, ErrorStats, SessionTruth};

/// The label of the baseline policy.
pub const NONE: &str = "none";

/// One policy over the corpus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicySummary {
    /// The policy as given.
    pub policy: String,
    /// Sessions with at least one request.
    pub(crate) sessions: usize,
    /// Requests of the turns (compaction calls left out).
    pub(crate) requests: usize,
    /// Median over sessions of the session's median request.
    pub(crate) median_request: f64,
    /// Median over sessions of (session median / `none`'s session median).
    pub(crate) median_ratio: Option<f64>,
    /// Median over sessions of the session's last request.
    pub(crate) last_request: f64,
    /// Median over sessions of (last request / `none`'s last request).
    pub(crate) last_ratio: Option<f64>,
    /// Tokens of every request, compaction calls included.
    pub(crate) total_input: u64,
    /// `total_input / none's total_input` (token-weighted over the corpus).
    pub(crate) total_ratio: Option<f64>,
    /// `total_input` plus what recovering the hidden references would add
    /// ([`Recovery::tokens`]).
    pub tokens_incl_recovery: u64,
    /// `tokens_incl_recovery / none's` (token-weighted over the corpus; `none` hides nothing).
    pub incl_recovery_ratio: Option<f64>,
    /// What recovering the hidden references would cost, and how many are gone.
    pub recovery: Recovery,
    /// Tokens read from the simulated cache.
    pub(crate) cached: u64,
    /// Tokens written to it.
    pub(crate) written: u64,
    /// Dollars.
    pub(crate) cost: f64,
    /// Cards attached.
    pub(crate) cards: usize,
    /// Folds (and strategy exits).
    pub(crate) folds: usize,
    /// Folds known to be premature (labelled sessions only).
    pub(crate) premature_folds: usize,
    /// Median tokens rewritten per fold.
    pub(crate) median_rewritten_per_fold: f64,
    /// Compactions.
    pub(crate) compactions: usize,
    /// Hidden references over all responses.
    pub(crate) hidden_references: usize,
    /// Hidden references per 100 responses.
    pub(crate) hidden_per_100_responses: f64,
    /// Hidden references gone (nothing to recover them from, no recovery carried showing them:
    /// [`Recovery::gone`]) per 100 responses: the loss of the frontier.
    pub gone_per_100_responses: f64,
    /// Responses with at least one hidden reference.
    pub(crate) responses_with_hidden_references: usize,
    /// Hidden references by where they could come back from.
    pub(crate) hidden_by_source: BySource,
    /// Folds a later response has a hidden reference into.
    pub(crate) folds_needed_later: NeededLater,
    /// Compactions a later response has a hidden reference into.
    pub(crate) compactions_needed_later: NeededLater,
    /// The four probes as fractions of the turns' requests.
    pub(crate) probes: ProbeFractions,
}

/// How many folds (or compactions) a later response needed, and how soon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NeededLater {
    /// Folds (or compactions) made.
    pub(crate) made: usize,
    /// Needed later.
    pub(crate) needed: usize,
    /// `needed / made` (`None` with none made).
    pub(crate) share: Option<f64>,
    /// Median turns from the fold to its first hidden reference, over those needed.
    pub(crate) median_delay: Option<f64>,
    /// How many were first needed 0, 1, 2, 3 and 4+ turns later.
    pub(crate) delays: [usize; 5],
}

impl NeededLater {
    /// From the delays of the events (`None`: never needed).
    pub(crate) fn of(delays: impl IntoIterator<Item = Option<u32>>) -> NeededLater {
        let mut made = 0;
        let mut ds: Vec<f64> = Vec::new();
        let mut hist = [0usize; 5];
        for d in delays {
            made += 1;
            if let Some(d) = d {
                ds.push(f64::from(d));
                hist[(d as usize).min(4)] += 1;
            }
        }
        NeededLater {
            made,
            needed: ds.len(),
            share: (made > 0).then(|| ds.len() as f64 / made as f64),
            median_delay: (!ds.is_empty()).then(|| median_f64(&ds)),
            delays: hist,
        }
    }

    /// `needed/made`, or `–` with none made.
    pub(crate) fn cell(&self) -> String {
        if self.made == 0 {
            "–".into()
        } else {
            format!("{}/{}", self.needed, self.made)
        }
    }
}

/// Per-session ratios of a policy to `none`: (median ratio, last ratio).
fn session_ratios(s: &SessionReplay, policy: &str) -> Option<(f64, f64)> {
    let base = s.policy(NONE)?.sizes();
    let this = s.policy(policy)?.sizes();
    let (b, p) = (SizeStats::of(&base), SizeStats::of(&this));
    (b.median > 0.0 && b.last > 0).then(|| (p.median / b.median, p.last as f64 / b.last as f64))
}

/// One row per policy, in `policies` order.
pub fn summarize(replays: &[SessionReplay], policies: &[String]) -> Vec<PolicySummary> {
    let none_total: u64 = replays
        .iter()
        .filter_map(|s| s.policy(NONE))
        .map(|p| p.total_input())
        .sum();
    let none_incl: u64 = replays
        .iter()
        .filter_map(|s| s.policy(NONE))
        .map(|p| p.tokens_incl_recovery())
        .sum();
    let has_none = policies.iter().any(|p| p == NONE);
    policies
        .iter()
        .map(|label| {
            let runs: Vec<_> = replays
                .iter()
                .filter_map(|s| s.policy(label).map(|p| (s, p)))
                .filter(|(_, p)| !p.sizes().is_empty())
                .collect();
            let stats: Vec<SizeStats> = runs
                .iter()
                .map(|(_, p)| SizeStats::of(&p.sizes()))
                .collect();
            let ratios: Vec<(f64, f64)> = runs
                .iter()
                .filter_map(|(s, _)| session_ratios(s, label))
                .collect();
            let total_input: u64 = runs.iter().map(|(_, p)| p.total_input()).sum();
            let incl: u64 = runs.iter().map(|(_, p)| p.tokens_incl_recovery()).sum();
            let rewritten: Vec<f64> = runs
                .iter()
                .flat_map(|(_, p)| p.folds.iter().map(|f| f.rewritten_tokens as f64))
                .collect();
            PolicySummary {
                policy: label.clone(),
                sessions: runs.len(),
                requests: runs.iter().map(|(_, p)| p.sizes().len()).sum(),
                median_request: median_f64(&stats.iter().map(|s| s.median).collect::<Vec<_>>()),
                median_ratio: (has_none && !ratios.is_empty())
                    .then(|| median_f64(&ratios.iter().map(|r| r.0).collect::<Vec<_>>())),
                last_request: median_f64(&stats.iter().map(|s| s.last as f64).collect::<Vec<_>>()),
                last_ratio: (has_none && !ratios.is_empty())
                    .then(|| median_f64(&ratios.iter().map(|r| r.1).collect::<Vec<_>>())),
                total_input,
                total_ratio: (has_none && none_total > 0)
                    .then(|| total_input as f64 / none_total as f64),
                tokens_incl_recovery: incl,
                incl_recovery_ratio: (has_none && none_incl > 0)
                    .then(|| incl as f64 / none_incl as f64),
                cached: runs.iter().map(|(_, p)| p.cached()).sum(),
                written: runs.iter().map(|(_, p)| p.written()).sum(),
                cost: runs.iter().map(|(_, p)| p.cost()).sum(),
                cards: runs.iter().map(|(_, p)| p.cards).sum(),
                folds: runs.iter().map(|(_, p)| p.folds.len()).sum(),
                premature_folds: runs.iter().map(|(_, p)| p.premature_folds()).sum(),
                median_rewritten_per_fold: median_f64(&rewritten),
                compactions: runs.iter().map(|(_, p)| p.compactions.len()).sum(),
                ..hidden_summary(&runs.iter().map(|(_, p)| *p).collect::<Vec<_>>())
            }
        })
        .collect()
}

/// The hidden-reference fields of a summary over some policy replays (the size fields are
/// left at zero for the caller to fill).
fn hidden_summary(runs: &[&crate::engine::PolicyReplay]) -> PolicySummary {
    let mut by = BySource::default();
    let mut probes = ProbeCounts::default();
    let mut recovery = Recovery::default();
    for p in runs {
        by.add(&p.hidden);
        probes.merge(&p.probes);
        recovery.add(&p.recovery);
    }
    let total = by.total();
    PolicySummary {
        policy: String::new(),
        sessions: 0,
        requests: 0,
        median_request: 0.0,
        median_ratio: None,
        last_request: 0.0,
        last_ratio: None,
        total_input: 0,
        total_ratio: None,
        tokens_incl_recovery: 0,
        incl_recovery_ratio: None,
        recovery,
        cached: 0,
        written: 0,
        cost: 0.0,
        cards: 0,
        folds: 0,
        premature_folds: 0,
        median_rewritten_per_fold: 0.0,
        compactions: 0,
        hidden_references: total,
        hidden_per_100_responses: per_100(total, probes.requests),
        gone_per_100_responses: per_100(recovery.gone, probes.requests),
        responses_with_hidden_references: runs.iter().map(|p| p.responses_with_hidden).sum(),
        hidden_by_source: by,
        folds_needed_later: NeededLater::of(
            runs.iter()
                .flat_map(|p| p.folds.iter().map(|f| f.needed_after)),
        ),
        compactions_needed_later: NeededLater::of(
            runs.iter()
                .flat_map(|p| p.compactions.iter().map(|c| c.needed_after)),
        ),
        probes: probes.fractions(),
    }
}

/// `n` per 100 of `of` (0 when `of` is).
fn per_100(n: usize, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * n as f64 / of as f64
    }
}

fn tokens(x: f64) -> String {
    if x.is_finite() && x >= 0.0 {
        group_thousands(x.round() as u64)
    } else {
        "–".into()
    }
}

fn ratio(x: Option<f64>) -> String {
    x.map_or_else(|| "–".into(), |r| format!("{r:.2}×"))
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// The per-policy summary as CSV with raw numbers (`replay --format csv`): one column per field
/// of [`PolicySummary`] under the JSON's names (nested fields joined with `_`), ratios as plain
/// decimals, no thousands separators, an empty field where there is no value. The table of
/// [`policy_table`] is for reading; this is for a spreadsheet or a script.
pub fn policy_csv(rows: &[PolicySummary]) -> String {
    use harness_report::render::raw;
    let opt = raw;
    let f = |x: f64| raw(Some(x));
    let headers = [
        "policy",
        "sessions",
        "requests",
        "median_request",
        "median_ratio",
        "last_request",
        "last_ratio",
        "total_input",
        "total_ratio",
        "tokens_incl_recovery",
        "incl_recovery_ratio",
        "recovery_round_trips",
        "recovery_round_trip_tokens",
        "recovery_archive_greps",
        "recovery_reruns",
        "recovery_fetched_tokens",
        "recovery_carried_tokens",
        "recovery_recovered",
        "recovery_covered",
        "recovery_gone",
        "cached",
        "written",
        "cost",
        "cards",
        "folds",
        "premature_folds",
        "median_rewritten_per_fold",
        "compactions",
        "hidden_references",
        "hidden_per_100_responses",
        "gone_per_100_responses",
        "responses_with_hidden_references",
        "hidden_by_source_archive",
        "hidden_by_source_rerun",
        "hidden_by_source_none",
        "folds_needed_later_made",
        "folds_needed_later_needed",
        "folds_needed_later_share",
        "compactions_needed_later_made",
        "compactions_needed_later_needed",
        "compactions_needed_later_share",
        "probes_decision",
        "probes_artifact",
        "probes_recall",
        "probes_continuation",
    ];
    Table {
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows: rows
            .iter()
            .map(|r| {
                vec![
                    r.policy.clone(),
                    r.sessions.to_string(),
                    r.requests.to_string(),
                    f(r.median_request),
                    opt(r.median_ratio),
                    f(r.last_request),
                    opt(r.last_ratio),
                    r.total_input.to_string(),
                    opt(r.total_ratio),
                    r.tokens_incl_recovery.to_string(),
                    opt(r.incl_recovery_ratio),
                    r.recovery.round_trips.to_string(),
                    r.recovery.round_trip_tokens.to_string(),
                    r.recovery.archive_greps.to_string(),
                    r.recovery.reruns.to_string(),
                    r.recovery.fetched_tokens.to_string(),
                    r.recovery.carried_tokens.to_string(),
                    r.recovery.recovered.to_string(),
                    r.recovery.covered.to_string(),
                    r.recovery.gone.to_string(),
                    r.cached.to_string(),
                    r.written.to_string(),
                    f(r.cost),
                    r.cards.to_string(),
                    r.folds.to_string(),
                    r.premature_folds.to_string(),
                    f(r.median_rewritten_per_fold),
                    r.compactions.to_string(),
                    r.hidden_references.to_string(),
                    f(r.hidden_per_100_responses),
                    f(r.gone_per_100_responses),
                    r.responses_with_hidden_references.to_string(),
                    r.hidden_by_source.archive.to_string(),
                    r.hidden_by_source.rerun.to_string(),
                    r.hidden_by_source.none.to_string(),
                    r.folds_needed_later.made.to_string(),
                    r.folds_needed_later.needed.to_string(),
                    opt(r.folds_needed_later.share),
                    r.compactions_needed_later.made.to_string(),
                    r.compactions_needed_later.needed.to_string(),
                    opt(r.compactions_needed_later.share),
                    f(r.probes.decision),
                    f(r.probes.artifact),
                    f(r.probes.recall),
                    f(r.probes.continuation),
                ]
            })
            .collect(),
    }
    .to_csv()
}

/// The per-policy table. `labelled` adds the premature-folds column.
pub fn policy_table(rows: &[PolicySummary], labelled: bool) -> Table {
    let mut headers = vec![
        "policy",
        "requests",
        "median req",
        "req med× none",
        "last req",
        "last med× none",
        "total input",
        "input Σ× none",
        "tokens incl. recovery",
        "incl. recovery Σ× none",
        "cache written",
        "cost $",
        "cards",
        "folds",
    ];
    if labelled {
        headers.push("premature");
    }
    headers.extend([
        "rewritten/fold",
        "compactions",
        "hidden refs",
        "/100 resp",
        "gone/100",
        "folds needed later",
        "compactions needed later",
        "decision",
        "artifact",
        "recall",
        "continuation",
    ]);
    Table {
        headers: headers.into_iter().map(String::from).collect(),
        rows: rows
            .iter()
            .map(|r| {
                let mut row = vec![
                    r.policy.clone(),
                    group_thousands(r.requests as u64),
                    tokens(r.median_request),
                    ratio(r.median_ratio),
                    tokens(r.last_request),
                    ratio(r.last_ratio),
                    group_thousands(r.total_input),
                    ratio(r.total_ratio),
                    group_thousands(r.tokens_incl_recovery),
                    ratio(r.incl_recovery_ratio),
                    group_thousands(r.written),
                    format!("{:.2}", r.cost),
                    r.cards.to_string(),
                    r.folds.to_string(),
                ];
                if labelled {
                    row.push(r.premature_folds.to_string());
                }
                row.push(if r.folds == 0 {
                    "–".into()
                } else {
                    tokens(r.median_rewritten_per_fold)
                });
                row.push(r.compactions.to_string());
                row.extend([
                    group_thousands(r.hidden_references as u64),
                    format!("{:.1}", r.hidden_per_100_responses),
                    format!("{:.1}", r.gone_per_100_responses),
                    r.folds_needed_later.cell(),
                    r.compactions_needed_later.cell(),
                    format!("{:.2}", r.probes.decision),
                    format!("{:.2}", r.probes.artifact),
                    format!("{:.2}", r.probes.recall),
                    format!("{:.2}", r.probes.continuation),
                ]);
                row
            })
            .collect(),
    }
}

/// What replay's token figures count, printed under the policy table.
pub const TOKENS_NOTE: &str = "total input: every replayed request, compaction calls (a fold policy's emergency ones too) and the tokens of its cards included, not a fold's fold_unit call and answer (the replay adds no round trip for them) · tokens incl. recovery: total input plus what getting back each hidden reference would add — an archive grep or a re-run of its call, one round trip per response, carried while its turn's results stay (docs/replay.md, \"Net cost after recovery\"); a reference gone (nothing to recover it from) is a loss, gone/100, not a cost";

/// Notes that keep the per-policy table from being misread: sessions no policy can change, a
/// `compact` that never fired.
pub fn replay_notes(replays: &[SessionReplay], rows: &[PolicySummary], window: u64) -> Vec<String> {
    let mut notes = Vec::new();
    let single = replays.iter().filter(|s| s.session.turns < 2).count();
    if single > 0 {
        notes.push(format!(
            "{single} of {} sessions have fewer than two human turns (subagents, one-prompt sessions): no policy changes them (the turn in progress is never folded; trim keeps its results), so they pull the medians over sessions towards 1.00×.",
            replays.len()
        ));
    }
    if rows
        .iter()
        .any(|r| r.policy.starts_with("compact") && r.compactions == 0)
    {
        let largest = replays
            .iter()
            .filter_map(|s| s.policy(NONE))
            .flat_map(|p| p.sizes())
            .max()
            .unwrap_or(0);
        notes.push(format!(
            "compact never fired: no request reached its threshold (0.9 × the window, {} tokens); the largest none request has {} (set --window or compact:window=N).",
            group_thousands((0.9 * window as f64) as u64),
            group_thousands(largest)
        ));
    }
    notes
}

/// One line per policy that folded or compacted: how many of its folds and compactions a later
/// response needed, and how soon; and where the hidden references could come back from.
pub fn hidden_notes(rows: &[PolicySummary]) -> Vec<String> {
    let mut notes = Vec::new();
    for r in rows {
        for (what, n) in [
            ("folds", &r.folds_needed_later),
            ("compactions", &r.compactions_needed_later),
        ] {
            if n.made == 0 {
                continue;
            }
            notes.push(format!(
                "{}: {} of {} {what} needed later ({}); first needed 0/1/2/3/4+ turns later: {}{}.",
                r.policy,
                n.needed,
                n.made,
                n.share.map_or_else(|| "–".into(), pct),
                n.delays.map(|d| d.to_string()).join("/"),
                n.median_delay
                    .map_or_else(String::new, |d| format!(", median {d:.1}"))
            ));
        }
        let b = &r.hidden_by_source;
        if b.total() > 0 {
            notes.push(format!(
                "{}: {} hidden references in {} responses — archive {}, re-run needed {}, gone {}.",
                r.policy,
                b.total(),
                r.responses_with_hidden_references,
                b.archive,
                b.rerun,
                b.none
            ));
        }
    }
    notes
}

/// The essay's figures per session: for each policy but `none`, the median request and the last
/// request as fractions of `none`'s (`median× / last×`). Sessions with fewer than `min_turns`
/// human turns are left out; the last rows give the median over the listed sessions and over
/// all sessions.
pub fn session_table(replays: &[SessionReplay], policies: &[String], min_turns: u32) -> Table {
    let others: Vec<&String> = policies.iter().filter(|p| *p != NONE).collect();
    let mut headers: Vec<String> = [
        "project",
        "date",
        "session",
        "turns",
        "requests",
        "none median",
        "none last",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    headers.extend(others.iter().map(|p| format!("{p} med×/last×")));
    headers.extend(others.iter().map(|p| format!("{p} hidden")));
    let hidden = |s: &SessionReplay, p: &str| {
        s.policy(p)
            .map_or_else(|| "–".into(), |p| p.hidden.total().to_string())
    };
    let cell =
        |r: Option<(f64, f64)>| r.map_or_else(|| "–".into(), |(m, l)| format!("{m:.2} / {l:.2}"));
    let listed: Vec<&SessionReplay> = replays
        .iter()
        .filter(|s| {
            s.session.turns >= min_turns && s.policy(NONE).is_some_and(|p| !p.sizes().is_empty())
        })
        .collect();
    let mut rows: Vec<Vec<String>> = listed
        .iter()
        .map(|s| {
            let none = SizeStats::of(&s.policy(NONE).map(|p| p.sizes()).unwrap_or_default());
            let mut row = vec![
                s.session.project.clone(),
                s.session.date.clone().unwrap_or_default(),
                short_id(&s.session.id),
                s.session.turns.to_string(),
                s.recorded.len().to_string(),
                tokens(none.median),
                group_thousands(none.last),
            ];
            row.extend(others.iter().map(|p| cell(session_ratios(s, p))));
            row.extend(others.iter().map(|p| hidden(s, p)));
            row
        })
        .collect();
    let median_row = |name: String, set: &[&SessionReplay]| {
        let mut row = vec![
            name,
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ];
        row.extend(
            others
                .iter()
                .map(|p| {
                    let rs: Vec<(f64, f64)> =
                        set.iter().filter_map(|s| session_ratios(s, p)).collect();
                    (!rs.is_empty()).then(|| {
                        (
                            median_f64(&rs.iter().map(|r| r.0).collect::<Vec<_>>()),
                            median_f64(&rs.iter().map(|r| r.1).collect::<Vec<_>>()),
                        )
                    })
                })
                .map(cell),
        );
        row.extend(others.iter().map(|p| {
            let sum: usize = set
                .iter()
                .filter_map(|s| s.policy(p))
                .map(|p| p.hidden.total())
                .sum();
            format!("Σ {sum}")
        }));
        row
    };
    rows.push(median_row(
        format!("median of these {}", listed.len()),
        &listed,
    ));
    let all: Vec<&SessionReplay> = replays.iter().collect();
    rows.push(median_row(format!("median of all {}", all.len()), &all));
    Table { headers, rows }
}

pub(crate) use harness_import::short_id;

/// The ground-truth table: one row per format with usage, and all of them. `scale` is the
/// median over sessions of the recorded tokens per reconstructed token of growth
/// (`SessionTruth::scale`); the `scaled` errors are what is left after it.
pub fn truth_table(truths: &[SessionTruth]) -> (Table, ErrorStats) {
    let mut formats: Vec<harness_import::Format> = Vec::new();
    for t in truths {
        if !formats.contains(&t.format) {
            formats.push(t.format);
        }
    }
    let row = |name: String, s: &ErrorStats| {
        vec![
            name,
            s.sessions.to_string(),
            s.requests.to_string(),
            pct(s.median_abs),
            pct(s.p90_abs),
            pct(s.max_abs),
            format!("{:+.1}%", s.median_signed * 100.0),
            format!("{:.2}", s.median_scale),
            pct(s.median_abs_scaled),
            pct(s.p90_abs_scaled),
        ]
    };
    let mut rows: Vec<Vec<String>> = formats
        .iter()
        .map(|f| {
            let s = error_stats(truths.iter().filter(|t| t.format == *f));
            row(f.name().to_string(), &s)
        })
        .collect();
    let all = error_stats(truths);
    if formats.len() > 1 {
        rows.push(row("all".into(), &all));
    }
    (
        Table {
            headers: [
                "format",
                "sessions",
                "requests",
                "median |err|",
                "p90 |err|",
                "max |err|",
                "median err",
                "scale",
                "median |err| scaled",
                "p90 |err| scaled",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows,
        },
        all,
    )
}

/// The corpus composition: the sum over sessions.
pub fn corpus_composition(sessions: &[SessionComposition]) -> Composition {
    let mut c = Composition::default();
    for s in sessions {
        c.add(&s.total);
    }
    c
}

/// The composition table: one row per session with `min_turns` human turns or more, then the
/// corpus (every session) and the sessions listed. Shares are token-weighted over the requests'
/// messages (the prefix is shown apart).
pub fn composition_table(sessions: &[SessionComposition], min_turns: u32) -> Table {
    let row =
        |name: [String; 3], turns: String, units: String, requests: usize, c: &Composition| {
            let [project, date, name] = name;
            vec![
                project,
                date,
                name,
                turns,
                units,
                group_thousands(requests as u64),
                group_thousands(c.total()),
                pct(c.share(c.in_progress)),
                pct(c.share(c.conclusions)),
                pct(c.share(c.steps)),
                pct(if c.total() == 0 {
                    0.0
                } else {
                    c.prefix as f64 / c.total() as f64
                }),
            ]
        };
    let listed: Vec<&SessionComposition> = sessions
        .iter()
        .filter(|s| s.session.turns >= min_turns && !s.requests.is_empty())
        .collect();
    let mut rows: Vec<Vec<String>> = listed
        .iter()
        .map(|s| {
            row(
                [
                    s.session.project.clone(),
                    s.session.date.clone().unwrap_or_default(),
                    short_id(&s.session.id),
                ],
                s.session.turns.to_string(),
                s.units.to_string(),
                s.requests.len(),
                &s.total,
            )
        })
        .collect();
    let mut these = Composition::default();
    for s in &listed {
        these.add(&s.total);
    }
    rows.push(row(
        [
            format!("these {} sessions", listed.len()),
            String::new(),
            String::new(),
        ],
        String::new(),
        String::new(),
        listed.iter().map(|s| s.requests.len()).sum(),
        &these,
    ));
    rows.push(row(
        [
            format!("all {} sessions", sessions.len()),
            String::new(),
            String::new(),
        ],
        String::new(),
        String::new(),
        sessions.iter().map(|s| s.requests.len()).sum(),
        &corpus_composition(sessions),
    ));
    Table {
        headers: [
            "project",
            "date",
            "session",
            "turns",
            "units",
            "requests",
            "tokens read",
            "in progress",
            "conclusions",
            "steps",
            "prefix (of all)",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::{policy_table, short_id};

    #[test]
    fn the_median_and_last_request_ratios_have_their_own_headings() {
        let t = policy_table(&[], false);
        let at = |h: &str| t.headers.iter().position(|x| x == h).unwrap();
        assert_eq!(at("req med× none"), at("median req") + 1);
        assert_eq!(at("last med× none"), at("last req") + 1);
        let med: Vec<&String> = t.headers.iter().filter(|h| h.contains("med×")).collect();
        assert_eq!(med, ["req med× none", "last med× none"]);
    }

    #[test]
    fn short_ids_keep_a_uuid_head_and_a_subagent_name() {
        assert_eq!(short_id("937c6e6b-27e7-4edd-86f1-ad28f9731841"), "937c6e6b");
        assert_eq!(
            short_id("937c6e6b-27e7-4edd-86f1-ad28f9731841/sidechain-2"),
            "sidechain-2"
        );
        assert_eq!(short_id("agent-a1b2c3"), "agent-a1b2c3");
        assert_eq!(
            short_id("astropy__astropy-12907-and-a-long-tail"),
            "astropy__astropy-12907-…"
        );
    }
}
