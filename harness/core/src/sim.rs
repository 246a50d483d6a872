//! The simulated agent `sim`: deterministic for a seed, it follows a task's script but knows
//! facts only from the text it has seen.
//!
//! - Before a step or turn that `needs` a fact, it looks for the fact's text in the request (or
//!   in the output of a recovery call it made in this turn). When the fact is missing it tries
//!   once to recover it as a careful agent would: if a fold result (or strategy report) in the
//!   request points to an archive whose range covers the turn that showed the fact, it greps that
//!   archive; otherwise it repeats the call that first showed the fact. The recovery is judged by
//!   what comes back: a re-run whose output no longer has the fact (the file was edited since,
//!   the output changes between runs) recovers nothing.
//! - A fact still missing is lost: the agent writes the need's `guess` in place of its `value`
//!   in everything the step writes (tool arguments, report, `say`); a need without a guess
//!   stops the turn with a closing message that says what is missing.
//! - It never reads a turn that has not arrived: a strategy turn yields at its `say` unless its
//!   own spec says `awaits_back`.
//! - With probability `recheck` it repeats a visible earlier read before a tool step (noise that
//!   real models show). The random stream is drawn the same way under every policy, so arms are
//!   compared on equal noise.
//! - Cards are answered by a [`Judge`]; the compaction summary keeps every user message and every
//!   closing message (and host-written fold results), and drops tool outputs.
//!
//! The sim reports no metric: the harness measures everything (lost and recovered facts
//! included) from the request texts and tool results.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::json;

use crate::fold::{archive_pointer, card_turns};
use crate::judge::{self, CardPoint, Judge};
use crate::message::{MessageKind, Role, ToolCall};
use crate::request::{Purpose, Request, Response};
use crate::rng::Rng;
use crate::spec::{Action, Need, Step, TaskSpec, TurnSpec};

/// Settings of the simulated agent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimConfig {
    /// Seed of the noise.
    pub seed: u64,
    /// Probability of re-checking a visible earlier read before a tool step.
    pub recheck: f64,
    /// How cards are answered.
    pub judge: Judge,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 1,
            recheck: 0.1,
            judge: Judge::Oracle,
        }
    }
}

/// Tools that only read, which the re-check noise may repeat.
const READ_TOOLS: [&str; 3] = ["read_file", "grep", "list_files"];

/// Where a needed fact was first seen.
#[derive(Debug, Clone)]
struct Source {
    /// The turn that showed it.
    turn: u32,
    /// The call whose output showed it; `None` when it is the user's words.
    call: Option<(String, serde_json::Value)>,
}

/// The simulated agent for one cell.
#[derive(Debug)]
pub struct Sim {
    spec: Arc<TaskSpec>,
    cfg: SimConfig,
    rng: Rng,
    sources: HashMap<String, Source>,
    turn: u32,
    step: usize,
    card_answered: bool,
    entered: bool,
    yielded: bool,
    noise_rolled: Option<usize>,
    attempted: HashSet<String>,
    /// Recovery calls of this turn whose results have not been read yet: (call id, fact).
    inflight: Vec<(String, String)>,
    /// Facts that came back in the output of a recovery call of this turn.
    recovered: HashSet<String>,
    calls: u64,
}

impl Sim {
    /// A sim for a task.
    pub fn new(spec: Arc<TaskSpec>, cfg: SimConfig) -> Sim {
        let mut sources = HashMap::new();
        for (i, t) in spec.turns.iter().enumerate() {
            for s in &t.script {
                if let (Some(e), Action::Tool { name, args }) = (&s.expect, &s.action) {
                    sources.entry(e.clone()).or_insert(Source {
                        turn: i as u32 + 1,
                        call: Some((name.clone(), args.clone())),
                    });
                }
            }
        }
        let needs = spec
            .turns
            .iter()
            .flat_map(|t| t.needs.iter().chain(t.script.iter().flat_map(|s| &s.needs)));
        for n in needs {
            if sources.contains_key(&n.fact) {
                continue;
            }
            if let Some(i) = spec.turns.iter().position(|t| t.user.contains(&n.fact)) {
                sources.insert(
                    n.fact.clone(),
                    Source {
                        turn: i as u32 + 1,
                        call: None,
                    },
                );
            }
        }
        let rng = Rng::for_name(cfg.seed, &spec.name);
        Sim {
            spec,
            cfg,
            rng,
            sources,
            turn: 0,
            step: 0,
            card_answered: false,
            entered: false,
            yielded: false,
            noise_rolled: None,
            attempted: HashSet::new(),
            inflight: Vec::new(),
            recovered: HashSet::new(),
            calls: 0,
        }
    }

    fn call(&mut self, name: &str, args: serde_json::Value) -> ToolCall {
        self.calls += 1;
        ToolCall {
            id: format!("sim-{}-{}", self.turn, self.calls),
            name: name.to_string(),
            args,
        }
    }

    /// Starts a new turn's state.
    fn enter_turn(&mut self, t: u32) {
        self.turn = t;
        self.step = 0;
        self.card_answered = false;
        self.yielded = false;
        self.noise_rolled = None;
        self.attempted.clear();
        self.inflight.clear();
        self.recovered.clear();
        let strategy_turn = self
            .spec
            .turns
            .get((t as usize).wrapping_sub(1))
            .is_some_and(|x| x.strategy.is_some());
        if !strategy_turn {
            self.entered = false;
        }
    }

    /// Marks turn `t` as the turn in progress without starting it afresh, so the next request of
    /// that turn continues it as if earlier requests of the turn had been answered (to drive the
    /// sim from the middle of a turn).
    pub fn continue_turn(&mut self, t: u32) {
        self.turn = t;
    }

    /// Answers one request.
    pub fn respond(&mut self, req: &Request) -> Response {
        if req.purpose == Purpose::Compaction {
            return Response::new(summary(req), Vec::new(), None);
        }
        let t = req.current_turn();
        if t != self.turn {
            self.enter_turn(t);
        }
        self.read_recoveries(req);
        let spec = Arc::clone(&self.spec);
        let Some(ts) = spec.turns.get((t as usize).wrapping_sub(1)) else {
            return Response::new(
                "There is nothing more in my plan for this.",
                Vec::new(),
                None,
            );
        };
        let strategies = req.tools.iter().any(|x| x.name == "strategy_request");

        if !self.card_answered {
            self.card_answered = true;
            let calls = self.answer_card(req, t);
            if !calls.is_empty() {
                return Response::new("", calls, None);
            }
        }
        if strategies && !self.entered {
            if let Some(mode) = &ts.strategy {
                self.entered = true;
                let c = self.call("strategy_request", json!({ "name": mode, "goal": ts.user }));
                return Response::new("", vec![c], None);
            }
        }
        let turn_lost = match self.missing(req, &ts.needs) {
            Err(c) => return Response::new("", vec![c], None),
            Ok(lost) => lost,
        };
        while let Some(step) = ts.script.get(self.step) {
            let mut lost = match self.missing(req, &step.needs) {
                Err(c) => return Response::new("", vec![c], None),
                Ok(lost) => lost,
            };
            lost.extend(turn_lost.iter().cloned());
            if let Some(n) = lost.iter().find(|n| n.guess.is_none()) {
                let text = format!(
                    "I stopped before {}: it needs {:?}, which is no longer in view, and I could not get it back. Tell me the value and I will go on.",
                    describe(step),
                    n.fact
                );
                return self.close(ts, strategies, text, true);
            }
            let subs: Vec<(&str, &str)> = lost
                .iter()
                .filter_map(|n| Some((n.value.as_str(), n.guess.as_deref()?)))
                .collect();
            match &step.action {
                Action::Tool { name, args } => {
                    if self.noise_rolled != Some(self.step) {
                        self.noise_rolled = Some(self.step);
                        let roll = self.rng.next_f64();
                        let pick = self.rng.next_u64();
                        if roll < self.cfg.recheck {
                            if let Some(c) = self.visible_read(req, pick) {
                                return Response::new("", vec![c], None);
                            }
                        }
                    }
                    self.step += 1;
                    let written = substitute_json(args, &subs);
                    let as_scripted = &written == args;
                    let c = self.call(name, written);
                    let mut r = Response::new("", vec![c.clone()], None);
                    // What the script expects of its own arguments says nothing about a guess.
                    if let (Some(e), true) = (&step.expect, as_scripted) {
                        r.expects.push((c.id, e.clone()));
                    }
                    return r;
                }
                Action::Report(text) => {
                    self.step += 1;
                    if strategies && self.entered {
                        let text = substitute(text, &subs);
                        let c = self.call("strategy_report", json!({ "text": text }));
                        return Response::new("", vec![c], None);
                    }
                }
                Action::Say(text) => {
                    let text = substitute(text, &subs);
                    return self.close(ts, strategies, text, false);
                }
            }
        }
        Response::new(ts.say().to_string(), Vec::new(), None)
    }

    /// Ends the turn with `text`. In a strategy turn that does not wait for `/back`, the agent
    /// yields first; the turn's own spec says which, never the next turn's.
    fn close(&mut self, ts: &TurnSpec, strategies: bool, text: String, stop: bool) -> Response {
        if strategies && self.entered && ts.strategy.is_some() && !self.yielded && !ts.awaits_back {
            self.yielded = true;
            let c = self.call(
                "strategy_yield",
                json!({ "reason": format!("done: {text}") }),
            );
            return Response::new("", vec![c], None);
        }
        self.step = if stop { ts.script.len() } else { self.step + 1 };
        Response::new(text, Vec::new(), None)
    }

    /// Reads the results of this turn's recovery calls that have come back: a fact is recovered
    /// when the output contains it, whatever the call was.
    fn read_recoveries(&mut self, req: &Request) {
        let inflight = std::mem::take(&mut self.inflight);
        for (id, fact) in inflight {
            let result = req
                .messages
                .iter()
                .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(id.as_str()));
            match result {
                Some(m) if m.text.contains(fact.as_str()) => {
                    self.recovered.insert(fact);
                }
                Some(_) => {}
                None => self.inflight.push((id, fact)),
            }
        }
    }

    /// The needs that are lost (missing after a recovery was tried), or a call that tries to
    /// recover the first missing one.
    fn missing(&mut self, req: &Request, needs: &[Need]) -> Result<Vec<Need>, ToolCall> {
        let mut lost = Vec::new();
        for need in needs {
            let fact = &need.fact;
            if self.recovered.contains(fact) || req.contains_text(fact) {
                continue;
            }
            if self.attempted.contains(fact) {
                if !self.inflight.iter().any(|(_, f)| f == fact) {
                    lost.push(need.clone());
                }
                continue;
            }
            self.attempted.insert(fact.clone());
            if let Some(c) = self.recovery_call(req, fact) {
                self.inflight.push((c.id.clone(), fact.clone()));
                return Err(c);
            }
            lost.push(need.clone());
        }
        Ok(lost)
    }

    /// The call a careful agent makes to get a fact back: a grep of the archive when a fold
    /// result (or strategy report, or a summary quoting one) in the request covers the turn that
    /// showed it, otherwise the
    /// call that showed it, again. `None` when there is neither (the user's words, no archive).
    fn recovery_call(&mut self, req: &Request, fact: &str) -> Option<ToolCall> {
        let src = self.sources.get(fact)?.clone();
        let archive = req
            .messages
            .iter()
            .filter(|m| m.role == Role::User && !m.is_human())
            .flat_map(|m| m.text.lines())
            .find_map(|line| {
                // A fold result or strategy report, as it is or quoted in a summary.
                let at = line.find("[fold]").or_else(|| line.find("[strategy"))?;
                let (a, b, path) = archive_pointer(&line[at..])?;
                (a <= src.turn && src.turn <= b).then_some(path)
            });
        match (archive, src.call) {
            (Some(path), _) => Some(self.call(
                "grep",
                json!({ "pattern": regex_escape(fact), "path": path }),
            )),
            (None, Some((name, args))) => Some(self.call(&name, args)),
            (None, None) => None,
        }
    }

    /// The fold_unit calls that answer the card of the current user message, if it has one.
    fn answer_card(&mut self, req: &Request, t: u32) -> Vec<ToolCall> {
        let Some(card) = req
            .messages
            .iter()
            .rev()
            .find(|m| m.is_human() && m.turn == t)
            .and_then(|m| m.card.clone())
        else {
            return Vec::new();
        };
        let offered = card_turns(&card);
        // The judge reads the user messages from the card and the request, and (oracle only)
        // the unit labels.
        let current_user = req
            .messages
            .iter()
            .rev()
            .find(|m| m.is_human() && m.turn == t)
            .map(|m| m.text.clone());
        let user_lines: HashMap<u32, String> = card
            .lines()
            .zip(card.lines().skip(1))
            .filter_map(|(a, b)| {
                let n: u32 = a
                    .trim_start()
                    .strip_prefix("turn ")?
                    .split(' ')
                    .next()?
                    .parse()
                    .ok()?;
                let u = b.trim_start().strip_prefix("user: ")?;
                Some((
                    n,
                    serde_json::from_str::<String>(u).unwrap_or_else(|_| u.to_string()),
                ))
            })
            .collect();
        let spec = &self.spec;
        let user = |x: u32| {
            if x == t {
                current_user.clone()
            } else {
                user_lines.get(&x).cloned()
            }
        };
        let unit = |x: u32| spec.unit_of(x).map(str::to_string);
        let p = CardPoint {
            offered: &offered,
            current: t,
            user: &user,
            unit: &unit,
            last_turn: spec.turns.len() as u32,
        };
        let ranges = judge::ranges(self.cfg.judge, &p);
        ranges
            .into_iter()
            .map(|(a, b)| self.call("fold_unit", json!({ "from": a, "to": b })))
            .collect()
    }

    /// A visible earlier read to repeat, chosen by `pick`.
    fn visible_read(&mut self, req: &Request, pick: u64) -> Option<ToolCall> {
        let visible: HashSet<&str> = req
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool && m.kind == MessageKind::Plain)
            .filter_map(|m| m.tool_call_id.as_deref())
            .collect();
        let candidates: Vec<&ToolCall> = req
            .messages
            .iter()
            .flat_map(|m| &m.tool_calls)
            .filter(|c| READ_TOOLS.contains(&c.name.as_str()) && visible.contains(c.id.as_str()))
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let c = candidates[(pick % candidates.len() as u64) as usize].clone();
        Some(self.call(&c.name, c.args))
    }
}

/// `text` with each `(value, guess)` replaced.
fn substitute(text: &str, subs: &[(&str, &str)]) -> String {
    subs.iter().fold(text.to_string(), |acc, (value, guess)| {
        acc.replace(value, guess)
    })
}

/// Every string inside `v` with each `(value, guess)` replaced.
fn substitute_json(v: &serde_json::Value, subs: &[(&str, &str)]) -> serde_json::Value {
    match v {
        serde_json::Value::String(s) => serde_json::Value::String(substitute(s, subs)),
        serde_json::Value::Array(a) => a.iter().map(|x| substitute_json(x, subs)).collect(),
        serde_json::Value::Object(m) => m
            .iter()
            .map(|(k, x)| (k.clone(), substitute_json(x, subs)))
            .collect(),
        other => other.clone(),
    }
}

/// A few words for a step, for the closing message of a stopped turn.
fn describe(step: &Step) -> String {
    match &step.action {
        Action::Tool { name, args } => match args.get("path").and_then(|p| p.as_str()) {
            Some(path) => format!("the {name} of {path}"),
            None => format!("the {name}"),
        },
        Action::Report(_) => "the report".into(),
        Action::Say(_) => "the answer".into(),
    }
}

/// Escapes regex metacharacters.
pub fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The most bytes of one message a compaction summary quotes. A longer message (a pasted log)
/// keeps its head and says how much was left out: a summary that quoted it whole would be as
/// large as what it summarises, never fit the window, and be summarised again, quoted in full,
/// at every later request (time quadratic in the message).
pub const SUMMARY_QUOTE_BYTES: usize = 2000;

/// `text` cut to [`SUMMARY_QUOTE_BYTES`] (on a character boundary) with a note of what was cut.
fn clip(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= SUMMARY_QUOTE_BYTES {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut at = SUMMARY_QUOTE_BYTES;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    std::borrow::Cow::Owned(format!(
        "{} [… {} more bytes left out of the summary]",
        &text[..at],
        text.len() - at
    ))
}

/// The sim's compaction summary: every user message and closing message in the request (each
/// quoted up to [`SUMMARY_QUOTE_BYTES`]), host results (fold results, reports, earlier
/// summaries) as they are, no tool output. An entry already written is not written again (a
/// prompt kept after a compaction is quoted once however often its turn compacts).
pub fn summary(req: &Request) -> String {
    let mut s = String::from("Summary of the conversation so far (tool outputs left out).\n");
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    // Only whole entries (`- …`) are compared: continuation lines of different entries may
    // be equal.
    let mut put = |s: &mut String, entry: String| {
        if !entry.starts_with("- ") || !seen.contains(&entry) {
            s.push_str(&entry);
            s.push('\n');
            seen.insert(entry);
        }
    };
    let upto = req.messages.len().saturating_sub(1); // the last message is the summary request
    for m in &req.messages[..upto] {
        match (&m.role, &m.kind) {
            (Role::User, MessageKind::Plain) => {
                put(
                    &mut s,
                    format!("- user (turn {}): {:?}", m.turn, clip(&m.text)),
                );
            }
            (Role::User, MessageKind::Summary) => {
                for line in m.text.lines().skip(1) {
                    put(&mut s, line.to_string());
                }
            }
            (Role::User, MessageKind::FoldResult { .. } | MessageKind::StrategyReport { .. }) => {
                put(
                    &mut s,
                    format!(
                        "- host (turn {}): {}",
                        m.turn,
                        clip(&m.text).replace('\n', "\n  ")
                    ),
                );
            }
            (Role::Assistant, _) if m.is_closing() && !m.text.is_empty() => {
                put(
                    &mut s,
                    format!("- assistant (turn {}): {}", m.turn, clip(&m.text)),
                );
            }
            _ => {}
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_regex() {
        assert_eq!(regex_escape("a.b (c)"), "a\\.b \\(c\\)");
    }
}
