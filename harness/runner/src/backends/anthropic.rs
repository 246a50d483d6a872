//! The `anthropic` backend: the Messages API with tool use and prompt-cache breakpoints.
//!
//! `POST {base}/v1/messages` with `x-api-key` and `anthropic-version: 2023-06-01`; key from
//! `ANTHROPIC_API_KEY`, base URL from `ANTHROPIC_BASE_URL` (default `https://api.anthropic.com`).
//! `max_tokens` is `MAX_TOKENS` (a value every current model accepts) unless the run caps
//! answers (`--max-output-tokens`); `temperature` is sent only when the run sets one
//! (`--temperature`; the API takes 0 to 1).
//!
//! Message mapping ([`body`]): the system prompt is one text block; user and host messages are
//! text blocks ([`Message::visible_text`]); an assistant message is an optional text block and one
//! `tool_use` block per call; a tool result is a `tool_result` block (with `is_error` when the
//! tool failed). Consecutive messages of the same API role are merged into one message (tool
//! results and the host notes that follow them share one `user` message), and in a `user` message
//! the `tool_result` blocks come first, as the API requires. Empty text is sent as
//! `EMPTY_TEXT` (the API rejects empty text blocks).
//!
//! Cache breakpoints (`cache_control: {type: ephemeral}`, at most four):
//! 1. the last tool (tools and system are the stable prefix of every request),
//! 2. the system block,
//! 3. the last block of the last message (the whole request is written to the cache, so the next
//!    step reads it),
//! 4. the block of the last human message when it is not the last block: the message that opened
//!    the current turn. It stays at the same place for every step of the turn, and folds and
//!    compactions replace only what comes before a turn, so it moves as little as they allow.
//!
//! Usage: `input_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens` and
//! `output_tokens` become [`Usage`]'s input, cache read, cache write and output.

use harness_core::{Message, Role};
use harness_core::{Request, Response, Usage};
use serde_json::{json, Map, Value};

use super::{env_value, AnswerError, BackendError, BackendOptions, Endpoint, INVALID_ARGUMENTS};
use crate::backends::model::{Model, ModelFuture};
use harness_core::ToolCall;

/// The default base URL.
pub(crate) const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The API version header sent with every request.
pub(crate) const API_VERSION: &str = "2023-06-01";

/// `max_tokens` of every request.
pub(crate) const MAX_TOKENS: u32 = 4096;

/// The text sent in place of an empty message.
pub(crate) const EMPTY_TEXT: &str = "(empty)";

/// A Claude model over the Messages API.
pub struct AnthropicModel {
    endpoint: Endpoint,
    /// `max_tokens` of every request ([`MAX_TOKENS`] unless the run caps answers).
    max_tokens: u32,
    /// `temperature` of every request (`--temperature`; none sent when `None`).
    temperature: Option<f64>,
}

impl AnthropicModel {
    /// A model named `model` at `base_url` (without `/v1`) with `api_key`. The in-flight cap is
    /// shared by every model on `base_url`.
    pub fn new(
        model: &str,
        base_url: &str,
        api_key: &str,
        opts: &BackendOptions,
    ) -> Result<AnthropicModel, BackendError> {
        if let Some(value) = opts.temperature.filter(|t| *t > 1.0) {
            return Err(BackendError::AnthropicTemperature {
                model: model.to_string(),
                value,
            });
        }
        let key = api_key.trim().to_string();
        let headers = vec![
            ("x-api-key", key.clone()),
            ("anthropic-version", API_VERSION.to_string()),
        ];
        let endpoint = Endpoint::new(
            "anthropic",
            model,
            base_url,
            "/v1/messages",
            headers,
            vec![key],
            opts,
        )?;
        Ok(AnthropicModel {
            endpoint,
            max_tokens: opts.max_output_tokens.unwrap_or(MAX_TOKENS),
            temperature: opts.temperature,
        })
    }

    /// A model named `model` with the key from `ANTHROPIC_API_KEY` (required) and the base URL
    /// from `ANTHROPIC_BASE_URL`.
    pub(crate) fn from_env(
        model: &str,
        opts: &BackendOptions,
    ) -> Result<AnthropicModel, BackendError> {
        let key = env_value("ANTHROPIC_API_KEY").ok_or_else(|| BackendError::MissingKey {
            spec: format!("anthropic:{model}"),
            var: "ANTHROPIC_API_KEY",
            why: String::new(),
        })?;
        let base = env_value("ANTHROPIC_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        AnthropicModel::new(model, &base, &key, opts)
    }
}

impl Model for AnthropicModel {
    fn name(&self) -> String {
        format!("anthropic:{}", self.endpoint.model)
    }

    fn respond<'a>(&'a self, req: &'a Request, _cell: &'a str) -> ModelFuture<'a> {
        Box::pin(async move {
            let mut b = body(req, &self.endpoint.model);
            b["max_tokens"] = Value::from(self.max_tokens);
            if let Some(t) = self.temperature {
                b["temperature"] = Value::from(t);
            }
            self.endpoint.call(&b, parse_response).await
        })
    }
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

fn text_block(text: &str) -> Value {
    let text = if text.trim().is_empty() {
        EMPTY_TEXT
    } else {
        text
    };
    json!({"type": "text", "text": text})
}

/// One API message under construction: role and blocks, each block marked when it is a human
/// message's.
struct Group {
    role: &'static str,
    blocks: Vec<(Value, bool)>,
}

/// The request body for `req` (see the module docs for the mapping and the breakpoints).
pub fn body(req: &Request, model: &str) -> Value {
    let mut groups: Vec<Group> = Vec::new();
    for m in &req.messages {
        let (role, blocks) = blocks(m);
        match groups.last_mut() {
            Some(g) if g.role == role => g.blocks.extend(blocks),
            _ => groups.push(Group { role, blocks }),
        }
    }
    for g in groups.iter_mut().filter(|g| g.role == "user") {
        // Stable: tool results first, in order, then the rest in order.
        g.blocks
            .sort_by_key(|(b, _)| b.get("type").and_then(Value::as_str) != Some("tool_result"));
    }
    // Breakpoint 4: the last human block, unless it is the very last block.
    let last_human = groups
        .iter()
        .enumerate()
        .flat_map(|(gi, g)| {
            g.blocks
                .iter()
                .enumerate()
                .filter(|(_, (_, h))| *h)
                .map(move |(bi, _)| (gi, bi))
        })
        .next_back();
    let last = groups
        .len()
        .checked_sub(1)
        .and_then(|gi| groups[gi].blocks.len().checked_sub(1).map(|bi| (gi, bi)));
    if let Some((gi, bi)) = last {
        groups[gi].blocks[bi].0["cache_control"] = ephemeral();
    }
    if let Some((gi, bi)) = last_human.filter(|h| Some(*h) != last) {
        groups[gi].blocks[bi].0["cache_control"] = ephemeral();
    }
    let messages: Vec<Value> = groups
        .into_iter()
        .map(|g| json!({"role": g.role, "content": g.blocks.into_iter().map(|(b, _)| b).collect::<Vec<_>>()}))
        .collect();

    let mut body = json!({"model": model, "max_tokens": MAX_TOKENS});
    if !req.system.is_empty() {
        body["system"] =
            json!([{"type": "text", "text": &*req.system, "cache_control": ephemeral()}]);
    }
    if !req.tools.is_empty() {
        let n = req.tools.len();
        let tools: Vec<Value> = req
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut v = json!({"name": t.name, "description": t.description, "input_schema": t.parameters});
                if i + 1 == n {
                    v["cache_control"] = ephemeral();
                }
                v
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    body["messages"] = Value::Array(messages);
    body
}

fn blocks(m: &Message) -> (&'static str, Vec<(Value, bool)>) {
    match m.role {
        Role::User => ("user", vec![(text_block(&m.visible_text()), m.is_human())]),
        Role::Tool => {
            let mut b = json!({
                "type": "tool_result",
                "tool_use_id": m.tool_call_id.as_deref().unwrap_or(""),
                "content": m.text,
            });
            if m.is_error {
                b["is_error"] = json!(true);
            }
            ("user", vec![(b, false)])
        }
        Role::Assistant => {
            let mut out = Vec::new();
            if !m.text.trim().is_empty() {
                out.push((text_block(&m.text), false));
            }
            for c in &m.tool_calls {
                let input = if c.args.is_object() {
                    c.args.clone()
                } else {
                    json!({ INVALID_ARGUMENTS: c.args.to_string() })
                };
                out.push((
                    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                    false,
                ));
            }
            if out.is_empty() {
                out.push((text_block(""), false));
            }
            ("assistant", out)
        }
    }
}

/// Reads a Messages API answer; `Err` says what is missing or wrong.
pub(crate) fn parse_response(v: &Value) -> Result<Response, AnswerError> {
    let Some(obj) = v.as_object() else {
        return Err(AnswerError::NotObject);
    };
    if obj.get("type").and_then(Value::as_str) == Some("error") {
        let msg = obj
            .get("error")
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("unknown error");
        return Err(AnswerError::Server {
            message: msg.to_string(),
        });
    }
    let content = obj
        .get("content")
        .ok_or_else(|| AnswerError::missing("content"))?
        .as_array()
        .ok_or_else(|| AnswerError::shape("content", "is not an array"))?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for (i, b) in content.iter().enumerate() {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                let t = b
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| AnswerError::missing(format!("content[{i}].text")))?;
                text.push_str(t);
            }
            Some("tool_use") => {
                let field = |f: &str| {
                    b.get(f)
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .ok_or_else(|| AnswerError::missing(format!("content[{i}].{f}")))
                };
                // Empty names and ids are kept: the runner answers an unnamed call with a tool
                // error, and ids are made unique after parsing.
                let (id, name) = (field("id")?, field("name")?);
                let args = match b.get("input") {
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(Value::Object(o)) => Value::Object(o.clone()),
                    Some(Value::String(raw)) => super::openai::parse_arguments(raw),
                    Some(other) => json!({ INVALID_ARGUMENTS: other.to_string() }),
                };
                calls.push(ToolCall { id, name, args });
            }
            Some(_) => {} // thinking, redacted_thinking, server tools: not part of the transcript
            None => return Err(AnswerError::missing(format!("content[{i}].type"))),
        }
    }
    let usage = match obj.get("usage") {
        None | Some(Value::Null) => None,
        Some(u) => {
            let num = |name: &str| -> Result<u64, AnswerError> {
                match u.get(name) {
                    None | Some(Value::Null) => Ok(0),
                    Some(x) => x.as_u64().ok_or_else(|| {
                        AnswerError::shape(format!("usage.{name}"), "is not a count")
                    }),
                }
            };
            Some(Usage {
                input_tokens: num("input_tokens")?,
                cache_read_tokens: num("cache_read_input_tokens")?,
                cache_write_tokens: num("cache_creation_input_tokens")?,
                output_tokens: num("output_tokens")?,
            })
        }
    };
    Ok(Response::new(text, calls, usage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_core::Purpose;
    use harness_core::{MessageKind, ToolSpec};
    use std::sync::Arc;

    fn call(id: &str, name: &str, args: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            args,
        }
    }

    fn tools() -> Arc<[ToolSpec]> {
        Arc::from(vec![
            ToolSpec {
                name: "read_file".into(),
                description: "Read.".into(),
                parameters: json!({"type": "object"}),
            },
            ToolSpec {
                name: "grep".into(),
                description: "Search.".into(),
                parameters: json!({"type": "object"}),
            },
        ])
    }

    #[test]
    fn body_is_exact() {
        let c1 = call("toolu_1", "read_file", json!({"path": "a.rs"}));
        let c2 = call("toolu_2", "grep", json!({"pattern": "x"}));
        let req = Request::new(
            Arc::from("sys"),
            tools(),
            0,
            vec![
                Message::user(1, "first", None),
                Message::assistant(1, "done first", vec![]),
                Message::host(2, "fold result", MessageKind::Summary),
                Message::user(2, "second", Some("card".into())),
                Message::assistant(2, "", vec![c1.clone(), c2.clone()]),
                Message::tool_result(2, &c1, "contents", false),
                Message::tool_result(2, &c2, "error: bad pattern", true),
            ],
            Purpose::Turn,
        );
        let want = json!({
            "model": "claude-test",
            "max_tokens": 4096,
            "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
            "tools": [
                {"name": "read_file", "description": "Read.", "input_schema": {"type": "object"}},
                {"name": "grep", "description": "Search.", "input_schema": {"type": "object"},
                 "cache_control": {"type": "ephemeral"}}
            ],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "first"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "done first"}]},
                {"role": "user", "content": [
                    {"type": "text", "text": "fold result"},
                    {"type": "text", "text": "second\n\ncard", "cache_control": {"type": "ephemeral"}}
                ]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.rs"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "grep", "input": {"pattern": "x"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "contents"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "error: bad pattern",
                     "is_error": true, "cache_control": {"type": "ephemeral"}}
                ]}
            ]
        });
        let got = body(&req, "claude-test");
        assert_eq!(got, want, "{}", serde_json::to_string_pretty(&got).unwrap());
        assert!(count_breakpoints(&got) <= 4);
    }

    fn count_breakpoints(v: &Value) -> usize {
        match v {
            Value::Object(o) => {
                usize::from(o.contains_key("cache_control"))
                    + o.values().map(count_breakpoints).sum::<usize>()
            }
            Value::Array(a) => a.iter().map(count_breakpoints).sum(),
            _ => 0,
        }
    }

    #[test]
    fn turn_start_has_one_message_breakpoint_and_results_go_first() {
        let c = call("t1", "read_file", json!({}));
        // A host note placed between a call and its result: the result still comes first.
        let req = Request::new(
            Arc::from(""),
            Arc::from(Vec::new()),
            0,
            vec![
                Message::user(1, "go", None),
                Message::assistant(1, "", vec![c.clone()]),
                Message::host(1, "rules", MessageKind::StrategyRules { mode: "m".into() }),
                Message::tool_result(1, &c, "", false),
            ],
            Purpose::Turn,
        );
        let got = body(&req, "m");
        assert!(got.get("system").is_none() && got.get("tools").is_none());
        assert_eq!(
            got["messages"][2],
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": ""},
                {"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}}
            ]})
        );
        // "go" is the last human block and not the last block: it carries the second breakpoint.
        assert_eq!(
            got["messages"][0]["content"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(count_breakpoints(&got), 2);

        let only = Request::new(
            Arc::from("s"),
            tools(),
            0,
            vec![Message::user(1, "hi", None)],
            Purpose::Turn,
        );
        assert_eq!(count_breakpoints(&body(&only, "m")), 3);
    }

    #[test]
    fn parses_blocks_and_usage() {
        let answer = json!({
            "id": "msg_1", "type": "message", "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "Reading it."},
                {"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": {"path": "x"}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 12, "cache_read_input_tokens": 3000, "cache_creation_input_tokens": 200, "output_tokens": 40}
        });
        let r = parse_response(&answer).unwrap();
        assert_eq!(r.text, "Reading it.");
        assert_eq!(
            r.tool_calls,
            vec![call("toolu_9", "read_file", json!({"path": "x"}))]
        );
        assert_eq!(
            r.usage,
            Some(Usage {
                input_tokens: 12,
                cache_read_tokens: 3000,
                cache_write_tokens: 200,
                output_tokens: 40
            })
        );
        assert!(parse_response(&json!({"usage": {}}))
            .unwrap_err()
            .to_string()
            .contains("content"));
        assert!(
            parse_response(&json!({"content": [{"type": "tool_use", "name": "x"}]}))
                .unwrap_err()
                .to_string()
                .contains("id")
        );
    }
}
