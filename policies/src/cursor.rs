//! `cursor`: Cursor's "dynamic context discovery" (Cursor's blog, "Dynamic context
//! discovery", January 2026). Cursor publishes no code and no thresholds; this arm follows
//! the post's first two practices, with foldbench's numbers:
//!
//! - **Long tool responses as files**: the output of a shell (or other third-party) tool
//!   longer than `output_tokens` is written to a file and the call's result says where, with
//!   its size, so the agent reads what it needs (`tail`, `grep`, `read_file`); nothing is cut
//!   away for good. foldbench's own file tools (reads, edits, searches) answer in full, as
//!   Cursor's first-party tools do.
//! - **Chat history during summarisation**: when a request reaches `threshold` of the window,
//!   the conversation is summarised (as `compact` asks it) and written whole to a history file
//!   the summary names, so the agent can search it for what the summary lost.
//!
//! This is fold's archive-and-address idea applied at the water level: a pointer and a file
//! instead of a card and a fold.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use harness_core::fold;
use harness_core::policy::{Offload, Plan, Policy};
use harness_core::Context;
use harness_core::ARCHIVE_DIR;
use harness_core::{Message, MessageKind};

use crate::compact::compactable;
use crate::error::ParamError;
use crate::gemini_cli::SHELL_TOOLS;
use crate::messages::{self, Marks, Memo};
use crate::params::Params;
use crate::registry::Entry;

/// The policy's name.
pub(crate) const NAME: &str = "cursor";

/// Cursor-style dynamic context.
#[derive(Debug)]
pub(crate) struct Cursor {
    output_tokens: u64,
    threshold: f64,
    window: u64,
    /// Outputs written to files (message → path). This and the fields below down to `prefix`
    /// are state ([`Policy::saved_state`]): a policy that started again would ask for its files
    /// again (a host refuses to write a file twice), leave the outputs whole and number its
    /// history files from 1 again.
    files: Marks<String>,
    /// Paths asked for and not yet confirmed: the output's message and fingerprint, `None` for
    /// a history file. Not state: the host answers within the request
    /// ([`Policy::offloaded`]).
    asked: HashMap<String, Option<(u64, String)>>,
    written: HashSet<String>,
    /// The history file of the compaction in progress, once written.
    history: Option<String>,
    compactions: u32,
    /// The prefix's tokens at the last plan.
    prefix: u32,
    /// The pointers (a cache rebuilt from the context and `files`, not state).
    memo: Memo,
}

/// What `cursor` remembers between requests ([`Policy::saved_state`]).
#[derive(serde::Serialize, serde::Deserialize)]
struct CursorState {
    /// The outputs in files: fingerprint, path.
    files: Vec<(String, String)>,
    written: Vec<String>,
    history: Option<String>,
    compactions: u32,
    prefix: u32,
}

/// The registry entry.
pub(crate) fn entry() -> Entry {
    Entry::new(NAME, |p, b| Ok(Box::new(Cursor::from_params(p, b.window)?)))
        .summary("Cursor's dynamic context: long tool outputs to files with a pointer, the history to a file at a summary")
        .source("Cursor, \"Dynamic context discovery\" (blog post, 2026; no published code: foldbench's thresholds)")
        .param("output_tokens", "2000", "tokens", "a longer shell output is written to a file, a pointer left in its place")
        .param("threshold", "0.9", "fraction of the window", "summarise when a request passes it, the history kept as a file")
        .param("window", "(the model's)", "tokens", "the context window")
}

impl Cursor {
    /// From the parameters of [`entry`].
    pub(crate) fn from_params(p: &mut Params, window: u64) -> Result<Cursor, ParamError> {
        let threshold = p.take_f64("threshold")?.unwrap_or(0.9);
        if threshold > 1.0 {
            return Err(ParamError::OutOfRange {
                key: "threshold".into(),
                rule: format!("is a fraction of the window (0 to 1), not {threshold}"),
            });
        }
        Ok(Cursor {
            output_tokens: p.take_u64("output_tokens")?.unwrap_or(2_000),
            threshold,
            window: p.take_u64("window")?.unwrap_or(window),
            files: Marks::default(),
            asked: HashMap::new(),
            written: HashSet::new(),
            history: None,
            compactions: 0,
            prefix: 0,
            memo: Memo::default(),
        })
    }

    /// What stands for an output written to `path`.
    pub(crate) fn pointer(m: &Message, path: &str) -> String {
        format!(
            "The output of `{}` is long ({} lines, {} tokens) and was written to {path}. Read the part you need from that file (its end with `tail`, a match with `grep`).",
            m.tool_name.as_deref().unwrap_or("the tool"),
            messages::lines(&m.text),
            m.tokens
        )
    }

    fn view(&mut self, ctx: &Context) -> Vec<Arc<Message>> {
        self.view_with(ctx, &HashMap::new())
    }

    /// The request with the outputs in files, and those in `pending` (being written), as
    /// pointers.
    fn view_with(&mut self, ctx: &Context, pending: &HashMap<u64, String>) -> Vec<Arc<Message>> {
        self.files.resolve(&ctx.messages);
        ctx.messages
            .iter()
            .map(
                |m| match self.files.get(m.id).or_else(|| pending.get(&m.id)) {
                    Some(path) => {
                        let text = Cursor::pointer(m, path);
                        self.memo.get(m, 60, |m| {
                            let mut c = m.clone();
                            c.text = text;
                            c.sealed()
                        })
                    }
                    None => Arc::clone(m),
                },
            )
            .collect()
    }

    fn tokens(prefix: u32, messages: &[Arc<Message>]) -> u64 {
        u64::from(prefix) + messages.iter().map(|m| u64::from(m.tokens)).sum::<u64>()
    }

    fn history_path(&self) -> String {
        format!("{ARCHIVE_DIR}/history-{}.jsonl", self.compactions + 1)
    }
}

impl Policy for Cursor {
    fn saved_state(&self) -> Option<serde_json::Value> {
        let mut written: Vec<String> = self.written.iter().cloned().collect();
        written.sort_unstable();
        serde_json::to_value(CursorState {
            files: self.files.saved(),
            written,
            history: self.history.clone(),
            compactions: self.compactions,
            prefix: self.prefix,
        })
        .ok()
    }

    fn restore_state(&mut self, state: &serde_json::Value) {
        if let Ok(s) = serde_json::from_value::<CursorState>(state.clone()) {
            self.files.restore(s.files);
            self.written = s.written.into_iter().collect();
            self.history = s.history;
            self.compactions = s.compactions;
            self.prefix = s.prefix;
        }
    }

    fn name(&self) -> String {
        format!(
            "{NAME}:output_tokens={},threshold={},window={}",
            self.output_tokens, self.threshold, self.window
        )
    }

    fn offloads(&mut self, ctx: &Context) -> Vec<Offload> {
        self.files.resolve(&ctx.messages);
        let mut out = Vec::new();
        for m in &ctx.messages {
            let shell = m
                .tool_name
                .as_deref()
                .is_some_and(|t| SHELL_TOOLS.contains(&t));
            if !messages::is_result(m) || !shell || u64::from(m.tokens) <= self.output_tokens {
                continue;
            }
            let asked = |a: &Option<(u64, String)>| a.as_ref().is_some_and(|(id, _)| *id == m.id);
            if self.files.contains(m.id) || self.asked.values().any(asked) {
                continue;
            }
            let id: String = m
                .tool_call_id
                .as_deref()
                .unwrap_or("output")
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let path = format!("{ARCHIVE_DIR}/tool-outputs/{id}.txt");
            self.asked
                .insert(path.clone(), Some((m.id, m.fingerprint())));
            out.push(Offload {
                path,
                bytes: m.text.clone().into_bytes(),
            });
        }
        // A summary is due: the history it replaces goes to a file first. The outputs asked
        // above count as their pointers (they are in files before the request is made), so a
        // long output that goes to a file does not also bring a summary and its history file.
        let pending: HashMap<u64, String> = self
            .asked
            .iter()
            .filter_map(|(p, asked)| asked.as_ref().map(|(id, _)| (*id, p.clone())))
            .collect();
        let messages = self.view_with(ctx, &pending);
        let due =
            Cursor::tokens(self.prefix, &messages) as f64 > self.threshold * self.window as f64;
        if due && compactable(ctx) {
            let path = self.history_path();
            if !self.written.contains(&path) {
                let text = fold::archive_text(1, ctx.turn.max(1), &ctx.messages);
                out.push(Offload {
                    path: path.clone(),
                    bytes: text.into_bytes(),
                });
                self.asked.insert(path, None);
            }
        }
        out
    }

    fn offloaded(&mut self, path: &str, written: bool) {
        if let Some(asked) = self.asked.remove(path) {
            if written {
                self.written.insert(path.to_string());
                match asked {
                    Some((id, key)) => self.files.insert_keyed(id, key, path.to_string()),
                    None => self.history = Some(path.to_string()),
                }
            }
        }
    }

    fn plan(&mut self, ctx: &Context, prefix_tokens: u32) -> Plan {
        self.prefix = prefix_tokens;
        let messages = self.view(ctx);
        let tokens = Cursor::tokens(prefix_tokens, &messages);
        if tokens as f64 > self.threshold * self.window as f64 && compactable(ctx) {
            return Plan::Compact { emergency: false };
        }
        let cut = messages
            .iter()
            .zip(&ctx.messages)
            .filter(|(a, b)| a.id != b.id)
            .count();
        Plan::Send {
            messages,
            action: (cut > 0).then(|| format!("{cut} tool outputs in files")),
        }
    }

    fn compaction_input(&mut self, ctx: &Context) -> Vec<Arc<Message>> {
        self.view(ctx)
    }

    fn apply_compaction(&mut self, ctx: &mut Context, summary: Arc<Message>) {
        let text = match self.history.take() {
            Some(path) => {
                self.compactions += 1;
                format!(
                    "{}\n\nThe whole conversation before this summary is in {path}: search it for anything the summary leaves out.",
                    summary.text
                )
            }
            None => summary.text.clone(),
        };
        let summary = Message::host(summary.turn, text, MessageKind::Summary);
        ctx.compact(summary);
    }

    fn window(&self) -> Option<u64> {
        Some(self.window)
    }
}

#[cfg(test)]
mod tests {
    use crate::messages::testing::{
        context, count, output, policy, same_after_restores, sent, shape, Step::*,
    };
    use harness_core::{Message, MessageKind};

    #[test]
    fn files_and_history_carry_across_a_restore() {
        // Each turn a long shell output (to a file) and reads (kept whole) that fill a
        // 3,000-token window past half twice: two summaries, each with its own history file. A
        // policy that started again would ask for the same files again (refused: written
        // before) and leave the outputs whole.
        let run = same_after_restores("cursor:output_tokens=100,window=3000,threshold=0.5", || {
            let mut steps = Vec::new();
            for t in ["u1", "u2", "u3", "u4", "u5"] {
                steps.push(User(t));
                steps.push(Calls(vec![("shell", output(300))]));
                steps.push(Calls(vec![("read_file", output(300))]));
                steps.push(Calls(vec![("read_file", output(300))]));
                steps.push(Close("done"));
            }
            steps
        });
        assert!(count(&run, "tool outputs in files") >= 4, "{run:#?}");
        for path in ["history-1.jsonl", "history-2.jsonl"] {
            let asked = format!("file .foldbench/archive/{path}");
            assert_eq!(count(&run, &asked), 1, "{path}: {run:#?}");
        }
        assert_eq!(count(&run, "(false)"), 0, "{run:#?}");
    }

    #[test]
    fn a_history_written_before_a_restore_is_named_after_it() {
        // The history file is written, then the conversation leaves memory before the summary
        // comes: the policy brought back does not ask for it again, and its summary names it.
        let c = context(vec![
            User("u1"),
            Calls(vec![("read_file", output(600))]),
            Close("done"),
            User("u2"),
        ]);
        let mut p = policy("cursor:window=1000,threshold=0.5");
        let files = p.offloads(&c);
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].path, ".foldbench/archive/history-1.jsonl");
        p.offloaded(&files[0].path, true);
        let state = p.saved_state().unwrap();
        let mut q = policy("cursor:window=1000,threshold=0.5");
        q.restore_state(&state);
        assert!(q.offloads(&c).is_empty(), "written before");
        let mut c = c;
        let summary = Message::host(2, "SUMMARY", MessageKind::Summary);
        q.apply_compaction(&mut c, summary);
        assert!(
            c.messages[0]
                .text
                .contains("is in .foldbench/archive/history-1.jsonl"),
            "{}",
            c.messages[0].text
        );
    }

    #[test]
    fn a_long_output_becomes_a_pointer_to_its_file_once_written() {
        let c = context(vec![
            User("u"),
            Calls(vec![("shell", output(5000)), ("read_file", output(5000))]),
        ]);
        let mut p = policy("cursor");
        let files = p.offloads(&c);
        assert_eq!(files.len(), 1, "the shell output only");
        assert_eq!(files[0].path, ".foldbench/archive/tool-outputs/c1.txt");
        p.offloaded(&files[0].path, true);
        let m = sent(p.plan(&c, 0));
        assert!(
            m[2].text
                .contains("was written to .foldbench/archive/tool-outputs/c1.txt"),
            "{}",
            m[2].text
        );
        assert_eq!(m[3].text, c.messages[3].text);
        assert_eq!(shape(&m), "uarr");
    }

    #[test]
    fn an_output_going_to_a_file_brings_no_history_file_when_its_pointer_is_under_the_threshold() {
        let c = context(vec![
            User("u"),
            Calls(vec![("shell", output(5000))]),
            Close("done"),
            User("next"),
        ]);
        let mut p = policy("cursor:window=5000");
        let files = p.offloads(&c);
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, [".foldbench/archive/tool-outputs/c1.txt"]);
        p.offloaded(&files[0].path, true);
        assert_eq!(shape(&sent(p.plan(&c, 0))), "uarcu", "no summary");
    }
}
