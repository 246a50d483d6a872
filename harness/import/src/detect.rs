//! Format detection (`--format auto`) and the checks every input goes through first.

use serde_json::{Map, Value};

use crate::error::ImportError;
use crate::json::{kind_of, short_json_error, str_field};
use crate::session::Format;
use crate::{claude_code, codex, openhands, swe};

/// How many lines detection reads at most.
const SNIFF_LINES: usize = 64;

/// Rejects empty and binary text.
pub(crate) fn check_text(file: &str, text: &str) -> Result<(), ImportError> {
    if text.trim().is_empty() {
        return Err(ImportError::Empty {
            file: file.to_string(),
        });
    }
    let head: Vec<char> = text.chars().take(8192).collect();
    let odd = head
        .iter()
        .filter(|c| (c.is_control() && !matches!(c, '\n' | '\r' | '\t')) || **c == '\u{fffd}')
        .count();
    if head.contains(&'\0') || odd * 10 > head.len() {
        return Err(ImportError::Binary {
            file: file.to_string(),
        });
    }
    Ok(())
}

/// The format of a JSON-lines object, if it is one of the line formats.
fn line_format(o: &Map<String, Value>) -> Option<Format> {
    if codex::looks_like(o) {
        Some(Format::Codex)
    } else if claude_code::looks_like(o) {
        Some(Format::ClaudeCode)
    } else if openhands::looks_like(o) {
        Some(Format::OpenHands)
    } else if codex::looks_like_legacy(o) {
        Some(Format::CodexLegacy)
    } else {
        None
    }
}

/// The format of a whole-file JSON document, if it is one of the document formats.
fn document_format(o: &Map<String, Value>) -> Option<Format> {
    if swe::looks_like_mini(o) {
        Some(Format::MiniSweAgent)
    } else if swe::looks_like_swe(o) {
        Some(Format::SweAgent)
    } else {
        None
    }
}

/// A short description of an object's keys, for error messages.
fn describe(o: &Map<String, Value>) -> String {
    let keys: Vec<&str> = o.keys().take(6).map(String::as_str).collect();
    let more = if o.len() > 6 { ", ..." } else { "" };
    match str_field(o, "type") {
        Some(t) => format!(
            "a json object of type `{t}` with keys {}{more}",
            keys.join(", ")
        ),
        None => format!("a json object with keys {}{more}", keys.join(", ")),
    }
}

/// Detects the format of a transcript from its content (and, for ambiguous documents, its name).
pub fn detect(name: &str, text: &str) -> Result<Format, ImportError> {
    check_text(name, text)?;
    // A line over the limit of one record is never parsed, here or by the importers; a file of
    // nothing else has no record.
    let long = |l: &&str| l.len() > crate::json::MAX_LINE_BYTES;
    let non_empty: Vec<&str> = text
        .split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty() && !long(l))
        .take(SNIFF_LINES)
        .collect();
    if non_empty.is_empty() {
        // Every non-empty line (if any) is too long.
        let long_lines: Vec<(usize, &str)> = text
            .split('\n')
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .collect();
        if let Some(&(i, l)) = long_lines.first() {
            return Err(ImportError::NoRecords {
                file: name.to_string(),
                lines: long_lines.len(),
                skipped: long_lines.len(),
                first_line: i + 1,
                first: format!(
                    "skipped: a line of {} bytes, longer than {} bytes, the most one record may be; not parsed",
                    l.trim().len(),
                    crate::json::MAX_LINE_BYTES
                ),
            });
        }
    }
    let first = non_empty.first().map(|l| serde_json::from_str::<Value>(l));
    if let Some(Ok(Value::Object(_))) = first {
        return detect_lines(name, &non_empty);
    }
    // Not an object on the first line: a whole-file document, or JSON lines whose first line is
    // damaged.
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(o)) => document_format(&o)
            .or_else(|| {
                // A name can settle a document that has the lists but not the markers.
                if name.ends_with(".traj.json") && o.contains_key("messages") {
                    Some(Format::MiniSweAgent)
                } else if name.ends_with(".traj")
                    && (o.contains_key("history") || o.contains_key("trajectory"))
                {
                    Some(Format::SweAgent)
                } else {
                    None
                }
            })
            .ok_or_else(|| ImportError::Unrecognised {
                file: name.to_string(),
                detail: describe(&o),
            }),
        Ok(other) => Err(ImportError::Unrecognised {
            file: name.to_string(),
            detail: format!("a json {}", kind_of(&other)),
        }),
        Err(e) if e.is_eof() => Err(ImportError::Truncated {
            file: name.to_string(),
            line: e.line(),
            column: e.column(),
        }),
        Err(e) => {
            if non_empty.len() > 1 {
                if let Ok(f) = detect_lines(name, &non_empty[1..]) {
                    return Ok(f);
                }
            }
            let detail = match first {
                Some(Err(fe)) => short_json_error(&fe),
                _ => e.to_string(),
            };
            Err(ImportError::NotJson {
                file: name.to_string(),
                detail,
            })
        }
    }
}

/// Detects a JSON-lines format from the first lines.
fn detect_lines(name: &str, lines: &[&str]) -> Result<Format, ImportError> {
    let mut first_object: Option<Map<String, Value>> = None;
    for l in lines {
        if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(l) {
            if lines.len() == 1 {
                // A one-line file may be a compact document.
                if let Some(d) = document_format(&o) {
                    return Ok(d);
                }
            }
            if let Some(f) = line_format(&o) {
                return Ok(f);
            }
            if first_object.is_none() {
                first_object = Some(o);
            }
        }
    }
    let detail = match &first_object {
        Some(o) if lines.len() == 1 => describe(o),
        Some(o) => format!("json lines; the first is {}", describe(o)),
        None => "no line holds a json object".to_string(),
    };
    Err(ImportError::Unrecognised {
        file: name.to_string(),
        detail,
    })
}
