//! YAML input: the one place that calls `serde_yaml`, a locator that maps a value's path to its
//! line and column, and the [`Problem`] type that every validator reports with.
//!
//! `serde_yaml` stops at the first error and its values carry no positions, so specs and matrix
//! files are parsed in two steps: [`parse`] turns the text into a [`serde_yaml::Value`] (a syntax
//! error comes back with its position), then a typed reader walks the value, collects *every*
//! problem with its path, and `Locator::locate` turns each path into `line:col` by scanning the
//! source text (block mappings, block sequences and one-line flow mappings, which is what specs
//! are written in).

use std::collections::HashMap;
use std::fmt;

use serde::Serialize;
/// A parsed YAML value (re-exported so no other module names `serde_yaml`).
pub(crate) use serde_yaml::Value;

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
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Seg {
    /// A mapping key.
    Key(String),
    /// A sequence index (0-based).
    Index(usize),
}

/// A path into a YAML document, e.g. `turns[2].needs[0]`.
pub(crate) type Path = Vec<Seg>;

/// The deepest nesting [`parse`] accepts (`serde_yaml`'s own limit).
pub(crate) const MAX_DEPTH: usize = 128;

/// Flow nesting deeper than this is refused by a linear scan before `serde_yaml` runs: its
/// scanner takes time quadratic in the depth before it reaches its own limit (100,000 `[` took
/// seconds). Far above [`MAX_DEPTH`], so brackets in plain text never trip it.
const SCAN_DEPTH: usize = 1024;

/// The text without a leading UTF-8 byte-order mark (YAML allows one; it is not content).
pub(crate) fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Parses YAML text into a value. This is the only call of `serde_yaml` in foldbench.
///
/// A leading byte-order mark is skipped; very deep flow nesting is refused with its position
/// before the parser runs; integers that do not fit in 64 bits get a message that
/// says so.
pub fn parse(file: &str, text: &str) -> Result<Value, Problem> {
    let text = strip_bom(text);
    let problem = |line, col, message: String| Problem {
        file: file.to_string(),
        line,
        col,
        message,
    };
    if let Some((line, col)) = too_deep(text) {
        return Err(problem(
            line,
            col,
            format!(
                "invalid YAML: nested more than {MAX_DEPTH} levels deep here; a spec needs a few levels"
            ),
        ));
    }
    serde_yaml::from_str::<Value>(text).map_err(|e| {
        let (line, col) = e
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((1, 1));
        let msg = e.to_string();
        // serde_yaml appends " at line L column C"; the position is already in front.
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        // A duplicate key comes without a position: the locator finds the second one.
        if let Some((line, col, first)) = duplicate_key_position(text, &msg) {
            return problem(
                line,
                col,
                format!(
                    "invalid YAML: {}, written before at {}:{}; keep one",
                    explain(&msg),
                    first.0,
                    first.1
                ),
            );
        }
        problem(line, col, format!("invalid YAML: {}", explain(&msg)))
    })
}

/// For serde_yaml's `duplicate entry with key "K"`: where the key is written a second time in
/// one mapping, and where it was written first.
fn duplicate_key_position(text: &str, msg: &str) -> Option<(usize, usize, (usize, usize))> {
    const SAID: &str = "duplicate entry with key \"";
    // Nested: `turns[0]: duplicate entry with key "user"`, at the mapping's start.
    let rest = &msg[msg.find(SAID)? + SAID.len()..];
    let key = rest.strip_suffix('"')?;
    Locator::new(text)
        .duplicates
        .into_iter()
        .find(|(_, _, k, _)| k == key)
        .map(|(line, col, _, first)| (line, col, first))
}

/// Rewrites the `serde_yaml` messages that name its internals.
fn explain(msg: &str) -> String {
    if msg.contains("recursion limit exceeded") {
        return format!("nested more than {MAX_DEPTH} levels deep; a spec needs a few levels");
    }
    // "key: invalid type: integer `-999…` as i128, expected any YAML value"
    if let Some(at) = msg.find("invalid type: integer `") {
        let rest = &msg[at + "invalid type: integer `".len()..];
        if let Some(end) = rest.find('`') {
            let n = &rest[..end];
            return format!(
                "the integer {n} is out of range; integers must lie between {} and {}",
                i64::MIN,
                u64::MAX
            );
        }
    }
    msg.to_string()
}

/// The position where flow collections (`[`, `{`) nest deeper than [`SCAN_DEPTH`], if they do.
/// Quoted strings and comments are skipped; linear in the text.
fn too_deep(text: &str) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    for (i, raw) in text.lines().enumerate() {
        let bytes = raw.as_bytes();
        let mut j = 0;
        while j < bytes.len() {
            let b = bytes[j];
            match quote {
                Some(b'"') if b == b'\\' => j += 1,
                Some(q) if b == q => quote = None,
                Some(_) => {}
                None => match b {
                    b'"' | b'\'' if j == 0 || b" [{,:".contains(&bytes[j - 1]) => quote = Some(b),
                    b'#' if j == 0 || bytes[j - 1] == b' ' => break,
                    b'[' | b'{' => {
                        depth += 1;
                        if depth > SCAN_DEPTH {
                            return Some((i + 1, raw[..j].chars().count() + 1));
                        }
                    }
                    b']' | b'}' => depth = depth.saturating_sub(1),
                    _ => {}
                },
            }
            j += 1;
        }
    }
    None
}

/// One level of the block structure while indexing: its indent, whether it is a sequence item
/// (else a key), its node in the locator and the index the next sequence item directly below it
/// gets.
struct Frame {
    indent: usize,
    item: bool,
    node: u32,
    next: usize,
}

/// The locator node of the innermost frame (0, the document, when there is none).
fn node_of(stack: &[Frame]) -> u32 {
    stack.last().map_or(0, |f| f.node)
}

/// Maps paths to positions in a YAML text, and finds the tags (`!!binary`, `!custom`) written in
/// it. Built in one pass, linear in the text: the paths form a tree whose nodes are numbered,
/// each line adds at most one node keyed by its parent's number and its own segment (no path is
/// copied or hashed whole); a lookup costs one hash probe per path segment.
#[derive(Debug, Default)]
pub(crate) struct Locator {
    /// The node of each segment under its parent node (0 is the document).
    children: HashMap<(u32, Seg), u32>,
    /// The position of node `n` at `n - 1`.
    positions: Vec<(usize, usize)>,
    tags: Vec<(usize, usize, String)>,
    /// Keys written twice in one mapping: where the second is, the key, where the first is.
    duplicates: Vec<(usize, usize, String, (usize, usize))>,
}

impl Locator {
    /// Indexes the block structure of `text`.
    pub(crate) fn new(text: &str) -> Locator {
        let text = strip_bom(text);
        let mut loc = Locator::default();
        // A key's indent is its column; a sequence item's indent is the column of its dash.
        // Each frame counts the items of the sequence directly below it (a new key starts a
        // new frame, so its sequence counts from 0 again); `root_next` counts a top-level one.
        let mut stack: Vec<Frame> = Vec::new();
        let mut root_next = 0usize;
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
                if stack.len() > MAX_DEPTH {
                    break; // deeper than any parsed document: nothing to index
                }
                if rest.starts_with("- ") || rest == "-" {
                    // Pop everything deeper than or at this dash, except a key at the same indent
                    // whose value this sequence is (`key:\n- item`).
                    while let Some(f) = stack.last() {
                        if f.indent > col || (f.indent == col && (f.item || !first)) {
                            stack.pop();
                        } else {
                            break;
                        }
                    }
                    let counter = match stack.last_mut() {
                        Some(f) => &mut f.next,
                        None => &mut root_next,
                    };
                    let idx = *counter;
                    *counter += 1;
                    let node = loc.add(node_of(&stack), Seg::Index(idx), line, col + 1);
                    stack.push(Frame {
                        indent: col,
                        item: true,
                        node,
                        next: 0,
                    });
                    let after = &rest[1..];
                    let skip = after.len() - after.trim_start().len();
                    col += 1 + skip;
                    rest = after.trim_start();
                    first = false;
                    if rest.is_empty() {
                        break;
                    }
                    loc.scan_tags(rest, line, col);
                    if rest.starts_with('{') {
                        // `- { a: 1, b: 2 }`: the item's keys are on this line.
                        index_flow_mapping(node, rest, line, col, &mut loc);
                        break;
                    }
                    if rest.starts_with('[') || rest.starts_with('!') {
                        break;
                    }
                    continue;
                }
                if let Some((key, value)) = split_key(rest) {
                    while stack.last().is_some_and(|f| f.indent >= col) {
                        stack.pop();
                    }
                    let node = loc.add(node_of(&stack), Seg::Key(key.to_string()), line, col + 1);
                    stack.push(Frame {
                        indent: col,
                        item: false,
                        node,
                        next: 0,
                    });
                    // `value` is a slice of `rest`: its offset is where it starts.
                    let vcol = col + (value.as_ptr() as usize - rest.as_ptr() as usize);
                    loc.scan_tags(value, line, vcol);
                    if value.starts_with('{') {
                        index_flow_mapping(node, value, line, vcol, &mut loc);
                    } else if value.starts_with('[') {
                        index_flow_sequence(node, value, line, vcol, &mut loc);
                    } else if value.starts_with('|') || value.starts_with('>') {
                        block_scalar_indent = Some(col);
                    }
                }
                break;
            }
        }
        loc
    }

    /// The node of `seg` under `parent`, recorded at `line:col` when it is new (the first
    /// position written for a path wins).
    fn add(&mut self, parent: u32, seg: Seg, line: usize, col: usize) -> u32 {
        use std::collections::hash_map::Entry;
        match self.children.entry((parent, seg)) {
            Entry::Occupied(o) => {
                let node = *o.get();
                let first = self.positions[(node - 1) as usize];
                if let (Seg::Key(k), true) = (&o.key().1, first != (line, col)) {
                    self.duplicates.push((line, col, k.clone(), first));
                }
                node
            }
            Entry::Vacant(v) => {
                self.positions.push((line, col));
                *v.insert(u32::try_from(self.positions.len()).unwrap_or(u32::MAX))
            }
        }
    }

    /// Records the tags of a value that starts at `col` (0-based): one at its start, and in a
    /// flow collection every one that follows `[`, `{`, `,` or `:`. Quoted text is skipped.
    fn scan_tags(&mut self, value: &str, line: usize, col: usize) {
        let tag_at = |i: usize| {
            let tag = value[i..].split([' ', ',', ']', '}']).next().unwrap_or("!");
            (line, col + value[..i].chars().count() + 1, tag.to_string())
        };
        if value.starts_with('!') {
            self.tags.push(tag_at(0));
            return;
        }
        if !value.starts_with('[') && !value.starts_with('{') {
            return; // a plain or quoted scalar: no tag can follow
        }
        let bytes = value.as_bytes();
        let mut quote: Option<u8> = None;
        let mut after_indicator = true;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            match quote {
                Some(b'"') if b == b'\\' => i += 1,
                Some(q) if b == q => quote = None,
                Some(_) => {}
                None => match b {
                    b'"' | b'\'' if after_indicator => quote = Some(b),
                    b'#' if i > 0 && bytes[i - 1] == b' ' => break,
                    b'!' if after_indicator => self.tags.push(tag_at(i)),
                    _ => {}
                },
            }
            if quote.is_none() && b != b' ' {
                after_indicator = matches!(b, b'[' | b'{' | b',' | b':');
            }
            i += 1;
        }
    }

    /// The position of a path: exact when indexed, else the longest indexed prefix, else 1:1.
    pub(crate) fn locate(&self, path: &[Seg]) -> (usize, usize) {
        let mut node = 0;
        let mut at = (1, 1);
        for seg in path {
            match self.children.get(&(node, seg.clone())) {
                Some(&n) => {
                    node = n;
                    at = self.positions[n as usize - 1];
                }
                None => break,
            }
        }
        at
    }

    /// The tags written in the text (`!!binary`, `!custom`), with their line and column.
    pub(crate) fn tags(&self) -> &[(usize, usize, String)] {
        &self.tags
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

/// Indexes the keys of a one-line flow mapping `{ a: 1, b: "x" }` under node `parent`.
fn index_flow_mapping(parent: u32, v: &str, line: usize, col: usize, out: &mut Locator) {
    for (start, part) in flow_parts(v) {
        if let Some((key, _)) = split_key(part.trim_start()) {
            let lead = part.len() - part.trim_start().len();
            out.add(
                parent,
                Seg::Key(key.to_string()),
                line,
                col + start + lead + 1,
            );
        }
    }
}

/// Indexes the items of a one-line flow sequence `["a", "b"]` under node `parent`.
fn index_flow_sequence(parent: u32, v: &str, line: usize, col: usize, out: &mut Locator) {
    for (i, (start, part)) in flow_parts(v).into_iter().enumerate() {
        if part.trim().is_empty() {
            continue;
        }
        let lead = part.len() - part.trim_start().len();
        out.add(parent, Seg::Index(i), line, col + start + lead + 1);
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
pub(crate) struct Reader<'a> {
    file: &'a str,
    locator: Locator,
    /// Every problem found so far.
    pub(crate) problems: Vec<Problem>,
}

impl<'a> Reader<'a> {
    /// A reader for `text` (already parsed), named `file` in messages.
    /// Every YAML tag in the text is a problem: `!!binary` and custom tags have no meaning in
    /// foldbench's files (and `serde_yaml` would turn `!!binary` into its base64 text silently).
    pub(crate) fn new(file: &'a str, text: &str) -> Reader<'a> {
        let locator = Locator::new(text);
        let problems = locator
            .tags()
            .iter()
            .map(|(line, col, tag)| Problem {
                file: file.to_string(),
                line: *line,
                col: *col,
                message: format!(
                    "YAML tag `{tag}` is not supported; write the value without a tag (quote it to make it text)"
                ),
            })
            .collect();
        Reader {
            file,
            locator,
            problems,
        }
    }

    /// Records a problem at `path`.
    pub(crate) fn problem(&mut self, path: &[Seg], message: impl Into<String>) {
        let (line, col) = self.locator.locate(path);
        self.problems.push(Problem {
            file: self.file.to_string(),
            line,
            col,
            message: message.into(),
        });
    }

    /// The position of a path.
    pub(crate) fn locate(&self, path: &[Seg]) -> (usize, usize) {
        self.locator.locate(path)
    }

    /// The locator of the text.
    pub(crate) fn locator(&self) -> &Locator {
        &self.locator
    }

    /// Checks that `v` is a mapping with only `allowed` keys; reports each unknown key.
    /// Returns the mapping's string keys and values.
    pub(crate) fn mapping<'v>(
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
    pub(crate) fn string(&mut self, path: &[Seg], v: &Value, what: &str) -> Option<String> {
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
    pub(crate) fn uint(&mut self, path: &[Seg], v: &Value, what: &str) -> Option<u64> {
        match v.as_u64() {
            Some(n) => Some(n),
            None => {
                let message = match v {
                    Value::Number(n) if n.as_f64().is_some_and(|f| f >= u64::MAX as f64) => {
                        format!("{what} {n} is too large; the largest is {}", u64::MAX)
                    }
                    Value::Number(n) => format!("{what} must be a non-negative integer, found {n}"),
                    _ => format!("{what} must be a non-negative integer, found {}", kind(v)),
                };
                self.problem(path, message);
                None
            }
        }
    }

    /// A number.
    pub(crate) fn float(&mut self, path: &[Seg], v: &Value, what: &str) -> Option<f64> {
        match v.as_f64() {
            Some(n) => Some(n),
            None => {
                self.problem(path, format!("{what} must be a number, found {}", kind(v)));
                None
            }
        }
    }

    /// A sequence (a single non-sequence value is reported).
    pub(crate) fn sequence<'v>(&mut self, path: &[Seg], v: &'v Value, what: &str) -> &'v [Value] {
        match v.as_sequence() {
            Some(s) => s.as_slice(),
            None => {
                self.problem(path, format!("{what} must be a list, found {}", kind(v)));
                &[]
            }
        }
    }

    /// A list of strings.
    pub(crate) fn strings(&mut self, path: &[Seg], v: &Value, what: &str) -> Vec<String> {
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
pub(crate) fn child(path: &[Seg], seg: Seg) -> Path {
    let mut p = path.to_vec();
    p.push(seg);
    p
}

/// `path` with one more key.
pub(crate) fn key(path: &[Seg], k: &str) -> Path {
    child(path, Seg::Key(k.to_string()))
}

/// A word for a value's type, for messages.
pub(crate) fn kind(v: &Value) -> &'static str {
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

    /// Runs `f` on a thread and waits at most `secs` seconds for it: a hang fails the test
    /// instead of hanging it.
    fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(secs))
            .unwrap_or_else(|_| panic!("did not finish within {secs} s"))
    }

    /// A block-style spec of `n` turns, each with a script of two steps (7 lines a turn).
    fn block_spec(n: usize) -> String {
        let mut s = String::from("name: big\nrepo: fixtures/t\nturns:\n");
        for i in 0..n {
            s.push_str(&format!(
                "  - user: \"turn {i}\"\n    unit: a\n    script:\n      - read_file:\n          path: a.py\n        expect: \"A\"\n      - say: \"ok\"\n"
            ));
        }
        s.push_str("checks:\n  - shell: \"true\"\n");
        s
    }

    #[test]
    fn a_spec_of_30k_turns_loads_and_locates_its_last_turn() {
        // 210k lines: the old locator pruned a list of every sequence seen on every key line
        // (about 5 minutes in a debug build for 16k turns); now one pass.
        let text = block_spec(30_000);
        let (spec, pos) = within(120, move || {
            let loc = Locator::new(&text);
            let pos = loc.locate(&[
                k("turns"),
                Seg::Index(29_999),
                k("script"),
                Seg::Index(0),
                k("read_file"),
                k("path"),
            ]);
            (
                crate::spec::load("big.yaml", &text).map(|s| s.turns.len()),
                pos,
            )
        });
        assert_eq!(spec, Ok(30_000));
        assert_eq!(pos, (3 + 29_999 * 7 + 5, 11));
    }

    #[test]
    fn nesting_100k_deep_fails_fast_with_a_position() {
        let flow = format!("name: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
        let p = within(60, move || parse("deep.yaml", &flow)).unwrap_err();
        assert_eq!((p.line, p.col), (1, 7 + SCAN_DEPTH), "{p}");
        assert!(p.message.contains("nested more than 128 levels"), "{p}");
        let block = format!("turns: {}1\n", "\n".to_string() + &"- ".repeat(100_000));
        let p = within(60, move || crate::spec::load("deep.yaml", &block)).unwrap_err();
        assert!(
            p[0].message.contains("nested more than 128 levels"),
            "{p:?}"
        );
        assert_eq!(p[0].line, 2, "{p:?}");
    }

    const SPEC: &str = "name: t\nrepo: r\nturns:\n  - user: hi\n    unit: a\n    script:\n      - read_file: { path: a.py, limit: 3 }\n      - say: ok\nchecks:\n  - answer_contains: { turn: 1, text: ok }\n";

    fn messages(text: &str) -> Vec<String> {
        match crate::spec::load("t.yaml", text) {
            Ok(_) => Vec::new(),
            Err(ps) => ps.iter().map(|p| p.to_string()).collect(),
        }
    }

    #[test]
    fn a_duplicate_key_is_reported_where_it_is_written_again() {
        let p = parse("d.yaml", "name: a\nturns:\n  - user: x\nname: b\n").unwrap_err();
        assert_eq!(
            p.to_string(),
            "d.yaml:4:1: invalid YAML: duplicate entry with key \"name\", written before at 1:1; keep one"
        );
        let p = parse("d.yaml", "turns:\n  - user: x\n    unit: a\n    user: y\n").unwrap_err();
        assert_eq!((p.line, p.col), (4, 5), "{p}");
        let p = parse("d.yaml", "a: { b: 1, b: 2 }\n").unwrap_err();
        assert_eq!(p.line, 1, "{p}");
        assert!(p.message.contains("written before at 1:"), "{p}");
    }

    #[test]
    fn a_byte_order_mark_is_not_content() {
        assert_eq!(messages(&format!("\u{feff}{SPEC}")), Vec::<String>::new());
        let bad = format!("\u{feff}{}", SPEC.replace("name: t", "name: T"));
        assert_eq!(
            messages(&bad),
            vec!["t.yaml:1:1: `name` \"T\" must be lowercase letters, digits and dashes"]
        );
    }

    #[test]
    fn a_turn_beyond_u32_is_reported_as_written() {
        let m = messages(&SPEC.replace("turn: 1,", "turn: 5000000000,"));
        assert_eq!(
            m,
            vec!["t.yaml:10:24: `turn` 5000000000 is out of range; turns are numbered from 1 to the number of turns"]
        );
    }

    #[test]
    fn integers_beyond_64_bits_say_so() {
        let m = messages(&SPEC.replace("limit: 3", "limit: -99999999999999999999999"));
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(
            m[0].starts_with("t.yaml:7:")
                && m[0].contains("the integer -99999999999999999999999 is out of range")
                && !m[0].contains("i128"),
            "{m:?}"
        );
        let m = messages(&SPEC.replace("limit: 3", "limit: 99999999999999999999999"));
        assert_eq!(
            m,
            vec![format!("t.yaml:7:41: invalid YAML: the integer 99999999999999999999999 is out of range; integers must lie between {} and {}", i64::MIN, u64::MAX)]
        );
        // Larger still, YAML reads it as a float.
        let m = messages(&SPEC.replace("limit: 3", &format!("limit: 9{}", "0".repeat(40))));
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(
            m[0].starts_with("t.yaml:7:34: `limit` ") && m[0].contains("is too large"),
            "{m:?}"
        );
    }

    #[test]
    fn tags_are_reported_where_they_are_written() {
        let m = messages(&SPEC.replace("user: hi", "user: !!binary aGVsbG8="));
        assert_eq!(
            m,
            vec!["t.yaml:4:11: YAML tag `!!binary` is not supported; write the value without a tag (quote it to make it text)"]
        );
        let m = messages(&SPEC.replace("{ path: a.py,", "{ path: !mine a.py,"));
        assert!(
            m.iter()
                .any(|t| t.starts_with("t.yaml:7:28: YAML tag `!mine`")),
            "{m:?}"
        );
        let m = messages(&SPEC.replace("  - user: hi", "  - !turn\n    user: hi"));
        assert!(
            m.iter()
                .any(|t| t.starts_with("t.yaml:4:5: YAML tag `!turn`")),
            "{m:?}"
        );
        // A `!` inside text is not a tag.
        assert_eq!(
            messages(&SPEC.replace("user: hi", "user: \"!hi\" ")),
            Vec::<String>::new()
        );
        assert_eq!(
            messages(&SPEC.replace("user: hi", "user: hi!")),
            Vec::<String>::new()
        );
    }
}
