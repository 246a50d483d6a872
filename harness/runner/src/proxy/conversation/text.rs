//! A text-based agent's results as the agent writes them: a result a policy rewrote (a trim's
//! placeholder) goes upstream in the agent's observation form, and is counted so.

use std::sync::Arc;

use harness_core::text_agent::{as_observation, is_observation};
use harness_core::{Message, Role};

use super::Conversation;

impl Conversation {
    /// The messages to send with every result of a text call in the agent's observation form:
    /// one a policy rewrote is wrapped in its observation's head (made once per message, so
    /// its id and count stay from request to request); the others are as they are.
    pub(super) fn in_agent_form(&mut self, messages: Vec<Arc<Message>>) -> Vec<Arc<Message>> {
        messages
            .into_iter()
            .map(|m| {
                let id = match (&m.role, m.tool_call_id.as_deref()) {
                    (Role::Tool, Some(id)) if self.grouper.is_text_call(id) => id,
                    _ => return m,
                };
                if is_observation(&m.text) {
                    return m;
                }
                if let Some(w) = self.agent_form.get(&m.id) {
                    return Arc::clone(w);
                }
                let mut w = (*m).clone();
                w.text = as_observation(self.grouper.observation_head(id), &m.text);
                let w = w.sealed();
                self.agent_form.insert(m.id, Arc::clone(&w));
                w
            })
            .collect()
    }
}
