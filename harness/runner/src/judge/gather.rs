//! Gathering the items of `judge build` (task runs and labelled sessions, [`build`]); the
//! overview is the module's (`super`), asking the models of `judge run` is `ask.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use harness_config::yaml::Problem;
use harness_core::judge::{
    build_item, parse_dataset, replay_items, Item, Judge, Origin, Recorded, ReplayOptions,
    SOURCE_TASK,
};
use harness_core::sim::{Sim, SimConfig};
use harness_core::tokens;
use harness_core::Event;
use harness_core::Status;
use harness_core::{Message, ToolSpec};
use harness_core::{Purpose, Request};

use crate::backends::{Model, ModelFuture, SimModel};
use crate::cell::{run_cell, CellOptions, CellPlan, SYSTEM_PROMPT};
use crate::execution::workspace::ARCHIVE_DIR;
use crate::file_error::FileError;
use crate::tasks::{self, LoadedTask};

use super::answer;

/// Why `judge build` could not gather its items, or `judge run` could not set up its models.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JudgeError {
    /// A file or folder cannot be read, created or written.
    #[error(transparent)]
    File(#[from] crate::file_error::FileError),
    /// A folder cannot be listed.
    #[error("cannot read folder {}", dir.display())]
    ReadDir {
        /// The folder.
        dir: PathBuf,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// A data folder whose `labels/` holds no labels file.
    #[error("{} has no labels files (labels/<format>/*.yaml)", dir.display())]
    NoLabels {
        /// The data folder.
        dir: PathBuf,
    },
    /// A `--from` path that does not exist.
    #[error("{} does not exist; give task specs, a data folder with labels/ or a labels file", path.display())]
    Missing {
        /// The path.
        path: PathBuf,
    },
    /// The `fold` policy does not build.
    #[error(transparent)]
    Policy(#[from] policies::PolicyError),
    /// A task's run under `fold` ended in an error.
    #[error("task {task}: the run under fold failed: {reason}")]
    TaskRun {
        /// The task.
        task: String,
        /// The record's error.
        reason: String,
    },
    /// A task's run stopped before its items were gathered (it panicked).
    #[error("a task run stopped")]
    Stopped(#[source] tokio::task::JoinError),
    /// The capture of a task's requests was poisoned by a panic.
    #[error("task {task}: the capture was poisoned")]
    Poisoned {
        /// The task.
        task: String,
    },
    /// A turn's first request holds no user message of the turn.
    #[error("task {task}: turn {turn}'s first request has no user message")]
    NoUserMessage {
        /// The task.
        task: String,
        /// The turn.
        turn: u32,
    },
    /// The item's card is not the card the fold policy showed.
    #[error(
        "task {task}: turn {turn}: the item's card differs from the card the fold policy showed"
    )]
    CardDiffers {
        /// The task.
        task: String,
        /// The turn.
        turn: u32,
    },
    /// The task specs have problems, each a whole line.
    #[error("{}", specs(.0))]
    Specs(Vec<Problem>),
    /// A labels file has problems, each a whole line.
    #[error("{}", lines(.0))]
    Labels(Vec<Problem>),
    /// A labels file that names no transcript.
    #[error("{labels}: names no transcript (`source_path` or `session`)")]
    NoTranscript {
        /// The labels file.
        labels: String,
    },
    /// The transcript a labels file names is not where it says.
    #[error("{labels}: the transcript {rel} is not in {}", root.display())]
    TranscriptMissing {
        /// The labels file.
        labels: String,
        /// The transcript as named.
        rel: String,
        /// The data folder.
        root: PathBuf,
    },
    /// The transcript does not import.
    #[error(transparent)]
    Import(#[from] harness_import::ImportError),
    /// No session of the transcript has a labelled prompt.
    #[error("{labels}: no session of {rel} has a labelled prompt (by uuid, or by turn number with `key: n`)")]
    Unlabelled {
        /// The labels file.
        labels: String,
        /// The transcript as named.
        rel: String,
    },
    /// `--from history`: the default places of your history cannot be found.
    #[error("--from {HISTORY}")]
    History(#[source] crate::sessions::SessionsError),
    /// `--from history`: the default places hold sessions but no unit labels.
    #[error(
        "--from {HISTORY}: {} hold sessions but no unit labels; a judge item needs gold \
         units, so write labels/<format>/<session>.yaml beside them (the format: \
         docs/judge.md), with source_path relative to that folder",
        joined(places)
    )]
    HistoryUnlabelled {
        /// The places that hold sessions.
        places: Vec<PathBuf>,
    },
    /// `--record` with more than one model.
    #[error("--record takes one model at a time: the cassette key does not name the model, so record each model into its own folder")]
    RecordMany,
    /// The sim named as a model to judge.
    #[error("`{spec}`: the sim answers cards with the baselines (oracle, lexical, eager, never), which are always in the table")]
    SimModel {
        /// The model spec as given.
        spec: String,
    },
    /// A model named twice.
    #[error("the model `{spec}` is given twice")]
    ModelTwice {
        /// The model spec as given.
        spec: String,
    },
    /// A dataset file that does not read.
    #[error(transparent)]
    Dataset(#[from] harness_core::judge::JsonlError),
    /// A cassette's `answer.json` that does not read.
    #[error("{}: expected {{\"answer\": \"tool\"|\"text\", \"constrained\": true|false}}", path.display())]
    Marker {
        /// The file.
        path: PathBuf,
    },
    /// Recording into a cassette whose answers were asked otherwise.
    #[error("--record {}: the cassette holds answers asked as {old}, this run asks {new}; record into another folder", dir.display())]
    RecordedOtherwise {
        /// The cassette folder.
        dir: PathBuf,
        /// How its answers were asked.
        old: serde_json::Value,
        /// How this run asks.
        new: serde_json::Value,
    },
    /// `--grammar` without `--answer text`.
    #[error("--grammar constrains a text answer: give it with --answer text")]
    GrammarNeedsText,
    /// A replayed cassette whose answers were asked otherwise than the flags say.
    #[error("{spec}: its {} says {recorded}, the flags ask {asked}; drop --answer/--grammar to replay it as recorded", answer::MARKER)]
    ReplayedOtherwise {
        /// The model spec (`replay:DIR`).
        spec: String,
        /// How its answers were asked.
        recorded: serde_json::Value,
        /// How the flags ask.
        asked: serde_json::Value,
    },
    /// `--grammar` for a model that is not OpenAI-compatible.
    #[error("{spec}: --grammar is sent to OpenAI-compatible servers (openai:NAME) only")]
    GrammarNotOpenAi {
        /// The model spec.
        spec: String,
    },
    /// A model spec that does not build.
    #[error(transparent)]
    Model(#[from] crate::backends::BackendError),
}

/// The task specs' problems one per line, then how many.
/// Paths joined with `, `, as a message lists them.
fn joined(places: &[PathBuf]) -> String {
    places
        .iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `--from` word that stands for your own history: the default places `replay` reads.
pub const HISTORY: &str = "history";

/// Replaces `--from history` by the default places that hold unit labels (a `labels/` folder
/// beside the sessions: items need gold units, and recorded sessions carry none). Says through
/// `say` which places it read; a history without labels is an error that says what to write.
pub fn expand_history(from: Vec<PathBuf>, say: &dyn Fn(&str)) -> Result<Vec<PathBuf>, JudgeError> {
    let mut out = Vec::new();
    for p in from {
        if p.as_os_str() != HISTORY {
            out.push(p);
            continue;
        }
        let places = crate::sessions::history::resolve("judge build --from", say)
            .map_err(JudgeError::History)?;
        let (labelled, bare): (Vec<PathBuf>, Vec<PathBuf>) =
            places.into_iter().partition(|d| has_labels(d));
        if labelled.is_empty() {
            return Err(JudgeError::HistoryUnlabelled { places: bare });
        }
        out.extend(labelled);
    }
    Ok(out)
}

fn specs(problems: &[Problem]) -> String {
    let mut s: Vec<String> = problems.iter().map(ToString::to_string).collect();
    s.push(format!(
        "{} problem{} in the task specs",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    ));
    s.join("\n")
}

/// Problems one per line.
fn lines(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where the items of a build come from.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Sources {
    /// Task spec files and folders.
    pub tasks: Vec<PathBuf>,
    /// Labels files, with the data folder their `source_path` is relative to.
    pub labels: Vec<(PathBuf, PathBuf)>,
}

/// Whether a YAML file is a labels file (its `turns` carry `uuid`s, or it says `key: "n"`)
/// rather than a task spec.
fn is_labels_file(p: &Path) -> bool {
    std::fs::read_to_string(p)
        .ok()
        .and_then(|t| harness_config::yaml::parse(&p.display().to_string(), &t).ok())
        .and_then(|v| {
            if v.get("key").and_then(|k| k.as_str()) == Some("n") {
                return Some(());
            }
            v.get("turns")?
                .as_sequence()?
                .first()?
                .get("uuid")
                .map(|_| ())
        })
        .is_some()
}

/// The folders of a data folder that hold labels files, `<folder>/<format>/*.yaml`: `labels/`
/// and `labels-by-turn/` (files keyed by turn number, where the corpus kept them before the
/// reader took both kinds).
pub const LABEL_FOLDERS: [&str; 2] = ["labels", "labels-by-turn"];

/// Whether a data folder holds labels files.
pub fn has_labels(dir: &Path) -> bool {
    LABEL_FOLDERS.iter().any(|l| dir.join(l).is_dir())
}

fn read_dir(dir: &Path) -> Result<std::fs::ReadDir, JudgeError> {
    std::fs::read_dir(dir).map_err(|source| JudgeError::ReadDir {
        dir: dir.to_path_buf(),
        source,
    })
}

fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>, JudgeError> {
    let mut out: Vec<PathBuf> = read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|f| {
            f.is_file() && matches!(f.extension().and_then(|x| x.to_str()), Some("yaml" | "yml"))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Sorts `--from` paths into task specs and labels files. A folder with a `labels/` subfolder is
/// a data folder: every `labels/<format>/*.yaml` in it; a YAML file whose turns carry `uuid`s is
/// a labels file (its data folder is the nearest ancestor its `source_path` resolves from); any
/// other path is a task spec or a folder of them.
pub fn classify(from: &[PathBuf]) -> Result<Sources, JudgeError> {
    let mut s = Sources::default();
    for p in from {
        if p.is_dir() && has_labels(p) {
            let before = s.labels.len();
            // format/file names already read from `labels/`: the same file in
            // `labels-by-turn/` is its older copy.
            let mut seen = std::collections::BTreeSet::new();
            for folder in LABEL_FOLDERS {
                let labels = p.join(folder);
                if !labels.is_dir() {
                    continue;
                }
                let mut dirs: Vec<PathBuf> = read_dir(&labels)?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|d| d.is_dir())
                    .collect();
                dirs.sort();
                for d in dirs {
                    for f in yaml_files(&d)? {
                        let name = f.strip_prefix(&labels).unwrap_or(&f).to_path_buf();
                        if seen.insert(name) {
                            s.labels.push((f, p.clone()));
                        }
                    }
                }
            }
            if s.labels.len() == before {
                return Err(JudgeError::NoLabels { dir: p.clone() });
            }
        } else if p.is_file() && is_labels_file(p) {
            let root = p
                .ancestors()
                .skip(1)
                .find(|a| has_labels(a))
                .or_else(|| p.parent())
                .unwrap_or(Path::new("."))
                .to_path_buf();
            s.labels.push((p.clone(), root));
        } else if p.exists() || p.to_string_lossy().contains('*') {
            s.tasks.push(p.clone());
        } else {
            return Err(JudgeError::Missing { path: p.clone() });
        }
    }
    Ok(s)
}

/// The sim as a model, keeping the first request of every turn.
struct Capture {
    inner: SimModel,
    first: Mutex<BTreeMap<u32, Vec<Arc<Message>>>>,
}

impl Model for Capture {
    fn name(&self) -> String {
        "sim".into()
    }

    fn respond<'a>(&'a self, req: &'a Request, cell: &'a str) -> ModelFuture<'a> {
        if req.purpose == Purpose::Turn {
            if let Ok(mut f) = self.first.lock() {
                f.entry(req.current_turn())
                    .or_insert_with(|| req.messages.clone());
            }
        }
        self.inner.respond(req, cell)
    }
}

/// The items of one task: it runs under `fold` with the oracle sim; every turn ≥ 2 is an item.
pub async fn task_items(t: &LoadedTask, max_tool_output: usize) -> Result<Vec<Item>, JudgeError> {
    let name = &t.spec.name;
    let sim = Sim::new(
        Arc::clone(&t.spec),
        SimConfig {
            seed: 1,
            recheck: 0.0,
            judge: Judge::Oracle,
            behaviour: Default::default(),
        },
    );
    let model = Capture {
        inner: SimModel::new(sim),
        first: Mutex::new(BTreeMap::new()),
    };
    let plan = CellPlan {
        id: format!("{name}/fold/sim/judge"),
        task: Arc::clone(&t.spec),
        task_dir: t.dir.clone(),
        arm: "fold".into(),
        policy: policies::parse_policy("fold")?,
        model_name: "sim:judge=oracle,recheck=0".into(),
        seed: 1,
    };
    let on_event = |_: &str, _: &Event| {};
    let out = run_cell(&plan, &CellOptions::default(), &model, &on_event).await;
    if out.record.status == Status::Error {
        return Err(JudgeError::TaskRun {
            task: name.clone(),
            reason: out.record.error.unwrap_or_default(),
        });
    }
    let first = model
        .first
        .into_inner()
        .map_err(|_| JudgeError::Poisoned { task: name.clone() })?;
    let labels: Vec<Option<String>> = t.spec.turns.iter().map(|x| Some(x.unit.clone())).collect();
    let file = t.file.display().to_string();
    let origin = Origin {
        source: SOURCE_TASK,
        session: name,
        file: &file,
        labels: &labels,
        words: &[],
    };
    let mut items = Vec::new();
    for (turn, messages) in first.range(2..) {
        let Some(idx) = messages
            .iter()
            .rposition(|m| m.is_human() && m.turn == *turn)
        else {
            return Err(JudgeError::NoUserMessage {
                task: name.clone(),
                turn: *turn,
            });
        };
        let user = &messages[idx];
        let Some(item) = build_item(
            origin,
            &messages[..idx],
            *turn,
            &user.text,
            user.card.is_some(),
            max_tool_output,
        ) else {
            continue;
        };
        if let Some(card) = &user.card {
            if *card != item.card() {
                return Err(JudgeError::CardDiffers {
                    task: name.clone(),
                    turn: *turn,
                });
            }
        }
        items.push(item);
    }
    Ok(items)
}

/// The items of one labelled recorded session, and warnings about labels that did not match.
pub fn labelled_items(
    labels_file: &Path,
    data_root: &Path,
    max_tool_output: usize,
) -> Result<(Vec<Item>, Vec<String>), JudgeError> {
    let lname = labels_file.display().to_string();
    let text = read(labels_file)?;
    let labels = harness_config::parse_labels(&lname, &text).map_err(JudgeError::Labels)?;
    let rel = labels
        .source_path
        .clone()
        .or_else(|| labels.session.clone())
        .ok_or_else(|| JudgeError::NoTranscript {
            labels: lname.clone(),
        })?;
    let transcript = [data_root.join(&rel)]
        .into_iter()
        .chain(labels_file.parent().map(|d| d.join(&rel)))
        .find(|p| p.is_file())
        .ok_or_else(|| JudgeError::TranscriptMissing {
            labels: lname.clone(),
            rel: rel.clone(),
            root: data_root.to_path_buf(),
        })?;
    let bytes = std::fs::read(&transcript).map_err(FileError::on("read", &transcript))?;
    let sessions = harness_import::import_bytes(&rel, &bytes, None)?;
    let matched = |s: &harness_import::ImportedSession| {
        s.human_turns
            .iter()
            .filter(|h| labels.label(h.id.as_deref(), h.turn).is_some())
            .count()
    };
    let Some(session) = sessions
        .iter()
        .filter(|s| matched(s) > 0)
        .max_by_key(|s| matched(s))
    else {
        return Err(JudgeError::Unlabelled { labels: lname, rel });
    };
    let mut warnings = Vec::new();
    let turns = session.last_human_turn() as usize;
    let mut per_turn: Vec<Option<String>> = vec![None; turns];
    let mut words: Vec<Option<String>> = vec![None; turns];
    for h in &session.human_turns {
        let Some(i) = (h.turn as usize).checked_sub(1) else {
            continue;
        };
        words[i] = Some(h.text.clone());
        match labels.label(h.id.as_deref(), h.turn) {
            Some(Some(u)) => per_turn[i] = Some(u.clone()),
            Some(None) => warnings.push(format!(
                "{lname}: turn {} is a prompt for the importer but labelled as none; it stays unlabelled",
                h.turn
            )),
            None => warnings.push(format!("{lname}: turn {} has no label", h.turn)),
        }
    }
    let prompts = labels.prompts();
    let found = per_turn.iter().filter(|u| u.is_some()).count();
    if found < prompts {
        warnings.push(format!(
            "{lname}: {} labelled prompt(s) are not prompts of the imported session",
            prompts - found
        ));
    }
    let source = session.format.name();
    let origin = Origin {
        source,
        session: &session.id,
        file: &rel,
        labels: &per_turn,
        words: &words,
    };
    let policy = policies::build(&policies::parse_policy("fold")?, 200_000)?;
    let mut tools: Vec<ToolSpec> = crate::tools::tool_specs();
    tools.extend(policy.tools());
    let opts = ReplayOptions {
        prefix_tokens: tokens::prefix_tokens(SYSTEM_PROMPT, &tools),
        max_tool_output,
        archive_dir: ARCHIVE_DIR.to_string(),
    };
    let items = replay_items(
        Recorded {
            origin,
            messages: &session.messages,
        },
        policy,
        &opts,
    );
    Ok((items, warnings))
}

/// Builds a dataset from task specs and labelled sessions; warnings go to `warn`.
pub async fn build(
    sources: &Sources,
    max_tool_output: usize,
    jobs: usize,
    warn: &(dyn Fn(&str) + Sync),
) -> Result<Vec<Item>, JudgeError> {
    let mut items = Vec::new();
    if !sources.tasks.is_empty() {
        let loaded = tasks::load_tasks(&sources.tasks).map_err(JudgeError::Specs)?;
        let sem = Arc::new(tokio::sync::Semaphore::new(jobs.max(1)));
        let mut handles = Vec::new();
        for t in loaded {
            let sem = Arc::clone(&sem);
            handles.push(tokio::spawn(async move {
                let _permit = sem.acquire_owned().await;
                task_items(&t, max_tool_output).await
            }));
        }
        for h in handles {
            items.extend(h.await.map_err(JudgeError::Stopped)??);
        }
    }
    for (file, root) in &sources.labels {
        let (mut got, warnings) = labelled_items(file, root, max_tool_output)?;
        for w in warnings {
            warn(&w);
        }
        items.append(&mut got);
    }
    Ok(items)
}

/// Reads a dataset file.
pub fn read_dataset(path: &Path) -> Result<Vec<Item>, JudgeError> {
    let text = read(path)?;
    Ok(parse_dataset(&path.display().to_string(), &text)?)
}

/// A file's text, or [`JudgeError::File`].
fn read(path: &Path) -> Result<String, JudgeError> {
    Ok(std::fs::read_to_string(path).map_err(FileError::on("read", path))?)
}

/// Keeps the items a run asks about.
pub fn select(
    items: Vec<Item>,
    source: Option<&str>,
    threshold_only: bool,
    limit: Option<usize>,
) -> Vec<Item> {
    items
        .into_iter()
        .filter(|i| source.is_none_or(|s| i.source == s))
        .filter(|i| !threshold_only || i.threshold)
        .take(limit.unwrap_or(usize::MAX))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_sorted_into_tasks_and_labels() {
        let dir = tempfile::tempdir().unwrap();
        let labels = dir.path().join("labels/claude-code");
        std::fs::create_dir_all(&labels).unwrap();
        std::fs::write(
            labels.join("s.yaml"),
            "session: s.jsonl\nturns:\n  - uuid: \"u\"\n    n: 1\n    unit: a\n",
        )
        .unwrap();
        let s = classify(&[dir.path().to_path_buf()]).unwrap();
        assert_eq!(s.labels.len(), 1);
        assert_eq!(s.labels[0].1, dir.path());
        let s = classify(&[labels.join("s.yaml")]).unwrap();
        assert_eq!(
            s.labels[0].1,
            dir.path(),
            "the data folder is found upwards"
        );
        let spec = dir.path().join("t.yaml");
        std::fs::write(&spec, "name: t\n").unwrap();
        assert_eq!(
            classify(std::slice::from_ref(&spec)).unwrap().tasks,
            vec![spec]
        );
        assert!(classify(&[dir.path().join("nope")])
            .unwrap_err()
            .to_string()
            .contains("does not exist"));
        let empty = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(empty.path().join("labels")).unwrap();
        assert!(classify(&[empty.path().to_path_buf()])
            .unwrap_err()
            .to_string()
            .contains("no labels files"));
    }
}
