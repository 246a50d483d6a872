//! The sim behind a real agent's requests (`harness_core::upstream`), with specs read by
//! `harness-config`: conversations as an agent sends them, in its own vocabulary, read back
//! into the sim's request.

use std::sync::Arc;

use harness_config::spec;
use harness_core::judge::Judge;
use harness_core::sim::SimConfig;
use harness_core::upstream::{AgentRequest, Answer, AnswerKind, SimUpstream};
use harness_core::upstream::{ClaudeCodeTools, CodexTools, MiniText};
use harness_core::{Message, Role, ToolCall, ToolSpec};
use serde_json::json;

const SPEC: &str = r#"name: two
repo: fixtures/x
turns:
  - user: "look at a"
    unit: a
    script:
      - read_file: { path: a.py }
        expect: "A = 1"
      - say: "seen: the A setting in a.py"
  - user: "now use it"
    unit: a
    needs: [{ fact: "A = 1", cue: "A" }]
    script:
      - edit_file: { path: a.py, old: "A = 1", new: "A = 2" }
      - say: "done"
checks:
  - file_contains: { path: a.py, text: "A = 2" }
"#;

const CLAUDE_SYSTEM: &str =
    "You are Claude Code.\n# Environment\n - Primary working directory: /w/repo\n";

/// A sim that always tries to get a missing fact back: an archive read first, then re-runs,
/// re-reads and the workspace search (these tests follow the calls, not the profile's draws).
fn always_recovers() -> harness_core::behaviour::SimBehaviour {
    harness_core::behaviour::SimBehaviour::ordered(harness_core::behaviour::Means {
        archive: 0.4,
        rerun: 0.3,
        reread: 0.2,
        search: 0.1,
    })
}

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

fn upstream() -> SimUpstream {
    SimUpstream::new(
        Arc::new(spec::load("t.yaml", SPEC).unwrap()),
        SimConfig {
            seed: 1,
            recheck: 0.0,
            judge: Judge::Oracle,
            behaviour: always_recovers(),
        },
        vec![&ClaudeCodeTools, &CodexTools, &MiniText],
    )
}

/// A stand-in for an agent: it keeps its conversation as the wire layer hands it over and runs
/// the calls it is sent against a file table.
struct Agent {
    system: String,
    tools: Vec<ToolSpec>,
    messages: Vec<Arc<Message>>,
}

impl Agent {
    fn claude() -> Agent {
        Agent {
            system: CLAUDE_SYSTEM.into(),
            tools: tools(&["Agent", "Bash", "Edit", "Read", "Write"]),
            messages: Vec::new(),
        }
    }

    fn ask(&self, up: &mut SimUpstream) -> Answer {
        up.answer(&AgentRequest {
            system: &self.system,
            tools: &self.tools,
            messages: &self.messages,
        })
    }

    fn say(&mut self, text: &str) {
        self.messages.push(Message::user(0, text, None));
    }

    /// Appends the answer and a result per call from `run`.
    fn take(&mut self, a: &Answer, run: impl Fn(&ToolCall) -> String) {
        self.messages
            .push(Message::assistant(0, a.text.clone(), a.calls.clone()));
        for c in &a.calls {
            self.messages
                .push(Message::tool_result(0, c, run(c), false));
        }
    }
}

fn claude_read(c: &ToolCall) -> String {
    assert_eq!(c.name, "Read", "{c:?}");
    assert_eq!(c.args["file_path"], json!("/w/repo/a.py"));
    "1\tA = 1\n2\t".into()
}

#[test]
fn a_claude_code_session_is_answered_in_its_vocabulary() {
    let mut up = upstream();
    let mut agent = Agent::claude();
    agent.say("<system-reminder>git status: clean</system-reminder>\nlook at a");
    let a = agent.ask(&mut up);
    assert_eq!(a.kind, AnswerKind::Turn);
    agent.take(&a, claude_read);
    let a = agent.ask(&mut up);
    assert_eq!(
        (a.text.as_str(), a.calls.len()),
        ("seen: the A setting in a.py", 0)
    );
    agent.take(&a, |_| unreachable!());
    agent.say("now use it");
    let a = agent.ask(&mut up);
    assert_eq!(a.calls[0].name, "Edit");
    assert_eq!(
        a.calls[0].args,
        json!({"file_path": "/w/repo/a.py", "old_string": "A = 1", "new_string": "A = 2"})
    );
    // The read's expect was met: nothing missed.
    assert!(up.exchanges().iter().all(|e| e.expect_missed.is_empty()));
    assert_eq!(up.exchanges()[2].turn, 2);
}

#[test]
fn a_trimmed_result_is_read_again_and_a_folded_one_grepped_from_its_archive() {
    // Turn 2 arrives after a proxy trimmed turn 1's result: the sim reads again the file its
    // closing message names.
    let mut up = upstream();
    let mut agent = Agent::claude();
    agent.say("look at a");
    let a = agent.ask(&mut up);
    agent.take(&a, claude_read);
    let a = agent.ask(&mut up);
    agent.take(&a, |_| unreachable!());
    agent.say("now use it");
    let mut trimmed = agent.messages.clone();
    trimmed.retain(|m| m.role != Role::Tool);
    trimmed.retain(|m| m.tool_calls.is_empty());
    let a = up.answer(&AgentRequest {
        system: &agent.system,
        tools: &agent.tools,
        messages: &trimmed,
    });
    assert_eq!(a.calls[0].name, "Read", "{a:?}");

    // The same turn after a fold of turn 1: a grep of the archive through Bash.
    let mut up = upstream();
    let mut agent = Agent::claude();
    agent.say("look at a");
    let a = agent.ask(&mut up);
    agent.take(&a, claude_read);
    let a = agent.ask(&mut up);
    agent.take(&a, |_| unreachable!());
    let folded = vec![
        Message::user(
            0,
            "[fold] turn 1 folded by the host. Archive: .foldbench/archive/fold-turns-001-001.txt (sha256 00ff)\nUser messages, word for word:\n  turn 1: \"look at a\"\nClosing message (turn 1):\nseen: the A setting in a.py",
            None,
        ),
        Message::user(0, "now use it", None),
    ];
    let a = up.answer(&AgentRequest {
        system: &agent.system,
        tools: &agent.tools,
        messages: &folded,
    });
    assert_eq!(a.calls[0].name, "Bash", "{a:?}");
    assert_eq!(
        a.calls[0].args["command"],
        json!("grep -rnE --exclude-dir=.git -- 'A' '.foldbench/archive/fold-turns-001-001.txt'")
    );
}

#[test]
fn a_card_is_answered_with_fold_unit_and_a_repeat_gets_the_same_answer() {
    let spec = r#"name: three
repo: fixtures/x
turns:
  - user: "look at a"
    unit: a
    script:
      - say: "seen"
  - user: "something else now"
    unit: b
    script:
      - say: "done"
checks: []
"#;
    let mut up = SimUpstream::new(
        Arc::new(spec::load("t.yaml", spec).unwrap()),
        SimConfig {
            seed: 1,
            recheck: 0.0,
            judge: Judge::Oracle,
            behaviour: always_recovers(),
        },
        vec![&ClaudeCodeTools, &CodexTools, &MiniText],
    );
    let mut agent = Agent::claude();
    agent.tools.extend(tools(&["fold_unit"]));
    agent.say("look at a");
    let a = agent.ask(&mut up);
    agent.take(&a, |_| unreachable!());
    let card = harness_core::fold::render_card(&[harness_core::TurnInfo {
        turn: 1,
        tokens: 10,
        paths: Vec::new(),
        user: "look at a".into(),
        tool_calls: 0,
    }]);
    agent.say(&format!("something else now\n\n{card}"));
    let a = agent.ask(&mut up);
    assert_eq!(a.calls.len(), 1);
    assert_eq!(
        (a.calls[0].name.as_str(), &a.calls[0].args),
        ("fold_unit", &json!({"from": 1, "to": 1}))
    );
    let again = agent.ask(&mut up);
    assert_eq!(again, a, "a retry is answered as before");
    assert!(up.exchanges()[2].repeated);
}

#[test]
fn summaries_and_side_requests() {
    let mut up = upstream();
    let mut agent = Agent::claude();
    // A request outside the task (a title, a quota probe).
    agent.say("Write a 5-word title for this conversation.");
    let a = agent.ask(&mut up);
    assert_eq!(a.kind, AnswerKind::Side);
    let mut agent = Agent::claude();
    agent.say("look at a");
    let a = agent.ask(&mut up);
    agent.take(&a, claude_read);
    let a = agent.ask(&mut up);
    agent.take(&a, |_| unreachable!());
    agent.say(harness_core::COMPACTION_PROMPT);
    let a = agent.ask(&mut up);
    assert_eq!(a.kind, AnswerKind::Summary);
    assert!(
        a.text.contains("- user (turn 1): \"look at a\""),
        "{}",
        a.text
    );
    assert!(a.text.contains("- assistant (turn 1): seen"), "{}", a.text);
    // The summary, sent back in place of the turns, is the host's, not a prompt.
    let after = vec![
        Message::user(0, a.text.clone(), None),
        Message::user(0, "now use it", None),
    ];
    let b = up.answer(&AgentRequest {
        system: &agent.system,
        tools: &agent.tools,
        messages: &after,
    });
    assert_eq!(up.exchanges().last().map(|e| e.turn), Some(2));
    // The summary drops tool outputs: the fact is gone, so the file the closing message names
    // is read again.
    assert_eq!(b.calls[0].name, "Read");
}

#[test]
fn mini_swe_agent_gets_text_and_its_observations_are_read_as_results() {
    let mut up = upstream();
    let system = "Your response must contain exactly ONE bash code block (```mswea_bash_command).";
    let mut msgs = vec![Message::user(
        0,
        "Please solve this issue: look at a\n\nYou can execute bash commands",
        None,
    )];
    let ask = |up: &mut SimUpstream, msgs: &[Arc<Message>]| {
        up.answer(&AgentRequest {
            system,
            tools: &[],
            messages: msgs,
        })
    };
    let a = ask(&mut up, &msgs);
    assert!(a.calls.is_empty());
    assert!(
        a.text
            .ends_with("```mswea_bash_command\ncat -- 'a.py'\n```"),
        "{}",
        a.text
    );
    msgs.push(Message::assistant(0, a.text.clone(), Vec::new()));
    msgs.push(Message::user(
        0,
        "<returncode>0</returncode>\n<output>\nA = 1\n</output>",
        None,
    ));
    let a = ask(&mut up, &msgs);
    assert_eq!(
        a.text,
        "seen: the A setting in a.py\n\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
    );
    msgs.push(Message::assistant(0, a.text.clone(), Vec::new()));
    msgs.push(Message::user(
        0,
        "The user added a new task: now use it",
        None,
    ));
    let a = ask(&mut up, &msgs);
    // The fact was in the observation: straight to the edit, by a shell command.
    assert!(a.text.contains("python3 - <<'FOLDBENCH_EOF'"), "{}", a.text);
    assert!(up.exchanges().iter().all(|e| e.expect_missed.is_empty()));
}

#[test]
fn an_expect_the_agents_tool_did_not_show_is_recorded() {
    let mut up = upstream();
    let mut agent = Agent::claude();
    agent.say("look at a");
    let a = agent.ask(&mut up);
    agent.take(&a, |_| "(file truncated)".into());
    agent.ask(&mut up);
    let e = &up.exchanges()[1];
    assert_eq!(
        e.expect_missed,
        vec![("sim-1-1".to_string(), "A = 1".to_string())]
    );
}
