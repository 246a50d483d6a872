//! `codex`: OpenAI Codex CLI's context management (its config's parameter names).
//!
//! - **`tool_output_token_limit`**: each tool output over the limit keeps its head and tail
//!   (Codex estimates 4 bytes per token; foldbench cuts the same bytes) with `…N tokens
//!   truncated…` between, N counted in o200k. Codex truncates an output once, when it records
//!   it; foldbench does it on every request, memoised, which sends the same text.
//! - **`model_auto_compact_token_limit`**: when the request reaches it (default, and at most,
//!   90% of `model_context_window`), the model summarises the conversation, and the context
//!   becomes the user's messages (the newest, within 20,000 tokens) followed by the summary
//!   under a line telling the model another model wrote it.

use std::sync::Arc;

use harness_core::context::Context;
use harness_core::message::{Message, MessageKind};
use harness_core::policy::{Plan, Policy};
use harness_core::tokens;

use crate::compact::compactable;
use crate::error::ParamError;
use crate::params::Params;
use crate::registry::Entry;
use crate::view::{self, Memo};

/// The policy's name.
pub const NAME: &str = "codex";

/// The user messages a compacted context keeps, newest first, in tokens.
pub const USER_MESSAGES_TOKENS: u64 = 20_000;

/// The line before the summary in a compacted context (Codex's says the same in other words).
pub const SUMMARY_PREFIX: &str = "Another language model worked on this task before you and \
wrote the summary below; the tools it used are in the state it left them. Build on that work \
rather than repeating it. Its summary:";

/// Codex's truncation of tool outputs and auto-compaction.
#[derive(Debug)]
pub struct Codex {
    window: u64,
    limit: u64,
    output_limit: u64,
    memo: Memo,
}

/// The registry entry.
pub fn entry() -> Entry {
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
    pub fn from_params(p: &mut Params, window: u64) -> Result<Codex, ParamError> {
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

/// `text` cut to about `limit` tokens (4 bytes each) keeping its head and tail at line ends
/// where it can, with the middle's o200k count between; `None` when it fits.
pub fn truncate(text: &str, limit: u64) -> Option<String> {
    if u64::from(tokens::count(text)) <= limit {
        return None;
    }
    let budget = usize::try_from(limit.saturating_mul(4)).unwrap_or(usize::MAX);
    let left = budget / 2;
    let right = budget - left;
    let floor = |mut i: usize| {
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let head_end = {
        let cut = floor(left.min(text.len()));
        text[..cut].rfind('\n').map_or(cut, |i| i + 1)
    };
    let tail_start = {
        let mut cut = text.len().saturating_sub(right);
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        let start = text[cut..].find('\n').map_or(cut, |i| cut + i + 1);
        start.max(head_end)
    };
    let removed = tokens::count(&text[head_end..tail_start]);
    Some(format!(
        "{}…{removed} tokens truncated…\n{}",
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
        let limit = self.output_limit;
        let mut cut = 0;
        let messages: Vec<Arc<Message>> = ctx
            .messages
            .iter()
            .map(|m| {
                if !view::is_result(m) || u64::from(m.tokens) <= limit {
                    return Arc::clone(m);
                }
                let new = self.memo.get(m, 10, |m| match truncate(&m.text, limit) {
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
            let n = u64::from(tokens::count(&m.text));
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
    use crate::view::testing::{context, output, sent, shape, Step::*};

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
    fn long_outputs_keep_their_head_and_tail() {
        let lines: String = (0..400)
            .map(|i| format!("line {i:03} of the log\n"))
            .collect();
        assert!(tokens::count(&lines) > 1_000);
        let cut = truncate(&lines, 100).unwrap();
        // 100 tokens: 200 bytes of head (ten whole lines of 20 bytes) and 200 of tail (the
        // tail's first line is cut, so nine).
        assert!(cut.starts_with("line 000 of the log\n"), "{cut}");
        assert!(cut.contains("line 009 of the log\n…"), "{cut}");
        assert!(!cut.contains("line 010 "), "{cut}");
        assert!(!cut.contains("line 390 "), "{cut}");
        assert!(cut.ends_with("line 399 of the log\n"), "{cut}");
        assert!(cut.contains("tokens truncated…\nline 391"), "{cut}");
        assert_eq!(truncate("short", 100), None);
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
