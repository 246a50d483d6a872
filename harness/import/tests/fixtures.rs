//! Importer tests on the small fixtures in `harness/import/fixtures/` (written for these tests
//! from the formats' documentation; no real transcript is copied).

use std::path::PathBuf;

use harness_core::{MessageKind, Role};
use harness_import::{
    detect, import, import_bytes, link_forks, EventKind, Format, ImportError, ImportedSession,
};

fn fixture(rel: &str) -> (String, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (rel.to_string(), text)
}

fn one(rel: &str) -> ImportedSession {
    let (name, text) = fixture(rel);
    let mut sessions = import(&name, &text, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sessions.len(), 1, "{rel}: one session expected");
    sessions.remove(0)
}

fn texts(s: &ImportedSession) -> Vec<String> {
    s.messages.iter().map(|m| m.text.clone()).collect()
}

fn turn_texts(s: &ImportedSession) -> Vec<&str> {
    s.human_turns.iter().map(|t| t.text.as_str()).collect()
}

const S: &str = "11111111-0000-4000-8000-000000000001";
const P: &str = "0199a000-0000-7000-8000-00000000000a";

// ---------------------------------------------------------------- Claude Code

#[test]
fn claude_code_keeps_thinking_only_on_models_that_keep_it_in_context() {
    let s = one("claude-code/thinking.jsonl");
    let with: Vec<&str> = s
        .messages
        .iter()
        .filter_map(|m| m.thinking.as_deref())
        .collect();
    assert_eq!(with.len(), 4, "Opus 4.5 keeps earlier turns' thinking");
    assert!(with[0].starts_with("The loader reads config.toml"));
    let plain = s
        .messages
        .iter()
        .find(|m| m.role == Role::Assistant)
        .unwrap();
    assert!(
        plain.tokens > harness_core::tokens::count(&plain.tool_calls[0].name),
        "counted"
    );
    // Earlier models strip it from later requests: the same session as Sonnet 4 has none.
    let (name, text) = fixture("claude-code/thinking.jsonl");
    let text = text.replace("claude-opus-4-5-20251101", "claude-sonnet-4-20250514");
    let s = import(&name, &text, None).unwrap().remove(0);
    assert!(s.messages.iter().all(|m| m.thinking.is_none()));
    for (model, keeps) in [
        ("claude-opus-4-5-20251101", true),
        ("claude-opus-4-7", true),
        ("claude-sonnet-4-6", true),
        ("claude-sonnet-4-5-20250929", false),
        ("claude-opus-4-1-20250805", false),
        ("claude-haiku-4-5-20251001", false),
    ] {
        assert_eq!(harness_import::keeps_thinking(model), keeps, "{model}");
    }
}

#[test]
fn claude_code_follows_the_active_branch_not_the_abandoned_one() {
    let s = one("claude-code/branches.jsonl");
    assert_eq!(s.id, S);
    assert_eq!(
        texts(&s),
        [
            "Add a --verbose flag to the CLI.",
            "Which parser do you use?",
            "It is argh, not clap.",
            "Then use #[argh(switch)]."
        ]
    );
    assert!(!texts(&s)
        .iter()
        .any(|t| t.contains("OLD ANSWER") || t.contains("abandoned")));
    let ids: Vec<_> = s
        .human_turns
        .iter()
        .map(|t| t.id.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(ids, ["u-1", "u-2b"]);
    assert_eq!(s.requests.len(), 2);
    assert_eq!(s.requests[1].message, 3);
    assert_eq!(s.requests[1].response_id.as_deref(), Some("msg_3"));
}

#[test]
fn claude_code_merges_a_split_response_and_orders_parallel_results() {
    let s = one("claude-code/parallel.jsonl");
    let roles: Vec<Role> = s.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Assistant
        ]
    );
    let answer = &s.messages[1];
    assert_eq!(answer.text, "Reading both.");
    let calls: Vec<&str> = answer.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(calls, ["toolu_A", "toolu_B"]);
    assert_eq!(answer.tool_calls[1].args["file_path"], "b.toml");
    // Results in call order although B's line came first; the tool_result content, not the
    // viewer copy.
    assert_eq!(s.messages[2].tool_call_id.as_deref(), Some("toolu_A"));
    assert_eq!(s.messages[2].text, "name = \"demo\"");
    assert_eq!(s.messages[3].tool_call_id.as_deref(), Some("toolu_B"));
    assert_eq!(s.messages[3].tool_name.as_deref(), Some("Read"));
    assert!(!texts(&s).iter().any(|t| t.contains("VIEWER COPY")));
    // Thinking is dropped; the response's text is kept.
    assert_eq!(
        s.messages[4].text,
        "a.toml names the app demo; b.toml sets port 8080."
    );
    // One request per response, usage the maximum over its lines.
    assert_eq!(s.requests.len(), 2);
    let u = s.requests[0].usage.expect("usage recorded");
    assert_eq!(
        (
            u.input_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
            u.output_tokens
        ),
        (4, 9000, 200, 77)
    );
    assert_eq!(s.requests[1].context, 4);
    assert_eq!(s.context(&s.requests[1]).len(), 4);
}

#[test]
fn claude_code_sidechains_become_their_own_linked_sessions() {
    let (name, text) = fixture("claude-code/sidechain.jsonl");
    let sessions = import(&name, &text, Some(Format::ClaudeCode)).expect("imports");
    assert_eq!(sessions.len(), 2);
    let (main, side) = (&sessions[0], &sessions[1]);
    assert_eq!(main.id, S);
    assert_eq!(main.parent, None);
    assert!(
        !texts(main).iter().any(|t| t.contains("fn invalidate")),
        "the sidechain stays out of the main session"
    );
    assert_eq!(main.requests.len(), 2);
    assert_eq!(main.messages[2].text, "It is in src/cache.rs line 42.");
    assert_eq!(side.id, format!("{S}/sidechain-1"));
    assert_eq!(side.parent.as_deref(), Some(S));
    assert_eq!(turn_texts(side), ["Search for cache invalidation."]);
    assert_eq!(side.requests.len(), 2);
    assert_eq!(side.messages[2].text, "src/cache.rs:42: fn invalidate");
}

#[test]
fn claude_code_subagent_file_is_a_session_of_its_parent() {
    let s = one("claude-code/agent-a1b2c3.jsonl");
    assert_eq!(s.id, "agent-a1b2c3");
    assert_eq!(s.parent.as_deref(), Some(S));
    assert_eq!(turn_texts(&s), ["List the modules of the crate."]);
    assert_eq!(s.requests.len(), 2);
}

#[test]
fn claude_code_keeps_compaction_markers() {
    let s = one("claude-code/compaction.jsonl");
    // The branch is followed across the boundary (its parentUuid is null, its
    // logicalParentUuid names the last record before it).
    assert_eq!(s.messages.len(), 7);
    assert_eq!(s.events.len(), 2);
    assert_eq!(s.events[0].kind, EventKind::CompactBoundary);
    assert_eq!(s.events[0].message, 4);
    assert_eq!(s.events[0].trigger.as_deref(), Some("auto"));
    assert_eq!(s.events[0].pre_tokens, Some(155_000));
    assert_eq!(s.events[1].kind, EventKind::CompactSummary);
    assert_eq!(s.events[1].message, 4);
    assert_eq!(s.messages[4].kind, MessageKind::Summary);
    assert!(s.messages[4]
        .text
        .starts_with("This session is being continued"));
    assert_eq!(
        turn_texts(&s),
        ["Refactor the parser.", "Now document the parser."]
    );
    let last = s.requests.last().expect("requests");
    assert_eq!(last.context_start, 4);
    assert_eq!(s.context(last).len(), 2, "the summary and the new prompt");
    assert_eq!(s.requests[0].context_start, 0);
}

#[test]
fn claude_code_keeps_wrappers_meta_and_notices_out_of_human_turns() {
    let s = one("claude-code/wrappers.jsonl");
    assert_eq!(
        turn_texts(&s),
        [
            "Why does main panic?",
            "[Image #1] This is the panic.",
            "Fix it."
        ]
    );
    // The message keeps a placeholder for the image; the turn's words do not.
    assert!(s.messages[s.human_turns[1].message]
        .text
        .starts_with("[image]\n\n[Image #1]"));
    let ids: Vec<_> = s
        .human_turns
        .iter()
        .map(|t| t.id.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(ids, ["u-1", "u-2", "u-3"]);
    // The caveat and the /clear wrappers come before the first prompt: turn 0, kept.
    assert_eq!(s.messages[0].turn, 0);
    assert!(s.messages[1].text.starts_with("<command-name>/clear"));
    // The prompt the model read has the IDE context; the turn's text does not.
    assert!(s.messages[s.human_turns[0].message]
        .text
        .starts_with("<ide_opened_file>"));
    // The interruption notice and the bash-mode records are user messages of the turn in
    // progress.
    let notice = s
        .messages
        .iter()
        .find(|m| m.text.starts_with("[Request interrupted"))
        .expect("kept");
    assert_eq!((notice.role, notice.turn), (Role::User, 1));
    let bash = s
        .messages
        .iter()
        .find(|m| m.text.starts_with("<bash-input>"))
        .expect("kept");
    assert_eq!(bash.turn, 2);
    // The refused tool use is an error result; base64 never reaches a message.
    assert!(s
        .messages
        .iter()
        .any(|m| m.role == Role::Tool && m.is_error));
    assert!(!texts(&s).iter().any(|t| t.contains("iVBOR")));
    assert!(s.messages.iter().all(|m| m.tokens < 100));
}

#[test]
fn claude_code_skips_malformed_lines_with_counted_warnings() {
    let s = one("claude-code/malformed.jsonl");
    assert_eq!(turn_texts(&s), ["Hello.", "Bye."]);
    let lines: Vec<usize> = s.warnings.iter().map(|w| w.line).collect();
    assert_eq!(lines, [3, 4, 7]);
    assert!(s
        .warnings
        .iter()
        .all(|w| w.file == "claude-code/malformed.jsonl"));
    assert!(s.warnings[0]
        .to_string()
        .starts_with("claude-code/malformed.jsonl:3: skipped: malformed json"));
}

#[test]
fn claude_code_joins_the_conversation_across_a_damaged_line() {
    // Line 9 (turn 2's first tool result) cut short: the record after it names it as parent.
    // Joined to the record before the damage, the session keeps its five turns and every
    // request instead of starting at turn 3.
    let text = include_str!("../../replay/fixtures/claude-code/five-turns.jsonl");
    let whole = import("s.jsonl", text, None).expect("imports").remove(0);
    let damaged: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| if i == 8 { &l[..l.len() / 2] } else { l })
        .collect::<Vec<_>>()
        .join("\n");
    let s = import("s.jsonl", &damaged, None)
        .expect("imports")
        .remove(0);
    assert_eq!(s.human_turns.len(), 5, "{:?}", turn_texts(&s));
    assert_eq!(s.requests.len(), whole.requests.len());
    assert_eq!(
        s.messages.len(),
        whole.messages.len() - 1,
        "the damaged record is lost"
    );
    let said: Vec<String> = s.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(said.len(), 2, "{said:#?}");
    assert!(
        said[0].starts_with("s.jsonl:9: skipped: malformed json"),
        "{said:#?}"
    );
    assert_eq!(
        said[1],
        "s.jsonl: 1 record whose parent was on a skipped line joined to the record before it \
         (the conversation goes on past the damage; the skipped records are lost)"
    );
    // Without damage nothing is joined: a missing parent alone (a resumed session's first
    // record) is left as it is.
    assert!(whole.warnings.is_empty());
}

// ---------------------------------------------------------------- Codex

#[test]
fn codex_rollout_maps_items_calls_results_and_turns() {
    let s = one("codex/rollout.jsonl");
    assert_eq!(s.id, P);
    assert_eq!(s.format, Format::Codex);
    assert_eq!(s.system.as_deref(), Some("You are Codex, a coding agent."));
    assert_eq!(
        turn_texts(&s),
        [
            "Why does the build fail?",
            "Fix it and run the tests.",
            "Which test fails?"
        ]
    );
    // Developer and environment messages are kept, before turn 1.
    assert!(s.messages[0].text.starts_with("<permissions instructions>"));
    assert!(s.messages[1].text.starts_with("<environment_context>"));
    assert_eq!((s.messages[1].role, s.messages[1].turn), (Role::User, 0));
    // Reasoning and a call are one response; the call's JSON arguments are parsed.
    let first = &s.messages[s.requests[0].message];
    assert_eq!(first.tool_calls[0].name, "shell");
    assert_eq!(first.tool_calls[0].args["command"][0], "cargo");
    // Two calls of one response (a stale token row between them does not split it); results in
    // call order although call_3's came first; `success: false` is an error.
    let second_turn = &s.messages[s.requests[2].message];
    let calls: Vec<&str> = second_turn
        .tool_calls
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(calls, ["call_2", "call_3"]);
    assert_eq!(
        second_turn.tool_calls[0].args["input"]
            .as_str()
            .map(|i| i.starts_with("*** Begin Patch")),
        Some(true)
    );
    let r2 = &s.messages[s.requests[2].message + 1];
    let r3 = &s.messages[s.requests[2].message + 2];
    assert_eq!(
        (r2.tool_call_id.as_deref(), r2.is_error),
        (Some("call_2"), false)
    );
    assert_eq!(
        (r3.tool_call_id.as_deref(), r3.is_error),
        (Some("call_3"), true)
    );
    assert_eq!(r3.text, "test result: FAILED. 1 failed");
    // The bad line is a warning naming its line.
    assert_eq!(s.warnings.len(), 1);
    assert_eq!(s.warnings[0].line, 15);
}

#[test]
fn codex_token_rows_are_deduplicated_and_give_each_request_its_usage() {
    let s = one("codex/rollout.jsonl");
    assert_eq!(s.requests.len(), 5);
    let got: Vec<(u64, u64, u64)> = s
        .requests
        .iter()
        .map(|r| {
            r.usage
                .map(|u| (u.input_tokens, u.cache_read_tokens, u.output_tokens))
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(
        got,
        [
            (5000, 0, 50),
            (400, 4800, 40),
            (1000, 4800, 60),
            (900, 5600, 50),
            (200, 800, 10)
        ]
    );
}

#[test]
fn codex_compaction_replaces_the_context() {
    let s = one("codex/rollout.jsonl");
    assert_eq!(s.events.len(), 1);
    let e = &s.events[0];
    assert_eq!(e.kind, EventKind::Compacted);
    // The replacement history, then the summary.
    assert_eq!(s.messages[e.message].text, "Why does the build fail?");
    assert_eq!(s.messages[e.message + 2].kind, MessageKind::Summary);
    assert_eq!(
        s.messages[e.message + 2].text,
        "Summary: the build is fixed; test_parse fails."
    );
    let last = s.requests.last().expect("requests");
    assert_eq!(last.context_start, e.message);
    // Re-sent prompts are not new turns.
    assert_eq!(s.human_turns.len(), 3);
    assert!(s.requests[..4].iter().all(|r| r.context_start == 0));
}

#[test]
fn codex_fork_drops_the_replayed_prefix() {
    let s = one("codex/fork.jsonl");
    assert_eq!(s.id, "0199b000-0000-7000-8000-00000000000b");
    assert_eq!(s.parent.as_deref(), Some(P));
    assert_eq!(s.dropped_prefix, 6);
    assert_eq!(
        texts(&s),
        [
            "Try another fix: remove line 3.",
            "Removed line 3; the build passes."
        ]
    );
    // The fork continues its parent's turns.
    assert_eq!(s.human_turns[0].turn, 2);
    assert_eq!(
        s.requests.len(),
        1,
        "the repeated final token row is not a request"
    );
    let u = s.requests[0].usage.expect("usage");
    assert_eq!(
        (u.input_tokens, u.cache_read_tokens, u.output_tokens),
        (0, 4800, 30)
    );
    assert!(s.warnings.is_empty());
}

#[test]
fn link_forks_drops_the_prefix_a_fork_shares_with_its_parent() {
    let parent = one("codex/parent.jsonl");
    let named = one("codex/fork-named.jsonl");
    assert_eq!(named.dropped_prefix, 0, "no replay marker in this file");
    assert_eq!(named.messages.len(), 8);
    let mut sessions = vec![parent.clone(), named.clone()];
    link_forks(&mut sessions);
    let fork = &sessions[1];
    assert_eq!(fork.dropped_prefix, 6);
    assert_eq!(
        texts(fork),
        ["Explain E0425 instead.", "E0425 means an unresolved name."]
    );
    assert_eq!(fork.requests.len(), 1);
    assert_eq!(fork.requests[0].message, 1);
    assert_eq!(fork.human_turns[0].message, 0);
    assert_eq!(fork.human_turns[0].turn, 2);
    assert_eq!(
        sessions[0].messages.len(),
        parent.messages.len(),
        "the parent is untouched"
    );

    // A fork that does not name its parent is found by its replayed exchange (the younger id
    // is the fork).
    let mut unnamed = named.clone();
    unnamed.parent = None;
    let mut sessions = vec![unnamed, parent.clone()];
    link_forks(&mut sessions);
    assert_eq!(sessions[0].parent.as_deref(), Some(P));
    assert_eq!(sessions[0].dropped_prefix, 6);
    assert_eq!(sessions[1].dropped_prefix, 0);

    // Two sessions that only share injected context are not forks of each other.
    let other = one("codex/legacy.jsonl");
    let mut sessions = vec![parent, other];
    link_forks(&mut sessions);
    assert!(sessions
        .iter()
        .all(|s| s.dropped_prefix == 0 && s.parent.is_none()));
}

#[test]
fn codex_legacy_reads_bare_items() {
    let (name, text) = fixture("codex/legacy.jsonl");
    assert_eq!(detect(&name, &text), Ok(Format::CodexLegacy));
    let s = one("codex/legacy.jsonl");
    assert_eq!(s.id, "5973b6c0-94b8-487b-a530-2aeb6098ae0e");
    assert_eq!(s.system.as_deref(), Some("Be terse."));
    assert_eq!(turn_texts(&s), ["List the files.", "Thanks."]);
    // The call (with its reasoning), the answer after the result, the reply to "Thanks.".
    assert_eq!(s.requests.len(), 3);
    let result = s
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .expect("a result");
    assert!(result.text.contains("Cargo.toml"));
    assert_eq!(result.tool_name.as_deref(), Some("shell"));
    assert!(s.warnings.is_empty());
}

// ---------------------------------------------------------------- trajectories

#[test]
fn mini_swe_agent_trajectory() {
    let s = one("mini-swe-agent/demo__demo-1.traj.json");
    assert_eq!(
        (s.id.as_str(), s.format),
        ("demo__demo-1", Format::MiniSweAgent)
    );
    assert!(s
        .system
        .as_deref()
        .is_some_and(|t| t.starts_with("You are a helpful assistant")));
    assert_eq!(s.human_turns.len(), 1);
    assert!(s.human_turns[0].text.contains("off-by-one"));
    let roles: Vec<Role> = s.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::User,
            Role::Assistant,
            Role::Tool
        ]
    );
    assert_eq!(
        s.messages[3].turn, 1,
        "a format-error message is not a new turn"
    );
    assert!(
        !texts(&s).iter().any(|t| t.starts_with("diff --git")),
        "the exit message was never sent"
    );
    let u = s.requests[0].usage.expect("usage");
    assert_eq!(
        (u.input_tokens, u.cache_read_tokens, u.output_tokens),
        (176, 1024, 30)
    );
    assert_eq!(s.requests[1].response_id.as_deref(), Some("resp-2"));
}

#[test]
fn swe_agent_trajectory_with_history() {
    let s = one("swe-agent/demo__demo-2.traj");
    assert_eq!(
        (s.id.as_str(), s.format),
        ("demo__demo-2", Format::SweAgent)
    );
    assert!(s
        .system
        .as_deref()
        .is_some_and(|t| t.starts_with("SETTING")));
    assert_eq!(
        s.messages[0].turn, 0,
        "the demonstration comes before turn 1"
    );
    assert_eq!(s.human_turns.len(), 1);
    assert!(s.human_turns[0].text.contains("TimeDelta"));
    assert_eq!(s.requests.len(), 2);
    assert!(s.requests.iter().all(|r| r.usage.is_none()));
    let results: Vec<&str> = s
        .messages
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    assert_eq!(results, ["call_ls", "call_submit"]);
}

#[test]
fn swe_agent_trajectory_without_history() {
    let s = one("swe-agent/trajectory-only.traj");
    assert_eq!(s.requests.len(), 2);
    assert_eq!(s.human_turns.len(), 0);
    assert_eq!(s.warnings.len(), 1);
}

#[test]
fn openhands_output_holds_one_session_per_run() {
    let (name, text) = fixture("openhands/output.jsonl");
    let sessions = import(&name, &text, None).expect("imports");
    assert_eq!(sessions.len(), 2);
    let s = &sessions[0];
    assert_eq!(
        (s.id.as_str(), s.format),
        ("demo__demo-3", Format::OpenHands)
    );
    assert_eq!(s.system.as_deref(), Some("You are OpenHands agent."));
    assert_eq!(turn_texts(s), ["Fix the segfault in match."]);
    assert_eq!(s.human_turns[0].id.as_deref(), Some("1"));
    // Two actions of one model response are one assistant message with both calls.
    assert_eq!(s.requests.len(), 2);
    let first = &s.messages[s.requests[0].message];
    assert_eq!(first.text, "I'll look around first.");
    assert_eq!(first.tool_calls.len(), 2);
    // Results in call order although the second call's observation came first.
    let results: Vec<&str> = s
        .messages
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    assert_eq!(results, ["toolu_01", "toolu_02"]);
    // An error observation without a call is a user message; recall is dropped.
    assert!(s
        .messages
        .iter()
        .any(|m| m.role == Role::User && m.text == "The action was rejected."));
    assert!(!texts(s).iter().any(|t| t.contains("workspace context")));
    let u = s.requests[1].usage.expect("usage");
    assert_eq!(
        (u.input_tokens, u.cache_read_tokens, u.output_tokens),
        (400, 4900, 30)
    );
    let t = &sessions[1];
    assert_eq!(turn_texts(t), ["Say hi."]);
    assert_eq!(t.requests.len(), 1);
    assert_eq!(t.messages[1].text, "Hi!");
}

// ---------------------------------------------------------------- detection and bad inputs

#[test]
fn detection_names_every_fixture_format() {
    let cases = [
        ("claude-code/branches.jsonl", Format::ClaudeCode),
        ("claude-code/agent-a1b2c3.jsonl", Format::ClaudeCode),
        ("claude-code/malformed.jsonl", Format::ClaudeCode),
        ("codex/rollout.jsonl", Format::Codex),
        ("codex/fork.jsonl", Format::Codex),
        ("codex/legacy.jsonl", Format::CodexLegacy),
        (
            "mini-swe-agent/demo__demo-1.traj.json",
            Format::MiniSweAgent,
        ),
        ("swe-agent/demo__demo-2.traj", Format::SweAgent),
        ("swe-agent/trajectory-only.traj", Format::SweAgent),
        ("openhands/output.jsonl", Format::OpenHands),
    ];
    for (rel, want) in cases {
        let (name, text) = fixture(rel);
        assert_eq!(detect(&name, &text), Ok(want), "{rel}");
    }
    // A compact (one-line) trajectory document is still a document.
    let (_, text) = fixture("mini-swe-agent/demo__demo-1.traj.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(detect("x", &v.to_string()), Ok(Format::MiniSweAgent));
}

#[test]
fn format_names_round_trip() {
    for f in Format::ALL {
        assert_eq!(f.name().parse::<Format>(), Ok(f));
        assert_eq!(f.to_string(), f.name());
    }
    let e = "auto".parse::<Format>().expect_err("not a format");
    assert!(e.to_string().starts_with("unknown format `auto`"));
}

fn error_of(rel: &str, format: Option<Format>) -> ImportError {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel);
    let bytes = std::fs::read(&path).expect("fixture reads");
    import_bytes(rel, &bytes, format).expect_err("an error")
}

#[test]
fn an_empty_file_is_a_clear_error() {
    for rel in ["bad/empty.jsonl", "bad/blank.jsonl"] {
        let e = error_of(rel, None);
        assert!(matches!(e, ImportError::Empty { .. }), "{rel}: {e}");
        assert!(e
            .to_string()
            .starts_with(&format!("{rel}: empty file; expected a Claude Code")));
        assert!(matches!(
            error_of(rel, Some(Format::ClaudeCode)),
            ImportError::Empty { .. }
        ));
    }
}

#[test]
fn a_binary_file_is_a_clear_error() {
    let e = error_of("bad/image.png", None);
    assert!(matches!(e, ImportError::Binary { .. }), "{e}");
    assert!(e.to_string().starts_with("bad/image.png: binary data"));
    assert!(matches!(
        error_of("bad/image.png", Some(Format::Codex)),
        ImportError::Binary { .. }
    ));
    let e = import_bytes("zeros", &[0u8; 64], None).expect_err("binary");
    assert!(matches!(e, ImportError::Binary { .. }));
}

#[test]
fn a_truncated_file_is_a_clear_error_or_a_warning() {
    // A document cut short: an error naming where it ends.
    let e = error_of("bad/truncated.traj.json", None);
    assert!(matches!(e, ImportError::Truncated { .. }), "{e}");
    assert!(e.to_string().contains("truncated json"));
    assert!(matches!(
        error_of("bad/truncated.traj.json", Some(Format::MiniSweAgent)),
        ImportError::Truncated { .. }
    ));
    // JSON lines cut short: the cut line is a warning (see the malformed fixture), and a file cut
    // inside its only line is an error.
    let (_, text) = fixture("codex/rollout.jsonl");
    let cut = &text[..text.len() / 2];
    let s = import("cut.jsonl", cut, None).expect("the lines before the cut import");
    assert_eq!(
        s[0].warnings.len(),
        1 + usize::from(cut.lines().count() >= 15)
    );
    let first_line = text.lines().next().expect("a line");
    let e = import("cut.jsonl", &first_line[..40], None).expect_err("nothing to read");
    assert!(
        matches!(
            e,
            ImportError::Truncated { .. } | ImportError::NotJson { .. }
        ),
        "{e}"
    );
}

#[test]
fn json_of_another_shape_is_a_clear_error() {
    for rel in ["bad/package.json", "bad/other.jsonl"] {
        let e = error_of(rel, None);
        assert!(matches!(e, ImportError::Unrecognised { .. }), "{rel}: {e}");
        assert!(e.to_string().contains("unrecognised transcript"), "{e}");
    }
    let e = error_of("bad/notes.txt", None);
    assert!(matches!(e, ImportError::NotJson { .. }), "{e}");
    // A format asked for that the file is not.
    let (name, text) = fixture("codex/rollout.jsonl");
    let e = import(&name, &text, Some(Format::ClaudeCode)).expect_err("not claude code");
    assert!(
        matches!(
            e,
            ImportError::WrongShape {
                format: Format::ClaudeCode,
                ..
            }
        ),
        "{e}"
    );
    assert!(e
        .to_string()
        .starts_with("codex/rollout.jsonl: not a claude-code transcript"));
    let (name, text) = fixture("claude-code/branches.jsonl");
    for f in [
        Format::Codex,
        Format::CodexLegacy,
        Format::MiniSweAgent,
        Format::SweAgent,
        Format::OpenHands,
    ] {
        let e = import(&name, &text, Some(f)).expect_err("not that format");
        assert!(
            matches!(
                e,
                ImportError::WrongShape { .. } | ImportError::NotJson { .. }
            ),
            "{f}: {e}"
        );
    }
    let e = error_of("bad/package.json", Some(Format::SweAgent));
    assert!(matches!(e, ImportError::WrongShape { .. }), "{e}");
}

#[test]
fn every_line_bad_is_an_error_naming_the_first() {
    let e = import(
        "junk.jsonl",
        "{nope\n{\"a\": \n[1]\n",
        Some(Format::ClaudeCode),
    )
    .expect_err("nothing readable");
    assert!(
        matches!(
            e,
            ImportError::NoRecords {
                skipped: 3,
                first_line: 1,
                ..
            }
        ),
        "{e}"
    );
    assert!(e
        .to_string()
        .starts_with("junk.jsonl: no readable record; all 3 non-empty lines were skipped"));
}

#[test]
fn a_file_of_8_lines_with_5_skipped_says_5_of_8() {
    // Three records that hold no turn (a summary and two snapshots), five bad lines.
    let text = concat!(
        "{\"type\": \"summary\", \"summary\": \"s\", \"leafUuid\": \"x\"}\n",
        "{nope\n",
        "{\"type\": \"file-history-snapshot\", \"messageId\": \"m\", \"snapshot\": {}}\n",
        "[1]\n",
        "{\"a\": 1}\n",
        "{\"type\": \"file-history-snapshot\", \"messageId\": \"n\", \"snapshot\": {}}\n",
        "{\"b\": 2}\n",
        "\"text\"\n",
    );
    let e = import("eight.jsonl", text, Some(Format::ClaudeCode)).expect_err("nothing readable");
    assert_eq!(
        e.to_string(),
        "eight.jsonl: no readable record; 5 of 8 non-empty lines were skipped, the other 3 hold no conversation (line 2: skipped: malformed json (key must be a string))"
    );
}

#[test]
fn invalid_utf8_is_read_with_a_warning() {
    let (name, text) = fixture("claude-code/branches.jsonl");
    let mut bytes = text.into_bytes();
    let at = bytes.iter().position(|&b| b == b'v').expect("a v");
    bytes[at] = 0xff;
    let sessions = import_bytes(&name, &bytes, None).expect("imports");
    let line = 1 + bytes[..at].iter().filter(|b| **b == b'\n').count();
    let w = &sessions[0].warnings[0];
    assert_eq!(w.line, line);
    assert_eq!(
        w.message,
        "not skipped: invalid utf-8 read as U+FFFD; the line is kept"
    );
    assert!(!sessions[0]
        .warnings
        .iter()
        .any(|w| w.message.starts_with("skipped")));
}

#[test]
fn sessions_serialise() {
    let s = one("claude-code/parallel.jsonl");
    let json = serde_json::to_string(&s).expect("serialises");
    let back: ImportedSession = serde_json::from_str(&json).expect("deserialises");
    assert_eq!(back.messages.len(), s.messages.len());
    assert_eq!(back.requests, s.requests);
    assert_eq!(back.format, Format::ClaudeCode);
    assert!(json.contains("\"format\":\"claude-code\""));
}

// ---------------------------------------------------------------- when, where, which model

/// The in-repository real sessions (`tests/fixtures/real-sessions`).
fn real(rel: &str) -> ImportedSession {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/real-sessions")
        .join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    import(rel, &text, None)
        .unwrap_or_else(|e| panic!("{e}"))
        .remove(0)
}

#[test]
fn sessions_keep_their_start_end_folder_and_model() {
    let c = real("claude-code/-Users-dain-workspace-claude-code-log-sample/937c6e6b-27e7-4edd-86f1-ad28f9731841.jsonl");
    // 2025-07-17T10:50:04.055Z, the first record.
    assert_eq!(c.started_ms, Some(1_752_749_404_055));
    assert!(c.ended_ms.unwrap() > c.started_ms.unwrap());
    assert_eq!(
        c.cwd.as_deref(),
        Some("/Users/dain/workspace/claude-code-log")
    );
    assert_eq!(c.model(), Some("claude-sonnet-4-20250514"));
    assert!(c
        .requests
        .iter()
        .all(|r| r.model.as_deref() == Some("claude-sonnet-4-20250514")));

    let x = real("codex/Hoper-J_cpolar-connect/rollout-2025-09-16T14-12-31-613a9a68-8816-40b2-a2d4-041ade599da6.jsonl");
    // 2025-09-16T06:12:31.309Z, the own session_meta line.
    assert_eq!(x.started_ms, Some(1_758_003_151_309));
    assert_eq!(
        x.cwd.as_deref(),
        Some("/Users/home/Downloads/CpolarAutoUpdater")
    );

    // The model of a Codex request: the `turn_context` before it.
    let r = one("codex/rollout.jsonl");
    assert_eq!(r.model(), Some("gpt-5-codex"));
    assert!(!r.requests.is_empty());
    assert!(r
        .requests
        .iter()
        .all(|q| q.model.as_deref() == Some("gpt-5-codex")));
    assert_eq!(r.cwd.as_deref(), Some("/home/dev/proj"));
    assert_eq!(r.started_ms, Some(1_759_320_000_000)); // 2025-10-01T12:00:00Z
}

#[test]
fn a_recorded_usage_past_any_window_is_a_warning_not_a_figure() {
    let (_, text) = fixture("claude-code/parallel.jsonl");
    let text = text.replacen(
        "\"input_tokens\": 4,",
        "\"input_tokens\": 18446744073709551615,",
        1,
    );
    assert!(text.contains("18446744073709551615"), "the fixture changed");
    let s = &import("huge.jsonl", &text, None).expect("imports")[0];
    assert_eq!(s.requests[0].usage, None);
    let w: Vec<String> = s.warnings.iter().map(|w| w.to_string()).collect();
    assert!(
        w.iter().any(|w| w.contains(
            "not counted: a recorded usage says input_tokens = 18446744073709551615, more than any real context window"
        )),
        "{w:?}"
    );
}

/// A rollout's head, read without importing it: its id, the sessions it may fork from (the
/// one it names, those whose `session_meta` it replays) and the span of its line timestamps;
/// no span when a line lacks a leading timestamp.
#[test]
fn a_rollouts_head_names_its_id_its_parents_and_its_span() {
    use harness_import::rollout_head;
    let ms = |t: &str| harness_import::timestamp_ms(t).expect("a time");
    let fork = fixture("codex/fork-named.jsonl").1;
    let h = rollout_head(fork.as_bytes());
    assert_eq!(
        h.id.as_deref(),
        Some("0199c000-0000-7000-8000-00000000000c")
    );
    assert_eq!(h.parents, ["0199a000-0000-7000-8000-00000000000a"]);
    let (first, last) = h.span_ms.expect("every line timed");
    assert_eq!(first, ms("2025-10-03T08:00:00.000Z"));
    assert!(last > first);
    // An unnamed fork replays its parent's session_meta: that id is a parent too.
    let replay = fixture("codex/fork.jsonl").1;
    let h = rollout_head(replay.as_bytes());
    assert!(!h.parents.is_empty(), "{h:?}");
    // Damaged lines keep their leading time; a line without one leaves the span unknown.
    let cut: Vec<&str> = fork
        .lines()
        .enumerate()
        .map(|(i, l)| if i % 4 == 2 { &l[..l.len() / 2] } else { l })
        .collect();
    let h = rollout_head(cut.join("\n").as_bytes());
    assert_eq!(h.span_ms.map(|s| s.0), Some(first));
    let h = rollout_head(format!("{fork}\nnot json\n").as_bytes());
    assert_eq!(h.span_ms, None);
    assert_eq!(
        h.id.as_deref(),
        Some("0199c000-0000-7000-8000-00000000000c")
    );
}
