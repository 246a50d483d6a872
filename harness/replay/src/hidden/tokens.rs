//! Distinctive strings: the tokens a hidden reference is made of.
//!
//! A token is a maximal run of ASCII letters, digits, `_`, `.`, `/` and `-` (leading `.`, `-`
//! and `./`, trailing `.`, `-` and `/` cut off). It is **distinctive** when it has the shape of
//! something an agent copies rather than says:
//!
//! - a number of 3 or more digits (`8080`, `0.15`, `2026-01-05`);
//! - a path: a `/` and at least two letters (`src/main.rs`, `/etc/hosts`);
//! - an identifier: 4+ characters with a `_` (`MEMBER_RATE`), a lower-to-upper case change
//!   (`parseConfig`), letters and digits mixed (`E0502`, `sha256`, `a3f9c1e`), a dot between
//!   letters (`main.rs`, `os.path`), a constant's name of 5+ capitals (`RETRIES`), or a
//!   command-line flag with a hyphen inside (`--dry-run`;
//!   `--title` is a word).
//!
//! Plain words (`error`, `Members`, `TODO`) are never distinctive: they are how an agent talks,
//! not what it copies.
//!
//! A **line** copied whole is distinctive too: a line of a tool call's arguments (an edit's old
//! text, a command, a written file) of [`MIN_LINE`]+ characters with code in it (a digit or one
//! of `_=()[]{}<>:/"'`), matched against the lines of earlier messages with their leading line
//! numbers cut (`    42→`, `    42\t`, `path:42:`). A copied line shows use when its words do
//! not: `DEFAULT_LIMIT = 60  # requests per minute per API key` carries a 2-digit value.

/// Whether a byte belongs to a token, as a table ([`TOKEN_BYTES`]).
const fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-')
}

/// Whether a byte makes a line code (a digit or one of `_=()[]{}<>:/"'`), as a table
/// ([`CODE_BYTES`]).
const fn is_code_byte(b: u8) -> bool {
    b.is_ascii_digit()
        || matches!(
            b,
            b'_' | b'='
                | b'('
                | b')'
                | b'['
                | b']'
                | b'{'
                | b'}'
                | b'<'
                | b'>'
                | b':'
                | b'/'
                | b'"'
                | b'\''
        )
}

/// A byte class as a table: `$class` of every byte, computed at compile time.
macro_rules! byte_table {
    ($class:ident) => {{
        let mut t = [false; 256];
        let mut b = 0;
        while b < 256 {
            t[b] = $class(b as u8);
            b += 1;
        }
        t
    }};
}

/// [`is_token_byte`] of every byte.
const TOKEN_BYTES: [bool; 256] = byte_table!(is_token_byte);

/// [`is_code_byte`] of every byte.
const CODE_BYTES: [bool; 256] = byte_table!(is_code_byte);

/// Whether a byte belongs to a token.
#[inline]
fn token_byte(b: u8) -> bool {
    TOKEN_BYTES[usize::from(b)]
}

/// The token cut of its leading and trailing punctuation; `flag` when it began with `--`.
fn trim(raw: &str) -> (&str, bool) {
    let flag = raw.starts_with("--");
    let mut t = raw.trim_end_matches(['.', '-', '/']);
    loop {
        let before = t.len();
        if let Some(rest) = t.strip_prefix("./") {
            t = rest;
        }
        t = t.trim_start_matches(['.', '-']);
        if t.len() == before {
            break;
        }
    }
    (t, flag)
}

/// Whether a trimmed token has a distinctive shape (see the module doc).
pub(crate) fn distinctive(t: &str, flag: bool) -> bool {
    let b = t.as_bytes();
    if b.len() < 3 {
        return false;
    }
    let (mut digits, mut alpha, mut lower, mut us, mut slash, mut camel, mut dotted) =
        (0usize, 0usize, 0usize, false, false, false, false);
    let mut prev = 0u8;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'0'..=b'9' => digits += 1,
            b'a'..=b'z' | b'A'..=b'Z' => {
                alpha += 1;
                lower += usize::from(c.is_ascii_lowercase());
                camel |= c.is_ascii_uppercase() && prev.is_ascii_lowercase();
            }
            b'_' => us = true,
            b'/' => slash = true,
            b'.' => {
                dotted |= prev.is_ascii_alphabetic()
                    && b.get(i + 1).is_some_and(|n| n.is_ascii_alphabetic());
            }
            _ => {}
        }
        prev = c;
    }
    if alpha == 0 {
        return digits >= 3;
    }
    if b.len() < 4 {
        return false;
    }
    ((slash || us) && alpha >= 2)
        || camel
        || (digits > 0 && alpha > 0 && !slash)
        || dotted
        || (lower == 0 && alpha >= 5)
        || (flag && alpha >= 3 && t.contains('-'))
}

/// Calls `f` with every distinctive token of `text`, in order (repeats included).
pub(crate) fn for_each<'t>(text: &'t str, mut f: impl FnMut(&'t str)) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !token_byte(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        // A run of lowercase letters alone is a plain word: never distinctive.
        let mut word = true;
        while i < b.len() && token_byte(b[i]) {
            word &= b[i].is_ascii_lowercase();
            i += 1;
        }
        if word {
            continue;
        }
        // Token bytes are ASCII, so both ends are char boundaries. A run that is part of a word
        // with non-ASCII letters (`état_ok`) is not a token (asked only of distinctive runs).
        let glued = || {
            text[..start]
                .chars()
                .next_back()
                .is_some_and(char::is_alphabetic)
                || text[i..].chars().next().is_some_and(char::is_alphabetic)
        };
        let (t, flag) = trim(&text[start..i]);
        if distinctive(t, flag) && !glued() {
            f(t);
        }
    }
}

/// The shortest line that counts as copied.
pub(crate) const MIN_LINE: usize = 20;

/// A line cut of its leading line number (`    42→`, `    42\t`, `path:42:`) and surrounding
/// blanks, if it is long enough and has code in it.
fn line_key(line: &str) -> Option<&str> {
    // The key is a part of the line: a shorter line has none.
    if line.len() < MIN_LINE {
        return None;
    }
    let mut l = line.trim();
    let digits = l.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 {
        let rest = &l[digits..];
        if let Some(r) = rest.strip_prefix('→').or_else(|| rest.strip_prefix('\t')) {
            l = r.trim();
        }
    } else if let Some((head, rest)) = l.split_once(':') {
        // `path:42:text` (grep -n).
        if !head.contains(' ') {
            if let Some((n, text)) = rest.split_once(':') {
                if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
                    l = text.trim();
                }
            }
        }
    }
    (l.len() >= MIN_LINE && l.bytes().any(|b| CODE_BYTES[usize::from(b)])).then_some(l)
}

/// Calls `f` with every line of `text` that counts as copied (`line_key`).
pub(crate) fn for_each_line<'t>(text: &'t str, mut f: impl FnMut(&'t str)) {
    for line in text.lines() {
        if let Some(l) = line_key(line) {
            f(l);
        }
    }
}

/// Whether a token is a line (tokens have no blanks or code punctuation; lines do).
pub(crate) fn is_line(t: &str) -> bool {
    t.bytes().any(|b| !token_byte(b))
}

/// Calls `f` with the lines of the string values of a JSON value.
pub(crate) fn for_each_json_line(v: &serde_json::Value, f: &mut impl FnMut(&str)) {
    match v {
        serde_json::Value::String(s) => for_each_line(s, &mut *f),
        serde_json::Value::Array(a) => a.iter().for_each(|x| for_each_json_line(x, f)),
        serde_json::Value::Object(o) => o.values().for_each(|x| for_each_json_line(x, f)),
        _ => {}
    }
}

/// Calls `f` with every distinctive token of the string values of a JSON value (keys are the
/// tool's schema, not content).
pub(crate) fn for_each_json(v: &serde_json::Value, f: &mut impl FnMut(&str)) {
    match v {
        serde_json::Value::String(s) => for_each(s, &mut *f),
        serde_json::Value::Number(n) => for_each(&n.to_string(), &mut *f),
        serde_json::Value::Array(a) => a.iter().for_each(|x| for_each_json(x, f)),
        serde_json::Value::Object(o) => o.values().for_each(|x| for_each_json(x, f)),
        _ => {}
    }
}

/// Every distinctive token and line of a message: its visible text and its tool calls'
/// arguments.
pub(crate) fn for_each_in_message(m: &harness_core::Message, mut f: impl FnMut(&str)) {
    for_each(&m.text, &mut f);
    for_each_line(&m.text, &mut f);
    if let Some(card) = &m.card {
        for_each(card, &mut f);
        for_each_line(card, &mut f);
    }
    for c in &m.tool_calls {
        for_each_json(&c.args, &mut f);
        for_each_json_line(&c.args, &mut f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<String> {
        let mut v = Vec::new();
        for_each(text, |t| v.push(t.to_string()));
        v
    }

    #[test]
    fn copied_strings_are_distinctive_and_words_are_not() {
        assert_eq!(
            all("Set MEMBER_RATE = 0.15 in ./shop/discount.py, see parseConfig and E0502."),
            [
                "MEMBER_RATE",
                "0.15",
                "shop/discount.py",
                "parseConfig",
                "E0502"
            ]
        );
        assert_eq!(
            all("The error is in the Members table: FAIL, TODO, 42, re-run it. RETRIES"),
            ["RETRIES"]
        );
        assert_eq!(
            all("port 8080, commit a3f9c1e, flag --dry-run --title, file main.rs"),
            ["8080", "a3f9c1e", "dry-run", "main.rs"]
        );
        assert_eq!(all("état_ok naïve"), Vec::<String>::new());
    }

    #[test]
    fn lines_lose_their_numbers_and_must_be_long_code() {
        let mut v = Vec::new();
        for_each_line(
            "     5\tDEFAULT_LIMIT = 60  # per key\n    12→    return total\ndocs/ops.md:5:- `DEFAULT_LIMIT`: 60 a minute\nJust some prose without any code\n",
            |l| v.push(l),
        );
        assert_eq!(
            v,
            [
                "DEFAULT_LIMIT = 60  # per key",
                "- `DEFAULT_LIMIT`: 60 a minute"
            ]
        );
        assert!(is_line("DEFAULT_LIMIT = 60") && !is_line("DEFAULT_LIMIT"));
    }

    #[test]
    fn words_of_lowercase_letters_are_never_distinctive() {
        for w in ["abc", "abcd", "abcdefgh", "configuration", "xyzzyxyzzy"] {
            assert!(!distinctive(w, false), "{w}");
        }
        assert_eq!(all("plain words only here"), Vec::<String>::new());
    }

    #[test]
    fn the_byte_tables_hold_the_bytes_they_name() {
        for b in 0..=255u8 {
            let code = b.is_ascii_digit() || b"_=()[]{}<>:/\"'".contains(&b);
            assert_eq!(CODE_BYTES[usize::from(b)], code, "{b}");
            let token = b.is_ascii_alphanumeric() || b"_./-".contains(&b);
            assert_eq!(token_byte(b), token, "{b}");
        }
    }

    #[test]
    fn json_values_are_read_and_keys_are_not() {
        let v = serde_json::json!({"file_path": "src/lib.rs", "old_string": "let x_yz = 1;", "n": 12345});
        let mut got = Vec::new();
        for_each_json(&v, &mut |t: &str| got.push(t.to_string()));
        got.sort();
        assert_eq!(got, ["12345", "src/lib.rs", "x_yz"]);
    }
}
