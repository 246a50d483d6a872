//! The matrix file (`foldbench.yaml`), stable cell ids and partitions (docs/design.md §10).
//!
//! A matrix file names what `foldbench run` crosses — tasks × arms × models × seeds — and the
//! price table and regression thresholds, in profiles layered on each other like cargo-nextest's:
//! the top-level fields, then `profiles.default`, then the profile named with `--profile`. Lists
//! (tasks, arms, models, seeds, windows) replace the layer below; maps (prices, regression) are
//! merged key by key. Command-line flags override the result (the runner does that).
//!
//! ```yaml
//! version: 1
//! profiles:
//!   default:
//!     tasks: ["tasks/*.yaml"]            # files, folders or globs, relative to this file
//!     arms: [none, trim, compact, fold, fold+strategies]
//!     models: [sim]
//!     seeds: 1-3                          # `1-3`, `1,2,5`, or a list
//!   ci:
//!     tasks: [tasks/trim-rerun.yaml, tasks/build-then-turn-off.yaml]
//!     arms:
//!       - none
//!       - { label: trim, policy: "trim:keep=0" }          # a label bound to parameters
//!       - { policy: fold, model: "sim:judge=eager" }     # an arm on its own model
//!       - "trim:keep=0..2"                                # a sweep: three arms, trim:keep=0 ...
//!       - { label: f, policy: "fold:card_after_tool_calls=[5,10]" }  # f:card_after_tool_calls=5 ...
//!     seeds: 1-2
//!     windows: [200000]                   # the `window` of every policy that takes one
//!     prices:
//!       default: { input: 3.0, cache_write: 1.25, cache_read: 0.1, output: 5.0 }
//!     regression:                          # for `foldbench compare --fail-on-regression`
//!       success: 0                         # cells that may flip from success
//!       reruns: 0.5                        # largest allowed rise of the median
//!       median_request_tokens: 5%
//! ```
//!
//! [`load`] parses and validates a file completely, reporting **every** problem with file, line
//! and column (policies and models are checked through a [`Vocabulary`] the runner supplies, so
//! the core stays free of the `policies` crate; the vocabulary also expands an arm's sweep into
//! the arms it stands for, each remembering the sweep in [`ArmDef::sweep`]). [`expand`] gives the cells in a fixed order with
//! their stable ids `task/arm/model/seed`; a [`Partition`] (`hash:K/N`, `slice:K/N`) picks one
//! shard of them.

use std::collections::BTreeMap;
use std::fmt;

use crate::yaml::Value;
use serde::{Deserialize, Serialize};

pub(crate) use crate::error::MatrixError;

use crate::yaml::{self, child, key, kind, Problem, Reader, Seg};
use harness_core::cell_id;
use harness_core::metrics::Price;
use harness_core::regression::{self, Threshold};

/// Version of the matrix file format (the optional `version:` field).
pub(crate) const MATRIX_VERSION: u64 = 1;

/// The profile used when none is named.
pub const DEFAULT_PROFILE: &str = "default";

/// The matrix file's name at the root of a project.
pub const DEFAULT_FILE: &str = "foldbench.yaml";

const LAYER: [&str; 7] = [
    "tasks",
    "arms",
    "models",
    "seeds",
    "windows",
    "prices",
    "regression",
];
const ARM: [&str; 3] = ["label", "policy", "model"];
const PRICE: [&str; 4] = ["input", "cache_write", "cache_read", "output"];

/// Checks of the words a matrix file uses that only the runner knows: policy texts
/// (`trim:keep=1`) and model labels (`sim:judge=eager`). Each returns the problem in its own
/// error type; its message is the problem's.
pub struct Vocabulary<'a> {
    /// Checks a policy text and expands its sweeps (`trim:keep=0..2`) into the arms it stands
    /// for, given the text and the arm's label as written; a text without a sweep is one arm.
    pub policy: &'a PolicyCheck,
    /// The policy text with its window set to this size, when its policy takes a window the
    /// text does not set (what `windows` does to each arm).
    pub window: &'a dyn Fn(&str, u64) -> Option<String>,
    /// Checks a model label.
    pub model: &'a dyn Fn(&str) -> Result<(), VocabError>,
}

/// A [`Vocabulary`] check's refusal, in the checker's own error type (the config crate knows
/// neither the policies nor the models).
pub(crate) type VocabError = Box<dyn std::error::Error + Send + Sync>;

/// A policy check: the text and its arm's label in, the arms it stands for out.
pub(crate) type PolicyCheck = dyn Fn(&str, &str) -> Result<Vec<SweepPoint>, VocabError>;

/// One arm a policy text stands for: the text with its swept values in place, the arm's label
/// (naming the values) and the values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepPoint {
    /// The policy text of the arm.
    pub policy: String,
    /// Its label.
    pub label: String,
    /// The swept parameters and this arm's values, in the order written (empty: no sweep).
    pub values: Vec<(String, String)>,
}

/// Where an arm comes from when a sweep made it: the arm as written and the values it took,
/// so reports can keep the arms of one sweep together and draw them as one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepOf {
    /// The arm's label as written, before the sweep expanded it.
    pub arm: String,
    /// The swept parameters and this arm's values, in the order written.
    pub values: Vec<(String, String)>,
}

/// A task file, folder or glob as written, with where it is written (the runner reports a
/// pattern that matches nothing there).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskPattern {
    /// The pattern, relative to the matrix file's folder.
    pub pattern: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
}

/// An arm of the matrix: a label (the `arm` of cell ids) bound to a policy text, optionally on
/// its own models.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArmDef {
    /// Label, unique in the matrix.
    pub label: String,
    /// Policy text `NAME[:k=v,...]`.
    pub policy: String,
    /// Models this arm runs on instead of the matrix's `models`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<String>>,
    /// Whether the policy takes a `window` parameter it does not set itself (so `windows` apply).
    #[serde(skip)]
    pub takes_window: bool,
    /// The sweep that made this arm, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepOf>,
}

impl ArmDef {
    /// An arm whose label is its policy text.
    pub fn plain(policy: &str) -> ArmDef {
        ArmDef {
            label: policy.to_string(),
            policy: policy.to_string(),
            models: None,
            takes_window: false,
            sweep: None,
        }
    }
}

/// One layer of settings: the file's top level, or a profile. `None` means "not set here".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Layer {
    /// Task files, folders or globs.
    pub tasks: Option<Vec<TaskPattern>>,
    /// Arms.
    pub arms: Option<Vec<ArmDef>>,
    /// Model labels.
    pub models: Option<Vec<String>>,
    /// Seeds.
    pub seeds: Option<Vec<u64>>,
    /// Context windows; each arm whose policy takes a `window` runs once per window.
    pub windows: Option<Vec<u64>>,
    /// Prices per model name (`default` for the rest).
    pub prices: BTreeMap<String, Price>,
    /// Regression thresholds per metric (see [`regression::COMPARED`]).
    pub regression: BTreeMap<String, Threshold>,
}

impl Layer {
    /// Puts `top` over this layer: lists replace, maps merge key by key.
    pub(crate) fn overlay(&mut self, top: &Layer) {
        if top.tasks.is_some() {
            self.tasks.clone_from(&top.tasks);
        }
        if top.arms.is_some() {
            self.arms.clone_from(&top.arms);
        }
        if top.models.is_some() {
            self.models.clone_from(&top.models);
        }
        if top.seeds.is_some() {
            self.seeds.clone_from(&top.seeds);
        }
        if top.windows.is_some() {
            self.windows.clone_from(&top.windows);
        }
        for (k, v) in &top.prices {
            self.prices.insert(k.clone(), *v);
        }
        for (k, v) in &top.regression {
            self.regression.insert(k.clone(), *v);
        }
    }
}

/// A parsed and validated matrix file.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixFile {
    /// The file, as named in messages.
    pub(crate) file: String,
    /// The top-level fields.
    pub(crate) base: Layer,
    /// The profiles, in file order.
    pub(crate) profiles: Vec<(String, Layer)>,
}

impl MatrixFile {
    /// The profile names, in file order.
    pub(crate) fn profile_names(&self) -> Vec<&str> {
        self.profiles.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The settings of a profile: the top level, then `default`, then `name`.
    pub fn profile(&self, name: &str) -> Result<Layer, MatrixError> {
        let get = |n: &str| self.profiles.iter().find(|(p, _)| p == n).map(|(_, l)| l);
        let mut layer = self.base.clone();
        if let Some(d) = get(DEFAULT_PROFILE) {
            layer.overlay(d);
        }
        if name != DEFAULT_PROFILE {
            match get(name) {
                Some(p) => layer.overlay(p),
                None => {
                    return Err(MatrixError::NoProfile {
                        file: self.file.clone(),
                        name: name.to_string(),
                        defined: self.profile_names().into_iter().map(String::from).collect(),
                    });
                }
            }
        }
        Ok(layer)
    }
}

/// The most seeds one range (`FIRST-LAST`) gives.
pub(crate) const MAX_SEED_RANGE: u64 = 10_000;

/// Parses `1-3` or `1,2,5` into seeds (each once).
pub fn parse_seeds(s: &str) -> Result<Vec<u64>, MatrixError> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let part = part.trim();
        if let Some((a, b)) = part.split_once('-') {
            let end = |x: &str| {
                x.trim()
                    .parse::<u64>()
                    .map_err(|source| MatrixError::BadSeedRange {
                        range: part.to_string(),
                        source,
                    })
            };
            let (a, b) = (end(a)?, end(b)?);
            if a > b {
                return Err(MatrixError::SeedsBackwards {
                    range: part.to_string(),
                    first: a,
                    last: b,
                });
            }
            if b - a >= MAX_SEED_RANGE {
                return Err(MatrixError::TooManySeeds {
                    range: part.to_string(),
                    first: a,
                    last: b,
                });
            }
            out.extend(a..=b);
        } else {
            out.push(part.parse().map_err(|source| MatrixError::BadSeed {
                seed: part.to_string(),
                source,
            })?);
        }
    }
    if out.is_empty() {
        return Err(MatrixError::NoSeeds);
    }
    check_unique_seeds(&out)?;
    Ok(out)
}

fn check_unique_seeds(seeds: &[u64]) -> Result<(), MatrixError> {
    let mut seen = std::collections::BTreeSet::new();
    for s in seeds {
        if !seen.insert(*s) {
            return Err(MatrixError::SeedTwice(*s));
        }
    }
    Ok(())
}

/// `label` with one more `k=v` after it (`trim` → `trim:window=4000`, `trim:keep=1` →
/// `trim:keep=1,window=4000`).
pub(crate) fn with_param(label: &str, k: &str, v: u64) -> String {
    if label.contains(':') {
        format!("{label},{k}={v}")
    } else {
        format!("{label}:{k}={v}")
    }
}

/// The arms with `windows` applied: an arm whose policy takes a `window` it does not set runs once
/// per window (with one window its label stays; with several, `window=N` joins the label).
/// `window` sets a policy text's window ([`Vocabulary::window`]).
pub fn apply_windows(
    arms: &[ArmDef],
    windows: &[u64],
    window: &dyn Fn(&str, u64) -> Option<String>,
) -> Vec<ArmDef> {
    let mut out = Vec::new();
    for a in arms {
        if windows.is_empty() || !a.takes_window {
            out.push(a.clone());
            continue;
        }
        for w in windows {
            out.push(ArmDef {
                label: if windows.len() == 1 {
                    a.label.clone()
                } else {
                    with_param(&a.label, "window", *w)
                },
                policy: window(&a.policy, *w).unwrap_or_else(|| a.policy.clone()),
                models: a.models.clone(),
                takes_window: false,
                sweep: a.sweep.clone(),
            });
        }
    }
    out
}

/// One cell of an expanded matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellKey {
    /// Stable id `task/arm/model/seed`.
    pub id: String,
    /// Task name.
    pub task: String,
    /// Arm label.
    pub arm: String,
    /// Model label.
    pub model: String,
    /// Seed.
    pub seed: u64,
}

/// Expands tasks × arms × models × seeds into cells, in that nesting order; an arm with its own
/// models crosses those instead of `models`.
pub fn expand(tasks: &[String], arms: &[ArmDef], models: &[String], seeds: &[u64]) -> Vec<CellKey> {
    let mut out = Vec::new();
    for t in tasks {
        for a in arms {
            for m in a.models.as_deref().unwrap_or(models) {
                for s in seeds {
                    out.push(CellKey {
                        id: cell_id(t, &a.label, m, *s),
                        task: t.clone(),
                        arm: a.label.clone(),
                        model: m.clone(),
                        seed: *s,
                    });
                }
            }
        }
    }
    out
}

/// How a partition assigns cells to shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PartitionKind {
    /// By a hash of the cell id: a cell keeps its shard when other cells are added or removed.
    Hash,
    /// Round robin over the matrix order: even shard sizes, but adding a cell moves others.
    Slice,
}

/// One shard of a matrix: `hash:K/N` or `slice:K/N` (1 ≤ K ≤ N).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// How cells are assigned.
    pub(crate) kind: PartitionKind,
    /// The shard, 1-based.
    pub(crate) shard: u64,
    /// The number of shards.
    pub(crate) count: u64,
}

impl std::str::FromStr for Partition {
    type Err = MatrixError;

    /// `hash:K/N` or `slice:K/N`, as `Partition::parse`: so a flag is parsed once, at the edge.
    fn from_str(s: &str) -> Result<Partition, MatrixError> {
        Partition::parse(s)
    }
}

/// FNV-1a, 64 bits: a stable hash of a cell id (the same on every platform and release).
pub(crate) fn fnv1a64(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

impl Partition {
    /// Parses `hash:K/N` or `slice:K/N`.
    pub(crate) fn parse(s: &str) -> Result<Partition, MatrixError> {
        let usage = || MatrixError::BadPartition(s.to_string());
        let (kind, rest) = s.trim().split_once(':').ok_or_else(usage)?;
        let kind = match kind {
            "hash" => PartitionKind::Hash,
            "slice" => PartitionKind::Slice,
            _ => return Err(usage()),
        };
        let (k, n) = rest.split_once('/').ok_or_else(usage)?;
        let (shard, count): (u64, u64) = (
            k.trim().parse().map_err(|_| usage())?,
            n.trim().parse().map_err(|_| usage())?,
        );
        if shard == 0 || count == 0 || shard > count {
            return Err(usage());
        }
        Ok(Partition { kind, shard, count })
    }

    /// The 1-based shard of the cell at `position` (in matrix order) with id `id`.
    pub(crate) fn shard_of(&self, position: usize, id: &str) -> u64 {
        match self.kind {
            PartitionKind::Hash => fnv1a64(id) % self.count + 1,
            PartitionKind::Slice => position as u64 % self.count + 1,
        }
    }

    /// Whether the cell at `position` with id `id` is in this shard.
    pub fn contains(&self, position: usize, id: &str) -> bool {
        self.shard_of(position, id) == self.shard
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            PartitionKind::Hash => "hash",
            PartitionKind::Slice => "slice",
        };
        write!(f, "{kind}:{}/{}", self.shard, self.count)
    }
}

/// Parses and validates a matrix file. `file` names it in messages.
pub fn load(file: &str, text: &str, vocab: &Vocabulary) -> Result<MatrixFile, Vec<Problem>> {
    let doc = yaml::parse(file, text).map_err(|p| vec![p])?;
    let mut r = Reader::new(file, text);
    let mut out = MatrixFile {
        file: file.to_string(),
        base: Layer::default(),
        profiles: Vec::new(),
    };
    if !doc.is_null() {
        let mut allowed = vec!["version", "profiles"];
        allowed.extend(LAYER);
        let fields = r.mapping(&[], &doc, "the matrix file", &allowed);
        let mut base = Vec::new();
        for (k, v) in fields {
            let p = key(&[], &k);
            match k.as_str() {
                "version" => {
                    if let Some(n) = r.uint(&p, v, "`version`") {
                        if n != MATRIX_VERSION {
                            r.problem(
                                &p,
                                format!("unknown `version` {n}; this foldbench reads version {MATRIX_VERSION}"),
                            );
                        }
                    }
                }
                "profiles" => out.profiles = read_profiles(&mut r, &p, v, vocab),
                _ => base.push((k, v)),
            }
        }
        out.base = read_layer(&mut r, &[], &base, vocab);
    }
    if r.problems.is_empty() {
        Ok(out)
    } else {
        let mut problems = r.problems;
        problems.sort_by_key(|p| (p.line, p.col));
        Err(problems)
    }
}

fn read_profiles(r: &mut Reader, p: &[Seg], v: &Value, vocab: &Vocabulary) -> Vec<(String, Layer)> {
    let Some(map) = v.as_mapping() else {
        r.problem(
            p,
            format!(
                "`profiles` must be a mapping of profile names to settings, found {}",
                kind(v)
            ),
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, val) in map {
        let Some(name) = k.as_str() else {
            r.problem(p, "`profiles` has a name that is not a string");
            continue;
        };
        let pp = key(p, name);
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            r.problem(
                &pp,
                format!("profile name {name:?} must be letters, digits, `-` and `_`"),
            );
        }
        let what = format!("profile `{name}`");
        let fields = if val.is_null() {
            Vec::new()
        } else {
            r.mapping(&pp, val, &what, &LAYER)
        };
        out.push((name.to_string(), read_layer(r, &pp, &fields, vocab)));
    }
    out
}

/// A string, or a list of strings; each with its path.
fn string_or_list(r: &mut Reader, p: &[Seg], v: &Value, what: &str) -> Vec<(String, Vec<Seg>)> {
    match v {
        Value::Sequence(items) => {
            if items.is_empty() {
                r.problem(p, format!("{what} is empty; give at least one"));
            }
            items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| {
                    let ip = child(p, Seg::Index(i));
                    r.string(&ip, item, what).map(|s| (s, ip))
                })
                .collect()
        }
        Value::String(_) | Value::Number(_) | Value::Bool(_) => r
            .string(p, v, what)
            .map(|s| vec![(s, p.to_vec())])
            .unwrap_or_default(),
        _ => {
            r.problem(
                p,
                format!(
                    "{what} must be a string or a list of strings, found {}",
                    kind(v)
                ),
            );
            Vec::new()
        }
    }
}

fn read_layer(r: &mut Reader, p: &[Seg], fields: &[(String, &Value)], vocab: &Vocabulary) -> Layer {
    let mut layer = Layer::default();
    for (k, v) in fields {
        let kp = key(p, k);
        match k.as_str() {
            "tasks" => {
                let mut tasks = Vec::new();
                for (s, sp) in string_or_list(r, &kp, v, "`tasks`") {
                    if s.trim().is_empty() {
                        r.problem(&sp, "a task pattern is empty; give a file, folder or glob");
                        continue;
                    }
                    let (line, col) = r.locate(&sp);
                    tasks.push(TaskPattern {
                        pattern: s,
                        line,
                        col,
                    });
                }
                layer.tasks = Some(tasks);
            }
            "arms" => layer.arms = Some(read_arms(r, &kp, v, vocab)),
            "models" => {
                let models = read_models(r, &kp, v, "`models`", vocab);
                layer.models = Some(models);
            }
            "seeds" => layer.seeds = read_seeds(r, &kp, v),
            "windows" => {
                let items: Vec<(Vec<Seg>, &Value)> = match v.as_sequence() {
                    Some(s) => {
                        if s.is_empty() {
                            r.problem(
                                &kp,
                                "`windows` is empty; give at least one size or leave it out",
                            );
                        }
                        s.iter()
                            .enumerate()
                            .map(|(i, x)| (child(&kp, Seg::Index(i)), x))
                            .collect()
                    }
                    None => vec![(kp.clone(), *v)],
                };
                let mut windows = Vec::new();
                for (ip, x) in items {
                    if let Some(w) = r.uint(&ip, x, "a window") {
                        if w == 0 {
                            r.problem(&ip, "a window must be at least 1 token");
                        } else if windows.contains(&w) {
                            r.problem(&ip, format!("window {w} is given twice"));
                        } else {
                            windows.push(w);
                        }
                    }
                }
                layer.windows = Some(windows);
            }
            "prices" => layer.prices = read_prices(r, &kp, v),
            "regression" => layer.regression = read_regression(r, &kp, v),
            _ => {}
        }
    }
    layer
}

fn read_models(
    r: &mut Reader,
    p: &[Seg],
    v: &Value,
    what: &str,
    vocab: &Vocabulary,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (m, mp) in string_or_list(r, p, v, what) {
        if let Err(e) = (vocab.model)(&m) {
            r.problem(&mp, e.to_string());
        } else if out.contains(&m) {
            r.problem(&mp, format!("model `{m}` is given twice"));
        } else {
            out.push(m);
        }
    }
    out
}

fn read_seeds(r: &mut Reader, p: &[Seg], v: &Value) -> Option<Vec<u64>> {
    let result = match v {
        Value::String(s) => parse_seeds(s).map_err(|e| e.to_string()),
        Value::Number(_) => r
            .uint(p, v, "`seeds`")
            .map(|n| vec![n])
            .ok_or_else(String::new),
        Value::Sequence(items) => {
            let mut seeds = Vec::new();
            for (i, item) in items.iter().enumerate() {
                if let Some(n) = r.uint(&child(p, Seg::Index(i)), item, "a seed") {
                    seeds.push(n);
                }
            }
            if items.is_empty() {
                Err("`seeds` is empty; write 1-3, 1,2,5 or a list".to_string())
            } else {
                check_unique_seeds(&seeds)
                    .map(|_| seeds)
                    .map_err(|e| e.to_string())
            }
        }
        _ => Err(format!(
            "`seeds` must be a range like 1-3, a list like 1,2,5 or a YAML list, found {}",
            kind(v)
        )),
    };
    match result {
        Ok(s) => Some(s),
        Err(e) => {
            if !e.is_empty() {
                r.problem(p, format!("`seeds`: {e}"));
            }
            None
        }
    }
}

fn read_arms(r: &mut Reader, p: &[Seg], v: &Value, vocab: &Vocabulary) -> Vec<ArmDef> {
    let items = r.sequence(p, v, "`arms`");
    if items.is_empty() && v.is_sequence() {
        r.problem(p, "`arms` is empty; give at least one policy");
    }
    let mut out: Vec<ArmDef> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let ip = child(p, Seg::Index(i));
        let (arm, policy_path, label_path) = if item.is_mapping() {
            let fields = r.mapping(&ip, item, "an arm", &ARM);
            let mut label = None;
            let mut policy = None;
            let mut models = None;
            for (k, val) in &fields {
                let kp = key(&ip, k);
                match k.as_str() {
                    "label" => label = r.string(&kp, val, "`label`").map(|s| (s, kp)),
                    "policy" => policy = r.string(&kp, val, "`policy`").map(|s| (s, kp)),
                    _ => models = Some(read_models(r, &kp, val, "`model`", vocab)),
                }
            }
            let Some((policy, pp)) = policy else {
                if !fields.iter().any(|(k, _)| k == "policy") {
                    r.problem(
                        &ip,
                        "an arm needs a `policy`, e.g. { label: trim1, policy: \"trim:keep=1\" }",
                    );
                }
                continue;
            };
            let (label, lp) = label.unwrap_or_else(|| (policy.clone(), pp.clone()));
            (
                ArmDef {
                    label,
                    policy,
                    models,
                    takes_window: false,
                    sweep: None,
                },
                pp,
                lp,
            )
        } else {
            let Some(policy) = r.string(&ip, item, "an arm") else {
                continue;
            };
            (ArmDef::plain(&policy), ip.clone(), ip.clone())
        };
        let points = match (vocab.policy)(&arm.policy, &arm.label) {
            Err(e) => {
                r.problem(&policy_path, e.to_string());
                continue;
            }
            Ok(points) => points,
        };
        for point in points {
            let arm = ArmDef {
                takes_window: (vocab.window)(&point.policy, 100_000).is_some(),
                sweep: (!point.values.is_empty()).then(|| SweepOf {
                    arm: arm.label.clone(),
                    values: point.values.clone(),
                }),
                label: point.label,
                policy: point.policy,
                models: arm.models.clone(),
            };
            push_arm(r, &mut out, arm, &label_path);
        }
    }
    out
}

/// Adds an arm unless its label is empty, holds a `/` or is taken.
fn push_arm(r: &mut Reader, out: &mut Vec<ArmDef>, arm: ArmDef, label_path: &[Seg]) {
    if arm.label.trim().is_empty() || arm.label.contains('/') {
        r.problem(
            label_path,
            format!(
                "arm label {:?} must be non-empty and have no `/` (it is part of cell ids)",
                arm.label
            ),
        );
    } else if out.iter().any(|a| a.label == arm.label) {
        r.problem(
            label_path,
            format!(
                "the arm `{}` is given twice; give one of them another `label`",
                arm.label
            ),
        );
    } else {
        out.push(arm);
    }
}

fn read_prices(r: &mut Reader, p: &[Seg], v: &Value) -> BTreeMap<String, Price> {
    let mut out = BTreeMap::new();
    let Some(map) = v.as_mapping() else {
        r.problem(
            p,
            format!("`prices` must map model names to prices, found {}", kind(v)),
        );
        return out;
    };
    for (k, val) in map {
        let Some(model) = k.as_str() else {
            r.problem(p, "`prices` has a model name that is not a string");
            continue;
        };
        let mp = key(p, model);
        let what = format!("the price of `{model}`");
        let fields = r.mapping(&mp, val, &what, &PRICE);
        let mut price = Price::default();
        let mut input = false;
        for (f, x) in &fields {
            let fp = key(&mp, f);
            let Some(n) = r.float(&fp, x, &format!("`{f}`")) else {
                continue;
            };
            if n < 0.0 || !n.is_finite() {
                r.problem(&fp, format!("`{f}` must not be negative"));
                continue;
            }
            match f.as_str() {
                "input" => {
                    price.input = n;
                    input = true;
                }
                "cache_write" => price.cache_write = n,
                "cache_read" => price.cache_read = n,
                _ => price.output = n,
            }
        }
        if !input && val.is_mapping() {
            r.problem(
                &mp,
                format!("{what} needs `input` (dollars per million input tokens)"),
            );
        }
        out.insert(model.to_string(), price);
    }
    out
}

fn read_regression(r: &mut Reader, p: &[Seg], v: &Value) -> BTreeMap<String, Threshold> {
    let names = regression::metric_names();
    let fields = r.mapping(p, v, "`regression`", &names);
    let mut out = BTreeMap::new();
    for (k, val) in &fields {
        let kp = key(p, k);
        let t = match val {
            Value::Number(n) => match n.as_f64() {
                Some(x) if x >= 0.0 && x.is_finite() => Ok(Threshold::Absolute(x)),
                _ => Err(format!("`{k}`: a threshold must not be negative")),
            },
            Value::String(s) => Threshold::parse(s).map_err(|e| format!("`{k}`: {e}")),
            _ => Err(format!(
                "`{k}` must be a number or a percentage like 5%, found {}",
                kind(val)
            )),
        };
        match t {
            Ok(t) => {
                out.insert(k.clone(), t);
            }
            Err(e) => r.problem(&kp, e),
        }
    }
    out
}

#[cfg(test)]
mod tests;
