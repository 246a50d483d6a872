//! Subagents on recorded sessions: what delegating bought and cost.
//!
//! A subagent (Claude Code's `Task` / `Agent` tool) is a session of its own whose `parent` is
//! the session that called it ([`ImportedSession::parent`]). This module:
//!
//! - **pairs** each child with the parent's call that started it (`pair`): the unused call
//!   whose `prompt` input is the child's first prompt, word for word; failing that, the latest
//!   unused call made before the child's first record (a minute of slack: the lines of one
//!   response are written as its blocks end) ([`Match::Time`]); a child neither finds is left
//!   unpaired and said so. The receipt is the parent's result of that call.
//! - gives each pair's figures ([`Child`]): the brief and the receipt in tokens as the parent
//!   read them (the call as counted in its message; the result message), the child's requests
//!   as recorded (count, uncached input, cache reads, cache writes, output, and their cost at its
//!   own model's price from [`harness_core::prices`]), its wall-clock span (first to last
//!   record) and how much of it another child of the same parent overlapped.
//! - measures the **room saved** and the **money** of each parent's delegations with the
//!   replay engine ([`measure()`], `inline_session`): the parent replayed as recorded, and with every
//!   child's work spliced in at its call, under `none` and `fold`.
//! - says how much of the children's time ran beside another child's, and how long the parent
//!   sat idle while they ran: the gaps between consecutive parent records, the later of which
//!   is not a response of the parent's (it was waiting on a tool, not thinking), covered by a
//!   child's span.

mod inline;
mod measure;
mod table;

pub(crate) use inline::{inline_session, Splice};
pub use measure::{corpus, measure, Measured, Money, Saving};
pub(crate) use table::duration;
pub use table::{subagent_notes, subagent_table};

use std::sync::Arc;

use harness_core::prices::PriceTable;
use harness_core::tokens::{self, MESSAGE_OVERHEAD};
use harness_core::{Message, Role, ToolCall};
use harness_import::ImportedSession;
use serde::Serialize;

/// The names of the tool that starts a subagent (Claude Code: `Task`, later `Agent`).
pub(crate) const CALL_TOOLS: [&str; 2] = ["Task", "Agent"];

/// Slack allowed between a call's recorded time and its child's first record (milliseconds).
pub(crate) const TIME_SLACK_MS: i64 = 60_000;

/// How a child was paired with its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Match {
    /// The call's `prompt` input is the child's first prompt.
    Prompt,
    /// No prompt matched: the latest unused call before the child's first record.
    Time,
}

/// One subagent paired with the parent's call that started it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Child {
    /// The child session's id.
    pub id: String,
    /// The call's id (`tool_use` id).
    pub(crate) call_id: String,
    /// The tool called (`Task`, `Agent`).
    pub(crate) tool: String,
    /// The call's `description` input, when given.
    pub(crate) description: Option<String>,
    /// How the pair was made.
    pub matched: Match,
    /// Index in the parent's messages of the assistant message that made the call.
    pub call_message: usize,
    /// Index in the parent's messages of the call's result (the receipt), when recorded.
    pub receipt_message: Option<usize>,
    /// Tokens of the call as the parent's context counts it: name, input, overhead.
    pub brief_tokens: u64,
    /// Tokens of the receipt message.
    pub receipt_tokens: u64,
    /// Tokens of the child's work as it would sit in the parent's context: its responses and
    /// tool results after its first prompt, the final answer left out (the receipt carries it).
    pub work_tokens: u64,
    /// The model most of the child's requests name.
    pub(crate) model: Option<String>,
    /// The child's recorded requests.
    pub requests: usize,
    /// Of them, those with recorded usage (the token figures below sum these).
    pub(crate) requests_with_usage: usize,
    /// Uncached input tokens, as recorded.
    pub input_tokens: u64,
    /// Input tokens read from the provider's cache, as recorded.
    pub cached_tokens: u64,
    /// Input tokens written to the provider's cache, as recorded.
    pub written_tokens: u64,
    /// Output tokens, as recorded.
    pub output_tokens: u64,
    /// The recorded usage at the child's model's price (dollars).
    pub cost: f64,
    /// The child's first record (milliseconds since the epoch), when recorded.
    pub(crate) started_ms: Option<i64>,
    /// The child's last record.
    pub(crate) ended_ms: Option<i64>,
    /// Milliseconds of the child's span during which another child of the same parent ran.
    pub overlap_ms: i64,
}

impl Child {
    /// The wall-clock span, first to last record (0 when not recorded).
    pub fn span_ms(&self) -> i64 {
        match (self.started_ms, self.ended_ms) {
            (Some(a), Some(b)) if b > a => b - a,
            _ => 0,
        }
    }
}

/// A call that may start a subagent.
struct Call<'a> {
    message: usize,
    call: &'a ToolCall,
    prompt: &'a str,
    at_ms: Option<i64>,
}

/// The calls of `parent` that start subagents, in order.
fn calls(parent: &ImportedSession) -> Vec<Call<'_>> {
    let mut out = Vec::new();
    for (i, m) in parent.messages.iter().enumerate() {
        if m.role != Role::Assistant {
            continue;
        }
        for c in &m.tool_calls {
            if CALL_TOOLS.contains(&c.name.as_str()) {
                out.push(Call {
                    message: i,
                    call: c,
                    prompt: c.str_arg("prompt").unwrap_or(""),
                    at_ms: parent.message_time(i),
                });
            }
        }
    }
    out
}

/// The child's first prompt: the text of its first user message.
fn brief_of(child: &ImportedSession) -> Option<&Arc<Message>> {
    child.messages.iter().find(|m| m.is_human())
}

/// The first prompt of Claude Code's cache warm-up sidechains.
pub(crate) const WARMUP_PROMPT: &str = "Warmup";

/// Whether `child` is a warm-up sidechain, started by no call: its first prompt is
/// [`WARMUP_PROMPT`], or it has no prompt and made no tool call (a lone greeting whose prompt
/// was not written; a child without its prompt that worked is paired by time).
pub(crate) fn is_warmup(child: &ImportedSession) -> bool {
    match brief_of(child) {
        Some(m) => m.text.trim() == WARMUP_PROMPT,
        None => child.messages.iter().all(|m| m.tool_calls.is_empty()),
    }
}

/// The children of one parent, sorted out.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pairing {
    /// Each child paired with its call (with the index of the child in `children`), in the
    /// order of the calls.
    pub(crate) paired: Vec<(usize, Child)>,
    /// Children no call was found for.
    pub(crate) unpaired: Vec<usize>,
    /// Warm-up sidechains ([`is_warmup`]): not delegations.
    pub(crate) warmups: Vec<usize>,
}

/// Pairs each of `children` (sessions whose parent is `parent`) with the call that started it.
pub(crate) fn pair(
    parent: &ImportedSession,
    children: &[&ImportedSession],
    prices: &PriceTable,
) -> Pairing {
    let calls = calls(parent);
    let mut used = vec![false; calls.len()];
    let mut order: Vec<usize> = (0..children.len()).collect();
    order.sort_by_key(|&k| (children[k].started_ms.unwrap_or(i64::MAX), k));
    let mut paired = Vec::new();
    let mut unpaired = Vec::new();
    let mut warmups = Vec::new();
    for k in order {
        let child = children[k];
        if is_warmup(child) {
            warmups.push(k);
            continue;
        }
        let start = child.started_ms;
        let brief = brief_of(child).map(|m| m.text.trim());
        let by_prompt = best_call(&calls, &used, start, |c| {
            brief.is_some_and(|b| !b.is_empty() && c.prompt.trim() == b)
        });
        let (j, matched) = match by_prompt {
            Some(j) => (j, Match::Prompt),
            None => match start.and_then(|s| {
                best_call(&calls, &used, start, |c| {
                    c.at_ms.is_some_and(|t| t <= s + TIME_SLACK_MS)
                })
            }) {
                Some(j) => (j, Match::Time),
                None => {
                    unpaired.push(k);
                    continue;
                }
            },
        };
        used[j] = true;
        paired.push((k, child_figures(parent, &calls[j], child, matched, prices)));
    }
    paired.sort_by_key(|(k, c)| (c.call_message, *k));
    let spans: Vec<Option<(i64, i64)>> = paired
        .iter()
        .map(|(_, c)| Some((c.started_ms?, c.ended_ms?)))
        .collect();
    for (i, (_, c)) in paired.iter_mut().enumerate() {
        if let Some((a, b)) = spans[i] {
            let others = spans
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .filter_map(|(_, s)| *s)
                .collect();
            c.overlap_ms = covered(&union(others), a, b);
        }
    }
    Pairing {
        paired,
        unpaired,
        warmups,
    }
}

/// Among the unused calls `fits` accepts, the latest made before `start` (with the slack), else
/// the first.
fn best_call(
    calls: &[Call<'_>],
    used: &[bool],
    start: Option<i64>,
    fits: impl Fn(&Call<'_>) -> bool,
) -> Option<usize> {
    let ok: Vec<usize> = (0..calls.len())
        .filter(|&j| !used[j] && fits(&calls[j]))
        .collect();
    let before = |j: &usize| match (calls[*j].at_ms, start) {
        (Some(t), Some(s)) => t <= s + TIME_SLACK_MS,
        _ => false,
    };
    ok.iter()
        .copied()
        .filter(before)
        .max_by_key(|&j| (calls[j].at_ms, std::cmp::Reverse(j)))
        .or_else(|| ok.first().copied())
}

/// The figures of one pair.
fn child_figures(
    parent: &ImportedSession,
    call: &Call<'_>,
    child: &ImportedSession,
    matched: Match,
    prices: &PriceTable,
) -> Child {
    let receipt_message = parent
        .messages
        .iter()
        .position(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(&call.call.id));
    let c = call.call;
    let brief_tokens =
        u64::from(tokens::count(&c.name) + tokens::count(&c.canonical_args()) + MESSAGE_OVERHEAD);
    let mut out = Child {
        id: child.id.clone(),
        call_id: c.id.clone(),
        tool: c.name.clone(),
        description: c.str_arg("description").map(str::to_string),
        matched,
        call_message: call.message,
        receipt_message,
        brief_tokens,
        receipt_tokens: receipt_message.map_or(0, |i| u64::from(parent.messages[i].tokens)),
        work_tokens: work(child).iter().map(|m| u64::from(m.tokens)).sum(),
        model: child.model().map(str::to_string),
        requests: child.requests.len(),
        requests_with_usage: 0,
        input_tokens: 0,
        cached_tokens: 0,
        written_tokens: 0,
        output_tokens: 0,
        cost: 0.0,
        started_ms: child.started_ms,
        ended_ms: child.ended_ms,
        overlap_ms: 0,
    };
    for r in &child.requests {
        let Some(u) = r.usage else { continue };
        out.requests_with_usage += 1;
        out.input_tokens += u.input_tokens;
        out.cached_tokens += u.cache_read_tokens;
        out.written_tokens += u.cache_write_tokens;
        out.output_tokens += u.output_tokens;
        let p = prices.lookup(r.model.as_deref()).0;
        out.cost += (u.input_tokens as f64
            + u.cache_write_tokens as f64 * p.cache_write
            + u.cache_read_tokens as f64 * p.cache_read
            + u.output_tokens as f64 * p.output)
            * p.input
            / 1e6;
    }
    out
}

/// The child's work as it would sit in the parent's context: its responses and tool results
/// after its first prompt (its other user-role messages — reminders, notices — left out), the
/// final answer left out when it is the last message (the receipt carries it).
pub(crate) fn work(child: &ImportedSession) -> Vec<Arc<Message>> {
    inline::work_indexes(child)
        .0
        .into_iter()
        .map(|i| Arc::clone(&child.messages[i]))
        .collect()
}

/// The union of intervals `[a, b)`, sorted and merged.
fn union(mut spans: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    spans.retain(|(a, b)| b > a);
    spans.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (a, b) in spans {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// How much of `[a, b)` the merged intervals cover.
fn covered(merged: &[(i64, i64)], a: i64, b: i64) -> i64 {
    merged
        .iter()
        .map(|&(x, y)| (y.min(b) - x.max(a)).max(0))
        .sum()
}

/// The parent's idle time while its children ran (milliseconds): over consecutive parent
/// messages with timestamps whose later one is not the parent's own response, the part of the
/// gap some child's span covers.
pub(crate) fn parent_idle_ms(parent: &ImportedSession, children: &[Child]) -> i64 {
    let merged = union(
        children
            .iter()
            .filter_map(|c| Some((c.started_ms?, c.ended_ms?)))
            .collect(),
    );
    let mut idle = 0;
    let mut prev: Option<i64> = None;
    for (i, m) in parent.messages.iter().enumerate() {
        let Some(t) = parent.message_time(i) else {
            continue;
        };
        if let Some(p) = prev {
            if m.role != Role::Assistant && t > p {
                idle += covered(&merged, p, t);
            }
        }
        prev = Some(prev.map_or(t, |p| p.max(t)));
    }
    idle
}

/// One parent session's delegations.
#[derive(Debug, Clone, Serialize)]
pub struct SessionSubagents {
    /// The parent session's id.
    pub(crate) session: String,
    /// The file it was read from.
    pub(crate) source: String,
    /// The model most of its requests name.
    pub(crate) model: Option<String>,
    /// The paired children, in the order of their calls.
    pub children: Vec<Child>,
    /// Ids of children whose call was not found (counted nowhere else).
    pub unpaired: Vec<String>,
    /// Ids of warm-up sidechains ([`is_warmup`]), started by no call (counted nowhere else).
    pub(crate) warmups: Vec<String>,
    /// Milliseconds of all children's spans, summed.
    pub(crate) span_ms: i64,
    /// Of them, the milliseconds during which another child ran too.
    pub(crate) overlap_ms: i64,
    /// The parent's idle time while its children ran (`parent_idle_ms`).
    pub parent_idle_ms: i64,
    /// Context saved and money, from the replays ([`measure()`]); `None` when nothing was paired.
    pub measured: Option<Measured>,
}

impl SessionSubagents {
    /// Whether any child is a delegation: paired, or a call was looked for in vain (warm-ups
    /// are not).
    pub fn delegated(&self) -> bool {
        !self.children.is_empty() || !self.unpaired.is_empty()
    }
}

/// The parents among `sessions` (sessions another names as its parent), each with its children
/// paired and timed; room and money are left for [`measure()`].
pub fn delegations(sessions: &[ImportedSession], prices: &PriceTable) -> Vec<SessionSubagents> {
    let mut out = Vec::new();
    for parent in sessions {
        let children: Vec<&ImportedSession> = sessions
            .iter()
            .filter(|s| s.parent.as_deref() == Some(parent.id.as_str()) && s.id != parent.id)
            .collect();
        if children.is_empty() {
            continue;
        }
        let pairing = pair(parent, &children, prices);
        let ids = |ks: &[usize]| ks.iter().map(|&k| children[k].id.clone()).collect();
        let unpaired = ids(&pairing.unpaired);
        let warmups = ids(&pairing.warmups);
        let children_paired: Vec<Child> = pairing.paired.into_iter().map(|(_, c)| c).collect();
        let span_ms = children_paired.iter().map(Child::span_ms).sum();
        let overlap_ms = children_paired.iter().map(|c| c.overlap_ms).sum();
        out.push(SessionSubagents {
            session: parent.id.clone(),
            source: parent.source.clone(),
            model: parent.model().map(str::to_string),
            parent_idle_ms: parent_idle_ms(parent, &children_paired),
            children: children_paired,
            unpaired,
            warmups,
            span_ms,
            overlap_ms,
            measured: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_merge_and_cover() {
        let m = union(vec![(5, 10), (0, 3), (2, 4), (20, 20)]);
        assert_eq!(m, vec![(0, 4), (5, 10)]);
        assert_eq!(covered(&m, 3, 7), 1 + 2);
        assert_eq!(covered(&m, 10, 30), 0);
    }
}
