//! Reading the JSON of recorded sessions, shared by the importers: JSON lines and documents,
//! fields of a record (`str_field`, `u64_field`, `bool_field`), content flattening, usage,
//! timestamps.

use harness_core::Usage;
use serde_json::{Map, Value};

use crate::error::ImportError;
use crate::session::Warning;

/// The placeholder that replaces an image (base64 data is never tokenized).
pub(crate) const IMAGE: &str = "[image]";

/// One parsed line of a JSON-lines file.
pub(crate) struct Line {
    /// 1-based line number.
    pub(crate) no: usize,
    /// The object on the line.
    pub(crate) v: Map<String, Value>,
}

/// The longest line of a JSON-lines transcript that is parsed: 64 MiB (a record with a few
/// images is a few MB). A longer line is skipped with a warning, never parsed: its value would
/// take several times its size in memory.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// Splits JSON lines: every non-empty line that holds a JSON object, and a warning for every
/// other non-empty line (a line over [`MAX_LINE_BYTES`] included). Fails only when no line
/// could be read and at least one was skipped.
pub(crate) fn json_lines(file: &str, text: &str) -> Result<(Vec<Line>, Vec<Warning>), ImportError> {
    let mut lines = Vec::new();
    let mut warnings = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let raw = raw.trim();
        if raw.is_empty() {
            continue;
        }
        if raw.len() > MAX_LINE_BYTES {
            warnings.push(Warning {
                file: file.to_string(),
                line: i + 1,
                message: format!(
                    "skipped: a line of {} bytes, longer than {MAX_LINE_BYTES} bytes, the most one record may be; not parsed",
                    raw.len()
                ),
            });
            continue;
        }
        match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(v)) => lines.push(Line { no: i + 1, v }),
            Ok(other) => warnings.push(Warning {
                file: file.to_string(),
                line: i + 1,
                message: format!(
                    "skipped: a json {} where an object was expected",
                    kind_of(&other)
                ),
            }),
            Err(e) => warnings.push(Warning {
                file: file.to_string(),
                line: i + 1,
                message: format!("skipped: malformed json ({})", short_json_error(&e)),
            }),
        }
    }
    if lines.is_empty() {
        return match warnings.first() {
            Some(w) => Err(ImportError::NoRecords {
                file: file.to_string(),
                lines: warnings.len(),
                skipped: warnings.len(),
                first_line: w.line,
                first: w.message.clone(),
            }),
            None => Err(ImportError::Empty {
                file: file.to_string(),
            }),
        };
    }
    Ok((lines, warnings))
}

/// Parses a whole-file JSON document: a document cut short is [`ImportError::Truncated`],
/// anything else that does not parse [`ImportError::NotJson`].
pub(crate) fn json_document(file: &str, text: &str) -> Result<Value, ImportError> {
    if text.trim().is_empty() {
        return Err(ImportError::Empty {
            file: file.to_string(),
        });
    }
    serde_json::from_str::<Value>(text).map_err(|e| {
        if e.is_eof() {
            ImportError::Truncated {
                file: file.to_string(),
                line: e.line(),
                column: e.column(),
            }
        } else {
            ImportError::NotJson {
                file: file.to_string(),
                detail: e.to_string(),
            }
        }
    })
}

/// A serde_json error without its position suffix (the warning has the line).
pub(crate) fn short_json_error(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.find(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// "object", "array", "string", ... for messages.
pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `v[key]` as a string.
pub(crate) fn str_field<'a>(v: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// `v[key]` as a bool (absent: false).
pub(crate) fn bool_field(v: &Map<String, Value>, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// Appends `part` to `out`, separated by a blank line when both are non-empty.
pub(crate) fn push_part(out: &mut String, part: &str) {
    if part.is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(part);
}

/// The text of a content value: a string, or a list of blocks (`text`, `input_text`,
/// `output_text`; images become [`IMAGE`]; other blocks are named in brackets).
pub(crate) fn content_text(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::String(t) => out.push_str(t),
        Value::Array(blocks) => {
            for b in blocks {
                push_part(&mut out, &block_text(b));
            }
        }
        Value::Null => {}
        other => out.push_str(&other.to_string()),
    }
    out
}

/// The text of one content block.
pub(crate) fn block_text(b: &Value) -> String {
    match b {
        Value::String(t) => t.clone(),
        Value::Object(o) => match str_field(o, "type").unwrap_or("") {
            "text" | "input_text" | "output_text" | "summary_text" | "reasoning_text" => {
                str_field(o, "text").unwrap_or("").to_string()
            }
            "image" | "input_image" | "image_url" => IMAGE.to_string(),
            "document" => "[document]".to_string(),
            "tool_reference" => format!("[tool {}]", str_field(o, "tool_name").unwrap_or("?")),
            "tool_result" => content_text(o.get("content").unwrap_or(&Value::Null)),
            _ => match str_field(o, "text") {
                Some(t) => t.to_string(),
                None => String::new(),
            },
        },
        _ => String::new(),
    }
}

/// A number field as u64 (absent, negative or fractional: 0).
pub(crate) fn u64_field(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Usage in Anthropic's shape (`input_tokens`, `cache_read_input_tokens`,
/// `cache_creation_input_tokens`, `output_tokens`) or OpenAI's (`prompt_tokens` including cached
/// ones, `prompt_tokens_details.cached_tokens` or DeepSeek's `prompt_cache_hit_tokens`,
/// `completion_tokens`). `None` when neither shape is there.
pub(crate) fn usage(v: &Value) -> Option<Usage> {
    let o = v.as_object()?;
    if o.contains_key("prompt_tokens") {
        let prompt = u64_field(v, "prompt_tokens");
        let cached = v
            .get("prompt_tokens_details")
            .map(|d| u64_field(d, "cached_tokens"))
            .filter(|c| *c > 0)
            .unwrap_or_else(|| {
                u64_field(v, "prompt_cache_hit_tokens").max(u64_field(v, "cache_read_input_tokens"))
            });
        let written = u64_field(v, "cache_creation_input_tokens");
        return Some(Usage {
            input_tokens: prompt.saturating_sub(cached.saturating_add(written)),
            cache_read_tokens: cached,
            cache_write_tokens: written,
            output_tokens: u64_field(v, "completion_tokens"),
        });
    }
    if o.contains_key("input_tokens") || o.contains_key("output_tokens") {
        return Some(Usage {
            input_tokens: u64_field(v, "input_tokens"),
            cache_read_tokens: u64_field(v, "cache_read_input_tokens"),
            cache_write_tokens: u64_field(v, "cache_creation_input_tokens"),
            output_tokens: u64_field(v, "output_tokens"),
        });
    }
    None
}

/// Field-wise maximum of two usages (the lines of one streamed response repeat the input counts
/// and grow the output count).
pub(crate) fn max_usage(a: Option<Usage>, b: Option<Usage>) -> Option<Usage> {
    match (a, b) {
        (Some(a), Some(b)) => Some(Usage {
            input_tokens: a.input_tokens.max(b.input_tokens),
            cache_read_tokens: a.cache_read_tokens.max(b.cache_read_tokens),
            cache_write_tokens: a.cache_write_tokens.max(b.cache_write_tokens),
            output_tokens: a.output_tokens.max(b.output_tokens),
        }),
        (a, b) => a.or(b),
    }
}

/// Milliseconds since the epoch of an RFC 3339 timestamp (`2025-10-16T10:21:34.746Z`,
/// offsets allowed). `None` when it does not parse.
pub(crate) fn timestamp_ms(t: &str) -> Option<i64> {
    let b = t.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> { t.get(r)?.parse::<i64>().ok() };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut rest = &t[19..];
    let mut ms = 0i64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        let mut scale = 100;
        for c in frac[..digits].bytes().take(3) {
            ms += i64::from(c - b'0') * scale;
            scale /= 10;
        }
        rest = &frac[digits..];
    }
    let offset_min = match rest {
        "" | "Z" | "z" => 0,
        r if r.len() == 6 && (r.starts_with('+') || r.starts_with('-')) => {
            let hh: i64 = r.get(1..3)?.parse().ok()?;
            let mm: i64 = r.get(4..6)?.parse().ok()?;
            let sign = if r.starts_with('-') { -1 } else { 1 };
            sign * (hh * 60 + mm)
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + h) * 60 + mi - offset_min) * 60_000 + se * 1000 + ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse() {
        assert_eq!(timestamp_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(timestamp_ms("1970-01-01T00:00:01.5Z"), Some(1500));
        assert_eq!(timestamp_ms("2000-03-01T00:00:00Z"), Some(951_868_800_000));
        assert_eq!(
            timestamp_ms("2000-03-01T01:00:00+01:00"),
            Some(951_868_800_000)
        );
        assert_eq!(timestamp_ms("garbage"), None);
        assert_eq!(timestamp_ms("2000-13-01T00:00:00Z"), None);
        assert_eq!(timestamp_ms("2000-01-01T00:00:00Zjunk"), None);
    }

    #[test]
    fn usage_shapes() {
        let a = serde_json::json!({"input_tokens": 4, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20, "output_tokens": 7});
        let u = usage(&a).unwrap();
        assert_eq!(
            (
                u.input_tokens,
                u.cache_read_tokens,
                u.cache_write_tokens,
                u.output_tokens
            ),
            (4, 100, 20, 7)
        );
        let o = serde_json::json!({"prompt_tokens": 1553, "completion_tokens": 112, "prompt_tokens_details": {"cached_tokens": 320}});
        let u = usage(&o).unwrap();
        assert_eq!(
            (u.input_tokens, u.cache_read_tokens, u.output_tokens),
            (1233, 320, 112)
        );
        let d = serde_json::json!({"prompt_tokens": 100, "completion_tokens": 1, "prompt_tokens_details": null, "prompt_cache_hit_tokens": 60});
        assert_eq!(usage(&d).unwrap().cache_read_tokens, 60);
        assert_eq!(usage(&serde_json::json!({"foo": 1})), None);
    }

    #[test]
    fn content_flattens_blocks_and_hides_images() {
        let v = serde_json::json!([
            {"type": "text", "text": "look"},
            {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
            {"type": "tool_reference", "tool_name": "Grep"}
        ]);
        assert_eq!(content_text(&v), "look\n\n[image]\n\n[tool Grep]");
    }
}
