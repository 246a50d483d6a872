//! A cell of `run --agent`: a real agent (Claude Code, Codex, mini-swe-agent or any command)
//! drives the task's user turns through its own command line, in the cell's temp repository,
//! with its model calls going through a proxy that applies the cell's policy (docs/agents.md).
//!
//! Per cell:
//!
//! 1. the workspace and the task's setup, as for the built-in loop;
//! 2. the upstream: with a `sim` model, an offline upstream ([`SimServer`]) that answers from
//!    the task's script in the agent's own tool vocabulary; else the agent's real API
//!    ([`AgentSetup::upstream`]);
//! 3. a [`Proxy`] in front of it with the cell's policy (`native`: `none`, and the agent keeps
//!    its own compaction), its archives in the workspace, its run folder a temp folder;
//! 4. one agent process per user turn (`crate::agents::Agent::turn_command` in [`isolate::command`]),
//!    continuing the session of the turn before, with the cell's time limit;
//! 5. the proxy stopped, its main conversation's events (requests, answers, the agent's tool
//!    calls, folds, archive reads) become the cell's, its transcript and archives the cell's
//!    files; then the task's checks, with each turn's closing message.
//!
//! Every figure of the record is measured from what the proxy saw, never from what the agent
//! reports; the record names the agent, its version, how its compaction was set and how its
//! process was isolated ([`AgentRun`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness_core::metrics;
use harness_core::sim::SimConfig;
use harness_core::Event;
use harness_core::Message;
use harness_core::{AgentRun, CellRecord, Status, RECORD_VERSION};
use tokio::io::AsyncReadExt as _;

use crate::agents::isolate::{self, Isolation, Launch, SOCKET};
use crate::agents::{bridge, TurnSettings};
use crate::cell::{run_checks, CellOptions, CellOutput, CellPlan, WrittenArchive};
use crate::execution::workspace::Workspace;
use crate::proxy::{Proxy, ProxyConfig};
use crate::results::{cell_folder, read_jsonl, EVENTS_FILE, TRANSCRIPT_FILE};
use crate::sim_server::SimServer;

pub use crate::agents::AgentSetup;

/// The arm that runs the agent with its own context handling and no proxy policy.
pub const NATIVE: &str = "native";

/// Most bytes of an agent turn's output kept (its closing message is read from them).
const OUTPUT_CAP: usize = 8 << 20;

/// Why a cell of `run --agent` ended before its checks: the record's `error`, whose display is
/// the reason the record gives.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum AgentCellError {
    /// The cell's time limit ended.
    #[error("the cell timed out after {secs}s (--cell-timeout)")]
    TimedOut {
        /// The limit, in seconds.
        secs: f64,
    },
    /// The task's setup commands failed.
    #[error("setup")]
    Setup(#[source] crate::execution::workspace::WorkspaceError),
    /// The sim label does not read.
    #[error(transparent)]
    Model(#[from] crate::backends::BackendError),
    /// The offline upstream did not start.
    #[error(transparent)]
    Upstream(#[from] crate::sim_server::SimServerError),
    /// The cell's temp folder cannot be made.
    #[error("cannot create the agent's temp folder")]
    Scratch(#[source] std::io::Error),
    /// The arm's policy does not build.
    #[error(transparent)]
    Policy(#[from] policies::PolicyError),
    /// The proxy did not start or stop.
    #[error(transparent)]
    Proxy(#[from] crate::proxy::ProxyError),
    /// The bridge's socket folder cannot be made.
    #[error("agent socket folder")]
    Socket(#[source] std::io::Error),
    /// The bridge to the proxy cannot listen.
    #[error("agent bridge")]
    Bridge(#[source] std::io::Error),
    /// What the proxy recorded does not read.
    #[error(transparent)]
    Records(#[from] crate::results::ReadError),
    /// The agent's home cannot be prepared.
    #[error("agent home {}", home.display())]
    Home {
        /// The agent's home.
        home: PathBuf,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// A turn's process did not run to its end.
    #[error("turn {turn}: {agent} ({})", program.display())]
    Turn {
        /// The turn, from 1.
        turn: u32,
        /// The agent's name.
        agent: &'static str,
        /// Its program.
        program: PathBuf,
        /// What went wrong.
        #[source]
        source: TurnError,
    },
    /// A turn's process ended with a failure (a status, a signal, or the agent's own report).
    #[error("turn {turn}: {agent} exited with {status}{}; its stderr ends: {stderr}", report.as_ref().map(|e| format!(" ({e})")).unwrap_or_default())]
    Exited {
        /// The turn, from 1.
        turn: u32,
        /// The agent's name.
        agent: &'static str,
        /// `status N` or `a signal`.
        status: String,
        /// The agent's own report of its failure, in its own words.
        report: Option<String>,
        /// The end of what it printed on standard error.
        stderr: String,
    },
    /// What a turn printed does not read.
    #[error(
        "turn {turn}: what it printed does not read (exit {status}; its stderr ends: {stderr})"
    )]
    Unread {
        /// The turn, from 1.
        turn: u32,
        /// Why it does not read.
        #[source]
        source: crate::agents::AgentError,
        /// `status N` or `by a signal`.
        status: String,
        /// The end of what it printed on standard error.
        stderr: String,
    },
}

/// Why a turn's process did not run to its end.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum TurnError {
    /// It did not start.
    #[error("cannot start it")]
    Start(#[source] std::io::Error),
    /// The cell's time limit ended while it ran.
    #[error("the cell's time limit ended during the turn (--cell-timeout)")]
    TimeLimit,
    /// Waiting for it failed.
    #[error(transparent)]
    Wait(std::io::Error),
}

/// Runs one cell with a real agent. Infrastructure failures end as a record with status
/// `error` and the reason (the agent's own report, the tail of what it printed).
pub(crate) async fn run_agent_cell(
    plan: &CellPlan,
    opts: &CellOptions,
    setup: &AgentSetup,
) -> CellOutput {
    let started = Instant::now();
    let mut limits = opts.tool_limits.clone();
    limits.sandbox = limits.sandbox.for_task(plan.task.network, &plan.task.env);
    limits.cache = None;
    let native = plan.arm == NATIVE;
    let mut out = Outcome::default();
    let mut checks = Vec::new();
    let mut diff = String::new();
    let error = match Workspace::create(&plan.task_dir.join(&plan.task.repo), opts.keep_workspaces)
    {
        Err(e) => Some(format!("workspace: {}", harness_core::one_line(&e))),
        Ok(ws) => {
            let limit = opts.cell_timeout;
            let deadline = started.checked_add(limit);
            let r = tokio::time::timeout(
                limit,
                session(plan, opts, setup, &ws, &limits, native, deadline, &mut out),
            )
            .await
            .unwrap_or_else(|_| {
                Err(AgentCellError::TimedOut {
                    secs: limit.as_secs_f64(),
                })
            });
            let error = r.err().map(|e| harness_core::one_line(&e));
            if error.is_none() {
                checks = run_checks(&ws, &plan.task, &out.closings, &limits).await;
                for c in &checks {
                    out.events.push(Event::Check {
                        label: c.label.clone(),
                        passed: c.passed,
                        detail: c.detail.clone(),
                    });
                }
            }
            diff = ws
                .diff()
                .unwrap_or_else(|e| format!("(diff unavailable: {})", harness_core::one_line(&e)));
            error
        }
    };
    let status = match (&error, checks.iter().all(|c| c.passed)) {
        (Some(_), _) => Status::Error,
        (None, true) => Status::Success,
        (None, false) => Status::Failure,
    };
    let model_ms = out
        .events
        .iter()
        .map(|e| match e {
            Event::Response { model_ms, .. } => *model_ms,
            _ => 0,
        })
        .sum();
    let price = opts.price(&plan.model_name);
    let record = CellRecord {
        version: RECORD_VERSION,
        id: plan.id.clone(),
        task: plan.task.name.clone(),
        arm: plan.arm.clone(),
        policy: if native {
            NATIVE.to_string()
        } else {
            out.policy.clone().unwrap_or_else(|| plan.policy.label())
        },
        model: plan.model_name.clone(),
        seed: plan.seed,
        status,
        error,
        checks,
        turns: out.turns,
        metrics: metrics::compute(&out.events, Some(&plan.task), &price),
        wall_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        model_ms,
        agent: Some(AgentRun {
            name: setup.agent.kind.name().to_string(),
            version: setup.agent.version.clone(),
            compaction: setup.agent.compaction(native),
            isolation: setup.isolation.describe().to_string(),
            side_requests: out.side_requests,
        }),
        behaviour: matches!(
            crate::backends::model::parse_sim(&plan.model_name),
            Ok(Some(_))
        )
        .then(|| opts.sim_behaviour_name.clone()),
    };
    CellOutput {
        record,
        events: out.events,
        transcript: out.transcript,
        diff,
        archives: out.archives,
    }
}

/// What the session gathered, kept when it fails half-way.
#[derive(Default)]
struct Outcome {
    events: Vec<Event>,
    transcript: Vec<Arc<Message>>,
    archives: Vec<WrittenArchive>,
    closings: HashMap<u32, String>,
    turns: u32,
    policy: Option<String>,
    side_requests: u64,
}

/// The setup, the upstream and the proxy, the turns, and what the proxy recorded.
#[allow(clippy::too_many_arguments)]
async fn session(
    plan: &CellPlan,
    opts: &CellOptions,
    setup: &AgentSetup,
    ws: &Workspace,
    limits: &crate::tools::ToolLimits,
    native: bool,
    deadline: Option<Instant>,
    out: &mut Outcome,
) -> Result<(), AgentCellError> {
    ws.run_setup(&plan.task.setup, limits)
        .await
        .map_err(AgentCellError::Setup)?;
    let loopback: SocketAddr = ([127, 0, 0, 1], 0).into();
    let sim = match crate::backends::model::parse_sim(&plan.model_name)? {
        Some(s) => Some(
            SimServer::start(
                Arc::clone(&plan.task),
                SimConfig {
                    seed: plan.seed,
                    recheck: s.recheck,
                    judge: s.judge,
                    behaviour: opts.sim_behaviour,
                },
                loopback,
                None,
            )
            .await?,
        ),
        None => None,
    };
    let upstream = match &sim {
        Some(s) => format!("http://{}", s.addr()),
        None => setup.upstream.clone(),
    };
    let scratch = scratch_dir()?;
    let policy = if native {
        policies::parse_policy("none")?
    } else {
        plan.policy.clone()
    };
    let mut cfg = ProxyConfig::new(policy, &upstream, loopback, &scratch.path().join("proxy"));
    cfg.workdir = Some(ws.path().to_path_buf());
    cfg.arm = plan.arm.clone();
    cfg.task = plan.task.name.clone();
    cfg.needs = Some(Arc::clone(&plan.task));
    let proxy = Proxy::start(cfg).await?;
    let socket_dir = scratch.path().join("socket");
    std::fs::create_dir_all(&socket_dir).map_err(AgentCellError::Socket)?;
    let home = scratch.path().join("home");
    let (base_url, bridge_task) = match &setup.isolation {
        Isolation::Bridged { .. } => {
            let task = bridge::outside(&socket_dir.join(SOCKET), proxy.addr())
                .map_err(AgentCellError::Bridge)?;
            (
                format!("http://127.0.0.1:{}", isolate::BRIDGE_PORT),
                Some(task),
            )
        }
        _ => (proxy.base_url(), None),
    };
    let model = real_model_name(&plan.model_name);
    let turns = turns(
        plan,
        opts,
        setup,
        ws,
        limits,
        native,
        deadline,
        &home,
        &socket_dir,
        &base_url,
        model,
        out,
    )
    .await;
    if let Some(t) = bridge_task {
        t.abort();
    }
    let summary = proxy.stop().await;
    if let Some(s) = sim {
        s.stop().await;
    }
    let summary = summary?;
    // The conversations' events as the stopped proxy wrote them (its last turn's folds
    // included); the main one has the most requests (a title or a quota probe is a side
    // request of it, a branch a conversation of its own).
    let requests = |evs: &[Event]| {
        evs.iter()
            .filter(|e| matches!(e, Event::Request(_)))
            .count()
    };
    // The proxy's own files: one that does not read is the cell's error, never a silent gap.
    let mut convs = Vec::new();
    for cell in &summary.cells {
        let dir = summary.out.join("cells").join(cell_folder(cell));
        let evs: Vec<Event> = read_jsonl(&dir.join(EVENTS_FILE))?.unwrap_or_default();
        convs.push((cell.clone(), dir, evs));
    }
    let main = convs.into_iter().max_by_key(|(_, _, evs)| requests(evs));
    out.side_requests = summary
        .requests
        .saturating_sub(main.as_ref().map_or(0, |(_, _, evs)| requests(evs) as u64));
    if let Some((cell, dir, evs)) = main {
        out.events = evs;
        let messages: Vec<Message> = read_jsonl(&dir.join(TRANSCRIPT_FILE))?.unwrap_or_default();
        out.transcript = messages.into_iter().map(Message::sealed).collect();
        out.archives = read_archives(&dir.join("archive"));
        out.policy = crate::results::read_records(&summary.out)?
            .into_iter()
            .find(|r| r.id == cell)
            .map(|r| r.policy);
    }
    turns
}

/// The agent's turns, one process each; stops at the first that fails.
#[allow(clippy::too_many_arguments)]
async fn turns(
    plan: &CellPlan,
    opts: &CellOptions,
    setup: &AgentSetup,
    ws: &Workspace,
    limits: &crate::tools::ToolLimits,
    native: bool,
    deadline: Option<Instant>,
    home: &Path,
    socket_dir: &Path,
    base_url: &str,
    model: Option<&str>,
    out: &mut Outcome,
) -> Result<(), AgentCellError> {
    let agent = &setup.agent;
    agent
        .prepare_home(home, base_url, model)
        .map_err(|source| AgentCellError::Home {
            home: home.to_path_buf(),
            source,
        })?;
    let mut session = agent.kind.first_session(&plan.id);
    for (i, turn) in plan.task.turns.iter().enumerate() {
        let t = i as u32 + 1;
        out.turns = t;
        let cmd = agent.turn_command(&TurnSettings {
            turn: t,
            prompt: &turn.user,
            base_url,
            api_key: &setup.api_key,
            model,
            home,
            session: session.as_deref(),
            native,
            max_steps: opts.max_steps,
        });
        let launch = Launch {
            workspace: ws.path(),
            home,
            socket_dir,
            sandbox: &limits.sandbox,
            isolation: &setup.isolation,
        };
        let mut command = isolate::command(agent, &cmd, &launch);
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let (code, stdout, stderr) =
            run_turn(&mut command, left)
                .await
                .map_err(|source| AgentCellError::Turn {
                    turn: t,
                    agent: agent.kind.name(),
                    program: agent.program.clone(),
                    source,
                })?;
        let read = agent.read_turn(home, &stdout);
        let tail = |s: &str| {
            let s = s.trim_end();
            let cut = s.char_indices().rev().nth(600).map_or(0, |(i, _)| i);
            s[cut..].to_string()
        };
        match read {
            Ok(r) if r.error.is_none() && code == Some(0) => {
                if r.session.is_some() {
                    session = r.session.clone();
                }
                out.closings.insert(t, r.closing);
            }
            Ok(r) => {
                return Err(AgentCellError::Exited {
                    turn: t,
                    agent: agent.kind.name(),
                    status: code.map_or("a signal".to_string(), |c| format!("status {c}")),
                    report: r.error,
                    stderr: tail(&stderr),
                })
            }
            Err(source) => {
                return Err(AgentCellError::Unread {
                    turn: t,
                    source,
                    status: code.map_or("by a signal".to_string(), |c| format!("status {c}")),
                    stderr: tail(&stderr),
                })
            }
        }
    }
    Ok(())
}

/// Runs one turn's process to its end (or the time left), every process of it ended after.
async fn run_turn(
    cmd: &mut tokio::process::Command,
    left: Option<Duration>,
) -> Result<(Option<i32>, String, String), TurnError> {
    let mut call = crate::execution::reap::begin_call();
    cmd.env(crate::execution::reap::CALL_ENV, call.marker());
    let mut child = cmd.spawn().map_err(TurnError::Start)?;
    call.set_group(child.id());
    let reader = |pipe: Option<Box<dyn tokio::io::AsyncRead + Send + Unpin>>| {
        tokio::spawn(async move {
            let mut buf = Vec::new();
            if let Some(p) = pipe {
                let _ = p.take(OUTPUT_CAP as u64).read_to_end(&mut buf).await;
            }
            buf
        })
    };
    let out = reader(child.stdout.take().map(|p| Box::new(p) as _));
    let err = reader(child.stderr.take().map(|p| Box::new(p) as _));
    let waited = match left {
        Some(left) => tokio::time::timeout(left, child.wait())
            .await
            .map_err(|_| TurnError::TimeLimit),
        None => Ok(child.wait().await),
    };
    // The turn is over: every process it left is ended, so the pipes close.
    call.end();
    let status = waited?.map_err(TurnError::Wait)?;
    let grace = Duration::from_secs(5);
    let text = |r: Result<Result<Vec<u8>, _>, _>| match r {
        Ok(Ok(b)) => String::from_utf8_lossy(&b).into_owned(),
        _ => String::new(),
    };
    let stdout = text(tokio::time::timeout(grace, out).await);
    let stderr = text(tokio::time::timeout(grace, err).await);
    Ok((status.code(), stdout, stderr))
}

/// A temp folder for the cell's proxy records, the agent's home and the bridge's socket, named
/// as workspaces are so a stale one is swept.
fn scratch_dir() -> Result<tempfile::TempDir, AgentCellError> {
    tempfile::Builder::new()
        .prefix(&crate::execution::workspace::owned_prefix(
            std::process::id(),
        ))
        .tempdir_in(crate::execution::workspace::workspaces_dir())
        .map_err(AgentCellError::Scratch)
}

/// The model name the agent asks for: a real model's name without its provider (`None` for
/// the sim: the agent's default, which the sim answers whatever it is).
fn real_model_name(label: &str) -> Option<&str> {
    if matches!(crate::backends::model::parse_sim(label), Ok(Some(_))) {
        return None;
    }
    Some(label.split_once(':').map_or(label, |(_, name)| name))
}

/// The archives the proxy copied into its cell folder.
fn read_archives(dir: &Path) -> Vec<WrittenArchive> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| {
            let bytes = std::fs::read(&p).ok()?;
            let name = p.file_name()?.to_string_lossy().into_owned();
            Some(WrittenArchive {
                path: format!("{}/{name}", Workspace::ARCHIVE_DIR),
                sha256: harness_core::sha256_hex(&bytes),
                bytes,
            })
        })
        .collect()
}
