//! One cell: a task under one arm with one seed, run in a fresh temp git repo (docs/design.md §5).
//!
//! For each turn the loop appends the user message (with the policy's card), then asks the
//! policy for a plan, counts the request, calls the model, executes its tool calls in order and
//! appends the results, until the model answers without a tool call or the step limit is
//! reached. When the turn ends the policy's splices are archived (written, flushed, hashed) and
//! only then applied. After the last turn the checks run and the diff is taken. Everything that
//! happens is emitted as an [`Event`]; the metrics are computed from those events.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness_core::driver::{Driver, Next, Summary};
use harness_core::metrics::{self, Price};
use harness_core::policy::Policy;
use harness_core::spec::{TaskSpec, TurnSpec};
use harness_core::tokens;
use harness_core::{cached_prefix_tokens, Context};
use harness_core::{CellRecord, Status, RECORD_VERSION};
use harness_core::{Event, NeedWatch, RequestRecord, ToolCallRecord};
use harness_core::{Message, MessageKind, ToolCall, ToolSpec};
use harness_core::{Purpose, Request, Response};
use policies::PolicySpec;

use crate::backends::model::Model;
use crate::execution::snapshot::{self, Known, Snapshot};
use crate::execution::workspace::{self, Workspace};
use crate::tools::{self, ToolLimits};

/// The system prompt of every session.
pub const SYSTEM_PROMPT: &str = "You are a coding agent working in a git repository. Use the tools to read, search, edit and \
test the code; paths are relative to the repository root. When the user's request is done, answer with a short closing \
message that says what you found and what you changed, without calling a tool.";

pub(crate) use crate::cell_checks::relative_to;
pub use crate::cell_checks::run_checks;
pub use delegate::{ChildError, CHILD_SYSTEM_PROMPT};

mod delegate;

/// Why a cell's session ended before its checks: the record's `error`, whose display is the
/// reason the record gives.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum SessionError {
    /// The workspace could not be made.
    #[error("workspace")]
    Workspace(#[source] workspace::WorkspaceError),
    /// The cell ran past `--cell-timeout`.
    #[error("the cell timed out after {secs}s (--cell-timeout)")]
    TimedOut {
        /// The limit, in seconds.
        secs: f64,
    },
    /// The task's setup commands failed.
    #[error("setup")]
    Setup(#[source] workspace::WorkspaceError),
    /// The arm's policy does not build.
    #[error(transparent)]
    Policy(#[from] policies::PolicyError),
    /// The policy cannot go on ([`Policy::failed`]: a policy process that broke the protocol),
    /// in its own words.
    #[error("{reason}")]
    PolicyFailed {
        /// The policy's reason.
        reason: String,
    },
    /// The model did not answer.
    #[error(transparent)]
    Model(#[from] crate::backends::model::ModelError),
    /// A delegated child session failed.
    #[error(transparent)]
    Child(#[from] delegate::ChildError),
    /// The workspace could not be snapshotted for the tool cache.
    #[error("workspace snapshot")]
    Snapshot(#[source] std::io::Error),
    /// The workspace's fingerprint could not be taken.
    #[error("workspace fingerprint")]
    Fingerprint(#[source] std::io::Error),
    /// A scripted call's output lacks what the task's script expects: the task is broken.
    #[error("task is broken: turn {turn}, {tool} {args}: the output does not contain the expected {want:?}; output begins {begins:?}")]
    BrokenTask {
        /// The turn.
        turn: u32,
        /// The tool called.
        tool: String,
        /// Its canonical arguments.
        args: String,
        /// What the script expects in the output.
        want: String,
        /// The output's first 200 characters.
        begins: String,
    },
}

/// Writes archives. The default writes into the workspace; tests inject failures.
pub trait ArchiveWriter: Send + Sync {
    /// Writes and flushes `bytes` at the workspace-relative path `rel` under `root`.
    fn write(&self, root: &Path, rel: &str, bytes: &[u8]) -> std::io::Result<()>;
}

/// Writes archives as files beneath the workspace root, flushed to disk before returning,
/// never through a link the agent planted ([`crate::execution::beneath::write_new`]): a symlinked archive
/// folder is refused (the splice then fails with the reason as an event) and a link at the
/// file itself is replaced.
#[derive(Debug, Default)]
pub(crate) struct FsArchive;

impl ArchiveWriter for FsArchive {
    fn write(&self, root: &Path, rel: &str, bytes: &[u8]) -> std::io::Result<()> {
        crate::execution::beneath::write_new(root, rel, bytes)
    }
}

/// What one cell runs.
#[derive(Clone)]
pub struct CellPlan {
    /// Stable id `task/arm/model/seed`.
    pub id: String,
    /// The task.
    pub task: Arc<TaskSpec>,
    /// The folder the task's `repo` is relative to.
    pub task_dir: PathBuf,
    /// Arm label as written.
    pub arm: String,
    /// The policy.
    pub policy: PolicySpec,
    /// The model's name as written.
    pub model_name: String,
    /// Seed.
    pub seed: u64,
}

/// Settings shared by the cells of a run.
#[derive(Clone)]
pub struct CellOptions {
    /// Keep each workspace instead of removing it.
    pub keep_workspaces: bool,
    /// Tool limits.
    pub tool_limits: ToolLimits,
    /// Model requests per turn before the turn is cut.
    pub max_steps: usize,
    /// Prices per model name (`default` applies otherwise).
    pub prices: HashMap<String, Price>,
    /// Where archives are written.
    pub archive_writer: Arc<dyn ArchiveWriter>,
    /// Time limit of the whole session (setup, turns; not the checks): a cell that exceeds it
    /// ends with status `error` (default `DEFAULT_CELL_TIMEOUT`).
    pub cell_timeout: Duration,
    /// The real agent that drives the cells (`run --agent`); `None`: foldbench's own loop.
    pub agent: Option<Arc<crate::agents::AgentSetup>>,
    /// The models a `delegate` call may name for its child, by label (the run's models that
    /// are not the sim: a sim answers its children itself). A child names no model, or the
    /// cell's, to run on the cell's model.
    pub child_models: HashMap<String, Arc<dyn Model>>,
    /// What the sim does when it needs a fact it cannot see (a behaviour profile's; the
    /// shipped one by default): its own loop's sim and the offline upstream of `run --agent`.
    pub sim_behaviour: harness_core::behaviour::SimBehaviour,
    /// The profile's name as the records give it (`fixtures`, `mine.json at high`).
    pub sim_behaviour_name: String,
}

/// The default time limit of one cell: one hour.
pub(crate) const DEFAULT_CELL_TIMEOUT: Duration = Duration::from_secs(3600);

impl Default for CellOptions {
    fn default() -> Self {
        CellOptions {
            keep_workspaces: false,
            tool_limits: ToolLimits::default(),
            max_steps: 80,
            prices: HashMap::new(),
            archive_writer: Arc::new(FsArchive),
            cell_timeout: DEFAULT_CELL_TIMEOUT,
            agent: None,
            child_models: HashMap::new(),
            sim_behaviour: Default::default(),
            sim_behaviour_name: harness_core::behaviour::Profile::shipped().name.clone(),
        }
    }
}

impl CellOptions {
    /// The price of a model.
    pub(crate) fn price(&self, model: &str) -> Price {
        self.prices
            .get(model)
            .or_else(|| self.prices.get("default"))
            .copied()
            .unwrap_or_default()
    }
}

/// An archive the cell wrote, with its content.
#[derive(Debug, Clone)]
pub struct WrittenArchive {
    /// Workspace-relative path.
    pub path: String,
    /// Hex sha256.
    pub sha256: String,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// Everything a cell produced.
pub struct CellOutput {
    /// The record.
    pub record: CellRecord,
    /// The events, in order.
    pub events: Vec<Event>,
    /// Every message the session appended, in order (the transcript).
    pub transcript: Vec<Arc<Message>>,
    /// The workspace diff against the fixture.
    pub diff: String,
    /// Archives written.
    pub archives: Vec<WrittenArchive>,
}

struct Run<'a> {
    plan: &'a CellPlan,
    opts: &'a CellOptions,
    /// The run's tool limits with the task's sandbox (its network and variables).
    limits: ToolLimits,
    model: &'a dyn Model,
    /// The model of the child session in progress, when it names another than the cell's.
    child_model: Option<Arc<dyn Model>>,
    events: Vec<Event>,
    transcript: Vec<Arc<Message>>,
    archives: Vec<WrittenArchive>,
    on_event: &'a (dyn Fn(&str, &Event) + Send + Sync),
    model_ms: u64,
    /// When the cell's time limit (`--cell-timeout`) ends; `None` when it is too far away to
    /// be a time.
    deadline: Option<Instant>,
}

impl Run<'_> {
    /// The cell's time limit, checked at every step: a session whose model answers at once
    /// never waits, so a timer alone would not stop it.
    fn within_deadline(&self) -> Result<(), SessionError> {
        match self.deadline {
            Some(d) if Instant::now() >= d => Err(cell_timed_out(self.opts.cell_timeout)),
            _ => Ok(()),
        }
    }

    fn emit(&mut self, e: Event) {
        (self.on_event)(&self.plan.id, &e);
        self.events.push(e);
    }

    /// Sends request `index` to the model, times the answer and records it.
    async fn ask(&mut self, req: &Request, index: usize) -> Result<Response, SessionError> {
        let began = Instant::now();
        let model = self.child_model.clone();
        let model: &dyn Model = model.as_deref().unwrap_or(self.model);
        let resp = model.respond(req, &self.plan.id).await?;
        let ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.model_ms += ms;
        self.emit(Event::Response {
            index,
            output_tokens: resp.output_tokens,
            usage: resp.usage,
            model_ms: ms,
        });
        Ok(resp)
    }
}

/// Runs one cell to its record. Infrastructure failures end as a record with status `error`.
pub async fn run_cell(
    plan: &CellPlan,
    opts: &CellOptions,
    model: &dyn Model,
    on_event: &(dyn Fn(&str, &Event) + Send + Sync),
) -> CellOutput {
    let started = Instant::now();
    let mut limits = opts.tool_limits.clone();
    limits.sandbox = limits.sandbox.for_task(plan.task.network, &plan.task.env);
    if !plan.task.cache {
        limits.cache = None;
    }
    limits.uncached = Arc::from(plan.task.uncached_commands());
    let mut run = Run {
        plan,
        opts,
        limits,
        model,
        child_model: None,
        events: Vec::new(),
        transcript: Vec::new(),
        archives: Vec::new(),
        on_event,
        model_ms: 0,
        deadline: started.checked_add(opts.cell_timeout),
    };
    let mut diff = String::new();
    let mut closings: HashMap<u32, String> = HashMap::new();
    let mut turns_run = 0;
    let (status, error, checks, policy_name) =
        match Workspace::create(&plan.task_dir.join(&plan.task.repo), opts.keep_workspaces) {
            Err(e) => (
                Status::Error,
                Some(SessionError::Workspace(e).to_string()),
                Vec::new(),
                plan.policy.label(),
            ),
            Ok(ws) => {
                let limit = opts.cell_timeout;
                let outcome = tokio::time::timeout(
                    limit,
                    session(&mut run, &ws, &mut closings, &mut turns_run),
                )
                .await
                .unwrap_or_else(|_| Err(cell_timed_out(limit)));
                let policy_name = outcome
                    .as_ref()
                    .map(|(n, _)| n.clone())
                    .unwrap_or_else(|_| plan.policy.label());
                let (status, error, checks) = match outcome {
                    Err(e) => (Status::Error, Some(harness_core::one_line(&e)), Vec::new()),
                    Ok((_, known)) => {
                        let checks = crate::cell_checks::run_checks_known(
                            &ws,
                            &plan.task,
                            &closings,
                            &run.limits,
                            known,
                        )
                        .await;
                        for c in &checks {
                            run.emit(Event::Check {
                                label: c.label.clone(),
                                passed: c.passed,
                                detail: c.detail.clone(),
                            });
                        }
                        let status = if checks.iter().all(|c| c.passed) {
                            Status::Success
                        } else {
                            Status::Failure
                        };
                        (status, None, checks)
                    }
                };
                match ws.diff() {
                    Ok(d) => diff = d,
                    Err(e) => diff = format!("(diff unavailable: {})", harness_core::one_line(&e)),
                }
                (status, error, checks, policy_name)
            }
        };
    let price_of = |m: Option<&str>| opts.price(m.unwrap_or(&plan.model_name));
    let metrics = metrics::compute_priced(&run.events, Some(&plan.task), &price_of);
    let record = CellRecord {
        version: RECORD_VERSION,
        id: plan.id.clone(),
        task: plan.task.name.clone(),
        arm: plan.arm.clone(),
        policy: policy_name,
        model: plan.model_name.clone(),
        seed: plan.seed,
        status,
        error,
        checks,
        turns: turns_run,
        metrics,
        wall_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        model_ms: run.model_ms,
        agent: None,
        behaviour: matches!(
            crate::backends::model::parse_sim(&plan.model_name),
            Ok(Some(_))
        )
        .then(|| opts.sim_behaviour_name.clone()),
    };
    CellOutput {
        record,
        events: run.events,
        transcript: run.transcript,
        diff,
        archives: run.archives,
    }
}

/// The error of a cell that ran past `--cell-timeout`.
fn cell_timed_out(limit: Duration) -> SessionError {
    SessionError::TimedOut {
        secs: limit.as_secs_f64(),
    }
}

/// The session loop: the task's setup, then each turn started, stepped until the model closes it
/// (or `max_steps`), and ended. Returns the resolved policy name, or the infrastructure error.
async fn session(
    run: &mut Run<'_>,
    ws: &Workspace,
    closings: &mut HashMap<u32, String>,
    turns_run: &mut u32,
) -> Result<(String, Known), SessionError> {
    let plan = run.plan;
    let known = ws
        .run_setup_known(&plan.task.setup, &run.limits, ws.created_tree())
        .await
        .map_err(SessionError::Setup)?;
    let mut lp = Loop::new(
        policies::build(&plan.policy, run.model.window())?,
        plan.policy.delegate,
    );
    lp.known = known;
    policy_ok(lp.driver.policy())?;
    let spec = Arc::clone(&plan.task);
    for (i, turn) in spec.turns.iter().enumerate() {
        let t = i as u32 + 1;
        *turns_run = t;
        run.within_deadline()?;
        let mut needs = lp.start_turn(run, t, turn);
        policy_ok(lp.driver.policy())?;
        let mut closing = None;
        for _step in 0..run.opts.max_steps {
            run.within_deadline()?;
            let closed = lp.step(run, ws, t, &mut needs).await?;
            policy_ok(lp.driver.policy())?;
            if let Some(text) = closed {
                closing = Some(text);
                break;
            }
        }
        let next_user = spec.turns.get(i + 1).map(|n| n.user.as_str());
        lp.end_turn(run, t, needs, closing, closings);
        lp.splice(run, ws, t, next_user);
        policy_ok(lp.driver.policy())?;
    }
    Ok((lp.driver.policy().name(), lp.known))
}

/// The policy's failure ([`Policy::failed`]: a policy process that broke the protocol) as the
/// session's error.
fn policy_ok(policy: &dyn Policy) -> Result<(), SessionError> {
    policy
        .failed()
        .map_or(Ok(()), |reason| Err(SessionError::PolicyFailed { reason }))
}

/// The state a session carries from request to request: the policy's driver (the policy and
/// the live context), the fixed prefix (system prompt and tool list), and what the cache
/// simulation needs.
struct Loop {
    driver: Driver,
    system: Arc<str>,
    tools: Arc<[ToolSpec]>,
    /// Tokens of the system prompt and the tool list.
    prefix: u32,
    /// The messages of the previous request (the prompt cache's reference).
    prev: Option<Vec<Arc<Message>>>,
    /// The next request's index.
    index: usize,
    /// The work tree as the last step left it, when foldbench knows it without reading the
    /// workspace (see [`Known`]): the next call's fingerprint and tool-cache key without
    /// hashing every file again.
    known: Known,
    /// Whether the arm offers the `delegate` tool (`+delegate`) and this loop answers it.
    delegating: bool,
    /// Who makes the requests: `None` for the cell's session, `child-N` for a child's.
    agent: Option<String>,
    /// What the requests are for: [`Purpose::Turn`], or [`Purpose::Child`] in a child.
    purpose: Purpose,
    /// The turn the records carry when it is not the messages' own (a child's session is
    /// one turn of its own, recorded under the parent's turn in progress).
    record_turn: Option<u32>,
    /// The model a child runs on when it is not the cell's (recorded with its requests).
    model_label: Option<String>,
    /// Children started so far in the cell, and `delegate` calls so far in the turn.
    children: usize,
    turn_children: usize,
}

/// What one tool call produced: its result message, its record, and messages the policy
/// appends after it.
type CallOutcome = (Arc<Message>, ToolCallRecord, Vec<Arc<Message>>);

impl Loop {
    fn new(policy: Box<dyn Policy>, delegating: bool) -> Loop {
        let mut tool_list: Vec<ToolSpec> = tools::tool_specs();
        tool_list.extend(policy.tools());
        if delegating {
            tool_list.push(delegate::tool_spec());
        }
        Loop::with(policy, SYSTEM_PROMPT, tool_list, delegating)
    }

    /// A loop with its system prompt and tool list.
    fn with(
        policy: Box<dyn Policy>,
        system: &str,
        tool_list: Vec<ToolSpec>,
        delegating: bool,
    ) -> Loop {
        let tools: Arc<[ToolSpec]> = Arc::from(tool_list);
        let system: Arc<str> = Arc::from(system);
        let prefix = tokens::prefix_tokens(&system, &tools);
        Loop {
            driver: Driver::new(policy, prefix),
            system,
            tools,
            prefix,
            prev: None,
            index: 0,
            known: Known::unknown(),
            delegating,
            agent: None,
            purpose: Purpose::Turn,
            record_turn: None,
            model_label: None,
            children: 0,
            turn_children: 0,
        }
    }

    /// Starts turn `t`: the policy's card (if any) on the user message, which joins the context.
    fn start_turn(&mut self, run: &mut Run<'_>, t: u32, turn: &TurnSpec) -> NeedWatch {
        self.turn_children = 0;
        let card = self.driver.start_turn(t);
        let user = Message::user(t, turn.user.clone(), card.as_ref().map(|c| c.text.clone()));
        run.emit(Event::TurnStarted {
            turn: t,
            user: turn.user.clone(),
            card_tokens: card.as_ref().map(|c| tokens::count(&c.text) + 1),
            card_turns: card.as_ref().map(|c| c.turns.clone()).unwrap_or_default(),
        });
        self.driver.push(Arc::clone(&user));
        run.transcript.push(user);
        NeedWatch::with_children(turn, !self.delegating)
    }

    /// The messages of the next request, compacting first when the policy asks (the driver
    /// compacts once a request).
    async fn next_messages(
        &mut self,
        run: &mut Run<'_>,
    ) -> Result<(Vec<Arc<Message>>, Option<String>), SessionError> {
        loop {
            let next = self.driver.next_request();
            policy_ok(self.driver.policy())?;
            match next {
                Next::Send { messages, action } => return Ok((messages, action)),
                Next::Summarise(summary) => {
                    compact(
                        run,
                        &mut self.driver,
                        &self.system,
                        &self.tools,
                        &mut self.prev,
                        &mut self.index,
                        summary,
                    )
                    .await?;
                }
            }
        }
    }

    /// One step of turn `t`: a request, the model's answer, and its tool calls run. Returns the
    /// closing message when the answer called no tool (the turn is over).
    async fn step(
        &mut self,
        run: &mut Run<'_>,
        ws: &Workspace,
        t: u32,
        needs: &mut NeedWatch,
    ) -> Result<Option<String>, SessionError> {
        self.offload(run, ws, t);
        let (messages, action) = self.next_messages(run).await?;
        let req = Request::new(
            Arc::clone(&self.system),
            Arc::clone(&self.tools),
            self.prefix,
            messages,
            self.purpose,
        );
        needs.first_request(&req);
        let cached = cached_prefix_tokens(self.prefix, self.prev.as_deref(), &req.messages);
        let this = self.index;
        self.index += 1;
        let rt = self.record_turn.unwrap_or(t);
        run.emit(Event::Request(RequestRecord {
            index: this,
            turn: rt,
            purpose: self.purpose,
            tokens: req.tokens,
            cached_tokens: cached,
            written_tokens: req.tokens.saturating_sub(cached),
            messages: req.messages.len(),
            visible_results: Context::visible_results(&req.messages),
            action,
            mode: self.driver.policy().mode().map(|m| m.name),
            agent: self.agent.clone(),
            model: self.model_label.clone(),
        }));
        let resp = run.ask(&req, this).await?;
        for e in Event::unseen_arguments(rt, this, &req, &resp) {
            run.emit(e);
        }
        self.prev = Some(req.messages);
        let assistant = Message::assistant(t, resp.text.clone(), resp.tool_calls.clone());
        self.driver.push(Arc::clone(&assistant));
        self.keep(run, assistant);
        if resp.tool_calls.is_empty() {
            return Ok(Some(resp.text.clone()));
        }
        for call in &resp.tool_calls {
            let (result, mut record, append) =
                self.tool_call(run, ws, t, this, call, &resp).await?;
            record.turn = rt;
            record.agent = self.agent.clone();
            needs.result(&call.id, &result.text);
            run.emit(Event::ToolCall(record));
            self.driver.push(Arc::clone(&result));
            self.keep(run, result);
            for m in append {
                self.driver.push(Arc::clone(&m));
                self.keep(run, m);
            }
        }
        Ok(None)
    }

    /// Adds a message to the cell's transcript: the session's own; a child's messages are in
    /// its own context only (its requests and tool calls are in the events, marked).
    fn keep(&self, run: &mut Run<'_>, m: Arc<Message>) {
        if self.agent.is_none() {
            run.transcript.push(m);
        }
    }

    /// Answers one tool call of request `this`: a malformed call, a policy tool, a workspace
    /// tool the policy refuses, or a workspace tool run for real (checked against the script's
    /// `expect`, so a broken task stops the cell).
    async fn tool_call(
        &mut self,
        run: &mut Run<'_>,
        ws: &Workspace,
        t: u32,
        this: usize,
        call: &ToolCall,
        resp: &Response,
    ) -> Result<CallOutcome, SessionError> {
        if let Some(reason) = crate::backends::malformed_call(call) {
            let result = Message::tool_result(t, call, reason, true);
            let record = tool_record(t, this, call, None, None, true, result.tokens);
            return Ok((result, record, Vec::new()));
        }
        if self.delegating && call.name == harness_core::metrics::DELEGATE_TOOL {
            return Ok(delegate::answer(self, run, ws, t, this, call).await?);
        }
        if let Some(answer) = self.driver.tool(call) {
            if let Some(mode) = answer.entered {
                run.emit(Event::StrategyEntered { turn: t, mode });
            }
            let reply = answer.reply;
            let result = Message::tool_result(t, call, reply.text.clone(), reply.is_error);
            let record = ToolCallRecord::policy_call(
                t,
                this,
                call,
                reply.is_error,
                serde_json::to_value(&reply.outcome).ok(),
                result.tokens,
            );
            return Ok((result, record, reply.append));
        }
        if let Some(reason) = self.driver.refuses(call) {
            let result = Message::tool_result(t, call, reason, true);
            let record = tool_record(t, this, call, None, None, true, result.tokens);
            return Ok((result, record, Vec::new()));
        }
        // The work tree before the call: as the last step left it when that is known, else
        // read. The fingerprint comes from it, and a shell call answered through the tool cache
        // takes its key from it (with `.git` and the archive read).
        let cached_shell = call.name == "shell" && run.limits.cache.is_some();
        let (tree, meta) = std::mem::take(&mut self.known)
            .tree_or_read(ws.path())
            .map_err(if cached_shell {
                SessionError::Snapshot
            } else {
                SessionError::Fingerprint
            })?;
        let fp = snapshot::tree_fingerprint(&tree);
        let (before, kept) = if cached_shell {
            let snap =
                Snapshot::from_parts(ws.path(), tree, meta).map_err(SessionError::Snapshot)?;
            (Some(snap), None)
        } else {
            (None, Some((tree, meta)))
        };
        let (out, after) = execute_limited(ws.path(), call, &run.limits, before).await;
        self.known = known_after(ws.path(), call, &out, kept, after);
        if let Some((_, want)) = resp.expects.iter().find(|(id, _)| *id == call.id) {
            if !out.text.contains(want.as_str()) {
                return Err(SessionError::BrokenTask {
                    turn: t,
                    tool: call.name.clone(),
                    args: call.canonical_args(),
                    want: want.clone(),
                    begins: out.text.chars().take(200).collect(),
                });
            }
        }
        let text = relative_to(ws.path(), out.text);
        let result = Message::tool_result(t, call, text, out.is_error);
        let mut record = tool_record(
            t,
            this,
            call,
            out.target,
            Some(fp),
            out.is_error,
            result.tokens,
        );
        record.cached = out.cached;
        Ok((result, record, Vec::new()))
    }

    /// Ends turn `t`: the facts the harness watched, the closing message (none when the step
    /// limit cut the turn).
    fn end_turn(
        &mut self,
        run: &mut Run<'_>,
        t: u32,
        needs: NeedWatch,
        closing: Option<String>,
        closings: &mut HashMap<u32, String>,
    ) {
        let facts = needs.into_facts();
        if !facts.is_empty() {
            run.emit(Event::Needs { turn: t, facts });
        }
        let step_limit = closing.is_none();
        let closing = closing.unwrap_or_default();
        closings.insert(t, closing.clone());
        run.emit(Event::TurnEnded {
            turn: t,
            closing,
            step_limit,
            mode: self.driver.policy().mode().map(|m| m.name),
        });
    }

    /// The files the policy keeps for the model (a cut tool output, the history before a
    /// summary): each written and flushed under the archive folder before the policy may name
    /// it; one that cannot be written is reported and the policy told.
    fn offload(&mut self, run: &mut Run<'_>, ws: &Workspace, t: u32) {
        for f in self.driver.offloads() {
            let written = match run.opts.archive_writer.write(ws.path(), &f.path, &f.bytes) {
                Ok(()) => true,
                Err(e) => {
                    run.emit(Event::SpliceFailed {
                        turn: t,
                        reason: format!("offload {}: {e}", f.path),
                    });
                    false
                }
            };
            self.driver.offloaded(&f.path, written);
            if written {
                run.archives.push(WrittenArchive {
                    path: f.path,
                    sha256: harness_core::sha256_hex(&f.bytes),
                    bytes: f.bytes,
                });
            }
        }
    }

    /// The policy's splices at the end of turn `t`: each archived (written and flushed) before
    /// the policy applies it, so a fold result never points at a missing archive; a failed
    /// write leaves the context as it was.
    fn splice(&mut self, run: &mut Run<'_>, ws: &Workspace, t: u32, next_user: Option<&str>) {
        for p in self.driver.end_turn(workspace::ARCHIVE_DIR, next_user) {
            // The archive folder changes (or may have, if the write fails half-way).
            self.known.forget_meta();
            let rel = p.archived.archive.path.clone();
            if let Err(e) = run
                .opts
                .archive_writer
                .write(ws.path(), &rel, &p.archived.bytes)
            {
                run.emit(Event::SpliceFailed {
                    turn: t,
                    reason: format!("archive {rel}: {e}"),
                });
                continue;
            }
            let folded = match self.driver.apply_splice(&p, self.prev.as_deref()) {
                Ok(folded) => folded,
                Err(reason) => {
                    run.emit(Event::SpliceFailed {
                        turn: t,
                        reason: reason.to_string(),
                    });
                    continue;
                }
            };
            for e in folded.events() {
                run.emit(e);
            }
            run.transcript.push(folded.message);
            run.archives.push(WrittenArchive {
                path: rel,
                sha256: folded.archive.sha256,
                bytes: p.archived.bytes,
            });
        }
    }
}

/// The workspace a workspace tool call left, as far as it is known (see [`Known`]): a shell
/// call's own account (`after`); `before` for a tool that only reads; `before` with the written
/// path read again for a file tool that wrote; unknown otherwise (an error, which may have
/// stopped half-way).
fn known_after(
    root: &Path,
    call: &ToolCall,
    out: &tools::ToolOutput,
    before: Option<(snapshot::Tree, Option<snapshot::Meta>)>,
    after: Known,
) -> Known {
    use harness_core::tools::Tool;
    let (Some((before, meta)), false) = (before, out.is_error) else {
        return after;
    };
    if harness_core::tools::reads_only(&call.name) {
        return Known::parts(before, meta);
    }
    let writes = matches!(
        harness_core::tools::find(&call.name).map(|t| t.tool),
        Some(Tool::EditFile | Tool::WriteFile)
    );
    // The path written, as the tool resolved it (through any link on the way).
    let written = out
        .target
        .as_deref()
        .filter(|_| writes)
        .and_then(|t| tools::resolve(root, t).ok())
        .and_then(|abs| {
            abs.strip_prefix(root)
                .ok()
                .and_then(|r| r.to_str())
                .map(str::to_string)
        });
    let Some(rel) = written else {
        return Known::unknown();
    };
    // A file written under the archive folder changes what the cache key reads beside the tree.
    let meta = meta.filter(|_| !snapshot::beside_tree(&rel));
    match snapshot::refreshed(before, root, &rel) {
        Ok(Some(tree)) => Known::parts(tree, meta),
        _ => Known::unknown(),
    }
}

/// Runs a workspace tool call within the tool time limit (`shell_timeout`, `--tool-timeout`).
/// A shell call enforces it itself (its process group is killed at the limit); the file tools
/// run on a blocking thread, and a call that has not returned at the limit is answered with an
/// error (its thread is abandoned).
async fn execute_limited(
    root: &Path,
    call: &ToolCall,
    limits: &ToolLimits,
    before: Option<Snapshot>,
) -> (tools::ToolOutput, Known) {
    if call.name == "shell" {
        return tools::execute_with(root, call, limits, before).await;
    }
    let (dir, owned, l) = (root.to_path_buf(), call.clone(), limits.clone());
    let job = tokio::task::spawn_blocking(move || {
        tokio::runtime::Handle::current().block_on(tools::execute(&dir, &owned, &l))
    });
    let error = |text: String| tools::ToolOutput {
        text,
        is_error: true,
        target: None,
        cached: false,
    };
    let out = match tokio::time::timeout(limits.shell_timeout, job).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => error(format!("error: {} failed: {e}", call.name)),
        Err(_) => error(format!(
            "error: {} did not finish within {}s (the tool time limit) and was abandoned",
            call.name,
            limits.shell_timeout.as_secs_f64()
        )),
    };
    (out, Known::unknown())
}

fn tool_record(
    turn: u32,
    request: usize,
    call: &harness_core::ToolCall,
    target: Option<String>,
    fp: Option<String>,
    is_error: bool,
    tokens: u32,
) -> ToolCallRecord {
    ToolCallRecord {
        turn,
        request,
        id: call.id.clone(),
        name: call.name.clone(),
        args: call.canonical_args(),
        archive_read: target.as_deref().is_some_and(workspace::is_archive_path),
        target,
        fingerprint: fp,
        is_error,
        policy_tool: false,
        outcome: None,
        result_tokens: tokens,
        cached: false,
        agent: None,
    }
}

/// A compaction the driver asked for: the summary request sent and recorded, and the summary
/// handed back to the driver.
async fn compact(
    run: &mut Run<'_>,
    driver: &mut Driver,
    system: &Arc<str>,
    tools: &Arc<[ToolSpec]>,
    prev: &mut Option<Vec<Arc<Message>>>,
    index: &mut usize,
    summary: Summary,
) -> Result<(), SessionError> {
    let t = driver.context().turn;
    let prefix = driver.prefix();
    let action = summary.action();
    let req = Request::new(
        Arc::clone(system),
        Arc::clone(tools),
        prefix,
        summary.messages,
        Purpose::Compaction,
    );
    let cached = cached_prefix_tokens(prefix, prev.as_deref(), &req.messages);
    let this = *index;
    *index += 1;
    run.emit(Event::Request(RequestRecord {
        index: this,
        turn: t,
        purpose: Purpose::Compaction,
        tokens: req.tokens,
        cached_tokens: cached,
        written_tokens: req.tokens.saturating_sub(cached),
        messages: req.messages.len(),
        visible_results: Vec::new(),
        action: Some(action.into()),
        mode: driver.policy().mode().map(|m| m.name),
        agent: None,
        model: None,
    }));
    let resp = run.ask(&req, this).await?;
    let text = Message::host(t, resp.text, MessageKind::Summary);
    let done = driver.compacted(&req.messages, Arc::clone(&text));
    run.transcript.push(text);
    let input_tokens = req.tokens;
    *prev = Some(req.messages);
    run.emit(Event::Compaction {
        turn: t,
        emergency: summary.emergency,
        input_tokens,
        output_tokens: resp.output_tokens,
        rewritten_tokens: done.rewritten_tokens,
    });
    Ok(())
}
