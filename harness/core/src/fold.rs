//! The fold's pure parts (the essay's "How a fold works"): the card, the legality of a
//! `fold_unit` call, the archive's text and the result message — all built mechanically, with no
//! model call. The fold policy and the judge both render cards with this code.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use crate::context::{call_path, Context, TurnInfo};
use crate::message::{Message, MessageKind, Role};

/// Opening line of a card; the sim and the judge recognise cards by it.
pub const CARD_HEADER: &str = "<fold-card>";

/// Blocks an agent (not the user) puts into a user message: Claude Code's reminders, Codex's
/// environment and instructions. The user's words are the message without them.
pub(crate) const AGENT_BLOCKS: [&str; 3] = [
    "system-reminder",
    "environment_context",
    "user_instructions",
];

/// The shell tools of the other agents foldbench knows (Claude Code's `Bash`, Codex's
/// `exec_command`, `shell_command` and `local_shell`, a text-based agent's command blocks);
/// with foldbench's own `shell` ([`is_shell`]) the fold result's index counts their calls as
/// shell commands.
pub(crate) const AGENT_SHELL_TOOLS: [&str; 5] = [
    "Bash",
    crate::text_agent::TEXT_TOOL,
    "exec_command",
    "shell_command",
    "local_shell",
];

/// Claude Code's tools that read a file and that search, beside foldbench's own
/// ([`crate::tools::Tool::ReadFile`], [`crate::tools::Tool::Grep`]).
const AGENT_READERS: [&str; 2] = ["Read", "NotebookRead"];
const AGENT_SEARCHERS: [&str; 2] = ["Grep", "Glob"];

/// Whether calls of the tool `name` are shell commands.
pub(crate) fn is_shell(name: &str) -> bool {
    AGENT_SHELL_TOOLS.contains(&name)
        || crate::tools::find(name).is_some_and(|t| t.tool == crate::tools::Tool::Shell)
}

fn is_reader(name: &str) -> bool {
    AGENT_READERS.contains(&name)
        || crate::tools::find(name).is_some_and(|t| t.tool == crate::tools::Tool::ReadFile)
}

fn is_searcher(name: &str) -> bool {
    AGENT_SEARCHERS.contains(&name)
        || crate::tools::find(name).is_some_and(|t| t.tool == crate::tools::Tool::Grep)
}

/// The user's own words in a user message: every `AGENT_BLOCKS` block left out (an unclosed
/// one to the end), white space trimmed.
pub fn user_words(text: &str) -> String {
    if !text.contains('<') {
        return text.trim().to_string();
    }
    let mut out = String::new();
    let mut rest = text;
    loop {
        let next = AGENT_BLOCKS
            .iter()
            .filter_map(|tag| rest.find(&format!("<{tag}>")).map(|at| (at, *tag)))
            .min();
        let Some((at, tag)) = next else { break };
        out.push_str(&rest[..at]);
        let close = format!("</{tag}>");
        match rest[at..].find(&close) {
            Some(end) => rest = &rest[at + end + close.len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out.trim().to_string()
}

/// The tools a card tells the model to read an archive back with: the agent's own readers and
/// searchers, then its shell tool, from the names it offers (`None`: foldbench's own loop,
/// `read_file` and `grep`; no tool at all: a text-based agent's shell commands).
pub(crate) fn read_back_with(tools: Option<&[String]>) -> String {
    let Some(tools) = tools else {
        return "read_file or grep".to_string();
    };
    // The readers first, then the searchers, each in the agent's order.
    let mut names: Vec<String> = tools.iter().filter(|n| is_reader(n)).cloned().collect();
    names.extend(tools.iter().filter(|n| is_searcher(n)).cloned());
    let shell = tools.iter().find(|n| is_shell(n));
    match (names.is_empty(), shell) {
        (true, Some(sh)) => format!("{sh} (cat, grep)"),
        (true, None) if tools.is_empty() => "your shell commands (cat, grep)".to_string(),
        (true, None) => "your own tools (its path is below)".to_string(),
        (false, sh) => {
            names.extend(sh.map(|s| s.to_string()));
            match names.split_last() {
                Some((last, rest)) if !rest.is_empty() => {
                    format!("{} or {last}", rest.join(", "))
                }
                _ => names.join(""),
            }
        }
    }
}

/// Renders the card for the turns since the last fold.
pub fn render_card(turns: &[TurnInfo]) -> String {
    render_card_for(turns, None, None)
}

/// [`render_card`], with each user message longer than `quote` characters cut there and marked
/// with how much was left out (the whole message is still in its turn above; `None` quotes
/// every message word for word), for an agent that offers `tools` (their names; `None`:
/// foldbench's own loop): the card names the agent's own tools to read an archive back with.
pub fn render_card_for(
    turns: &[TurnInfo],
    quote: Option<usize>,
    tools: Option<&[String]>,
) -> String {
    let calls: usize = turns.iter().map(|t| t.tool_calls).sum();
    let mut s = String::new();
    let _ = writeln!(s, "{CARD_HEADER}");
    let _ = writeln!(
        s,
        "Work since the last fold: {} turns, {} tool calls. The host numbered the turns:",
        turns.len(),
        calls
    );
    for t in turns {
        let paths = if t.paths.is_empty() {
            "no paths".to_string()
        } else {
            t.paths.join(", ")
        };
        let _ = writeln!(
            s,
            "  turn {} · {} tokens · {}",
            t.turn,
            group_thousands(t.tokens),
            paths
        );
        match quote.and_then(|q| t.user.char_indices().nth(q).map(|(i, _)| i)) {
            Some(cut) => {
                let rest = t.user[cut..].chars().count();
                let _ = writeln!(
                    s,
                    "    user: {:?} … [{rest} more characters, in turn {}]",
                    &t.user[..cut],
                    t.turn
                );
            }
            None => {
                let _ = writeln!(s, "    user: {:?}", t.user);
            }
        }
    }
    let _ = writeln!(
        s,
        "Is a unit of work behind you finished? If one is, call fold_unit(from, to) with its first and last turn: \
         its messages go to an archive you can read back with {}, and a result with the user's words \
         and your closing message takes their place. The turn in progress cannot be folded. Ignoring this card is a \
         valid answer.",
        read_back_with(tools)
    );
    s.push_str("</fold-card>");
    s
}

/// The turns a rendered card offers, read back from its text.
pub fn card_turns(card: &str) -> Vec<u32> {
    card.lines()
        .filter_map(|l| l.trim_start().strip_prefix("turn "))
        .filter_map(|rest| rest.split(' ').next()?.parse().ok())
        .collect()
}

/// `1234567` → `1,234,567`.
pub fn group_thousands(n: u64) -> String {
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

/// Why a `fold_unit(from, to)` call is refused: the rule it broke. The message is the tool
/// reply the agent reads (it begins `error: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FoldRefusal {
    /// `from` or `to` is no turn of the session so far.
    #[error("error: turn {turn} does not exist; the turns so far are 1 to {current}")]
    NoSuchTurn {
        /// The turn named.
        turn: u32,
        /// The turn in progress.
        current: u32,
    },
    /// `from` is after `to`.
    #[error("error: the range is reversed: from ({from}) is after to ({to}); give the first turn, then the last")]
    Reversed {
        /// The first turn named.
        from: u32,
        /// The last turn named.
        to: u32,
    },
    /// The range holds the turn in progress.
    #[error(
        "error: turn {current} is the turn in progress and cannot be folded; fold turns before it"
    )]
    InProgress {
        /// The turn in progress.
        current: u32,
    },
    /// The range overlaps an earlier fold (made, or accepted this turn).
    #[error("error: turns {folded_from}–{folded_to} were already folded and overlap {from}–{to}; folds do not nest: choose turns outside earlier folds")]
    Overlaps {
        /// The earlier fold's first turn.
        folded_from: u32,
        /// Its last turn.
        folded_to: u32,
        /// The first turn named.
        from: u32,
        /// The last turn named.
        to: u32,
    },
    /// The range's messages are gone from the context.
    #[error("error: turns {from}–{to} are no longer in the context (compacted or folded away)")]
    Gone {
        /// The first turn named.
        from: u32,
        /// The last turn named.
        to: u32,
    },
    /// The call does not give both turn numbers.
    #[error("error: fold_unit needs two turn numbers, `from` and `to`")]
    NeedsTurns,
}

/// Checks a `fold_unit(from, to)` call for legality only. `pending` holds ranges accepted earlier
/// in the same turn and not yet spliced. The error says which rule the call broke.
pub fn check_fold(
    ctx: &Context,
    from: u32,
    to: u32,
    pending: &[(u32, u32)],
) -> Result<(), FoldRefusal> {
    let current = ctx.turn;
    for t in [from, to] {
        if t == 0 || t > current {
            return Err(FoldRefusal::NoSuchTurn { turn: t, current });
        }
    }
    if from > to {
        return Err(FoldRefusal::Reversed { from, to });
    }
    if to == current || from == current {
        return Err(FoldRefusal::InProgress { current });
    }
    for (a, b) in ctx
        .folded_turns()
        .into_iter()
        .chain(pending.iter().copied())
    {
        if a <= to && from <= b {
            return Err(FoldRefusal::Overlaps {
                folded_from: a,
                folded_to: b,
                from,
                to,
            });
        }
    }
    if ctx.turn_range(from, to).is_none() {
        return Err(FoldRefusal::Gone { from, to });
    }
    Ok(())
}

/// Renders the original messages of a range as the archive's text: one block per message with a
/// header line, so read_file and grep find what they look for.
pub fn archive_text(from: u32, to: u32, messages: &[Arc<Message>]) -> String {
    let mut s = format!(
        "# foldbench archive v1: turns {from}-{to}, {} messages\n",
        messages.len()
    );
    for m in messages {
        let who = match m.role {
            Role::User if m.is_human() => "user".to_string(),
            Role::User => "host".to_string(),
            Role::Assistant => "assistant".to_string(),
            Role::Tool => format!("tool {}", m.tool_name.as_deref().unwrap_or("?")),
        };
        let _ = writeln!(s, "=== turn {} · {} ===", m.turn, who);
        if !m.text.is_empty() {
            s.push_str(&m.text);
            s.push('\n');
        }
        if let Some(card) = &m.card {
            s.push_str(card);
            s.push('\n');
        }
        for c in &m.tool_calls {
            let _ = writeln!(s, "[call {} {}] {}", c.id, c.name, c.canonical_args());
        }
    }
    s
}

/// The archive's file name for a range (inside the archive folder).
pub fn archive_name(from: u32, to: u32, kind: &str) -> String {
    format!("{kind}-turns-{from:03}-{to:03}.txt")
}

/// Builds the fold result with no model call: an index (tool calls by name, paths touched, shell
/// commands), every user message of the range word for word, the model's own closing message,
/// and the archive's path and sha256.
pub fn build_result(
    from: u32,
    to: u32,
    messages: &[Arc<Message>],
    archive: &str,
    sha256: &str,
) -> String {
    let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
    let mut paths: Vec<String> = Vec::new();
    let mut calls = 0;
    for m in messages {
        for c in &m.tool_calls {
            calls += 1;
            *by_name.entry(c.name.as_str()).or_default() += 1;
            if let Some(p) = call_path(c) {
                if !paths.contains(&p) {
                    paths.push(p);
                }
            }
        }
    }
    let range = if from == to {
        format!("turn {from}")
    } else {
        format!("turns {from}–{to}")
    };
    let mut s =
        format!("[fold] {range} folded by the host. Archive: {archive} (sha256 {sha256})\n");
    let names: Vec<String> = by_name.iter().map(|(n, c)| format!("{n} ×{c}")).collect();
    let shells: usize = by_name
        .iter()
        .filter(|(n, _)| is_shell(n))
        .map(|(_, c)| c)
        .sum();
    let _ = writeln!(
        s,
        "Index: {calls} tool calls{}{}; {shells} shell commands; paths: {}",
        if names.is_empty() { "" } else { " — " },
        names.join(", "),
        if paths.is_empty() {
            "none".to_string()
        } else {
            paths.join(", ")
        }
    );
    s.push_str("User messages, word for word:\n");
    for m in messages.iter().filter(|m| m.is_human()) {
        let words = user_words(&m.text);
        if !words.is_empty() {
            let _ = writeln!(s, "  turn {}: {:?}", m.turn, words);
        }
    }
    match messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant && m.is_closing() && !m.text.is_empty())
    {
        Some(c) => {
            let _ = write!(s, "Closing message (turn {}):\n{}", c.turn, c.text);
        }
        None => s.push_str("Closing message: none (the range ended without one)"),
    }
    s
}

/// Why turns FROM..=TO of a transcript cannot be folded (`foldbench fold`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FoldRangeError {
    /// The transcript has no user or model message.
    #[error("{transcript} has no turns to fold (no user or model message)")]
    NoTurns {
        /// The transcript's name.
        transcript: String,
    },
    /// FROM is after TO.
    #[error(
        "--from {from} --to {to} is reversed (--from is greater than --to): --from is the \
         first turn to fold, --to the last; {transcript} has turns {first}–{last}"
    )]
    Reversed {
        /// The transcript's name.
        transcript: String,
        /// The first turn asked for.
        from: u32,
        /// The last turn asked for.
        to: u32,
        /// The transcript's first turn.
        first: u32,
        /// The transcript's last turn.
        last: u32,
    },
    /// A range that reaches past the transcript's turns (it would be folded as if those turns
    /// were there).
    #[error(
        "{transcript} has turns {first}–{last}, not {from}–{to}; give --from and --to within \
         {first}–{last}"
    )]
    Outside {
        /// The transcript's name.
        transcript: String,
        /// The first turn asked for.
        from: u32,
        /// The last turn asked for.
        to: u32,
        /// The transcript's first turn.
        first: u32,
        /// The transcript's last turn.
        last: u32,
    },
}

/// The fold result of turns `from..=to` of a transcript's `messages`, as the host would write
/// it when folding them (its archive in the archive folder, named and hashed as a live fold's);
/// a reversed range, or one outside the transcript's turns, is refused with the turns there
/// are. `transcript` names it in the refusal.
pub fn fold_transcript(
    transcript: &str,
    messages: Vec<Arc<Message>>,
    from: u32,
    to: u32,
) -> Result<String, FoldRangeError> {
    let turns = messages.iter().map(|m| m.turn).filter(|t| *t > 0);
    let (Some(first), Some(last)) = (turns.clone().min(), turns.max()) else {
        return Err(FoldRangeError::NoTurns {
            transcript: transcript.to_string(),
        });
    };
    if from > to {
        return Err(FoldRangeError::Reversed {
            transcript: transcript.to_string(),
            from,
            to,
            first,
            last,
        });
    }
    if from < first || to > last {
        return Err(FoldRangeError::Outside {
            transcript: transcript.to_string(),
            from,
            to,
            first,
            last,
        });
    }
    let range: Vec<Arc<Message>> = messages
        .into_iter()
        .filter(|m| m.turn >= from && m.turn <= to)
        .collect();
    let bytes = archive_text(from, to, &range).into_bytes();
    let archive = format!(
        "{}/{}",
        crate::session::ARCHIVE_DIR,
        archive_name(from, to, "fold")
    );
    Ok(build_result(
        from,
        to,
        &range,
        &archive,
        &crate::digest::sha256_hex(&bytes),
    ))
}

/// Reads the range and archive a fold result or strategy report points to, from its first line
/// (`[fold] turns 1–3 folded by the host. Archive: PATH (sha256 …)`).
pub(crate) fn archive_pointer(text: &str) -> Option<(u32, u32, String)> {
    let first = text.lines().next()?;
    if !(first.starts_with("[fold]") || first.starts_with("[strategy")) {
        return None;
    }
    let after = first.split_once("turn")?.1;
    let after = after.strip_prefix('s').unwrap_or(after).trim_start();
    let range: String = after
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '–' || *c == '-')
        .collect();
    let mut parts = range.split(['–', '-']).filter(|s| !s.is_empty());
    let from: u32 = parts.next()?.parse().ok()?;
    let to: u32 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(from);
    let archive = first
        .split_once("Archive: ")?
        .1
        .split(' ')
        .next()?
        .to_string();
    Some((from, to, archive))
}

/// The fold result message for a range.
pub fn result_message(
    from: u32,
    to: u32,
    messages: &[Arc<Message>],
    archive: &str,
    sha256: &str,
) -> Arc<Message> {
    let text = build_result(from, to, messages, archive, sha256);
    Message::host(
        to,
        text,
        MessageKind::FoldResult {
            from,
            to,
            archive: archive.to_string(),
            sha256: sha256.to_string(),
        },
    )
}

/// Splices a fold result in place of turns `from..=to`. Returns `None` (context unchanged) when
/// the range is not in the context.
pub fn splice_fold(
    ctx: &mut Context,
    from: u32,
    to: u32,
    archive: &str,
    sha256: &str,
) -> Option<Arc<Message>> {
    let (start, end) = ctx.turn_range(from, to)?;
    let originals = ctx.messages[start..end].to_vec();
    let msg = result_message(from, to, &originals, archive, sha256);
    ctx.splice(start, end, msg.clone());
    Some(msg)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_transcripts_turns_fold_into_the_result_a_host_writes_and_a_bad_range_says_the_turns() {
        let messages = vec![
            Message::user(1, "where is the port set?", None),
            Message::assistant(1, "PORT = 8080 in src/app.py", Vec::new()),
            Message::user(2, "and the host?", None),
            Message::assistant(2, "HOST in src/app.py", Vec::new()),
        ];
        let result = fold_transcript("t.jsonl", messages.clone(), 1, 1).unwrap();
        let range: Vec<Arc<Message>> = messages.iter().take(2).cloned().collect();
        let bytes = archive_text(1, 1, &range).into_bytes();
        assert_eq!(
            result,
            build_result(
                1,
                1,
                &range,
                ".foldbench/archive/fold-turns-001-001.txt",
                &crate::digest::sha256_hex(&bytes)
            )
        );
        assert_eq!(
            fold_transcript("t.jsonl", messages.clone(), 2, 1)
                .unwrap_err()
                .to_string(),
            "--from 2 --to 1 is reversed (--from is greater than --to): --from is the first \
             turn to fold, --to the last; t.jsonl has turns 1–2"
        );
        assert_eq!(
            fold_transcript("t.jsonl", messages, 1, 3)
                .unwrap_err()
                .to_string(),
            "t.jsonl has turns 1–2, not 1–3; give --from and --to within 1–2"
        );
        assert!(matches!(
            fold_transcript("e.jsonl", Vec::new(), 1, 1),
            Err(FoldRangeError::NoTurns { .. })
        ));
    }

    use super::*;
    use crate::message::ToolCall;
    use serde_json::json;

    fn session(turns: u32) -> Context {
        let mut c = Context::default();
        for t in 1..=turns {
            c.turn = t;
            c.push(Message::user(t, format!("do thing {t}"), None));
            let k = ToolCall {
                id: format!("c{t}"),
                name: "read_file".into(),
                args: json!({"path": format!("f{t}.py")}),
            };
            c.push(Message::assistant(t, "", vec![k.clone()]));
            c.push(Message::tool_result(t, &k, format!("content {t}"), false));
            c.push(Message::assistant(t, format!("finished {t}"), vec![]));
        }
        c
    }

    #[test]
    fn illegal_folds_say_which_rule_they_break() {
        let mut c = session(4);
        assert!(check_fold(&c, 3, 1, &[])
            .unwrap_err()
            .to_string()
            .contains("reversed"));
        assert!(check_fold(&c, 1, 9, &[])
            .unwrap_err()
            .to_string()
            .contains("turn 9 does not exist"));
        assert!(check_fold(&c, 0, 1, &[])
            .unwrap_err()
            .to_string()
            .contains("turn 0 does not exist"));
        assert!(check_fold(&c, 2, 4, &[])
            .unwrap_err()
            .to_string()
            .contains("in progress"));
        assert!(check_fold(&c, 1, 2, &[]).is_ok());
        splice_fold(&mut c, 1, 2, "a", "b").unwrap();
        assert!(check_fold(&c, 2, 3, &[])
            .unwrap_err()
            .to_string()
            .contains("already folded"));
        assert!(check_fold(&c, 3, 3, &[(3, 3)])
            .unwrap_err()
            .to_string()
            .contains("already folded"));
        assert!(check_fold(&c, 3, 3, &[]).is_ok());
    }

    #[test]
    fn result_holds_index_users_and_closing() {
        let c = session(3);
        let (s, e) = c.turn_range(1, 2).unwrap();
        let r = build_result(1, 2, &c.messages[s..e], ".foldbench/archive/x.txt", "abc");
        assert!(
            r.contains("Index: 2 tool calls — read_file ×2; 0 shell commands; paths: f1.py, f2.py"),
            "{r}"
        );
        assert!(
            r.contains("turn 1: \"do thing 1\"") && r.contains("turn 2: \"do thing 2\""),
            "{r}"
        );
        assert!(r.ends_with("Closing message (turn 2):\nfinished 2"), "{r}");
        assert!(r.contains("sha256 abc"));
        assert_eq!(
            archive_pointer(&r),
            Some((1, 2, ".foldbench/archive/x.txt".to_string()))
        );
        let one = build_result(3, 3, &c.messages[8..], "a/b.txt", "f");
        assert_eq!(archive_pointer(&one), Some((3, 3, "a/b.txt".to_string())));
    }

    fn claude_code_turn(t: u32, calls: &[(&str, serde_json::Value)]) -> Vec<Arc<Message>> {
        let mut out = vec![Message::user(
            t,
            format!(
                "<system-reminder>\nAs you answer the user's questions, you can use the following context: {} characters of git status\n</system-reminder>\n\n<system-reminder>commit attribution</system-reminder>\n\nfix the build {t}",
                "x".repeat(1100)
            ),
            None,
        )];
        let calls: Vec<ToolCall> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| ToolCall {
                id: format!("c{t}{i}"),
                name: (*name).into(),
                args: args.clone(),
            })
            .collect();
        out.push(Message::assistant(t, "", calls.clone()));
        for c in &calls {
            out.push(Message::tool_result(t, c, "out", false));
        }
        // Claude Code's reminder beside the results: in the turn, not the user's words.
        out.push(Message::user(
            t,
            "<system-reminder>The user hasn't heard from you in a while</system-reminder>",
            None,
        ));
        out.push(Message::assistant(t, format!("fixed {t}"), vec![]));
        out
    }

    #[test]
    fn the_users_words_leave_out_the_blocks_an_agent_adds() {
        let mut c = Context::default();
        for t in 1..=2 {
            c.turn = t;
            for m in claude_code_turn(t, &[("Bash", json!({"command": "make"}))]) {
                c.push(m);
            }
        }
        c.turn = 3;
        let turns = c.closed_live_turns();
        assert_eq!(turns[0].user, "fix the build 1");
        let card = render_card(&turns);
        assert!(!card.contains("system-reminder"), "{card}");
        let (s, e) = c.turn_range(1, 2).unwrap();
        let r = build_result(1, 2, &c.messages[s..e], "a.txt", "f");
        assert!(
            r.contains("User messages, word for word:\n  turn 1: \"fix the build 1\"\n  turn 2: \"fix the build 2\"\nClosing"),
            "{r}"
        );
        assert_eq!(
            user_words(
                "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>\n\nnow test it"
            ),
            "now test it"
        );
        assert_eq!(
            user_words("a <system-reminder>x</system-reminder> b"),
            "a  b"
        );
        assert_eq!(user_words("<system-reminder>cut short"), "");
        assert_eq!(user_words("  fix it  "), "fix it");
    }

    #[test]
    fn the_index_counts_the_agents_shell_tool() {
        let mut c = Context {
            turn: 1,
            ..Context::default()
        };
        let bash = |n: u32| ("Bash", json!({"command": format!("make {n}")}));
        for m in claude_code_turn(
            1,
            &[
                bash(1),
                bash(2),
                ("Read", json!({"file_path": "/w/a.py"})),
                bash(3),
            ],
        ) {
            c.push(m);
        }
        let r = build_result(1, 1, &c.messages, "a.txt", "f");
        assert!(
            r.contains("Index: 4 tool calls — Bash ×3, Read ×1; 3 shell commands; paths: /w/a.py"),
            "{r}"
        );
    }

    #[test]
    fn the_card_names_the_agents_own_tools_to_read_the_archive_with() {
        let c = session(2);
        let turns = c.live_turns();
        let names = |ns: &[&str]| ns.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let claude = names(&["Agent", "Bash", "Edit", "Read", "Grep", "Write"]);
        let card = render_card_for(&turns, None, Some(&claude));
        assert!(card.contains("read back with Read, Grep or Bash"), "{card}");
        assert!(!card.contains("read_file"), "{card}");
        let codex = names(&["exec_command", "write_stdin", "apply_patch"]);
        let card = render_card_for(&turns, None, Some(&codex));
        assert!(
            card.contains("read back with exec_command (cat, grep)"),
            "{card}"
        );
        let text_agent: Vec<String> = Vec::new();
        let card = render_card_for(&turns, None, Some(&text_agent));
        assert!(
            card.contains("read back with your shell commands (cat, grep)"),
            "{card}"
        );
        // foldbench's own loop: its own tools, as before.
        assert!(render_card(&turns).contains("read back with read_file or grep"));
    }

    #[test]
    fn card_lists_turns_and_is_read_back() {
        let c = session(3);
        let card = render_card(&c.live_turns());
        assert!(card.starts_with(CARD_HEADER));
        assert_eq!(card_turns(&card), vec![1, 2, 3]);
        assert!(card.contains("valid answer"));
        assert_eq!(group_thousands(1234567), "1,234,567");
    }

    #[test]
    fn a_quoted_card_cuts_on_a_character_boundary() {
        let turn = |n: u32, user: &str| TurnInfo {
            turn: n,
            tokens: 10,
            paths: Vec::new(),
            user: user.to_string(),
            tool_calls: 1,
        };
        let turns = [turn(1, "héllo wörld"), turn(2, "ok")];
        let card = render_card_for(&turns, Some(4), None);
        assert!(
            card.contains("user: \"héll\" … [7 more characters, in turn 1]"),
            "{card}"
        );
        assert!(card.contains("user: \"ok\"\n"), "{card}");
        assert_eq!(render_card_for(&turns, None, None), render_card(&turns));
        assert!(render_card(&turns).contains("user: \"héllo wörld\"\n"));
    }
}
