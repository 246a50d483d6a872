//! The two keys of unit-labels files: by the user record's `uuid` (Claude Code, whose prompts
//! carry one) or, with `key: "n"`, by the importer's turn number (Codex, whose prompts carry no
//! record id; a resumed session's numbers start after its replayed parent history). The reader
//! is [`crate::judgement::parse_labels`]; this module holds what differs between the two keys.
//!
//! ```yaml
//! session: "019af581-….jsonl"       # the session id, as a file name
//! source_path: "codex/…/rollout-…-019af581-….jsonl"
//! key: "n"
//! turns:
//!   - n: 1                           # the importer's turn number (HumanTurn::turn)
//!     unit: a
//! ```

use crate::judgement::SessionLabels;
use crate::yaml::{key, Reader, Seg, Value};

/// What a labels file keys its turns by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LabelKey {
    /// The user record's `uuid` (the default).
    #[default]
    Uuid,
    /// The importer's turn number `n` (`key: "n"`).
    Turn,
}

/// Reads the file's `key` (absent: `uuid`); `None` after a problem.
pub(crate) fn label_key(r: &mut Reader, root: &[Seg], v: Option<&Value>) -> Option<LabelKey> {
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
pub(crate) fn turn_entry(r: &mut Reader, p: &[Seg], m: &Value, out: &mut SessionLabels) {
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

impl SessionLabels {
    /// The label of a prompt, by its record id (uuid-keyed files) or its turn number (files keyed
    /// by `n`): `Some(None)` for a record labelled as no prompt, `None` when the file does not
    /// name it.
    pub fn label(&self, id: Option<&str>, turn: u32) -> Option<&Option<String>> {
        match self.key {
            LabelKey::Uuid => id.and_then(|u| self.units.get(u)),
            LabelKey::Turn => self.by_turn.get(&turn),
        }
    }

    /// How many prompts the file labels.
    pub fn prompts(&self) -> usize {
        self.units
            .values()
            .chain(self.by_turn.values())
            .filter(|u| u.is_some())
            .count()
    }

    /// Whether the file names the session `id` read from `source`: its `session` is the id (as
    /// a file name, `.jsonl` dropped) or `source` ends with its `source_path`. Files keyed by
    /// `n` are matched this way; uuid-keyed files match through their prompts' uuids.
    pub fn names_session(&self, id: &str, source: &str) -> bool {
        let stem = self
            .session
            .as_deref()
            .map(|s| s.strip_suffix(".jsonl").unwrap_or(s));
        stem == Some(id)
            || self
                .source_path
                .as_deref()
                .is_some_and(|p| !p.is_empty() && source.replace('\\', "/").ends_with(p))
    }
}

#[cfg(test)]
mod tests {
    use crate::judgement::parse_labels;

    use super::*;

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
