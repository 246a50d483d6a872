//! The sim's tool calls in an agent's own vocabulary: Claude Code's `Read`/`Edit`/`Write`/`Bash`
//! (and `Grep` where it is offered), Codex's `exec_command` and `apply_patch`, mini-swe-agent's
//! one bash block in text, or foldbench's own six tools as they are.
//!
//! Which vocabulary a request speaks is read from the tools it offers (`of`), asking the
//! vocabularies of the real agents' list in order, so the upstream needs no flag per agent and
//! follows an agent that changes its tool list.

use serde_json::{json, Value};

use crate::message::{ToolCall, ToolSpec};

/// One tool vocabulary a real agent's requests speak: how the upstream tells it from the tools
/// a request offers, and how it writes the sim's calls in it. A real agent's descriptor
/// (`harness_runner::agents::AgentKind::tools`) names its own, and the upstream asks the
/// agents' vocabularies in their list's order (`of`), then falls back on foldbench's own
/// ([`FOLDBENCH`]). No method has a default.
pub trait ToolVocabulary: Sync + std::fmt::Debug {
    /// The word the upstream's record uses (the agent's name: `claude-code`).
    fn name(&self) -> &'static str;
    /// Whether a request offering `tools`, with `system` its system text, speaks it.
    fn recognises(&self, tools: &[ToolSpec], system: &str) -> bool;
    /// The sim's `call` as the agent writes it (host tools never reach here: `write_call`).
    fn write(&self, call: &ToolCall, at: &Surroundings<'_>) -> Written;
    /// Whether the agent's calls travel as a command in the answer's text (mini-swe-agent's
    /// fenced block) rather than as tool calls: the upstream then writes its answer as one
    /// step with the command (`mini_answer`) and reads the observation back as the result.
    fn in_text(&self) -> bool;
}

/// The vocabulary of a request offering `tools`, with `system` its system text: the first of
/// `known` that recognises it, else foldbench's own.
pub(crate) fn of(
    known: &[&'static dyn ToolVocabulary],
    tools: &[ToolSpec],
    system: &str,
) -> &'static dyn ToolVocabulary {
    known
        .iter()
        .copied()
        .find(|v| v.recognises(tools, system))
        .unwrap_or(&FOLDBENCH)
}

fn offers(tools: &[ToolSpec], name: &str) -> bool {
    tools.iter().any(|t| t.name == name)
}

pub(crate) use crate::text_agent::{mini_command, MINI_FENCE, MINI_SUBMIT};

/// foldbench's own tools (`read_file`, `edit_file`, `shell`, …): calls go out as the sim wrote
/// them.
#[derive(Debug)]
pub struct Foldbench;

/// [`Foldbench`], the fallback of `of`.
pub static FOLDBENCH: Foldbench = Foldbench;

impl ToolVocabulary for Foldbench {
    fn name(&self) -> &'static str {
        "foldbench"
    }
    fn recognises(&self, tools: &[ToolSpec], _: &str) -> bool {
        offers(tools, "read_file") && offers(tools, "shell")
    }
    fn write(&self, call: &ToolCall, _: &Surroundings<'_>) -> Written {
        Written::Call(call.clone())
    }
    fn in_text(&self) -> bool {
        false
    }
}

/// Claude Code: `Read`, `Edit`, `Write`, `Bash`, and `Grep` when it is offered.
#[derive(Debug)]
pub struct ClaudeCodeTools;

impl ToolVocabulary for ClaudeCodeTools {
    fn name(&self) -> &'static str {
        "claude-code"
    }
    fn recognises(&self, tools: &[ToolSpec], _: &str) -> bool {
        offers(tools, "Bash") || offers(tools, "Read")
    }
    fn write(&self, call: &ToolCall, at: &Surroundings<'_>) -> Written {
        let arg = |k: &str| call.args.get(k).and_then(Value::as_str).unwrap_or("");
        let uint = |k: &str| call.args.get(k).and_then(Value::as_u64);
        let native = |name: &str, args: Value| native(call, name, args);
        let path = arg("path");
        match call.name.as_str() {
            "read_file" => {
                let mut args = json!({ "file_path": at.abs(path) });
                if let Some(o) = uint("offset") {
                    args["offset"] = json!(o);
                }
                if let Some(l) = uint("limit") {
                    args["limit"] = json!(l);
                }
                native("Read", args)
            }
            "edit_file" => native(
                "Edit",
                json!({ "file_path": at.abs(path), "old_string": arg("old"), "new_string": arg("new") }),
            ),
            "write_file" => native(
                "Write",
                json!({ "file_path": at.abs(path), "content": arg("content") }),
            ),
            "grep" if at.offers("Grep") => {
                let mut args =
                    json!({ "pattern": arg("pattern"), "output_mode": "content", "-n": true });
                if !path.is_empty() {
                    args["path"] = json!(at.abs(path));
                }
                native("Grep", args)
            }
            _ => native(
                "Bash",
                json!({ "command": shell_command(call), "description": describe(call) }),
            ),
        }
    }
    fn in_text(&self) -> bool {
        false
    }
}

/// Codex: `exec_command` (or the older `shell`) and `apply_patch`.
#[derive(Debug)]
pub struct CodexTools;

impl ToolVocabulary for CodexTools {
    fn name(&self) -> &'static str {
        "codex"
    }
    fn recognises(&self, tools: &[ToolSpec], _: &str) -> bool {
        offers(tools, "exec_command") || (offers(tools, "shell") && offers(tools, "apply_patch"))
    }
    fn write(&self, call: &ToolCall, at: &Surroundings<'_>) -> Written {
        let path = call.str_arg("path").unwrap_or("");
        if call.name == "edit_file" && at.offers("apply_patch") {
            let arg = |k: &str| call.str_arg(k).unwrap_or("");
            if let Some(patch) =
                (at.shown)(path).and_then(|text| update_patch(path, &text, arg("old"), arg("new")))
            {
                return native(call, "apply_patch", json!({ "input": patch }));
            }
        }
        let cmd = shell_command(call);
        if at.offers("exec_command") || !at.offers("shell") {
            native(call, "exec_command", json!({ "cmd": cmd }))
        } else {
            native(call, "shell", json!({ "command": ["bash", "-lc", cmd] }))
        }
    }
    fn in_text(&self) -> bool {
        false
    }
}

/// mini-swe-agent's text-based mode: one fenced `mswea_bash_command` block per answer.
#[derive(Debug)]
pub struct MiniText;

impl ToolVocabulary for MiniText {
    fn name(&self) -> &'static str {
        "mini-swe-agent"
    }
    fn recognises(&self, tools: &[ToolSpec], system: &str) -> bool {
        // foldbench's own tools win over the fence in a system text that quotes it.
        !FOLDBENCH.recognises(tools, system)
            && (system.contains(MINI_FENCE)
                || system.contains("mswea_bash_command")
                // No tools of the agent's own: a text-based agent.
                || tools.iter().all(|t| is_host_tool(&t.name)))
    }
    fn write(&self, call: &ToolCall, _: &Surroundings<'_>) -> Written {
        Written::Command(shell_command(call))
    }
    fn in_text(&self) -> bool {
        true
    }
}

/// A tool call named `name` with the sim call's id.
fn native(call: &ToolCall, name: &str, args: Value) -> Written {
    Written::Call(ToolCall {
        id: call.id.clone(),
        name: name.to_string(),
        args,
    })
}

/// Tools a host (foldbench's proxy) adds beside the agent's own: they are answered by the host,
/// so they go out as the sim wrote them in every vocabulary.
pub(crate) fn is_host_tool(name: &str) -> bool {
    name == "fold_unit" || name.starts_with("strategy_")
}

/// What the upstream knows of the agent's surroundings, read from the request: its working
/// folder (for absolute paths), the tools it offers, and the file texts earlier reads showed.
pub struct Surroundings<'a> {
    /// The agent's working folder, when the request names it.
    pub(crate) cwd: Option<&'a str>,
    /// The tools the request offers.
    pub(crate) tools: &'a [ToolSpec],
    /// The text a file showed when it was last read whole with nothing written to it since
    /// (for a patch of whole lines), by workspace-relative path.
    pub(crate) shown: &'a dyn Fn(&str) -> Option<String>,
}

impl Surroundings<'_> {
    /// Whether the request offers the tool `name`.
    pub(crate) fn offers(&self, name: &str) -> bool {
        offers(self.tools, name)
    }

    /// `path` made absolute under the agent's working folder, when the request names it.
    pub(crate) fn abs(&self, path: &str) -> String {
        match self.cwd {
            Some(cwd) if !path.starts_with('/') => {
                let rel = path.trim_start_matches("./");
                if rel.is_empty() || rel == "." {
                    cwd.to_string()
                } else {
                    format!("{}/{rel}", cwd.trim_end_matches('/'))
                }
            }
            _ => path.to_string(),
        }
    }
}

/// One sim call as the agent writes it: a native tool call, or (mini-swe-agent) a command in
/// the answer's text.
#[derive(Debug, Clone, PartialEq)]
pub enum Written {
    /// A tool call in the agent's vocabulary (its id is the sim's).
    Call(ToolCall),
    /// A shell command the answer's text carries.
    Command(String),
}

/// Writes the sim's `call` in `vocab`; a host tool's call goes out as the sim wrote it in every
/// vocabulary.
pub(crate) fn write_call(
    vocab: &dyn ToolVocabulary,
    call: &ToolCall,
    at: &Surroundings<'_>,
) -> Written {
    if is_host_tool(&call.name) {
        return Written::Call(call.clone());
    }
    vocab.write(call, at)
}

/// A few words on what a call does (Claude Code's `Bash` asks for a description).
fn describe(call: &ToolCall) -> String {
    let path = call.str_arg("path").unwrap_or(".");
    match call.name.as_str() {
        "shell" => "Run a command".to_string(),
        "grep" => format!("Search {path}"),
        "list_files" => format!("List the files under {path}"),
        "read_file" => format!("Read {path}"),
        other => format!("Run {other}"),
    }
}

/// The sim's file tools as shell commands (for the agents whose tool is a shell).
pub(crate) fn shell_command(call: &ToolCall) -> String {
    let arg = |k: &str| call.str_arg(k).unwrap_or("");
    let path = call.str_arg("path").filter(|p| !p.is_empty());
    match call.name.as_str() {
        "shell" => arg("command").to_string(),
        "read_file" => {
            let p = sh_quote(arg("path"));
            let offset = call.args.get("offset").and_then(Value::as_u64);
            let limit = call.args.get("limit").and_then(Value::as_u64);
            match (offset, limit) {
                (None, None) => format!("cat -- {p}"),
                (o, Some(l)) => {
                    let from = o.unwrap_or(1).max(1);
                    format!("sed -n '{from},{}p' -- {p}", from + l.max(1) - 1)
                }
                (Some(o), None) => format!("tail -n +{} -- {p}", o.max(1)),
            }
        }
        "list_files" => format!(
            "find {} -type f -not -path '*/.git/*' | sort",
            sh_quote(path.unwrap_or("."))
        ),
        "grep" => format!(
            "grep -rnE --exclude-dir=.git -- {} {}",
            sh_quote(&ere(arg("pattern"))),
            sh_quote(path.unwrap_or("."))
        ),
        "edit_file" => python_edit(arg("path"), Some(arg("old")), arg("new")),
        "write_file" => python_edit(arg("path"), None, arg("content")),
        other => format!(
            "echo {}",
            sh_quote(&format!("(no shell form for the tool {other})"))
        ),
    }
}

/// A pattern the sim escaped for a Rust regex, as a POSIX extended one: the escapes of `#`,
/// `&`, `-` and `~` (literal in both) dropped, so grep prints no "stray \" warning.
fn ere(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(&n) = chars.peek() {
                if "#&-~".contains(n) {
                    out.push(n);
                    chars.next();
                    continue;
                }
                out.push(c);
                out.push(n);
                chars.next();
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// `s` in single quotes for `sh`.
pub(crate) fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A Python heredoc that replaces `old` by `new` exactly once in `path` (or, without `old`,
/// writes `new` as the whole file, making its folders). Strings go in as JSON literals, which
/// Python reads as its own, so no quoting can break.
fn python_edit(path: &str, old: Option<&str>, new: &str) -> String {
    let lit = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string());
    let body = match old {
        Some(old) => format!(
            "s = p.read_text()\nold, new = {}, {}\nn = s.count(old)\nif n != 1:\n    \
             raise SystemExit(f\"{{p}}: the text to replace occurs {{n}} times, not once\")\n\
             p.write_text(s.replace(old, new, 1))\nprint(f\"edited {{p}}\")",
            lit(old),
            lit(new)
        ),
        None => format!(
            "p.parent.mkdir(parents=True, exist_ok=True)\np.write_text({})\nprint(f\"wrote {{p}}\")",
            lit(new)
        ),
    };
    format!(
        "python3 - <<'FOLDBENCH_EOF'\nimport pathlib\np = pathlib.Path({})\n{body}\nFOLDBENCH_EOF",
        lit(path)
    )
}

/// Codex's `apply_patch` text replacing `old` by `new` in `path`, whose text is `shown`: the
/// whole lines that hold `old` become the lines with `new` in its place. `None` when `old` is not
/// in `shown` exactly once, or the edit does not end on a line boundary.
pub(crate) fn update_patch(path: &str, shown: &str, old: &str, new: &str) -> Option<String> {
    if old.is_empty() || shown.matches(old).count() != 1 {
        return None;
    }
    let start = shown.find(old)?;
    let end = start + old.len();
    let line_start = shown[..start].rfind('\n').map_or(0, |i| i + 1);
    // The end of the line that holds the last byte of `old` (its newline included).
    let last = end - 1;
    let line_end = shown[last..]
        .find('\n')
        .map_or(shown.len(), |i| last + i + 1);
    let before = &shown[line_start..line_end];
    let after = format!(
        "{}{new}{}",
        &shown[line_start..start],
        &shown[end..line_end]
    );
    let ends_line = |s: &str| s.ends_with('\n') || line_end == shown.len();
    if !ends_line(before) || !ends_line(&after) && !after.is_empty() {
        return None;
    }
    let mut patch = format!("*** Begin Patch\n*** Update File: {path}\n@@\n");
    for l in before.strip_suffix('\n').unwrap_or(before).split('\n') {
        patch.push('-');
        patch.push_str(l);
        patch.push('\n');
    }
    if !after.is_empty() {
        for l in after.strip_suffix('\n').unwrap_or(&after).split('\n') {
            patch.push('+');
            patch.push_str(l);
            patch.push('\n');
        }
    }
    patch.push_str("*** End Patch\n");
    Some(patch)
}

/// The text of a mini-swe-agent answer: the thought, then the one command block.
pub(crate) fn mini_answer(thought: &str, command: &str) -> String {
    format!("{thought}\n\n{MINI_FENCE}\n{command}\n```")
}
