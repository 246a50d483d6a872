//! `codex`: OpenAI Codex CLI's context management (its config's parameter names).
//!
//! - **`tool_output_token_limit`**: Codex records a tool output under the limit plus 20%
//!   (rounded up), estimating 4 bytes a token: an output longer than that many bytes keeps the
//!   characters ending in the first half of the budget and those starting in the last half, with
//!   `…N tokens truncated…` between (N: the bytes over the budget over 4, rounded up), as
//!   [`truncate`] does. Codex truncates an output once, when it records it; foldbench does it
//!   on every request, memoised, which sends the same text.
//! - **`model_auto_compact_token_limit`**: when the request reaches it (default, and at most,
//!   90% of `model_context_window`), the model summarises the conversation, and the context
//!   becomes the user's messages (the newest, within 20,000 tokens by Codex's estimate, the
//!   oldest of them cut in the middle to what is left) followed by the summary under a line
//!   telling the model another model wrote it.

use std::sync::Arc;

use harness_core::policy::{Plan, Policy};
use harness_core::Context;
use harness_core::{Message, MessageKind};

use crate::compact::compactable;
use crate::error::ParamError;
use crate::messages::{self, Memo};
use crate::params::Params;
use crate::registry::Entry;

/// The policy's name.
pub(crate) const NAME: &str = "codex";

/// The user messages a compacted context keeps, newest first, in tokens.
pub(crate) const USER_MESSAGES_TOKENS: u64 = 20_000;

/// The line before the summary in a compacted context (Codex's says the same in other words).
pub(crate) const SUMMARY_PREFIX: &str =
    "Another language model worked on this task before you and \
wrote the summary below; the tools it used are in the state it left them. Build on that work \
rather than repeating it. Its summary:";

/// Codex's truncation of tool outputs and auto-compaction.
#[derive(Debug)]
pub(crate) struct Codex {
    window: u64,
    limit: u64,
    output_limit: u64,
    /// Rewritten messages (a cache rebuilt from the context, not state: the policy keeps
    /// nothing between requests that the context does not give back, [`Policy::saved_state`]).
    memo: Memo,
}

/// The registry entry.
pub(crate) fn entry() -> Entry {
    Entry::new(NAME, |p, b| Ok(Box::new(Codex::from_params(p, b.window)?)))
        .summary("Codex CLI: long tool outputs cut in the middle, a summary and the user's messages at 90% of the window")
        .source("OpenAI Codex CLI config and source (`model_auto_compact_token_limit`, `tool_output_token_limit`)")
        .window_param("model_context_window")
        .param("model_context_window", "(the model's)", "tokens", "the context window")
        .param("model_auto_compact_token_limit", "(90% of the window)", "tokens", "compact when the request reaches it (at most 90% of the window)")
        .param("tool_output_token_limit", "10000", "tokens", "a longer tool output keeps its head and tail")
}

impl Codex {
    /// From the parameters of [`entry`].
    pub(crate) fn from_params(p: &mut Params, window: u64) -> Result<Codex, ParamError> {
        let window = p.take_u64("model_context_window")?.unwrap_or(window);
        let ninety = window / 10 * 9;
        let limit = p
            .take_u64("model_auto_compact_token_limit")?
            .map_or(ninety, |l| l.min(ninety));
        Ok(Codex {
            window,
            limit,
            output_limit: p.take_u64("tool_output_token_limit")?.unwrap_or(10_000),
            memo: Memo::default(),
        })
    }
}

/// Codex's estimate of a text's tokens: its bytes over 4, rounded up.
pub(crate) fn approx_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// The token budget Codex records a tool output under: the limit with 20% added for
/// serialisation, rounded up (`TruncationPolicy * 1.2`).
pub(crate) fn recorded_budget(limit: u64) -> u64 {
    (limit * 6).div_ceil(5)
}

/// `text` cut in the middle to `budget` tokens of 4 bytes as Codex cuts it, `None` when it
/// fits (at most `4 × budget` bytes): the head is the whole characters ending within the first
/// half of the bytes, the tail the characters starting within the last half, and between them
/// `…N tokens truncated…`, N the bytes over the budget over 4, rounded up. No new line is
/// added around the marker.
pub(crate) fn truncate(text: &str, budget: u64) -> Option<String> {
    let bytes = usize::try_from(budget.saturating_mul(4)).unwrap_or(usize::MAX);
    if text.is_empty() || text.len() <= bytes && budget > 0 {
        return None;
    }
    let left = bytes / 2;
    let tail_from = text.len().saturating_sub(bytes - left);
    let mut head_end = 0;
    let mut tail_start = text.len();
    for (at, ch) in text.char_indices() {
        if at + ch.len_utf8() <= left {
            head_end = at + ch.len_utf8();
        } else if at >= tail_from {
            tail_start = at;
            break;
        }
    }
    let tail_start = tail_start.max(head_end);
    let removed = ((text.len() - bytes) as u64).div_ceil(4);
    Some(format!(
        "{}…{removed} tokens truncated…{}",
        &text[..head_end],
        &text[tail_start..]
    ))
}

impl Policy for Codex {
    fn name(&self) -> String {
        format!(
            "{NAME}:model_context_window={},model_auto_compact_token_limit={},tool_output_token_limit={}",
            self.window, self.limit, self.output_limit
        )
    }

    fn plan(&mut self, ctx: &Context, prefix_tokens: u32) -> Plan {
        let budget = recorded_budget(self.output_limit);
        let bytes = budget.saturating_mul(4);
        let mut cut = 0;
        let messages: Vec<Arc<Message>> = ctx
            .messages
            .iter()
            .map(|m| {
                if !messages::is_result(m) || (m.text.len() as u64) <= bytes {
                    return Arc::clone(m);
                }
                let new = self.memo.get(m, 10, |m| match truncate(&m.text, budget) {
                    Some(t) => {
                        let mut c = m.clone();
                        c.text = t;
                        c.sealed()
                    }
                    None => Arc::new(m.clone()),
                });
                if new.text != m.text {
                    cut += 1;
                }
                new
            })
            .collect();
        let tokens =
            u64::from(prefix_tokens) + messages.iter().map(|m| u64::from(m.tokens)).sum::<u64>();
        if tokens >= self.limit && compactable(ctx) {
            return Plan::Compact { emergency: false };
        }
        Plan::Send {
            messages,
            action: (cut > 0).then(|| format!("{cut} tool outputs truncated")),
        }
    }

    fn apply_compaction(&mut self, ctx: &mut Context, summary: Arc<Message>) {
        let mut kept: Vec<Arc<Message>> = Vec::new();
        let mut left = USER_MESSAGES_TOKENS;
        for m in ctx.messages.iter().rev().filter(|m| m.is_human()) {
            if left == 0 {
                break;
            }
            let n = approx_tokens(&m.text);
            if n <= left {
                kept.push(Arc::clone(m));
                left -= n;
            } else {
                let mut c = (**m).clone();
                c.text = truncate(&m.text, left).unwrap_or_else(|| m.text.clone());
                c.card = None;
                kept.push(c.sealed());
                break;
            }
        }
        kept.reverse();
        let text = format!("{SUMMARY_PREFIX}\n{}", summary.text);
        kept.push(Message::host(summary.turn, text, MessageKind::Summary));
        ctx.messages = kept;
    }

    fn window(&self) -> Option<u64> {
        Some(self.window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::testing::{context, output, sent, shape, Step::*};

    fn policy(spec: &str) -> Box<dyn Policy> {
        crate::build(&crate::parse_policy(spec).unwrap(), 200_000).unwrap()
    }

    #[test]
    fn the_limit_is_ninety_percent_of_the_window_at_most() {
        let limit = |spec: &str| {
            Codex::from_params(&mut crate::parse_policy(spec).unwrap().params(), 200_000)
                .unwrap()
                .limit
        };
        assert_eq!(limit("codex"), 180_000);
        assert_eq!(
            limit("codex:model_auto_compact_token_limit=150000"),
            150_000
        );
        assert_eq!(
            limit("codex:model_auto_compact_token_limit=190000"),
            180_000
        );
        assert_eq!(limit("codex:model_context_window=100000"), 90_000);
    }

    #[test]
    fn long_outputs_keep_their_head_and_tail_as_codex_cuts_them() {
        // 400 lines of 20 bytes: 8,000 bytes. At tool_output_token_limit=100 Codex records the
        // output under 120 tokens, 480 bytes: 240 of head (12 lines), 240 of tail (12 lines),
        // and (8,000 - 480) / 4 = 1,880 tokens said cut.
        let lines: String = (0..400)
            .map(|i| format!("line {i:03} of the log\n"))
            .collect();
        assert_eq!(recorded_budget(100), 120);
        let cut = truncate(&lines, recorded_budget(100)).unwrap();
        assert!(cut.starts_with("line 000 of the log\n"), "{cut}");
        assert!(
            cut.contains("line 011 of the log\n…1880 tokens truncated…line 388 of the log\n"),
            "{cut}"
        );
        assert!(!cut.contains("line 012 "), "{cut}");
        assert!(cut.ends_with("line 399 of the log\n"), "{cut}");
        assert_eq!(cut.len(), 507);
        assert_eq!(
            cut.lines().count(),
            24,
            "12 lines, the marker before the 13th, 11 more"
        );
        assert_eq!(truncate("short", 100), None);
        // Codex's own unit tests (utils/string/src/truncate/tests.rs).
        assert_eq!(truncate("abcdef", 0).unwrap(), "…2 tokens truncated…");
        let s = "😀😀😀😀😀😀😀😀😀😀\nsecond line with text\n";
        assert_eq!(
            truncate(s, 8).unwrap(),
            "😀😀😀😀…8 tokens truncated… line with text\n"
        );
        let c = context(vec![
            User("u"),
            Calls(vec![("shell", lines.clone())]),
            Calls(vec![("shell", output(10))]),
        ]);
        let m = sent(policy("codex:tool_output_token_limit=100").plan(&c, 0));
        assert_eq!(m[2].text, cut);
        assert_eq!(shape(&m), "uarar");
    }

    #[test]
    fn a_compacted_context_is_the_user_messages_and_the_summary() {
        let mut c = context(vec![
            User("first request"),
            Calls(vec![("read_file", output(50))]),
            Close("done"),
            User("second request"),
        ]);
        let mut p = policy("codex");
        p.apply_compaction(
            &mut c,
            Message::host(2, "what happened", MessageKind::Summary),
        );
        let texts: Vec<&str> = c.messages.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts[..2], ["first request", "second request"]);
        assert_eq!(texts[2], format!("{SUMMARY_PREFIX}\nwhat happened"));
        assert_eq!(shape(&c.messages), "uus");
    }
}
