//! The policy registry: every policy foldbench can build, by name, with what it is, where it
//! comes from and its parameters.
//!
//! The binary's commands reach policies only through a registry — `run`, `ab` and `replay`
//! build arms with `Registry::build`, the matrix file's arms are checked and their sweeps
//! expanded with [`Registry::check`] and [`Registry::expand`], `--help` and `foldbench
//! policies` list [`Registry::entries`], and docs/policies.md's parameter table is
//! [`Registry::markdown`]. The [`current`] registry is [`Registry::builtin`] until a program
//! [`install`]s another, so a crate outside this workspace adds its own policy and runs the
//! whole command line with it:
//!
//! ```
//! use harness_core::policy::Policy;
//! use policies::registry::{self, Entry, Registry};
//!
//! let mut reg = Registry::builtin();
//! reg.register(
//!     Entry::new("keep-all", |p, b| {
//!         let window = p.take_u64("window")?.unwrap_or(b.window);
//!         Ok(Box::new(policies::NonePolicy::new(window)) as Box<dyn Policy>)
//!     })
//!     .summary("every message, as appended (a copy of `none`)")
//!     .param("window", "(the model's)", "tokens", "the window recorded with the arm"),
//! )
//! .unwrap();
//! assert!(reg.check("keep-all:window=1000").is_ok());
//! let err = reg.check("keep-al").unwrap_err();
//! assert!(err.to_string().contains("did you mean `keep-all`"));
//! registry::install(reg); // from here on, `policies::build` knows `keep-all`
//! ```
//!
//! An entry either takes `k=v` parameters or reads the whole text after its colon
//! ([`Entry::raw`]): the `pipeline` does, and so can a policy the runner registers whose text
//! is a command, whose process the pure crates cannot start.

use std::sync::{Arc, OnceLock, RwLock};

use harness_core::policy::Policy;

use crate::error::{PolicyError, SweepError};
use crate::params::{self, split_top, Params, PolicySpec};
use crate::sweep::{self, Point};

/// A parameter of a policy, for help texts and docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// Name as written (`keep`).
    pub name: String,
    /// Default as written (`3`); in parentheses when computed (`(the model's window)`).
    pub default: String,
    /// Unit (`tool uses`, `tokens`, `events`) or `-`.
    pub unit: String,
    /// What it does, in one sentence.
    pub doc: String,
}

/// What a constructor is given besides the parameters.
pub struct Build<'a> {
    /// The model's context window: the default of a `window` parameter.
    pub window: u64,
    /// The spec being built (a whole-text policy reads its [`PolicySpec::arg`]).
    pub spec: &'a PolicySpec,
    /// The registry building it (a pipeline builds its steps through it).
    pub(crate) registry: &'a Registry,
}

/// Builds a policy from its parameters; the registry reports parameters it did not take.
pub(crate) type BuildFn =
    dyn Fn(&mut Params, &Build<'_>) -> Result<Box<dyn Policy>, PolicyError> + Send + Sync;

/// Checks a whole-text policy's text and gives its canonical form.
pub(crate) type CanonFn = dyn Fn(&Registry, &str) -> Result<String, PolicyError> + Send + Sync;

/// Checks a spec without building it (a policy whose construction is costly: a process).
pub(crate) type CheckFn = dyn Fn(&Registry, &PolicySpec) -> Result<(), PolicyError> + Send + Sync;

/// The arms a whole-text policy's text stands for (the text after its colon in, each arm's
/// text after its colon out).
pub(crate) type SweepFn = dyn Fn(&str) -> Result<Vec<Point>, PolicyError> + Send + Sync;

/// One policy of a registry.
#[derive(Clone)]
pub struct Entry {
    name: String,
    summary: String,
    source: String,
    params: Vec<Param>,
    build: Arc<BuildFn>,
    raw: Option<Arc<CanonFn>>,
    check: Option<Arc<CheckFn>>,
    sweep: Option<Arc<SweepFn>>,
    window_param: Option<String>,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl Entry {
    /// A policy named `name` built by `build` (which takes its parameters from the `Params`).
    pub fn new(
        name: impl Into<String>,
        build: impl Fn(&mut Params, &Build<'_>) -> Result<Box<dyn Policy>, PolicyError>
            + Send
            + Sync
            + 'static,
    ) -> Entry {
        Entry {
            name: name.into(),
            summary: String::new(),
            source: "your own".into(),
            params: Vec::new(),
            build: Arc::new(build),
            raw: None,
            check: None,
            sweep: None,
            window_param: None,
        }
    }

    /// What the policy does, in one line (help texts and `foldbench policies`).
    pub fn summary(mut self, s: impl Into<String>) -> Entry {
        self.summary = s.into();
        self
    }

    /// Where it comes from (`foldbench`, `Anthropic context editing`, ...).
    pub fn source(mut self, s: impl Into<String>) -> Entry {
        self.source = s.into();
        self
    }

    /// The parameter that is the model's context window (the matrix file's `windows` set it),
    /// when it is not named `window`.
    pub(crate) fn window_param(mut self, name: impl Into<String>) -> Entry {
        self.window_param = Some(name.into());
        self
    }

    /// The parameter the matrix file's `windows` set, if the policy takes one.
    pub(crate) fn window_name(&self) -> Option<&str> {
        self.window_param.as_deref().or_else(|| {
            self.params
                .iter()
                .any(|p| p.name == "window")
                .then_some("window")
        })
    }

    /// A parameter: name, default as written, unit, what it does.
    pub fn param(
        mut self,
        name: impl Into<String>,
        default: impl Into<String>,
        unit: impl Into<String>,
        doc: impl Into<String>,
    ) -> Entry {
        self.params.push(Param {
            name: name.into(),
            default: default.into(),
            unit: unit.into(),
            doc: doc.into(),
        });
        self
    }

    /// The policy reads the whole text after its colon: `canon` checks it and gives its
    /// canonical form (kept in [`PolicySpec::arg`]).
    pub fn raw(
        mut self,
        canon: impl Fn(&Registry, &str) -> Result<String, PolicyError> + Send + Sync + 'static,
    ) -> Entry {
        self.raw = Some(Arc::new(canon));
        self
    }

    /// For a whole-text policy ([`Entry::raw`]), the arms a text stands for: `sweep` gets the
    /// text after the colon and gives each arm's (default: the text is one arm).
    pub fn sweep(
        mut self,
        sweep: impl Fn(&str) -> Result<Vec<Point>, PolicyError> + Send + Sync + 'static,
    ) -> Entry {
        self.sweep = Some(Arc::new(sweep));
        self
    }

    /// Checks a spec without building it (default: build it and drop it).
    pub fn check(
        mut self,
        check: impl Fn(&Registry, &PolicySpec) -> Result<(), PolicyError> + Send + Sync + 'static,
    ) -> Entry {
        self.check = Some(Arc::new(check));
        self
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The one-line summary.
    pub fn summary_text(&self) -> &str {
        &self.summary
    }

    /// Where it comes from.
    pub fn source_text(&self) -> &str {
        &self.source
    }

    /// The parameters.
    pub fn params(&self) -> &[Param] {
        &self.params
    }

    /// Whether it reads the whole text after its colon.
    pub(crate) fn is_raw(&self) -> bool {
        self.raw.is_some()
    }

    fn param_names(&self) -> Vec<&str> {
        self.params.iter().map(|p| p.name.as_str()).collect()
    }
}

/// The policies a program can build, in the order `foldbench policies` lists them.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    entries: Vec<Entry>,
}

/// The window a policy is built with when it is only checked (Claude's 200k).
pub(crate) const CHECK_WINDOW: u64 = 200_000;

impl Registry {
    /// A registry with no policy.
    pub(crate) fn empty() -> Registry {
        Registry::default()
    }

    /// foldbench's own policies and the peers' (see docs/policies.md).
    pub fn builtin() -> Registry {
        let mut r = Registry::empty();
        for e in crate::builtin_entries() {
            // The built-in names are distinct and well formed (a unit test holds it).
            let _ = r.register(e);
        }
        r
    }

    /// Adds a policy. Refused: a name taken already, or not made of lowercase letters, digits,
    /// `-`, `_` and `+`.
    pub fn register(&mut self, entry: Entry) -> Result<(), PolicyError> {
        let name = entry.name.as_str();
        if name.is_empty()
            || !name.chars().all(|c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '+')
            })
        {
            return Err(PolicyError::BadName(name.to_string()));
        }
        if self.get(name).is_some() {
            return Err(PolicyError::Taken(name.to_string()));
        }
        self.entries.push(entry);
        Ok(())
    }

    /// The entries, in registration order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The names, in registration order.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// The entry named `name`.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// The policy a name with the [`params::DELEGATE`] modifier is written on (`fold` of
    /// `fold+delegate`), when it is one this registry builds by name (not a whole-text policy).
    fn delegating_base<'t>(&self, head: &'t str) -> Option<&'t str> {
        let base = head.strip_suffix(params::DELEGATE)?.trim();
        self.get(head).is_none().then_some(())?;
        self.get(base).filter(|e| !e.is_raw()).map(|_| base)
    }

    fn unknown(&self, name: &str) -> PolicyError {
        PolicyError::Unknown {
            name: name.to_string(),
            known: self.names().into_iter().map(String::from).collect(),
        }
    }

    /// The name a text starts with: up to its first `:` or `|`.
    fn head(text: &str) -> &str {
        let end = text.find([':', '|']).unwrap_or(text.len());
        text[..end].trim()
    }

    /// The whole-text policy (not `pipeline`) a text starts with, if any.
    fn raw_head(&self, text: &str) -> Option<&Entry> {
        self.get(Registry::head(text.trim()))
            .filter(|e| e.is_raw() && e.name != crate::pipeline::NAME)
    }

    /// The steps of a pipeline's text: its pieces between the `|` outside brackets, except that
    /// a piece naming no policy belongs to the step before it when that step is a whole-text
    /// policy's (`exec:CMD | tee log|trim` is two steps: the command keeps its own pipe).
    pub(crate) fn steps<'t>(&self, text: &'t str) -> Vec<&'t str> {
        let mut out: Vec<&'t str> = Vec::new();
        for piece in split_top(text, '|') {
            let head = Registry::head(piece);
            let names = self.get(head).is_some() || self.delegating_base(head).is_some();
            match out.last_mut() {
                Some(last) if !names && self.raw_head(last).is_some() => {
                    let start = last.as_ptr() as usize - text.as_ptr() as usize;
                    let end = piece.as_ptr() as usize - text.as_ptr() as usize + piece.len();
                    *last = &text[start..end];
                }
                _ => out.push(piece),
            }
        }
        out
    }

    /// Parses one policy text (no sweeps): `NAME[:k=v,...]`, a whole-text policy's
    /// `NAME:TEXT`, or a pipeline `STEP|STEP|...`.
    pub fn parse(&self, text: &str) -> Result<PolicySpec, PolicyError> {
        let text = text.trim();
        let head = Registry::head(text);
        if self.raw_head(text).is_some() && self.steps(text).len() > 1 {
            // A whole-text policy followed by a step of a policy: a pipeline.
            return self.parse(&format!("{}:{text}", crate::pipeline::NAME));
        }
        if let Some(e) = self.get(head) {
            if let Some(canon) = &e.raw {
                let rest = text[head.len()..].trim_start();
                let rest = rest.strip_prefix(':').unwrap_or(rest);
                return Ok(PolicySpec {
                    name: e.name.clone(),
                    params: Default::default(),
                    arg: Some(canon(self, rest)?),
                    delegate: false,
                });
            }
        }
        if let Some(base) = self.delegating_base(head) {
            let rest = &text[head.len()..];
            if rest.trim_start().starts_with('|') {
                return Err(PolicyError::DelegateInPipeline(text.to_string()));
            }
            let mut spec = self.parse(&format!("{base}{rest}"))?;
            spec.delegate = true;
            return Ok(spec);
        }
        if split_top(text, '|').len() > 1 {
            return self.parse(&format!("{}:{text}", crate::pipeline::NAME));
        }
        let spec = params::parse_params_spec(text)?;
        if self.get(&spec.name).is_none() {
            return Err(self.unknown(&spec.name));
        }
        Ok(spec)
    }

    /// Builds a policy for a model with context window `window`.
    pub(crate) fn build(
        &self,
        spec: &PolicySpec,
        window: u64,
    ) -> Result<Box<dyn Policy>, PolicyError> {
        let entry = self
            .get(&spec.name)
            .ok_or_else(|| self.unknown(&spec.name))?;
        let mut p = spec.params();
        let b = Build {
            window,
            spec,
            registry: self,
        };
        let policy = (entry.build)(&mut p, &b).map_err(|e| e.in_policy(&spec.name))?;
        p.finish(&spec.name, &entry.param_names())?;
        Ok(policy)
    }

    /// Checks a spec the way a run builds it (or with the entry's own check).
    pub(crate) fn check_spec(&self, spec: &PolicySpec) -> Result<(), PolicyError> {
        let entry = self
            .get(&spec.name)
            .ok_or_else(|| self.unknown(&spec.name))?;
        match &entry.check {
            Some(check) => check(self, spec),
            None => self.build(spec, CHECK_WINDOW).map(|_| ()),
        }
    }

    /// Checks one policy text (no sweeps).
    pub fn check(&self, text: &str) -> Result<(), PolicyError> {
        self.check_spec(&self.parse(text)?)
    }

    /// Expands a policy text with sweeps into its arms, each checked; a text without a sweep
    /// is one point.
    pub fn expand(&self, text: &str) -> Result<Vec<Point>, PolicyError> {
        let points = self.expand_unchecked(text.trim())?;
        for p in &points {
            self.check(&p.text)?;
        }
        Ok(points)
    }

    fn expand_unchecked(&self, text: &str) -> Result<Vec<Point>, PolicyError> {
        let head = Registry::head(text);
        let body = text
            .strip_prefix(crate::pipeline::NAME)
            .and_then(|r| r.strip_prefix(':'))
            .unwrap_or(text);
        let steps = self.steps(body);
        if let Some(e) = self.raw_head(text).filter(|_| steps.len() == 1) {
            let rest = text[head.len()..].trim_start();
            let rest = rest.strip_prefix(':').unwrap_or(rest);
            return match &e.sweep {
                Some(sweep) => Ok(sweep(rest)?
                    .into_iter()
                    .map(|p| Point {
                        text: format!("{}:{}", e.name, p.text),
                        values: p.values,
                    })
                    .collect()),
                None => Ok(vec![Point {
                    text: text.to_string(),
                    values: Vec::new(),
                }]),
            };
        }
        if steps.len() > 1 || head == crate::pipeline::NAME {
            let mut points = vec![Point {
                text: String::new(),
                values: Vec::new(),
            }];
            for step in steps {
                let these = self.expand_unchecked(step.trim())?;
                if points.len() * these.len() > sweep::MAX_POINTS {
                    return Err(SweepError::TooManyArms {
                        policy: text.to_string(),
                    }
                    .into());
                }
                let mut next = Vec::new();
                for p in &points {
                    for s in &these {
                        let mut values = p.values.clone();
                        values.extend(s.values.iter().cloned());
                        next.push(Point {
                            text: if p.text.is_empty() {
                                s.text.clone()
                            } else {
                                format!("{}|{}", p.text, s.text)
                            },
                            values,
                        });
                    }
                }
                points = next;
            }
            return Ok(points);
        }
        let (name, rest) = match text.split_once(':') {
            Some((n, r)) => (n.trim(), r),
            None => (text, ""),
        };
        if self.get(name).is_none() && self.delegating_base(name).is_none() {
            return Err(self.unknown(name));
        }
        Ok(sweep::expand_pairs(
            name,
            &params::parse_pairs(text, rest)?,
        )?)
    }

    /// `text` with its window (`window`, or the entry's `Entry::window_param`) set to `w`,
    /// when its policy takes a window and the text does not set one (a pipeline: every step
    /// that does).
    pub fn with_window(&self, text: &str, w: u64) -> Option<String> {
        let spec = self.parse(text).ok()?;
        if spec.name == crate::pipeline::NAME {
            let steps: Vec<String> = self
                .steps(spec.arg.as_deref()?)
                .into_iter()
                .map(|s| self.with_window(s, w).unwrap_or_else(|| s.to_string()))
                .collect();
            let out = steps.join("|");
            return (out != spec.arg.clone()?).then_some(out);
        }
        let entry = self.get(&spec.name)?;
        let key = entry.window_name()?;
        if entry.is_raw() || spec.params.contains_key(key) {
            return None;
        }
        let mut s = spec.clone();
        s.params.insert(key.to_string(), w.to_string());
        Some(s.label())
    }

    /// Splits a comma-separated list of arms (`none,trim:keep=1,mode=placeholder`): a comma
    /// starts a new arm when the next piece begins with a policy name or is no `key=value`
    /// parameter (so a misspelt arm, `none,trmi` or `none,fodl:timing=eager`, stands alone and
    /// its error names it), and commas in brackets never do.
    pub fn split_arms(&self, s: &str) -> Vec<String> {
        let mut arms: Vec<String> = Vec::new();
        for piece in split_top(s, ',') {
            let param = piece.trim().split_once('=').is_some_and(|(k, _)| {
                !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            });
            let starts = self.get(Registry::head(piece)).is_some() || !param;
            match arms.last_mut() {
                Some(last) if !starts => {
                    last.push(',');
                    last.push_str(piece.trim());
                }
                _ => arms.push(piece.trim().to_string()),
            }
        }
        arms
    }

    /// The names with their one-line summaries, one per line (help texts).
    pub fn help(&self) -> String {
        let width = self.entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
        self.entries
            .iter()
            .map(|e| format!("  {:width$}  {}", e.name, e.summary))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The parameter table (docs/policies.md, README, `foldbench policies --markdown`): a row
    /// per policy with its parameters, their defaults and units, and its source.
    pub fn markdown(&self) -> String {
        let mut out =
            String::from("| policy | parameters: default (unit) | source |\n|---|---|---|\n");
        for e in &self.entries {
            let params = if e.params.is_empty() {
                "—".to_string()
            } else {
                e.params
                    .iter()
                    .map(|p| {
                        let default = p
                            .default
                            .strip_prefix('(')
                            .and_then(|d| d.strip_suffix(')'))
                            .unwrap_or(&p.default);
                        let unit = if p.unit == "-" {
                            String::new()
                        } else {
                            format!(" ({})", p.unit)
                        };
                        format!("`{}` = {default}{unit}", p.name)
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            let cell = |s: &str| s.replace('|', "\\|");
            out.push_str(&format!(
                "| `{}` | {} | {} |\n",
                e.name,
                cell(&params),
                cell(&e.source)
            ));
        }
        out
    }
}

fn slot() -> &'static RwLock<Arc<Registry>> {
    static CURRENT: OnceLock<RwLock<Arc<Registry>>> = OnceLock::new();
    CURRENT.get_or_init(|| RwLock::new(Arc::new(Registry::builtin())))
}

/// The registry the program builds policies through: [`Registry::builtin`] unless [`install`]
/// put another in place.
pub fn current() -> Arc<Registry> {
    let guard = slot().read().unwrap_or_else(|e| e.into_inner());
    Arc::clone(&guard)
}

/// Makes `registry` the one every command builds policies through, from now on.
pub fn install(registry: Registry) {
    let mut guard = slot().write().unwrap_or_else(|e| e.into_inner());
    *guard = Arc::new(registry);
}

#[cfg(test)]
mod tests;
