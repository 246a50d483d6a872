use super::claude_code::{session_uuid, ClaudeCode};
use super::codex::{codex_config, Codex};
use super::mini_swe_agent::MiniSweAgent;
use super::*;

fn agent(kind: &'static dyn AgentKind) -> Agent {
    Agent {
        kind,
        program: PathBuf::from("/opt/agents/bin/x"),
        version: "1.0".into(),
    }
}

fn settings(turn: u32, session: Option<&str>, native: bool) -> TurnSettings<'_> {
    TurnSettings {
        turn,
        prompt: "fix it",
        base_url: "http://127.0.0.1:47100",
        api_key: "offline",
        model: None,
        home: Path::new("/h"),
        session,
        native,
        max_steps: 80,
    }
}

fn env<'a>(c: &'a TurnCommand, k: &str) -> Option<&'a str> {
    c.env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
}

#[test]
fn agent_names_parse_and_exec_needs_a_command() {
    assert_eq!(parse("claude-code").unwrap().name(), "claude-code");
    assert_eq!(parse("mini-swe-agent").unwrap().name(), "mini-swe-agent");
    let exec = parse("exec:./a.sh --x").unwrap();
    assert_eq!(exec.name(), "exec");
    let cmd = exec.turn_command(Path::new("sh"), &settings(1, None, false));
    assert_eq!(cmd.args, ["-c", "./a.sh --x"]);
    assert!(parse("exec: ")
        .unwrap_err()
        .to_string()
        .contains("needs a command"));
    assert_eq!(
        parse("aider").unwrap_err().to_string(),
        "unknown agent `aider`; use claude-code, codex, mini-swe-agent or exec:CMD"
    );
}

/// Every listed agent: a name of its own that is not `exec`, found through a variable, a turn
/// command pointed at the proxy on turns 1 and 2, a record that says whether its compaction
/// was switched off.
#[test]
fn every_listed_agent_is_complete() {
    let mut names: Vec<&str> = AGENTS.iter().map(|a| a.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), AGENTS.len(), "names are unique");
    for kind in AGENTS {
        let name = kind.name();
        assert!(name != "exec" && !name.contains(':'), "{name}");
        assert!(!matches!(kind.locate(), Locate::Shell), "{name}");
        let a = agent(*kind);
        assert_ne!(a.compaction(false), a.compaction(true), "{name}");
        for turn in [1, 2] {
            let c = a.turn_command(&settings(turn, Some("s-1"), false));
            let points_at_proxy = c.env.iter().any(|(_, v)| v.contains("127.0.0.1:47100"))
                || c.args.iter().any(|v| v.contains("127.0.0.1:47100"));
            // Codex reads the proxy's address from the config.toml its home holds.
            let in_config = codex_config("http://127.0.0.1:47100", None);
            assert!(
                points_at_proxy || (name == "codex" && in_config.contains("47100")),
                "{name} turn {turn}: {c:?}"
            );
            assert_eq!(env(&c, "HOME"), Some("/h"), "{name}");
        }
        assert!(kind.default_upstream().starts_with("https://"), "{name}");
        assert!(kind.key_variable().ends_with("_API_KEY"), "{name}");
        // The offline upstream records the vocabulary it answered in by the agent's name.
        assert_eq!(kind.tools().name(), name);
    }
}

#[test]
fn claude_code_starts_a_named_session_and_resumes_it() {
    let a = agent(&ClaudeCode);
    let id = session_uuid("t/fold/sim/1");
    let first = a.turn_command(&settings(1, Some(&id), false));
    assert_eq!(
        env(&first, "ANTHROPIC_BASE_URL"),
        Some("http://127.0.0.1:47100")
    );
    assert_eq!(env(&first, "DISABLE_AUTO_COMPACT"), Some("1"));
    assert_eq!(env(&first, "HOME"), Some("/h"));
    let args = first.args.join(" ");
    assert!(
        args.starts_with("-p fix it --output-format json --allowedTools Bash Read Edit Write"),
        "{args}"
    );
    assert!(args.ends_with(&format!("--session-id {id}")), "{args}");
    let second = a.turn_command(&settings(2, Some(&id), true));
    assert!(second.args.join(" ").ends_with(&format!("--resume {id}")));
    assert_eq!(
        env(&second, "DISABLE_AUTO_COMPACT"),
        None,
        "native keeps its compaction"
    );
    // A UUID, the same for the same cell.
    assert_eq!(id.len(), 36);
    assert_eq!(id.as_bytes()[14], b'4');
    assert_eq!(id, session_uuid("t/fold/sim/1"));
}

#[test]
fn codex_resumes_its_thread_with_compaction_off() {
    let a = agent(&Codex);
    let first = a.turn_command(&settings(1, None, false));
    let args = first.args.join(" ");
    assert!(args.starts_with("exec --json"), "{args}");
    assert!(
        args.contains("model_auto_compact_token_limit=9223372036854775807"),
        "{args}"
    );
    assert!(args.ends_with("-- fix it"), "{args}");
    let second = a.turn_command(&settings(2, Some("01a2-thread"), true));
    let args = second.args.join(" ");
    assert!(args.starts_with("exec resume --json"), "{args}");
    assert!(args.ends_with("-- 01a2-thread fix it"), "{args}");
    assert!(!args.contains("auto_compact"), "{args}");
    assert_eq!(env(&second, "CODEX_HOME"), Some("/h/.codex"));
    assert!(
        codex_config("http://127.0.0.1:1", None).contains("base_url = \"http://127.0.0.1:1/v1\"")
    );
}

#[test]
fn what_a_turn_printed_is_read() {
    let home = tempfile::tempdir().unwrap();
    let claude = agent(&ClaudeCode);
    let out = "{\"type\":\"result\",\"result\":\"Fixed: 0.20\",\"session_id\":\"abc\",\"is_error\":false}\n";
    assert_eq!(
        claude.read_turn(home.path(), out).unwrap(),
        TurnRead {
            closing: "Fixed: 0.20".into(),
            session: Some("abc".into()),
            error: None
        }
    );
    let err = claude.read_turn(home.path(), "Error: boom").unwrap_err();
    assert!(matches!(err, AgentError::NoJsonResult { .. }), "{err}");
    assert!(err.to_string().contains("no JSON"), "{err}");
    let codex = agent(&Codex);
    std::fs::write(home.path().join("last-message.txt"), "Done.\n").unwrap();
    let out =
        "{\"type\":\"thread.started\",\"thread_id\":\"t-1\"}\n{\"type\":\"turn.completed\"}\n";
    assert_eq!(
        codex.read_turn(home.path(), out).unwrap(),
        TurnRead {
            closing: "Done.".into(),
            session: Some("t-1".into()),
            error: None
        }
    );
    let mini = agent(&MiniSweAgent);
    let out = "This is mini-swe-agent version 2.4.6.\n{\"closing\": \"seen\", \"exit_status\": \"Submitted\"}\n";
    assert_eq!(mini.read_turn(home.path(), out).unwrap().closing, "seen");
    let out = "{\"closing\": \"\", \"exit_status\": \"LimitsExceeded\"}\n";
    assert!(mini
        .read_turn(home.path(), out)
        .unwrap()
        .error
        .unwrap()
        .contains("LimitsExceeded"));
}
