//! `swe-agent`: SWE-agent's `last_n_observations` history processor.
//!
//! Every observation but the last `n` is elided to `Old environment output: (K lines omitted)`.
//! SWE-agent counts the task's first message (its instance template) as the first observation
//! and never elides it; foldbench counts it the same way. Observations are tool results and,
//! in the text-action format (commands in the assistant's text, each output the next user
//! message of the turn, as mini-swe-agent's and SWE-agent's text parsers record them), the
//! user messages of a turn after its first that answer an assistant message without calls (not
//! the context a host adds to a turn as user messages, as Codex does). With
//! `polling=P` the number elided is updated only every P observations, so the request stays the
//! same (and cached) for P steps, keeping between `n` and `n + P - 1` observations.

use std::sync::Arc;

use harness_core::policy::{Plan, Policy};
use harness_core::Context;
use harness_core::Role;

use crate::error::ParamError;
use crate::messages::{self, Memo};
use crate::params::Params;
use crate::registry::Entry;

/// The policy's name.
pub(crate) const NAME: &str = "swe-agent";

/// SWE-agent's elision of old observations.
#[derive(Debug)]
pub(crate) struct SweAgent {
    n: usize,
    polling: usize,
    /// Rewritten messages (a cache rebuilt from the context, not state: the policy keeps
    /// nothing between requests that the context does not give back, [`Policy::saved_state`]).
    memo: Memo,
}

/// The registry entry.
pub(crate) fn entry() -> Entry {
    Entry::new(NAME, |p, _| Ok(Box::new(SweAgent::from_params(p)?)))
        .summary("SWE-agent: all but the last n observations elided to a line count")
        .source("SWE-agent `last_n_observations`")
        .param(
            "n",
            "5",
            "observations",
            "the most recent observations shown whole",
        )
        .param(
            "polling",
            "1",
            "observations",
            "how often the number elided is updated",
        )
}

/// Which messages are observations (besides the instance template): tool results, and the user
/// messages of a turn after its first that answer an assistant message without tool calls (the
/// text-action format's outputs). A user message of the turn that follows the prompt, a tool
/// result or another user message is context the host added (Codex's AGENTS.md instructions,
/// skills and environment context, kept as user messages of the turn), not an output.
pub(crate) fn observations(messages: &[Arc<harness_core::Message>]) -> Vec<bool> {
    let mut opened: Option<u32> = None;
    let mut after_text_action = false;
    messages
        .iter()
        .map(|m| {
            let answers = after_text_action;
            after_text_action = m.role == Role::Assistant && m.tool_calls.is_empty();
            if messages::is_result(m) {
                return true;
            }
            if !m.is_human() {
                return false;
            }
            let text_output = opened == Some(m.turn) && answers;
            opened = Some(m.turn);
            text_output
        })
        .collect()
}

/// The text an elided observation becomes.
pub(crate) fn elided(text: &str) -> String {
    format!(
        "Old environment output: ({} lines omitted)",
        messages::lines(text)
    )
}

impl SweAgent {
    /// All but the last `n` observations elided, the count updated every `polling`.
    pub(crate) fn new(n: usize, polling: usize) -> SweAgent {
        SweAgent {
            n: n.max(1),
            polling: polling.max(1),
            memo: Memo::default(),
        }
    }

    /// From `n` and `polling`.
    pub(crate) fn from_params(p: &mut Params) -> Result<SweAgent, ParamError> {
        Ok(SweAgent {
            n: p.take_count("n")?.unwrap_or(5),
            polling: p.take_count("polling")?.unwrap_or(1),
            memo: Memo::default(),
        })
    }
}

impl Policy for SweAgent {
    fn name(&self) -> String {
        format!("{NAME}:n={},polling={}", self.n, self.polling)
    }

    fn plan(&mut self, ctx: &Context, _prefix_tokens: u32) -> Plan {
        // Observation 0 is the instance template (the first user message), never elided.
        let is_obs = observations(&ctx.messages);
        let observations = 1 + is_obs.iter().filter(|&&o| o).count();
        let last_removed = (observations / self.polling * self.polling).saturating_sub(self.n);
        let mut out = Vec::with_capacity(ctx.messages.len());
        let mut rank = 0;
        let mut count = 0;
        for (m, obs) in ctx.messages.iter().zip(is_obs) {
            if obs {
                rank += 1;
                if rank < last_removed {
                    let text = elided(&m.text);
                    out.push(self.memo.cleared(m, &text));
                    count += 1;
                    continue;
                }
            }
            out.push(Arc::clone(m));
        }
        Plan::Send {
            messages: out,
            action: (count > 0).then(|| format!("elided {count} observations")),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::messages::testing::{context, sent, shape, Step::*};

    #[test]
    fn elides_all_but_the_last_n_observations() {
        let out = |i: usize| format!("line {i}\nsecond\nthird");
        let c = context(vec![
            User("fix it"),
            Calls(vec![("read_file", out(1))]),
            Calls(vec![("read_file", out(2)), ("grep", out(3))]),
            Calls(vec![("shell", out(4))]),
            Calls(vec![("read_file", out(5))]),
            Calls(vec![("shell", out(6))]),
            Calls(vec![("read_file", out(7))]),
        ]);
        // 7 results + the template = 8 observations.
        let cases = [
            ("swe-agent", "uaxaxrarararar"),     // n=5: results 3-7 stay
            ("swe-agent:n=2", "uaxaxxaxaxarar"), // results 6-7
            ("swe-agent:n=8", "uararrarararar"), // nothing to elide
            ("swe-agent:n=2,polling=3", "uaxaxxarararar"), // 8/3*3 - 2 = 4: results 1-3 go
        ];
        for (spec, want) in cases {
            let mut p = crate::build(&crate::parse_policy(spec).unwrap(), 200_000).unwrap();
            assert_eq!(shape(&sent(p.plan(&c, 0))), want, "{spec}");
        }
        let mut p = crate::build(&crate::parse_policy("swe-agent").unwrap(), 200_000).unwrap();
        let m = sent(p.plan(&c, 0));
        assert_eq!(m[2].text, "Old environment output: (3 lines omitted)");
    }

    #[test]
    fn context_a_host_adds_to_a_turn_is_no_observation() {
        use harness_core::{Message, ToolCall};
        let call = ToolCall {
            id: "c1".into(),
            name: "shell".into(),
            args: serde_json::Value::Null,
        };
        let mut c = harness_core::Context::default();
        for m in [
            Message::user(1, "fix it", None),
            // Codex's injected context: after the prompt, and after a tool result.
            Message::user(1, "# AGENTS.md instructions for /repo\nbe brief", None),
            Message::assistant(1, "", vec![call.clone()]),
            Message::tool_result(1, &call, "a\nb", false),
            Message::user(1, "<environment_context>cwd</environment_context>", None),
            // A text action and its output.
            Message::assistant(1, "ls", Vec::new()),
            Message::user(1, "x\ny\nz", None),
        ] {
            c.push(m);
        }
        assert_eq!(
            super::observations(&c.messages),
            [false, false, false, true, false, false, true]
        );
    }
}
