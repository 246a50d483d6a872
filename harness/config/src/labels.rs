//! Unit labels of recorded sessions (`labels/<format>/*.yaml` beside the sessions): one YAML file
//! per session, each human prompt keyed by its record's `uuid` with the unit of work it belongs to.

use harness_core::judge::{LabelKey, SessionLabels};

use crate::yaml::{self, key, Problem, Reader, Seg, Value};

/// Parses a labels file: `turns` is a list of `{uuid, n, unit, ...}`; `n: null` marks a user
/// record that is not a prompt. With `key: "n"` the turns are keyed by `n`, the importer's turn
/// number, and carry no `uuid` (Codex, whose prompts carry no record id; a resumed session's
/// numbers start after its replayed parent history). Other fields are ignored. Every problem is
/// reported.
pub fn parse_labels(name: &str, text: &str) -> Result<SessionLabels, Vec<Problem>> {
    let doc = yaml::parse(name, text).map_err(|p| vec![p])?;
    let mut r = Reader::new(name, text);
    let root: Vec<Seg> = Vec::new();
    let mut out = SessionLabels::default();
    let Some(map) = doc.as_mapping() else {
        r.problem(
            &root,
            format!(
                "a labels file must be a mapping with `turns`, found {}",
                yaml::kind(&doc)
            ),
        );
        return Err(r.problems);
    };
    let text_field = |k: &str| map.get(k).and_then(|v| v.as_str()).map(str::to_string);
    out.session = text_field("session");
    out.source_path = text_field("source_path");
    match label_key(&mut r, &root, map.get("key")) {
        Some(k) => out.key = k,
        None => return Err(r.problems),
    }
    let Some(turns) = map.get("turns") else {
        r.problem(
            &root,
            "a labels file needs `turns`: a list of user records, each with `uuid` and `unit`",
        );
        return Err(r.problems);
    };
    let tp = key(&root, "turns");
    for (i, t) in r.sequence(&tp, turns, "`turns`").iter().enumerate() {
        let p = yaml::child(&tp, Seg::Index(i));
        let Some(m) = t.as_mapping() else {
            r.problem(
                &p,
                format!("a turn must be a mapping, found {}", yaml::kind(t)),
            );
            continue;
        };
        if out.key == LabelKey::Turn {
            turn_entry(&mut r, &p, t, &mut out);
            continue;
        }
        let Some(uuid) = m.get("uuid").and_then(|v| v.as_str()) else {
            r.problem(&p, "a turn needs `uuid`: the user record's uuid");
            continue;
        };
        let prompt = m.get("n").is_some_and(|n| !n.is_null());
        let unit = match m.get("unit") {
            None | Some(yaml::Value::Null) => None,
            Some(v) => r.string(&key(&p, "unit"), v, "`unit`"),
        };
        if prompt && unit.is_none() {
            r.problem(&p, "a prompt (`n` set) needs a `unit`");
            continue;
        }
        if out
            .units
            .insert(uuid.to_string(), unit.filter(|_| prompt))
            .is_some()
        {
            r.problem(&key(&p, "uuid"), format!("uuid {uuid} is labelled twice"));
        }
    }
    if r.problems.is_empty() {
        Ok(out)
    } else {
        Err(r.problems)
    }
}

/// Reads the file's `key` (absent: `uuid`); `None` after a problem.
fn label_key(r: &mut Reader, root: &[Seg], v: Option<&Value>) -> Option<LabelKey> {
    match v.map(|v| v.as_str()) {
        None | Some(Some("uuid")) => Some(LabelKey::Uuid),
        Some(Some("n")) => Some(LabelKey::Turn),
        Some(_) => {
            r.problem(
                &key(root, "key"),
                "`key` is \"uuid\" (turns keyed by the user record's uuid, the default) or \"n\" \
                 (keyed by the importer's turn number)",
            );
            None
        }
    }
}

/// Reads one turn of a file keyed by `n` into `out.by_turn`.
fn turn_entry(r: &mut Reader, p: &[Seg], m: &Value, out: &mut SessionLabels) {
    let n = m
        .get("n")
        .and_then(Value::as_u64)
        .filter(|n| *n >= 1)
        .and_then(|n| u32::try_from(n).ok());
    let Some(n) = n else {
        r.problem(
            p,
            "a turn of a file keyed by `n` needs `n`: the importer's turn number (1, 2, …)",
        );
        return;
    };
    let unit = match m.get("unit") {
        None | Some(Value::Null) => None,
        Some(v) => r.string(&key(p, "unit"), v, "`unit`"),
    };
    let Some(unit) = unit else {
        r.problem(p, "a prompt (`n` set) needs a `unit`");
        return;
    };
    if out.by_turn.insert(n, Some(unit)).is_some() {
        r.problem(&key(p, "n"), format!("turn {n} is labelled twice"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_files_are_read_with_problems_located() {
        let text = "session: \"s.jsonl\"\nsource_path: \"claude-code/p/s.jsonl\"\nturns:\n  - uuid: \"u1\"\n    n: 1\n    unit: a\n  - uuid: \"u2\"\n    n: null\n    unit: null\n  - uuid: \"u3\"\n    n: 2\n    unit: b\nunits:\n  a: \"x\"\n";
        let l = parse_labels("l.yaml", text).unwrap();
        assert_eq!(l.source_path.as_deref(), Some("claude-code/p/s.jsonl"));
        assert_eq!(l.units["u1"], Some("a".to_string()));
        assert_eq!(l.units["u2"], None);
        let bad = "turns:\n  - n: 1\n    unit: a\n  - uuid: \"u\"\n    n: 2\n";
        let p = parse_labels("l.yaml", bad).unwrap_err();
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].to_string().starts_with("l.yaml:2:"), "{}", p[0]);
        assert!(parse_labels("l.yaml", "- 1").is_err());
    }

    const BY_TURN: &str = r#"session: "019af581-aaaa.jsonl"
source_path: "codex/p/rollout-2025-12-06T15-11-37-019af581-aaaa.jsonl"
key: "n"
turns:
  - n: 6
    chars: 120
    unit: "a"
    starts_unit: true
  - n: 7
    unit: "b"
units:
  a: "first"
"#;

    #[test]
    fn files_keyed_by_turn_number_are_read_by_turn() {
        let l = parse_labels("c.yaml", BY_TURN).unwrap();
        assert_eq!(l.key, LabelKey::Turn);
        assert!(l.units.is_empty());
        assert_eq!(l.prompts(), 2);
        assert_eq!(l.label(None, 6), Some(&Some("a".to_string())));
        assert_eq!(l.label(Some("6"), 7), Some(&Some("b".to_string())));
        assert_eq!(
            l.label(None, 1),
            None,
            "turns before a resumed session's own are unnamed"
        );
        assert!(l.names_session("019af581-aaaa", "elsewhere.jsonl"));
        assert!(l.names_session(
            "other",
            "/data/codex/p/rollout-2025-12-06T15-11-37-019af581-aaaa.jsonl"
        ));
        assert!(!l.names_session("019af581", "/data/x.jsonl"));
        // A uuid-keyed file looks prompts up by uuid only.
        let u = parse_labels("u.yaml", "turns:\n  - uuid: \"x\"\n    n: 1\n    unit: a\n").unwrap();
        assert_eq!(u.key, LabelKey::Uuid);
        assert_eq!(u.label(Some("x"), 9), Some(&Some("a".to_string())));
        assert_eq!(u.label(None, 1), None);
    }

    #[test]
    fn bad_turn_keys_are_problems_with_positions() {
        let bad = "key: \"n\"\nturns:\n  - n: 0\n    unit: a\n  - n: 2\n  - n: 3\n    unit: a\n  - n: 3\n    unit: b\n";
        let p = parse_labels("c.yaml", bad).unwrap_err();
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].to_string().starts_with("c.yaml:3:"), "{}", p[0]);
        assert!(p[0].message.contains("needs `n`"), "{}", p[0]);
        assert!(p[1].message.contains("needs a `unit`"), "{}", p[1]);
        assert!(
            p[2].message.contains("turn 3 is labelled twice"),
            "{}",
            p[2]
        );
        let p = parse_labels("c.yaml", "key: id\nturns: []\n").unwrap_err();
        assert!(p[0].to_string().starts_with("c.yaml:1:"), "{}", p[0]);
        assert!(p[0].message.contains("\"uuid\""), "{}", p[0]);
    }
}
