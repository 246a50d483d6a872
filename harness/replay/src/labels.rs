//! Unit labels of recorded sessions, in the format of `tests/fixtures/real-sessions/labels/`: one YAML file per
//! session, each human prompt keyed by its record's `uuid` with the unit of work it belongs to.
//!
//! ```yaml
//! session: "03eb5929-....jsonl"
//! turns:
//!   - uuid: "13f97369-..."   # the user record's uuid (HumanTurn::id)
//!     n: 1                   # null: not a prompt (slash-command plumbing); skipped
//!     unit: a                # the unit of work; units are named per file
//!     starts_unit: true      # informative; the unit names decide
//! units:
//!   a: "what the unit is"
//! ```
//!
//! Other fields (`text`, `chars`, `note`, `reason`, `abandoned_branch`, ...) are ignored. Units are
//! looked up through the prompts' uuids, so a labels file applies to whichever imported session
//! holds those prompts, whatever the file is called.
//!
//! A file with `key: "n"` (Codex, whose prompts carry no record id) keys its turns by the
//! importer's turn number instead ([`harness_config::parse_labels`]); it applies to the session its
//! `session` names (the session id as a file name) or whose path ends with its `source_path`.

use std::collections::HashMap;

use harness_config::yaml::Problem;
use harness_import::ImportedSession;

/// The labels of any number of files, by prompt uuid.
#[derive(Debug, Clone, Default)]
pub struct Labels {
    /// uuid → (file index, unit name).
    by_uuid: HashMap<String, (usize, String)>,
    /// Files keyed by turn number: (file index, the file).
    by_turn: Vec<(usize, harness_core::judge::SessionLabels)>,
    /// The files read, in order.
    files: Vec<String>,
}

impl Labels {
    /// No labels.
    pub fn new() -> Labels {
        Labels::default()
    }

    /// Whether no prompt is labelled.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many prompts are labelled.
    pub(crate) fn len(&self) -> usize {
        self.by_uuid.len() + self.by_turn.iter().map(|(_, l)| l.prompts()).sum::<usize>()
    }

    /// Reads one labels file (`name` names it in problems). Returns how many prompts it labels.
    /// Every problem is reported, with its line and column; nothing is added when there is one.
    pub fn add_file(&mut self, name: &str, text: &str) -> Result<usize, Vec<Problem>> {
        // One reader of the labels format, shared with the judge's dataset builder.
        let parsed = harness_config::parse_labels(name, text)?;
        Ok(self.add_parsed(name, parsed))
    }

    /// Adds one labels file already parsed ([`harness_config::parse_labels`]; `name`
    /// names it). Returns how many prompts it labels.
    pub fn add_parsed(&mut self, name: &str, parsed: harness_core::judge::SessionLabels) -> usize {
        let index = self.files.len();
        self.files.push(name.to_string());
        if parsed.key == harness_core::judge::LabelKey::Turn {
            let n = parsed.prompts();
            self.by_turn.push((index, parsed));
            return n;
        }
        let mut n = 0;
        for (uuid, unit) in parsed.units {
            if let Some(unit) = unit {
                self.by_uuid.insert(uuid, (index, unit));
                n += 1;
            }
        }
        n
    }

    /// The unit of each human turn of a session (one per human turn, in order), or `None` when none of its
    /// prompts is labelled. A prompt the labels do not name gets `None`.
    pub fn units_of(&self, session: &ImportedSession) -> Option<Vec<Option<String>>> {
        let by_turn = self
            .by_turn
            .iter()
            .find(|(_, l)| l.names_session(&session.id, &session.source));
        if let Some((file, l)) = by_turn {
            let units: Vec<Option<String>> = session
                .human_turns
                .iter()
                .map(|h| {
                    l.label(None, h.turn)
                        .and_then(Option::as_ref)
                        .map(|unit| format!("{file}:{unit}"))
                })
                .collect();
            return units.iter().any(Option::is_some).then_some(units);
        }
        let units: Vec<Option<String>> = session
            .human_turns
            .iter()
            .map(|h| {
                h.id.as_deref()
                    .and_then(|id| self.by_uuid.get(id))
                    .map(|(file, unit)| format!("{file}:{unit}"))
            })
            .collect();
        units.iter().any(Option::is_some).then_some(units)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"session: "s.jsonl"
turns:
  - uuid: "u1"
    n: 1
    unit: a
    starts_unit: true
    note: "x"
  - uuid: "cmd"
    n: null
    unit: null
    reason: "plumbing"
  - uuid: "u2"
    n: 2
    unit: b
units:
  a: "first"
"#;

    #[test]
    fn reads_prompts_and_skips_plumbing() {
        let mut l = Labels::new();
        assert_eq!(l.add_file("s.yaml", FILE), Ok(2));
        assert_eq!(l.len(), 2);
    }

    #[test]
    fn problems_have_positions() {
        let mut l = Labels::new();
        let e = l
            .add_file("bad.yaml", "turns:\n  - n: 1\n    unit: a\n")
            .unwrap_err();
        assert_eq!(e.len(), 1);
        assert!(e[0].message.contains("needs `uuid`"), "{}", e[0]);
        assert_eq!(e[0].line, 2);
        let e = l.add_file("bad.yaml", "- 1\n- 2\n").unwrap_err();
        assert!(e[0].message.contains("must be a mapping"), "{}", e[0]);
        let e = l.add_file("bad.yaml", "turns: [\n").unwrap_err();
        assert_eq!(e.len(), 1);
        assert!(l.is_empty());
    }
}
