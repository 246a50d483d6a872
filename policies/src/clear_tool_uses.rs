//! `clear-tool-uses`: Anthropic's context editing strategy `clear_tool_uses_20250919`.
//!
//! The API edits each request server-side before the model reads it, while the client keeps the
//! whole history; so the strategy is a function of the full request: when the prompt exceeds
//! `trigger` input tokens, every tool result but those of the last `keep` tool uses is replaced
//! by a placeholder, oldest first, except results of `exclude_tools`; with `clear_tool_inputs`
//! the calls' parameters go too. When fewer than `clear_at_least` tokens would be cleared the
//! edit is not applied. As the history grows past the trigger, the cleared part moves forward
//! with every new tool use, and the cached prefix is written again from there (the docs' advice
//! is a `clear_at_least` large enough to be worth that).

use std::sync::Arc;

use harness_core::policy::{Plan, Policy};
use harness_core::Context;
use harness_core::Message;

use crate::error::ParamError;
use crate::messages::{self, Memo};
use crate::params::Params;
use crate::registry::Entry;

/// The policy's name.
pub(crate) const NAME: &str = "clear-tool-uses";

/// The text of a cleared result: Anthropic does not publish the API's own, so this is the
/// placeholder of LangChain's port of the strategy.
pub(crate) const PLACEHOLDER: &str = "[cleared]";

/// Anthropic's tool-result clearing.
#[derive(Debug)]
pub(crate) struct ClearToolUses {
    trigger: u64,
    keep: usize,
    clear_at_least: u64,
    exclude: Vec<String>,
    clear_inputs: bool,
    placeholder: String,
    /// Rewritten messages (a cache rebuilt from the context, not state: the policy keeps
    /// nothing between requests that the context does not give back, [`Policy::saved_state`]).
    memo: Memo,
}

/// The registry entry.
pub(crate) fn entry() -> Entry {
    Entry::new(NAME, |p, _| Ok(Box::new(ClearToolUses::from_params(p)?)))
        .summary("Anthropic's context editing: old tool results replaced by a placeholder above an input-token trigger")
        .source("Anthropic context editing, `clear_tool_uses_20250919`")
        .param("trigger", "100000", "input tokens", "clearing starts when the request exceeds it")
        .param("keep", "3", "tool uses", "the most recent tool uses whose results stay")
        .param("clear_at_least", "0", "input tokens", "an edit that would clear fewer tokens is not applied (0: any)")
        .param("exclude_tools", "(none)", "tool names joined by +", "tools whose results are never cleared")
        .param("clear_tool_inputs", "false", "true|false", "clear the calls' parameters too")
        .param("placeholder", PLACEHOLDER, "text", "what a cleared result says")
}

impl ClearToolUses {
    /// From the parameters of [`entry`].
    pub(crate) fn from_params(p: &mut Params) -> Result<ClearToolUses, ParamError> {
        Ok(ClearToolUses {
            trigger: p.take_u64("trigger")?.unwrap_or(100_000),
            keep: usize::try_from(p.take_u64("keep")?.unwrap_or(3))
                .map_err(|_| ParamError::TooLarge { key: "keep".into() })?,
            clear_at_least: p.take_u64("clear_at_least")?.unwrap_or(0),
            exclude: p.take_list("exclude_tools")?.unwrap_or_default(),
            clear_inputs: p.take_bool("clear_tool_inputs")?.unwrap_or(false),
            placeholder: p
                .take_text("placeholder")
                .unwrap_or_else(|| PLACEHOLDER.to_string()),
            memo: Memo::default(),
        })
    }

    /// `m` (an assistant message) with the parameters of its first `n` calls cleared.
    fn inputs_cleared(&mut self, m: &Arc<Message>, n: usize) -> Arc<Message> {
        let kind = u8::try_from(n.min(250)).unwrap_or(250) + 1;
        self.memo.get(m, kind, |m| {
            let mut c = m.clone();
            for call in c.tool_calls.iter_mut().take(n) {
                call.args = serde_json::json!({});
            }
            c.sealed()
        })
    }
}

impl Policy for ClearToolUses {
    fn name(&self) -> String {
        let mut s = format!(
            "{NAME}:trigger={},keep={},clear_at_least={}",
            self.trigger, self.keep, self.clear_at_least
        );
        if !self.exclude.is_empty() {
            s.push_str(&format!(",exclude_tools={}", self.exclude.join("+")));
        }
        if self.clear_inputs {
            s.push_str(",clear_tool_inputs=true");
        }
        s
    }

    fn plan(&mut self, ctx: &Context, prefix_tokens: u32) -> Plan {
        let unchanged = || Plan::Send {
            messages: ctx.messages.clone(),
            action: None,
        };
        if u64::from(prefix_tokens) + ctx.tokens() <= self.trigger {
            return unchanged();
        }
        let uses: Vec<messages::ToolUse> = messages::tool_uses(&ctx.messages)
            .into_iter()
            .filter(|u| {
                u.result
                    .is_some_and(|r| messages::is_result(&ctx.messages[r]))
            })
            .collect();
        let old = uses.len().saturating_sub(self.keep);
        let mut out = ctx.messages.clone();
        let mut cleared = 0usize;
        let mut saved: u64 = 0;
        let mut inputs: Vec<(usize, usize)> = Vec::new();
        for u in &uses[..old] {
            if self.exclude.contains(&u.name) {
                continue;
            }
            let Some(r) = u.result else { continue };
            let new = self.memo.cleared(&ctx.messages[r], &self.placeholder);
            saved += u64::from(ctx.messages[r].tokens.saturating_sub(new.tokens));
            out[r] = new;
            cleared += 1;
            if self.clear_inputs {
                let pos = ctx.messages[u.call]
                    .tool_calls
                    .iter()
                    .position(|c| c.id == u.id)
                    .map_or(0, |p| p + 1);
                match inputs.iter_mut().find(|(i, _)| *i == u.call) {
                    Some((_, n)) => *n = (*n).max(pos),
                    None => inputs.push((u.call, pos)),
                }
            }
        }
        for (i, n) in inputs {
            let new = self.inputs_cleared(&ctx.messages[i], n);
            saved += u64::from(ctx.messages[i].tokens.saturating_sub(new.tokens));
            out[i] = new;
        }
        if cleared == 0 || saved < self.clear_at_least {
            return unchanged();
        }
        Plan::Send {
            messages: out,
            action: Some(format!("cleared {cleared} tool results ({saved} tokens)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::testing::{context, output, sent, shape, Step::*};

    fn run(spec: &str, ctx: &Context) -> Vec<Arc<Message>> {
        let spec = crate::parse_policy(spec).unwrap();
        let mut p = crate::build(&spec, 200_000).unwrap();
        sent(p.plan(ctx, 0))
    }

    /// Five tool uses of ~400 tokens each in two turns.
    fn session() -> Context {
        context(vec![
            User("read the files"),
            Calls(vec![("read_file", output(400)), ("grep", output(400))]),
            Calls(vec![("read_file", output(400))]),
            Close("read"),
            User("now the tests"),
            Calls(vec![("shell", output(400))]),
            Calls(vec![("read_file", output(400))]),
        ])
    }

    #[test]
    fn clears_all_but_the_last_keep_tool_uses_above_the_trigger() {
        let c = session();
        assert!(c.tokens() > 1_900, "{}", c.tokens());
        // (spec, expected shape): u a r r a r c u a r a r
        let cases = [
            ("clear-tool-uses", "uarrarcuarar"), // under 100k: nothing
            ("clear-tool-uses:trigger=1000", "uaxxarcuarar"), // keep 3: uses 1-2 cleared
            ("clear-tool-uses:trigger=1000,keep=1", "uaxxaxcuaxar"), // only the last stays
            ("clear-tool-uses:trigger=1000,keep=0", "uaxxaxcuaxax"),
            (
                "clear-tool-uses:trigger=1000,keep=1,exclude_tools=grep+shell",
                "uaxraxcuarar",
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(shape(&run(spec, &c)), want, "{spec}");
        }
    }

    #[test]
    fn clear_at_least_refuses_an_edit_that_clears_less() {
        let c = session();
        // Uses 1 and 2 are cleared: their results' tokens less the placeholders'.
        let placeholder = |i: usize| {
            let m = &c.messages[i];
            let mut x = (**m).clone();
            x.text = PLACEHOLDER.into();
            x.kind = harness_core::MessageKind::Cleared;
            x.sealed().tokens
        };
        let saved =
            (c.messages[2].tokens - placeholder(2)) + (c.messages[3].tokens - placeholder(3));
        let at = |n: u32| format!("clear-tool-uses:trigger=1000,clear_at_least={n}");
        assert_eq!(shape(&run(&at(saved), &c)), "uaxxarcuarar");
        assert_eq!(shape(&run(&at(saved + 1), &c)), "uarrarcuarar");
    }

    #[test]
    fn the_placeholder_and_cleared_inputs() {
        let c = session();
        let m = run("clear-tool-uses:trigger=1000,keep=4", &c);
        assert_eq!(m[2].text, PLACEHOLDER);
        assert_eq!(m[1].tool_calls[0].args, serde_json::json!({"path": "f1"}));
        let m = run(
            "clear-tool-uses:trigger=1000,keep=4,clear_tool_inputs=true",
            &c,
        );
        assert_eq!(m[1].tool_calls[0].args, serde_json::json!({}));
        assert_eq!(
            m[1].tool_calls[1].args,
            serde_json::json!({"path": "f2"}),
            "use 2 is kept"
        );
        let m = run("clear-tool-uses:trigger=1000,keep=4,placeholder=gone", &c);
        assert_eq!(m[2].text, "gone");
    }

    #[test]
    fn the_same_cleared_message_on_every_request() {
        let c = session();
        let spec = crate::parse_policy("clear-tool-uses:trigger=1000").unwrap();
        let mut p = crate::build(&spec, 200_000).unwrap();
        let a: Vec<u64> = sent(p.plan(&c, 0)).iter().map(|m| m.id).collect();
        let b: Vec<u64> = sent(p.plan(&c, 0)).iter().map(|m| m.id).collect();
        assert_eq!(a, b);
    }

    #[test]
    fn the_trigger_counts_the_system_prompt_and_tools() {
        let c = session();
        let spec = crate::parse_policy("clear-tool-uses:trigger=3000").unwrap();
        let mut p = crate::build(&spec, 200_000).unwrap();
        assert_eq!(shape(&sent(p.plan(&c, 0))), "uarrarcuarar");
        assert_eq!(shape(&sent(p.plan(&c, 2_000))), "uaxxarcuarar");
    }
}
