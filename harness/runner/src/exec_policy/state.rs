//! A process's own state across taking a conversation out of memory (docs/policy-protocol.md,
//! "Saving state"): a process that declares `saves_state` in its session's opening is asked
//! for it with `save` ([`Policy::saved_state`]) and given it back with `restore`
//! ([`Policy::restore_state`]) in the session that brings the conversation back. One that does
//! not is never sent either: it starts again from the context.
//!
//! [`Policy::saved_state`]: harness_core::policy::Policy::saved_state
//! [`Policy::restore_state`]: harness_core::policy::Policy::restore_state

use serde_json::{json, Value};

use super::{reply, Inner};

impl Inner {
    /// The process's state (`save`), for a process that saves it and has not failed: the one
    /// it last gave or took when it was asked nothing since. `None` when it keeps nothing
    /// (null), does not save its state, or failed (an answer out of protocol fails it).
    pub(super) fn save(&mut self) -> Option<Value> {
        if !self.saves_state || self.failure.is_some() {
            return None;
        }
        if let Some(state) = &self.state {
            return state.clone();
        }
        let (v, line) = self.ask("save", json!({}), &["state"])?;
        match reply::state(&v) {
            Ok(state) => {
                self.state = Some(state.clone());
                state
            }
            Err(e) => {
                self.fail(harness_core::one_line(&e), Some(&line));
                None
            }
        }
    }

    /// Gives a process that saves its state what it gave before (`restore`), in a session just
    /// opened. A process that does not save its state is given nothing: it starts again.
    pub(super) fn restore(&mut self, state: &Value) {
        if !self.saves_state || self.failure.is_some() || state.is_null() {
            return;
        }
        let fields = json!({ "state": state });
        if self.ask("restore", fields, &["ok"]).is_some() {
            self.state = Some(Some(state.clone()));
        }
    }
}
