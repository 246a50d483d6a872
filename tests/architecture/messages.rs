//! The rule that an error's message says what failed and leaves its cause to the chain
//! (`#[source]`), so a tool that walks the chain prints each cause once.

use super::sources;
use crate::helpers::root;

/// The text from `open` (just after an opening bracket) to its closing bracket, skipping string
/// and char literals; `None` when it does not close.
fn bracketed(code: &str, open: usize) -> Option<&str> {
    let bytes = code.as_bytes();
    let (mut depth, mut i, mut in_str) = (1usize, open, false);
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if in_str => i += 1,
            b'"' => in_str = !in_str,
            b'(' | b'[' | b'{' if !in_str => depth += 1,
            b')' | b']' | b'}' if !in_str => {
                depth -= 1;
                if depth == 0 {
                    return Some(&code[open..i]);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// `text` split at its top-level commas (not those inside brackets, `<…>` or strings).
fn top_level(text: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start, mut in_str, mut escaped) =
        (Vec::new(), 0i32, 0, false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_str => escaped = true,
            '"' => in_str = !in_str,
            '(' | '[' | '{' | '<' if !in_str => depth += 1,
            ')' | ']' | '}' | '>' if !in_str && !text[..i].ends_with('-') => depth -= 1,
            ',' if !in_str && depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out.retain(|f| !f.trim().is_empty());
    out
}

/// The lines of `code` whose `#[error("…")]` message prints the error's own source: its cause
/// (a field named `source` or marked `#[source]`/`#[from]`; in a tuple, its index) named in the
/// format string (`{source}`, `{0}`, `{source:?}`), or given after it as an argument that is the
/// field itself or its `to_string()`. An argument that only reads a part of it
/// (`source.column()`) prints no cause; `#[error(transparent)]` is the source by design.
fn messages_printing_their_source(code: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("#[error(") {
        let line_start = code[..at].rfind('\n').map_or(0, |i| i + 1);
        if code[line_start..at].trim_start().starts_with("//") {
            continue;
        }
        let open = at + "#[error(".len();
        let Some(attr) = bracketed(code, open) else {
            continue;
        };
        if attr.trim() == "transparent" {
            continue;
        }
        // The item the attribute is on: past other attributes and doc comments, its name,
        // then its fields (`{…}` named, `(…)` by index) or none.
        let mut rest = &code[open + attr.len() + 2..];
        loop {
            rest = rest.trim_start();
            if rest.starts_with("///") || rest.starts_with("//") {
                rest = rest.split_once('\n').map_or("", |(_, r)| r);
            } else if let Some(after) = rest.strip_prefix("#[") {
                rest = bracketed(after, 0).map_or("", |a| &after[a.len() + 1..]);
            } else {
                break;
            }
        }
        let head_end = rest.find(['{', '(', ',', ';', '}']).unwrap_or(rest.len());
        let (named, fields) = match rest[head_end..].chars().next() {
            Some('{') => (true, bracketed(rest, head_end + 1).unwrap_or("")),
            Some('(') => (false, bracketed(rest, head_end + 1).unwrap_or("")),
            _ => continue,
        };
        let mut sources = Vec::new();
        for (k, field) in top_level(fields).into_iter().enumerate() {
            let code_of: String = field
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            let marked = code_of.contains("#[source]") || code_of.contains("#[from]");
            let name = if named {
                let decl = code_of.rsplit(']').next().unwrap_or("");
                let name = decl.split(':').next().unwrap_or("").trim();
                name.rsplit(' ').next().unwrap_or("").to_string()
            } else {
                k.to_string()
            };
            if marked || (named && name == "source") {
                sources.push(name);
            }
        }
        if sources.is_empty() {
            continue;
        }
        let attr = attr.trim_start();
        let Some(body) = attr.strip_prefix('"') else {
            continue;
        };
        let mut end = 0;
        let mut escaped = false;
        for (i, c) in body.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        let (format, args) = (&body[..end], top_level(&body[end + 1..]));
        let is_source = |expr: &str| {
            let e = expr
                .trim()
                .trim_start_matches('&')
                .trim_start_matches("self");
            let e = e.trim_start_matches('.');
            sources.iter().any(|s| {
                e.strip_prefix(s.as_str())
                    .is_some_and(|r| r.is_empty() || r.starts_with(".to_string()"))
            })
        };
        let mut positional = 0;
        let mut prints = false;
        let mut doubled = false;
        for p in format.split('{').skip(1) {
            if doubled || p.is_empty() {
                // `{{` is a brace, not a placeholder.
                doubled = p.is_empty() && !doubled;
                continue;
            }
            let name = p.split(['}', ':']).next().unwrap_or("").trim();
            if name.is_empty() {
                prints |= args.get(positional).is_some_and(|a| is_source(a));
                positional += 1;
            } else {
                prints |= sources.iter().any(|s| s == name);
            }
        }
        if prints {
            out.push(code[..at].matches('\n').count() + 1);
        }
    }
    out
}

#[test]
fn a_message_that_prints_its_source_is_found() {
    let found = messages_printing_their_source;
    let code = r#"
pub enum E {
    /// Named.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    #[error("setup: {0}")]
    Setup(#[source] WorkspaceError),
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    #[error("{}", source.to_string().trim_start_matches("error: "))]
    Splice { source: FoldRefusal },
    #[error("{cause}: {why:?}")]
    Why {
        cause: String,
        #[from]
        why: Box<dyn std::error::Error + Send>,
    },
}"#;
    assert_eq!(found(code), [4, 12, 14, 16, 18]);
    let fine = r#"
// #[error("{source}")] in a comment
pub enum F {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("cannot read {}", path.display())]
    Read { path: PathBuf, #[source] source: io::Error },
    #[error("{}:{line}:{}: not a record", path.display(), source.column())]
    Line { path: PathBuf, line: usize, #[source] source: serde_json::Error },
    #[error("{}:{problem}", path.display())]
    Bad { path: PathBuf, problem: ProfileError },
    #[error("gave a card that is not {{text, turns}} ({0} of {1})")]
    Card(String, usize),
    #[error("shown (and {{0}})")]
    Shown(#[source] io::Error, usize),
}
#[derive(Debug, thiserror::Error)]
#[error("cannot {what} {}", path.display())]
pub struct FileError { what: &'static str, path: PathBuf, source: io::Error }"#;
    assert!(found(fine).is_empty(), "{:?}", found(fine));
}

/// A message says what failed and keeps its cause as `source` without printing it: the CLI
/// prints the chain, `error: …` then a `caused by: …` line per cause, and `one_line` joins it
/// where an error's text is data. A message that printed its source would say it twice.
#[test]
fn a_message_does_not_print_its_source() {
    let mut found = Vec::new();
    let mut messages = 0;
    for f in sources(&["harness", "policies"]) {
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !rel.contains("/src/") || name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        messages += code.matches("#[error(").count();
        for line in messages_printing_their_source(code) {
            found.push(format!("{rel}:{line}"));
        }
    }
    assert!(messages > 300, "{messages} #[error] attributes read");
    assert!(
        found.is_empty(),
        "messages that print their own source (say what failed; the chain says why): {found:#?}"
    );
}
