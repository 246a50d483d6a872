//! The per-session index the hidden-reference analysis reads: every message's distinctive
//! tokens (interned), where each token occurs, and every response's candidates.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::Arc;

use harness_core::{Message, MessageKind, Role};
use harness_import::ImportedSession;

use super::tokens;

/// A small, fast hasher for interned strings and pointers (FxHash's multiply-rotate).
#[derive(Default, Clone, Copy)]
pub(crate) struct Fx(u64);

impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Eight bytes at a time, the last few padded with zeros: whole words are read in place
        // (a copy of a length known only at run time is a call to `memcpy`).
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(word);
            self.write_u64(u64::from_le_bytes(b));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// No token (the end of a chain of tokens with the same hash).
const NO_TOKEN: u32 = u32::MAX;

/// A `HashMap` with [`Fx`].
pub(crate) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

/// A `HashSet` with [`Fx`].
pub(crate) type FxSet<T> = std::collections::HashSet<T, BuildHasherDefault<Fx>>;

/// A message's identity: the address of its shared allocation.
pub(crate) fn key(m: &Arc<Message>) -> usize {
    Arc::as_ptr(m) as usize
}

/// Tokens common in the corpus, which are never candidates.
#[derive(Debug, Clone, Default)]
pub struct Common {
    set: std::collections::HashSet<Box<str>, BuildHasherDefault<Fx>>,
}

/// A token is common when it occurs in the sessions of at least this many projects ([`project`])
/// …
pub(crate) const COMMON_MIN_GROUPS: usize = 2;
/// … and of at least this share of the corpus's projects.
pub(crate) const COMMON_SHARE: f64 = 0.10;

/// The project of a session file: its folder (`~/.claude/projects/<project>/`), a subagent's
/// `<project>/<session>/subagents/` counted as its session's project. A token two projects
/// share (`JSON.stringify`, `re.compile`, `T015`) is not distinctive of either.
pub fn project(source: &str) -> &str {
    let dir = match source.rfind(['/', '\\']) {
        Some(i) => &source[..i],
        None => "",
    };
    match dir.strip_suffix("/subagents") {
        Some(session) => session.rfind('/').map_or("", |i| &session[..i]),
        None => dir,
    }
}

impl Common {
    /// Nothing common (a single session).
    pub fn none() -> Common {
        Common::default()
    }

    /// The common tokens of the indexed sessions; `group` is each session's project
    /// ([`project`]).
    pub fn of<'a>(sessions: impl IntoIterator<Item = (&'a str, &'a SessionIndex)>) -> Common {
        // Per token: the projects holding it, and the last one seen (a number per project, 0
        // for the empty project, which is also where a token starts).
        let mut df: FxMap<&'a str, (usize, usize)> = FxMap::default();
        let mut groups: Vec<&str> = Vec::new();
        for (group, idx) in sessions {
            let at = match groups.iter().position(|g| *g == group) {
                Some(at) => at,
                None => {
                    groups.push(group);
                    groups.len() - 1
                }
            };
            let group = if group.is_empty() { 0 } else { at + 1 };
            for s in idx.texts() {
                let e = df.entry(s).or_insert((0, 0));
                if e.1 != group {
                    e.0 += 1;
                    e.1 = group;
                }
            }
        }
        let min = COMMON_MIN_GROUPS.max((COMMON_SHARE * groups.len() as f64).ceil() as usize);
        Common {
            set: df
                .into_iter()
                .filter(|(_, (n, _))| *n >= min)
                .map(|(s, _)| Box::from(s))
                .collect(),
        }
    }

    /// Whether a token is common.
    pub(crate) fn contains(&self, t: &str) -> bool {
        self.set.contains(t)
    }
}

/// Every message's distinctive tokens, interned, and where each occurs.
#[derive(Debug, Clone, Default)]
pub struct SessionIndex {
    /// A token's hash ([`Fx`]) → the last token interned with that hash.
    ids: FxMap<u64, u32>,
    /// Per token: the token interned before it with the same hash ([`NO_TOKEN`]: none).
    same_hash: Vec<u32>,
    /// Every token's text, one after another (one allocation for all of them).
    texts: String,
    /// Where each token's text ends in `texts`.
    ends: Vec<u32>,
    /// Each message's tokens, sorted, without repeats.
    pub(crate) msg_tokens: Vec<Vec<u32>>,
    /// Each token's messages, ascending.
    pub(crate) postings: Postings,
    /// A recorded message's index by its identity.
    pub(crate) by_key: FxMap<usize, u32>,
    /// For a tool result, the index of the assistant message that made its call.
    pub(crate) caller: Vec<Option<u32>>,
}

/// Each token's messages, ascending: one list of every token's messages, token after token, and
/// where each token's part begins (a list per token would be an allocation per token).
#[derive(Debug, Clone, Default)]
pub(crate) struct Postings {
    /// Where token `t`'s messages begin in `messages`; the last entry is its length.
    starts: Vec<u32>,
    messages: Vec<u32>,
}

impl Postings {
    /// The postings of `tokens` ids (`< tokens`) from each message's tokens (message `i`'s at
    /// `msg_tokens[i]`, without repeats).
    fn of(msg_tokens: &[Vec<u32>], tokens: usize) -> Postings {
        let mut starts = vec![0u32; tokens + 1];
        for &t in msg_tokens.iter().flatten() {
            starts[t as usize + 1] += 1;
        }
        for t in 0..tokens {
            starts[t + 1] += starts[t];
        }
        let mut next: Vec<u32> = starts[..tokens].to_vec();
        let mut messages = vec![0u32; starts[tokens] as usize];
        for (i, toks) in msg_tokens.iter().enumerate() {
            for &t in toks {
                let at = &mut next[t as usize];
                messages[*at as usize] = i as u32;
                *at += 1;
            }
        }
        Postings { starts, messages }
    }
}

impl std::ops::Index<usize> for Postings {
    type Output = [u32];

    /// Token `t`'s messages, ascending.
    fn index(&self, t: usize) -> &[u32] {
        &self.messages[self.starts[t] as usize..self.starts[t + 1] as usize]
    }
}

impl SessionIndex {
    /// Indexes a session's messages (one pass over their text).
    pub fn new(session: &ImportedSession) -> SessionIndex {
        let mut ix = SessionIndex::default();
        let mut calls: FxMap<&str, u32> = FxMap::default();
        for (i, m) in session.messages.iter().enumerate() {
            let i = i as u32;
            let mut local = Vec::new();
            tokens::for_each_in_message(m, |t| local.push(ix.intern(t)));
            local.sort_unstable();
            local.dedup();
            ix.msg_tokens.push(local);
            // An edited path as fold results name it (`call_path` drops the leading `/`), so
            // the artifact probe can find it there.
            let mut paths = Vec::new();
            for c in m.tool_calls.iter().filter(|c| is_edit(&c.name)) {
                edited_paths(c, &mut paths);
            }
            for p in paths {
                ix.intern(&harness_core::normalize_path(&p));
            }
            ix.by_key.insert(key(m), i);
            for c in &m.tool_calls {
                calls.insert(&c.id, i);
            }
            ix.caller.push(
                (m.role == Role::Tool)
                    .then(|| {
                        m.tool_call_id
                            .as_deref()
                            .and_then(|c| calls.get(c).copied())
                    })
                    .flatten(),
            );
        }
        ix.postings = Postings::of(&ix.msg_tokens, ix.len());
        ix
    }

    fn intern(&mut self, t: &str) -> u32 {
        let hash = BuildHasherDefault::<Fx>::default().hash_one(t);
        if let Some(id) = self.find(hash, t) {
            return id;
        }
        let id = self.len() as u32;
        let before = self.ids.insert(hash, id).unwrap_or(NO_TOKEN);
        self.same_hash.push(before);
        self.texts.push_str(t);
        self.ends.push(self.texts.len() as u32);
        id
    }

    /// The token whose text is `t` and hash `hash`, if interned.
    fn find(&self, hash: u64, t: &str) -> Option<u32> {
        let mut at = self.ids.get(&hash).copied().unwrap_or(NO_TOKEN);
        while at != NO_TOKEN {
            if self.text(at) == t {
                return Some(at);
            }
            at = self.same_hash[at as usize];
        }
        None
    }

    /// The id of a token, if the session holds it.
    pub(crate) fn id(&self, t: &str) -> Option<u32> {
        self.find(BuildHasherDefault::<Fx>::default().hash_one(t), t)
    }

    /// The token of an id.
    pub(crate) fn text(&self, id: u32) -> &str {
        let id = id as usize;
        let start = if id == 0 { 0 } else { self.ends[id - 1] };
        &self.texts[start as usize..self.ends[id] as usize]
    }

    /// Every token's text, by id.
    pub(crate) fn texts(&self) -> impl Iterator<Item = &str> {
        (0..self.len() as u32).map(|id| self.text(id))
    }

    /// Distinct tokens.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The ids of the tokens of `text` the session holds, sorted, without repeats.
    pub(crate) fn ids_of(&self, m: &Message) -> Vec<u32> {
        let mut v = Vec::new();
        tokens::for_each_in_message(m, |t| v.extend(self.id(t)));
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// A distinctive token a response took from earlier context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// The token's id.
    pub(crate) token: u32,
    /// The earlier messages (tool results and assistant messages of earlier turns) holding it.
    pub(crate) sources: Vec<u32>,
}

/// What the analysis needs of a session beyond its index: every response's candidates, the
/// paths it edited, and the units of the turns.
#[derive(Debug, Clone, Default)]
pub struct Candidates {
    /// Per recorded request.
    pub(crate) per_request: Vec<Vec<Candidate>>,
    /// Per recorded request: the paths its response edited or wrote, each as its token ids
    /// (as written, and as fold results name it).
    pub(crate) edits: Vec<Vec<[u32; 2]>>,
}

/// Tool names that edit or write a file.
pub(crate) fn is_edit(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("edit") || n.contains("write") || n == "apply_patch" || n == "create_file"
}

/// The paths an edit call names: its path argument, or the files of an `apply_patch` text.
pub(crate) fn edited_paths(call: &harness_core::ToolCall, out: &mut Vec<String>) {
    for k in ["file_path", "path", "notebook_path", "filename"] {
        if let Some(p) = call.str_arg(k) {
            out.push(p.to_string());
            return;
        }
    }
    let patch = call
        .str_arg("input")
        .or_else(|| call.str_arg("patch"))
        .unwrap_or("");
    for line in patch.lines() {
        for head in ["*** Update File: ", "*** Add File: "] {
            if let Some(p) = line.strip_prefix(head) {
                out.push(p.trim().to_string());
            }
        }
    }
}

impl Candidates {
    /// Every response's candidates: its distinctive tokens that occur in a tool result or an
    /// assistant message of an earlier turn of its `none` context, and that are not in its own
    /// turn before it, in the system prompt, in a human message so far, or common.
    pub fn new(session: &ImportedSession, ix: &SessionIndex, common: &Common) -> Candidates {
        let msgs = &session.messages;
        let mut excluded = vec![false; ix.len()];
        for (id, s) in ix.texts().enumerate() {
            excluded[id] = common.contains(s);
        }
        if let Some(system) = &session.system {
            tokens::for_each(system, |t| {
                if let Some(id) = ix.id(t) {
                    excluded[id as usize] = true;
                }
            });
        }
        let mut seen = 0usize;
        let mut out = Candidates::default();
        for r in &session.requests {
            let ctx = r.context.min(msgs.len());
            while seen < ctx {
                if msgs[seen].is_human() {
                    for &t in &ix.msg_tokens[seen] {
                        excluded[t as usize] = true;
                    }
                }
                seen += 1;
            }
            let Some(resp) = msgs.get(r.message) else {
                out.per_request.push(Vec::new());
                out.edits.push(Vec::new());
                continue;
            };
            let turn = resp.turn;
            // A line counts only from the tool calls' arguments (prose repeats itself).
            let mut call_lines = Vec::new();
            for c in &resp.tool_calls {
                tokens::for_each_json_line(&c.args, &mut |l: &str| call_lines.extend(ix.id(l)));
            }
            let mut cands = Vec::new();
            for &t in &ix.msg_tokens[r.message] {
                if excluded[t as usize] || (tokens::is_line(ix.text(t)) && !call_lines.contains(&t))
                {
                    continue;
                }
                let mut sources = Vec::new();
                let mut in_turn = false;
                for &p in &ix.postings[t as usize] {
                    let p_us = p as usize;
                    if p_us >= ctx {
                        break;
                    }
                    let m = &msgs[p_us];
                    if m.turn >= turn {
                        in_turn = true;
                        break;
                    }
                    if is_source(m) {
                        sources.push(p);
                    }
                }
                if !in_turn && !sources.is_empty() {
                    cands.push(Candidate { token: t, sources });
                }
            }
            out.per_request.push(cands);
            let mut paths = Vec::new();
            for c in resp.tool_calls.iter().filter(|c| is_edit(&c.name)) {
                edited_paths(c, &mut paths);
            }
            let mut ids: Vec<[u32; 2]> = paths
                .iter()
                .filter_map(|p| {
                    let mut longest: Option<&str> = None;
                    tokens::for_each(p, |t| {
                        if longest.is_none_or(|l| t.len() > l.len()) {
                            longest = Some(t);
                        }
                    });
                    let written = longest.and_then(|t| ix.id(t));
                    let named = ix.id(&harness_core::normalize_path(p));
                    // A path with no distinctive token (`Makefile`) is not probed.
                    written.map(|a| [a, named.unwrap_or(a)])
                })
                .collect();
            ids.sort_unstable();
            ids.dedup();
            out.edits.push(ids);
        }
        out
    }
}

/// Whether a message can be the source of a reference: a tool result or an assistant message
/// (not a human or host message, not a recorded compaction summary).
pub(crate) fn is_source(m: &Message) -> bool {
    matches!(m.role, Role::Tool | Role::Assistant) && m.kind != MessageKind::Summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interned_tokens_keep_their_ids_and_texts() {
        let mut ix = SessionIndex::default();
        let words = [
            "src/main.rs",
            "MEMBER_RATE",
            "8080",
            "",
            "src/main.rs",
            "parseConfig",
        ];
        let ids: Vec<u32> = words.iter().map(|w| ix.intern(w)).collect();
        assert_eq!(ids, [0, 1, 2, 3, 0, 4]);
        assert_eq!(ix.len(), 5);
        for (w, id) in words.iter().zip(&ids) {
            assert_eq!(ix.text(*id), *w);
            assert_eq!(ix.id(w), Some(*id));
        }
        assert_eq!(ix.id("E0502"), None);
        let texts: Vec<&str> = ix.texts().collect();
        assert_eq!(
            texts,
            ["src/main.rs", "MEMBER_RATE", "8080", "", "parseConfig"]
        );
    }

    #[test]
    fn tokens_with_the_same_hash_are_told_apart_by_their_text() {
        let mut ix = SessionIndex::default();
        let a = ix.intern("alpha_1");
        // A second token filed under the first's hash, as a collision would file it.
        let hash = BuildHasherDefault::<Fx>::default().hash_one("alpha_1");
        let b = ix.len() as u32;
        ix.same_hash
            .push(ix.ids.insert(hash, b).unwrap_or(NO_TOKEN));
        ix.texts.push_str("beta_2");
        ix.ends.push(ix.texts.len() as u32);
        assert_eq!(ix.find(hash, "alpha_1"), Some(a));
        assert_eq!(ix.find(hash, "beta_2"), Some(b));
        assert_eq!(ix.find(hash, "gamma_3"), None);
    }

    #[test]
    fn postings_list_each_tokens_messages_in_order() {
        let msg_tokens = vec![vec![0, 2], vec![], vec![2], vec![0, 1, 2]];
        let p = Postings::of(&msg_tokens, 4);
        assert_eq!(&p[0], &[0, 3]);
        assert_eq!(&p[1], &[3]);
        assert_eq!(&p[2], &[0, 2, 3]);
        assert!(p[3].is_empty());
    }

    #[test]
    fn fx_reads_whole_words_and_pads_the_last_with_zeros() {
        for n in 0..40u8 {
            let bytes: Vec<u8> = (0..n).map(|b| b.wrapping_mul(37)).collect();
            let mut padded = Fx::default();
            for chunk in bytes.chunks(8) {
                let mut b = [0u8; 8];
                b[..chunk.len()].copy_from_slice(chunk);
                padded.write_u64(u64::from_le_bytes(b));
            }
            let mut fx = Fx::default();
            fx.write(&bytes);
            assert_eq!(fx.finish(), padded.finish(), "{n} bytes");
        }
    }
}
