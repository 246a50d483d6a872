//! Text from outside made safe to print on a terminal: what a server answered, what a
//! transcript holds, what a tool printed. [`printable`] (text) and [`binary_note`] (a body
//! that may not be text) are the one way foldbench shows such text in an error or a warning:
//!
//! - control characters are shown, not sent: `ESC` as `\x1b`, `BEL` as `\x07`, a newline as
//!   `\n`, a C1 control or a character that reorders text (bidi overrides) as `\u{202e}`, so a
//!   body cannot clear the screen, set the window title or draw a fake progress line;
//! - the text is cut at a number of characters, and the cut says how much more there was;
//! - a gzip body, or bytes that are not text, are described (kind and size), never printed.
//!
//! ```
//! use harness_core::{binary_note, printable};
//!
//! assert_eq!(printable("a\x1b]0;owned\x07b", 100), "a\\x1b]0;owned\\x07b");
//! assert_eq!(printable("abcdef", 3), "abc… (3 more characters)");
//! assert_eq!(binary_note(&[0x1f, 0x8b, 8, 0, 1, 2]).unwrap(), "(a gzip body of 6 bytes, not shown)");
//! ```

use std::fmt::Write as _;

/// Whether `c` is shown escaped: a control character (C0, DEL, C1) or one that changes the
/// direction or joining of the text around it.
fn escaped(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{061c}'
        )
}

/// `text` with every control character shown as an escape (`\n`, `\t`, `\r`, `\x1b`,
/// `\u{9b}`) and cut after `limit` characters (the cut says how many more there were).
pub fn printable(text: &str, limit: usize) -> String {
    let mut out = String::with_capacity(text.len().min(limit.saturating_mul(4)));
    let mut chars = text.chars();
    for (shown, c) in chars.by_ref().enumerate() {
        if shown == limit {
            let rest = 1 + chars.count();
            let _ = write!(
                out,
                "… ({rest} more character{})",
                if rest == 1 { "" } else { "s" }
            );
            return out;
        }
        if !escaped(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    out
}

/// What a body of bytes is, when it is not text: gzip, or binary (a NUL byte, or invalid UTF-8,
/// in its first 8 KiB).
fn not_text(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        return Some("a gzip body");
    }
    let head = &bytes[..bytes.len().min(8 * 1024)];
    if head.contains(&0) {
        return Some("a binary body");
    }
    match std::str::from_utf8(head) {
        Ok(_) => None,
        // A character cut by the 8 KiB window is still text.
        Err(e) if e.error_len().is_none() && bytes.len() > head.len() => None,
        Err(_) => Some("a binary body"),
    }
}

/// When `bytes` are not text (gzip, or a NUL byte or invalid UTF-8 in the first 8 KiB), the note
/// shown instead of them: `(a gzip body of 6 bytes, not shown)`.
pub fn binary_note(bytes: &[u8]) -> Option<String> {
    not_text(bytes).map(|kind| format!("({kind} of {} bytes, not shown)", bytes.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_are_shown_not_sent() {
        let body = "\x1b]0;title\x07\x1b[2J\r[1/1] ok\n\u{9b}31m\u{202e}evil\x7f";
        let p = printable(body, 1000);
        assert_eq!(
            p,
            "\\x1b]0;title\\x07\\x1b[2J\\r[1/1] ok\\n\\u{9b}31m\\u{202e}evil\\x7f"
        );
        assert!(!p.chars().any(|c| c.is_control()));
        assert_eq!(printable("naïve café ✓", 100), "naïve café ✓");
    }

    #[test]
    fn long_text_is_cut_with_a_count() {
        assert_eq!(printable("abc", 3), "abc");
        assert_eq!(printable("abcd", 3), "abc… (1 more character)");
        let long = "é".repeat(10_000);
        let p = printable(&long, 500);
        assert!(p.ends_with("… (9500 more characters)"), "{p}");
        assert_eq!(p.chars().filter(|c| *c == 'é').count(), 500);
    }

    #[test]
    fn gzip_and_binary_bodies_are_described() {
        let note = |b: &[u8]| binary_note(b).unwrap_or_default();
        assert_eq!(
            note(&[0x1f, 0x8b, 8, 0, 0, 0]),
            "(a gzip body of 6 bytes, not shown)"
        );
        assert_eq!(
            note(b"PK\x03\x04\x00\x00"),
            "(a binary body of 6 bytes, not shown)"
        );
        assert_eq!(
            note(&[b'a', 0xff, 0xfe, b'b']),
            "(a binary body of 4 bytes, not shown)"
        );
        assert_eq!(binary_note(b"{\"error\": \"x\"}"), None);
        // A multi-byte character cut by the 8 KiB window is text.
        let mut text = "a".repeat(8 * 1024 - 1).into_bytes();
        text.extend_from_slice("é and more".as_bytes());
        assert_eq!(binary_note(&text), None);
    }
}
