//! The answer a replay opens with, and its cost–loss frontier: for each policy, the tokens it
//! would have sent after recovery against `none`'s ([`crate::engine::PolicyReplay::tokens_incl_recovery`],
//! Σ× over sessions with a 95% bootstrap interval, med× beside, the Σ× before recovery after
//! them), what it loses for good (hidden references with nothing to recover them from —
//! [`crate::hidden::Recovery::gone`] — per 100 responses), and whether it is on the frontier.
//!
//! Every figure compares the same sessions under every policy: [`completed`] leaves out, before
//! the tables, the verdict and the frontier are made, the sessions a policy failed on (an
//! `exec:` policy's process that broke the protocol) and the policies that completed none, and
//! [`LeftOut`] says how many.
//!
//! The loss counts only what is gone: a reference an archive grep or a re-run brings back is
//! paid for in the cost (its round trip and the tokens it carries), so counting it as a loss too
//! would count it twice. The hidden references per 100 responses (recoverable ones included)
//! stay in the policy table.

use harness_core::behaviour::End;
use harness_report::fmt::count;
use harness_report::frontier::{self, Point};
use harness_report::headline::Answer;
use harness_report::verdict::{self, Estimate, Pair};
use serde::Serialize;

use crate::engine::SessionReplay;
use crate::report::{PolicySummary, NONE};

/// What [`completed`] left out of the comparison.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    /// Sessions replayed in all, before any was left out.
    pub(crate) of: usize,
    /// Policies that completed no session: in no table, verdict or frontier.
    pub(crate) policies: Vec<String>,
    /// Sessions a policy failed on: in no table, verdict or frontier, under any policy.
    pub(crate) sessions: Vec<LeftSession>,
}

/// A session left out, and the policies that failed on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct LeftSession {
    /// The session's id.
    pub(crate) id: String,
    /// Its file.
    pub(crate) source: String,
    /// The policies that failed on it.
    pub(crate) failed: Vec<String>,
}

impl LeftOut {
    /// The sessions compared, for a heading: `10 sessions`, or `7 sessions; 3 left out: a
    /// policy failed on them`.
    pub fn sessions_label(&self) -> String {
        let kept = self.of - self.sessions.len();
        if self.sessions.is_empty() {
            count(kept, "session")
        } else {
            format!(
                "{}; {} left out: a policy failed on {}",
                count(kept, "session"),
                self.sessions.len(),
                if self.sessions.len() == 1 {
                    "it"
                } else {
                    "them"
                }
            )
        }
    }

    /// The sessions compared, for a sentence: `10 sessions`, or `7 sessions (3 more left out: a
    /// policy failed on them)`.
    pub fn sessions_phrase(&self) -> String {
        let kept = count(self.of - self.sessions.len(), "session");
        if self.sessions.is_empty() {
            kept
        } else {
            format!(
                "{kept} ({} more left out: a policy failed on {})",
                self.sessions.len(),
                if self.sessions.len() == 1 {
                    "it"
                } else {
                    "them"
                }
            )
        }
    }

    /// The notes that say what was left out and why (none when nothing was).
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.policies.is_empty() {
            out.push(format!(
                "{} completed no session (the errors above): left out of the tables, the verdict and the frontier",
                self.policies.join(", ")
            ));
        }
        if !self.sessions.is_empty() {
            let mut by: Vec<(String, usize)> = Vec::new();
            for p in self.sessions.iter().flat_map(|s| &s.failed) {
                match by.iter_mut().find(|(q, _)| q == p) {
                    Some((_, n)) => *n += 1,
                    None => by.push((p.clone(), 1)),
                }
            }
            let who: Vec<String> = by.iter().map(|(p, n)| format!("{p} on {n}")).collect();
            let kept = self.of - self.sessions.len();
            out.push(format!(
                "{} of {} are left out of the tables, the verdict and the frontier, under every policy: a policy failed on them ({}; the errors above); every figure compares the {} every policy completed",
                self.sessions.len(),
                count(self.of, "session"),
                who.join(", "),
                count(kept, "session")
            ));
        }
        out
    }
}

/// The replays every figure compares, and what was left out: a policy that completed no
/// session is taken out of every session (and of `policies`, the order of the tables), then a
/// session any other policy failed on is left out whole, so each table, the verdict and the
/// frontier compare the policies on the same sessions (a failed policy's partial replay
/// against the baseline's whole one would look like a saving).
pub fn completed(
    replays: Vec<SessionReplay>,
    policies: &[String],
) -> (Vec<SessionReplay>, Vec<String>, LeftOut) {
    let mut left = LeftOut {
        of: replays.len(),
        ..LeftOut::default()
    };
    let done = |label: &str| replays.iter().any(|s| s.policy(label).is_some());
    left.policies = policies
        .iter()
        .filter(|p| !replays.is_empty() && !done(p))
        .cloned()
        .collect();
    let order: Vec<String> = policies
        .iter()
        .filter(|p| !left.policies.contains(p))
        .cloned()
        .collect();
    let mut kept = Vec::with_capacity(replays.len());
    for mut s in replays {
        s.policies.retain(|p| !left.policies.contains(&p.policy));
        let failed: Vec<String> = s
            .policies
            .iter()
            .filter(|p| p.error.is_some())
            .map(|p| p.policy.clone())
            .collect();
        if failed.is_empty() {
            kept.push(s);
        } else {
            left.sessions.push(LeftSession {
                id: s.session.id.clone(),
                source: s.session.source.clone(),
                failed,
            });
        }
    }
    (kept, order, left)
}

/// What a policy's loss line says beside the rate: `13 of 19 hidden; 6 recovered` (gone of all
/// hidden; recovered by a recovery of their own or shown by one still carried).
fn loss_note(r: &PolicySummary) -> Option<String> {
    let rec = &r.recovery;
    (r.hidden_references > 0).then(|| {
        let mut s = format!("{} of {} hidden", rec.gone, r.hidden_references);
        if rec.recovered + rec.covered > 0 {
            s.push_str(&format!("; {} recovered", rec.recovered + rec.covered));
        }
        s
    })
}

/// The frontier's points of `answers`: cost each one's tokens incl. recovery Σ× none (the
/// answer's own figure), loss its references gone per 100 responses; frontier marked.
pub fn points(answers: &[Answer]) -> Vec<Point> {
    let mut points: Vec<Point> = answers
        .iter()
        .map(|a| Point {
            arm: a.arm.clone(),
            cost: a.tokens.point,
            loss: a.loss,
            frontier: false,
        })
        .collect();
    frontier::mark(&mut points);
    points
}

/// One answer per policy of `summary`, `none` first as the baseline, frontier marked; policies
/// with no session paired with `none` are left out. Empty without `none`.
pub fn answers(replays: &[SessionReplay], summary: &[PolicySummary]) -> Vec<Answer> {
    let Some(none) = summary.iter().find(|r| r.policy == NONE) else {
        return Vec::new();
    };
    let answer = |r: &PolicySummary, tokens: Estimate, median: f64, baseline: bool| Answer {
        arm: r.policy.clone(),
        baseline,
        tokens,
        tokens_median: median,
        before_recovery: (!baseline).then_some(r.total_ratio).flatten(),
        loss: r.gone_per_100_responses,
        loss_unit: "refs gone/100 resp".into(),
        loss_note: loss_note(r),
        success: None,
        cost: None,
        range: None,
        frontier: false,
    };
    let one = Estimate {
        point: 1.0,
        lo: 1.0,
        hi: 1.0,
    };
    let mut out = vec![answer(none, one, 1.0, true)];
    for row in summary.iter().filter(|r| r.policy != NONE) {
        let pairs: Vec<Pair> = replays
            .iter()
            .filter_map(|s| {
                let (b, p) = (s.policy(NONE)?, s.policy(&row.policy)?);
                (p.error.is_none() && !p.sizes().is_empty()).then(|| Pair {
                    base_tokens: b.tokens_incl_recovery() as f64,
                    arm_tokens: p.tokens_incl_recovery() as f64,
                    base_cost: b.cost_incl_recovery_at(End::Point),
                    arm_cost: p.cost_incl_recovery_at(End::Point),
                    base_success: true,
                    arm_success: true,
                })
            })
            .collect();
        if pairs.is_empty() {
            continue;
        }
        let v = verdict::verdict(&row.policy, NONE, &pairs);
        let mut a = answer(row, v.tokens, v.tokens_median, false);
        a.cost = Some(v.cost.point);
        a.range = Some((
            ratio_at(replays, &row.policy, End::Low),
            ratio_at(replays, &row.policy, End::High),
        ));
        out.push(a);
    }
    let marked = points(&out);
    for (a, p) in out.iter_mut().zip(marked) {
        a.frontier = p.frontier;
    }
    out
}

/// The sessions `policy` and `none` both replayed, as the verdict pairs them.
fn paired<'a>(
    replays: &'a [SessionReplay],
    policy: &'a str,
) -> impl Iterator<
    Item = (
        &'a crate::engine::PolicyReplay,
        &'a crate::engine::PolicyReplay,
    ),
> + 'a {
    replays.iter().filter_map(move |s| {
        let (b, p) = (s.policy(NONE)?, s.policy(policy)?);
        (p.error.is_none() && !p.sizes().is_empty()).then_some((b, p))
    })
}

/// Tokens incl. recovery Σ× none of `policy` with recovery read at `end` of the behaviour
/// profile's intervals (the pairs of the verdict; 1 with none).
pub(crate) fn ratio_at(replays: &[SessionReplay], policy: &str, end: End) -> f64 {
    let (mut a, mut b) = (0u64, 0u64);
    for (base, arm) in paired(replays, policy) {
        a += arm.tokens_incl_recovery_at(end);
        b += base.tokens_incl_recovery_at(end);
    }
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}

/// References gone per 100 responses of `policy` with recovery read at `end`.
pub(crate) fn gone_at(replays: &[SessionReplay], policy: &str, end: End) -> f64 {
    let (mut gone, mut responses) = (0usize, 0usize);
    for s in replays {
        if let Some(p) = s.policy(policy) {
            gone += p.recovery_at(end).gone;
            responses += p.probes.requests;
        }
    }
    if responses == 0 {
        0.0
    } else {
        100.0 * gone as f64 / responses as f64
    }
}

/// The frontier's points with recovery read at `end` of the profile's intervals: the same
/// policies as `answers`, their cost and loss there, frontier marked.
pub(crate) fn points_at(replays: &[SessionReplay], answers: &[Answer], end: End) -> Vec<Point> {
    let mut points: Vec<Point> = answers
        .iter()
        .map(|a| Point {
            arm: a.arm.clone(),
            cost: if a.baseline {
                1.0
            } else {
                ratio_at(replays, &a.arm, end)
            },
            loss: gone_at(replays, &a.arm, end),
            frontier: false,
        })
        .collect();
    frontier::mark(&mut points);
    points
}

/// The frontier at the low and the high end of the behaviour profile's intervals, then one line
/// per ranking that flips between them — a policy against `none`, two policies against each
/// other, a policy's place on the frontier — or one line saying none does.
pub fn sensitivity(replays: &[SessionReplay], answers: &[Answer]) -> Vec<String> {
    let lo = points_at(replays, answers, End::Low);
    let hi = points_at(replays, answers, End::High);
    let on = |ps: &[Point]| {
        let v: Vec<&str> = ps
            .iter()
            .filter(|p| p.frontier)
            .map(|p| p.arm.as_str())
            .collect();
        v.join(", ")
    };
    let mut out = vec![format!(
        "Frontier at the low end of the behaviour profile's intervals: {}; at the high end: {}",
        on(&lo),
        on(&hi)
    )];
    let head = out.len();
    let side = |x: f64, y: f64| {
        if x < y - 1e-9 {
            Some("cheaper")
        } else if x > y + 1e-9 {
            Some("dearer")
        } else {
            None
        }
    };
    for (i, (a, b)) in lo.iter().zip(&hi).enumerate() {
        if answers[i].baseline {
            continue;
        }
        if let (Some(x), Some(y)) = (side(a.cost, 1.0), side(b.cost, 1.0)) {
            if x != y {
                out.push(format!(
                    "{} against none depends on the recovery rate: {x} at the low end of the profile (Σ× {:.2}), {y} at the high end (Σ× {:.2})",
                    a.arm, a.cost, b.cost
                ));
            }
        }
    }
    for i in 0..lo.len() {
        for j in (i + 1)..lo.len() {
            if answers[i].baseline || answers[j].baseline {
                continue;
            }
            let (x, y) = (side(lo[i].cost, lo[j].cost), side(hi[i].cost, hi[j].cost));
            if let (Some(x), Some(y)) = (x, y) {
                if x != y {
                    out.push(format!(
                        "{} against {} depends on the recovery rate: {x} at the low end of the profile, {y} at the high end",
                        lo[i].arm, lo[j].arm
                    ));
                }
            }
        }
    }
    for (a, b) in lo.iter().zip(&hi) {
        if a.frontier != b.frontier {
            let (on, off) = if a.frontier {
                ("low", "high")
            } else {
                ("high", "low")
            };
            out.push(format!(
                "{} is on the frontier at the {on} end of the profile, not at the {off} end",
                a.arm
            ));
        }
    }
    if out.len() == head {
        out.push("No ranking flips between the low and the high end of the behaviour profile's intervals (verdict and frontier the same at both).".into());
    }
    out
}

/// The verdict block for the terminal: the heading (naming the behaviour `profile`, with
/// `sessions`, what was compared: [`LeftOut::sessions_label`]) and one line per policy, each
/// broken at `width` columns.
pub fn block(answers: &[Answer], sessions: &str, profile: &str, width: usize) -> Vec<String> {
    if answers.is_empty() {
        return Vec::new();
    }
    let heading = format!(
        "{} ({sessions})",
        harness_report::headline::replay_heading(profile)
    );
    let mut out = harness_report::headline::wrap(&heading, width, 2);
    for l in harness_report::headline::lines(answers) {
        out.extend(harness_report::headline::wrap(&format!("  {l}"), width, 6));
    }
    out
}
