//! A text-based agent (mini-swe-agent) through the proxy's conversation: its command blocks
//! are tool calls and the observations after them their results, so a two-turn conversation
//! reads as two turns; `trim` clears the old observations in what goes upstream, written back
//! in the agent's own form, while the agent's history is as it sent it.

use harness_core::Event;
use harness_runner::proxy::{decode, Conversation, Step};
use harness_wire::Api;
use serde_json::{json, Value};

const SYSTEM: &str = "You are a helpful assistant. Answer with one ```mswea_bash_command block.";
const RATE: &str = "MEMBER_RATE = 0.15";

fn answer(step: u32, command: &str) -> Value {
    json!({"role": "assistant",
        "content": format!("Step {step}: I run this command.\n\n```mswea_bash_command\n{command}\n```")})
}

fn observation(code: i32, output: &str) -> Value {
    json!({"role": "user",
        "content": format!("<returncode>{code}</returncode>\n<output>\n{output}\n</output>")})
}

/// Turn 1 (two commands, then the submit), turn 2's prompt and, with `more`, its first command
/// and observation: as mini-swe-agent sends them, the whole history every time.
fn history(more: bool) -> Vec<Value> {
    let mut m = vec![
        json!({"role": "system", "content": SYSTEM}),
        json!({"role": "user", "content": "Please solve this issue: members say their discount is wrong"}),
        answer(1, "cat pricing.py"),
        observation(0, RATE),
        answer(2, "grep -n discount checkout.py"),
        observation(1, "grep: checkout.py: No such file or directory"),
        answer(3, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
        json!({"role": "user", "content": "The user added a new task: now fix the rate"}),
    ];
    if more {
        m.push(answer(4, "sed -n 1,5p pricing.py"));
        m.push(observation(0, "def price(): ..."));
    }
    m
}

fn body(more: bool) -> Vec<u8> {
    json!({"model": "openai/sim", "messages": history(more)})
        .to_string()
        .into_bytes()
}

fn conversation(policy: &str) -> Conversation {
    let spec = policies::parse_policy(policy).expect("a policy");
    Conversation::new(Box::new(move || policies::build(&spec, 200_000))).expect("builds")
}

/// One request through the conversation: the upstream body and its record's tokens and action.
fn send(conv: &mut Conversation, body: &[u8]) -> (Value, u64, Option<String>) {
    let req = decode(Api::Chat, body).expect("the body decodes");
    assert!(conv.continues(&req));
    assert!(
        conv.read(&req).is_empty(),
        "no splices under these policies"
    );
    match conv.plan(Api::Chat, &req.env, &req) {
        Step::Send(o) => (
            serde_json::from_slice(&o.body).expect("JSON"),
            o.record.tokens,
            o.record.action,
        ),
        Step::Compact { .. } => panic!("no compaction here"),
    }
}

fn contents(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            format!(
                "{}: {}",
                m["role"].as_str().unwrap_or(""),
                m["content"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn a_two_turn_mini_conversation_reads_as_two_turns_with_its_commands_as_tool_calls() {
    let mut conv = conversation("none");
    send(&mut conv, &body(false));
    let (up, _, _) = send(&mut conv, &body(true));
    assert_eq!(conv.turn(), 2);
    let turns: Vec<u32> = conv
        .events
        .iter()
        .filter_map(|e| match e {
            Event::TurnStarted { turn, .. } => Some(*turn),
            _ => None,
        })
        .collect();
    assert_eq!(
        turns,
        vec![1, 2],
        "the observations are no turns of their own"
    );
    let calls: Vec<(u32, String, String)> = conv
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall(c) => Some((c.turn, c.name.clone(), c.args.clone())),
            _ => None,
        })
        .collect();
    let cmd = |c: &str| json!({ "command": c }).to_string();
    assert_eq!(
        calls,
        vec![
            (1, "bash".into(), cmd("cat pricing.py")),
            (1, "bash".into(), cmd("grep -n discount checkout.py")),
            (2, "bash".into(), cmd("sed -n 1,5p pricing.py")),
        ],
        "three commands; the submit closes turn 1 and is no call"
    );
    // Under `none` the agent's own messages go upstream as it sent them.
    assert_eq!(up["messages"], json!(history(true)));
}

#[test]
fn trim_clears_old_observations_upstream_in_the_agents_form_and_the_history_is_untouched() {
    let mut none = conversation("none");
    let mut drop = conversation("trim");
    let mut placeholder = conversation("trim:mode=placeholder");
    for c in [&mut none, &mut drop, &mut placeholder] {
        send(c, &body(false));
    }
    let sent = body(true);
    let before = sent.clone();
    let (n, n_tokens, n_action) = send(&mut none, &sent);
    let (d, d_tokens, d_action) = send(&mut drop, &sent);
    let (p, p_tokens, p_action) = send(&mut placeholder, &sent);
    assert_eq!(sent, before, "the agent's request is not changed");
    assert_eq!(n_action, None);
    assert_eq!(d_action.as_deref(), Some("trimmed 2 tool results"));
    assert_eq!(p_action.as_deref(), Some("trimmed 2 tool results"));
    assert!(
        d_tokens < n_tokens && p_tokens < n_tokens,
        "{d_tokens} {p_tokens} {n_tokens}"
    );
    assert!(n.to_string().contains(RATE));
    for (name, up) in [("drop", &d), ("placeholder", &p)] {
        let text = up.to_string();
        assert!(
            !text.contains(RATE),
            "{name}: turn 1's observation is cleared: {text}"
        );
        assert!(!text.contains("No such file"), "{name}: {text}");
        assert!(
            text.contains("def price()"),
            "{name}: turn 2's observation stays"
        );
        for m in up["messages"].as_array().unwrap() {
            assert!(
                matches!(m["role"].as_str(), Some("system" | "user" | "assistant"))
                    && m.get("tool_calls").is_none(),
                "{name}: a text conversation, as the agent speaks it: {m}"
            );
        }
    }
    // drop: the observations leave, the agent's answers (their commands in text) stay.
    assert_eq!(
        contents(&d),
        vec![
            format!("system: {SYSTEM}"),
            "user: Please solve this issue: members say their discount is wrong".to_string(),
            "assistant: Step 1: I run this command.\n\n```mswea_bash_command\ncat pricing.py\n```".to_string(),
            "assistant: Step 2: I run this command.\n\n```mswea_bash_command\ngrep -n discount checkout.py\n```".to_string(),
            "assistant: Step 3: I run this command.\n\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```".to_string(),
            "user: The user added a new task: now fix the rate".to_string(),
            "assistant: Step 4: I run this command.\n\n```mswea_bash_command\nsed -n 1,5p pricing.py\n```".to_string(),
            "user: <returncode>0</returncode>\n<output>\ndef price(): ...\n</output>".to_string(),
        ]
    );
    // placeholder: each observation's place keeps its return code, the output cleared.
    let cleared: Vec<String> = contents(&p)
        .into_iter()
        .filter(|c| c.contains("[output cleared]"))
        .collect();
    assert_eq!(
        cleared,
        vec![
            "user: <returncode>0</returncode>\n<output>\n[output cleared]\n</output>",
            "user: <returncode>1</returncode>\n<output>\n[output cleared]\n</output>",
        ]
    );
    // The next request (the history resent whole, one step more) is trimmed alike.
    let mut longer = history(true);
    longer.push(answer(5, "cat pricing.py"));
    longer.push(observation(0, RATE));
    let (again, _, _) = send(
        &mut placeholder,
        json!({"model": "openai/sim", "messages": longer})
            .to_string()
            .as_bytes(),
    );
    let again = contents(&again);
    assert_eq!(
        again[..p["messages"].as_array().unwrap().len()],
        contents(&p)[..]
    );
    assert_eq!(
        again.last().map(String::as_str),
        Some(format!("user: <returncode>0</returncode>\n<output>\n{RATE}\n</output>").as_str())
    );
}
