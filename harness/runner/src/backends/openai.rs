//! The `openai` backend: any OpenAI-compatible chat-completions server with tool calling (OpenAI,
//! OpenRouter, vLLM, Ollama, llama.cpp's and llama-cpp-python's servers).
//!
//! `POST {base}/chat/completions`, base URL from `OPENAI_BASE_URL` (default
//! `https://api.openai.com/v1`), key from `OPENAI_API_KEY` (optional: local servers need none).
//!
//! Message mapping ([`body`]):
//! - the system prompt → a `system` message (left out when empty);
//! - a user or host message → `user` with [`Message::visible_text`] (text and card);
//! - an assistant message → `assistant` with `content` a string, `""` when it only calls tools
//!   (never `null`: llama.cpp's server answers HTTP 500 to `null`), and `tool_calls`
//!   `[{id, type: "function", function: {name, arguments}}]` with the arguments as canonical JSON;
//! - a tool result → `{role: "tool", tool_call_id, content}`.
//!
//! Whenever tools are sent, `tool_choice` is `"auto"` (llama.cpp ignores tools when it is left
//! out, and answers HTTP 500 to `"required"`). `temperature` is sent only when the run sets one
//! (`--temperature`), and `max_tokens` only when the run caps answers (`--max-output-tokens`):
//! servers and models differ on which they accept. Extra body fields (llama.cpp's `grammar`) are sent
//! only when the model was built with them (`OpenAiModel::with_extra_body`).
//!
//! Answers (`parse_response`): `choices[0].message.content` (a string, `null`, or a list of text
//! parts) and `tool_calls`. A call's `arguments` arrive as a JSON string; when that string is not
//! a JSON object, the call keeps the raw text as `{"__invalid_arguments": "<raw>"}` so that the
//! runner answers with an error the model sees, instead of the cell crashing; an empty tool name
//! is kept for the same reason, and repeated call ids are made unique
//! (`super::unique_call_ids`). An
//! empty string means no arguments (`{}`). Usage: `prompt_tokens`, `completion_tokens` and
//! `prompt_tokens_details.cached_tokens` become [`Usage`] with `input_tokens = prompt - cached`.

use std::sync::atomic::{AtomicU64, Ordering};

use harness_core::{Message, Role, ToolCall};
use harness_core::{Request, Response, Usage};
use serde_json::{json, Map, Value};

use super::{env_value, AnswerError, BackendError, BackendOptions, Endpoint, INVALID_ARGUMENTS};
use crate::backends::model::{Model, ModelFuture};

/// The default base URL, as the official SDKs use it.
pub(crate) const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// An OpenAI-compatible chat-completions model.
pub struct OpenAiModel {
    endpoint: Endpoint,
    /// Fields added to every request body ([`OpenAiModel::with_extra_body`]).
    extra: Map<String, Value>,
}

impl OpenAiModel {
    /// A model named `model` on the server at `base_url` (for example `http://127.0.0.1:8089/v1`),
    /// with an optional bearer key. The in-flight cap is shared by every model on `base_url`.
    pub fn new(
        model: &str,
        base_url: &str,
        api_key: Option<String>,
        opts: &BackendOptions,
    ) -> Result<OpenAiModel, BackendError> {
        let key = api_key
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty());
        let headers = key
            .iter()
            .map(|k| ("authorization", format!("Bearer {k}")))
            .collect();
        let endpoint = Endpoint::new(
            "openai",
            model,
            base_url,
            "/chat/completions",
            headers,
            key.into_iter().collect(),
            opts,
        )?;
        let mut extra = Map::new();
        if let Some(n) = opts.max_output_tokens {
            extra.insert("max_tokens".into(), Value::from(n));
        }
        if let Some(t) = opts.temperature {
            extra.insert("temperature".into(), Value::from(t));
        }
        Ok(OpenAiModel { endpoint, extra })
    }

    /// This model with `extra` added to every request body, replacing fields of the same name:
    /// server extensions the chat-completions API does not name, such as llama.cpp's `grammar`
    /// (a GBNF string that constrains the answer). Sent only to the server; cassette keys do not
    /// include them (record a constrained model into its own folder).
    pub(crate) fn with_extra_body(mut self, extra: Map<String, Value>) -> OpenAiModel {
        self.extra.extend(extra);
        self
    }

    /// A model named `model` with the base URL and key from `OPENAI_BASE_URL` and
    /// `OPENAI_API_KEY`.
    pub(crate) fn from_env(
        model: &str,
        opts: &BackendOptions,
    ) -> Result<OpenAiModel, BackendError> {
        let base = env_value("OPENAI_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        OpenAiModel::new(model, &base, env_value("OPENAI_API_KEY"), opts)
    }
}

impl Model for OpenAiModel {
    fn name(&self) -> String {
        format!("openai:{}", self.endpoint.model)
    }

    fn respond<'a>(&'a self, req: &'a Request, _cell: &'a str) -> ModelFuture<'a> {
        Box::pin(async move {
            let mut b = body(req, &self.endpoint.model);
            for (k, v) in &self.extra {
                b[k] = v.clone();
            }
            self.endpoint.call(&b, parse_response).await
        })
    }
}

/// The request body for `req` (see the module docs for the mapping).
pub fn body(req: &Request, model: &str) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": &*req.system}));
    }
    for m in &req.messages {
        messages.push(message(m));
    }
    let mut body = json!({"model": model, "messages": messages});
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters}})
            })
            .collect();
        body["tools"] = Value::Array(tools);
        body["tool_choice"] = json!("auto");
    }
    body
}

fn message(m: &Message) -> Value {
    match m.role {
        Role::User => json!({"role": "user", "content": m.visible_text()}),
        Role::Assistant => {
            let mut v = json!({"role": "assistant", "content": m.text});
            if !m.tool_calls.is_empty() {
                let calls: Vec<Value> = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function",
                               "function": {"name": c.name, "arguments": c.canonical_args()}})
                    })
                    .collect();
                v["tool_calls"] = Value::Array(calls);
            }
            v
        }
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id.as_deref().unwrap_or(""),
            "content": m.text,
        }),
    }
}

/// Reads a chat-completions answer; `Err` says what is missing or wrong.
pub(crate) fn parse_response(v: &Value) -> Result<Response, AnswerError> {
    let Some(obj) = v.as_object() else {
        return Err(AnswerError::NotObject);
    };
    if let Some(err) = obj.get("error").filter(|e| !e.is_null()) {
        return Err(AnswerError::Server {
            message: short(err),
        });
    }
    let choice = obj
        .get("choices")
        .ok_or_else(|| AnswerError::missing("choices"))?
        .as_array()
        .ok_or_else(|| AnswerError::shape("choices", "is not an array"))?
        .first()
        .ok_or_else(|| AnswerError::shape("choices", "is empty"))?;
    let message = choice
        .get("message")
        .ok_or_else(|| AnswerError::missing("choices[0].message"))?;
    if !message.is_object() {
        return Err(AnswerError::shape("choices[0].message", "is not an object"));
    }
    let text = content_text(message.get("content"))?;
    let text = match (
        text.is_empty(),
        message.get("refusal").and_then(Value::as_str),
    ) {
        (true, Some(refusal)) => refusal.to_string(),
        _ => text,
    };
    let mut calls = Vec::new();
    match message.get("tool_calls") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for (i, c) in list.iter().enumerate() {
                calls.push(tool_call(c, i)?);
            }
        }
        Some(_) => {
            return Err(AnswerError::shape(
                "choices[0].message.tool_calls",
                "is not an array",
            ))
        }
    }
    let usage = match obj.get("usage") {
        None | Some(Value::Null) => None,
        Some(u) => Some(usage(u)?),
    };
    Ok(Response::new(text, calls, usage))
}

fn content_text(content: Option<&Value>) -> Result<String, AnswerError> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => Ok(parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str()))
            .collect::<Vec<_>>()
            .join("")),
        Some(_) => Err(AnswerError::shape(
            "choices[0].message.content",
            "is neither a string, null nor a list",
        )),
    }
}

fn tool_call(c: &Value, i: usize) -> Result<ToolCall, AnswerError> {
    static SYNTHETIC: AtomicU64 = AtomicU64::new(1);
    let at = format!("choices[0].message.tool_calls[{i}]");
    let function = c
        .get("function")
        .ok_or_else(|| AnswerError::missing(format!("{at}.function")))?;
    // An empty name is kept: the runner answers it with a tool error the model reads.
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| AnswerError::missing(format!("{at}.function.name")))?;
    let id = match c
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        Some(id) => id.to_string(),
        None => format!("call_fb{}", SYNTHETIC.fetch_add(1, Ordering::Relaxed)),
    };
    let args = match function.get("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(raw)) => parse_arguments(raw),
        Some(Value::Object(o)) => Value::Object(o.clone()),
        Some(other) => invalid_arguments(&other.to_string()),
    };
    Ok(ToolCall {
        id,
        name: name.to_string(),
        args,
    })
}

/// Arguments from the provider's JSON string: an object, `{}` for an empty string, or
/// `{"__invalid_arguments": raw}`.
pub fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Map::new());
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(o)) => Value::Object(o),
        _ => invalid_arguments(raw),
    }
}

fn invalid_arguments(raw: &str) -> Value {
    let mut o = Map::new();
    o.insert(
        INVALID_ARGUMENTS.to_string(),
        Value::String(raw.to_string()),
    );
    Value::Object(o)
}

fn usage(u: &Value) -> Result<Usage, AnswerError> {
    let num = |v: Option<&Value>, name: &str| -> Result<u64, AnswerError> {
        match v {
            None | Some(Value::Null) => Ok(0),
            Some(x) => x
                .as_u64()
                .ok_or_else(|| AnswerError::shape(format!("usage.{name}"), "is not a count")),
        }
    };
    let prompt = num(u.get("prompt_tokens"), "prompt_tokens")?;
    let output = num(u.get("completion_tokens"), "completion_tokens")?;
    let cached = num(
        u.get("prompt_tokens_details")
            .and_then(|d| d.get("cached_tokens")),
        "prompt_tokens_details.cached_tokens",
    )?;
    let cached = cached.min(prompt);
    Ok(Usage {
        input_tokens: prompt - cached,
        cache_read_tokens: cached,
        cache_write_tokens: 0,
        output_tokens: output,
    })
}

fn short(v: &Value) -> String {
    let s = v
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| v.to_string());
    harness_core::printable(&s, 300)
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

    pub(crate) fn sample_request() -> Request {
        let c = call(
            "call_1",
            "read_file",
            json!({"path": "src/lib.rs", "limit": 5}),
        );
        let tools: Arc<[ToolSpec]> = Arc::from(vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }]);
        Request::new(
            Arc::from("You are a coding agent."),
            tools,
            0,
            vec![
                Message::user(1, "look at lib.rs", Some("[card: unit 1]".into())),
                Message::assistant(1, "", vec![c.clone()]),
                Message::tool_result(1, &c, "1\tpub fn x() {}", false),
                Message::host(1, "fold result: turns 1..1", MessageKind::Summary),
                Message::assistant(1, "done", vec![]),
            ],
            Purpose::Turn,
        )
    }

    #[test]
    fn body_is_exact() {
        let got = body(&sample_request(), "gpt-test");
        let want = json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "You are a coding agent."},
                {"role": "user", "content": "look at lib.rs\n\n[card: unit 1]"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "read_file", "arguments": "{\"limit\":5,\"path\":\"src/lib.rs\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "1\tpub fn x() {}"},
                {"role": "user", "content": "fold result: turns 1..1"},
                {"role": "assistant", "content": "done"}
            ],
            "tools": [{"type": "function", "function": {
                "name": "read_file", "description": "Read a file.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}],
            "tool_choice": "auto"
        });
        assert_eq!(got, want);
    }

    #[test]
    fn no_tools_no_tool_choice() {
        let req = Request::new(
            Arc::from(""),
            Arc::from(Vec::new()),
            0,
            vec![Message::user(1, "hi", None)],
            Purpose::Turn,
        );
        assert_eq!(
            body(&req, "m"),
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        );
    }

    #[test]
    fn parses_calls_text_and_usage() {
        let answer = json!({
            "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\":\"x\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": "{path: oops"}},
                {"id": "c3", "type": "function", "function": {"name": "list_dir", "arguments": ""}}
            ]}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 64}}
        });
        let r = parse_response(&answer).unwrap();
        assert_eq!(r.text, "");
        assert_eq!(r.tool_calls[0].args, json!({"pattern": "x"}));
        assert_eq!(
            r.tool_calls[1].args,
            json!({"__invalid_arguments": "{path: oops"})
        );
        assert_eq!(r.tool_calls[2].args, json!({}));
        assert_eq!(
            r.usage,
            Some(Usage {
                input_tokens: 36,
                cache_read_tokens: 64,
                cache_write_tokens: 0,
                output_tokens: 7
            })
        );
    }

    #[test]
    fn missing_fields_are_errors() {
        assert!(parse_response(&json!({"id": "x"}))
            .unwrap_err()
            .to_string()
            .contains("choices"));
        assert!(parse_response(&json!({"choices": []}))
            .unwrap_err()
            .to_string()
            .contains("empty"));
        assert!(parse_response(&json!({"choices": [{}]}))
            .unwrap_err()
            .to_string()
            .contains("message"));
        let no_name = json!({"choices": [{"message": {"tool_calls": [{"id": "a", "function": {"arguments": "{}"}}]}}]});
        assert!(parse_response(&no_name)
            .unwrap_err()
            .to_string()
            .contains("function.name"));
        assert!(parse_response(&json!([1])).is_err());
        assert!(parse_response(
            &json!({"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": "x"}})
        )
        .is_err());
    }
}
