//! A request split at its top level: the conversation's items apart, every other field kept as
//! the agent wrote it, in its order.

use std::fmt;

use harness_core::ToolSpec;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::{err, Api, WireError};

/// The identity of a message: the sha256 of its bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ItemKey(pub [u8; 32]);

impl fmt::Debug for ItemKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&harness_core::hex(&self.0[..8]))
    }
}

/// The key of an item's bytes as sent.
pub fn item_key(item: &RawValue) -> ItemKey {
    ItemKey(Sha256::digest(item.get().as_bytes()).into())
}

/// The key of an item with every `cache_control` field left out and its keys sorted: the same
/// for a message whose cache breakpoint an agent moved (Claude Code marks its last messages).
pub fn canonical_key(item: &RawValue) -> ItemKey {
    match serde_json::from_str::<Value>(item.get()) {
        Ok(mut v) => {
            strip_cache_control(&mut v);
            ItemKey(Sha256::digest(v.to_string().as_bytes()).into())
        }
        Err(_) => item_key(item),
    }
}

fn strip_cache_control(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("cache_control");
            m.values_mut().for_each(strip_cache_control);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_cache_control),
        _ => {}
    }
}

/// A request's top level. [`Envelope::write`] puts it back together with other items and extra
/// tools, every other field byte for byte as it came.
#[derive(Debug)]
pub struct Envelope {
    /// The API.
    pub(crate) api: Api,
    /// Every top-level field, in order; the items field holds `null` (the items are apart).
    fields: Vec<(String, Box<RawValue>)>,
    /// The conversation: `messages` (Anthropic, Chat) or `input` (Responses; a string input is
    /// one user message).
    pub items: Vec<Box<RawValue>>,
    /// `model`, or empty.
    pub model: String,
    /// `stream: true`.
    pub stream: bool,
    /// The tools the agent offers, as schemas.
    pub tools: Vec<ToolSpec>,
    /// The system prompt's text: Anthropic's `system`, Responses' `instructions`, and the text
    /// of leading `system`/`developer` items (Chat, Responses).
    pub system: String,
    /// What the agent says its conversation is, when it says: Anthropic's `metadata.user_id`,
    /// OpenAI's `prompt_cache_key` or `user`.
    pub hint: Option<String>,
    /// A Responses request that continues a stored response (`previous_response_id`): its
    /// history is upstream, not in the request.
    pub stateful: bool,
}

/// The top-level fields of an object, in order, each raw.
struct Fields(Vec<(String, Box<RawValue>)>);

/// A body split: its fields (the items field `null`) and its items.
type Split = (Vec<(String, Box<RawValue>)>, Vec<Box<RawValue>>);

/// A body's fields (the items field `null`) and its items, in one pass; `None` when the body is
/// not an object whose items field is a list, or has a field twice.
fn split_fast(key: &str, body: &[u8]) -> Option<Split> {
    struct Seed<'k>(&'k str);
    type Maybe = (Vec<(String, Box<RawValue>)>, Option<Vec<Box<RawValue>>>);
    impl<'de> de::DeserializeSeed<'de> for Seed<'_> {
        type Value = Maybe;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Maybe, D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for Seed<'_> {
        type Value = Maybe;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Maybe, A::Error> {
            let mut out: Vec<(String, Box<RawValue>)> = Vec::new();
            let mut items = None;
            while let Some(k) = map.next_key::<String>()? {
                if out.iter().any(|(n, _)| *n == k) {
                    return Err(de::Error::custom("a field appears twice"));
                }
                if k == self.0 {
                    items = Some(map.next_value::<Vec<Box<RawValue>>>()?);
                    out.push((k, crate::null()));
                } else {
                    out.push((k, map.next_value::<Box<RawValue>>()?));
                }
            }
            Ok((out, items))
        }
    }
    let mut d = serde_json::Deserializer::from_slice(body);
    let (fields, items) = de::DeserializeSeed::deserialize(Seed(key), &mut d).ok()?;
    d.end().ok()?;
    Some((fields, items?))
}

/// A body's fields (the items field `null`) and its items, each field read raw first and the
/// items from the raw list: what is wrong said with its place.
fn split_slow(api: Api, body: &[u8]) -> Result<Split, WireError> {
    let Fields(mut fields) = serde_json::from_slice(body).map_err(|e| {
        err(format!(
            "the request body is not a JSON object: {e} (line {}, column {})",
            e.line(),
            e.column()
        ))
    })?;
    let field = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| &**v);
    let key = api.items_field();
    let items_raw = field(key).ok_or_else(|| {
        err(format!(
            "the request has no `{key}`: a {} request carries the conversation in `{key}`",
            api.name()
        ))
    })?;
    let items: Vec<Box<RawValue>> = match serde_json::from_str(items_raw.get()) {
        Ok(items) => items,
        Err(_) if api == Api::Responses && items_raw.get().starts_with('"') => {
            let text: String = serde_json::from_str(items_raw.get())
                .map_err(|e| err(format!("`input` is not a string or a list: {e}")))?;
            vec![crate::raw(
                &serde_json::json!({"role": "user", "content": text}),
            )]
        }
        Err(e) => {
            return Err(err(format!(
                "`{key}` must be a list of {}: {e}",
                if key == "input" { "items" } else { "messages" }
            )))
        }
    };
    // The items field's own copy is not kept: [`Envelope::write`] writes the items in its place
    // (a history of some MiB would otherwise be held twice).
    if let Some((_, v)) = fields.iter_mut().find(|(k, _)| k == key) {
        *v = crate::null();
    }
    Ok((fields, items))
}

impl<'de> serde::Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Fields, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = map.next_key::<String>()? {
                    if out.iter().any(|(n, _): &(String, _)| *n == k) {
                        return Err(de::Error::custom(format!("the field `{k}` appears twice")));
                    }
                    out.push((k, map.next_value::<Box<RawValue>>()?));
                }
                Ok(Fields(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl Envelope {
    /// Splits a request body. A body that is not a JSON object, or whose items field is missing
    /// or not a list, is refused with what is wrong (line and column for bad JSON).
    pub fn parse(api: Api, body: &[u8]) -> Result<Envelope, WireError> {
        let key = api.items_field();
        // One pass over the body when it is as an agent sends it; the slow path (each field
        // kept raw, then the items read from the raw list) says what is wrong otherwise.
        let (fields, items) = match split_fast(key, body) {
            Some(split) => split,
            None => split_slow(api, body)?,
        };
        Envelope::from_parts(api, fields, items)
    }

    /// A request from a body split elsewhere (the proxy reads a body from where it differs from
    /// the last one): its top-level fields in order, the items field `null`, and its items. The
    /// same envelope [`Envelope::parse`] makes of the body they come from.
    pub fn from_parts(
        api: Api,
        fields: Vec<(String, Box<RawValue>)>,
        items: Vec<Box<RawValue>>,
    ) -> Result<Envelope, WireError> {
        let field = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| &**v);
        let text =
            |name: &str| field(name).and_then(|v| serde_json::from_str::<Value>(v.get()).ok());
        let model = text("model")
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let stream = text("stream").and_then(|v| v.as_bool()).unwrap_or(false);
        let tools = match text("tools") {
            Some(Value::Array(list)) => list.iter().map(|t| tool_spec(api, t)).collect(),
            Some(Value::Null) | None => Vec::new(),
            Some(_) => return Err(err("`tools` must be a list")),
        };
        let mut system = match api {
            Api::Anthropic => text("system").map(|v| text_of(&v)).unwrap_or_default(),
            Api::Responses => text("instructions")
                .map(|v| text_of(&v))
                .unwrap_or_default(),
            Api::Chat => String::new(),
        };
        if api != Api::Anthropic {
            for item in &items {
                let Ok(v) = serde_json::from_str::<Value>(item.get()) else {
                    break;
                };
                match v.get("role").and_then(Value::as_str) {
                    Some("system" | "developer") => {
                        if !system.is_empty() {
                            system.push_str("\n\n");
                        }
                        system.push_str(&text_of(v.get("content").unwrap_or(&Value::Null)));
                    }
                    _ => break,
                }
            }
        }
        let hint = match api {
            Api::Anthropic => text("metadata")
                .and_then(|m| m.get("user_id").and_then(Value::as_str).map(str::to_string)),
            Api::Chat | Api::Responses => text("prompt_cache_key")
                .or_else(|| text("user"))
                .and_then(|v| v.as_str().map(str::to_string)),
        };
        let stateful =
            api == Api::Responses && text("previous_response_id").is_some_and(|v| !v.is_null());
        Ok(Envelope {
            api,
            fields,
            items,
            model,
            stream,
            tools,
            system,
            hint,
            stateful,
        })
    }

    /// The items as references (to write the request back as it came).
    pub fn item_refs(&self) -> Vec<&RawValue> {
        self.items.iter().map(|i| &**i).collect()
    }

    /// The body with `items` in place of the conversation and `extra_tools` appended to the
    /// tool list (which is created when the agent sent none); every other field as it came.
    pub fn write(&self, items: &[&RawValue], extra_tools: &[ToolSpec]) -> Vec<u8> {
        let size = self
            .fields
            .iter()
            .map(|(k, v)| k.len() + v.get().len() + 4)
            .sum::<usize>();
        let mut out = Vec::with_capacity(size + 64);
        out.push(b'{');
        let mut first = true;
        let mut push_key = |out: &mut Vec<u8>, k: &str| {
            if !std::mem::take(&mut first) {
                out.push(b',');
            }
            out.extend_from_slice(Value::String(k.to_string()).to_string().as_bytes());
            out.push(b':');
        };
        let key = self.api.items_field();
        let mut tools_written = false;
        for (k, v) in &self.fields {
            push_key(&mut out, k);
            if k == key {
                write_list(&mut out, items.iter().map(|i| i.get()));
            } else if k == "tools" && !extra_tools.is_empty() {
                tools_written = true;
                let mut list: Vec<String> =
                    match serde_json::from_str::<Vec<Box<RawValue>>>(v.get()) {
                        Ok(l) => l.into_iter().map(|t| t.get().to_string()).collect(),
                        Err(_) => Vec::new(),
                    };
                list.extend(
                    extra_tools
                        .iter()
                        .map(|t| tool_json(self.api, t).to_string()),
                );
                write_list(&mut out, list.iter().map(String::as_str));
            } else {
                out.extend_from_slice(v.get().as_bytes());
            }
        }
        if !tools_written && !extra_tools.is_empty() {
            push_key(&mut out, "tools");
            let list: Vec<String> = extra_tools
                .iter()
                .map(|t| tool_json(self.api, t).to_string())
                .collect();
            write_list(&mut out, list.iter().map(String::as_str));
        }
        out.push(b'}');
        out
    }
}

fn write_list<'a>(out: &mut Vec<u8>, items: impl Iterator<Item = &'a str>) {
    out.push(b'[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item.as_bytes());
    }
    out.push(b']');
}

/// The text of a `system`/`content` value: a string, or the `text` of each block joined.
pub(crate) fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
    }
}

/// A tool as the API writes it, read into a schema (name, description, parameters); a tool of
/// another kind (a server tool, a custom grammar tool) keeps its whole definition as its
/// parameters, so it is counted.
fn tool_spec(api: Api, t: &Value) -> ToolSpec {
    let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    let f = match api {
        Api::Chat => t.get("function").unwrap_or(t),
        Api::Anthropic | Api::Responses => t,
    };
    let name = match f.get("name") {
        Some(n) => s(Some(n)),
        None => s(t.get("type")),
    };
    let parameters = f
        .get("input_schema")
        .or_else(|| f.get("parameters"))
        .cloned()
        .unwrap_or_else(|| t.clone());
    ToolSpec {
        name,
        description: s(f.get("description")),
        parameters,
    }
}

/// A tool schema in the API's form.
pub(crate) fn tool_json(api: Api, t: &ToolSpec) -> Value {
    match api {
        Api::Anthropic => serde_json::json!({
            "name": t.name, "description": t.description, "input_schema": t.parameters,
        }),
        Api::Chat => serde_json::json!({
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }),
        Api::Responses => serde_json::json!({
            "type": "function", "name": t.name, "description": t.description,
            "parameters": t.parameters,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_bodies_say_what_is_wrong() {
        let e = Envelope::parse(Api::Anthropic, b"{\"model\": 1,").unwrap_err();
        assert!(
            e.0.contains("not a JSON object") && e.0.contains("line 1"),
            "{e}"
        );
        let e = Envelope::parse(Api::Anthropic, b"[1]").unwrap_err();
        assert!(e.0.contains("not a JSON object"), "{e}");
        let e = Envelope::parse(Api::Chat, b"{\"model\":\"m\"}").unwrap_err();
        assert!(e.0.contains("no `messages`"), "{e}");
        let e = Envelope::parse(Api::Anthropic, b"{\"messages\":{}}").unwrap_err();
        assert!(e.0.contains("must be a list"), "{e}");
        let e = Envelope::parse(Api::Chat, b"{\"messages\":[],\"messages\":[]}").unwrap_err();
        assert!(e.0.contains("appears twice"), "{e}");
    }

    #[test]
    fn a_string_input_is_one_user_item_and_tools_are_appended() {
        let env = Envelope::parse(
            Api::Responses,
            br#"{"model":"gpt","input":"hello","instructions":"be brief","prompt_cache_key":"s1"}"#,
        )
        .unwrap();
        assert_eq!(env.items.len(), 1);
        assert_eq!(env.system, "be brief");
        assert_eq!(env.hint.as_deref(), Some("s1"));
        let tool = ToolSpec {
            name: "fold_unit".into(),
            description: "fold".into(),
            parameters: serde_json::json!({"type": "object"}),
        };
        let body: Value = serde_json::from_slice(&env.write(&env.item_refs(), &[tool])).unwrap();
        assert_eq!(body["input"][0]["content"], "hello");
        assert_eq!(body["tools"][0]["name"], "fold_unit");
        assert_eq!(body["tools"][0]["type"], "function");
    }

    #[test]
    fn canonical_keys_ignore_cache_breakpoints() {
        let a: Box<RawValue> = serde_json::from_str(
            r#"{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}"#,
        )
        .unwrap();
        let b: Box<RawValue> =
            serde_json::from_str(r#"{"role":"user","content":[{"type":"text","text":"x"}]}"#)
                .unwrap();
        assert_ne!(item_key(&a), item_key(&b));
        assert_eq!(canonical_key(&a), canonical_key(&b));
    }
}
