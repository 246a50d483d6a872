//! A foldbench run's own transcript (`cells/<cell>/transcript.jsonl`: the messages a cell
//! appended) as a recorded session, so that a live run can be replayed under other policies.

use std::sync::Arc;

use harness_core::{Message, MessageKind, Role};
use harness_import::{Format, HumanTurn, ImportedSession, RecordedRequest};

/// The session of a cell's transcript: every assistant message is one recorded request whose
/// context is everything before it; every plain user message opens a turn. Fold results,
/// summaries and strategy messages a live policy made are kept as they were (replay a `none`
/// cell to compare policies on the same answers).
pub fn session_of_transcript(id: &str, messages: Vec<Arc<Message>>) -> ImportedSession {
    let mut requests = Vec::new();
    let mut human_turns = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        match m.role {
            Role::Assistant => requests.push(RecordedRequest {
                message: i,
                context: i,
                context_start: 0,
                response_id: None,
                usage: None,
                model: None,
            }),
            Role::User
                if m.kind == MessageKind::Plain
                    && m.turn > 0
                    && human_turns
                        .last()
                        .is_none_or(|h: &HumanTurn| h.turn < m.turn) =>
            {
                human_turns.push(HumanTurn {
                    turn: m.turn,
                    message: i,
                    id: None,
                    text: m.text.clone(),
                });
            }
            _ => {}
        }
    }
    ImportedSession {
        id: id.to_string(),
        format: Format::ClaudeCode,
        source: id.to_string(),
        parent: None,
        system: None,
        messages,
        requests,
        events: Vec::new(),
        human_turns,
        dropped_prefix: 0,
        warnings: Vec::new(),
        started_ms: None,
        ended_ms: None,
        cwd: None,
        message_ms: Vec::new(),
    }
}
