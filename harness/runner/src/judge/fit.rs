//! `judge run --max-context N`: fitting a judgement request into a small model's context.
//!
//! The items of real sessions are far larger than a small local model's window (a median of
//! 15,000 o200k tokens, up to 87,000, against SmolLM2-135M's 8,192 model tokens). A request over
//! the budget keeps the system prompt, the tools, the card and the current user message whole,
//! and leaves out the **oldest whole turns** of the context (a turn's user message, calls and
//! results go together, so no tool result loses its call), until it fits; a one-line note takes
//! their place, so the model is told the conversation starts later than the card's turns do
//! (the card still lists every offered turn with its size, paths and messages). The record says
//! how many turns were left out (`context_cut`). When the request does not fit even with no
//! context at all (a card larger than the budget), the item is not asked: its record has
//! `too_long` set and an error saying the sizes, and the table counts it in its own column —
//! never a silent drop, and never a truncated card.
//!
//! Sizes are o200k tokens as foldbench counts them ([`Request::tokens`]); a model's own tokenizer
//! counts differently (SmolLM2's ~1.2× o200k on these requests), so the budget is set below the
//! model's window with room for the answer.

use std::sync::Arc;

use harness_core::Message;
use harness_core::Request;

/// Why a request cannot be fitted: even without any context it is over the budget.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("does not fit: the system prompt, tools, card and current message alone are {fixed} tokens, over --max-context {budget} (the context, {context} tokens, would be left out whole)")]
pub(crate) struct TooLong {
    /// Tokens of the system prompt, tools, card and current message.
    pub(crate) fixed: u64,
    /// The budget (`--max-context`).
    pub(crate) budget: u64,
    /// Tokens of the context.
    pub(crate) context: u64,
}

/// What fitting did to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Fitted {
    /// Turns of the context left out (0: the request fit as it was).
    pub(crate) turns_cut: u32,
}

/// The note that stands in for the turns left out.
pub(crate) fn cut_note(turns: u32, first_kept: u32) -> String {
    format!(
        "[foldbench judge: the {turns} oldest turn(s) of this session are left out here to fit the model's context; the conversation below starts at turn {first_kept}. The card lists every turn it offers.]"
    )
}

/// Fits `req` into `budget` o200k tokens (see the module docs); `Err` says the sizes when even
/// the request without any context is over the budget.
pub(crate) fn fit(req: Request, budget: Option<u64>) -> Result<(Request, Fitted), TooLong> {
    let Some(budget) = budget else {
        return Ok((req, Fitted::default()));
    };
    if req.tokens <= budget {
        return Ok((req, Fitted::default()));
    }
    let n = req.messages.len();
    let Some(current) = req.messages.last() else {
        return Ok((req, Fitted::default()));
    };
    let context_tokens: u64 = req.messages[..n - 1]
        .iter()
        .map(|m| u64::from(m.tokens))
        .sum();
    let fixed = req.tokens - context_tokens;
    let note_tokens = u64::from(Message::user(current.turn, cut_note(999, 999), None).tokens);
    if fixed + note_tokens > budget {
        return Err(TooLong {
            fixed,
            budget,
            context: context_tokens,
        });
    }
    // Drop whole turns from the front until the rest fits.
    let mut start = 0;
    let mut kept = context_tokens;
    let mut turns_cut = 0u32;
    while start < n - 1 && fixed + note_tokens + kept > budget {
        let turn = req.messages[start].turn;
        while start < n - 1 && req.messages[start].turn == turn {
            kept -= u64::from(req.messages[start].tokens);
            start += 1;
        }
        turns_cut += 1;
    }
    let first_kept = req.messages[start].turn;
    let mut messages: Vec<Arc<Message>> = Vec::with_capacity(n - start + 1);
    messages.push(Message::user(
        first_kept,
        cut_note(turns_cut, first_kept),
        None,
    ));
    messages.extend(req.messages[start..].iter().cloned());
    let prefix = req.tokens - context_tokens - u64::from(current.tokens);
    let fitted = Request::new(
        req.system,
        req.tools,
        u32::try_from(prefix).unwrap_or(u32::MAX),
        messages,
        req.purpose,
    );
    Ok((fitted, Fitted { turns_cut }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_core::Purpose;
    use harness_core::ToolCall;

    fn request(turns: u32, words: usize) -> Request {
        let mut msgs = Vec::new();
        let filler = "word ".repeat(words);
        for t in 1..turns {
            msgs.push(Message::user(t, format!("turn {t}: {filler}"), None));
            let call = ToolCall {
                id: format!("c{t}"),
                name: "read_file".into(),
                args: serde_json::json!({"path": "a.py"}),
            };
            msgs.push(Message::assistant(t, "", vec![call.clone()]));
            msgs.push(Message::tool_result(t, &call, &filler, false));
            msgs.push(Message::assistant(t, format!("done {t}"), vec![]));
        }
        msgs.push(Message::user(
            turns,
            "the current message",
            Some("the card".into()),
        ));
        Request::new(
            Arc::from("system"),
            Arc::from(vec![]),
            10,
            msgs,
            Purpose::Turn,
        )
    }

    #[test]
    fn no_budget_or_a_request_within_it_is_unchanged() {
        let r = request(4, 50);
        let tokens = r.tokens;
        let (same, f) = fit(r.clone(), None).unwrap();
        assert_eq!((same.tokens, f.turns_cut), (tokens, 0));
        let (same, f) = fit(r, Some(tokens)).unwrap();
        assert_eq!((same.tokens, f.turns_cut), (tokens, 0));
        assert_eq!(same.messages.len(), 13);
    }

    #[test]
    fn the_oldest_whole_turns_go_and_a_note_says_so() {
        let r = request(6, 200);
        let budget = r.tokens / 2;
        let (got, f) = fit(r.clone(), Some(budget)).unwrap();
        assert!(got.tokens <= budget, "{} > {budget}", got.tokens);
        assert!(f.turns_cut >= 2, "{f:?}");
        let first = &got.messages[0];
        assert!(first.text.contains("left out"), "{}", first.text);
        let kept = &got.messages[1];
        assert_eq!(kept.turn, f.turns_cut + 1, "whole turns, oldest first");
        assert!(kept.is_human(), "a kept turn starts with its user message");
        // The current message and its card are whole, last.
        let last = got.messages.last().unwrap();
        assert_eq!(last.card.as_deref(), Some("the card"));
        assert_eq!(last.text, "the current message");
        // Every tool result still follows its call.
        for (i, m) in got.messages.iter().enumerate() {
            if let Some(id) = &m.tool_call_id {
                assert!(got.messages[..i]
                    .iter()
                    .any(|p| p.tool_calls.iter().any(|c| &c.id == id)));
            }
        }
        // The count is the one the request would have: prefix + kept messages.
        let prefix = 10u64;
        let sum: u64 = got.messages.iter().map(|m| u64::from(m.tokens)).sum();
        assert_eq!(got.tokens, prefix + sum);
    }

    #[test]
    fn a_card_over_the_budget_is_an_error_with_the_sizes() {
        let r = request(3, 20);
        let e = fit(r, Some(5)).unwrap_err();
        assert_eq!((e.budget, e.context > 0), (5, true), "{e}");
        let e = e.to_string();
        assert!(e.starts_with("does not fit"), "{e}");
        assert!(e.contains("--max-context 5"), "{e}");
    }
}
