//! The answer a replay opens with, and its cost–loss frontier: for each policy, the tokens it
//! would have sent after recovery against `none`'s ([`crate::engine::PolicyReplay::tokens_incl_recovery`],
//! Σ× over sessions with a 95% bootstrap interval, med× beside, the Σ× before recovery after
//! them), what it loses for good (hidden references with nothing to recover them from —
//! [`crate::hidden::Recovery::gone`] — per 100 responses), and whether it is on the frontier.
//!
//! The loss counts only what is gone: a reference an archive grep or a re-run brings back is
//! paid for in the cost (its round trip and the tokens it carries), so counting it as a loss too
//! would count it twice. The hidden references per 100 responses (recoverable ones included)
//! stay in the policy table.

use harness_report::answer::Answer;
use harness_report::frontier::{self, Point};
use harness_report::verdict::{self, Estimate, Pair};

use crate::engine::SessionReplay;
use crate::report::{PolicySummary, NONE};

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
                    base_cost: b.cost(),
                    arm_cost: p.cost(),
                    base_success: true,
                    arm_success: true,
                })
            })
            .collect();
        if pairs.is_empty() {
            continue;
        }
        let v = verdict::verdict(&row.policy, NONE, &pairs);
        out.push(answer(row, v.tokens, v.tokens_median, false));
    }
    let marked = points(&out);
    for (a, p) in out.iter_mut().zip(marked) {
        a.frontier = p.frontier;
    }
    out
}

/// The verdict block for the terminal: the heading and one line per policy, each broken at
/// `width` columns.
pub fn block(answers: &[Answer], sessions: usize, width: usize) -> Vec<String> {
    if answers.is_empty() {
        return Vec::new();
    }
    let heading = format!(
        "{} ({sessions} sessions)",
        harness_report::answer::REPLAY_HEADING
    );
    let mut out = harness_report::answer::wrap(&heading, width, 2);
    for l in harness_report::answer::lines(answers) {
        out.extend(harness_report::answer::wrap(&format!("  {l}"), width, 6));
    }
    out
}
