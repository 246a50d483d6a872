//! YAML input: the one place that calls `serde_yaml`, a locator that maps a value's path to its
//! line and column, and the [`Problem`] type that every validator reports with.
//!
//! `serde_yaml` stops at the first error and its values carry no positions, so specs and matrix
//! files are parsed in two steps: [`parse`] turns the text into a [`serde_yaml::Value`] (a syntax
//! error comes back with its position), then a typed reader walks the value, collects *every*
//! problem with its path, and [`Locator::locate`] turns each path into `line:col` by scanning the
//! source text (block mappings, block sequences and one-line flow mappings, which is what specs
//! are written in).

use std::fmt;

use serde::Serialize;
/// A parsed YAML value (re-exported so no other module names `serde_yaml`).
pub use serde_yaml::Value;

/// One problem found in an input file, with where it is and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The file, as the user named it.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// What is wrong and, where it helps, what to do.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.col, self.message
        )
    }
}

/// A step of a path into a YAML document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// A mapping key.
    Key(String),
    /// A sequence index (0-based).
    Index(usize),
}

/// A path into a YAML document, e.g. `turns[2].needs[0]`.
pub type Path = Vec<Seg>;

/// Renders a path for messages: `turns[2].needs[0]`.
pub fn path_string(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// Parses YAML text into a value. This is the only call of `serde_yaml` in foldbench.
pub fn parse(file: &str, text: &str) -> Result<Value, Problem> {
    serde_yaml::from_str::<Value>(text).map_err(|e| {
        let (line, col) = e
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((1, 1));
        let msg = e.to_string();
        // serde_yaml appends " at line L column C"; the position is already in front.
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        Problem {
            file: file.to_string(),
            line,
            col,
            message: format!("invalid YAML: {msg}"),
        }
    })
}

/// Maps paths to positions in a YAML text.
#[derive(Debug, Default)]
pub struct Locator {
    entries: Vec<(Path, usize, usize)>,
}

impl Locator {
    /// Indexes the block structure of `text`.
    pub fn new(text: &str) -> Locator {
        let mut entries: Vec<(Path, usize, usize)> = Vec::new();
        // Stack of (indent, segment). A key's indent is its column; a sequence item's indent is
        // the column of its dash.
        let mut stack: Vec<(usize, Seg)> = Vec::new();
        // Next index per sequence, keyed by the path of the sequence's parent.
        let mut counters: Vec<(Path, usize)> = Vec::new();
        let mut block_scalar_indent: Option<usize> = None;
        for (lineno, raw) in text.lines().enumerate() {
            let line = lineno + 1;
            let trimmed = raw.trim_start();
            let indent = raw.len() - trimmed.len();
            if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("---") {
                continue;
            }
            if let Some(bi) = block_scalar_indent {
                if indent > bi {
                    continue;
                }
                block_scalar_indent = None;
            }
            let mut col = indent;
            let mut rest = trimmed;
            let mut first = true;
            loop {
                if rest.starts_with("- ") || rest == "-" {
                    // Pop everything deeper than or at this dash, except a key at the same indent
                    // whose value this sequence is (`key:\n- item`).
                    while let Some((i, seg)) = stack.last() {
                        if *i > col || (*i == col && (matches!(seg, Seg::Index(_)) || !first)) {
                            stack.pop();
                        } else if *i == col && matches!(seg, Seg::Key(_)) {
                            // Sibling key at the same column: the sequence belongs to it only if
                            // it is the key that opened a block value.
                            break;
                        } else {
                            break;
                        }
                    }
                    let parent: Path = stack.iter().map(|(_, s)| s.clone()).collect();
                    let idx = match counters.iter_mut().find(|(p, _)| *p == parent) {
                        Some((_, n)) => {
                            *n += 1;
                            *n - 1
                        }
                        None => {
                            counters.push((parent.clone(), 1));
                            0
                        }
                    };
                    stack.push((col, Seg::Index(idx)));
                    let path: Path = stack.iter().map(|(_, s)| s.clone()).collect();
                    entries.push((path.clone(), line, col + 1));
                    let after = &rest[1..];
                    let skip = after.len() - after.trim_start().len();
                    col += 1 + skip;
                    rest = after.trim_start();
                    first = false;
                    if rest.is_empty() {
                        break;
                    }
                    if rest.starts_with('{') {
                        // `- { a: 1, b: 2 }`: the item's keys are on this line.
                        index_flow_mapping(&path, rest, line, col, &mut entries);
                        break;
                    }
                    continue;
                }
                if let Some((key, value)) = split_key(rest) {
                    while let Some((i, _)) = stack.last() {
                        if *i >= col {
                            stack.pop();
                        } else {
                            break;
                        }
                    }
                    // A new key invalidates sequence counters below its old occurrence.
                    stack.push((col, Seg::Key(key.to_string())));
                    let path: Path = stack.iter().map(|(_, s)| s.clone()).collect();
                    counters.retain(|(p, _)| !p.starts_with(&path));
                    entries.push((path.clone(), line, col + 1));
                    let vcol = col + rest.len() - value.len();
                    if value.starts_with('{') {
                        index_flow_mapping(&path, value, line, vcol, &mut entries);
                    } else if value.starts_with('[') {
                        index_flow_sequence(&path, value, line, vcol, &mut entries);
                    } else if value.starts_with('|') || value.starts_with('>') {
                        block_scalar_indent = Some(col);
                    }
                }
                break;
            }
        }
        Locator { entries }
    }

    /// The position of a path: exact when indexed, else the longest indexed prefix, else 1:1.
    pub fn locate(&self, path: &[Seg]) -> (usize, usize) {
        let mut best: Option<(usize, usize, usize)> = None;
        for (p, line, col) in &self.entries {
            if path.starts_with(p) && best.is_none_or(|(len, _, _)| p.len() > len) {
                best = Some((p.len(), *line, *col));
            }
        }
        best.map(|(_, l, c)| (l, c)).unwrap_or((1, 1))
    }
}

/// Splits `key: value` (or `key:` at the end of a line); quoted keys are unquoted.
fn split_key(s: &str) -> Option<(&str, &str)> {
    if s.starts_with('{') || s.starts_with('[') || s.starts_with('"') && !s.contains("\":") {
        return None;
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if b == b':' && (i + 1 == bytes.len() || bytes[i + 1] == b' ') => {
                let key = s[..i].trim().trim_matches('"').trim_matches('\'');
                if key.is_empty() {
                    return None;
                }
                let value = s[i + 1..].trim_start();
                let value = strip_comment(value);
                return Some((key, value));
            }
            None if b == b'#' && i > 0 && bytes[i - 1] == b' ' => return None,
            None => {}
        }
        i += 1;
    }
    None
}

fn strip_comment(v: &str) -> &str {
    if v.starts_with('"') || v.starts_with('\'') {
        return v;
    }
    match v.find(" #") {
        Some(i) => v[..i].trim_end(),
        None => v,
    }
}

/// Indexes the keys of a one-line flow mapping `{ a: 1, b: "x" }`.
fn index_flow_mapping(
    parent: &Path,
    v: &str,
    line: usize,
    col: usize,
    out: &mut Vec<(Path, usize, usize)>,
) {
    for (start, part) in flow_parts(v) {
        if let Some((key, _)) = split_key(part.trim_start()) {
            let lead = part.len() - part.trim_start().len();
            let mut p = parent.clone();
            p.push(Seg::Key(key.to_string()));
            out.push((p, line, col + start + lead + 1));
        }
    }
}

/// Indexes the items of a one-line flow sequence `["a", "b"]`.
fn index_flow_sequence(
    parent: &Path,
    v: &str,
    line: usize,
    col: usize,
    out: &mut Vec<(Path, usize, usize)>,
) {
    for (i, (start, part)) in flow_parts(v).into_iter().enumerate() {
        if part.trim().is_empty() {
            continue;
        }
        let lead = part.len() - part.trim_start().len();
        let mut p = parent.clone();
        p.push(Seg::Index(i));
        out.push((p, line, col + start + lead + 1));
    }
}

/// The top-level comma-separated parts inside a flow collection, with their byte offsets.
fn flow_parts(v: &str) -> Vec<(usize, &str)> {
    let bytes = v.as_bytes();
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    let mut start = 1;
    for (i, &b) in bytes.iter().enumerate() {
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None => match b {
                b'"' | b'\'' => quote = Some(b),
                b'{' | b'[' => {
                    depth += 1;
                    if depth == 1 {
                        start = i + 1;
                    }
                }
                b'}' | b']' => {
                    if depth == 1 {
                        parts.push((start, &v[start..i]));
                    }
                    depth = depth.saturating_sub(1);
                }
                b',' if depth == 1 => {
                    parts.push((start, &v[start..i]));
                    start = i + 1;
                }
                _ => {}
            },
        }
    }
    parts
}

/// A reader over a parsed document that collects problems with their positions.
pub struct Reader<'a> {
    file: &'a str,
    locator: Locator,
    /// Every problem found so far.
    pub problems: Vec<Problem>,
}

impl<'a> Reader<'a> {
    /// A reader for `text` (already parsed), named `file` in messages.
    pub fn new(file: &'a str, text: &str) -> Reader<'a> {
        Reader {
            file,
            locator: Locator::new(text),
            problems: Vec::new(),
        }
    }

    /// Records a problem at `path`.
    pub fn problem(&mut self, path: &[Seg], message: impl Into<String>) {
        let (line, col) = self.locator.locate(path);
        self.problems.push(Problem {
            file: self.file.to_string(),
            line,
            col,
            message: message.into(),
        });
    }

    /// The position of a path.
    pub fn locate(&self, path: &[Seg]) -> (usize, usize) {
        self.locator.locate(path)
    }

    /// The file name.
    pub fn file(&self) -> &str {
        self.file
    }

    /// Checks that `v` is a mapping with only `allowed` keys; reports each unknown key.
    /// Returns the mapping's string keys and values.
    pub fn mapping<'v>(
        &mut self,
        path: &[Seg],
        v: &'v Value,
        what: &str,
        allowed: &[&str],
    ) -> Vec<(String, &'v Value)> {
        let Some(map) = v.as_mapping() else {
            self.problem(path, format!("{what} must be a mapping, found {}", kind(v)));
            return Vec::new();
        };
        let mut out = Vec::new();
        for (k, val) in map {
            let Some(key) = k.as_str() else {
                self.problem(path, format!("{what} has a key that is not a string"));
                continue;
            };
            let mut p = path.to_vec();
            p.push(Seg::Key(key.to_string()));
            if !allowed.contains(&key) {
                self.problem(
                    &p,
                    format!(
                        "unknown field `{key}` in {what}; expected one of: {}",
                        allowed.join(", ")
                    ),
                );
                continue;
            }
            out.push((key.to_string(), val));
        }
        out
    }

    /// A string value (numbers and booleans are accepted and written as YAML writes them).
    pub fn string(&mut self, path: &[Seg], v: &Value, what: &str) -> Option<String> {
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => {
                self.problem(path, format!("{what} must be a string, found {}", kind(v)));
                None
            }
        }
    }

    /// A non-negative integer.
    pub fn uint(&mut self, path: &[Seg], v: &Value, what: &str) -> Option<u64> {
        match v.as_u64() {
            Some(n) => Some(n),
            None => {
                self.problem(
                    path,
                    format!("{what} must be a non-negative integer, found {}", kind(v)),
                );
                None
            }
        }
    }

    /// A number.
    pub fn float(&mut self, path: &[Seg], v: &Value, what: &str) -> Option<f64> {
        match v.as_f64() {
            Some(n) => Some(n),
            None => {
                self.problem(path, format!("{what} must be a number, found {}", kind(v)));
                None
            }
        }
    }

    /// A sequence (a single non-sequence value is reported).
    pub fn sequence<'v>(&mut self, path: &[Seg], v: &'v Value, what: &str) -> &'v [Value] {
        match v.as_sequence() {
            Some(s) => s.as_slice(),
            None => {
                self.problem(path, format!("{what} must be a list, found {}", kind(v)));
                &[]
            }
        }
    }

    /// A list of strings.
    pub fn strings(&mut self, path: &[Seg], v: &Value, what: &str) -> Vec<String> {
        let mut out = Vec::new();
        for (i, item) in self.sequence(path, v, what).iter().enumerate() {
            let p = child(path, Seg::Index(i));
            if let Some(s) = self.string(&p, item, what) {
                out.push(s);
            }
        }
        out
    }
}

/// `path` with one more segment.
pub fn child(path: &[Seg], seg: Seg) -> Path {
    let mut p = path.to_vec();
    p.push(seg);
    p
}

/// `path` with one more key.
pub fn key(path: &[Seg], k: &str) -> Path {
    child(path, Seg::Key(k.to_string()))
}

/// A word for a value's type, for messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(s: &str) -> Seg {
        Seg::Key(s.into())
    }

    #[test]
    fn locates_block_and_flow_positions() {
        let text = "name: x\nturns:\n  - user: \"hi\"\n    script:\n      - read_file: { path: a.py }\n        expect: \"A\"\n      - say: ok\n  - user: two\n    needs: [\"A\", \"B\"]\n";
        let loc = Locator::new(text);
        assert_eq!(loc.locate(&[k("name")]), (1, 1));
        assert_eq!(loc.locate(&[k("turns"), Seg::Index(0), k("user")]), (3, 5));
        assert_eq!(
            loc.locate(&[
                k("turns"),
                Seg::Index(0),
                k("script"),
                Seg::Index(0),
                k("expect")
            ]),
            (6, 9)
        );
        assert_eq!(
            loc.locate(&[
                k("turns"),
                Seg::Index(0),
                k("script"),
                Seg::Index(0),
                k("read_file"),
                k("path")
            ]),
            (5, 22)
        );
        assert_eq!(
            loc.locate(&[
                k("turns"),
                Seg::Index(0),
                k("script"),
                Seg::Index(1),
                k("say")
            ]),
            (7, 9)
        );
        assert_eq!(loc.locate(&[k("turns"), Seg::Index(1), k("user")]), (8, 5));
        assert_eq!(
            loc.locate(&[k("turns"), Seg::Index(1), k("needs"), Seg::Index(1)]),
            (9, 18)
        );
    }

    #[test]
    fn locates_keys_of_flow_mappings_in_sequence_items() {
        let text = "arms:\n  - none\n  - { label: t, policy: \"trim:keep=1\" }\n";
        let loc = Locator::new(text);
        assert_eq!(loc.locate(&[k("arms"), Seg::Index(1)]), (3, 3));
        assert_eq!(
            loc.locate(&[k("arms"), Seg::Index(1), k("policy")]),
            (3, 17)
        );
    }

    #[test]
    fn locates_sequences_at_the_keys_indent() {
        let text = "turns:\n- user: a\n  unit: u\n- user: b\n";
        let loc = Locator::new(text);
        assert_eq!(loc.locate(&[k("turns"), Seg::Index(1), k("user")]), (4, 3));
        assert_eq!(loc.locate(&[k("turns"), Seg::Index(0), k("unit")]), (3, 3));
    }

    #[test]
    fn syntax_errors_have_positions() {
        let p = parse("t.yaml", "a: [1, 2\nb: 3\n").unwrap_err();
        assert_eq!(p.file, "t.yaml");
        assert!(p.line >= 1 && p.message.starts_with("invalid YAML"));
    }
}
