//! A run's settings as plain values (what `run` and `ab` take on the command line) and the
//! [`RunConfig`] they make: the models' default, the jobs' default, the cells' limits, the
//! sandbox, the real agent with its key and upstream, the behaviour profile the sim follows and
//! the tool cache. The key of a real agent's model is looked up through a function the caller
//! passes ([`Env`]), so a test gives a map where the binary gives the process's environment.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use harness_core::behaviour::End;

use crate::agent_cell::{AgentSetup, NATIVE};
use crate::agents::isolate::Isolation;
use crate::agents::{self, Agent, AgentError, AgentKind, AgentKindError};
use crate::backends::{BackendError, BackendOptions};
use crate::cell::CellOptions;
use crate::execution::sandbox::{Sandbox, SandboxError, SandboxMode};
use crate::execution::tool_cache::{self, ToolCache};
use crate::run::{parse_sim, Arm, RunConfig};
use crate::sessions::behaviour::{self, BehaviourError};
use crate::tasks::LoadedTask;

/// Looks up an environment variable: `Some` with its value when it is set.
/// [`process_env`] reads the process's environment; a test passes a map.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process's environment, as [`Env`] reads it.
pub fn process_env(var: &str) -> Option<String> {
    std::env::var(var).ok()
}

/// The cells a run plays at once without `--jobs`: the machine's cores (2 when they cannot
/// be counted); at least 1.
pub fn jobs_or_cores(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    })
    .max(1)
}

/// `run-YYYYMMDD-HHMMSS` in UTC, the default run folder's name.
pub fn run_id() -> String {
    jiff::Timestamp::now()
        .strftime("run-%Y%m%d-%H%M%S")
        .to_string()
}

/// Where the shell calls' results are kept for reuse between cells (`--tool-cache`,
/// `--no-tool-cache`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolCacheSetting {
    /// No cache: every call runs.
    Off,
    /// In memory, for this run.
    Memory,
    /// In memory and in this folder, for later runs too (capped at
    /// `tool_cache::DEFAULT_DISK_CAP`).
    Disk(PathBuf),
}

/// What `run` and `ab` are told besides their tasks, arms and seeds.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// `--model` labels (none: [`crate::plan::models_or_default`]).
    pub models: Vec<String>,
    /// `--replay DIR`: answer from this cassette folder.
    pub replay: Option<PathBuf>,
    /// `--record DIR`: record every exchange into this cassette folder.
    pub record: Option<PathBuf>,
    /// The run folder (none: `results/<run-id>`, [`run_id`]).
    pub out: Option<PathBuf>,
    /// Cells at once (none: [`jobs_or_cores`]).
    pub jobs: Option<usize>,
    /// Keep each cell's workspace.
    pub keep_workspaces: bool,
    /// Model requests per turn before a turn is cut.
    pub max_steps: usize,
    /// Time limit of one tool call (a check gets at least [`crate::tools::MIN_CHECK_TIMEOUT`]).
    pub tool_timeout: Duration,
    /// Time limit of one cell.
    pub cell_timeout: Duration,
    /// Time limit of one model request.
    pub request_timeout: Duration,
    /// Retries of a model request after the first attempt.
    pub retries: u32,
    /// The longest wait a server's `Retry-After` imposes.
    pub max_retry_wait: Duration,
    /// `max_tokens` sent to a real model.
    pub max_output_tokens: Option<u32>,
    /// The sampling temperature sent to a real model.
    pub temperature: Option<f64>,
    /// Where shell commands run.
    pub sandbox: SandboxMode,
    /// The tool cache.
    pub tool_cache: ToolCacheSetting,
    /// On resume, run again the cells that ended in an infrastructure error.
    pub retry_errors: bool,
    /// `--agent NAME`: a real agent drives the turns.
    pub agent: Option<String>,
    /// `--agent-upstream URL` (none: the agent's own provider).
    pub agent_upstream: Option<String>,
    /// `--behaviour FILE` (none: the profile foldbench ships).
    pub behaviour: Option<PathBuf>,
    /// Which end of the behaviour profile's intervals the sim reads.
    pub behaviour_end: End,
}

/// Why a run's settings make no run. Every variant is the user's to fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// A model label the backends refuse.
    #[error(transparent)]
    Model(#[from] BackendError),
    /// The sandbox asked for does not work here.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// `--agent` with `--record` or `--replay`.
    #[error(
        "--agent runs the agent's own model calls through a proxy: --record and --replay \
         (cassettes of foldbench's own loop) do not apply to it"
    )]
    AgentWithCassettes,
    /// An `--agent` name that names no agent.
    #[error("--agent {name}")]
    AgentName {
        /// The name given.
        name: String,
        /// Why.
        #[source]
        source: AgentKindError,
    },
    /// An agent that is not found on this machine, or does not run.
    #[error("--agent {name}")]
    AgentMissing {
        /// The name given.
        name: String,
        /// Why.
        #[source]
        source: AgentError,
    },
    /// A real agent with a real model, and no key in its variable.
    #[error(
        "--agent {name} with a real model needs its key in {var} (or use --model sim for the \
         offline upstream)"
    )]
    NoKey {
        /// The name given.
        name: String,
        /// The variable the key is read from.
        var: &'static str,
    },
    /// The arm `native` without `--agent`.
    #[error(
        "the arm `{NATIVE}` is a real agent's own context handling: it needs --agent \
         ({} or exec:CMD)",
        agents::listed()
    )]
    NativeWithoutAgent,
    /// The behaviour profile cannot be read.
    #[error(transparent)]
    Behaviour(#[from] BehaviourError),
    /// The tool cache's folder cannot be used.
    #[error("--tool-cache {}: cannot use the folder", dir.display())]
    ToolCache {
        /// The folder.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl RunSettings {
    /// The models the run plays ([`crate::plan::models_or_default`]), each checked by the
    /// backends without connecting to anything.
    pub fn models(&self) -> Result<Vec<String>, SettingsError> {
        let models = crate::plan::models_or_default(&self.models, self.replay.as_deref());
        for m in &models {
            parse_sim(m)?;
        }
        Ok(models)
    }

    /// The configuration of a run of `tasks` × `arms` × the models × `seeds`. It probes the
    /// sandbox (a warning on standard error when `auto` falls back to none for the sim), finds
    /// the agent of `--agent` on this machine and reads its key through `env`, and reads the
    /// behaviour profile.
    pub fn config(
        &self,
        tasks: Vec<LoadedTask>,
        arms: Vec<Arm>,
        seeds: Vec<u64>,
        env: Env<'_>,
    ) -> Result<RunConfig, SettingsError> {
        let models = self.models()?;
        let mut cell = CellOptions {
            keep_workspaces: self.keep_workspaces,
            max_steps: self.max_steps,
            ..CellOptions::default()
        };
        cell.tool_limits.shell_timeout = self.tool_timeout;
        cell.tool_limits.check_timeout = self.tool_timeout.max(crate::tools::MIN_CHECK_TIMEOUT);
        cell.cell_timeout = self.cell_timeout;
        // A real model's shell commands are its own (the sim's are the task's), and so are a
        // real agent's whatever its model: without bubblewrap, `auto` refuses them instead of
        // falling back.
        let real_model = self.agent.is_some()
            || models
                .iter()
                .any(|m| !m.starts_with("replay:") && !matches!(parse_sim(m), Ok(Some(_))));
        cell.tool_limits.sandbox = Sandbox::detect_for(self.sandbox, real_model)?;
        cell.agent = self.agent_setup(&models, &cell.tool_limits.sandbox, env)?;
        if cell.agent.is_none() && arms.iter().any(|a| a.label == NATIVE) {
            return Err(SettingsError::NativeWithoutAgent);
        }
        let profile = behaviour::read_or_shipped(self.behaviour.as_deref())?;
        cell.sim_behaviour = profile.at(self.behaviour_end).sim();
        cell.sim_behaviour_name = behaviour::describe(profile, self.behaviour_end);
        cell.tool_limits.cache = match &self.tool_cache {
            ToolCacheSetting::Off => None,
            ToolCacheSetting::Memory => Some(Arc::new(ToolCache::new())),
            ToolCacheSetting::Disk(dir) => Some(Arc::new(
                ToolCache::with_disk(dir, tool_cache::DEFAULT_DISK_CAP).map_err(|source| {
                    SettingsError::ToolCache {
                        dir: dir.clone(),
                        source,
                    }
                })?,
            )),
        };
        Ok(RunConfig {
            tasks,
            arms,
            models,
            seeds,
            out: self
                .out
                .clone()
                .unwrap_or_else(|| PathBuf::from("results").join(run_id())),
            jobs: jobs_or_cores(self.jobs),
            cell,
            backend: BackendOptions {
                record: self.record.clone(),
                max_output_tokens: self.max_output_tokens,
                temperature: self.temperature,
                timeout: self.request_timeout,
                max_retries: self.retries,
                max_retry_wait: self.max_retry_wait,
                ..BackendOptions::default()
            },
            progress: true,
            retry_errors: self.retry_errors,
            only: None,
            replay: self.replay.clone(),
        })
    }

    /// The agent of `--agent`, found on this machine, with its key and upstream; `None` without
    /// it.
    fn agent_setup(
        &self,
        models: &[String],
        sandbox: &Sandbox,
        env: Env<'_>,
    ) -> Result<Option<Arc<AgentSetup>>, SettingsError> {
        let Some(name) = &self.agent else {
            return Ok(None);
        };
        if self.replay.is_some() || self.record.is_some() {
            return Err(SettingsError::AgentWithCassettes);
        }
        let kind = agents::parse(name).map_err(|source| SettingsError::AgentName {
            name: name.clone(),
            source,
        })?;
        let agent = Agent::resolve(kind).map_err(|source| SettingsError::AgentMissing {
            name: name.clone(),
            source,
        })?;
        let api_key = api_key(name, kind, models, env)?;
        // Inside bubblewrap the agent gets a network of its own with only the proxy in it,
        // through the bridge this program runs; without bubblewrap it reaches the proxy on
        // loopback.
        let isolation = match (sandbox.is_isolated(), std::env::current_exe()) {
            (true, Ok(program)) => Isolation::Bridged { program },
            (true, Err(_)) => Isolation::SharedNetwork,
            (false, _) => Isolation::None,
        };
        Ok(Some(Arc::new(AgentSetup {
            upstream: self
                .agent_upstream
                .clone()
                .unwrap_or_else(|| kind.default_upstream().to_string()),
            agent,
            isolation,
            api_key,
        })))
    }
}

/// The key a real agent sends upstream: `offline` when every model is the sim (the offline
/// upstream needs none), else the value of the agent's own variable
/// ([`AgentKind::key_variable`]) as `env` reads it, which must be set and not empty. `name` is
/// the agent as given (`--agent NAME`), for the message.
pub fn api_key(
    name: &str,
    kind: &dyn AgentKind,
    models: &[String],
    env: Env<'_>,
) -> Result<String, SettingsError> {
    if models.iter().all(|m| matches!(parse_sim(m), Ok(Some(_)))) {
        return Ok("offline".to_string());
    }
    let var = kind.key_variable();
    env(var)
        .filter(|k| !k.is_empty())
        .ok_or_else(|| SettingsError::NoKey {
            name: name.to_string(),
            var,
        })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// The settings `run` takes with no flag, but a run folder and no sandbox.
    fn plain() -> RunSettings {
        RunSettings {
            models: Vec::new(),
            replay: None,
            record: None,
            out: Some(PathBuf::from("results/x")),
            jobs: Some(3),
            keep_workspaces: false,
            max_steps: 80,
            tool_timeout: Duration::from_secs(30),
            cell_timeout: Duration::from_secs(3600),
            request_timeout: Duration::from_secs(120),
            retries: 4,
            max_retry_wait: Duration::from_secs(60),
            max_output_tokens: None,
            temperature: None,
            sandbox: SandboxMode::None,
            tool_cache: ToolCacheSetting::Off,
            retry_errors: true,
            agent: None,
            agent_upstream: None,
            behaviour: None,
            behaviour_end: End::Point,
        }
    }

    fn no_env(var: &str) -> Option<String> {
        panic!("{var} read from the environment")
    }

    #[test]
    fn the_settings_make_the_runs_config_with_its_defaults() {
        let cfg = plain()
            .config(Vec::new(), Vec::new(), vec![1], &no_env)
            .unwrap();
        assert_eq!(cfg.models, ["sim"]);
        assert_eq!(cfg.out, PathBuf::from("results/x"));
        assert_eq!(cfg.jobs, 3);
        assert_eq!(cfg.cell.max_steps, 80);
        assert_eq!(cfg.cell.tool_limits.shell_timeout, Duration::from_secs(30));
        // A check gets at least the minimum.
        assert_eq!(
            cfg.cell.tool_limits.check_timeout,
            crate::tools::MIN_CHECK_TIMEOUT
        );
        assert!(cfg.cell.tool_limits.cache.is_none());
        assert!(cfg.cell.agent.is_none());
        assert_eq!(cfg.backend.timeout, Duration::from_secs(120));
        assert_eq!(cfg.backend.max_retries, 4);
        assert!(cfg.retry_errors && cfg.progress && cfg.only.is_none());
        let shipped = harness_core::behaviour::Profile::shipped().name.clone();
        assert_eq!(cfg.cell.sim_behaviour_name, shipped);

        let mut other = plain();
        other.out = None;
        other.jobs = None;
        other.replay = Some(PathBuf::from("cassettes/c"));
        other.tool_cache = ToolCacheSetting::Memory;
        other.behaviour_end = End::High;
        let cfg = other
            .config(Vec::new(), Vec::new(), vec![1], &no_env)
            .unwrap();
        assert_eq!(cfg.models, ["replay:cassettes/c"]);
        assert_eq!(cfg.replay, Some(PathBuf::from("cassettes/c")));
        assert!(cfg.out.starts_with("results"));
        assert!(cfg.jobs >= 1);
        assert!(cfg.cell.tool_limits.cache.is_some());
        assert_eq!(cfg.cell.sim_behaviour_name, format!("{shipped} at high"));
    }

    #[test]
    fn a_bad_model_the_native_arm_without_an_agent_and_cassettes_with_an_agent_are_refused() {
        let mut bad = plain();
        bad.models = vec!["sim:judge=sometimes".to_string()];
        assert!(matches!(bad.models(), Err(SettingsError::Model(_))));
        let native = crate::arms::arms(&[NATIVE.to_string()]).unwrap();
        let Err(e) = plain().config(Vec::new(), native, vec![1], &no_env) else {
            panic!("the arm native without --agent is refused");
        };
        assert!(matches!(e, SettingsError::NativeWithoutAgent));
        assert!(e.to_string().starts_with(
            "the arm `native` is a real agent's own context handling: it needs --agent ("
        ));
        let mut agent = plain();
        agent.agent = Some("exec:true".to_string());
        agent.record = Some(PathBuf::from("cassettes/c"));
        assert!(matches!(
            agent.config(Vec::new(), Vec::new(), vec![1], &no_env),
            Err(SettingsError::AgentWithCassettes)
        ));
    }

    #[test]
    fn an_agents_key_is_read_through_the_lookup_given_and_the_sim_needs_none() {
        let kind = agents::AGENTS[0];
        let var = kind.key_variable();
        let sim = vec!["sim".to_string(), "sim:judge=eager".to_string()];
        assert_eq!(api_key("a", kind, &sim, &no_env).unwrap(), "offline");
        let real = vec!["sim".to_string(), "anthropic:claude-x".to_string()];
        let env: HashMap<&str, &str> = HashMap::from([(var, "sk-test")]);
        let lookup = |v: &str| env.get(v).map(|s| s.to_string());
        assert_eq!(api_key("a", kind, &real, &lookup).unwrap(), "sk-test");
        let empty = |_: &str| Some(String::new());
        let unset = |_: &str| None;
        for lookup in [&empty as Env<'_>, &unset] {
            let e = api_key("a", kind, &real, lookup).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "--agent a with a real model needs its key in {var} (or use --model sim \
                     for the offline upstream)"
                )
            );
        }
    }

    #[test]
    fn jobs_default_to_the_cores_and_a_run_id_is_the_time() {
        assert_eq!(jobs_or_cores(Some(5)), 5);
        assert!(jobs_or_cores(None) >= 1);
        let id = run_id();
        assert!(
            id.len() == 19 && id.starts_with("run-20") && id.as_bytes()[12] == b'-',
            "{id}"
        );
    }
}
