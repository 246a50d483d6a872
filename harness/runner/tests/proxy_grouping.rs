//! A conversation's grouping going on from the last request's changes nothing it sends: the
//! same requests through a conversation that groups only what was appended and through one that
//! groups every request whole give the same upstream bodies, records and events, under `none`,
//! `trim` and `fold`, with the cache breakpoint moving and an earlier message rewritten by the
//! agent.

use harness_runner::proxy::{decode, Conversation, Step};
use harness_wire::Api;
use serde_json::{json, Value};

fn result_text(step: usize) -> String {
    (0..40)
        .map(|i| format!("line {i} of file {step}: let value_{i} = compute({step}, {i});\n"))
        .collect()
}

/// The messages before request `step`: tool calls and results, a closing answer and a new
/// prompt every fourth step, the breakpoint on the last block; from `rewrite` on, the agent's
/// copy of step 1's result is rewritten (as an agent that edits its history would).
fn messages(step: usize, rewrite: usize) -> Vec<Value> {
    let mut m = vec![json!({"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>context</system-reminder>"},
        {"type": "text", "text": "fix the failing test"},
    ]})];
    for k in 0..step {
        if k % 4 == 3 {
            m.push(json!({"role": "assistant", "content": [{"type": "text", "text": format!("part {k} done")}]}));
            m.push(json!({"role": "user", "content": [{"type": "text", "text": format!("now part {}", k + 1)}]}));
        } else {
            let id = format!("toolu_{k}");
            let text = if k == 1 && step >= rewrite {
                "rewritten by the agent".to_string()
            } else {
                result_text(k)
            };
            m.push(json!({"role": "assistant", "content": [
                {"type": "text", "text": format!("reading {k}")},
                {"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": format!("src/f{k}.rs")}},
            ]}));
            m.push(json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": text},
                {"type": "text", "text": "<system-reminder>beside the result</system-reminder>"},
            ]}));
        }
    }
    if let Some(b) = m
        .last_mut()
        .and_then(|l| l["content"].as_array_mut())
        .and_then(|c| c.last_mut())
    {
        b["cache_control"] = json!({"type": "ephemeral"});
    }
    m
}

fn body(step: usize, rewrite: usize) -> Vec<u8> {
    json!({
        "model": "claude-x", "max_tokens": 1000,
        "system": [{"type": "text", "text": "You are an agent.\nPrimary working directory: /tmp/x"}],
        "tools": [{"name": "Read", "description": "reads", "input_schema": {"type": "object"}}],
        "messages": messages(step, rewrite),
    })
    .to_string()
    .into_bytes()
}

/// One request through a conversation (`whole`: its last grouping forgotten first): the
/// upstream bodies it sends (a compaction's summary answered with a fixed text) and the record of
/// the last.
fn through(conv: &mut Conversation, body: &[u8], whole: bool) -> Vec<String> {
    let mut out = Vec::new();
    let req = decode(Api::Anthropic, body).expect("the body decodes");
    assert!(conv.continues(&req), "the history continues");
    if whole {
        conv.forget_grouping();
    }
    let splices = conv.read(&req);
    let turn = conv.turn();
    for p in &splices {
        let applied = conv.apply_splice(p, turn.saturating_sub(1), Ok(()));
        out.push(format!("splice {:?}", applied.map(|m| m.text.clone())));
    }
    loop {
        match conv.plan(Api::Anthropic, &req.env, &req) {
            Step::Send(o) => {
                out.push(String::from_utf8(o.body).expect("UTF-8"));
                out.push(format!("{:?}", o.record));
                return out;
            }
            Step::Compact { body, record, .. } => {
                out.push(String::from_utf8(body).expect("UTF-8"));
                conv.compacted("the summary", &record, 3);
            }
        }
    }
}

#[test]
fn grouping_only_what_was_appended_sends_what_grouping_every_request_whole_sends() {
    for policy in ["none", "trim", "fold"] {
        let spec = policies::parse_policy(policy).expect("a policy");
        let make = |spec: policies::PolicySpec| {
            Conversation::new(Box::new(move || policies::build(&spec, 4_000))).expect("builds")
        };
        let (mut appended, mut whole) = (make(spec.clone()), make(spec.clone()));
        for step in 0..16 {
            let b = body(step, 9);
            let a = through(&mut appended, &b, false);
            let w = through(&mut whole, &b, true);
            assert_eq!(a, w, "{policy}, request {step}");
        }
        let events = |c: &Conversation| serde_json::to_string(&c.events).expect("events");
        assert_eq!(events(&appended), events(&whole), "{policy}: events");
        assert!(!appended.events.is_empty());
    }
}
