//! The subagents table of `foldbench replay` and its notes.

use harness_core::fold::group_thousands;
use harness_report::render::Table;

use super::measure::corpus;
use super::SessionSubagents;
use crate::report::short_id;

/// A signed token count, thousands grouped: `+12,345`, `−678`.
fn signed(n: i64) -> String {
    let g = group_thousands(n.unsigned_abs());
    match n.cmp(&0) {
        std::cmp::Ordering::Greater => format!("+{g}"),
        std::cmp::Ordering::Less => format!("−{g}"),
        std::cmp::Ordering::Equal => "0".into(),
    }
}

/// A duration: `42s`, `13m 05s`, `2h 03m`.
pub fn duration(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m {:02}s", s / 60, s % 60)
    } else {
        format!("{}h {:02}m", s / 3600, (s % 3600) / 60)
    }
}

fn money(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}")
    } else {
        "–".into()
    }
}

fn times(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}×")
    } else {
        "–".into()
    }
}

/// Sums of a set of parents: one row's figures.
#[derive(Default)]
struct Sums {
    children: usize,
    unpaired: usize,
    requests: usize,
    carried: u64,
    work: u64,
    saved_none: i64,
    saved_fold: i64,
    delegated: f64,
    inline: f64,
    span: i64,
    overlap: i64,
    idle: i64,
}

impl Sums {
    fn add(&mut self, s: &SessionSubagents) {
        self.children += s.children.len();
        self.unpaired += s.unpaired.len();
        for c in &s.children {
            self.requests += c.requests;
            self.carried += c.brief_tokens + c.receipt_tokens;
            self.work += c.work_tokens;
        }
        if let Some(m) = &s.measured {
            self.saved_none += m.saving("none").map_or(0, |r| r.saved());
            self.saved_fold += m.saving("fold").map_or(0, |r| r.saved());
            self.delegated += m.money.delegated_cost();
            self.inline += m.money.inline_cost;
        }
        self.span += s.span_ms;
        self.overlap += s.overlap_ms;
        self.idle += s.parent_idle_ms;
    }

    fn row(&self, name: String) -> Vec<String> {
        let ratio = if self.inline > 0.0 {
            self.delegated / self.inline
        } else {
            f64::INFINITY
        };
        let share = if self.span > 0 {
            format!("{:.0}%", self.overlap as f64 * 100.0 / self.span as f64)
        } else {
            "–".into()
        };
        vec![
            name,
            if self.unpaired > 0 {
                format!("{}/{}", self.children, self.children + self.unpaired)
            } else {
                self.children.to_string()
            },
            group_thousands(self.requests as u64),
            group_thousands(self.carried),
            group_thousands(self.work),
            signed(self.saved_none),
            signed(self.saved_fold),
            money(self.delegated),
            money(self.inline),
            times(ratio),
            share,
            duration(self.idle),
        ]
    }
}

/// One row per parent session that delegated ([`SessionSubagents::delegated`]), and `all` when
/// there are several: subagents
/// paired (paired/all when some were not), their requests, brief + receipt tokens, work tokens,
/// room saved under `none` and `fold`, cost delegated and inline, their ratio, the share of the
/// children's time another child overlapped, the parent's idle time while they ran.
pub fn subagent_table(subs: &[SessionSubagents]) -> Table {
    let headers = [
        "session",
        "agents",
        "child reqs",
        "brief + receipt",
        "work",
        "saved none",
        "saved fold",
        "deleg. $",
        "inline $",
        "deleg ÷ inline",
        "overlap",
        "parent idle",
    ];
    let mut rows = Vec::new();
    let mut all = Sums::default();
    let shown: Vec<&SessionSubagents> = subs.iter().filter(|s| s.delegated()).collect();
    for s in &shown {
        let mut one = Sums::default();
        one.add(s);
        all.add(s);
        rows.push(one.row(short_id(&s.session)));
    }
    if shown.len() > 1 {
        rows.push(all.row("all".into()));
    }
    Table {
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows,
    }
}

/// The notes under the table: what the figures count, the cost model, the ratio over sessions
/// with its interval, and what delegating lost.
pub fn subagent_notes(subs: &[SessionSubagents]) -> Vec<String> {
    let mut notes = vec![
        "agents: subagents paired with the parent's Task/Agent call (by their first prompt, else by time) · child reqs, brief + receipt, work: the children's recorded requests, the call and its result as the parent read them, the children's own responses and tool results (their final answer left out: the receipt carries it)".to_string(),
        "saved none/fold: the input tokens the parent's requests would have carried with each child's work inline at its call, minus what they carried (brief and receipt), replayed under none and under fold (the inline work folded at turn ends too)".to_string(),
        "deleg. $ (dollars): the children replayed at their own models' prices + the briefs and receipts in the parent's requests · inline $: the same work as the parent's own requests at its model's price; both with the replay's cache model (the prefix shared with the previous request read at the cache-read rate, the rest written), so inline work is appended and read from the cache by later requests".to_string(),
        "lost: the parent never saw the children's work (the work column), only the receipts; whether a receipt left out what the parent needed later is not measured here · overlap: share of the children's time during which another child of the same parent ran · parent idle: the parent's gaps between records, waiting on a tool, while a child ran".to_string(),
    ];
    if let Some(v) = corpus(subs) {
        notes.push(format!(
            "delegated vs inline over {} session{}: cost {}, input tokens {} (95% bootstrap intervals over sessions)",
            v.pairs,
            if v.pairs == 1 { "" } else { "s" },
            v.cost.ratio_text(),
            v.tokens.ratio_text()
        ));
    }
    let recorded: f64 = subs.iter().flat_map(|s| &s.children).map(|c| c.cost).sum();
    let replayed: f64 = subs
        .iter()
        .filter_map(|s| s.measured.as_ref())
        .map(|m| m.money.children_cost)
        .sum();
    notes.push(format!(
        "the children's recorded usage costs ${recorded:.2} at their models' prices; replayed with the cache model above, ${replayed:.2} (the figure both sides of deleg. ÷ inline use)"
    ));
    let warmups: usize = subs.iter().map(|s| s.warmups.len()).sum();
    if warmups > 0 {
        notes.push(format!(
            "{warmups} warm-up sidechain{} (first prompt `Warmup`, or none and no tool call: Claude Code warming its cache, started by no call) not counted",
            if warmups == 1 { "" } else { "s" }
        ));
    }
    let unpaired: usize = subs.iter().map(|s| s.unpaired.len()).sum();
    if unpaired > 0 {
        notes.push(format!(
            "{unpaired} subagent session{} found no call in {} parent (not counted)",
            if unpaired == 1 { "" } else { "s" },
            if unpaired == 1 { "its" } else { "their" }
        ));
    }
    notes
}
