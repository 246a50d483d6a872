//! The offline upstream's pure part: the sim answering a real agent's requests.
//!
//! `foldbench serve --sim` (and `run --agent` with the `sim` model) puts this behind the model
//! APIs: the agent sends its whole conversation, in its own tool vocabulary, and
//! [`SimUpstream::answer`] reads it back into the sim's [`Request`], lets the [`Sim`] answer, and
//! writes the answer's tool calls as the agent's own (`vocab`). So a real agent executes real
//! tool calls, and whatever a proxy between the two did to the conversation — a trim, a fold
//! with its card, a compaction — is what the sim reads.
//!
//! The sim's rule holds: it knows facts only from the text of the request (the agent's
//! messages as they arrived, the pinned system entries included). Reading the request back:
//!
//! - a user message that holds a task turn's words is that turn's prompt (the longest match
//!   among the turns after the last one seen, so "ok" inside "ok, turn it off" is not taken for
//!   a turn of its own); a card after it (`<fold-card>` … `</fold-card>`) is its card;
//! - a user message whose first line is a fold result or a strategy report is the host's;
//!   anything else on the user side (an agent's reminders, its environment notes) is a host
//!   note of the turn in progress;
//! - the agent's tool calls are read back as the sim calls the upstream wrote them from (kept by
//!   call id; for mini-swe-agent, whose calls are text, the step id in the answer's first line);
//!   their results are the agent's results, as its tools printed them;
//! - a request whose last user message asks for a summary (foldbench's compaction prompt,
//!   Claude Code's or Codex's) is answered with the sim's summary; a request that holds no task
//!   turn at all (a title, a quota probe, a side model) with a short text.
//!
//! The same request sent again (a retry) gets the same answer: the sim moves on only when the
//! conversation does.

pub(crate) mod vocab;
pub use vocab::{
    ClaudeCodeTools, CodexTools, Foldbench, MiniText, Surroundings, Written, FOLDBENCH,
};

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;

use crate::digest::sha256_hex;
use crate::fold::{archive_pointer, CARD_HEADER};
use crate::message::{Message, MessageKind, Role, ToolCall, ToolSpec};
use crate::request::{Purpose, Request};
use crate::session::COMPACTION_PROMPT;
use crate::sim::{Sim, SimConfig};
use crate::spec::TaskSpec;
use crate::text_agent::is_observation;

pub use vocab::ToolVocabulary;

/// What an agent's compaction request says, per agent (Claude Code's, Codex's), beside
/// foldbench's own [`COMPACTION_PROMPT`].
pub(crate) const AGENT_COMPACTION_PROMPTS: [&str; 2] = [
    "Your task is to create a detailed summary of the conversation so far",
    "You are performing a CONTEXT CHECKPOINT COMPACTION",
];

/// The end of a card attached to a user message.
const CARD_END: &str = "</fold-card>";

/// An agent's request as the upstream reads it.
#[derive(Debug, Clone, Copy)]
pub struct AgentRequest<'a> {
    /// The system text: the request's own and every pinned entry (`system`, `developer`), in
    /// order.
    pub system: &'a str,
    /// The tools it offers.
    pub tools: &'a [ToolSpec],
    /// Its conversation as core messages (user text, the model's answers, tool results).
    pub messages: &'a [Arc<Message>],
}

/// What an answer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerKind {
    /// A step of a task turn, answered by the sim.
    Turn,
    /// A summary for a compaction request.
    Summary,
    /// A request outside the task's conversation.
    Side,
}

/// The upstream's answer: text and tool calls in the agent's vocabulary.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The text.
    pub text: String,
    /// The tool calls (ids are the sim's).
    pub calls: Vec<ToolCall>,
    /// What it answers.
    pub kind: AnswerKind,
}

/// One line of the upstream's record: what a request was and how it was answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Exchange {
    /// The request's index, from 0.
    pub(crate) index: usize,
    /// What it was.
    pub(crate) kind: AnswerKind,
    /// The vocabulary it spoke.
    pub(crate) vocabulary: &'static str,
    /// The task turn it belongs to (0 outside the task).
    pub turn: u32,
    /// The tools the answer called, in the agent's names (`bash` for mini-swe-agent's command
    /// in text).
    pub calls: Vec<String>,
    /// Whether this was a repeat of the previous request, answered as before.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub repeated: bool,
    /// Scripted `expect`s that a result of the agent's tools did not contain (call, text):
    /// the agent's tool showed less than foldbench's own would have (a cut output, another
    /// format). The sim goes on; facts are still judged from what the request shows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub expect_missed: Vec<(String, String)>,
}

/// The sim behind an agent: one per conversation.
pub struct SimUpstream {
    spec: Arc<TaskSpec>,
    sim: Sim,
    /// Agent-side call id → the sim call it was written from.
    issued: HashMap<String, ToolCall>,
    /// Scripted expectations not yet checked: (sim call id, text).
    expects: Vec<(String, String)>,
    /// The last request's fingerprint and its answer.
    last: Option<(String, Answer)>,
    exchanges: Vec<Exchange>,
    /// The real agents' vocabularies, in their list's order ([`vocab::of`]).
    vocabularies: Vec<&'static dyn ToolVocabulary>,
}

impl SimUpstream {
    /// An upstream playing `spec` with the sim settings `cfg`, answering each request in the
    /// first of `vocabularies` that recognises it, else in foldbench's own tools.
    pub fn new(
        spec: Arc<TaskSpec>,
        cfg: SimConfig,
        vocabularies: Vec<&'static dyn ToolVocabulary>,
    ) -> SimUpstream {
        SimUpstream {
            vocabularies,
            sim: Sim::new(Arc::clone(&spec), cfg),
            spec,
            issued: HashMap::new(),
            expects: Vec::new(),
            last: None,
            exchanges: Vec::new(),
        }
    }

    /// What each request was and how it was answered, in order.
    pub fn exchanges(&self) -> &[Exchange] {
        &self.exchanges
    }

    /// Answers one request of the agent.
    pub fn answer(&mut self, req: &AgentRequest<'_>) -> Answer {
        let vocab = vocab::of(&self.vocabularies, req.tools, req.system);
        let read = self.read(vocab, req);
        let print = fingerprint(req);
        let index = self.exchanges.len();
        if let Some((p, a)) = &self.last {
            if *p == print {
                let a = a.clone();
                self.exchanges.push(Exchange {
                    index,
                    kind: a.kind,
                    vocabulary: vocab.name(),
                    turn: read.turn,
                    calls: a.calls.iter().map(|c| c.name.clone()).collect(),
                    repeated: true,
                    expect_missed: Vec::new(),
                });
                return a;
            }
        }
        let missed = self.check_expects(&read.request);
        let answer = match read.purpose {
            Some(Purpose::Compaction) => Answer {
                text: crate::sim::summary(&read.request),
                calls: Vec::new(),
                kind: AnswerKind::Summary,
            },
            Some(Purpose::Turn) => self.turn_answer(vocab, req, &read),
            // The offline upstream reads an agent's own requests; it never makes a child's.
            Some(Purpose::Child) | None => Answer {
                text: "OK.".to_string(),
                calls: Vec::new(),
                kind: AnswerKind::Side,
            },
        };
        let mut calls: Vec<String> = answer.calls.iter().map(|c| c.name.clone()).collect();
        if vocab.in_text()
            && vocab::mini_command(&answer.text).is_some_and(|c| c != vocab::MINI_SUBMIT)
        {
            calls.push("bash".to_string());
        }
        self.exchanges.push(Exchange {
            index,
            kind: answer.kind,
            vocabulary: vocab.name(),
            turn: read.turn,
            calls,
            repeated: false,
            expect_missed: missed,
        });
        self.last = Some((print, answer.clone()));
        answer
    }

    /// The sim's answer to a step of a task turn, written in `vocab`.
    fn turn_answer(
        &mut self,
        vocab: &dyn ToolVocabulary,
        req: &AgentRequest<'_>,
        read: &Read,
    ) -> Answer {
        let resp = self.sim.respond(&read.request);
        self.expects.extend(resp.expects.iter().cloned());
        let shown = |path: &str| shown_text(&read.request, path);
        let at = Surroundings {
            cwd: read.cwd.as_deref(),
            tools: req.tools,
            shown: &shown,
        };
        let mut calls = Vec::new();
        let mut commands = Vec::new();
        for c in &resp.tool_calls {
            match vocab::write_call(vocab, c, &at) {
                Written::Call(w) => {
                    self.issued.insert(w.id.clone(), c.clone());
                    calls.push(w);
                }
                Written::Command(cmd) => {
                    self.issued.insert(c.id.clone(), c.clone());
                    commands.push((c.id.clone(), cmd));
                }
            }
        }
        let text = match (vocab.in_text(), commands.first()) {
            (true, Some((id, cmd))) => {
                vocab::mini_answer(&format!("Step {id}: I run this command."), cmd)
            }
            (true, None) if calls.is_empty() => vocab::mini_answer(&resp.text, vocab::MINI_SUBMIT),
            (true, None) | (false, _) => resp.text.clone(),
        };
        Answer {
            text,
            calls,
            kind: AnswerKind::Turn,
        }
    }

    /// Checks the results that came back for calls with a scripted `expect`.
    fn check_expects(&mut self, req: &Request) -> Vec<(String, String)> {
        let mut missed = Vec::new();
        self.expects.retain(|(id, want)| {
            let Some(result) = req
                .messages
                .iter()
                .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(id.as_str()))
            else {
                return true;
            };
            if !result.text.contains(want.as_str()) {
                missed.push((id.clone(), want.clone()));
            }
            false
        });
        missed
    }

    /// Reads the agent's conversation back into the sim's request.
    fn read(&self, vocab: &dyn ToolVocabulary, req: &AgentRequest<'_>) -> Read {
        read_request(&self.spec, &self.issued, vocab, req)
    }
}

/// The agent's request read back.
struct Read {
    /// The sim's request.
    request: Request,
    /// `Some(Turn)` for a task step, `Some(Compaction)` for a summary request, `None` for a
    /// request outside the task.
    purpose: Option<Purpose>,
    /// The task turn in progress (0 before the first).
    turn: u32,
    /// The agent's working folder, as its request names it.
    cwd: Option<String>,
}

fn read_request(
    spec: &TaskSpec,
    issued: &HashMap<String, ToolCall>,
    vocab: &dyn ToolVocabulary,
    req: &AgentRequest<'_>,
) -> Read {
    let mut out: Vec<Arc<Message>> = Vec::new();
    let mut turn = 0u32;
    let mut seen_turn = false;
    // mini-swe-agent: the sim call of the last answer, whose observation comes next.
    let mut awaiting: Option<ToolCall> = None;
    for m in req.messages {
        match m.role {
            Role::User => {
                if let Some(call) = awaiting.take().filter(|_| is_observation(&m.text)) {
                    let mut r = plain(Role::Tool, turn, m.text.clone());
                    r.tool_call_id = Some(call.id.clone());
                    r.tool_name = Some(call.name.clone());
                    out.push(Arc::new(r));
                    continue;
                }
                let (text, card) = split_card(&m.text);
                if let Some(kind) = host_kind(text) {
                    let mut h = plain(Role::User, turn, text.to_string());
                    h.kind = kind;
                    out.push(Arc::new(h));
                } else if let Some(t) = prompt_turn(spec, text, turn, seen_turn) {
                    turn = t;
                    seen_turn = true;
                    // The agent's own text around the user's words (reminders, a template) is a
                    // note of its own, so the prompt is the words the card and summary quote.
                    let words = spec.turns[t as usize - 1].user.as_str();
                    let rest = text.replacen(words, "", 1);
                    if !rest.trim().is_empty() {
                        let mut h = plain(Role::User, t, rest);
                        h.kind = agent_note();
                        out.push(Arc::new(h));
                    }
                    let mut u = plain(Role::User, t, words.to_string());
                    u.card = card.map(str::to_string);
                    out.push(Arc::new(u));
                } else {
                    // An agent's own note: visible, but no prompt of the task.
                    let mut h = plain(Role::User, turn, m.visible_text());
                    h.kind = agent_note();
                    out.push(Arc::new(h));
                }
            }
            Role::Assistant => {
                let mut a = plain(Role::Assistant, turn, m.text.clone());
                a.tool_calls = m
                    .tool_calls
                    .iter()
                    .map(|c| issued.get(&c.id).cloned().unwrap_or_else(|| c.clone()))
                    .collect();
                if vocab.in_text() {
                    if let Some(call) = mini_step(&m.text).and_then(|id| issued.get(id)) {
                        a.text = String::new();
                        a.tool_calls = vec![call.clone()];
                        awaiting = Some(call.clone());
                    }
                }
                out.push(Arc::new(a));
            }
            Role::Tool => {
                let mut r = (**m).clone();
                r.turn = turn;
                // A host that read a mini-swe-agent observation as a tool result (the proxy's
                // grouping, `text_agent`'s rule) names it by the answer's text; the sim knows
                // the call by the step it wrote.
                let awaited = awaiting.take();
                if let Some(c) = m
                    .tool_call_id
                    .as_deref()
                    .and_then(|id| issued.get(id))
                    .or(awaited.as_ref())
                {
                    r.tool_call_id = Some(c.id.clone());
                    r.tool_name = Some(c.name.clone());
                }
                out.push(Arc::new(r));
            }
        }
    }
    let last_user = req
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.text.as_str())
        .unwrap_or("");
    let compaction = last_user.contains(COMPACTION_PROMPT)
        || AGENT_COMPACTION_PROMPTS
            .iter()
            .any(|p| last_user.contains(p));
    let purpose = if compaction {
        Some(Purpose::Compaction)
    } else if seen_turn {
        Some(Purpose::Turn)
    } else {
        None
    };
    let request = Request::new(
        Arc::from(req.system),
        Arc::from(req.tools.to_vec()),
        0,
        out,
        purpose.unwrap_or(Purpose::Turn),
    );
    Read {
        request,
        purpose,
        turn,
        cwd: working_folder(req.system, req.messages),
    }
}

/// A message with no token count (the sim reads texts, never counts).
fn plain(role: Role, turn: u32, text: String) -> Message {
    Message {
        id: 0,
        role,
        turn,
        text,
        card: None,
        tool_calls: Vec::new(),
        tool_call_id: None,
        tool_name: None,
        is_error: false,
        thinking: None,
        kind: MessageKind::Plain,
        tokens: 0,
    }
}

/// The kind given to an agent's own text on the user side (its reminders, environment notes,
/// prompt template): a host note, visible to the sim, never a prompt.
fn agent_note() -> MessageKind {
    MessageKind::StrategyRules {
        mode: "agent".into(),
    }
}

/// First lines of summaries that replaced earlier turns: the sim's own (foldbench's compaction
/// through a proxy), Claude Code's and Codex's.
const SUMMARY_OPENINGS: [&str; 3] = [
    "Summary of the conversation so far",
    "This session is being continued from a previous conversation",
    "Another language model started to solve this problem",
];

/// The user's words and the card after them, if one is attached.
fn split_card(text: &str) -> (&str, Option<&str>) {
    match text.find(CARD_HEADER) {
        Some(at) => {
            let end = text[at..]
                .find(CARD_END)
                .map_or(text.len(), |e| at + e + CARD_END.len());
            (text[..at].trim_end(), Some(&text[at..end]))
        }
        None => (text, None),
    }
}

/// The kind of a host message (a fold result, a strategy report), from its first line.
fn host_kind(text: &str) -> Option<MessageKind> {
    let first = text.trim_start();
    if SUMMARY_OPENINGS.iter().any(|o| first.starts_with(o)) {
        return Some(MessageKind::Summary);
    }
    let (from, to, archive) = archive_pointer(first)?;
    let sha256 = first
        .lines()
        .next()
        .and_then(|l| l.split_once("(sha256 "))
        .map(|(_, s)| s.trim_end_matches(')').to_string())
        .unwrap_or_default();
    Some(if first.starts_with("[fold]") {
        MessageKind::FoldResult {
            from,
            to,
            archive,
            sha256,
        }
    } else {
        MessageKind::StrategyReport {
            mode: String::new(),
            archive,
            sha256,
        }
    })
}

/// The task turn whose prompt `text` holds: among the turns after `turn` (or `turn` itself
/// before any was seen), the one whose words are the longest match.
fn prompt_turn(spec: &TaskSpec, text: &str, turn: u32, seen: bool) -> Option<u32> {
    let first = if seen { turn + 1 } else { 1 };
    spec.turns
        .iter()
        .enumerate()
        .skip(first.saturating_sub(1) as usize)
        .filter(|(_, t)| !t.user.is_empty() && text.contains(t.user.as_str()))
        .max_by_key(|(i, t)| (t.user.len(), std::cmp::Reverse(*i)))
        .map(|(i, _)| i as u32 + 1)
}

/// The step id a mini-swe-agent answer of the upstream carries in its first line.
fn mini_step(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("Step ")?;
    let end = rest.find(':')?;
    Some(&rest[..end])
}

/// The agent's working folder, as its request names it: Claude Code's "Primary working
/// directory: …", Codex's `<cwd>…</cwd>`.
fn working_folder(system: &str, messages: &[Arc<Message>]) -> Option<String> {
    let texts = std::iter::once(system).chain(
        messages
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| m.text.as_str()),
    );
    for t in texts {
        if let Some((_, rest)) = t.split_once("Primary working directory: ") {
            return rest.lines().next().map(|l| l.trim().to_string());
        }
        if let Some((_, rest)) = t.split_once("<cwd>") {
            return rest.split_once("</cwd>").map(|(d, _)| d.trim().to_string());
        }
    }
    None
}

/// The text of `path` as the request last showed it whole: the result of the latest
/// `read_file` of it with no offset or limit, when no later call wrote to it. Codex's result
/// header (up to `Output:`) is left out.
fn shown_text(req: &Request, path: &str) -> Option<String> {
    let mut shown: Option<String> = None;
    let mut reads: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for m in &req.messages {
        for c in &m.tool_calls {
            let same = c.str_arg("path") == Some(path);
            match c.name.as_str() {
                "read_file"
                    if same && c.args.get("offset").is_none() && c.args.get("limit").is_none() =>
                {
                    reads.insert(c.id.as_str());
                }
                name if same && crate::tools::find(name).is_some_and(|t| t.writes_its_path()) => {
                    reads.clear();
                    shown = None;
                }
                _ => {}
            }
        }
        if m.role == Role::Tool && !m.is_error {
            if let Some(id) = m.tool_call_id.as_deref() {
                if reads.remove(id) {
                    let text = match m.text.split_once("\nOutput:\n") {
                        Some((head, body)) if head.starts_with("Chunk ID:") => body,
                        _ => m.text.as_str(),
                    };
                    shown = Some(text.to_string());
                }
            }
        }
    }
    shown
}

/// A request's fingerprint: its messages' roles, texts and calls.
fn fingerprint(req: &AgentRequest<'_>) -> String {
    let mut s = String::new();
    for m in req.messages {
        s.push_str(match m.role {
            Role::User => "u",
            Role::Assistant => "a",
            Role::Tool => "t",
        });
        s.push_str(&m.text);
        s.push('\u{1}');
        for c in &m.tool_calls {
            s.push_str(&c.id);
            s.push_str(&c.canonical_args());
        }
        if let Some(id) = &m.tool_call_id {
            s.push_str(id);
        }
        s.push('\u{2}');
    }
    sha256_hex(s.as_bytes())
}
