//! The losses of a foldbench run's cell — a real agent behind the proxy, or the sim — as the
//! recorded sessions' are measured: `foldbench report RUN --behaviour-out FILE` writes the
//! agent's measured behaviour in the profile's shape.
//!
//! A cell's `transcript.jsonl` is every message the session appended; its `events.jsonl` says
//! which tool results each request showed (`visible_results`). A **loss** is a turn request
//! (the parent's, not a delegated child's) that no longer shows a result the request before it
//! showed: `trim` dropped the last turn's results, a fold replaced a range, a compaction
//! replaced everything. Its kind: a fold, strategy exit or compaction between the two requests
//! put a summary in its place ([`EventKind::Folded`], [`EventKind::Compacted`]); else nothing
//! did ([`EventKind::Dropped`]). The loss is placed after the earlier request's answer, so the
//! window is the calls the agent made from then on.

use std::collections::HashSet;
use std::sync::Arc;

use harness_core::Event;
use harness_core::Purpose;
use harness_core::{Message, Role};
use harness_import::{EventKind, SessionEvent};

use super::{measure, SessionLosses};
use crate::hidden::{Common, SessionIndex};
use crate::transcript::session_of_transcript;

/// Why a cell's losses cannot be measured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CellLossError {
    /// The transcript's answers and the events' requests do not pair up.
    #[error("its transcript has {answers} answers for {requests} requests in its events; the cell's files do not match")]
    Unpaired {
        /// Assistant messages in the transcript.
        answers: usize,
        /// The parent's turn requests in the events.
        requests: usize,
    },
}

/// The loss points of a cell: one per turn request that no longer shows a result the request
/// before it showed.
pub(crate) fn loss_points(
    transcript: &[Arc<Message>],
    events: &[Event],
) -> Result<Vec<SessionEvent>, CellLossError> {
    let answers: Vec<usize> = transcript
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Assistant)
        .map(|(i, _)| i)
        .collect();
    // The parent's turn requests, each with what was done to the context since the last.
    let mut requests: Vec<(HashSet<&str>, bool)> = Vec::new();
    let mut summarised = false;
    for e in events {
        match e {
            Event::Request(r) if r.purpose == Purpose::Turn && r.agent.is_none() => {
                let visible = r.visible_results.iter().map(String::as_str).collect();
                requests.push((visible, summarised));
                summarised = false;
            }
            Event::Fold { .. } | Event::Compaction { .. } | Event::StrategyEnded { .. } => {
                summarised = true;
            }
            _ => {}
        }
    }
    if requests.len() != answers.len() {
        return Err(CellLossError::Unpaired {
            answers: answers.len(),
            requests: requests.len(),
        });
    }
    let mut out = Vec::new();
    for k in 1..requests.len() {
        let (prev, _) = &requests[k - 1];
        let (now, summary) = &requests[k];
        if prev.iter().any(|id| !now.contains(id)) {
            out.push(SessionEvent {
                kind: if *summary {
                    EventKind::Folded
                } else {
                    EventKind::Dropped
                },
                message: answers[k - 1] + 1,
                trigger: None,
                pre_tokens: None,
                opaque_summary_bytes: None,
            });
        }
    }
    Ok(out)
}

/// A cell's losses and base windows: `id` the cell, `agent` who answered (`claude-code`, `sim`,
/// …) with `model`, its transcript and events.
pub fn measure_cell(
    id: &str,
    agent: &str,
    model: &str,
    transcript: Vec<Arc<Message>>,
    events: &[Event],
) -> Result<SessionLosses, CellLossError> {
    let points = loss_points(&transcript, events)?;
    let mut session = session_of_transcript(id, transcript);
    session.events = points;
    let ix = SessionIndex::new(&session);
    let mut out = measure(&session, &ix, &Common::none());
    out.agent_name = Some(agent.to_string());
    for l in &mut out.losses {
        l.model = Some(model.to_string());
    }
    for b in &mut out.base {
        b.model = Some(model.to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::LossKind;
    use harness_core::RequestRecord;
    use harness_core::ToolCall;
    use serde_json::json;

    fn request(index: usize, turn: u32, visible: &[&str]) -> Event {
        Event::Request(RequestRecord {
            index,
            turn,
            purpose: Purpose::Turn,
            tokens: 100,
            cached_tokens: 0,
            written_tokens: 100,
            messages: 3,
            visible_results: visible.iter().map(|s| s.to_string()).collect(),
            action: None,
            mode: None,
            agent: None,
            model: None,
        })
    }

    /// Turn 1 reads a.py; turn 2's first request no longer shows it (trim), turn 3's lost turn
    /// 2's after a fold.
    fn cell() -> (Vec<Arc<Message>>, Vec<Event>) {
        let read = |id: &str, p: &str| ToolCall {
            id: id.into(),
            name: "read_file".into(),
            args: json!({ "path": p }),
        };
        let (c1, c2, c3) = (read("c1", "a.py"), read("c2", "b.py"), read("c3", "a.py"));
        let t = vec![
            Message::user(1, "look at a", None),
            Message::assistant(1, "", vec![c1.clone()]),
            Message::tool_result(1, &c1, "A_SETTING = 1", false),
            Message::assistant(1, "seen", vec![]),
            Message::user(2, "and b", None),
            Message::assistant(2, "", vec![c2.clone()]),
            Message::tool_result(2, &c2, "B_SETTING = 2", false),
            Message::assistant(2, "seen", vec![]),
            Message::user(3, "a again", None),
            Message::assistant(3, "", vec![c3.clone()]),
            Message::tool_result(3, &c3, "A_SETTING = 1", false),
            Message::assistant(3, "same", vec![]),
        ];
        let fold = Event::Fold {
            turn: 2,
            from: 2,
            to: 2,
            archive: "x".into(),
            sha256: "y".into(),
            folded_tokens: 10,
            result_tokens: 5,
            rewritten_tokens: 0,
            kind: "fold".into(),
        };
        let e = vec![
            request(0, 1, &[]),
            request(1, 1, &["c1"]),
            request(2, 2, &[]),
            request(3, 2, &["c2"]),
            fold,
            request(4, 3, &[]),
            request(5, 3, &["c3"]),
        ];
        (t, e)
    }

    #[test]
    fn a_request_that_no_longer_shows_a_result_is_a_loss_of_the_kind_its_policy_made() {
        let (t, e) = cell();
        let points = loss_points(&t, &e).unwrap();
        let got: Vec<(EventKind, usize)> = points.iter().map(|p| (p.kind, p.message)).collect();
        // After turn 1's closing answer (message 3) trim dropped c1; after turn 2's (message 7)
        // a fold replaced c2.
        assert_eq!(got, [(EventKind::Dropped, 4), (EventKind::Folded, 8)]);
        let s = measure_cell("cell", "sim", "sim", t, &e).unwrap();
        assert_eq!(s.losses.len(), 2);
        assert_eq!(s.losses[0].kind, LossKind::None);
        assert_eq!(s.losses[1].kind, LossKind::Summary);
        // Turn 3 reads a.py again, which turn 1 read: a re-read after the fold.
        assert_eq!(s.losses[1].window.reread_unchanged, 1);
        assert_eq!(s.agent_name.as_deref(), Some("sim"));
    }

    #[test]
    fn files_that_do_not_pair_up_are_refused() {
        let (t, mut e) = cell();
        e.pop();
        assert_eq!(
            loss_points(&t, &e).unwrap_err(),
            CellLossError::Unpaired {
                answers: 6,
                requests: 5
            }
        );
    }
}
