//! Task specs (docs/design.md §4): parsing and complete validation into
//! [`harness_core::spec::TaskSpec`].
//!
//! [`load`] reads a spec from its text and reports **every** problem with file, line and column.
//! Checks that need the file system (the fixture folder exists) are done by the runner, which
//! uses [`repo_field`] (or [`load_with_repo`], which reads the text once for both) to place its
//! message.

use std::collections::{BTreeSet, HashMap};

use harness_core::spec::{Action, Check, Delegation, Need, Step, TaskSpec, TurnSpec, MODES};
use harness_core::tools::{self, ArgType};

use crate::yaml::Value;
use crate::yaml::{self, child, key, kind, Problem, Reader, Seg};

const TOP: [&str; 9] = [
    "name",
    "description",
    "repo",
    "setup",
    "network",
    "cache",
    "env",
    "turns",
    "checks",
];
const TURN: [&str; 6] = ["user", "unit", "needs", "strategy", "awaits_back", "script"];
const NEED: [&str; 4] = ["fact", "value", "guess", "cue"];
const STEP_EXTRA: [&str; 3] = ["expect", "needs", "cache"];
const CHECKS: [&str; 4] = ["shell", "file_contains", "file_lacks", "answer_contains"];

/// The `repo` field of a spec and where it is written, read even from a spec with other
/// problems, so the runner can check the fixture folder and report that problem alongside.
pub fn repo_field(file: &str, text: &str) -> Option<(String, (usize, usize))> {
    let doc = yaml::parse(file, text).ok()?;
    repo_of(&doc, &yaml::Locator::new(text))
}

fn repo_of(doc: &Value, locator: &yaml::Locator) -> Option<(String, (usize, usize))> {
    let repo = doc.get("repo")?.as_str()?.to_string();
    Some((repo, locator.locate(&key(&[], "repo"))))
}

/// A spec read by [`load_with_repo`].
#[derive(Debug)]
pub struct Loaded {
    /// The validated spec, or every problem.
    pub spec: Result<TaskSpec, Vec<Problem>>,
    /// The `repo` field and where it is written, as [`repo_field`] gives it (even when the
    /// spec has other problems).
    pub repo: Option<(String, (usize, usize))>,
}

/// [`load`] and [`repo_field`] from one parse of the text (the runner needs both; parsing and
/// indexing a 100,000-turn spec twice doubled its time).
pub fn load_with_repo(file: &str, text: &str) -> Loaded {
    let doc = match yaml::parse(file, text) {
        Ok(d) => d,
        Err(p) => {
            return Loaded {
                spec: Err(vec![p]),
                repo: None,
            }
        }
    };
    let mut r = Reader::new(file, text);
    let repo = repo_of(&doc, r.locator());
    let spec = read_spec(&mut r, &doc);
    Loaded {
        spec: finish(r, spec),
        repo,
    }
}

/// Parses and validates a task spec. `file` names the spec in messages.
pub fn load(file: &str, text: &str) -> Result<TaskSpec, Vec<Problem>> {
    let doc = yaml::parse(file, text).map_err(|p| vec![p])?;
    let mut r = Reader::new(file, text);
    let spec = read_spec(&mut r, &doc);
    finish(r, spec)
}

/// The spec when no problem was found, else every problem.
fn finish(mut r: Reader, spec: Option<TaskSpec>) -> Result<TaskSpec, Vec<Problem>> {
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

/// The task's `env:` mapping: names as the shell takes them, string values.
fn read_env(r: &mut Reader, p: &[Seg], v: &Value) -> Vec<(String, String)> {
    let Some(map) = v.as_mapping() else {
        r.problem(p, format!("`env` must be a mapping, found {}", kind(v)));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, val) in map {
        let Some(name) = k.as_str() else {
            r.problem(p, "`env` has a name that is not a string");
            continue;
        };
        let kp = key(p, name);
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            r.problem(
                &kp,
                format!("`env` name {name:?} must be letters, digits and `_`, not starting with a digit"),
            );
            continue;
        }
        if let Some(value) = r.string(&kp, val, &format!("`env.{name}`")) {
            out.push((name.to_string(), value));
        }
    }
    out
}

fn read_spec(r: &mut Reader, doc: &Value) -> Option<TaskSpec> {
    let fields = r.mapping(&[], doc, "the task spec", &TOP);
    let mut spec = TaskSpec {
        name: String::new(),
        description: String::new(),
        repo: String::new(),
        setup: Vec::new(),
        network: false,
        cache: true,
        env: Vec::new(),
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
            "network" => spec.network = read_bool(r, &p, v, "`network`").unwrap_or(false),
            "cache" => spec.cache = read_bool(r, &p, v, "`cache`").unwrap_or(true),
            "env" => spec.env = read_env(r, &p, v),
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
                format!("missing field `{required}`; see docs/design.md §4 for the spec format"),
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
        awaits_back: false,
        script: Vec::new(),
    };
    let mut has = BTreeSet::new();
    for (k, val) in &fields {
        let kp = key(p, k);
        has.insert(k.clone());
        match k.as_str() {
            "user" => turn.user = r.string(&kp, val, "`user`").unwrap_or_default(),
            "unit" => turn.unit = r.string(&kp, val, "`unit`").unwrap_or_default(),
            "needs" => turn.needs = read_needs(r, &kp, val),
            "awaits_back" => match val.as_bool() {
                Some(b) => turn.awaits_back = b,
                None => r.problem(
                    &kp,
                    format!(
                        "`awaits_back` must be true or false, found {}",
                        yaml::kind(val)
                    ),
                ),
            },
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
                    if let Some(step) = read_step(r, &child(&kp, Seg::Index(i)), s, true) {
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

/// One step; `top` for a turn's own (a `delegate` step, a `report`), not a delegation's child.
fn read_step(r: &mut Reader, p: &[Seg], v: &Value, top: bool) -> Option<Step> {
    let mut allowed: Vec<&str> = tools::names();
    allowed.push("say");
    if top {
        allowed.extend(["report", "delegate"]);
    }
    allowed.extend(STEP_EXTRA);
    let fields = r.mapping(p, v, "a script step", &allowed);
    v.as_mapping()?;
    let mut action = None;
    let mut expect = None;
    let mut needs = Vec::new();
    let mut cache = true;
    let mut actions = 0;
    for (k, val) in &fields {
        let kp = key(p, k);
        match k.as_str() {
            "expect" => expect = r.string(&kp, val, "`expect`"),
            "cache" => cache = read_bool(r, &kp, val, "`cache`").unwrap_or(true),
            "needs" => needs = read_needs(r, &kp, val),
            "say" => {
                actions += 1;
                action = r.string(&kp, val, "`say`").map(Action::Say);
            }
            "report" => {
                actions += 1;
                action = r.string(&kp, val, "`report`").map(Action::Report);
            }
            "delegate" => {
                actions += 1;
                action = read_delegation(r, &kp, val).map(Action::Delegate);
            }
            tool => {
                actions += 1;
                action = read_tool_args(r, &kp, tool, val);
            }
        }
    }
    if actions == 0 {
        let more = if top { ", report, delegate" } else { "" };
        r.problem(
            p,
            format!(
                "a script step needs one action: one of {}, say{more}",
                tools::names().join(", ")
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
        cache,
    })
}

/// A `delegate` step's `{brief, script}`: the brief a non-empty string, the child's script
/// tool steps ending with exactly one `say` (its receipt).
fn read_delegation(r: &mut Reader, p: &[Seg], v: &Value) -> Option<Delegation> {
    let fields = r.mapping(p, v, "`delegate`", &["brief", "script"]);
    v.as_mapping()?;
    let mut brief = None;
    let mut script = Vec::new();
    let mut has_script = false;
    for (k, val) in &fields {
        let kp = key(p, k);
        if k == "brief" {
            brief = r.string(&kp, val, "`brief`");
            if brief.as_deref().is_some_and(|b| b.trim().is_empty()) {
                r.problem(
                    &kp,
                    "`brief` is empty; give what the parent tells the child (all it will know)",
                );
            }
            continue;
        }
        has_script = true;
        for (i, s) in r.sequence(&kp, val, "`script`").iter().enumerate() {
            if let Some(step) = read_step(r, &child(&kp, Seg::Index(i)), s, false) {
                script.push(step);
            }
        }
    }
    if brief.is_none() && !fields.iter().any(|(k, _)| k == "brief") {
        r.problem(
            p,
            "`delegate` needs `brief` (what the parent tells the child)",
        );
    }
    if !has_script {
        r.problem(p, "`delegate` needs `script` (the child's steps, ending with the `say` that is its receipt)");
    } else {
        let says = script
            .iter()
            .filter(|s| matches!(s.action, Action::Say(_)))
            .count();
        let last_says = matches!(script.last().map(|s| &s.action), Some(Action::Say(_)));
        if says != 1 || !last_says {
            r.problem(
                &key(p, "script"),
                format!("a delegation's script has {says} `say` steps; it needs exactly one, last: the child's receipt"),
            );
        }
    }
    Some(Delegation {
        brief: brief?,
        script,
    })
}

/// `true` or `false`.
fn read_bool(r: &mut Reader, p: &[Seg], v: &Value, what: &str) -> Option<bool> {
    let b = v.as_bool();
    if b.is_none() {
        r.problem(
            p,
            format!("{what} must be true or false, found {}", kind(v)),
        );
    }
    b
}

/// A `needs` list: each item a string (the fact) or a map `{fact, value, guess, cue}`.
fn read_needs(r: &mut Reader, p: &[Seg], v: &Value) -> Vec<Need> {
    let mut out = Vec::new();
    for (i, item) in r.sequence(p, v, "`needs`").iter().enumerate() {
        let ip = child(p, Seg::Index(i));
        if item.as_mapping().is_none() {
            if let Some(fact) = r.string(&ip, item, "a `needs` item") {
                out.push(Need::plain(fact));
            }
            continue;
        }
        let fields = r.mapping(&ip, item, "a `needs` item", &NEED);
        let get = |r: &mut Reader, name: &str| {
            fields
                .iter()
                .find(|(k, _)| k == name)
                .and_then(|(k, v)| r.string(&key(&ip, k), v, &format!("`{name}`")))
        };
        let fact = get(r, "fact");
        let value = get(r, "value");
        let guess = get(r, "guess");
        let cue = get(r, "cue");
        let Some(fact) = fact else {
            if !fields.iter().any(|(k, _)| k == "fact") {
                r.problem(
                    &ip,
                    "a `needs` item written as a map needs `fact` (the text that must be visible)",
                );
            }
            continue;
        };
        if value.as_deref() == Some("") {
            r.problem(
                &key(&ip, "value"),
                "`value` is empty; give the scripted text that carries the fact",
            );
        }
        if guess.is_some() && guess == value.clone().or(Some(fact.clone())) {
            r.problem(&key(&ip, "guess"), "`guess` equals the value it replaces; give what an agent without the fact would write instead");
        }
        if let Some(c) = &cue {
            check_cue(r, &key(&ip, "cue"), c, &fact);
        }
        out.push(Need {
            value: value.unwrap_or_else(|| fact.clone()),
            fact,
            guess,
            cue,
        });
    }
    out
}

/// A cue is words of its fact on one line: what a grep for it could find the fact's line by.
fn check_cue(r: &mut Reader, p: &[Seg], cue: &str, fact: &str) {
    if cue.trim().is_empty() {
        r.problem(
            p,
            "`cue` is empty; give the words an agent would search with to find the fact again (e.g. `cue: \"ConfigError\"`)",
        );
    } else if cue.contains('\n') {
        r.problem(
            p,
            format!("`cue` {cue:?} spans lines; a grep matches one line, so give words from one line of the fact"),
        );
    } else if !fact.contains(cue) {
        r.problem(
            p,
            format!("`cue` {cue:?} does not occur in the fact {fact:?}, so a search for it could never find the fact's line; give words of the fact (case and spacing as written)"),
        );
    }
}

/// A tool step's arguments, checked against the tool's own ([`harness_core::tools`]): no
/// unknown one, each of its type, the required ones given.
fn read_tool_args(r: &mut Reader, p: &[Seg], tool: &str, v: &Value) -> Option<Action> {
    let def = tools::find(tool);
    let required: Vec<&str> = def.into_iter().flat_map(|d| d.required()).collect();
    let mut allowed = required.clone();
    allowed.extend(def.into_iter().flat_map(|d| d.optional()));
    let what = format!("`{tool}` arguments");
    let fields = if v.is_null() && required.is_empty() {
        Vec::new()
    } else {
        r.mapping(p, v, &what, &allowed)
    };
    let mut args = serde_json::Map::new();
    for (k, val) in &fields {
        let kp = key(p, k);
        let ty = def.and_then(|d| d.arg(k)).map(|a| a.ty);
        if ty == Some(ArgType::Count) {
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
    let before = r.problems.len();
    let fields = r.mapping(p, v, "a check", &CHECKS);
    if fields.len() != 1 {
        // Unknown keys were reported by `mapping` (not a second time as a missing kind).
        if v.as_mapping().is_some() && fields.is_empty() && r.problems.len() == before {
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
/// that exist, strategies that can be left. Linear in the spec: a need's fact is looked up in the
/// `expect`s so far (a hash map) and in the earlier user messages through [`SaidBy`] (one pass
/// over them for every fact at once).
fn validate_semantics(r: &mut Reader, spec: &TaskSpec) {
    let said = SaidBy::new(spec);
    let mut expected: HashMap<&str, usize> = HashMap::new();
    let tp = key(&[], "turns");
    for (i, turn) in spec.turns.iter().enumerate() {
        let p = child(&tp, Seg::Index(i));
        let n = i + 1;
        let turn_text: Vec<String> = turn
            .script
            .iter()
            .flat_map(Step::with_nested)
            .flat_map(Step::written_texts)
            .collect();
        for (j, need) in turn.needs.iter().enumerate() {
            let np = child(&key(&p, "needs"), Seg::Index(j));
            let source = Source {
                expected: &expected,
                said: &said,
                turn: i,
            };
            check_need(r, &np, need, &format!("turn {n}"), &source, &turn_text);
        }
        let sp = key(&p, "script");
        check_say(r, &sp, turn, n);
        check_strategy_end(r, &p, spec, i);
        // A delegation's child steps follow its step; their facts may come from the turn's own
        // user message too (the parent read it before writing the brief).
        let mut steps: Vec<(Vec<Seg>, String, &Step, usize)> = Vec::new();
        for (j, step) in turn.script.iter().enumerate() {
            let stp = child(&sp, Seg::Index(j));
            steps.push((stp.clone(), format!("step {} of turn {n}", j + 1), step, i));
            if let Action::Delegate(d) = &step.action {
                let dp = key(&key(&stp, "delegate"), "script");
                for (c, s) in d.script.iter().enumerate() {
                    let what = format!("child step {} of step {} of turn {n}", c + 1, j + 1);
                    steps.push((child(&dp, Seg::Index(c)), what, s, i + 1));
                }
            }
        }
        for (stp, what, step, said_before) in steps {
            let step_text = step.written_texts();
            for (k, need) in step.needs.iter().enumerate() {
                let np = child(&key(&stp, "needs"), Seg::Index(k));
                let source = Source {
                    expected: &expected,
                    said: &said,
                    turn: said_before,
                };
                check_need(r, &np, need, &what, &source, &step_text);
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

/// For every fact a need names, the first turn (0-based) whose user message contains it. Built
/// by one Aho-Corasick pass over the user messages for all the facts at once, so checking that
/// a fact was said before a turn costs one hash probe, not a scan of every earlier message
/// (which made validating a 100,000-turn spec quadratic).
struct SaidBy<'a> {
    first: HashMap<&'a str, usize>,
}

impl<'a> SaidBy<'a> {
    fn new(spec: &'a TaskSpec) -> SaidBy<'a> {
        let mut facts: Vec<&str> = spec
            .turns
            .iter()
            .flat_map(|t| {
                t.needs.iter().chain(
                    t.script
                        .iter()
                        .flat_map(Step::with_nested)
                        .flat_map(|s| &s.needs),
                )
            })
            .map(|n| n.fact.as_str())
            .filter(|f| !f.is_empty())
            .collect();
        facts.sort_unstable();
        facts.dedup();
        let mut first = HashMap::new();
        if facts.is_empty() {
            return SaidBy { first };
        }
        match aho_corasick::AhoCorasick::new(&facts) {
            Ok(ac) => {
                for (i, t) in spec.turns.iter().enumerate() {
                    for m in ac.find_overlapping_iter(t.user.as_str()) {
                        first.entry(facts[m.pattern().as_usize()]).or_insert(i);
                    }
                }
            }
            // Patterns too many or too long for the automaton: one scan per fact.
            Err(_) => {
                for f in facts {
                    if let Some(i) = spec.turns.iter().position(|t| t.user.contains(f)) {
                        first.insert(f, i);
                    }
                }
            }
        }
        SaidBy { first }
    }

    /// Whether a user message before turn `turn` (0-based) contains `fact`.
    fn before(&self, fact: &str, turn: usize) -> bool {
        if fact.is_empty() {
            return turn > 0;
        }
        self.first.get(fact).is_some_and(|&t| t < turn)
    }
}

/// Where a need's fact may come from: the `expect`s before it, and the user messages before
/// its turn.
struct Source<'s, 'a> {
    expected: &'s HashMap<&'a str, usize>,
    said: &'s SaidBy<'a>,
    /// The need's turn, 0-based.
    turn: usize,
}

/// A need's fact has a source before it (an `expect` or an earlier user message), and its
/// `value` (when it has a `value` or a `guess`) is part of what the step or turn writes.
fn check_need(
    r: &mut Reader,
    np: &[Seg],
    need: &Need,
    what: &str,
    source: &Source,
    written: &[String],
) {
    let fact = &need.fact;
    if !source.expected.contains_key(fact.as_str()) && !source.said.before(fact, source.turn) {
        r.problem(
            np,
            format!("{what} `needs` {fact:?}, but no earlier step `expect`s it and no earlier user message says it; add `expect: {fact:?}` to the step whose output shows it"),
        );
    }
    let explicit = need.guess.is_some() || need.value != need.fact;
    if explicit && !written.iter().any(|t| t.contains(need.value.as_str())) {
        let at = if need.value != need.fact {
            key(np, "value")
        } else {
            np.to_vec()
        };
        r.problem(
            &at,
            format!("the `value` {:?} of a need of {what} does not occur in what its script writes (tool arguments, report, say); give the part of the scripted text that carries the fact", need.value),
        );
    }
}

/// Exactly one `say`, and it is the last step.
fn check_say(r: &mut Reader, sp: &[Seg], turn: &TurnSpec, n: usize) {
    let says = turn
        .script
        .iter()
        .filter(|s| matches!(s.action, Action::Say(_)))
        .count();
    if turn.script.is_empty() {
        return;
    }
    if says == 0 {
        r.problem(
            sp,
            format!("turn {n} has no `say` step; end its script with the closing message"),
        );
    } else if says > 1 {
        r.problem(
            sp,
            format!("turn {n} has {says} `say` steps; a turn has exactly one closing message"),
        );
    } else if !matches!(turn.script.last().map(|s| &s.action), Some(Action::Say(_))) {
        r.problem(sp, format!("turn {n}: `say` must be the last step (the model answers without a tool call to end a turn)"));
    }
}

/// `awaits_back` is on a strategy turn followed directly by `/back`, and a strategy turn
/// followed by `/back` says so (the agent decides from its own turn whether to yield).
fn check_strategy_end(r: &mut Reader, p: &[Seg], spec: &TaskSpec, i: usize) {
    let turn = &spec.turns[i];
    let n = i + 1;
    let next_back = spec.turns.get(i + 1).is_some_and(TurnSpec::is_back);
    if turn.awaits_back && turn.strategy.is_none() {
        r.problem(
            &key(p, "awaits_back"),
            format!("turn {n} has `awaits_back` but no `strategy`; only a strategy can wait for `/back`"),
        );
    } else if turn.awaits_back && !next_back {
        r.problem(
            &key(p, "awaits_back"),
            format!("turn {n} waits for `/back`, but turn {} is not `/back`; add a `/back` turn or remove `awaits_back`", n + 1),
        );
    } else if turn.strategy.is_some() && !turn.awaits_back && next_back {
        r.problem(
            &key(p, "strategy"),
            format!("turn {n} is followed by `/back` but yields its strategy itself; add `awaits_back: true` to leave the strategy open for the `/back`"),
        );
    }
}

#[cfg(test)]
mod tests;
