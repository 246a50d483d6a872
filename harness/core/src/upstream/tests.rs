use serde_json::json;

use super::vocab::*;
use super::*;

/// The real agents' vocabularies, in the order of the runner's list of agents.
pub(super) const AGENTS: &[&dyn ToolVocabulary] = &[&ClaudeCodeTools, &CodexTools, &MiniText];

fn tools(names: &[&str]) -> Vec<ToolSpec> {
    names
        .iter()
        .map(|n| ToolSpec {
            name: n.to_string(),
            description: String::new(),
            parameters: json!({}),
        })
        .collect()
}

fn call(name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: "sim-1-1".into(),
        name: name.into(),
        args,
    }
}

#[test]
fn the_vocabulary_comes_from_the_tools_offered() {
    let of = |names: &[&str], system: &str| super::vocab::of(AGENTS, &tools(names), system).name();
    assert_eq!(
        of(&["Agent", "Bash", "Edit", "Read", "Write"], ""),
        "claude-code"
    );
    assert_eq!(
        of(&["exec_command", "apply_patch", "write_stdin"], ""),
        "codex"
    );
    assert_eq!(
        of(&["read_file", "grep", "shell", "fold_unit"], ""),
        "foldbench"
    );
    assert_eq!(of(&[], "one ```mswea_bash_command block"), "mini-swe-agent");
    assert_eq!(of(&["fold_unit"], "no tools of its own"), "mini-swe-agent");
}

#[test]
fn claude_code_gets_absolute_paths_and_bash_for_what_it_lacks() {
    let shown = |_: &str| None;
    let t = tools(&["Bash", "Read", "Edit", "Write"]);
    let at = Surroundings {
        cwd: Some("/w/repo"),
        tools: &t,
        shown: &shown,
    };
    let w = |c: ToolCall| match write_call(&ClaudeCodeTools, &c, &at) {
        Written::Call(c) => (c.name, c.args),
        Written::Command(c) => panic!("a command: {c}"),
    };
    assert_eq!(
        w(call("read_file", json!({"path": "src/a.py"}))),
        ("Read".into(), json!({"file_path": "/w/repo/src/a.py"}))
    );
    assert_eq!(
        w(call(
            "edit_file",
            json!({"path": "a.py", "old": "A = 1", "new": "A = 2"})
        )),
        (
            "Edit".into(),
            json!({"file_path": "/w/repo/a.py", "old_string": "A = 1", "new_string": "A = 2"})
        )
    );
    let (name, args) = w(call(
        "grep",
        json!({"pattern": "A\\ =\\ 1\\#", "path": "src"}),
    ));
    assert_eq!(name, "Bash");
    assert_eq!(
        args["command"],
        json!("grep -rnE --exclude-dir=.git -- 'A\\ =\\ 1#' 'src'")
    );
    // The host's tools go out as the sim wrote them.
    let fold = call("fold_unit", json!({"from": 1, "to": 2}));
    assert_eq!(
        write_call(&ClaudeCodeTools, &fold, &at),
        Written::Call(fold.clone())
    );
    // With a Grep tool offered, Grep.
    let t = tools(&["Bash", "Grep"]);
    let at = Surroundings {
        cwd: Some("/w/repo"),
        tools: &t,
        shown: &shown,
    };
    match write_call(
        &ClaudeCodeTools,
        &call("grep", json!({"pattern": "x"})),
        &at,
    ) {
        Written::Call(c) => assert_eq!(c.name, "Grep"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn codex_patches_whole_lines_it_has_seen_and_edits_by_shell_otherwise() {
    let t = tools(&["exec_command", "apply_patch"]);
    let seen = |p: &str| (p == "cfg.py").then(|| "A = 1  # one\nB = 2\n".to_string());
    let at = Surroundings {
        cwd: None,
        tools: &t,
        shown: &seen,
    };
    let edit = |path: &str| {
        call(
            "edit_file",
            json!({"path": path, "old": "A = 1  #", "new": "A = 7  #"}),
        )
    };
    match write_call(&CodexTools, &edit("cfg.py"), &at) {
        Written::Call(c) => {
            assert_eq!(c.name, "apply_patch");
            assert_eq!(
                c.args["input"],
                json!("*** Begin Patch\n*** Update File: cfg.py\n@@\n-A = 1  # one\n+A = 7  # one\n*** End Patch\n")
            );
        }
        other => panic!("{other:?}"),
    }
    match write_call(&CodexTools, &edit("other.py"), &at) {
        Written::Call(c) => {
            assert_eq!(c.name, "exec_command");
            let cmd = c.args["cmd"].as_str().unwrap();
            assert!(cmd.starts_with("python3 - <<'FOLDBENCH_EOF'\n"), "{cmd}");
            assert!(
                cmd.contains("old, new = \"A = 1  #\", \"A = 7  #\""),
                "{cmd}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn patches_cover_the_lines_an_edit_touches() {
    let text = "# Changes\n\nold line\nlast\n";
    assert_eq!(
        update_patch("c.md", text, "# Changes\n", "# Changes\n\n- new\n").as_deref(),
        Some("*** Begin Patch\n*** Update File: c.md\n@@\n-# Changes\n+# Changes\n+\n+- new\n*** End Patch\n")
    );
    assert_eq!(
        update_patch("c.md", text, "line\nla", "LINE\nLA").as_deref(),
        Some("*** Begin Patch\n*** Update File: c.md\n@@\n-old line\n-last\n+old LINE\n+LAst\n*** End Patch\n")
    );
    // Not once in the text, or an edit that would join two lines: no patch.
    assert_eq!(update_patch("c.md", "a\na\n", "a", "b"), None);
    assert_eq!(update_patch("c.md", text, "missing", "b"), None);
    assert_eq!(update_patch("c.md", text, "old line\n", "x"), None);
}

#[test]
fn mini_answers_carry_one_command_block() {
    let text = mini_answer("Step sim-1-1: I run this command.", "cat a.py");
    assert_eq!(mini_command(&text), Some("cat a.py"));
    assert_eq!(mini_step(&text), Some("sim-1-1"));
    let edit = shell_command(&call(
        "edit_file",
        json!({"path": "a.md", "old": "x", "new": "```\ny\n```"}),
    ));
    // A fence inside the new text stays inside a JSON literal: the block still ends where it
    // should.
    let text = mini_answer("t", &edit);
    assert_eq!(mini_command(&text), Some(edit.as_str()));
    assert_eq!(
        shell_command(&call(
            "read_file",
            json!({"path": "a b.py", "offset": 3, "limit": 2})
        )),
        "sed -n '3,4p' -- 'a b.py'"
    );
    assert_eq!(sh_quote("it's"), r"'it'\''s'");
}

#[test]
fn cards_and_host_messages_are_told_apart() {
    let (words, card) = split_card("fix it\n\n<fold-card>\nturn 1 · 3 tokens\n</fold-card>");
    assert_eq!(words, "fix it");
    assert_eq!(card, Some("<fold-card>\nturn 1 · 3 tokens\n</fold-card>"));
    assert!(matches!(
        host_kind("[fold] turns 1–2 folded by the host. Archive: .foldbench/archive/fold-turns-001-002.txt (sha256 ab12)"),
        Some(MessageKind::FoldResult { from: 1, to: 2, ref sha256, .. }) if sha256 == "ab12"
    ));
    assert_eq!(
        host_kind("Summary of the conversation so far (tool outputs left out).\n- user"),
        Some(MessageKind::Summary)
    );
    assert_eq!(host_kind("please fix"), None);
}
