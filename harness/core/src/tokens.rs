//! Token counting in o200k_base.
//!
//! Counting uses `bpe-openai` (measured about twice as fast as tiktoken-rs on this project's
//! machine, with identical counts). A message's count is taken once, when it is built
//! ([`crate::message::Message::sealed`]); a request's count is then a sum of stored numbers.
//!
//! The count of a message is the count of its rendering for counting: the role, the visible text
//! (with any card), the thinking an assistant message carries, and each tool call's name and canonical arguments, plus a fixed overhead per
//! message ([`MESSAGE_OVERHEAD`]) as in OpenAI's chat format.
//!
//! Every text is counted once per process: a matrix shows the same texts again and again
//! (fifteen cells read the same files, the tool cache answers with the same output, the sim
//! writes the same calls, every cell of an arm has the same tool descriptions), and looking a
//! count up costs a fraction of encoding the text. Texts of `MEMO_MIN_BYTES` or more are
//! keyed by their sha256, shorter ones by themselves; each memo is emptied when it holds
//! `MEMO_CAP` counts.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use sha2::{Digest, Sha256};

use crate::message::{Message, ToolSpec};

/// Texts at least this long (in bytes) are remembered by their sha256, shorter ones by
/// themselves.
pub(crate) const MEMO_MIN_BYTES: usize = 1024;

/// Counts the memo holds before it is emptied.
pub(crate) const MEMO_CAP: usize = 1 << 16;

/// Tokens added per message for the chat format's framing.
pub const MESSAGE_OVERHEAD: u32 = 4;

/// o200k_base tokens of a text.
pub fn count(text: &str) -> u32 {
    if text.is_empty() {
        return 0;
    }
    if text.len() < MEMO_MIN_BYTES {
        static SHORT: OnceLock<Mutex<HashMap<Box<str>, u32>>> = OnceLock::new();
        return remembered(&SHORT, text, Box::from(text), text);
    }
    static LONG: OnceLock<Mutex<HashMap<[u8; 32], u32>>> = OnceLock::new();
    let key: [u8; 32] = Sha256::digest(text.as_bytes()).into();
    remembered(&LONG, &key, key, text)
}

/// The count of `text` from `memo` under `key` (`owned` is the key to store), encoded and
/// stored when it is not there.
fn remembered<K, Q>(memo: &OnceLock<Mutex<HashMap<K, u32>>>, key: &Q, owned: K, text: &str) -> u32
where
    K: std::hash::Hash + Eq + std::borrow::Borrow<Q>,
    Q: std::hash::Hash + Eq + ?Sized,
{
    let memo = memo.get_or_init(Mutex::default);
    if let Some(&n) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(key) {
        return n;
    }
    let n = encode_count(text);
    let mut m = memo.lock().unwrap_or_else(|e| e.into_inner());
    if m.len() >= MEMO_CAP {
        m.clear();
    }
    m.insert(owned, n);
    n
}

fn encode_count(text: &str) -> u32 {
    u32::try_from(bpe_openai::o200k_base().count(text)).unwrap_or(u32::MAX)
}

/// Tokens of a message as rendered for counting.
pub fn message_tokens(m: &Message) -> u32 {
    let mut n = MESSAGE_OVERHEAD + count(&m.text);
    if let Some(card) = &m.card {
        n += count(card) + 1;
    }
    if let Some(thinking) = &m.thinking {
        n += count(thinking);
    }
    for call in &m.tool_calls {
        n += count(&call.name) + count(&call.canonical_args()) + MESSAGE_OVERHEAD;
    }
    n
}

/// Tokens of a system prompt and tool list (the fixed prefix of every request).
pub fn prefix_tokens(system: &str, tools: &[ToolSpec]) -> u32 {
    let mut n = MESSAGE_OVERHEAD + count(system);
    for t in tools {
        n += count(&t.name)
            + count(&t.description)
            + count(&t.parameters.to_string())
            + MESSAGE_OVERHEAD;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_count_the_same_the_second_time_and_as_encoded() {
        let a = "def parse(row):\n    return row.split(',')\n".repeat(60);
        let b = format!("{a}x");
        assert!(a.len() >= MEMO_MIN_BYTES);
        for t in [&a, &b, &a, &b] {
            assert_eq!(count(t), encode_count(t));
        }
        assert_ne!(count(&a), count(&b));
    }

    #[test]
    fn short_texts_count_the_same_the_second_time_and_as_encoded() {
        let a = "edited shop/cart.py".to_string();
        let b = format!("{a}!");
        assert!(b.len() < MEMO_MIN_BYTES);
        for t in [&a, &b, &a, &b] {
            assert_eq!(count(t), encode_count(t));
        }
        assert_ne!(count(&a), count(&b));
    }

    #[test]
    fn counts_known_o200k_strings() {
        // Reference values from tiktoken's o200k_base.
        assert_eq!(count("hello world"), 2);
        assert_eq!(count(""), 0);
        // "PORT", " =", " ", "808", "0"
        assert_eq!(count("PORT = 8080"), 5);
    }

    #[test]
    fn message_count_includes_card_and_calls() {
        let plain = Message::user(1, "fix the build", None);
        let carded = Message::user(1, "fix the build", Some("card text here".into()));
        assert!(carded.tokens > plain.tokens);
        assert_eq!(plain.tokens, MESSAGE_OVERHEAD + count("fix the build"));
    }
}
