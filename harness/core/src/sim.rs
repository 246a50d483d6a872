//! The simulated agent `sim`: deterministic for a seed, it follows a task's script but knows
//! facts only from the text it has seen.
//!
//! - Before a step or turn that `needs` a fact, it looks for the fact's text in the request (or
//!   in the output of a recovery call it made in this turn). When the fact is missing it acts as
//!   the behaviour profile ([`crate::behaviour`], measured on real sessions after real
//!   compactions) says agents do after that kind of loss — a summary, fold result or strategy
//!   report in view, or nothing: with the profile's recovery probability it tries to get the fact
//!   back, else it goes on without it. Both draws (whether, and which means first) are seeded by
//!   the run's seed, the task, the turn and the fact, so the run stays deterministic and every arm
//!   that misses the same fact draws the same. Its means, drawn by the profile's shares, then the
//!   others the profile gives any weight, most used first, each with calls built from the
//!   request's text alone:
//!   - **re-read** (re-explore from what is visible): a `read_file` of a path named in the
//!     request's messages (a user's words, a fold result's index, a closing message, a summary);
//!     a `list_files` of the workspace, and once a listing is in view, reads of the listed files
//!     whose names share a word with the rest of the request;
//!   - **re-run**: a call the request shows whose result is gone;
//!   - **search**: a `grep` of the workspace for the need's `cue`;
//!   - **archive read**: a `grep` for the cue of the archive a fold result (or strategy report,
//!     or a summary quoting one) in the request points to (the folder holding them when several
//!     do).
//!
//!   Re-reads and re-runs are at most `MAX_RERUNS` per fact and turn, those sharing a name
//!   word with the paths the step at hand works on first. The cue is used only while it is
//!   visible in the request. Each call is judged by what comes back, and the next is tried when
//!   the fact is not in it: a re-run of a file edited since, or of a command whose output
//!   changes between runs, recovers nothing, and a grep for a cue returns every line that has it
//!   (more than the fact when the cue is common).
//! - A fact still missing (the agent went on without it, or nothing it tried brought it back)
//!   is lost: the agent writes the need's `guess` in place of its `value` in everything the step
//!   writes (tool arguments, report, `say`); a need without a guess stops the turn with a closing
//!   message that says what is missing.
//! - It never reads a turn that has not arrived: a strategy turn yields at its `say` unless its
//!   own spec says `awaits_back`.
//! - With probability `recheck` it repeats a visible earlier read before a tool step (noise that
//!   real models show). The random stream is drawn the same way under every policy, so arms are
//!   compared on equal noise.
//! - Cards are answered by a [`Judge`]; the compaction summary keeps every user message and every
//!   closing message (and host-written fold results), and drops tool outputs.
//!
//! **What it keeps between requests.** Nothing that carries a fact or where one was: no map of
//! which call showed what (under `trim` the call itself is gone, and a real agent cannot re-run
//! what it does not see). What it keeps: the random stream and the script position (turn, step,
//! whether the card was answered, the strategy entered or yielded, whether this step's noise was
//! drawn, whether it has left the script since), which carry no fact; and, for the turn in
//! progress only, what it decided for each missing fact and the recovery calls it made (so
//! none is made twice), those whose results have not been read yet, and the facts their results
//! held (a result may later be cut from the
//! context by a compaction within the turn, and the agent read it). Everything else a request's
//! answer uses is that request's text and the script of the current step. The calls it builds
//! from the request (recoveries, re-checks) are listed in [`Response::from_request`], and the
//! harness checks that their arguments are all in the request's text.
//!
//! The sim reports no metric: the harness measures everything (lost and recovered facts
//! included) from the request texts and tool results.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::json;

use crate::behaviour::{LossKind, SimBehaviour};
use crate::fold::{archive_pointer, card_turns};
use crate::judge::{self, CardPoint, Judge};
use crate::message::{MessageKind, Role, ToolCall};
use crate::metrics::DELEGATE_TOOL;
use crate::request::{Purpose, Request, Response};
use crate::rng::Rng;
use crate::spec::{Action, Need, Step, TaskSpec, TurnSpec};
use crate::tools;

mod delegate;
use delegate::effective_script;

mod recovery;
use recovery::{archive_lines, focus_words, recovery_candidates, tried_key, Recovery, MEANS};
#[cfg(test)]
use recovery::{common_folder, paths_in};

/// Settings of the simulated agent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimConfig {
    /// Seed of the noise.
    pub seed: u64,
    /// Probability of re-checking a visible earlier read before a tool step.
    pub recheck: f64,
    /// How cards are answered.
    pub judge: Judge,
    /// What it does when it needs a fact it cannot see: the behaviour profile's recovery
    /// probability and means ([`crate::behaviour`]; the shipped profile's by default).
    pub behaviour: SimBehaviour,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 1,
            recheck: 0.1,
            judge: Judge::Oracle,
            behaviour: SimBehaviour::default(),
        }
    }
}

/// The most re-runs (calls the request shows, reads of paths it names) tried for one fact in a
/// turn: an agent re-reads the few things it can see, it does not read every file named.
pub(crate) const MAX_RERUNS: usize = 4;

/// Where a needed fact was first seen: the private map of the sim before issue 31, kept only
/// for [`Sim::remembering_sources`].
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
    /// `Some` only in a sim built by [`Sim::remembering_sources`].
    remembered: Option<HashMap<String, Source>>,
    turn: u32,
    step: usize,
    card_answered: bool,
    entered: bool,
    yielded: bool,
    noise_rolled: Option<usize>,
    /// Whether the agent has left the script (wrote a guess into a call, or stopped a turn):
    /// from then on the workspace need not be what the script's `expect`s describe, so its calls
    /// carry none (a later check fails the cell, not a "broken task" error).
    deviated: bool,
    /// Recovery calls of this turn per fact: the calls (name and canonical arguments) tried.
    tried: HashMap<String, Vec<String>>,
    /// What the agent decided, this turn, for each fact it found missing: the means it tries, in
    /// order (none: it goes on without the fact).
    decided: HashMap<String, Vec<Recovery>>,
    /// Recovery calls of this turn whose results have not been read yet: (call id, fact).
    inflight: Vec<(String, String)>,
    /// Facts that came back in the output of a recovery call of this turn.
    recovered: HashSet<String>,
    calls: u64,
    /// What this agent's call ids begin with (`sim-`; a child's `child1-sim-`), so a child's
    /// calls are told from its parent's.
    id_prefix: String,
    /// The child session of the last `delegate` call: the requests marked
    /// [`Purpose::Child`] are its. A fresh sim on the delegation's own script, which knows only
    /// what its requests show (the brief, its own tool results).
    child: Option<Box<Sim>>,
    /// The last `delegate` call and the receipt its script expects: a receipt that differs
    /// (the child guessed or stopped) means the workspace need not be the script's any more.
    pending_receipt: Option<(String, String)>,
    /// The random streams of delegated detours run inline, by the detour's number in the turn:
    /// the same stream its child would draw from, so arms that delegate and arms that do not
    /// are compared on equal noise.
    inline_rngs: HashMap<(u32, usize), Rng>,
}

impl Sim {
    /// A sim for a task.
    pub fn new(spec: Arc<TaskSpec>, cfg: SimConfig) -> Sim {
        let rng = Rng::for_name(cfg.seed, &spec.name);
        Sim {
            spec,
            cfg,
            rng,
            remembered: None,
            turn: 0,
            step: 0,
            card_answered: false,
            entered: false,
            yielded: false,
            noise_rolled: None,
            deviated: false,
            tried: HashMap::new(),
            decided: HashMap::new(),
            inflight: Vec::new(),
            recovered: HashSet::new(),
            calls: 0,
            id_prefix: "sim-".into(),
            child: None,
            pending_receipt: None,
            inline_rngs: HashMap::new(),
        }
    }

    /// For tests only: the sim as it was before issue 31, which remembered across requests,
    /// from the whole script, which call (or user message) first showed each fact; it grepped an
    /// archive covering that turn for the fact itself, else repeated that call, whether or not
    /// the request still showed it. Its recovery calls are listed in
    /// [`Response::from_request`] like the real sim's, so the harness's check of their
    /// arguments catches it.
    #[doc(hidden)]
    pub fn remembering_sources(spec: Arc<TaskSpec>, cfg: SimConfig) -> Sim {
        let mut sources = HashMap::new();
        for (i, t) in spec.turns.iter().enumerate() {
            for s in t.script.iter().flat_map(Step::with_nested) {
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
        let mut sim = Sim::new(spec, cfg);
        sim.remembered = Some(sources);
        sim
    }

    fn call(&mut self, name: &str, args: serde_json::Value) -> ToolCall {
        self.calls += 1;
        ToolCall {
            id: format!("{}{}-{}", self.id_prefix, self.turn, self.calls),
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
        self.tried.clear();
        self.decided.clear();
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
        match req.purpose {
            Purpose::Compaction => return Response::new(summary(req), Vec::new(), None),
            Purpose::Child => {
                return match self.child.as_mut() {
                    Some(child) => child.respond(&Request {
                        purpose: Purpose::Turn,
                        ..req.clone()
                    }),
                    None => Response::new(
                        "Nothing was delegated to me: there is no brief in my plan.",
                        Vec::new(),
                        None,
                    ),
                }
            }
            Purpose::Turn => {}
        }
        let t = req.current_turn();
        if t != self.turn {
            self.enter_turn(t);
        }
        self.read_recoveries(req);
        self.read_receipt(req);
        let spec = Arc::clone(&self.spec);
        let Some(ts) = spec.turns.get((t as usize).wrapping_sub(1)) else {
            return Response::new(
                "There is nothing more in my plan for this.",
                Vec::new(),
                None,
            );
        };
        let strategies = req.tools.iter().any(|x| x.name == "strategy_request");
        let script = effective_script(ts, req.tools.iter().any(|x| x.name == DELEGATE_TOOL));

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
        let next = script.get(self.step).map(|(s, _)| s);
        let turn_lost = match self.missing(req, &ts.needs, next) {
            Err(c) => return from_request(c),
            Ok(lost) => lost,
        };
        while let Some((step, inline)) = script.get(self.step) {
            let mut lost = match self.missing(req, &step.needs, Some(step)) {
                Err(c) => return from_request(c),
                Ok(lost) => lost,
            };
            lost.extend(turn_lost.iter().cloned());
            if let Some(n) = lost.iter().find(|n| n.guess.is_none()) {
                let text = format!(
                    "I stopped before {}: it needs {:?}, which is no longer in view, and I could not get it back. Tell me the value and I will go on.",
                    describe(step),
                    n.fact
                );
                return self.close(ts, script.len(), strategies, text, true);
            }
            let subs: Vec<(&str, &str)> = lost
                .iter()
                .filter_map(|n| Some((n.value.as_str(), n.guess.as_deref()?)))
                .collect();
            match &step.action {
                Action::Tool { name, args } => {
                    if self.noise_rolled != Some(self.step) {
                        self.noise_rolled = Some(self.step);
                        let (roll, pick) = self.roll(*inline);
                        if roll < self.cfg.recheck {
                            if let Some(c) = self.visible_read(req, pick) {
                                return from_request(c);
                            }
                        }
                    }
                    self.step += 1;
                    let written = substitute_json(args, &subs);
                    let as_scripted = &written == args;
                    let c = self.call(name, written);
                    let mut r = Response::new("", vec![c.clone()], None);
                    // What the script expects of its own arguments says nothing about a guess,
                    // nor about a workspace a guess or a stopped turn left as it is.
                    self.deviated |= !as_scripted;
                    if let (Some(e), false) = (&step.expect, self.deviated) {
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
                    return self.close(ts, script.len(), strategies, text, false);
                }
                Action::Delegate(d) => {
                    self.step += 1;
                    return self.delegate(d, &subs, *inline);
                }
            }
        }
        Response::new(ts.say().to_string(), Vec::new(), None)
    }

    /// Ends the turn with `text`. In a strategy turn that does not wait for `/back`, the agent
    /// yields first; the turn's own spec says which, never the next turn's.
    fn close(
        &mut self,
        ts: &TurnSpec,
        steps: usize,
        strategies: bool,
        text: String,
        stop: bool,
    ) -> Response {
        if strategies && self.entered && ts.strategy.is_some() && !self.yielded && !ts.awaits_back {
            self.yielded = true;
            let c = self.call(
                "strategy_yield",
                json!({ "reason": format!("done: {text}") }),
            );
            return Response::new("", vec![c], None);
        }
        self.deviated |= stop;
        self.step = if stop { steps } else { self.step + 1 };
        Response::new(text, Vec::new(), None)
    }

    /// Reads the results of this turn's recovery calls that have come back: a fact is recovered
    /// when the output contains it, whatever the call was.
    fn read_recoveries(&mut self, req: &Request) {
        for (id, fact) in std::mem::take(&mut self.inflight) {
            let result = req
                .messages
                .iter()
                .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(id.as_str()));
            match result {
                Some(m) if m.text.contains(fact.as_str()) => {
                    self.recovered.insert(fact);
                }
                // Not recovered by it; a result no longer in the request is gone too (a
                // compaction within the turn took it before the agent read it).
                Some(_) | None => {}
            }
        }
    }

    /// The needs that are lost (missing after every recovery the request allows was tried), or
    /// a call that tries to recover the first missing one.
    fn missing(
        &mut self,
        req: &Request,
        needs: &[Need],
        step: Option<&Step>,
    ) -> Result<Vec<Need>, ToolCall> {
        let mut lost = Vec::new();
        for need in needs {
            let fact = &need.fact;
            if self.recovered.contains(fact) || req.contains_text(fact) {
                continue;
            }
            match self.recovery_call(req, need, step) {
                Some(c) => {
                    self.inflight.push((c.id.clone(), fact.clone()));
                    return Err(c);
                }
                None => lost.push(need.clone()),
            }
        }
        Ok(lost)
    }

    /// What the agent does about a fact it cannot see, decided once per fact and turn, as the
    /// behaviour profile says agents do after this kind of loss ([`LossKind::Summary`] when the
    /// request shows a host's summary, fold result or strategy report, else [`LossKind::None`]):
    /// with the profile's recovery probability it tries to get the fact back, first by a means
    /// drawn with the profile's shares, then by the others the profile gives any weight, most
    /// used first; else it goes on without the fact. The draws are seeded by the run's seed, the
    /// task, the turn and the fact, so every arm that misses the same fact draws the same.
    fn decide(&mut self, req: &Request, fact: &str) -> Vec<Recovery> {
        if let Some(d) = self.decided.get(fact) {
            return d.clone();
        }
        let summary = req.messages.iter().any(|m| {
            m.role == Role::User
                && matches!(
                    m.kind,
                    MessageKind::Summary
                        | MessageKind::FoldResult { .. }
                        | MessageKind::StrategyReport { .. }
                )
        });
        let kind = if summary {
            LossKind::Summary
        } else {
            LossKind::None
        };
        let kb = self.cfg.behaviour.kind(kind);
        let key = format!("{}\u{0}{}\u{0}{fact}", self.spec.name, self.turn);
        let mut draw = Rng::for_name(self.cfg.seed, &key);
        let order = if draw.next_f64() < kb.recover {
            let shares = kb.means.shares();
            let mut weighted: Vec<(Recovery, f64)> = MEANS
                .iter()
                .zip(shares)
                .filter(|(_, w)| *w > 0.0)
                .map(|(m, w)| (*m, w))
                .collect();
            let sum: f64 = weighted.iter().map(|(_, w)| w).sum();
            let mut u = draw.next_f64() * sum;
            let first = if kb.ordered {
                weighted
                    .iter()
                    .enumerate()
                    .max_by(|a, b| a.1 .1.total_cmp(&b.1 .1).then(b.0.cmp(&a.0)))
                    .map_or(0, |(i, _)| i)
            } else {
                weighted
                    .iter()
                    .position(|(_, w)| {
                        u -= w;
                        u < 0.0
                    })
                    .unwrap_or(weighted.len().saturating_sub(1))
            };
            let mut order = Vec::new();
            if !weighted.is_empty() {
                order.push(weighted.remove(first).0);
            }
            // Stable: equal shares keep the profile's order.
            weighted.sort_by(|a, b| b.1.total_cmp(&a.1));
            order.extend(weighted.into_iter().map(|(m, _)| m));
            order
        } else {
            Vec::new()
        };
        self.decided.insert(fact.to_string(), order.clone());
        order
    }

    /// The next call the agent makes to get a need's fact back, built from the request's text,
    /// by the means it decided on ([`Sim::decide`]) in their order; `None` when it goes on
    /// without the fact or every call those means allow was tried in this turn.
    fn recovery_call(
        &mut self,
        req: &Request,
        need: &Need,
        step: Option<&Step>,
    ) -> Option<ToolCall> {
        if self.remembered.is_some() {
            return self.remembered_call(req, &need.fact);
        }
        let order = self.decide(req, &need.fact);
        let tried = self.tried.get(&need.fact).cloned().unwrap_or_default();
        let reruns = tried
            .iter()
            .filter(|k| k.starts_with("rerun ") || k.starts_with("reread "))
            .count();
        let focus = step.map(focus_words).unwrap_or_default();
        let candidates = recovery_candidates(req, need, &focus);
        let (kind, name, args) = order
            .iter()
            .flat_map(|m| candidates.iter().filter(move |(kind, ..)| kind == m))
            .filter(|(kind, ..)| {
                !matches!(kind, Recovery::Rerun | Recovery::Reread) || reruns < MAX_RERUNS
            })
            .find(|(kind, name, args)| !tried.contains(&tried_key(*kind, name, args)))
            .cloned()?;
        self.tried
            .entry(need.fact.clone())
            .or_default()
            .push(tried_key(kind, &name, &args));
        Some(self.call(&name, args))
    }

    /// The recovery of [`Sim::remembering_sources`]: once per fact and turn, a grep for the fact
    /// itself of an archive whose range covers the turn that showed it, else that call again.
    fn remembered_call(&mut self, req: &Request, fact: &str) -> Option<ToolCall> {
        let src = self.remembered.as_ref()?.get(fact)?.clone();
        if self.tried.insert(fact.to_string(), Vec::new()).is_some() {
            return None;
        }
        let archive = archive_lines(req).find_map(|line| {
            let (a, b, path) = archive_pointer(line)?;
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
            .filter(|c| tools::reads_only(&c.name) && visible.contains(c.id.as_str()))
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let c = candidates[(pick % candidates.len() as u64) as usize].clone();
        Some(self.call(&c.name, c.args))
    }
}

/// A response with one call whose arguments the agent took from the request's text.
fn from_request(c: ToolCall) -> Response {
    let mut r = Response::new("", vec![c.clone()], None);
    r.from_request.push(c.id);
    r
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
        Action::Delegate(_) => "the delegation".into(),
    }
}

/// Escapes regex metacharacters.
pub(crate) fn regex_escape(s: &str) -> String {
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
pub(crate) const SUMMARY_QUOTE_BYTES: usize = 2000;

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
/// quoted up to `SUMMARY_QUOTE_BYTES`), host results (fold results, reports, earlier
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

    #[test]
    fn paths_are_words_with_a_file_extension() {
        assert_eq!(
            paths_in("fixed `shop/cart.py` and docs/pricing.md. 0.20, e.g. v1.2; see .foldbench/a.txt or ../x.py, logs/"),
            vec!["shop/cart.py", "docs/pricing.md"]
        );
    }

    #[test]
    fn several_archives_are_grepped_in_the_folder_that_holds_them() {
        let paths = [
            ".foldbench/archive/fold-turns-001-002.txt".to_string(),
            ".foldbench/archive/fold-turns-003-004.txt".to_string(),
        ];
        assert_eq!(common_folder(&paths).as_deref(), Some(".foldbench/archive"));
        assert_eq!(common_folder(&["a/b.txt".into(), "c/d.txt".into()]), None);
    }
}
