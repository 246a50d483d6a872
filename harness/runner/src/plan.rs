//! The matrix a run or a listing plays: the matrix file found and read (`foldbench.yaml`,
//! format in `harness_config::matrix`), its profile chosen, the command line's settings put over
//! it, the tasks loaded, the cells expanded with their stable ids, and a partition picked.
//!
//! Precedence, lowest first: built-in defaults (every task under `tasks/` × the five policies ×
//! [`DEFAULT_MODEL`] × seeds 1-3), the file's top level, `profiles.default`,
//! `profiles.<profile>`, then the command line ([`Overrides`]: tasks, policies, models, seeds).
//! Without a matrix file a run plays the built-in defaults.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use harness_config::matrix::{
    self, apply_windows, ArmDef, Layer, MatrixFile, Partition, Vocabulary,
};
use harness_config::yaml::Problem;
use harness_config::MatrixError;
use harness_core::metrics::Price;

use crate::arms::{self, ArmError};
use crate::run::{parse_sim, Arm, MatrixCell, Selection};
use crate::tasks::{self, LoadedTask, TaskError};

/// The model a matrix plays when neither the command line nor the matrix file names one: the
/// simulated agent.
pub const DEFAULT_MODEL: &str = "sim";

/// The seeds a matrix plays when neither the command line nor the matrix file names them.
pub const DEFAULT_SEEDS: [u64; 3] = [1, 2, 3];

/// The model labels the command line names: `--model`'s, else `replay:DIR` for `--replay DIR`
/// given alone (a cassette folder answers as the model of its recording), else none (the
/// matrix file's, else [`DEFAULT_MODEL`]).
pub fn models_given(models: &[String], replay: Option<&Path>) -> Vec<String> {
    match (replay, models.is_empty()) {
        (Some(r), true) => vec![format!("replay:{}", r.display())],
        _ => models.to_vec(),
    }
}

/// [`models_given`], else [`DEFAULT_MODEL`]: the models of a run without a matrix (`ab`).
pub fn models_or_default(models: &[String], replay: Option<&Path>) -> Vec<String> {
    let given = models_given(models, replay);
    if given.is_empty() {
        vec![DEFAULT_MODEL.to_string()]
    } else {
        given
    }
}

/// Which matrix file and profile to read (`--config`, `--profile`).
#[derive(Debug, Clone, Default)]
pub struct MatrixSource {
    /// The matrix file named (default: `./foldbench.yaml` when it exists).
    pub file: Option<PathBuf>,
    /// The profile named (default: [`matrix::DEFAULT_PROFILE`]).
    pub profile: Option<String>,
}

/// What the command line sets over the matrix file.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Task spec files or folders.
    pub tasks: Vec<PathBuf>,
    /// Seeds as written (`1-3`).
    pub seeds: Option<String>,
    /// Policy texts (each one arm, labelled by its text).
    pub policies: Vec<String>,
    /// Model labels (they replace the models of every arm).
    pub models: Vec<String>,
}

/// Why a matrix cannot be planned. Every variant is the user's to fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// `--profile` other than the default with no matrix file in play.
    #[error(
        "--profile {profile} needs a matrix file: there is no {} here; give --config FILE",
        matrix::DEFAULT_FILE
    )]
    NoMatrixFile {
        /// The profile named.
        profile: String,
    },
    /// A matrix file that cannot be read.
    #[error("cannot read the matrix file {name}")]
    Read {
        /// The file as named.
        name: String,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// A matrix file that is not UTF-8 text.
    #[error("{name} is not UTF-8 text")]
    NotUtf8 {
        /// The file as named.
        name: String,
    },
    /// Problems in an input, each with its file:line:col.
    #[error("{} problem{} in {what}", problems.len(), if problems.len() == 1 { "" } else { "s" })]
    Problems {
        /// The input (`the matrix file`, `the task specs`, a file's name).
        what: String,
        /// Every problem found.
        problems: Vec<Problem>,
    },
    /// A profile or seeds the matrix reader refused.
    #[error(transparent)]
    Matrix(#[from] MatrixError),
    /// The task folder cannot be found or unpacked.
    #[error(transparent)]
    Tasks(TaskError),
    /// A policy text or an arm list refused.
    #[error(transparent)]
    Arms(#[from] ArmError),
    /// A model label refused.
    #[error(transparent)]
    Model(#[from] ModelLabelError),
}

/// Why a model label is refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelLabelError {
    /// A `sim` label with settings the sim does not take (the backend's words).
    #[error(transparent)]
    Sim(crate::backends::BackendError),
    /// No backend by that name.
    #[error(
        "unknown model `{label}`{}; known models: {}",
        harness_core::did_you_mean(
            .label.split(':').next().unwrap_or(.label),
            ["sim", "openai", "anthropic", "replay"]
        ),
        crate::backends::KNOWN_MODELS
    )]
    Unknown {
        /// The label as given.
        label: String,
    },
}

/// Checks a model label without connecting to anything.
pub fn check_model(label: &str) -> Result<(), ModelLabelError> {
    if parse_sim(label).map_err(ModelLabelError::Sim)?.is_some() {
        return Ok(());
    }
    match label.split_once(':') {
        Some(("openai" | "anthropic" | "replay", rest)) if !rest.trim().is_empty() => Ok(()),
        _ => Err(ModelLabelError::Unknown {
            label: label.to_string(),
        }),
    }
}

/// A resolved matrix, ready to run.
#[derive(Clone)]
pub struct Plan {
    /// The matrix file read, if any.
    pub file: Option<PathBuf>,
    /// The profile.
    pub profile: String,
    /// The tasks.
    pub tasks: Vec<LoadedTask>,
    /// The arms (windows applied).
    pub arms: Vec<Arm>,
    /// The model labels of arms without their own.
    pub models: Vec<String>,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// Every cell of the matrix, in matrix order.
    pub cells: Vec<MatrixCell>,
    /// The price table.
    pub prices: HashMap<String, Price>,
    /// The shard to run.
    pub partition: Option<Partition>,
}

/// Which cells a listing keeps (each list empty: every cell).
#[derive(Debug, Clone, Default)]
pub struct CellFilter {
    /// Task names.
    pub tasks: Vec<String>,
    /// Arm labels or policy names (`trim` keeps `trim:keep=1`).
    pub policies: Vec<String>,
    /// Model labels.
    pub models: Vec<String>,
}

impl Plan {
    /// The cells of the shard (all without a partition), in matrix order.
    pub fn selected(&self) -> Vec<&MatrixCell> {
        self.cells
            .iter()
            .enumerate()
            .filter(|(i, c)| self.partition.is_none_or(|p| p.contains(*i, &c.id)))
            .map(|(_, c)| c)
            .collect()
    }

    /// What [`crate::run::run_selected`] needs besides the config: the matrix and the partition.
    pub fn selection(&self) -> Selection {
        Selection {
            cells: Some(self.cells.clone()),
            partition: self.partition.map(|p| p.to_string()),
        }
    }

    /// The ids to restrict a run to (`None`: every cell).
    pub fn only(&self) -> Option<Vec<String>> {
        self.partition
            .map(|_| self.selected().iter().map(|c| c.id.clone()).collect())
    }

    /// The policy text of the arm labelled `arm` (empty for no such arm).
    pub fn policy_of(&self, arm: &str) -> String {
        // The last arm of the label, as a map from labels would keep it.
        self.arms
            .iter()
            .rev()
            .find(|a| a.label == arm)
            .map(|a| a.policy.label())
            .unwrap_or_default()
    }

    /// The cells of the shard that `filter` keeps, in matrix order.
    pub fn matching(&self, filter: &CellFilter) -> Vec<&MatrixCell> {
        let policy_of: HashMap<&str, String> = self
            .arms
            .iter()
            .map(|a| (a.label.as_str(), a.policy.label()))
            .collect();
        let keep = |c: &MatrixCell| {
            let policy_name = policy_of
                .get(c.arm.as_str())
                .map(|p| p.split(':').next().unwrap_or("").to_string())
                .unwrap_or_default();
            (filter.tasks.is_empty() || filter.tasks.contains(&c.task))
                && (filter.policies.is_empty()
                    || filter.policies.contains(&c.arm)
                    || filter.policies.contains(&policy_name))
                && (filter.models.is_empty() || filter.models.contains(&c.model))
        };
        self.selected().into_iter().filter(|c| keep(c)).collect()
    }
}

fn arm_def(a: arms::ArmText) -> ArmDef {
    ArmDef {
        takes_window: arms::vocab_window(&a.policy, 100_000).is_some(),
        sweep: a.sweep,
        label: a.label,
        ..ArmDef::plain(&a.policy)
    }
}

fn arm_defs(texts: &[String]) -> Result<Vec<ArmDef>, ArmError> {
    Ok(arms::expand(texts)?.into_iter().map(arm_def).collect())
}

impl MatrixSource {
    /// The matrix file in play: the one named, or `./foldbench.yaml` when it exists.
    pub fn file_in_play(&self) -> Option<PathBuf> {
        self.file.clone().or_else(|| {
            let p = PathBuf::from(matrix::DEFAULT_FILE);
            p.is_file().then_some(p)
        })
    }

    /// The settings of the chosen profile (empty without a matrix file), with the file and the
    /// profile's name.
    pub fn layer(&self) -> Result<(Option<PathBuf>, String, Layer), PlanError> {
        let name = self
            .profile
            .clone()
            .unwrap_or_else(|| matrix::DEFAULT_PROFILE.to_string());
        let Some(path) = self.file_in_play() else {
            if name != matrix::DEFAULT_PROFILE {
                return Err(PlanError::NoMatrixFile { profile: name });
            }
            return Ok((None, name, Layer::default()));
        };
        let file = read_file(&path)?;
        let layer = file.profile(&name)?;
        Ok((Some(path), name, layer))
    }

    /// The policy texts of the chosen profile's arms, for `replay --profile NAME`: `None` when
    /// neither a file nor a profile is named (the caller's default) or when no layer sets arms.
    /// Sweeps are expanded already; the arms' labels, models and windows belong to live runs
    /// and do not apply.
    pub fn profile_policies(&self) -> Result<Option<Vec<String>>, PlanError> {
        if self.profile.is_none() && self.file.is_none() {
            return Ok(None);
        }
        let (_, _, layer) = self.layer()?;
        Ok(layer
            .arms
            .map(|arms| arms.into_iter().map(|a| a.policy).collect()))
    }
}

/// Reads and validates a matrix file, every problem found.
pub fn read_file(path: &Path) -> Result<MatrixFile, PlanError> {
    let name = path.display().to_string();
    let text = match harness_import::read_regular(path, tasks::MAX_SPEC_BYTES) {
        Ok(b) => String::from_utf8(b).map_err(|_| PlanError::NotUtf8 { name: name.clone() })?,
        Err(source) => return Err(PlanError::Read { name, source }),
    };
    let vocab = Vocabulary {
        policy: &|text, label| arms::vocab_policy(text, label).map_err(Into::into),
        window: &arms::vocab_window,
        model: &|m| check_model(m).map_err(Into::into),
    };
    matrix::load(&name, &text, &vocab).map_err(|problems| PlanError::Problems {
        what: name.clone(),
        problems,
    })
}

/// The task spec files of the profile's patterns (relative to the matrix file's folder), each
/// pattern that matches nothing reported at its place in the file.
fn task_files(file: Option<&Path>, layer: &Layer) -> Result<Vec<PathBuf>, PlanError> {
    let dir = file
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let Some(patterns) = &layer.tasks else {
        return tasks::default_dir(&dir)
            .map(|d| vec![d])
            .map_err(PlanError::Tasks);
    };
    let mut files: Vec<PathBuf> = Vec::new();
    let mut problems = Vec::new();
    for p in patterns {
        match tasks::spec_files(&[dir.join(&p.pattern)]) {
            Ok(found) if !found.is_empty() => {
                for f in found {
                    if !files.contains(&f) {
                        files.push(f);
                    }
                }
            }
            Ok(_) | Err(_) => problems.push(Problem {
                file: file.map(|f| f.display().to_string()).unwrap_or_default(),
                line: p.line,
                col: p.col,
                message: format!(
                    "no task spec matches `{}` (looked in {}); give a .yaml file, a folder or a glob",
                    p.pattern,
                    dir.join(&p.pattern).display()
                ),
            }),
        }
    }
    if problems.is_empty() {
        Ok(files)
    } else {
        Err(PlanError::Problems {
            what: "the matrix file".to_string(),
            problems,
        })
    }
}

/// The matrix's arms, models and seeds: the command line's over the profile's over the
/// built-in defaults (foldbench's own policies, [`DEFAULT_MODEL`], [`DEFAULT_SEEDS`]). Models
/// given on the command line replace every arm's own.
pub fn layered(layer: &Layer, ov: &Overrides) -> Result<Layered, PlanError> {
    let mut arms: Vec<ArmDef> = if !ov.policies.is_empty() {
        arm_defs(&ov.policies)?
    } else {
        match layer.arms.clone() {
            Some(arms) => arms,
            None => arm_defs(&arms::default_texts())?,
        }
    };
    let models = if !ov.models.is_empty() {
        for m in &ov.models {
            check_model(m)?;
        }
        for a in &mut arms {
            a.models = None;
        }
        ov.models.clone()
    } else {
        layer
            .models
            .clone()
            .unwrap_or_else(|| vec![DEFAULT_MODEL.to_string()])
    };
    let seeds = match &ov.seeds {
        Some(s) => matrix::parse_seeds(s)?,
        None => layer
            .seeds
            .clone()
            .unwrap_or_else(|| DEFAULT_SEEDS.to_vec()),
    };
    let arms = apply_windows(
        &arms,
        layer.windows.as_deref().unwrap_or(&[]),
        &arms::vocab_window,
    );
    Ok(Layered {
        arms,
        models,
        seeds,
    })
}

/// The arms, models and seeds a matrix plays ([`layered`]).
#[derive(Debug, Clone)]
pub struct Layered {
    /// The arms, windows applied, in order.
    pub arms: Vec<ArmDef>,
    /// The model labels of arms without their own.
    pub models: Vec<String>,
    /// The seeds.
    pub seeds: Vec<u64>,
}

/// Resolves the matrix: file, profile, command line, tasks from disk, cells and shard.
pub fn plan(
    source: &MatrixSource,
    partition: Option<Partition>,
    ov: &Overrides,
) -> Result<Plan, PlanError> {
    let (file, profile, layer) = source.layer()?;
    let task_paths = if ov.tasks.is_empty() {
        task_files(file.as_deref(), &layer)?
    } else {
        ov.tasks.clone()
    };
    let loaded = tasks::load_tasks(&task_paths).map_err(|problems| PlanError::Problems {
        what: "the task specs".to_string(),
        problems,
    })?;
    let Layered {
        arms,
        models,
        seeds,
    } = layered(&layer, ov)?;
    let mut run_arms = Vec::new();
    for a in &arms {
        run_arms.push(Arm {
            label: a.label.clone(),
            policy: policies::parse_policy(&a.policy).map_err(ArmError::from)?,
            sweep: a.sweep.clone(),
        });
    }
    let names: Vec<String> = loaded.iter().map(|t| t.spec.name.clone()).collect();
    let cells = matrix::expand(&names, &arms, &models, &seeds);
    Ok(Plan {
        file,
        profile,
        tasks: loaded,
        arms: run_arms,
        models,
        seeds,
        cells,
        prices: layer.prices.into_iter().collect(),
        partition,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two task specs of the repository's suite, by absolute path.
    fn suite(name: &str) -> String {
        format!("{}/../../tasks/{name}.yaml", env!("CARGO_MANIFEST_DIR"))
    }

    fn texts(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn the_default_model_is_written_once_and_replay_alone_is_its_cassettes_model() {
        assert_eq!(models_given(&[], None), Vec::<String>::new());
        assert_eq!(models_or_default(&[], None), [DEFAULT_MODEL]);
        assert_eq!(
            models_or_default(&[], Some(Path::new("cassettes/x"))),
            ["replay:cassettes/x"]
        );
        // --model keeps its label with --replay (the ids of the recorded run).
        let given = texts(&["openai:gpt-x"]);
        assert_eq!(
            models_or_default(&given, Some(Path::new("cassettes/x"))),
            given
        );
        let layered = layered(&Layer::default(), &Overrides::default()).unwrap();
        assert_eq!(layered.models, [DEFAULT_MODEL]);
        assert_eq!(layered.seeds, DEFAULT_SEEDS);
        let labels: Vec<&str> = layered.arms.iter().map(|a| a.label.as_str()).collect();
        assert_eq!(labels, policies::POLICIES);
    }

    #[test]
    fn the_command_line_goes_over_the_profile_and_the_profile_over_the_defaults() {
        let mut own = ArmDef::plain("trim");
        own.models = Some(texts(&["sim:judge=eager"]));
        let layer = Layer {
            arms: Some(vec![ArmDef::plain("none"), own]),
            models: Some(texts(&["sim:judge=lexical"])),
            seeds: Some(vec![7]),
            ..Layer::default()
        };
        let from_profile = layered(&layer, &Overrides::default()).unwrap();
        assert_eq!(from_profile.models, ["sim:judge=lexical"]);
        assert_eq!(from_profile.seeds, [7]);
        assert_eq!(
            from_profile.arms[1].models.as_deref(),
            Some(&texts(&["sim:judge=eager"])[..])
        );
        let flags = Overrides {
            seeds: Some("2-3".into()),
            policies: texts(&["fold"]),
            models: texts(&["sim"]),
            ..Overrides::default()
        };
        let over = layered(&layer, &flags).unwrap();
        assert_eq!(over.models, ["sim"]);
        assert_eq!(over.seeds, [2, 3]);
        assert_eq!(over.arms.len(), 1);
        assert_eq!(over.arms[0].label, "fold");
        // Models on the command line replace an arm's own too.
        let models_only = Overrides {
            models: texts(&["sim"]),
            ..Overrides::default()
        };
        let over = layered(&layer, &models_only).unwrap();
        assert!(over.arms.iter().all(|a| a.models.is_none()));
        assert!(matches!(
            layered(
                &layer,
                &Overrides {
                    models: texts(&["gpt"]),
                    ..Overrides::default()
                }
            ),
            Err(PlanError::Model(ModelLabelError::Unknown { .. }))
        ));
        assert!(matches!(
            layered(
                &layer,
                &Overrides {
                    seeds: Some("3-1".into()),
                    ..Overrides::default()
                }
            ),
            Err(PlanError::Matrix(_))
        ));
    }

    #[test]
    fn a_profile_layers_over_default_and_the_cells_nest_task_arm_model_seed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("m.yaml");
        std::fs::write(
            &file,
            format!(
                "version: 1\nprofiles:\n  default:\n    tasks: [\"{}\", \"{}\"]\n    \
                 arms: [none, trim]\n    seeds: 1-3\n  small:\n    seeds: 1-2\n    \
                 models: [sim, \"sim:judge=eager\"]\n",
                suite("trim-rerun"),
                suite("build-then-turn-off")
            ),
        )
        .unwrap();
        let source = MatrixSource {
            file: Some(file.clone()),
            profile: Some("small".into()),
        };
        let small = plan(&source, None, &Overrides::default()).unwrap();
        assert_eq!(small.file.as_deref(), Some(file.as_path()));
        assert_eq!(small.profile, "small");
        assert_eq!(small.seeds, [1, 2]);
        // 2 tasks × 2 arms × 2 models × 2 seeds, seeds innermost.
        assert_eq!(small.cells.len(), 16);
        let ids: Vec<&str> = small.cells.iter().take(5).map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "trim-rerun/none/sim/1",
                "trim-rerun/none/sim/2",
                "trim-rerun/none/sim:judge=eager/1",
                "trim-rerun/none/sim:judge=eager/2",
                "trim-rerun/trim/sim/1",
            ]
        );
        assert_eq!(small.cells[8].task, "build-then-turn-off");
        assert_eq!(small.only(), None);
        let filter = CellFilter {
            models: texts(&["sim"]),
            policies: texts(&["trim"]),
            ..CellFilter::default()
        };
        assert_eq!(small.matching(&filter).len(), 4);
        assert_eq!(small.policy_of("trim"), "trim");
        // A shard keeps its share of the cells, and the run is told which.
        let half: Partition = "slice:1/2".parse().unwrap();
        let sharded = plan(&source, Some(half), &Overrides::default()).unwrap();
        assert_eq!(sharded.selected().len(), 8);
        assert_eq!(sharded.only().map(|o| o.len()), Some(8));
        assert_eq!(sharded.selection().partition.as_deref(), Some("slice:1/2"));
        // The default profile alone: three seeds.
        let default = MatrixSource {
            file: Some(file),
            profile: None,
        };
        assert_eq!(
            plan(&default, None, &Overrides::default())
                .unwrap()
                .cells
                .len(),
            2 * 2 * 3
        );
    }

    #[test]
    fn a_profile_without_a_file_and_a_bad_file_are_refused_with_what_to_do() {
        let none_here = MatrixSource {
            file: None,
            profile: Some("ci".into()),
        };
        // The tests run in the crate's folder, which has no foldbench.yaml.
        assert_eq!(
            none_here.layer().unwrap_err().to_string(),
            "--profile ci needs a matrix file: there is no foldbench.yaml here; give --config FILE"
        );
        assert!(MatrixSource::default()
            .profile_policies()
            .unwrap()
            .is_none());
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("m.yaml");
        std::fs::write(
            &file,
            "version: 1\nprofiles:\n  default:\n    tasks: [nothing/*.yaml]\n    arms: [nosuch]\n",
        )
        .unwrap();
        match read_file(&file) {
            Err(PlanError::Problems { what, problems }) => {
                assert_eq!(what, file.display().to_string());
                assert!(
                    problems.iter().any(|p| p.message.contains("nosuch")),
                    "{problems:?}"
                );
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
        std::fs::write(
            &file,
            "version: 1\nprofiles:\n  default:\n    tasks: [nothing/*.yaml]\n",
        )
        .unwrap();
        let source = MatrixSource {
            file: Some(file),
            profile: None,
        };
        match plan(&source, None, &Overrides::default()) {
            Err(PlanError::Problems { what, problems }) => {
                assert_eq!(what, "the matrix file");
                assert_eq!(problems.len(), 1);
                assert!(problems[0]
                    .message
                    .starts_with("no task spec matches `nothing/*.yaml`"));
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
}
