//! A text-based agent's tool calls (mini-swe-agent's text mode), read as tool calls.
//!
//! Such an agent offers its model no tools: the model answers in text with one fenced
//! `mswea_bash_command` block, the agent runs the command, and its output comes back as the
//! next *user* message, `<returncode>0</returncode>\n<output>\n…\n</output>`. One rule says what
//! that is, for every reader (the offline upstream, the proxy's grouping of a request):
//!
//! - an answer whose first block holds a command ([`text_call`]) is a tool call of the tool
//!   [`TEXT_TOOL`], with an id made from the answer's text (the same answer, the same id, from
//!   request to request); the command that submits (`SUBMIT_MARKER`) is no call: it closes
//!   the turn;
//! - the user message right after such an answer is that call's result when it is an
//!   observation ([`is_observation`]); any other user message is the user's.
//!
//! A result a policy rewrote (a trim's placeholder) goes back in the agent's own form:
//! [`as_observation`] wraps it in the head of the observation it stands for.

use crate::digest::sha256_hex;
use crate::message::ToolCall;

/// The fence mini-swe-agent's text-based model reads a command from.
pub(crate) const MINI_FENCE: &str = "```mswea_bash_command";

/// The command that ends a mini-swe-agent task.
pub(crate) const MINI_SUBMIT: &str = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT";

/// What a command's output starts with when it submits: a command holding it closes the turn.
pub(crate) const SUBMIT_MARKER: &str = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT";

/// The name a command in text is given as a tool call.
pub const TEXT_TOOL: &str = "bash";

/// The form of a call (and its result) written in text, as a host records it beside an API's
/// own forms (`function`, `tool_use`, …).
pub const TEXT_FORM: &str = "text";

/// The head an observation gets when the one it stands for is unknown.
pub(crate) const DEFAULT_HEAD: &str = "<returncode>0</returncode>\n";

/// The command of a mini-swe-agent answer, as its text-based model reads it (the first fenced
/// block).
pub(crate) fn mini_command(text: &str) -> Option<&str> {
    let at = text.find(MINI_FENCE)? + MINI_FENCE.len();
    let rest = text[at..].trim_start_matches([' ', '\t', '\r']);
    let rest = rest.strip_prefix('\n')?;
    let end = rest.find("\n```")?;
    Some(&rest[..end])
}

/// The tool call an answer's text carries: its first command block, unless that command
/// submits (then the answer closes the turn). Its id is `mswea-` and the first 16 hex digits of
/// the sha256 of the answer's text.
pub fn text_call(text: &str) -> Option<ToolCall> {
    let command = mini_command(text)?;
    if command.contains(SUBMIT_MARKER) {
        return None;
    }
    Some(ToolCall {
        id: format!("mswea-{}", &sha256_hex(text.as_bytes())[..16]),
        name: TEXT_TOOL.to_string(),
        args: serde_json::json!({ "command": command }),
    })
}

/// Whether a user message is a mini-swe-agent observation of a command (its text-based
/// template, or the JSON one of its tool-calling configurations).
pub fn is_observation(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("<returncode>")
        || t.starts_with("<exception>")
        || t.starts_with("{\n  \"returncode\"")
        || t.starts_with("<output")
}

/// An observation's head: what comes before its output (`<exception>…` and the `<returncode>`
/// line), or nothing when it has none.
pub fn observation_head(text: &str) -> &str {
    const CLOSE: &str = "</returncode>";
    match text.find(CLOSE) {
        Some(at) => {
            let end = at + CLOSE.len();
            let end = if text[end..].starts_with('\n') {
                end + 1
            } else {
                end
            };
            &text[..end]
        }
        None => "",
    }
}

/// A result's text in the agent's observation form: as it is when it is one already, else
/// inside `<output>` after `head` (the head of the observation it replaces, `DEFAULT_HEAD`
/// when that is unknown).
pub fn as_observation(head: &str, text: &str) -> String {
    if is_observation(text) {
        return text.to_string();
    }
    let head = if head.is_empty() { DEFAULT_HEAD } else { head };
    format!("{head}<output>\n{text}\n</output>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_with_a_command_is_a_call_and_the_submit_closes() {
        let answer = "I look.\n\n```mswea_bash_command\ncat a.py\n```";
        let c = text_call(answer).unwrap();
        assert_eq!(
            (c.name.as_str(), c.str_arg("command")),
            ("bash", Some("cat a.py"))
        );
        assert_eq!(
            c.id,
            text_call(answer).unwrap().id,
            "the same text, the same id"
        );
        assert_ne!(c.id, text_call(&answer.replace("look", "read")).unwrap().id);
        assert!(text_call(
            "Done.\n\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
        )
        .is_none());
        assert!(text_call("no block here").is_none());
        assert!(
            text_call("```bash\nls\n```").is_none(),
            "another fence is no command"
        );
    }

    #[test]
    fn observations_are_told_from_prompts_and_rewritten_in_their_form() {
        let obs = "<returncode>1</returncode>\n<output>\nboom\n</output>";
        assert!(is_observation(obs));
        assert!(is_observation(
            "<exception>timeout</exception>\n<returncode>-1</returncode>\n"
        ));
        assert!(!is_observation("The user added a new task: fix it"));
        assert_eq!(observation_head(obs), "<returncode>1</returncode>\n");
        assert_eq!(observation_head("plain"), "");
        assert_eq!(
            as_observation("<returncode>1</returncode>\n", "[output cleared]"),
            "<returncode>1</returncode>\n<output>\n[output cleared]\n</output>"
        );
        assert_eq!(
            as_observation("", "x"),
            "<returncode>0</returncode>\n<output>\nx\n</output>"
        );
        assert_eq!(
            as_observation("", obs),
            obs,
            "an observation stays as it is"
        );
    }
}
