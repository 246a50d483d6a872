//! `gemini-cli`: Gemini CLI's context management (`packages/core`: `chatCompressionService.ts`,
//! the tool executor's output truncation, `fileUtils.ts`).
//!
//! - **Tool output truncation**, when an output is recorded: a shell output longer than the
//!   threshold (`truncate_tool_output_threshold` characters, or four times the tokens left in
//!   the window when fewer) is saved to a file and replaced by its first 20% and last 80% of
//!   the threshold's characters, under a line naming the file the model can read.
//! - **Chat compression**, before a request, when the last request's prompt reached
//!   `compression_threshold` of the window (0.5): older tool outputs past a budget of
//!   `function_response_budget` tokens (counted newest first) are truncated and saved as above;
//!   the history is split at a user prompt (not a tool response) past `1 - preserve_threshold`
//!   of its characters (the last 30% kept verbatim); the part before is summarised into a
//!   `<state_snapshot>`, and the history becomes the summary, the model's acknowledgement and
//!   the part kept.
//!
//! The summary is asked for as `compact` asks it (foldbench's prompt, then Gemini's anchor
//! instruction for the `<state_snapshot>`); Gemini's second, verifying summary call is not
//! made. Characters are counted as Unicode scalar values (Gemini counts UTF-16 units); the
//! character sizes of the split are those of the history written as Gemini's contents.

use std::collections::HashSet;
use std::sync::Arc;

use harness_core::policy::{Offload, Plan, Policy};
use harness_core::Context;
use harness_core::ARCHIVE_DIR;
use harness_core::{Message, Role};
use serde_json::json;

use crate::error::ParamError;
use crate::messages::{self, Marks, Memo};
use crate::params::Params;
use crate::registry::Entry;

/// The policy's name.
pub(crate) const NAME: &str = "gemini-cli";

/// What the model says after the summary, in the compressed history.
pub(crate) const ACK: &str = "Got it. Thanks for the additional context!";

/// The tools whose output Gemini CLI truncates when it records it (its shell tool, and the
/// names the same job has in foldbench's and recorded sessions).
pub(crate) const SHELL_TOOLS: [&str; 6] = [
    "run_shell_command",
    "shell",
    "Bash",
    "bash",
    "exec_command",
    "local_shell",
];

/// Gemini CLI's truncation and compression.
#[derive(Debug)]
pub(crate) struct GeminiCli {
    threshold: f64,
    preserve: f64,
    output_threshold: usize,
    budget: f64,
    window: u64,
    /// The last request's prompt tokens. This and the fields below down to
    /// `previous_snapshot` are state ([`Policy::saved_state`]): the context does not say when
    /// the last request was sent, what was decided when each output was recorded, nor how
    /// much of it was kept.
    last_tokens: u64,
    /// Results decided at record time (message → the file, when truncated).
    recorded: Marks<Option<String>>,
    files: HashSet<String>,
    /// The characters each cut output keeps: the truncation threshold when it was first cut
    /// (the threshold falls as the window fills).
    cut_at: Marks<usize>,
    /// Whether the summary input holds a `<state_snapshot>`.
    previous_snapshot: bool,
    /// The cut outputs (a cache rebuilt from the context and `cut_at`, not state).
    memo: Memo,
}

/// What `gemini-cli` remembers between requests ([`Policy::saved_state`]).
#[derive(serde::Serialize, serde::Deserialize)]
struct GeminiState {
    last_tokens: u64,
    /// Each result recorded (fingerprint) and the file it was saved to.
    recorded: Vec<(String, Option<String>)>,
    files: Vec<String>,
    /// Each output cut (fingerprint) and the characters it keeps.
    cut_at: Vec<(String, usize)>,
    previous_snapshot: bool,
}

/// The registry entry.
pub(crate) fn entry() -> Entry {
    Entry::new(NAME, |p, b| Ok(Box::new(GeminiCli::from_params(p, b.window)?)))
        .summary("Gemini CLI: long shell outputs saved to files, the history compressed to a state snapshot at half the window")
        .source("Gemini CLI `chatCompressionService.ts` and tool output truncation (`model.compressionThreshold`, `truncateToolOutputThreshold`)")
        .param("compression_threshold", "0.5", "fraction of the window", "compress when the last prompt reached it (Gemini's model.compressionThreshold)")
        .param("preserve_threshold", "0.3", "fraction of the history", "the newest share kept verbatim after a compression")
        .param("truncate_tool_output_threshold", "40000", "characters", "a longer shell output is saved to a file and cut (Gemini's truncateToolOutputThreshold)")
        .param("function_response_budget", "50000", "tokens", "tool outputs kept whole at a compression, newest first")
        .param("window", "(the model's)", "tokens", "the context window")
}

/// Gemini's token estimate: a quarter token per ASCII character, 1.5 per other (a quarter
/// per character past 100,000).
pub(crate) fn estimate(text: &str) -> f64 {
    let n = text.chars().count();
    if n > 100_000 {
        return n as f64 / 4.0;
    }
    text.chars()
        .map(|c| if c.is_ascii() { 0.25 } else { 1.5 })
        .sum()
}

/// A number as `toLocaleString` writes it in English: thousands apart with commas.
pub(crate) fn grouped(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A tool output cut to `max` characters with the file holding it whole named first (Gemini's
/// `formatTruncatedToolOutput`); the output itself when it fits.
pub(crate) fn truncated(text: &str, file: &str, max: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= max {
        return text.to_string();
    }
    let head = max / 5;
    let tail = max - head;
    let omitted = chars.len() - head - tail;
    let h: String = chars[..head].iter().collect();
    let t: String = chars[chars.len() - tail..].iter().collect();
    format!(
        "Output too large. Showing first {} and last {} characters. For full output see: {file}\n{h}\n\n... [{} characters omitted] ...\n\n{t}",
        grouped(head),
        grouped(tail),
        grouped(omitted)
    )
}

impl GeminiCli {
    /// From the parameters of [`entry`].
    pub(crate) fn from_params(p: &mut Params, window: u64) -> Result<GeminiCli, ParamError> {
        let threshold = p.take_f64("compression_threshold")?.unwrap_or(0.5);
        let preserve = p.take_f64("preserve_threshold")?.unwrap_or(0.3);
        for (key, v) in [
            ("compression_threshold", threshold),
            ("preserve_threshold", preserve),
        ] {
            if v >= 1.0 {
                return Err(ParamError::OutOfRange {
                    key: key.into(),
                    rule: format!("is a fraction (between 0 and 1), not {v}"),
                });
            }
        }
        Ok(GeminiCli {
            threshold,
            preserve,
            output_threshold: p
                .take_count("truncate_tool_output_threshold")?
                .unwrap_or(40_000),
            budget: p.take_u64("function_response_budget")?.unwrap_or(50_000) as f64,
            window: p.take_u64("window")?.unwrap_or(window),
            last_tokens: 0,
            recorded: Marks::default(),
            files: HashSet::new(),
            cut_at: Marks::default(),
            previous_snapshot: false,
            memo: Memo::default(),
        })
    }

    /// The truncation threshold now: the setting, or four characters per token left in the
    /// window when fewer.
    fn output_threshold_now(&self) -> usize {
        let left = usize::try_from(
            self.window
                .saturating_sub(self.last_tokens)
                .saturating_mul(4),
        )
        .unwrap_or(usize::MAX);
        self.output_threshold.min(left)
    }

    /// The file an output of `m` is saved to.
    fn file_of(m: &Message) -> String {
        let tool = m
            .tool_name
            .as_deref()
            .unwrap_or("unknown_tool")
            .to_lowercase();
        let safe = |s: &str| -> String {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        };
        let id = safe(m.tool_call_id.as_deref().unwrap_or("output")).to_lowercase();
        format!("{ARCHIVE_DIR}/tool-outputs/{}_{id}.txt", safe(&tool))
    }

    /// Whether a compression is due before the next request.
    fn due(&self) -> bool {
        self.last_tokens as f64 >= self.threshold * self.window as f64
    }

    /// The results a compression truncates for the budget (newest first past it), by index.
    fn over_budget(&self, messages: &[Arc<Message>]) -> Vec<usize> {
        let mut used = 0.0;
        let mut out = Vec::new();
        for (i, m) in messages.iter().enumerate().rev() {
            if !messages::is_result(m) {
                continue;
            }
            let t = estimate(&m.text);
            if used + t > self.budget {
                out.push(i);
                used += estimate(&truncated(
                    &m.text,
                    &GeminiCli::file_of(m),
                    self.output_threshold_now(),
                ));
            } else {
                used += t;
            }
        }
        out
    }

    /// `m` cut, pointing at its file (the same message on every request).
    fn cut(&mut self, m: &Arc<Message>, file: &str) -> Arc<Message> {
        let now = self.output_threshold_now();
        let max = *self.cut_at.get_or_insert(m, || now);
        let file = file.to_string();
        self.memo.get(m, 50, |m| {
            let mut c = m.clone();
            c.text = truncated(&m.text, &file, max);
            c.sealed()
        })
    }

    /// What a restored policy kept, found on the messages of `ctx`.
    fn resolve(&mut self, ctx: &Context) {
        self.recorded.resolve(&ctx.messages);
        self.cut_at.resolve(&ctx.messages);
    }

    /// The messages with the outputs truncated at record time (those whose file exists).
    fn view(&mut self, ctx: &Context) -> Vec<Arc<Message>> {
        self.resolve(ctx);
        ctx.messages
            .iter()
            .map(|m| match self.recorded.get(m.id) {
                Some(Some(f)) if self.files.contains(f) => {
                    let f = f.clone();
                    self.cut(m, &f)
                }
                _ => Arc::clone(m),
            })
            .collect()
    }

    /// Gemini's contents of `messages`: each with the character size of its JSON, whether it is
    /// a user prompt (a place the history may be split) and the index of its first message.
    /// The results of one batch are one content, as Gemini sends function responses.
    fn contents(messages: &[Arc<Message>]) -> Vec<(usize, bool, usize)> {
        let mut out: Vec<(serde_json::Value, bool, usize)> = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            match m.role {
                Role::Tool => {
                    let part = json!({"functionResponse": {
                        "id": m.tool_call_id, "name": m.tool_name, "response": {"output": m.text}}});
                    let joins = i > 0 && messages[i - 1].role == Role::Tool;
                    match out.last_mut() {
                        Some((v, _, _)) if joins => {
                            if let Some(parts) = v["parts"].as_array_mut() {
                                parts.push(part);
                            }
                        }
                        _ => out.push((json!({"role": "user", "parts": [part]}), false, i)),
                    }
                }
                Role::Assistant => {
                    let mut parts = Vec::new();
                    if !m.text.is_empty() {
                        parts.push(json!({"text": m.text}));
                    }
                    for c in &m.tool_calls {
                        parts.push(
                            json!({"functionCall": {"id": c.id, "name": c.name, "args": c.args}}),
                        );
                    }
                    out.push((json!({"role": "model", "parts": parts}), false, i));
                }
                Role::User => out.push((
                    json!({"role": "user", "parts": [{"text": m.visible_text()}]}),
                    true,
                    i,
                )),
            }
        }
        out.into_iter()
            .map(|(v, prompt, i)| (v.to_string().chars().count(), prompt, i))
            .collect()
    }

    /// Where the history is split (Gemini's `findCompressSplitPoint` at `1 - preserve`), as a
    /// message index: the first user prompt at or past that share of the characters; the last
    /// one before it when none is; everything when the history ends with an answer.
    pub(crate) fn split(&self, messages: &[Arc<Message>]) -> usize {
        let contents = GeminiCli::contents(messages);
        let total: usize = contents.iter().map(|c| c.0).sum();
        let target = total as f64 * (1.0 - self.preserve);
        let mut last = 0;
        let mut cumulative = 0usize;
        for (size, prompt, at) in &contents {
            if *prompt {
                if cumulative as f64 >= target {
                    return *at;
                }
                last = *at;
            }
            cumulative += size;
        }
        if messages.last().is_some_and(|m| m.is_closing()) {
            return messages.len();
        }
        last
    }
}

impl Policy for GeminiCli {
    fn saved_state(&self) -> Option<serde_json::Value> {
        let mut files: Vec<String> = self.files.iter().cloned().collect();
        files.sort_unstable();
        serde_json::to_value(GeminiState {
            last_tokens: self.last_tokens,
            recorded: self.recorded.saved(),
            files,
            cut_at: self.cut_at.saved(),
            previous_snapshot: self.previous_snapshot,
        })
        .ok()
    }

    fn restore_state(&mut self, state: &serde_json::Value) {
        if let Ok(s) = serde_json::from_value::<GeminiState>(state.clone()) {
            self.last_tokens = s.last_tokens;
            self.recorded.restore(s.recorded);
            self.files = s.files.into_iter().collect();
            self.cut_at.restore(s.cut_at);
            self.previous_snapshot = s.previous_snapshot;
        }
    }

    fn name(&self) -> String {
        format!(
            "{NAME}:compression_threshold={},preserve_threshold={},truncate_tool_output_threshold={},window={}",
            self.threshold, self.preserve, self.output_threshold, self.window
        )
    }

    fn offloads(&mut self, ctx: &Context) -> Vec<Offload> {
        self.resolve(ctx);
        let mut out = Vec::new();
        let max = self.output_threshold_now();
        for m in &ctx.messages {
            if !messages::is_result(m) || self.recorded.contains(m.id) {
                continue;
            }
            let shell = m
                .tool_name
                .as_deref()
                .is_some_and(|t| SHELL_TOOLS.contains(&t));
            if shell && max > 0 && m.text.chars().count() > max {
                let path = GeminiCli::file_of(m);
                out.push(Offload {
                    path: path.clone(),
                    bytes: m.text.clone().into_bytes(),
                });
                self.recorded.insert(m, Some(path));
            } else {
                self.recorded.insert(m, None);
            }
        }
        if self.due() {
            let viewed = self.view(ctx);
            for i in self.over_budget(&viewed) {
                let m = &ctx.messages[i];
                let path = GeminiCli::file_of(m);
                if !self.files.contains(&path) && !out.iter().any(|o| o.path == path) {
                    out.push(Offload {
                        path,
                        bytes: m.text.clone().into_bytes(),
                    });
                }
            }
        }
        out
    }

    fn offloaded(&mut self, path: &str, written: bool) {
        if written {
            self.files.insert(path.to_string());
        }
    }

    fn plan(&mut self, ctx: &Context, prefix_tokens: u32) -> Plan {
        let messages = self.view(ctx);
        if self.due() && !messages.is_empty() && self.split(&messages) > 0 {
            return Plan::Compact { emergency: false };
        }
        let tokens =
            u64::from(prefix_tokens) + messages.iter().map(|m| u64::from(m.tokens)).sum::<u64>();
        self.last_tokens = tokens;
        let cut = messages
            .iter()
            .zip(&ctx.messages)
            .filter(|(a, b)| a.id != b.id)
            .count();
        Plan::Send {
            messages,
            action: (cut > 0).then(|| format!("{cut} tool outputs saved to files")),
        }
    }

    fn compaction_input(&mut self, ctx: &Context) -> Vec<Arc<Message>> {
        let messages = self.view(ctx);
        let split = self.split(&messages);
        let input = ctx.messages[..split].to_vec();
        self.previous_snapshot = input.iter().any(|m| m.text.contains("<state_snapshot>"));
        input
    }

    fn compaction_instructions(&self) -> Option<String> {
        let anchor = if self.previous_snapshot {
            "A previous <state_snapshot> exists in the history. You MUST integrate all still-relevant information from that snapshot into the new one, updating it with the more recent events. Do not lose established constraints or critical knowledge."
        } else {
            "Generate a new <state_snapshot> based on the provided history."
        };
        Some(format!(
            "{anchor}\n\nFirst, reason in your scratchpad. Then, generate the updated <state_snapshot>."
        ))
    }

    fn apply_compaction(&mut self, ctx: &mut Context, summary: Arc<Message>) {
        let mut messages = self.view(ctx);
        let split = self.split(&messages);
        // The kept part with the outputs over the budget truncated (their files were written).
        for i in self.over_budget(&messages) {
            let path = GeminiCli::file_of(&messages[i]);
            if i >= split && self.files.contains(&path) {
                messages[i] = self.cut(&ctx.messages[i], &path);
            }
        }
        let ack = Message::assistant(summary.turn, ACK, Vec::new());
        let mut out = vec![summary, ack];
        out.extend(messages[split..].iter().cloned());
        ctx.messages = out;
        self.last_tokens = 0;
    }

    fn window(&self) -> Option<u64> {
        Some(self.window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::testing::{
        context, count, output, policy, same_after_restores, sent, Step::*,
    };

    /// A shell output of 8,000 characters and few tokens, named by `tag`.
    fn wide(tag: &str) -> String {
        format!("{tag}\n{}", "=".repeat(8000))
    }

    #[test]
    fn what_was_decided_and_cut_carries_across_a_restore() {
        // A 2,000-token window: each shell output is cut when recorded, to fewer characters as
        // the last request grows (four per token left), and the history is compressed when a
        // request reaches 90% of it, twice. A policy that started again would not know the
        // last request's size (no compression when due, cuts at 8,000 characters) nor how
        // much each output kept.
        let spec = "gemini-cli:window=2000,compression_threshold=0.9,truncate_tool_output_threshold=6000,function_response_budget=3000";
        let run = same_after_restores(spec, || {
            let mut steps = Vec::new();
            for (t, tag) in [
                ("u1", "A"),
                ("u2", "B"),
                ("u3", "C"),
                ("u4", "D"),
                ("u5", "E"),
            ] {
                steps.push(User(t));
                steps.push(Calls(vec![("read_file", output(300))]));
                steps.push(Calls(vec![("shell", wide(tag))]));
                steps.push(Calls(vec![("read_file", output(300))]));
                steps.push(Close("done"));
            }
            steps
        });
        assert_eq!(count(&run, "compact false"), 2, "{run:#?}");
        assert!(count(&run, "tool outputs saved to files") >= 4, "{run:#?}");
    }

    #[test]
    fn a_long_shell_output_is_saved_and_cut_once_written() {
        let log: String = (0..3000)
            .map(|i| format!("line {i:04} of the build log\n"))
            .collect();
        let c = context(vec![User("build"), Calls(vec![("shell", log.clone())])]);
        let mut p = policy("gemini-cli");
        let files = p.offloads(&c);
        assert_eq!(files.len(), 1);
        assert_eq!(
            files[0].path,
            ".foldbench/archive/tool-outputs/shell_c1.txt"
        );
        assert_eq!(files[0].bytes, log.as_bytes());
        // Not written: the output is sent whole.
        p.offloaded(&files[0].path, false);
        assert_eq!(sent(p.plan(&c, 0))[2].text, log);
        let mut p = policy("gemini-cli");
        let files = p.offloads(&c);
        p.offloaded(&files[0].path, true);
        let m = sent(p.plan(&c, 0));
        assert!(m[2].text.starts_with("Output too large. Showing first 8,000 and last 32,000 characters. For full output see: .foldbench/archive/tool-outputs/shell_c1.txt\nline 0000"), "{}", &m[2].text[..200]);
        assert!(m[2].text.ends_with("line 2999 of the build log\n"));
        assert!(m[2].text.contains("... [41,000 characters omitted] ..."));
        // A short output or another tool: as it is.
        let c = context(vec![
            User("u"),
            Calls(vec![("read_file", log.clone()), ("shell", output(10))]),
        ]);
        let mut p = policy("gemini-cli");
        assert!(p.offloads(&c).is_empty());
    }

    #[test]
    fn the_split_keeps_the_last_thirty_percent_from_a_prompt() {
        let c = context(vec![
            User("one"),
            Calls(vec![("read_file", output(200))]),
            Close("done"),
            User("two"),
            Calls(vec![("read_file", output(200))]),
            Close("done"),
            User("three"),
            Calls(vec![("read_file", output(200))]),
        ]);
        let p = GeminiCli::from_params(
            &mut crate::parse_policy("gemini-cli").unwrap().params(),
            200_000,
        )
        .unwrap();
        // Two whole turns are under 70% of the characters: no prompt is past it, so the split
        // is the last prompt before it, the third.
        assert_eq!(p.split(&c.messages), 8);
        let p = GeminiCli::from_params(
            &mut crate::parse_policy("gemini-cli:preserve_threshold=0.5")
                .unwrap()
                .params(),
            200_000,
        )
        .unwrap();
        assert_eq!(p.split(&c.messages), 8, "past half: the first prompt there");
        assert_eq!(grouped(1234567), "1,234,567");
    }
}
