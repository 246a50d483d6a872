//! The harness's watch over the facts a task's turns need, for a conversation of `run --agent`
//! (the same watch as the built-in loop's, [`NeedWatch`]), and the end of the last turn.

use std::sync::Arc;

use harness_core::spec::TaskSpec;
use harness_core::Message;
use harness_core::{Event, NeedWatch};

use super::{Conversation, PendingSplice};

impl Conversation {
    /// Watches the facts each turn of `spec` needs (`run --agent`): visible in the turn's first
    /// request as sent, or brought by a tool result of the turn; an [`Event::Needs`] per turn.
    pub(crate) fn watch_needs(&mut self, spec: Arc<TaskSpec>) {
        self.needs = Some(spec);
    }

    /// The watch of the turn in progress, begun at its first request (the one before ends).
    pub(super) fn watch_request(&mut self, messages: &[Arc<Message>]) {
        let Some(spec) = self.needs.clone() else {
            return;
        };
        if self.watch.as_ref().is_none_or(|(t, _)| *t != self.turn) {
            self.end_watch();
            if let Some(turn) = spec.turns.get((self.turn as usize).wrapping_sub(1)) {
                self.watch = Some((self.turn, NeedWatch::new(turn)));
            }
        }
        let system = Arc::clone(&self.system);
        if let Some((_, w)) = &mut self.watch {
            if !w.checked() {
                w.first_request_by(|fact| {
                    system.contains(fact)
                        || messages.iter().any(|m| {
                            m.text.contains(fact)
                                || m.card.as_deref().is_some_and(|c| c.contains(fact))
                                || m.tool_calls
                                    .iter()
                                    .any(|c| c.args.to_string().contains(fact))
                        })
                });
            }
        }
    }

    /// The watch's facts as an event.
    pub(super) fn end_watch(&mut self) {
        if let Some((turn, w)) = self.watch.take() {
            let facts = w.into_facts();
            if !facts.is_empty() {
                self.events.push(Event::Needs { turn, facts });
            }
        }
    }

    /// Ends the last turn when the agent is done (the proxy stops): the policy's splices of its
    /// end, as a new turn would have ended it (no later request shows them, but the folds are
    /// made, archived and recorded as the built-in loop makes them after its last turn).
    pub(crate) fn end_last_turn(&mut self) -> Vec<PendingSplice> {
        if self.turn == 0 || self.ended == Some(self.turn) {
            return Vec::new();
        }
        self.ended = Some(self.turn);
        self.end_watch();
        self.driver.end_turn(harness_core::ARCHIVE_DIR, None)
    }
}

/// The user's own words in an agent's user message: the blocks an agent adds (Claude Code's
/// `<system-reminder>`s, which it puts before a prompt, `/back` among them, when the words are an
/// unknown slash command) left out, so a policy reads `/back` as the user typed it.
pub(super) fn user_words(text: &str) -> String {
    harness_core::fold::user_words(text)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_users_words_are_read_without_the_agents_reminders() {
        let claude = "<system-reminder>\nThe user's message starts with the slash command /back, but no command with that name is available\n</system-reminder>\n\n\n/back";
        assert_eq!(super::user_words(claude), "/back");
        assert_eq!(super::user_words("  fix it  "), "fix it");
        assert_eq!(
            super::user_words("a <system-reminder>x</system-reminder> b"),
            "a  b"
        );
        assert_eq!(super::user_words("<system-reminder>cut"), "");
    }
}
