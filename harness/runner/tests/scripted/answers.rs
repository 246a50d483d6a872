//! What the scripted upstream writes: a whole answer and a stream's events, in each dialect, as
//! the APIs' documentation shows them.

use serde_json::{json, Value};

use super::*;

/// An answer's id of its own (`msg_scripted_7`), as the APIs give (an agent may join the blocks
/// of answers with one id).
fn answer_id(prefix: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{prefix}_scripted_{n}")
}

/// A whole answer of `parts`.
pub fn whole(dialect: Dialect, parts: &[Part]) -> Value {
    let calls = parts.iter().any(|p| matches!(p, Part::Call { .. }));
    let usage_a = json!({"input_tokens": 100, "output_tokens": 7});
    match dialect {
        Dialect::Anthropic => {
            let content: Vec<Value> = parts
                .iter()
                .map(|p| match p {
                    Part::Text(t) => json!({"type": "text", "text": t}),
                    Part::Call { id, name, input } => {
                        json!({"type": "tool_use", "id": id, "name": name, "input": input})
                    }
                })
                .collect();
            json!({"id": answer_id("msg"), "type": "message", "role": "assistant",
                "model": "scripted", "content": content,
                "stop_reason": if calls { "tool_use" } else { "end_turn" },
                "stop_sequence": null, "usage": usage_a})
        }
        Dialect::Chat => {
            let text: String = parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            let mut message = json!({"role": "assistant",
                "content": if text.is_empty() { Value::Null } else { json!(text) }});
            if calls {
                message["tool_calls"] = parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::Call { id, name, input } => {
                            Some(json!({"id": id, "type": "function",
                            "function": {"name": name, "arguments": input.to_string()}}))
                        }
                        _ => None,
                    })
                    .collect();
            }
            json!({"id": answer_id("chatcmpl"), "object": "chat.completion", "created": 0,
                "model": "scripted",
                "choices": [{"index": 0, "message": message,
                    "finish_reason": if calls { "tool_calls" } else { "stop" }}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107}})
        }
        Dialect::Responses => {
            json!({"id": answer_id("resp"), "object": "response", "created_at": 0,
                "status": "completed", "model": "scripted", "output": output_items(parts),
                "usage": {"input_tokens": 100, "output_tokens": 7, "total_tokens": 107}})
        }
    }
}

fn output_items(parts: &[Part]) -> Vec<Value> {
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| match p {
            Part::Text(t) => json!({"type": "message", "id": format!("msg_{i}"),
                "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": t, "annotations": []}]}),
            Part::Call { id, name, input } => json!({"type": "function_call",
                "id": format!("fc_{i}"), "call_id": id, "name": name,
                "arguments": input.to_string(), "status": "completed"}),
        })
        .collect()
}

/// The events of a streamed answer of `parts` (name, data).
pub fn events(dialect: Dialect, parts: &[Part]) -> Vec<(Option<&'static str>, String)> {
    let calls = parts.iter().any(|p| matches!(p, Part::Call { .. }));
    let id = answer_id(match dialect {
        Dialect::Anthropic => "msg",
        Dialect::Chat => "chatcmpl",
        Dialect::Responses => "resp",
    });
    let mut out: Vec<(Option<&'static str>, String)> = Vec::new();
    match dialect {
        Dialect::Anthropic => anthropic_events(parts, calls, &id, &mut out),
        Dialect::Chat => chat_events(parts, calls, &id, &mut out),
        Dialect::Responses => responses_events(parts, &id, &mut out),
    }
    out
}

/// The events of a streamed Anthropic answer of `parts` (`calls`: whether it calls a tool).
fn anthropic_events(
    parts: &[Part],
    calls: bool,
    id: &str,
    out: &mut Vec<(Option<&'static str>, String)>,
) {
    let mut ev = |name: &'static str, v: Value| out.push((Some(name), v.to_string()));
    ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": id,
        "type": "message", "role": "assistant", "content": [], "model": "scripted",
        "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 100, "output_tokens": 1}}}),
    );
    for (i, p) in parts.iter().enumerate() {
        match p {
            Part::Text(t) => {
                ev(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "text", "text": ""}}),
                );
                ev("ping", json!({"type": "ping"}));
                ev(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i,
                    "delta": {"type": "text_delta", "text": t}}),
                );
            }
            Part::Call { id, name, input } => {
                ev(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                );
                // The input in two pieces of partial JSON.
                let s = input.to_string();
                let mid = s.len() / 2;
                for piece in [&s[..mid], &s[mid..]] {
                    ev(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": piece}}),
                    );
                }
            }
        }
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": i}),
        );
    }
    ev(
        "message_delta",
        json!({"type": "message_delta",
        "delta": {"stop_reason": if calls { "tool_use" } else { "end_turn" }, "stop_sequence": null},
        "usage": {"output_tokens": 7}}),
    );
    ev("message_stop", json!({"type": "message_stop"}));
}

/// The events of a streamed Chat answer of `parts` (`calls`: whether it calls a tool).
fn chat_events(
    parts: &[Part],
    calls: bool,
    id: &str,
    out: &mut Vec<(Option<&'static str>, String)>,
) {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": id, "object": "chat.completion.chunk",
            "created": 0, "model": "scripted",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    out.push((
        None,
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
    ));
    let mut n = 0;
    for p in parts {
        match p {
            Part::Text(t) => out.push((None, chunk(json!({"content": t}), Value::Null))),
            Part::Call { id, name, input } => {
                out.push((
                    None,
                    chunk(
                        json!({"tool_calls": [{"index": n, "id": id, "type": "function",
                        "function": {"name": name, "arguments": ""}}]}),
                        Value::Null,
                    ),
                ));
                out.push((
                    None,
                    chunk(
                        json!({"tool_calls": [{"index": n,
                        "function": {"arguments": input.to_string()}}]}),
                        Value::Null,
                    ),
                ));
                n += 1;
            }
        }
    }
    out.push((
        None,
        chunk(json!({}), json!(if calls { "tool_calls" } else { "stop" })),
    ));
    out.push((None, "[DONE]".to_string()));
}

/// The events of a streamed Responses answer of `parts`.
fn responses_events(parts: &[Part], id: &str, out: &mut Vec<(Option<&'static str>, String)>) {
    let mut seq = 0u64;
    let mut ev = |name: &'static str, mut v: Value| {
        v["type"] = json!(name);
        v["sequence_number"] = json!(seq);
        seq += 1;
        out.push((Some(name), v.to_string()));
    };
    let head = json!({"id": id, "object": "response", "created_at": 0,
        "status": "in_progress", "model": "scripted", "output": []});
    ev("response.created", json!({"response": head}));
    ev("response.in_progress", json!({"response": head}));
    let items = output_items(parts);
    for (i, (p, item)) in parts.iter().zip(&items).enumerate() {
        let id = item["id"].clone();
        match p {
            Part::Text(t) => {
                let mut added = item.clone();
                added["status"] = json!("in_progress");
                added["content"] = json!([]);
                ev(
                    "response.output_item.added",
                    json!({"output_index": i, "item": added}),
                );
                ev(
                    "response.content_part.added",
                    json!({"item_id": id, "output_index": i, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}}),
                );
                ev(
                    "response.output_text.delta",
                    json!({"item_id": id, "output_index": i, "content_index": 0, "delta": t}),
                );
                ev(
                    "response.output_text.done",
                    json!({"item_id": id, "output_index": i, "content_index": 0, "text": t}),
                );
                ev(
                    "response.content_part.done",
                    json!({"item_id": id, "output_index": i, "content_index": 0,
                    "part": {"type": "output_text", "text": t, "annotations": []}}),
                );
            }
            Part::Call { input, .. } => {
                let mut added = item.clone();
                added["status"] = json!("in_progress");
                added["arguments"] = json!("");
                ev(
                    "response.output_item.added",
                    json!({"output_index": i, "item": added}),
                );
                ev(
                    "response.function_call_arguments.delta",
                    json!({"item_id": id, "output_index": i, "delta": input.to_string()}),
                );
                ev(
                    "response.function_call_arguments.done",
                    json!({"item_id": id, "output_index": i, "arguments": input.to_string()}),
                );
            }
        }
        ev(
            "response.output_item.done",
            json!({"output_index": i, "item": item}),
        );
    }
    let mut done = head.clone();
    done["status"] = json!("completed");
    done["output"] = Value::Array(items);
    done["usage"] = json!({"input_tokens": 100, "output_tokens": 7, "total_tokens": 107});
    ev("response.completed", json!({"response": done}));
}
