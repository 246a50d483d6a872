//! Task specs (docs/design.md §4): the types a spec is read into. Reading and validating a spec
//! file is `harness_config::spec::load`; the sim, the metrics and the runner use these types.

use serde::Serialize;

/// Strategy modes (docs/design.md §7).
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
    /// Whether shell commands (setup, the agent's, checks) may use the network; off unless the
    /// task says `network: true`.
    pub network: bool,
    /// `false` (`cache: false`) when no shell command of the task may be answered by the tool
    /// cache (setup, the agent's calls and checks all run for real).
    pub cache: bool,
    /// The task's own environment variables, added to the shell's allow-list (`env:` mapping).
    pub env: Vec<(String, String)>,
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
    pub needs: Vec<Need>,
    /// The strategy mode the turn is done in (fold+strategies only).
    pub strategy: Option<String>,
    /// A strategy turn the agent leaves open for the user's `/back` (it does not yield at its
    /// `say`). Written on the turn itself, so the agent never reads a turn that has not arrived.
    pub awaits_back: bool,
    /// The reference plan.
    pub script: Vec<Step>,
}

impl TurnSpec {
    /// The delegated detours of the turn, in script order.
    pub fn delegations(&self) -> impl Iterator<Item = &Delegation> {
        self.script.iter().filter_map(|s| match &s.action {
            Action::Delegate(d) => Some(d),
            _ => None,
        })
    }

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
    pub needs: Vec<Need>,
    /// `false` (`cache: false` on the step) when its command's output is not a function of the
    /// workspace (a clock, randomness, the network): the tool cache never answers it.
    pub cache: bool,
}

/// A fact a turn or step needs, and what the agent writes without it.
///
/// Written as a plain string (the fact) or as a map `{fact, value, guess, cue}`:
/// - `fact`: the text that must be visible: a line some earlier step `expect`s, or words of an
///   earlier user message.
/// - `value`: the part of the scripted text (edit `old`/`new`, written content, shell command,
///   report, `say`) that carries the fact; default the fact itself. It must occur in the step's
///   scripted text (for a turn's need, in some step of the turn).
/// - `guess`: what an agent without the fact writes in place of `value`; its checks then fail.
/// - `cue`: the words an agent that lost the fact would search with (`"ConfigError"`): part of
///   the fact, on one line. The sim greps for it (an archive, else the workspace) only while the
///   cue is visible in its request; without a cue it can only re-run a call it can see.
///
/// An agent that lost a fact without a `guess` (a plain-string need) does not make it up: it
/// stops the turn before the step and says what it is missing, like an agent that asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Need {
    /// The text that must be visible.
    pub fact: String,
    /// The scripted text that carries the fact.
    pub value: String,
    /// What is written instead when the fact is lost; `None`: the agent stops and asks.
    pub guess: Option<String>,
    /// The words searched for to get the fact back; `None`: no search, only a re-run.
    pub cue: Option<String>,
}

impl Need {
    /// A plain-string need.
    pub fn plain(fact: impl Into<String>) -> Need {
        let fact = fact.into();
        Need {
            value: fact.clone(),
            fact,
            guess: None,
            cue: None,
        }
    }
}

/// What a step does.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// A workspace tool call.
    Tool {
        /// Tool name (one of [`crate::tools::TOOLS`]).
        name: String,
        /// Arguments.
        args: serde_json::Value,
    },
    /// The closing message of the turn.
    Say(String),
    /// A strategy report (inside a strategy).
    Report(String),
    /// A detour handed to a child session (`delegate: {brief, script}`): under an arm that
    /// offers the `delegate` tool the agent calls it with the brief, and a fresh child follows
    /// `script` seeing only the brief and its own tool results; elsewhere the child's steps
    /// run inline and its closing `say` becomes a report.
    Delegate(Delegation),
}

/// A delegated detour: the brief the parent writes and the child's own script.
#[derive(Debug, Clone, Serialize)]
pub struct Delegation {
    /// What the parent writes to the child: everything the child will know.
    pub brief: String,
    /// The child's steps: tool steps, ending with the `say` that is its receipt.
    pub script: Vec<Step>,
}

impl Delegation {
    /// The child's receipt as scripted (its `say`).
    pub fn receipt(&self) -> &str {
        self.script
            .iter()
            .find_map(|s| match &s.action {
                Action::Say(t) => Some(t.as_str()),
                _ => None,
            })
            .unwrap_or("")
    }

    /// The child's steps run inline in the parent: its tool steps, then its receipt as a
    /// report (a strategy report under `fold+strategies`, nothing elsewhere).
    pub(crate) fn inline_steps(&self) -> impl Iterator<Item = Step> + '_ {
        self.script.iter().map(|s| match &s.action {
            Action::Say(t) => Step {
                action: Action::Report(t.clone()),
                ..s.clone()
            },
            _ => s.clone(),
        })
    }

    /// The child's session as a one-turn task: the brief as its user message, its script.
    pub fn as_turn(&self) -> TurnSpec {
        TurnSpec {
            user: self.brief.clone(),
            unit: "delegated".into(),
            needs: Vec::new(),
            strategy: None,
            awaits_back: false,
            script: self.script.clone(),
        }
    }
}

impl Step {
    /// The texts the step writes: every string of its tool arguments, its report or its `say`.
    pub fn written_texts(&self) -> Vec<String> {
        match &self.action {
            Action::Tool { args, .. } => {
                let mut out = Vec::new();
                strings_of(args, &mut out);
                out
            }
            Action::Say(t) | Action::Report(t) => vec![t.clone()],
            Action::Delegate(d) => vec![d.brief.clone()],
        }
    }

    /// The steps this step stands for: itself, or a delegation's child steps after it.
    pub fn with_nested(&self) -> impl Iterator<Item = &Step> {
        let nested: &[Step] = match &self.action {
            Action::Delegate(d) => &d.script,
            _ => &[],
        };
        std::iter::once(self).chain(nested.iter())
    }
}

/// Every string inside `v`, depth first.
pub(crate) fn strings_of(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings_of(x, out)),
        serde_json::Value::Object(m) => m.values().for_each(|x| strings_of(x, out)),
        _ => {}
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
    /// The shell commands of steps marked `cache: false`: the tool cache never answers them.
    pub fn uncached_commands(&self) -> Vec<String> {
        self.turns
            .iter()
            .flat_map(|t| &t.script)
            .flat_map(Step::with_nested)
            .filter(|s| !s.cache)
            .filter_map(|s| match &s.action {
                Action::Tool { name, args } if name == "shell" => args
                    .get("command")
                    .and_then(|c| c.as_str())
                    .map(str::to_string),
                _ => None,
            })
            .collect()
    }

    /// Number of tool steps in the script.
    pub fn scripted_tool_calls(&self) -> usize {
        self.turns
            .iter()
            .flat_map(|t| &t.script)
            .flat_map(Step::with_nested)
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
    pub(crate) fn unit_of(&self, turn: u32) -> Option<&str> {
        self.turns
            .get((turn as usize).checked_sub(1)?)
            .map(|t| t.unit.as_str())
    }

    /// Whether the unit of `turn` is continued by a turn after `after` (1-based turns).
    pub(crate) fn continued_after(&self, turn: u32, after: u32) -> bool {
        let Some(unit) = self.unit_of(turn) else {
            return false;
        };
        self.turns
            .iter()
            .skip(after as usize)
            .any(|t| t.unit == unit)
    }
}
