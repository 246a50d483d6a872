//! Task specs (DESIGN §4): parsing and complete validation.
//!
//! [`load`] reads a spec from its text and reports **every** problem with file, line and column.
//! Checks that need the file system (the fixture folder exists) are done by the runner, which
//! uses [`repo_field`] to place its message.

use std::collections::{BTreeSet, HashMap};

use crate::yaml::Value;
use serde::Serialize;

use crate::yaml::{self, child, key, Problem, Reader, Seg};

/// The workspace tools a script step may call.
pub const WORKSPACE_TOOLS: [&str; 6] = [
    "read_file",
    "list_files",
    "grep",
    "edit_file",
    "write_file",
    "shell",
];

/// Strategy modes (DESIGN §7).
pub const MODES: [&str; 4] = ["errand", "triage", "intent", "counsel"];

/// The user message that ends an open strategy.
pub const BACK: &str = "/back";

/// A scripted multi-turn coding task.
#[derive(Debug, Clone, Serialize)]
pub struct TaskSpec {
    /// Unique name.
    pub name: String,
    /// One sentence.
    pub description: String,
    /// Fixture folder, relative to the spec's folder.
    pub repo: String,
    /// Shell commands run once before turn 1.
    pub setup: Vec<String>,
    /// The scripted turns.
    pub turns: Vec<TurnSpec>,
    /// What must hold in the final repo.
    pub checks: Vec<Check>,
}

/// One scripted turn.
#[derive(Debug, Clone, Serialize)]
pub struct TurnSpec {
    /// The user's message, word for word.
    pub user: String,
    /// Ground-truth unit label.
    pub unit: String,
    /// Facts the agent must see before starting the turn.
    pub needs: Vec<String>,
    /// The strategy mode the turn is done in (fold+strategies only).
    pub strategy: Option<String>,
    /// The reference plan.
    pub script: Vec<Step>,
}

impl TurnSpec {
    /// The closing message (`say`) of the turn.
    pub fn say(&self) -> &str {
        self.script
            .iter()
            .find_map(|s| match &s.action {
                Action::Say(t) => Some(t.as_str()),
                _ => None,
            })
            .unwrap_or("")
    }

    /// Whether the turn is a `/back`.
    pub fn is_back(&self) -> bool {
        self.user.trim() == BACK
    }
}

/// One step of a script.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// What the step does.
    pub action: Action,
    /// Text the output must contain; it becomes a known fact.
    pub expect: Option<String>,
    /// Facts needed before this step.
    pub needs: Vec<String>,
}

/// What a step does.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// A workspace tool call.
    Tool {
        /// Tool name (one of [`WORKSPACE_TOOLS`]).
        name: String,
        /// Arguments.
        args: serde_json::Value,
    },
    /// The closing message of the turn.
    Say(String),
    /// A strategy report (inside a strategy).
    Report(String),
}

impl Step {
    /// Whether this step changes the workspace.
    pub fn is_edit(&self) -> bool {
        matches!(&self.action, Action::Tool { name, .. } if name == "edit_file" || name == "write_file")
    }
}

/// A check on the final repo.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// A shell command that must exit 0.
    Shell(String),
    /// A file must contain a text.
    FileContains {
        /// Workspace-relative path.
        path: String,
        /// The text.
        text: String,
    },
    /// A file must not contain a text.
    FileLacks {
        /// Workspace-relative path.
        path: String,
        /// The text.
        text: String,
    },
    /// The closing message of a turn must contain a text.
    AnswerContains {
        /// 1-based turn.
        turn: u32,
        /// The text.
        text: String,
    },
}

impl Check {
    /// A short label for reports.
    pub fn label(&self) -> String {
        match self {
            Check::Shell(c) => format!("shell: {c}"),
            Check::FileContains { path, text } => format!("file_contains {path}: {text:?}"),
            Check::FileLacks { path, text } => format!("file_lacks {path}: {text:?}"),
            Check::AnswerContains { turn, text } => {
                format!("answer_contains turn {turn}: {text:?}")
            }
        }
    }
}

impl TaskSpec {
    /// Number of tool steps in the script.
    pub fn scripted_tool_calls(&self) -> usize {
        self.turns
            .iter()
            .flat_map(|t| &t.script)
            .filter(|s| matches!(s.action, Action::Tool { .. }))
            .count()
    }

    /// Distinct units, in order of first appearance.
    pub fn units(&self) -> Vec<&str> {
        let mut seen = Vec::new();
        for t in &self.turns {
            if !seen.contains(&t.unit.as_str()) {
                seen.push(t.unit.as_str());
            }
        }
        seen
    }

    /// The unit label of a turn (1-based).
    pub fn unit_of(&self, turn: u32) -> Option<&str> {
        self.turns
            .get((turn as usize).checked_sub(1)?)
            .map(|t| t.unit.as_str())
    }

    /// Whether the unit of `turn` is continued by a turn after `after` (1-based turns).
    pub fn continued_after(&self, turn: u32, after: u32) -> bool {
        let Some(unit) = self.unit_of(turn) else {
            return false;
        };
        self.turns
            .iter()
            .skip(after as usize)
            .any(|t| t.unit == unit)
    }
}

const TOP: [&str; 6] = ["name", "description", "repo", "setup", "turns", "checks"];
const TURN: [&str; 5] = ["user", "unit", "needs", "strategy", "script"];
const STEP_EXTRA: [&str; 2] = ["expect", "needs"];
const CHECKS: [&str; 4] = ["shell", "file_contains", "file_lacks", "answer_contains"];

/// Required and optional string arguments of each workspace tool.
fn tool_args(name: &str) -> (&'static [&'static str], &'static [&'static str]) {
    match name {
        "read_file" => (&["path"], &["offset", "limit"]),
        "list_files" => (&[], &["path"]),
        "grep" => (&["pattern"], &["path"]),
        "edit_file" => (&["path", "old", "new"], &[]),
        "write_file" => (&["path", "content"], &[]),
        "shell" => (&["command"], &[]),
        _ => (&[], &[]),
    }
}

/// The `repo` field of a spec and where it is written, read even from a spec with other
/// problems, so the runner can check the fixture folder and report that problem alongside.
pub fn repo_field(file: &str, text: &str) -> Option<(String, (usize, usize))> {
    let doc = yaml::parse(file, text).ok()?;
    let repo = doc.get("repo")?.as_str()?.to_string();
    let pos = yaml::Locator::new(text).locate(&key(&[], "repo"));
    Some((repo, pos))
}

/// Parses and validates a task spec. `file` names the spec in messages.
pub fn load(file: &str, text: &str) -> Result<TaskSpec, Vec<Problem>> {
    let doc = yaml::parse(file, text).map_err(|p| vec![p])?;
    let mut r = Reader::new(file, text);
    let spec = read_spec(&mut r, &doc);
    if r.problems.is_empty() {
        if let Some(spec) = spec {
            return Ok(spec);
        }
        r.problem(
            &[],
            "the spec is empty; a task needs name, repo, turns and checks",
        );
    }
    Err(r.problems)
}

fn read_spec(r: &mut Reader, doc: &Value) -> Option<TaskSpec> {
    let fields = r.mapping(&[], doc, "the task spec", &TOP);
    let mut spec = TaskSpec {
        name: String::new(),
        description: String::new(),
        repo: String::new(),
        setup: Vec::new(),
        turns: Vec::new(),
        checks: Vec::new(),
    };
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for (k, v) in &fields {
        let p = key(&[], k);
        seen.insert(k.clone());
        match k.as_str() {
            "name" => {
                if let Some(n) = r.string(&p, v, "`name`") {
                    if n.is_empty()
                        || !n
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    {
                        r.problem(
                            &p,
                            format!("`name` {n:?} must be lowercase letters, digits and dashes"),
                        );
                    }
                    spec.name = n;
                }
            }
            "description" => {
                spec.description = r.string(&p, v, "`description`").unwrap_or_default()
            }
            "repo" => {
                if let Some(repo) = r.string(&p, v, "`repo`") {
                    if repo.starts_with('/') || repo.split('/').any(|s| s == "..") {
                        r.problem(&p, format!("`repo` {repo:?} must be a folder below the spec's folder (no absolute path, no `..`)"));
                    }
                    spec.repo = repo;
                }
            }
            "setup" => spec.setup = r.strings(&p, v, "`setup`"),
            "turns" => {
                for (i, t) in r.sequence(&p, v, "`turns`").iter().enumerate() {
                    if let Some(turn) = read_turn(r, &child(&p, Seg::Index(i)), t, i + 1) {
                        spec.turns.push(turn);
                    }
                }
            }
            "checks" => {
                for (i, c) in r.sequence(&p, v, "`checks`").iter().enumerate() {
                    if let Some(check) = read_check(r, &child(&p, Seg::Index(i)), c) {
                        spec.checks.push(check);
                    }
                }
            }
            _ => {}
        }
    }
    doc.as_mapping()?;
    for required in ["name", "repo", "turns", "checks"] {
        if !seen.contains(required) {
            r.problem(
                &[],
                format!("missing field `{required}`; see DESIGN §4 for the spec format"),
            );
        }
    }
    if seen.contains("turns") && spec.turns.is_empty() && r.problems.is_empty() {
        r.problem(
            &key(&[], "turns"),
            "`turns` is empty; a task needs at least one turn",
        );
    }
    validate_semantics(r, &spec);
    Some(spec)
}

fn read_turn(r: &mut Reader, p: &[Seg], v: &Value, n: usize) -> Option<TurnSpec> {
    let what = format!("turn {n}");
    let fields = r.mapping(p, v, &what, &TURN);
    v.as_mapping()?;
    let mut turn = TurnSpec {
        user: String::new(),
        unit: String::new(),
        needs: Vec::new(),
        strategy: None,
        script: Vec::new(),
    };
    let mut has = BTreeSet::new();
    for (k, val) in &fields {
        let kp = key(p, k);
        has.insert(k.clone());
        match k.as_str() {
            "user" => turn.user = r.string(&kp, val, "`user`").unwrap_or_default(),
            "unit" => turn.unit = r.string(&kp, val, "`unit`").unwrap_or_default(),
            "needs" => turn.needs = r.strings(&kp, val, "`needs`"),
            "strategy" => {
                if let Some(s) = r.string(&kp, val, "`strategy`") {
                    if !MODES.contains(&s.as_str()) {
                        r.problem(
                            &kp,
                            format!(
                                "unknown strategy `{s}`; expected one of: {}",
                                MODES.join(", ")
                            ),
                        );
                    }
                    turn.strategy = Some(s);
                }
            }
            "script" => {
                let steps = r.sequence(&kp, val, "`script`");
                if steps.is_empty() && val.as_sequence().is_some() {
                    r.problem(
                        &kp,
                        format!("{what} has an empty script; give at least a `say` step"),
                    );
                }
                for (i, s) in steps.iter().enumerate() {
                    if let Some(step) = read_step(r, &child(&kp, Seg::Index(i)), s) {
                        turn.script.push(step);
                    }
                }
            }
            _ => {}
        }
    }
    for required in ["user", "unit", "script"] {
        if !has.contains(required) {
            r.problem(p, format!("{what} has no `{required}`"));
        }
    }
    Some(turn)
}

fn read_step(r: &mut Reader, p: &[Seg], v: &Value) -> Option<Step> {
    let mut allowed: Vec<&str> = WORKSPACE_TOOLS.to_vec();
    allowed.extend(["say", "report"]);
    allowed.extend(STEP_EXTRA);
    let fields = r.mapping(p, v, "a script step", &allowed);
    v.as_mapping()?;
    let mut action = None;
    let mut expect = None;
    let mut needs = Vec::new();
    let mut actions = 0;
    for (k, val) in &fields {
        let kp = key(p, k);
        match k.as_str() {
            "expect" => expect = r.string(&kp, val, "`expect`"),
            "needs" => needs = r.strings(&kp, val, "`needs`"),
            "say" => {
                actions += 1;
                action = r.string(&kp, val, "`say`").map(Action::Say);
            }
            "report" => {
                actions += 1;
                action = r.string(&kp, val, "`report`").map(Action::Report);
            }
            tool => {
                actions += 1;
                action = read_tool_args(r, &kp, tool, val);
            }
        }
    }
    if actions == 0 {
        r.problem(
            p,
            format!(
                "a script step needs one action: one of {}, say, report",
                WORKSPACE_TOOLS.join(", ")
            ),
        );
    } else if actions > 1 {
        r.problem(
            p,
            "a script step has more than one action; split it into several steps",
        );
    }
    if expect.is_some() && !matches!(action, Some(Action::Tool { .. })) && actions == 1 {
        r.problem(
            &key(p, "expect"),
            "`expect` belongs on a tool step (it checks the tool's output)",
        );
    }
    action.map(|action| Step {
        action,
        expect,
        needs,
    })
}

fn read_tool_args(r: &mut Reader, p: &[Seg], tool: &str, v: &Value) -> Option<Action> {
    let (required, optional) = tool_args(tool);
    let mut allowed: Vec<&str> = required.to_vec();
    allowed.extend(optional);
    let what = format!("`{tool}` arguments");
    let fields = if v.is_null() && required.is_empty() {
        Vec::new()
    } else {
        r.mapping(p, v, &what, &allowed)
    };
    let mut args = serde_json::Map::new();
    for (k, val) in &fields {
        let kp = key(p, k);
        if k == "offset" || k == "limit" {
            if let Some(n) = r.uint(&kp, val, &format!("`{k}`")) {
                args.insert(k.clone(), serde_json::Value::from(n));
            }
        } else if let Some(s) = r.string(&kp, val, &format!("`{k}`")) {
            args.insert(k.clone(), serde_json::Value::String(s));
        }
    }
    for req in required {
        if !fields.iter().any(|(k, _)| k == req) && (v.is_mapping() || v.is_null()) {
            r.problem(p, format!("`{tool}` needs the argument `{req}`"));
        }
    }
    Some(Action::Tool {
        name: tool.to_string(),
        args: serde_json::Value::Object(args),
    })
}

fn read_check(r: &mut Reader, p: &[Seg], v: &Value) -> Option<Check> {
    let fields = r.mapping(p, v, "a check", &CHECKS);
    if fields.len() != 1 {
        if v.as_mapping().is_some()
            && fields.is_empty()
            && r.problems.iter().all(|x| x.line != r.locate(p).0)
        {
            r.problem(p, format!("a check needs one of: {}", CHECKS.join(", ")));
        } else if fields.len() > 1 {
            r.problem(
                p,
                "a check has more than one kind; write one check per list item",
            );
        }
        return None;
    }
    let (k, val) = &fields[0];
    let kp = key(p, k);
    match k.as_str() {
        "shell" => r.string(&kp, val, "`shell`").map(Check::Shell),
        "file_contains" | "file_lacks" => {
            let f = r.mapping(&kp, val, &format!("`{k}`"), &["path", "text"]);
            let get = |r: &mut Reader, name: &str| match f.iter().find(|(n, _)| n == name) {
                Some((_, v)) => r.string(&key(&kp, name), v, &format!("`{name}`")),
                None => {
                    r.problem(&kp, format!("`{k}` needs `{name}`"));
                    None
                }
            };
            let path = get(r, "path");
            let text = get(r, "text");
            let (path, text) = (path?, text?);
            Some(if k == "file_contains" {
                Check::FileContains { path, text }
            } else {
                Check::FileLacks { path, text }
            })
        }
        _ => {
            let f = r.mapping(&kp, val, "`answer_contains`", &["turn", "text"]);
            let mut turn = None;
            let mut text = None;
            for (n, v) in &f {
                if n == "turn" {
                    let tp = key(&kp, n);
                    turn = r.uint(&tp, v, "`turn`");
                    if let Some(t) = turn.filter(|t| u32::try_from(*t).is_err()) {
                        r.problem(&tp, format!("`turn` {t} is out of range; turns are numbered from 1 to the number of turns"));
                        return None;
                    }
                } else {
                    text = r.string(&key(&kp, n), v, "`text`");
                }
            }
            if turn.is_none() && !f.iter().any(|(n, _)| n == "turn") {
                r.problem(&kp, "`answer_contains` needs `turn`");
            }
            if text.is_none() && !f.iter().any(|(n, _)| n == "text") {
                r.problem(&kp, "`answer_contains` needs `text`");
            }
            Some(Check::AnswerContains {
                turn: u32::try_from(turn?).ok()?,
                text: text?,
            })
        }
    }
}

/// Rules across fields: needs after expects, a `say` closing every turn, checks that name turns
/// that exist, strategies that can be left.
fn validate_semantics(r: &mut Reader, spec: &TaskSpec) {
    let mut expected: HashMap<&str, usize> = HashMap::new();
    let tp = key(&[], "turns");
    for (i, turn) in spec.turns.iter().enumerate() {
        let p = child(&tp, Seg::Index(i));
        let n = i + 1;
        for (j, fact) in turn.needs.iter().enumerate() {
            if !expected.contains_key(fact.as_str()) {
                r.problem(
                    &child(&key(&p, "needs"), Seg::Index(j)),
                    format!("turn {n} `needs` {fact:?}, but no earlier step `expect`s it; add `expect: {fact:?}` to the step whose output shows it"),
                );
            }
        }
        let sp = key(&p, "script");
        let says = turn
            .script
            .iter()
            .filter(|s| matches!(s.action, Action::Say(_)))
            .count();
        if !turn.script.is_empty() {
            if says == 0 {
                r.problem(
                    &sp,
                    format!("turn {n} has no `say` step; end its script with the closing message"),
                );
            } else if says > 1 {
                r.problem(
                    &sp,
                    format!(
                        "turn {n} has {says} `say` steps; a turn has exactly one closing message"
                    ),
                );
            } else if !matches!(turn.script.last().map(|s| &s.action), Some(Action::Say(_))) {
                r.problem(&sp, format!("turn {n}: `say` must be the last step (the model answers without a tool call to end a turn)"));
            }
        }
        for (j, step) in turn.script.iter().enumerate() {
            let stp = child(&sp, Seg::Index(j));
            for (k, fact) in step.needs.iter().enumerate() {
                if !expected.contains_key(fact.as_str()) {
                    r.problem(
                        &child(&key(&stp, "needs"), Seg::Index(k)),
                        format!("step {} of turn {n} `needs` {fact:?}, but no earlier step `expect`s it; add `expect: {fact:?}` to the step whose output shows it", j + 1),
                    );
                }
            }
            if let Some(e) = &step.expect {
                if e.is_empty() {
                    r.problem(
                        &key(&stp, "expect"),
                        "`expect` is empty; give a text the output must contain",
                    );
                }
                expected.entry(e.as_str()).or_insert(n);
            }
        }
    }
    let cp = key(&[], "checks");
    for (i, c) in spec.checks.iter().enumerate() {
        if let Check::AnswerContains { turn, .. } = c {
            if *turn == 0 || *turn as usize > spec.turns.len() {
                r.problem(
                    &key(&key(&child(&cp, Seg::Index(i)), "answer_contains"), "turn"),
                    format!(
                        "`answer_contains` names turn {turn}, but the task has turns 1 to {}",
                        spec.turns.len()
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"name: t
description: d
repo: fixtures/t
turns:
  - user: "find the port"
    unit: a
    script:
      - read_file: { path: src/a.py }
        expect: "PORT = 8080"
      - say: "found it"
  - user: "ok, change it"
    unit: a
    needs: ["PORT = 8080"]
    script:
      - edit_file: { path: src/a.py, old: "PORT = 8080", new: "PORT = 0" }
      - say: "done"
checks:
  - shell: "python3 -m unittest"
  - file_contains: { path: src/a.py, text: "PORT = 0" }
  - answer_contains: { turn: 2, text: "done" }
"#;

    #[test]
    fn loads_a_good_spec() {
        let s = load("t.yaml", GOOD).unwrap();
        assert_eq!(s.turns.len(), 2);
        assert_eq!(s.scripted_tool_calls(), 2);
        assert_eq!(s.turns[1].needs, vec!["PORT = 8080"]);
        assert_eq!(s.checks.len(), 3);
        assert_eq!(s.turns[0].say(), "found it");
    }

    #[test]
    fn reports_every_problem_with_positions() {
        let bad = GOOD
            .replace("description: d", "description: d\ncolour: red")
            .replace("needs: [\"PORT = 8080\"]", "needs: [\"PORT = 9090\"]")
            .replace("      - say: \"found it\"\n", "");
        let problems = load("bad.yaml", &bad).unwrap_err();
        let text: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        assert!(
            text.iter()
                .any(|t| t.starts_with("bad.yaml:3:1: unknown field `colour`")),
            "{text:#?}"
        );
        assert!(
            text.iter()
                .any(|t| t.starts_with("bad.yaml:8:5: turn 1 has no `say` step")),
            "{text:#?}"
        );
        assert!(
            text.iter()
                .any(|t| t.starts_with("bad.yaml:13:13: turn 2 `needs` \"PORT = 9090\"")),
            "{text:#?}"
        );
        assert_eq!(problems.len(), 3, "{text:#?}");
    }

    #[test]
    fn rejects_unknown_tools_and_missing_arguments() {
        let bad = GOOD
            .replace(
                "read_file: { path: src/a.py }",
                "read_fil: { path: src/a.py }",
            )
            .replace(
                "edit_file: { path: src/a.py, old: \"PORT = 8080\", new: \"PORT = 0\" }",
                "edit_file: { path: src/a.py, new: \"PORT = 0\" }",
            );
        let problems = load("bad.yaml", &bad).unwrap_err();
        let text: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        assert!(
            text.iter()
                .any(|t| t.contains("unknown field `read_fil` in a script step")),
            "{text:#?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("`edit_file` needs the argument `old`")),
            "{text:#?}"
        );
    }

    #[test]
    fn empty_script_and_bad_turn_reference() {
        let bad = GOOD.replace(
            "    script:\n      - edit_file: { path: src/a.py, old: \"PORT = 8080\", new: \"PORT = 0\" }\n      - say: \"done\"\n",
            "    script: []\n",
        ).replace("turn: 2", "turn: 7");
        let problems = load("bad.yaml", &bad).unwrap_err();
        let text: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        assert!(
            text.iter()
                .any(|t| t.contains("turn 2 has an empty script")),
            "{text:#?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("names turn 7, but the task has turns 1 to 2")),
            "{text:#?}"
        );
    }

    #[test]
    fn never_panics_on_odd_documents() {
        for doc in [
            "",
            "[]",
            "3",
            "name: [",
            "turns: 5",
            "turns: [1, 2]",
            "checks: [{}]",
            "\u{0}",
        ] {
            let _ = load("odd.yaml", doc);
        }
    }
}
