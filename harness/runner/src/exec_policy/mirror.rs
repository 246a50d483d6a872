//! The process's view of the context, kept in step with foldbench's by deltas.
//!
//! Every message the process is sent gets a protocol id (1, 2, 3, … in the order they are
//! first sent). A request carries `{"keep": K, "append": [...]}`: the process keeps the first
//! `K` messages of its view and appends the rest, each a whole message (with its `id`) or
//! `{"ref": ID}`, a message of its previous view. While the session only appends, `K` is the
//! view's length and `append` holds the new messages alone: what is sent grows linearly with the
//! session. A compaction or a splice re-sends the part after the edit as references.
//!
//! Tool calls carry the names and arguments their agent gave them: foldbench's own in `run`
//! (`read_file{path}`), the recorded agent's in `replay` (Claude Code's `Read{file_path}`,
//! `Bash{command}`, Codex's `shell_command`). So that one policy reads both, every call also
//! carries its `category` ([`category`]: `read`, `list`, `search`, `edit`, `write`, `shell` or
//! `other`) and, when it names one, the `path` it touches; a tool result carries its call's as
//! `tool_category` and `tool_path`.
//!
//! A process that saves its state (`saves_state`) also gets each message's `fingerprint`
//! ([`Message::fingerprint`]): protocol ids count again from 1 in each session, so state kept
//! across sessions names a message by what it is, and the fingerprint is that.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use harness_core::tools::Tool;
use harness_core::{call_path, Context};
use harness_core::{Message, ToolCall};
use serde_json::{json, Value};

/// What a tool call does, whoever named it: foldbench's tools by their descriptor, and the
/// tools of the agents replay imports (Claude Code, Codex, mini-swe-agent, SWE-agent,
/// OpenHands) by their names (`str_replace_editor` by its `command`); `other` for the rest
/// (a web fetch, a to-do list, a subagent, a policy's own tools).
pub(crate) fn category(call: &ToolCall) -> &'static str {
    if let Some(def) = harness_core::tools::find(&call.name) {
        return match def.tool {
            Tool::ReadFile => "read",
            Tool::ListFiles => "list",
            Tool::Grep => "search",
            Tool::EditFile => "edit",
            Tool::WriteFile => "write",
            Tool::Shell => "shell",
        };
    }
    match call.name.as_str() {
        "Read" | "NotebookRead" => "read",
        "LS" | "Glob" | "list_dir" => "list",
        "Grep" | "grep_files" => "search",
        "Edit" | "MultiEdit" | "NotebookEdit" | "apply_patch" => "edit",
        "Write" => "write",
        "Bash" | "BashOutput" | "shell_command" | "exec_command" | "local_shell" | "bash"
        | "execute_bash" => "shell",
        "str_replace_editor" => match call.str_arg("command") {
            Some("view") => "read",
            Some("create") => "write",
            Some(_) => "edit",
            None => "other",
        },
        _ => "other",
    }
}

/// The view the process holds: foldbench's message ids in order, and their protocol ids.
#[derive(Debug, Default)]
pub(crate) struct Mirror {
    /// [`Message::id`]s of the process's view, in order.
    ids: Vec<u64>,
    /// Protocol id of each message sent, by [`Message::id`].
    protocol: HashMap<u64, u64>,
    next: u64,
    /// The category and path of each call sent, by its id: its result's.
    calls: HashMap<String, (&'static str, Option<String>)>,
    /// Whether each message sent carries its `fingerprint` (a process that saves its state).
    fingerprints: bool,
}

impl Mirror {
    /// Gives each message sent from now on its `fingerprint` ([`Message::fingerprint`]): for a
    /// process that saves its state, which names messages by it, as their ids do not outlive
    /// the session.
    pub fn send_fingerprints(&mut self, on: bool) {
        self.fingerprints = on;
    }

    /// The delta that brings the view to `ctx`, which becomes the view.
    pub(crate) fn delta(&mut self, ctx: &Context) -> Value {
        let keep = self
            .ids
            .iter()
            .zip(&ctx.messages)
            .take_while(|(a, m)| **a == m.id)
            .count();
        let dropped: HashSet<u64> = self.ids[keep..].iter().copied().collect();
        self.ids.truncate(keep);
        let mut append = Vec::with_capacity(ctx.messages.len() - keep);
        for m in &ctx.messages[keep..] {
            let known = self.protocol.get(&m.id).copied();
            match known {
                Some(pid) if dropped.contains(&m.id) => append.push(json!({ "ref": pid })),
                _ => {
                    self.next += 1;
                    self.protocol.insert(m.id, self.next);
                    for c in &m.tool_calls {
                        self.calls.insert(c.id.clone(), (category(c), call_path(c)));
                    }
                    let of_call = m.tool_call_id.as_ref().and_then(|id| self.calls.get(id));
                    let mut v = message(m, self.next, of_call);
                    if let (true, Value::Object(o)) = (self.fingerprints, &mut v) {
                        o.insert("fingerprint".into(), m.fingerprint().into());
                    }
                    append.push(v);
                }
            }
            self.ids.push(m.id);
        }
        json!({ "keep": keep, "append": append })
    }
}

/// A message as the protocol sends it: its fields as foldbench records them, its `id`, each
/// call's `category` and `path`, and for a tool result its call's (`of_call`) as
/// `tool_category` and `tool_path`.
pub(crate) fn message(
    m: &Arc<Message>,
    id: u64,
    of_call: Option<&(&'static str, Option<String>)>,
) -> Value {
    let mut v = serde_json::to_value(&**m).unwrap_or_else(|_| json!({}));
    if let Value::Object(o) = &mut v {
        o.insert("id".into(), id.into());
        if let Some(Value::Array(calls)) = o.get_mut("tool_calls") {
            for (c, call) in calls.iter_mut().zip(&m.tool_calls) {
                if let Value::Object(c) = c {
                    c.insert("category".into(), category(call).into());
                    if let Some(p) = call_path(call) {
                        c.insert("path".into(), p.into());
                    }
                }
            }
        }
        if m.tool_call_id.is_some() {
            let (cat, path) = of_call.map_or(("other", None), |(c, p)| (*c, p.clone()));
            o.insert("tool_category".into(), cat.into());
            if let Some(p) = path {
                o.insert("tool_path".into(), p.into());
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_core::MessageKind;

    #[test]
    fn appends_are_sent_once_and_an_edit_refers_to_what_follows_it() {
        let mut ctx = Context::default();
        let mut v = Mirror::default();
        ctx.push(Message::user(1, "a", None));
        ctx.push(Message::assistant(1, "b", vec![]));
        let d = v.delta(&ctx);
        assert_eq!(d["keep"], 0);
        assert_eq!(d["append"][1]["id"], 2);
        ctx.push(Message::user(2, "c", None));
        let d = v.delta(&ctx);
        assert_eq!(d["keep"], 2);
        assert_eq!(d["append"].as_array().map(Vec::len), Some(1));
        assert_eq!(d["append"][0]["text"], "c");
        ctx.splice(0, 2, Message::host(1, "folded", MessageKind::Plain));
        let d = v.delta(&ctx);
        assert_eq!(d["keep"], 0);
        assert_eq!(d["append"][0]["text"], "folded");
        assert_eq!(d["append"][1], json!({"ref": 3}));
        let d = v.delta(&ctx);
        assert_eq!(d, json!({"keep": 2, "append": []}));
    }

    #[test]
    fn a_process_that_saves_its_state_gets_each_message_s_fingerprint() {
        let mut ctx = Context::default();
        let m = Message::user(1, "a", None);
        ctx.push(Arc::clone(&m));
        let d = Mirror::default().delta(&ctx);
        assert!(d["append"][0].get("fingerprint").is_none(), "not unasked");
        let mut v = Mirror::default();
        v.send_fingerprints(true);
        let d = v.delta(&ctx);
        assert_eq!(d["append"][0]["fingerprint"], m.fingerprint());
        // The same message made again (another process's, after a reload): the same print.
        assert_eq!(Message::user(1, "a", None).fingerprint(), m.fingerprint());
    }
}
