//! Metrics (docs/design.md §9), computed by the harness from the events of a cell. The simulated agent
//! never reports a number; everything here is measured from what happened.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::events::{Event, FactSeen, RequestRecord, ToolCallRecord};
use crate::request::{Purpose, Usage};
use crate::spec::TaskSpec;

/// The name of the tool that starts a child session (offered under a `+delegate` arm).
pub const DELEGATE_TOOL: &str = "delegate";

/// Prices of one model, in dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// Base input price.
    pub input: f64,
    /// Multiplier for cache writes.
    #[serde(default = "default_write")]
    pub cache_write: f64,
    /// Multiplier for cache reads.
    #[serde(default = "default_read")]
    pub cache_read: f64,
    /// Multiplier for output tokens.
    #[serde(default = "default_output")]
    pub output: f64,
}

fn default_write() -> f64 {
    1.25
}
fn default_read() -> f64 {
    0.1
}
fn default_output() -> f64 {
    5.0
}

impl Default for Price {
    fn default() -> Self {
        Price {
            input: 3.0,
            cache_write: 1.25,
            cache_read: 0.1,
            output: 5.0,
        }
    }
}

/// Summary statistics of request sizes.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct SizeStats {
    /// Median.
    pub median: f64,
    /// 90th percentile (nearest rank).
    pub p90: u64,
    /// Largest.
    pub max: u64,
    /// Last request.
    pub last: u64,
    /// Sum.
    pub total: u64,
}

impl SizeStats {
    /// Statistics of a list of sizes (in request order).
    pub fn of(sizes: &[u64]) -> SizeStats {
        if sizes.is_empty() {
            return SizeStats::default();
        }
        let mut sorted = sizes.to_vec();
        sorted.sort_unstable();
        SizeStats {
            median: median_u64(&sorted),
            p90: sorted[((sorted.len() as f64 * 0.9).ceil() as usize).clamp(1, sorted.len()) - 1],
            max: sorted[sorted.len() - 1],
            last: sizes[sizes.len() - 1],
            total: sizes.iter().fold(0u64, |a, b| a.saturating_add(*b)),
        }
    }
}

/// Median of sorted values.
pub(crate) fn median_u64(sorted: &[u64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        sorted[n / 2] as f64
    } else {
        (sorted[n / 2 - 1] as f64 + sorted[n / 2] as f64) / 2.0
    }
}

/// Median of unsorted floats.
pub fn median_f64(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Everything measured about one cell.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CellMetrics {
    /// Requests of the turns (compaction calls excluded).
    pub requests: usize,
    /// Request sizes in o200k tokens.
    pub request_tokens: SizeStats,
    /// Provider-reported prompt sizes, when the model reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_request_tokens: Option<SizeStats>,
    /// Workspace tool calls.
    pub tool_calls: usize,
    /// Tool calls by name (policy tools included).
    pub tool_calls_by_name: BTreeMap<String, usize>,
    /// Calls equal to an earlier call on an unchanged workspace.
    pub reruns: usize,
    /// Re-runs whose earlier result was not visible.
    pub reruns_hidden: usize,
    /// Re-runs whose earlier result was visible.
    pub reruns_visible: usize,
    /// Calls whose target is inside the archive folder.
    pub archive_reads: usize,
    /// Folds made.
    pub folds: usize,
    /// Illegal `fold_unit` calls.
    pub fold_calls_rejected: usize,
    /// Cards attached.
    pub cards_shown: usize,
    /// Cards answered with no `fold_unit` call.
    pub cards_ignored: usize,
    /// Tokens of all cards.
    pub card_tokens: u64,
    /// Folds whose range holds a turn of a unit that a later turn continues.
    pub premature_folds: usize,
    /// Folds followed within two turns by a read of their archive or a re-run of a call inside.
    pub fold_regret: usize,
    /// Tokens rewritten into the cache, one entry per fold.
    pub rewritten_tokens_per_fold: Vec<u64>,
    /// Compactions (emergency ones included).
    pub compactions: usize,
    /// Emergency compactions of fold policies.
    pub emergency_compactions: usize,
    /// Input tokens of the summary calls.
    pub compaction_input_tokens: u64,
    /// Output tokens of the summary calls.
    pub compaction_output_tokens: u64,
    /// Tokens rewritten into the cache, one entry per compaction.
    pub rewritten_tokens_per_compaction: Vec<u64>,
    /// Strategies entered.
    pub strategies_entered: usize,
    /// Strategies ended (yield or `/back`).
    pub strategies_ended: usize,
    /// Tokens of the reports that replaced strategy branches.
    pub report_tokens: u64,
    /// Cache reads over all requests.
    pub cached_tokens: u64,
    /// Cache writes over all requests.
    pub written_tokens: u64,
    /// Output tokens over all requests.
    pub output_tokens: u64,
    /// Dollars, from the price table.
    pub cost: f64,
    /// Needed facts that were neither in the text of their turn's first request nor in a tool
    /// result of the turn.
    #[serde(default)]
    pub lost_facts: usize,
    /// Needed facts missing at their turn's start that a tool result of the turn brought back,
    /// by way.
    #[serde(default)]
    pub recovered_facts: RecoveredFacts,
    /// Requests the model never answered (an error status, a stream cut short, an upstream out
    /// of reach): not in `requests`, the sizes, the cache accounting or the cost.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed_requests: usize,
    /// Turns in which the host stopped answering the policy's own tools after refused calls.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub policy_tool_stops: usize,
    /// Requests of delegated child sessions (the `delegate` tool), not in `requests`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub child_requests: usize,
    /// Input tokens of the child sessions' requests, not in `request_tokens`; counted in
    /// [`CellMetrics::tokens_per_task`].
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub child_input_tokens: u64,
    /// `delegate` calls answered (each one child session).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delegations: usize,
    /// Tokens of the receipts the parent read back (the `delegate` calls' results).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub receipt_tokens: u64,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// Facts brought back within their turn, by the way they came back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RecoveredFacts {
    /// By a call equal (tool and arguments) to one of an earlier turn.
    pub rerun: usize,
    /// By a read of an archive.
    pub archive: usize,
}

impl CellMetrics {
    /// Total rewritten tokens of folds.
    pub(crate) fn rewritten_fold_total(&self) -> u64 {
        self.rewritten_tokens_per_fold.iter().sum()
    }

    /// Every input token the cell sent: the turns' requests (recovery requests included), the
    /// compaction calls and the delegated child sessions' requests.
    pub fn tokens_per_task(&self) -> u64 {
        self.request_tokens.total + self.compaction_input_tokens + self.child_input_tokens
    }
}

/// A re-run found in the events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rerun {
    /// Index of the call in the tool-call list.
    pub(crate) call: usize,
    /// Index of the earliest equal call.
    pub(crate) earlier: usize,
    /// Whether no equal earlier call's result was visible in the request that led to the call.
    pub(crate) hidden: bool,
}

/// Finds the re-runs among workspace tool calls: same tool, same canonical arguments, same
/// workspace fingerprint as an earlier call.
pub(crate) fn find_reruns(
    calls: &[&ToolCallRecord],
    requests: &HashMap<usize, &RequestRecord>,
) -> Vec<Rerun> {
    let mut seen: HashMap<(&str, &str, &str), Vec<usize>> = HashMap::new();
    let mut out = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        if c.policy_tool {
            continue;
        }
        let Some(fp) = c.fingerprint.as_deref() else {
            continue;
        };
        let key = (c.name.as_str(), c.args.as_str(), fp);
        if let Some(earlier) = seen.get(&key) {
            let visible = requests
                .get(&c.request)
                .map(|r| {
                    earlier
                        .iter()
                        .any(|&e| r.visible_results.contains(&calls[e].id))
                })
                .unwrap_or(false);
            out.push(Rerun {
                call: i,
                earlier: earlier[0],
                hidden: !visible,
            });
        }
        seen.entry(key).or_default().push(i);
    }
    out
}

/// Lost facts and recovered facts by way. A fact missing at its turn's start is recovered by
/// the first tool result of the turn that contains it: an archive read, or a call equal to one
/// of an earlier turn (a re-run); a call new to the session showed it for the first time, which
/// is neither. A fact no result brought back is lost.
fn facts(needs: &[&FactSeen], calls: &[&ToolCallRecord]) -> (usize, RecoveredFacts) {
    let mut lost = 0;
    let mut rec = RecoveredFacts::default();
    for f in needs.iter().filter(|f| !f.visible) {
        let Some(c) = f
            .found_in
            .as_deref()
            .and_then(|id| calls.iter().find(|c| c.id == id))
        else {
            lost += 1;
            continue;
        };
        if c.archive_read {
            rec.archive += 1;
        } else if calls
            .iter()
            .any(|e| e.turn < c.turn && e.name == c.name && e.args == c.args)
        {
            rec.rerun += 1;
        }
    }
    (lost, rec)
}

/// Computes a cell's metrics from its events. `spec` supplies the unit labels.
pub fn compute(events: &[Event], spec: Option<&TaskSpec>, price: &Price) -> CellMetrics {
    compute_priced(events, spec, &|_| *price)
}

/// [`compute`] with each request priced by the model that answered it: `price_of(None)` for
/// the cell's own model, `price_of(Some(name))` for a request recorded with another
/// ([`RequestRecord::model`]: a child session on a named model).
pub fn compute_priced(
    events: &[Event],
    spec: Option<&TaskSpec>,
    price_of: &dyn Fn(Option<&str>) -> Price,
) -> CellMetrics {
    let base = price_of(None);
    let mut tally = Tally::default();
    // A request the model never answered counts apart, whatever came of it before it failed.
    for e in events {
        if let Event::RequestFailed { index, .. } = e {
            tally.failed.insert(*index);
        }
    }
    tally.m.failed_requests = tally.failed.len();
    for e in events {
        tally.add(e, &base, price_of);
    }
    tally.finish(spec, &base)
}

/// What [`compute`] gathers in one pass over the events.
#[derive(Default)]
struct Tally<'a> {
    m: CellMetrics,
    /// Sizes of the turn requests (foldbench's count, and the provider's where reported).
    sizes: Vec<u64>,
    provider_sizes: Vec<u64>,
    requests: HashMap<usize, &'a RequestRecord>,
    calls: Vec<&'a ToolCallRecord>,
    /// Turns that showed a card.
    card_turns: Vec<u32>,
    /// Folds: (turn, from, to, archive path).
    folds: Vec<(u32, u32, u32, &'a str)>,
    /// Cost in units of the input price, per million tokens.
    cost_tokens: f64,
    /// Dollars of the requests answered by another model than the cell's (priced at its own).
    named_dollars: f64,
    needs: Vec<&'a FactSeen>,
    /// Requests the model never answered.
    failed: std::collections::HashSet<usize>,
}

impl<'a> Tally<'a> {
    fn add(&mut self, e: &'a Event, base: &Price, price_of: &dyn Fn(Option<&str>) -> Price) {
        let m = &mut self.m;
        match e {
            Event::TurnStarted {
                turn,
                card_tokens: Some(t),
                ..
            } => {
                m.cards_shown += 1;
                m.card_tokens += u64::from(*t);
                self.card_turns.push(*turn);
            }
            Event::Request(r) if self.failed.contains(&r.index) => {}
            Event::Response { index, .. } if self.failed.contains(index) => {}
            Event::PolicyToolStopped { .. } => m.policy_tool_stops += 1,
            Event::Request(r) => {
                self.requests.insert(r.index, r);
                m.cached_tokens += r.cached_tokens;
                m.written_tokens += r.written_tokens;
                match r.purpose {
                    Purpose::Turn => self.sizes.push(r.tokens),
                    Purpose::Child => {
                        m.child_requests += 1;
                        m.child_input_tokens += r.tokens;
                    }
                    Purpose::Compaction => {}
                }
            }
            Event::Response {
                index,
                output_tokens,
                usage,
                ..
            } => {
                let named = self.requests.get(index).and_then(|r| r.model.as_deref());
                let price = match named {
                    Some(name) => price_of(Some(name)),
                    None => *base,
                };
                self.response(*index, *output_tokens, usage.as_ref(), &price)
            }
            Event::ToolCall(c) => self.tool_call(c),
            Event::Compaction {
                emergency,
                input_tokens,
                output_tokens,
                rewritten_tokens,
                ..
            } => {
                m.compactions += 1;
                if *emergency {
                    m.emergency_compactions += 1;
                }
                m.compaction_input_tokens += input_tokens;
                m.compaction_output_tokens += output_tokens;
                m.rewritten_tokens_per_compaction.push(*rewritten_tokens);
            }
            Event::Fold {
                turn,
                from,
                to,
                archive,
                rewritten_tokens,
                kind,
                ..
            } => {
                m.rewritten_tokens_per_fold.push(*rewritten_tokens);
                if kind == "fold" {
                    m.folds += 1;
                    self.folds.push((*turn, *from, *to, archive.as_str()));
                }
            }
            Event::Needs { facts, .. } => self.needs.extend(facts),
            Event::StrategyEntered { .. } => m.strategies_entered += 1,
            Event::StrategyEnded { report_tokens, .. } => {
                m.strategies_ended += 1;
                m.report_tokens += report_tokens;
            }
            _ => {}
        }
    }

    /// A response's output tokens and cost: the provider's usage where reported, else the
    /// request's simulated cache split.
    fn response(&mut self, index: usize, output_tokens: u64, usage: Option<&Usage>, price: &Price) {
        self.m.output_tokens += output_tokens;
        let request = self.requests.get(&index);
        let named = request.is_some_and(|r| r.model.is_some());
        let mut units = 0.0;
        match usage {
            Some(u) => {
                if request.is_some_and(|r| r.purpose == Purpose::Turn) {
                    self.provider_sizes.push(u.prompt_tokens());
                }
                units += u.input_tokens as f64
                    + u.cache_write_tokens as f64 * price.cache_write
                    + u.cache_read_tokens as f64 * price.cache_read
                    + u.output_tokens as f64 * price.output;
            }
            None => {
                if let Some(r) = request {
                    units += r.written_tokens as f64 * price.cache_write
                        + r.cached_tokens as f64 * price.cache_read;
                }
                units += output_tokens as f64 * price.output;
            }
        }
        // The cell's own model's requests are summed in units of its input price (as before
        // child sessions on named models existed, so a cell's cost is the same number).
        if named {
            self.named_dollars += units * price.input / 1e6;
        } else {
            self.cost_tokens += units;
        }
    }

    fn tool_call(&mut self, c: &'a ToolCallRecord) {
        let m = &mut self.m;
        *m.tool_calls_by_name.entry(c.name.clone()).or_default() += 1;
        if !c.policy_tool {
            m.tool_calls += 1;
        }
        if c.policy_tool && c.name == DELEGATE_TOOL {
            m.delegations += 1;
            m.receipt_tokens += u64::from(c.result_tokens);
        }
        if c.archive_read {
            m.archive_reads += 1;
        }
        let rejected = c
            .outcome
            .as_ref()
            .and_then(|o| o.get("outcome"))
            .and_then(|o| o.as_str())
            == Some("fold_rejected");
        if c.policy_tool && c.name == "fold_unit" && rejected {
            m.fold_calls_rejected += 1;
        }
        self.calls.push(c);
    }

    /// The figures that need every event: sizes, cost, ignored cards, facts, re-runs, premature
    /// folds and fold regret.
    fn finish(self, spec: Option<&TaskSpec>, price: &Price) -> CellMetrics {
        let Tally {
            mut m,
            sizes,
            provider_sizes,
            requests,
            calls,
            card_turns,
            folds,
            cost_tokens,
            named_dollars,
            needs,
            failed: _,
        } = self;
        m.requests = sizes.len();
        m.request_tokens = SizeStats::of(&sizes);
        if !provider_sizes.is_empty() {
            m.provider_request_tokens = Some(SizeStats::of(&provider_sizes));
        }
        m.cost = cost_tokens * price.input / 1e6 + named_dollars;
        m.cards_ignored = card_turns
            .iter()
            .filter(|t| !calls.iter().any(|c| c.turn == **t && c.name == "fold_unit"))
            .count();
        (m.lost_facts, m.recovered_facts) = facts(&needs, &calls);
        let reruns = find_reruns(&calls, &requests);
        m.reruns = reruns.len();
        m.reruns_hidden = reruns.iter().filter(|r| r.hidden).count();
        m.reruns_visible = m.reruns - m.reruns_hidden;
        if let Some(spec) = spec {
            m.premature_folds = folds
                .iter()
                .filter(|(turn, from, to, _)| {
                    (*from..=*to).any(|x| spec.continued_after(x, turn.saturating_sub(1)))
                })
                .count();
        }
        m.fold_regret = folds
            .iter()
            .filter(|f| regretted(**f, &calls, &reruns))
            .count();
        m
    }
}

/// Whether a fold was regretted: within the two turns after it, its archive was read back or a
/// call from inside its range was run again.
fn regretted(
    (turn, from, to, archive): (u32, u32, u32, &str),
    calls: &[&ToolCallRecord],
    reruns: &[Rerun],
) -> bool {
    let window = turn + 1..=turn + 2;
    let read_back = calls.iter().any(|c| {
        window.contains(&c.turn)
            && c.archive_read
            && c.target.as_deref().is_some_and(|t| {
                archive.ends_with(t)
                    || t.ends_with(archive)
                    || t == ".foldbench/archive"
                    || t == ".foldbench"
            })
    });
    let rerun_inside = reruns.iter().any(|r| {
        window.contains(&calls[r.call].turn) && (from..=to).contains(&calls[r.earlier].turn)
    });
    read_back || rerun_inside
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Event;

    fn req(index: usize, turn: u32, tokens: u64, visible: &[&str]) -> Event {
        Event::Request(RequestRecord {
            index,
            turn,
            purpose: Purpose::Turn,
            tokens,
            cached_tokens: tokens / 2,
            written_tokens: tokens - tokens / 2,
            messages: 1,
            visible_results: visible.iter().map(|s| s.to_string()).collect(),
            action: None,
            mode: None,
            agent: None,
            model: None,
        })
    }

    fn call(turn: u32, request: usize, id: &str, args: &str, fp: &str) -> Event {
        Event::ToolCall(ToolCallRecord {
            turn,
            request,
            id: id.into(),
            name: "read_file".into(),
            args: args.into(),
            target: None,
            fingerprint: Some(fp.into()),
            archive_read: false,
            is_error: false,
            policy_tool: false,
            outcome: None,
            result_tokens: 1,
            cached: false,
            agent: None,
        })
    }

    #[test]
    fn reruns_need_equal_args_and_fingerprint_and_split_by_visibility() {
        let events = vec![
            req(0, 1, 100, &[]),
            call(1, 0, "a", "{\"path\":\"x\"}", "f1"),
            req(1, 2, 200, &["a"]),
            call(2, 1, "b", "{\"path\":\"x\"}", "f1"), // visible re-run
            req(2, 2, 300, &[]),
            call(2, 2, "c", "{\"path\":\"x\"}", "f1"), // hidden: neither a nor b visible
            call(2, 2, "d", "{\"path\":\"x\"}", "f2"), // workspace changed: not a re-run
            call(2, 2, "e", "{\"path\":\"y\"}", "f1"), // other args
        ];
        let m = compute(&events, None, &Price::default());
        assert_eq!((m.reruns, m.reruns_visible, m.reruns_hidden), (2, 1, 1));
        assert_eq!(m.tool_calls, 5);
        assert_eq!(m.request_tokens.median, 200.0);
        assert_eq!(m.request_tokens.total, 600);
        assert_eq!(m.request_tokens.last, 300);
    }

    #[test]
    fn lost_and_recovered_facts_come_from_the_needs_event() {
        let seen = |fact: &str, visible: bool, found_in: Option<&str>| FactSeen {
            fact: fact.into(),
            visible,
            found_in: found_in.map(str::to_string),
        };
        let mut archive = call(2, 1, "g", "{\"path\":\".foldbench/archive/f\"}", "f1");
        if let Event::ToolCall(c) = &mut archive {
            c.archive_read = true;
        }
        let events = vec![
            req(0, 1, 100, &[]),
            call(1, 0, "a", "{\"path\":\"x\"}", "f1"),
            req(1, 2, 100, &[]),
            call(2, 1, "b", "{\"path\":\"x\"}", "f2"), // same call as turn 1: a re-run
            archive,
            call(2, 1, "n", "{\"path\":\"new\"}", "f2"), // first time: shows, recovers nothing
            Event::Needs {
                turn: 2,
                facts: vec![
                    seen("kept", true, None),
                    seen("rerun", false, Some("b")),
                    seen("archived", false, Some("g")),
                    seen("fresh", false, Some("n")),
                    seen("gone", false, None),
                ],
            },
        ];
        let m = compute(&events, None, &Price::default());
        assert_eq!(m.lost_facts, 1);
        assert_eq!(
            m.recovered_facts,
            RecoveredFacts {
                rerun: 1,
                archive: 1
            }
        );
    }

    #[test]
    fn a_childs_requests_count_apart_and_a_named_model_is_priced_at_its_own_price() {
        let child = |index: usize, tokens: u64, model: Option<&str>| {
            Event::Request(RequestRecord {
                purpose: Purpose::Child,
                agent: Some("child-1".into()),
                model: model.map(str::to_string),
                cached_tokens: 0,
                written_tokens: tokens,
                ..match req(index, 1, tokens, &[]) {
                    Event::Request(r) => r,
                    _ => unreachable!(),
                }
            })
        };
        let answer = |index: usize| Event::Response {
            index,
            output_tokens: 10,
            usage: None,
            model_ms: 0,
        };
        let events = vec![
            req(0, 1, 100, &[]),
            answer(0),
            child(1, 40, None),
            answer(1),
            child(2, 60, Some("big")),
            answer(2),
        ];
        let base = Price::default();
        let big = Price {
            input: 15.0,
            ..Price::default()
        };
        let m = compute_priced(&events, None, &|name| match name {
            Some("big") => big,
            _ => base,
        });
        assert_eq!((m.requests, m.request_tokens.total), (1, 100));
        assert_eq!((m.child_requests, m.child_input_tokens), (2, 100));
        assert_eq!(m.tokens_per_task(), 200);
        // 100 tokens: half cached (0.1), half written (1.25); 40 written; 10 output each (5).
        let own = (50.0 * 0.1 + 50.0 * 1.25 + 50.0) + (40.0 * 1.25 + 50.0);
        let named = 60.0 * 1.25 + 50.0;
        let want = own * 3.0 / 1e6 + named * 15.0 / 1e6;
        assert!((m.cost - want).abs() < 1e-12, "{} vs {want}", m.cost);
    }

    #[test]
    fn size_stats() {
        let s = SizeStats::of(&[5, 1, 3, 10]);
        assert_eq!(
            (s.median, s.p90, s.max, s.last, s.total),
            (4.0, 10, 10, 10, 19)
        );
    }
}
