//! What the model reads: for every recorded request, its context split into the essay's three
//! parts ("What is the model actually reading?").
//!
//! - **work in progress**: the messages of the unit the request's turn belongs to, of units a
//!   later turn comes back to (with labels), and of turn 0 (what came before the first prompt);
//! - **conclusions** of finished work: for each finished unit, its last closing assistant message
//!   with words (what a fold keeps as "the model's own closing message");
//! - **steps** of finished work: everything else of finished units — tool calls, their outputs,
//!   intermediate messages, the prompts.
//!
//! Units come from the judge ([`crate::points`]): the lexical rule by default, the labels (with
//! hindsight: a unit is finished when no later turn continues it) when given. The context is the
//! `none` context ([`crate::engine::none_context`]): no processing at all. With the fixed prefix
//! (system prompt and tools) the four parts add up to the `none` request size.

use harness_import::ImportedSession;
use serde::{Deserialize, Serialize};

use crate::engine::{estimate_prefix, is_conclusion, SessionHeader};
use crate::labels::Labels;
use crate::points::{JudgeKind, Turns};
use harness_core::MessageKind;

/// Tokens of a request by part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Composition {
    /// The fixed prefix: system prompt and tools.
    pub(crate) prefix: u64,
    /// Work in progress.
    pub in_progress: u64,
    /// Conclusions of finished work.
    pub conclusions: u64,
    /// Steps of finished work.
    pub steps: u64,
}

impl Composition {
    /// The whole request.
    pub fn total(&self) -> u64 {
        self.prefix + self.messages()
    }

    /// The messages (everything but the prefix).
    pub(crate) fn messages(&self) -> u64 {
        self.in_progress + self.conclusions + self.steps
    }

    /// Adds another composition.
    pub(crate) fn add(&mut self, o: &Composition) {
        self.prefix += o.prefix;
        self.in_progress += o.in_progress;
        self.conclusions += o.conclusions;
        self.steps += o.steps;
    }

    /// `part / messages()`, 0 when empty.
    pub fn share(&self, part: u64) -> f64 {
        match self.messages() {
            0 => 0.0,
            m => part as f64 / m as f64,
        }
    }
}

/// The composition of one session's requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionComposition {
    /// Which session it is.
    #[serde(flatten)]
    pub session: SessionHeader,
    /// Units of work (by the judge).
    pub units: usize,
    /// The judge in effect.
    pub judge: JudgeKind,
    /// Each recorded request's split, in order.
    pub requests: Vec<Composition>,
    /// Their sum.
    pub total: Composition,
}

/// Splits every recorded request of a session.
pub fn analyze_session(
    session: &ImportedSession,
    judge: JudgeKind,
    labels: Option<&Labels>,
) -> SessionComposition {
    let turns = Turns::new(session, judge, labels);
    let prefix = u64::from(estimate_prefix(session).tokens);
    let unit = turns.unit_ids();
    let mut units: Vec<usize> = unit[1..].to_vec();
    units.sort_unstable();
    units.dedup();
    let unit_of = |t: u32| {
        unit.get(t as usize)
            .copied()
            .unwrap_or(usize::MAX - t as usize)
    };
    let mut requests = Vec::with_capacity(session.requests.len());
    let mut total = Composition::default();
    // The last conclusion of each finished unit, by message index: (unit, index).
    let mut last: Vec<(usize, usize)> = Vec::new();
    for r in &session.requests {
        let end = r.context.min(session.messages.len());
        let current = session
            .messages
            .get(r.message)
            .map_or_else(|| turns.last(), |m| m.turn);
        let finished = turns.finished_at(current);
        let is_finished = |t: u32| finished.get(t as usize).copied().unwrap_or(false);
        let context = &session.messages[..end];
        last.clear();
        for (i, m) in context.iter().enumerate() {
            if m.kind != MessageKind::Summary && is_finished(m.turn) && is_conclusion(m) {
                let u = unit_of(m.turn);
                match last.iter_mut().find(|(x, _)| *x == u) {
                    Some(slot) => slot.1 = i,
                    None => last.push((u, i)),
                }
            }
        }
        let mut c = Composition {
            prefix,
            ..Composition::default()
        };
        for (i, m) in context.iter().enumerate() {
            if m.kind == MessageKind::Summary {
                continue;
            }
            let n = u64::from(m.tokens);
            if !is_finished(m.turn) {
                c.in_progress += n;
            } else if last.iter().any(|(_, j)| *j == i) {
                c.conclusions += n;
            } else {
                c.steps += n;
            }
        }
        total.add(&c);
        requests.push(c);
    }
    SessionComposition {
        session: SessionHeader::of(session, turns.last()),
        units: units.len(),
        judge: turns.judge(),
        requests,
        total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_import::Format;

    #[test]
    fn the_session_header_is_flattened_into_the_json_and_read_back() {
        let c = SessionComposition {
            session: SessionHeader {
                id: "s1".into(),
                source: "a.jsonl".into(),
                format: Format::ClaudeCode,
                parent: None,
                project: "p".into(),
                date: Some("2026-01-02".into()),
                model: None,
                turns: 3,
            },
            units: 2,
            judge: JudgeKind::Lexical,
            requests: vec![],
            total: Composition::default(),
        };
        let json = serde_json::to_string(&c).unwrap();
        assert!(
            json.starts_with(
                r#"{"id":"s1","source":"a.jsonl","format":"claude-code","parent":null,"project":"p","date":"2026-01-02","model":null,"turns":3,"units":2,"#
            ),
            "{json}"
        );
        let back: SessionComposition = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
    }
}
