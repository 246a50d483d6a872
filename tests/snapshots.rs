//! Snapshots of the card and of fold results for fixed sessions. A change to their rendering
//! fails here; review it with `cargo insta review`.

use std::sync::Arc;

use harness_core::fold;
use harness_core::Context;
use harness_core::{Message, ToolCall};
use serde_json::json;

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        args,
    }
}

fn push_call(c: &mut Context, turn: u32, k: ToolCall, out: &str) {
    c.push(Message::assistant(turn, "", vec![k.clone()]));
    c.push(Message::tool_result(turn, &k, out, false));
}

/// Three turns: a tool-heavy login fix, a build question, its short continuation.
fn session() -> Context {
    let mut c = Context {
        turn: 1,
        ..Context::default()
    };
    c.push(Message::user(
        1,
        "the login test fails now and then, find out why",
        None,
    ));
    push_call(
        &mut c,
        1,
        call("a1", "read_file", json!({"path": "src/session.py"})),
        "     1\tPORT = 8080",
    );
    push_call(
        &mut c,
        1,
        call(
            "a2",
            "shell",
            json!({"command": "python3 -m unittest tests.test_login"}),
        ),
        "OSError: Address already in use",
    );
    push_call(
        &mut c,
        1,
        call("a3", "grep", json!({"pattern": "8080", "path": "tests"})),
        "tests/test_login.py:4:PORT = 8080",
    );
    push_call(
        &mut c,
        1,
        call(
            "a4",
            "edit_file",
            json!({"path": "src/session.py", "old": "PORT = 8080", "new": "PORT = 0"}),
        ),
        "edited src/session.py",
    );
    push_call(
        &mut c,
        1,
        call("a5", "shell", json!({"command": "python3 -m unittest"})),
        "OK",
    );
    c.push(Message::assistant(
        1,
        "Fixed: both tests bound port 8080; the session now binds port 0.",
        vec![],
    ));
    c.turn = 2;
    c.push(Message::user(2, "the build takes ages, why?", None));
    push_call(
        &mut c,
        2,
        call("b1", "read_file", json!({"path": "build.cfg"})),
        "     1\tOPT_LEVEL = 3",
    );
    c.push(Message::assistant(
        2,
        "The build compiles everything at OPT_LEVEL = 3.",
        vec![],
    ));
    c.turn = 3;
    c.push(Message::user(3, "ok, turn it off", None));
    push_call(
        &mut c,
        3,
        call(
            "c1",
            "edit_file",
            json!({"path": "build.cfg", "old": "OPT_LEVEL = 3", "new": "OPT_LEVEL = 0"}),
        ),
        "edited build.cfg",
    );
    c
}

fn range(c: &Context, from: u32, to: u32) -> Vec<Arc<Message>> {
    let (s, e) = c.turn_range(from, to).unwrap();
    c.messages[s..e].to_vec()
}

fn result(c: &Context, from: u32, to: u32) -> String {
    let msgs = range(c, from, to);
    let bytes = fold::archive_text(from, to, &msgs);
    // The sha256 depends only on the archive text, which is fixed here; the path is redacted.
    let sha = harness_core::sha256_hex(bytes.as_bytes());
    fold::build_result(from, to, &msgs, "[archive]", &sha)
}

#[test]
fn card_for_three_turns() {
    let mut c = session();
    c.turn = 4;
    insta::assert_snapshot!(fold::render_card(&c.live_turns()));
}

#[test]
fn result_of_a_tool_heavy_range() {
    insta::assert_snapshot!(result(&session(), 1, 1));
}

#[test]
fn result_of_a_range_with_several_user_turns() {
    insta::assert_snapshot!(result(&session(), 1, 2));
}

#[test]
fn result_of_a_range_without_a_closing_message() {
    insta::assert_snapshot!(result(&session(), 3, 3));
}

#[test]
fn report_of_a_strategy_branch() {
    use harness_core::policy::ArchiveRef;
    let mut c = session();
    let mut p =
        policies::build(&policies::parse_policy("fold+strategies").unwrap(), 200_000).unwrap();
    c.turn = 3;
    let enter = p.handle_tool(
        &c,
        &call(
            "s1",
            "strategy_request",
            json!({"name": "errand", "goal": "find out why CI is flaky"}),
        ),
    );
    p.handle_tool(
        &c,
        &call(
            "s2",
            "strategy_report",
            json!({"text": "3 failures, all EADDRINUSE"}),
        ),
    );
    p.handle_tool(
        &c,
        &call(
            "s3",
            "strategy_report",
            json!({"text": "tests share port 8080; fix: bind :0"}),
        ),
    );
    p.handle_tool(&c, &call("s4", "strategy_yield", json!({"reason": "done"})));
    let splices = p.end_turn(&c, None);
    let msg = p
        .apply_splice(
            &mut c,
            &splices[0],
            &ArchiveRef {
                path: "[archive]".into(),
                sha256: "[sha256]".into(),
            },
        )
        .unwrap();
    insta::assert_snapshot!(format!("{}\n---\n{}", enter.append[0].text, msg.text));
}

#[test]
fn fold_command_prints_the_result_of_a_transcript() {
    let c = session();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("transcript.jsonl");
    let text: String = c
        .messages
        .iter()
        .map(|m| serde_json::to_string(&**m).unwrap() + "\n")
        .collect();
    std::fs::write(&path, text).unwrap();
    let out = std::process::Command::new(crate::helpers::binary())
        .args(["fold"])
        .arg(&path)
        .args(["--from", "1", "--to", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let printed = String::from_utf8_lossy(&out.stdout);
    let expected =
        result(&c, 1, 2).replace("[archive]", ".foldbench/archive/fold-turns-001-002.txt");
    assert_eq!(printed.trim_end(), expected);
}
