//! A request decoded from where its body differs from the last one
//! (`proxy::conversation::prefix`) is the request decoded whole: the same envelope, items,
//! units and identities, request after request, with new messages appended, an earlier message
//! edited, the cache breakpoint moving, the fields around the items changed, in each API and in
//! any whitespace; what is not read from the prefix (malformed, a field twice, a value nested
//! deep) is what the whole path says. And each request reads only what is new: the items of the
//! unchanged prefix are taken as they were.

use std::sync::Arc;

use harness_runner::proxy::{decode, decode_after, Decoded, Kept, Prefixes};
use harness_wire::Api;
use serde_json::{json, Value};

fn result_text(step: usize) -> String {
    (0..30)
        .map(|i| format!("line {i} of file {step}: let value_{i} = \"q\\u00e9\"; // {step}\n"))
        .collect()
}

/// The messages before request `step` (Anthropic's form): a call and its result per step, a
/// closing answer and a new prompt every fourth, the breakpoint on the last block; from `edit`
/// on, the result of step 1 (item 4) is rewritten; from step 12 on, item 1 is edited in place.
fn messages(step: usize, edit: usize) -> Vec<Value> {
    let mut m = vec![json!({"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>context</system-reminder>"},
        {"type": "text", "text": "fix the failing test"},
    ]})];
    for k in 0..step {
        if k % 4 == 3 {
            m.push(json!({"role": "assistant", "content": format!("part {k} done")}));
            m.push(json!({"role": "user", "content": [{"type": "text", "text": format!("now part {}", k + 1)}]}));
        } else {
            let id = format!("toolu_{k}");
            let text = if k == 1 && step >= edit {
                "rewritten by the agent".to_string()
            } else {
                result_text(k)
            };
            // From step 12 on, the agent's words in item 1 are edited in place, their length
            // the same.
            let reading = if k == 0 && step >= 12 {
                "Reading"
            } else {
                "reading"
            };
            m.push(json!({"role": "assistant", "content": [
                {"type": "text", "text": format!("{reading} {k}")},
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

/// A body with its fields sorted (`max_tokens` before the messages, the rest after them).
fn anthropic(step: usize, edit: usize, tools: usize) -> Value {
    json!({
        "model": "claude-x", "max_tokens": 1000, "stream": true,
        "system": [{"type": "text", "text": "You are an agent.\nPrimary working directory: /tmp/x"}],
        "tools": (0..tools).map(|t| json!({"name": format!("T{t}"), "description": "d", "input_schema": {"type": "object"}})).collect::<Vec<_>>(),
        "metadata": {"user_id": "session-1"},
        "messages": messages(step, edit),
    })
}

/// Everything a decoded request holds, written out to compare.
fn shown(d: &Decoded) -> String {
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}",
        d.env, d.units, d.keys, d.item_keys
    )
}

/// One request decoded after `last`: equal to the whole decoding; returns what it reused.
fn through(last: &mut Option<Kept>, api: Api, body: &[u8], at: &str) -> usize {
    let whole = decode(api, body).expect("the body decodes");
    let d = decode_after(last.take(), api, body).expect("the body decodes");
    assert_eq!(shown(&d.decoded), shown(&whole), "{at}");
    *last = d.kept;
    d.reused
}

fn items_of(v: &Value) -> usize {
    v["messages"]
        .as_array()
        .or_else(|| v["input"].as_array())
        .map_or(0, Vec::len)
}

#[test]
fn each_request_decoded_from_the_last_is_the_request_decoded_whole() {
    for pretty in [false, true] {
        let write = |v: &Value| {
            if pretty {
                serde_json::to_vec_pretty(v).unwrap()
            } else {
                serde_json::to_vec(v).unwrap()
            }
        };
        let mut last = None;
        let mut before = 0;
        for step in 0..14 {
            // Step 9 rewrites an earlier result, step 12 edits an earlier message in place (its
            // length the same); step 11 changes the tools (after the items).
            let v = anthropic(step, 9, if step >= 11 { 3 } else { 2 });
            let reused = through(
                &mut last,
                Api::Anthropic,
                &write(&v),
                &format!("step {step}"),
            );
            let expected = match step {
                0 => 0,
                // The item with the result that was rewritten, and the ones after it, are read.
                9 => 4,
                12 => 1,
                // The breakpoint moved off the last item: it is read again with the new ones.
                _ => before - 1,
            };
            assert_eq!(reused, expected, "pretty {pretty}, step {step}");
            before = items_of(&v);
        }
    }

    // A field before the items changed: nothing is shared, all is read.
    let mut last = None;
    let v = anthropic(6, 99, 2);
    through(
        &mut last,
        Api::Anthropic,
        &serde_json::to_vec(&v).unwrap(),
        "first",
    );
    let mut w = anthropic(7, 99, 2);
    w["max_tokens"] = json!(2000);
    assert_eq!(
        through(
            &mut last,
            Api::Anthropic,
            &serde_json::to_vec(&w).unwrap(),
            "max_tokens"
        ),
        0
    );
    // The same body again: every item is shared.
    let b = serde_json::to_vec(&w).unwrap();
    assert_eq!(
        through(&mut last, Api::Anthropic, &b, "again"),
        items_of(&w)
    );
    // Fewer items (the agent went back): the ones before are shared.
    let x = {
        let mut x = w.clone();
        let m = x["messages"].as_array_mut().unwrap();
        m.truncate(5);
        x
    };
    assert_eq!(
        through(
            &mut last,
            Api::Anthropic,
            &serde_json::to_vec(&x).unwrap(),
            "fewer"
        ),
        5
    );
}

#[test]
fn chat_and_responses_bodies_are_read_from_where_they_differ_too() {
    let chat = |n: usize| {
        let mut m = vec![json!({"role": "system", "content": "be brief"})];
        for k in 0..n {
            m.push(json!({"role": "user", "content": format!("question {k}")}));
            m.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("c{k}"), "type": "function", "function": {"name": "run", "arguments": format!("{{\"cmd\":\"ls {k}\"}}")}}]}));
            m.push(
                json!({"role": "tool", "tool_call_id": format!("c{k}"), "content": result_text(k)}),
            );
        }
        json!({"model": "gpt-x", "messages": m, "tools": [{"type": "function", "function": {"name": "run", "parameters": {"type": "object"}}}], "prompt_cache_key": "s1"})
    };
    let mut last = None;
    for n in 0..6 {
        let v = chat(n);
        let reused = through(
            &mut last,
            Api::Chat,
            &serde_json::to_vec(&v).unwrap(),
            "chat",
        );
        assert_eq!(reused, if n == 0 { 0 } else { 1 + 3 * (n - 1) }, "chat {n}");
    }
    let responses = |n: usize| {
        let mut input = Vec::new();
        for k in 0..n {
            input.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": format!("task {k}")}]}));
            input.push(json!({"type": "function_call", "call_id": format!("c{k}"), "name": "shell", "arguments": "{}"}));
            input.push(json!({"type": "function_call_output", "call_id": format!("c{k}"), "output": result_text(k)}));
        }
        json!({"model": "gpt-x", "instructions": "be brief", "input": input, "stream": true})
    };
    let mut last = None;
    for n in 0..5 {
        let v = responses(n);
        let reused = through(
            &mut last,
            Api::Responses,
            &serde_json::to_vec(&v).unwrap(),
            "responses",
        );
        assert_eq!(reused, 3 * n.saturating_sub(1), "responses {n}");
    }
    // A string input is one user item the whole path makes: read whole, nothing kept.
    let b = br#"{"model":"gpt-x","input":"hello","instructions":"x"}"#;
    let d = decode_after(last.take(), Api::Responses, b).unwrap();
    assert_eq!(
        shown(&d.decoded),
        shown(&decode(Api::Responses, b).unwrap())
    );
    assert!(d.kept.is_none() && d.reused == 0);
}

#[test]
fn what_the_prefix_does_not_read_is_what_the_whole_path_says() {
    let first = serde_json::to_vec(&anthropic(4, 99, 1)).unwrap();
    let kept = || {
        decode_after(None, Api::Anthropic, &first)
            .unwrap()
            .kept
            .expect("kept")
    };
    let next = serde_json::to_string(&anthropic(5, 99, 1)).unwrap();
    let cut = next
        .find(",\"metadata\"")
        .expect("the items end before metadata");
    let (items, tail) = next.split_at(cut);
    let items = items.strip_suffix(']').unwrap();
    let bad = [
        // A new item that is not an object with a role.
        format!("{items},{{\"content\":\"no role\"}}]{tail}"),
        // A new item that is not JSON.
        format!("{items},{{\"role\":\"user\",]{tail}"),
        // A trailing comma in the list.
        format!("{items},]{tail}"),
        // The items field twice.
        format!(
            "{items}]{},\"messages\":[]}}",
            tail.strip_suffix('}').unwrap()
        ),
        // Something after the body.
        format!("{next} x"),
        // A tool list that is not a list.
        format!(
            "{items}]{}",
            tail.replace("\"tools\":[", "\"tools\":{\"x\":[")
                .replace("}]}}", "}]}}}")
        ),
    ];
    for body in &bad {
        let whole = decode(Api::Anthropic, body.as_bytes()).map(|d| shown(&d));
        let after = decode_after(Some(kept()), Api::Anthropic, body.as_bytes());
        match (&whole, &after) {
            (Err(w), Err(a)) => assert_eq!(w.to_string(), a.to_string(), "{body}"),
            (Ok(w), Ok(a)) => {
                assert_eq!(*w, shown(&a.decoded), "{body}");
                assert!(a.kept.is_none(), "{body}");
            }
            _ => panic!(
                "{body}: whole {whole:?}, from the prefix {:?}",
                after.is_ok()
            ),
        }
    }
    // A value nested deeper than the prefix reads alone: decoded whole, as the whole path does.
    let deep = format!(
        "{items},{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"x\",\"extra\":{}1{}}}]}}]{tail}",
        "[".repeat(110),
        "]".repeat(110)
    );
    let whole = decode(Api::Anthropic, deep.as_bytes()).map(|d| shown(&d));
    let after = decode_after(Some(kept()), Api::Anthropic, deep.as_bytes());
    match (&whole, &after) {
        (Ok(w), Ok(a)) => {
            assert_eq!(*w, shown(&a.decoded));
            assert_eq!(a.reused, 0);
        }
        (Err(w), Err(a)) => assert_eq!(w.to_string(), a.to_string()),
        _ => panic!("deep: whole {whole:?}, from the prefix {:?}", after.is_ok()),
    }
}

#[test]
fn a_conversation_keeps_one_body_and_it_goes_with_the_conversation() {
    let prefixes = Prefixes::default();
    let body = |conv: &str, step: usize| {
        let mut v = anthropic(step, 99, 1);
        v["messages"][0]["content"][1]["text"] = json!(format!("{conv}: fix the failing test"));
        serde_json::to_vec(&v).unwrap()
    };
    let (a, b) = (prefixes.slot(), prefixes.slot());
    // Two conversations in turn: each request is read from its own conversation's last.
    for step in 0..6 {
        for (name, slot) in [("a", &a), ("b", &b)] {
            let bytes = body(name, step);
            let d = prefixes.decode(Api::Anthropic, &bytes).unwrap();
            assert_eq!(
                shown(&d.decoded),
                shown(&decode(Api::Anthropic, &bytes).unwrap())
            );
            let n = items_of(&serde_json::from_slice(&bytes).unwrap());
            let last = items_of(&serde_json::from_slice(&body(name, step.max(1) - 1)).unwrap());
            assert_eq!(
                d.reused,
                if step == 0 { 0 } else { last - 1 },
                "{name} {step}"
            );
            slot.keep(d.kept.expect("kept"));
            // One body's items kept, no more.
            assert!(slot.item_bytes() <= bytes.len(), "{name} {step}");
            assert!(n > 0);
        }
    }
    // The conversation is dropped: what it kept goes with it.
    let weak = Arc::downgrade(&a);
    drop(a);
    assert!(weak.upgrade().is_none(), "nothing else holds the slot");
    let d = prefixes.decode(Api::Anthropic, &body("a", 6)).unwrap();
    assert_eq!(d.reused, 0, "the dropped conversation's body is gone");
    let d = prefixes.decode(Api::Anthropic, &body("b", 6)).unwrap();
    assert!(d.reused > 0);
}
