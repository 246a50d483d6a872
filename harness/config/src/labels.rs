//! Unit labels of recorded sessions (`labels/<format>/*.yaml` beside the sessions): one YAML file
//! per session, each human prompt keyed by its record's `uuid` with the unit of work it belongs to.

use harness_core::judgement::SessionLabels;

use crate::yaml::{self, key, Problem, Reader, Seg};

/// Parses a labels file: `turns` is a list of `{uuid, n, unit, ...}`; `n: null` marks a user
/// record that is not a prompt. Other fields are ignored. Every problem is reported.
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
}
