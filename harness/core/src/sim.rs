//! The simulated agent `sim` (DESIGN §8): deterministic for a seed, it follows a task's script but
//! knows facts only from the text of the request it is given.
//!
//! - Before a step or turn that `needs` a fact, it looks for the fact's text in the request. When
//!   the fact is missing it recovers as a careful agent would: if a fold result (or strategy
//!   report) in the request points to an archive whose range covers the turn that produced the
//!   fact, it greps that archive; otherwise it repeats the call that first produced the fact.
//! - With probability `recheck` it repeats a visible earlier read before a tool step (noise that
//!   real models show). The random stream is drawn the same way under every policy, so arms are
//!   compared on equal noise.
//! - Cards are answered by a [`Judge`]; the compaction summary keeps every user message and every
//!   closing message (and host-written fold results), and drops tool outputs.
//!
//! The sim reports no metric: the harness measures everything from what it does.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::json;

use crate::fold::{archive_pointer, card_turns};
use crate::judge::{self, CardPoint, Judge};
use crate::message::{MessageKind, Role, ToolCall};
use crate::request::{Purpose, Request, Response};
use crate::rng::Rng;
use crate::spec::{Action, TaskSpec};

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

/// The simulated agent for one cell.
#[derive(Debug)]
pub struct Sim {
    spec: Arc<TaskSpec>,
    cfg: SimConfig,
    rng: Rng,
    sources: HashMap<String, (u32, String, serde_json::Value)>,
    turn: u32,
    step: usize,
    card_answered: bool,
    entered: bool,
    yielded: bool,
    noise_rolled: Option<usize>,
    attempted: HashSet<String>,
    calls: u64,
}

impl Sim {
    /// A sim for a task.
    pub fn new(spec: Arc<TaskSpec>, cfg: SimConfig) -> Sim {
        let mut sources = HashMap::new();
        for (i, t) in spec.turns.iter().enumerate() {
            for s in &t.script {
                if let (Some(e), Action::Tool { name, args }) = (&s.expect, &s.action) {
                    sources
                        .entry(e.clone())
                        .or_insert((i as u32 + 1, name.clone(), args.clone()));
                }
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

    /// Answers one request.
    pub fn respond(&mut self, req: &Request) -> Response {
        if req.purpose == Purpose::Compaction {
            return Response::new(summary(req), Vec::new(), None);
        }
        let t = req.current_turn();
        if t != self.turn {
            self.turn = t;
            self.step = 0;
            self.card_answered = false;
            self.yielded = false;
            self.noise_rolled = None;
            self.attempted.clear();
            let strategy_turn = self
                .spec
                .turns
                .get((t as usize).wrapping_sub(1))
                .is_some_and(|x| x.strategy.is_some());
            if !strategy_turn {
                self.entered = false;
            }
        }
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
        if let Some(c) = self.recover(req, &ts.needs) {
            return Response::new("", vec![c], None);
        }
        while let Some(step) = ts.script.get(self.step) {
            if let Some(c) = self.recover(req, &step.needs) {
                return Response::new("", vec![c], None);
            }
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
                    let c = self.call(name, args.clone());
                    let mut r = Response::new("", vec![c.clone()], None);
                    if let Some(e) = &step.expect {
                        r.expects.push((c.id, e.clone()));
                    }
                    return r;
                }
                Action::Report(text) => {
                    self.step += 1;
                    if strategies && self.entered {
                        let c = self.call("strategy_report", json!({ "text": text }));
                        return Response::new("", vec![c], None);
                    }
                }
                Action::Say(text) => {
                    let next_is_back = spec.turns.get(t as usize).is_some_and(|n| n.is_back());
                    if strategies
                        && self.entered
                        && ts.strategy.is_some()
                        && !self.yielded
                        && !next_is_back
                    {
                        self.yielded = true;
                        let c = self.call(
                            "strategy_yield",
                            json!({ "reason": format!("done: {text}") }),
                        );
                        return Response::new("", vec![c], None);
                    }
                    self.step += 1;
                    return Response::new(text.clone(), Vec::new(), None);
                }
            }
        }
        Response::new(ts.say().to_string(), Vec::new(), None)
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

    /// A call that recovers the first missing fact, if any fact is missing.
    fn recover(&mut self, req: &Request, needs: &[String]) -> Option<ToolCall> {
        for fact in needs {
            if self.attempted.contains(fact) || req.contains_text(fact) {
                continue;
            }
            self.attempted.insert(fact.clone());
            let (src_turn, name, args) = self.sources.get(fact)?.clone();
            let archive = req
                .messages
                .iter()
                .filter(|m| m.role == Role::User && !m.is_human())
                .find_map(|m| {
                    let (a, b, path) = archive_pointer(&m.text)?;
                    (a <= src_turn && src_turn <= b).then_some(path)
                });
            return Some(match archive {
                Some(path) => self.call(
                    "grep",
                    json!({ "pattern": regex_escape(fact), "path": path }),
                ),
                None => self.call(&name, args),
            });
        }
        None
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
    use crate::message::{Message, ToolSpec};
    use crate::spec;

    const SPEC: &str = r#"name: two
repo: fixtures/x
turns:
  - user: "look at a"
    unit: a
    script:
      - read_file: { path: a.py }
        expect: "A = 1"
      - say: "seen"
  - user: "now use it"
    unit: a
    needs: ["A = 1"]
    script:
      - edit_file: { path: a.py, old: "A = 1", new: "A = 2" }
      - say: "done"
checks:
  - file_contains: { path: a.py, text: "A = 2" }
"#;

    fn req(msgs: Vec<Arc<Message>>, tools: &[&str]) -> Request {
        let tools: Vec<ToolSpec> = tools
            .iter()
            .map(|n| ToolSpec {
                name: n.to_string(),
                description: String::new(),
                parameters: json!({}),
            })
            .collect();
        Request::new(Arc::from("sys"), Arc::from(tools), 0, msgs, Purpose::Turn)
    }

    fn sim(recheck: f64) -> Sim {
        Sim::new(
            Arc::new(spec::load("t.yaml", SPEC).unwrap()),
            SimConfig {
                seed: 3,
                recheck,
                judge: Judge::Oracle,
            },
        )
    }

    #[test]
    fn follows_the_script_and_reruns_missing_facts() {
        let mut s = sim(0.0);
        let u1 = Message::user(1, "look at a", None);
        let r = s.respond(&req(vec![u1.clone()], &[]));
        assert_eq!(r.tool_calls[0].name, "read_file");
        assert_eq!(r.expects[0].1, "A = 1");
        let out = Message::tool_result(1, &r.tool_calls[0], "     1\tA = 1", false);
        let a1 = Message::assistant(1, "", r.tool_calls.clone());
        let r = s.respond(&req(vec![u1.clone(), a1.clone(), out.clone()], &[]));
        assert_eq!(r.text, "seen");
        // Turn 2 with the fact visible: straight to the edit.
        let close = Message::assistant(1, "seen", vec![]);
        let u2 = Message::user(2, "now use it", None);
        let mut s2 = sim(0.0);
        s2.turn = 1;
        let r = s2.respond(&req(
            vec![u1.clone(), a1, out, close.clone(), u2.clone()],
            &[],
        ));
        assert_eq!(r.tool_calls[0].name, "edit_file");
        // Turn 2 with the fact gone (trimmed): re-run the producing read first.
        let r = s.respond(&req(vec![u1, close, u2], &[]));
        assert_eq!(r.tool_calls[0].name, "read_file");
        assert_eq!(r.tool_calls[0].args, json!({ "path": "a.py" }));
    }

    #[test]
    fn greps_the_archive_when_a_fold_covers_the_source() {
        let mut s = sim(0.0);
        let fold = crate::fold::result_message(
            1,
            1,
            &[Message::user(1, "look at a", None)],
            ".foldbench/archive/f.txt",
            "00",
        );
        let u2 = Message::user(2, "now use it", None);
        let r = s.respond(&req(vec![fold, u2], &[]));
        assert_eq!(r.tool_calls[0].name, "grep");
        assert_eq!(
            r.tool_calls[0].args,
            json!({ "pattern": "A = 1", "path": ".foldbench/archive/f.txt" })
        );
    }

    #[test]
    fn summary_keeps_users_and_closings_only() {
        let k = ToolCall {
            id: "1".into(),
            name: "shell".into(),
            args: json!({"command": "ls"}),
        };
        let msgs = vec![
            Message::user(1, "hello", None),
            Message::assistant(1, "", vec![k.clone()]),
            Message::tool_result(1, &k, "SECRET OUTPUT", false),
            Message::assistant(1, "all done", vec![]),
            Message::user(2, "summarize", None),
        ];
        let mut r = req(msgs, &[]);
        r.purpose = Purpose::Compaction;
        let text = summary(&r);
        assert!(text.contains("\"hello\"") && text.contains("all done"));
        assert!(!text.contains("SECRET OUTPUT") && !text.contains("summarize"));
    }

    #[test]
    fn escapes_regex() {
        assert_eq!(regex_escape("a.b (c)"), "a\\.b \\(c\\)");
    }
}
