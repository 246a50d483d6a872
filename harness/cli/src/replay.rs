//! `foldbench replay` and `foldbench analyze`: recorded sessions (Claude Code, Codex,
//! mini-swe-agent, SWE-agent, OpenHands) read from files and folders, replayed under each
//! policy or split into what the model read (docs/design.md §11).
//!
//! This module parses the flags and prints the tables and writes the per-request records; the
//! runner's `sessions` module finds and reads the files and the labels
//! (`harness_runner::sessions`), and the replay, the analysis and the reports are the pure
//! `harness-replay` crate.
//!
//! Per-request records (`--requests-out FILE`, JSON lines, `"version": 1`):
//!
//! - replay: `{version, session, source, policy, request, purpose, turn, tokens, cached_tokens,
//!   written_tokens, output_tokens, messages, action, cost, recorded_tokens}` — one per policy
//!   and request; `request` is the recorded request's index (`null` for a compaction call),
//!   `recorded_tokens` the provider's count when the transcript has usage; a turn's request also
//!   has `hidden_references` (how many), `hidden` (the first 12: `{text, source, from_turn}`,
//!   absent when empty) and `probes` (`{decision, artifact, recall, continuation}`, booleans).
//! - analyze: `{version, session, source, request, turn, prefix, in_progress, conclusions,
//!   steps}` — one per recorded request.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::ValueEnum;
use harness_replay::report::{self, PolicySummary};
use harness_replay::ErrorStats;
use harness_replay::DEFAULT_WINDOW;
use harness_replay::{
    analyze_session, session_truth, JudgeKind, Labels, ReplayConfig, Replayer, SessionReplay,
};
use harness_report::fmt::count;
use harness_report::render::Table;
use harness_report::view::Kind;
use harness_runner::sessions::{self, Filter, Loaded};
use harness_runner::settings::jobs_or_cores;
use serde::Serialize;

use crate::error::{Code, Error};
use crate::format::{self, Document, Form, Format, Outputs, Text};
use crate::view::{ViewArgs, ViewName};

/// `analyze`'s tables: every column, as before views.
const ALL: ViewArgs = ViewArgs {
    view: ViewName::All,
};
use crate::replay_headline::{page_opening, write_frontier, write_verdict};
use crate::replay_json::{session_json, write_requests, ReplayJson};

/// Which judge gives the fold points (the command line's spelling of [`JudgeKind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum JudgeArg {
    /// The essay's lexical rule: a prompt of 60 characters or less continues the unit before it.
    Lexical,
    /// The labelled units as they stand at the card (needs --labels).
    Labels,
    /// The labelled units with hindsight: only units no later turn continues (needs --labels).
    Oracle,
}

impl From<JudgeArg> for JudgeKind {
    fn from(j: JudgeArg) -> JudgeKind {
        match j {
            JudgeArg::Lexical => JudgeKind::Lexical,
            JudgeArg::Labels => JudgeKind::Labels,
            JudgeArg::Oracle => JudgeKind::Oracle,
        }
    }
}

/// What both commands read.
#[derive(Debug, Clone, clap::Args)]
pub struct SourceArgs {
    /// Session files or folders; folders are walked for *.jsonl, *.traj and *.traj.json, Claude
    /// Code subagent files paired with their sessions. None: your own history, from
    /// $CLAUDE_CONFIG_DIR (a comma list; each entry's projects/), else ~/.config/claude/projects
    /// and ~/.claude/projects, and $CODEX_HOME/sessions, else ~/.codex/sessions (those present).
    pub paths: Vec<PathBuf>,
    /// Only sessions active on or after this day (YYYY-MM-DD, UTC; from the records' timestamps).
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub since: Option<String>,
    /// Only sessions active on or before this day (YYYY-MM-DD, UTC).
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub until: Option<String>,
    /// Only sessions whose working folder (cwd) or project folder contains this text
    /// (case-insensitive).
    #[arg(long)]
    pub project: Option<String>,
    /// Only the session whose id starts with this (and its subagents and sidechains).
    #[arg(long, value_name = "ID_PREFIX")]
    pub session: Option<String>,
    /// The transcripts' format: auto, claude-code, codex, codex-legacy, mini-swe-agent,
    /// swe-agent, openhands.
    #[arg(long, default_value = "auto")]
    pub input_format: String,
    /// Who decides where units end: lexical (default), labels or oracle (both need --labels;
    /// sessions the labels do not cover are judged lexically).
    #[arg(long, value_enum, default_value_t = JudgeArg::Lexical)]
    pub judge: JudgeArg,
    /// Labels: a YAML file or a folder of them (tests/fixtures/real-sessions/labels format: a unit per human
    /// turn, keyed by the record's uuid, or by the importer's turn number with `key: "n"`);
    /// repeatable. With the lexical judge they count premature folds.
    #[arg(long)]
    pub labels: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_parser = format::parser(&OUTPUTS), default_value = "table")]
    pub format: Format,
    /// Write one JSON record per request to this file (JSON lines, for plots).
    #[arg(long)]
    pub requests_out: Option<PathBuf>,
    /// List sessions with at least this many human turns in the per-session table.
    #[arg(long, default_value_t = 2, value_parser = crate::limits::turns)]
    pub min_turns: u32,
    /// Threads, 1 to 1024 (default: the number of cores).
    #[arg(long, value_parser = crate::limits::jobs)]
    pub jobs: Option<usize>,
}

/// `foldbench replay`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// Policy `NAME[:k=v,...]`, repeatable (default: the arms of `--profile`, else
    /// [`harness_replay::default_policies`]); the help texts are made by `cli::with_policy_help`.
    #[arg(long = "policy")]
    policies: Vec<String>,
    /// With `--profile NAME` and no `--policy`: that profile's arms (`--profile peers`).
    #[command(flatten)]
    config: crate::matrix::ConfigArgs,
    #[command(flatten)]
    view: crate::view::ViewArgs,
    /// The context window the policies assume (compact fires at 0.9 of it).
    #[arg(long, default_value_t = DEFAULT_WINDOW, value_parser = crate::limits::window)]
    window: u64,
    /// Prices, repeatable: `[MODEL=][SCHEME:]PRICE`. PRICE is `INPUT` (dollars per million
    /// input tokens; cache and output from the scheme's ratios), `INPUT/OUTPUT` (both in
    /// dollars) or `input=3,cache_write=1.25,cache_read=0.1,output=5` (input in dollars, the
    /// rest multipliers of it). SCHEME is `anthropic` (cache write 1.25×, read 0.1×, output 5×)
    /// or `openai` (write 1×, read 0.1×, output 8×); left out, the model's provider's. With
    /// MODEL (`gpt-5.4=2.5/15`, `my-model=openai:1.75`) it prices that model over the built-in
    /// table; without, it is the default for models the table does not know and requests that
    /// name none (docs/replay.md, "Prices per model").
    #[arg(long, value_name = "[MODEL=][SCHEME:]PRICE")]
    price: Vec<String>,
    /// Write one self-contained HTML page (tables, a chart per session, drill-downs) to FILE.html.
    #[arg(short = 'o', long = "output", value_name = "FILE.html")]
    output: Option<PathBuf>,
    /// The behaviour profile recovery follows (default: the one foldbench ships, measured from
    /// its fixtures); a file `--behaviour-out` wrote (docs/replay.md, "The behaviour profile").
    #[arg(long, value_name = "FILE")]
    behaviour: Option<PathBuf>,
    /// Write the behaviour profile measured from these sessions' recorded losses (the "After
    /// real compactions" section) to FILE: what your agents do after they lose context.
    #[arg(long, value_name = "FILE")]
    behaviour_out: Option<PathBuf>,
}

/// `foldbench analyze`.
#[derive(Debug, Clone, clap::Args)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    source: SourceArgs,
}

/// Reads the sessions of `--since`, `--until`, `--project`, `--session`, `--input-format` and
/// the paths (the default places when none is given), keeps those the filters select; the
/// runner says skipped files, counted warnings and what the filters kept on stderr.
fn load_sessions(src: &SourceArgs, command: &str) -> Result<Loaded, Error> {
    let filter = Filter::new(
        src.since.as_deref(),
        src.until.as_deref(),
        src.project.as_deref(),
        src.session.as_deref(),
    )?;
    Ok(sessions::load_sessions(
        &src.paths,
        &src.input_format,
        &filter,
        command,
        &harness_runner::progress::say,
    )?)
}

/// Reads `--labels` (every problem is printed); `None` without it, unless the judge needs them.
fn load_labels(src: &SourceArgs) -> Result<Option<Labels>, Error> {
    let judge: JudgeKind = src.judge.into();
    if src.labels.is_empty() {
        if judge.needs_labels() {
            return Err(Error::Usage(format!(
                "--judge {} needs --labels FILE_OR_DIR (e.g. tests/fixtures/real-sessions/labels)",
                judge.name()
            )));
        }
        return Ok(None);
    }
    let files = sessions::load_labels(&src.labels, &harness_runner::progress::say)?;
    let mut labels = Labels::new();
    for f in files {
        labels.add_parsed(&f.name, f.labels);
    }
    Ok(Some(labels))
}

/// What `replay` and `analyze` print, with the line `--format`'s help shows for each.
pub static OUTPUTS: Outputs = Outputs {
    terminal: Some("Terminal tables"),
    markdown: Some("Markdown (for a CI job summary)"),
    csv: Some("CSV: the main table only"),
    json: Some("Everything as one JSON document"),
    junit: None,
    chart: None,
    page: None,
};

/// Runs `foldbench replay`; returns the exit code.
pub fn replay(a: ReplayArgs) -> Result<Code, Error> {
    if let Some(p) = a
        .output
        .as_ref()
        .filter(|p| !harness_runner::html::is_html(p))
    {
        return Err(Error::Usage(format!(
            "-o {}: replay writes an HTML page (.html); per-request records go to --requests-out",
            p.display()
        )));
    }
    harness_runner::exec_policy::set_replay(true);
    // The sessions load while the policies are built: an `exec:` policy's first process (the
    // sandbox's probe, the search for the host's interpreter, its start and handshake) takes
    // as long as the loading or longer.
    let (built, read) = std::thread::scope(|s| {
        let read = s.spawn(|| -> Result<_, Error> {
            let labels = load_labels(&a.source)?;
            Ok((labels, load_sessions(&a.source, "replay")?))
        });
        let built = replayer_of(&a);
        (built, read.join())
    });
    let (replayer, prices) = built?;
    let (labels, loaded) = match read {
        Ok(r) => r?,
        Err(panic) => std::panic::resume_unwind(panic),
    };
    let began = Instant::now();
    let (replays, losses) = replayer.replay_all_measured(
        &loaded.sessions,
        labels.as_ref(),
        jobs_or_cores(a.source.jobs),
    );
    let failed = policy_errors(&replays);
    let (replays, labels_order, left_out) =
        harness_replay::headline::completed(replays, &replayer.labels());
    let truths: Vec<_> = loaded.sessions.iter().filter_map(session_truth).collect();
    let subagents = crate::replay_subagents::subagents_of(
        &loaded.sessions,
        &replayer,
        labels.as_ref(),
        jobs_or_cores(a.source.jobs),
    )?;
    let replay_seconds = began.elapsed().as_secs_f64();
    let models = sessions::model_prices(&loaded.sessions, &prices);
    let price_notes = sessions::price_notes(&models, &prices.default, &loaded.sessions);
    let (truth, truth_all) = report::truth_table(&truths);
    let summary = report::summarize(&replays, &labels_order);
    let agreement = labels
        .as_ref()
        .map(|l| harness_replay::LexicalAgreement::of(&loaded.sessions, l));
    let caveats =
        harness_replay::caveat_notes(&replays, &summary, a.source.judge.into(), agreement);
    let r = Replayed {
        summary,
        caveats,
        requests: loaded
            .sessions
            .iter()
            .filter(|s| {
                replays
                    .iter()
                    .any(|r| r.session.id == s.id && r.session.source == s.source)
            })
            .map(|s| s.requests.len())
            .sum(),
        labelled: replays.iter().filter(|s| s.labelled).count(),
        judge: a.source.judge.into(),
        replays,
        truths,
        labels_order,
        truth,
        truth_all,
        models,
        price_notes,
        loaded,
        subagents,
        losses,
        profile: replayer.config().behaviour.name.clone(),
        left_out,
    };
    if let Some(path) = &a.source.requests_out {
        write_requests(path, &r.replays)?;
    }
    if let Some(path) = &a.behaviour_out {
        write_behaviour(path, &r.losses)?;
    }
    crate::out::print(&a.source.format.render(&ReplayDoc { a: &a, r: &r })?)?;
    if let Some(path) = &a.output {
        write_replay_page(&a, &r, path)?;
    }
    eprintln!(
        "import and tokenize {:.2}s · replay {:.2}s ({}, {})",
        r.loaded.seconds,
        replay_seconds,
        count(r.replays.len(), "session"),
        count(jobs_or_cores(a.source.jobs), "thread")
    );
    if failed > 0 {
        eprintln!(
            "error: {} of a policy ended in an error (exit 100); the others are complete",
            count(failed, "replay")
        );
        return Ok(Code::Failed);
    }
    Ok(Code::Ok)
}

/// `--behaviour-out FILE`: the profile measured from the sessions' losses, named after the file,
/// with the command that measured it; an error (nothing written) when no loss was measured.
fn write_behaviour(
    path: &Path,
    losses: &[harness_replay::losses::SessionLosses],
) -> Result<(), Error> {
    let (name, command) = crate::behaviour::name_and_command(path);
    let Some(profile) = harness_replay::losses::profile(losses, &name, &command) else {
        return Err(Error::Usage(format!(
            "--behaviour-out {}: no recorded loss with anything before it in these sessions, so there is nothing to measure a behaviour profile from; give sessions in which the host compacted (Claude Code's compact_boundary, Codex's compacted items, OpenHands' condensations)",
            path.display()
        )));
    };
    sessions::write_behaviour(path, &profile).map_err(Error::failed)?;
    let kinds: Vec<String> = harness_core::behaviour::LossKind::ALL
        .iter()
        .filter(|k| profile.measured(**k))
        .map(|k| format!("{} ({} losses)", k.name(), profile.kind(*k).losses))
        .collect();
    eprintln!(
        "behaviour profile `{name}` in {}: {}",
        path.display(),
        kinds.join(", ")
    );
    Ok(())
}

/// Says on standard error which policy failed on which session (its `error`: a
/// policy process that broke the protocol); how many did.
fn policy_errors(replays: &[SessionReplay]) -> usize {
    let mut n = 0;
    for s in replays {
        for p in s.policies.iter().filter(|p| p.error.is_some()) {
            n += 1;
            eprintln!(
                "error: session {} ({}), policy `{}`: {}",
                s.session.id,
                s.session.source,
                p.policy,
                p.error.as_deref().unwrap_or_default()
            );
        }
    }
    n
}

/// Everything `replay` prints and writes.
struct Replayed {
    replays: Vec<SessionReplay>,
    truths: Vec<harness_replay::SessionTruth>,
    labels_order: Vec<String>,
    summary: Vec<PolicySummary>,
    /// What the numbers do not say by themselves ([`harness_replay::caveat_notes`]).
    caveats: Vec<String>,
    /// Recorded requests over all sessions.
    requests: usize,
    /// Sessions with unit labels.
    labelled: usize,
    judge: JudgeKind,
    truth: Table,
    truth_all: ErrorStats,
    models: Vec<sessions::ModelPrice>,
    price_notes: Vec<String>,
    loaded: Loaded,
    /// Parents with subagents ([`harness_replay::subagents`]).
    subagents: Vec<harness_replay::subagents::SessionSubagents>,
    /// What the recorded agents did after their losses ([`harness_replay::losses`]).
    losses: Vec<harness_replay::losses::SessionLosses>,
    /// The name of the behaviour profile recovery followed.
    profile: String,
    /// The sessions and policies left out of the comparison (a policy failed on them).
    left_out: harness_replay::headline::LeftOut,
}

/// The replayer of `--policy`, `--judge`, `--window` and `--price`, and the price table.
fn replayer_of(a: &ReplayArgs) -> Result<(Replayer, harness_core::prices::PriceTable), Error> {
    let prices = harness_core::prices::PriceTable::from_flags(&a.price).map_err(Error::Price)?;
    let list = harness_replay::policy_texts(&a.policies, || a.config.source().profile_policies())?;
    let specs = harness_runner::arms::arms(&list)
        .map_err(|e| Error::policy("--policy", e))?
        .into_iter()
        .map(|a| a.policy)
        .collect();
    let behaviour = harness_runner::sessions::read_or_shipped(a.behaviour.as_deref())
        .map_err(Error::refused)?;
    let replayer = Replayer::new(ReplayConfig {
        policies: specs,
        judge: a.source.judge.into(),
        window: a.window,
        prices: prices.clone(),
        behaviour: std::sync::Arc::new(behaviour),
    })?;
    Ok((replayer, prices))
}

/// A replay, in no format yet.
struct ReplayDoc<'a> {
    a: &'a ReplayArgs,
    r: &'a Replayed,
}

impl Document for ReplayDoc<'_> {
    fn terminal(&self) -> Form {
        Some(Ok(self.text(format::TerminalText::new())))
    }

    fn markdown(&self) -> Form {
        Some(Ok(self.text(format::MarkdownText::new())))
    }

    fn csv(&self) -> Form {
        Some(Ok(report::policy_csv(&self.r.summary)))
    }

    fn json(&self) -> Form {
        let r = self.r;
        let answers = harness_replay::headline::answers(&r.replays, &r.summary);
        let doc = ReplayJson {
            version: 1,
            files: r.loaded.files,
            sessions: r.replays.len(),
            requests: r.requests,
            judge: r.judge.name(),
            policies: &r.summary,
            left_out: &r.left_out,
            models: &r.models,
            per_session: r.replays.iter().map(session_json).collect(),
            ground_truth: r.truth_all,
            ground_truth_sessions: &r.truths,
            subagents: crate::replay_subagents::subagents_json(&r.subagents),
            after_compactions: crate::replay_losses::losses_json(&r.losses),
            behaviour: &r.profile,
            verdict: crate::replay_json::verdict_json(&answers),
            sensitivity: harness_replay::headline::sensitivity(&r.replays, &answers),
        };
        Some(
            serde_json::to_string_pretty(&doc)
                .map(|s| format!("{s}\n"))
                .map_err(Error::from),
        )
    }

    fn junit(&self) -> Form {
        None
    }

    fn chart(&self) -> Form {
        None
    }

    fn page(&self) -> Form {
        None
    }
}

impl ReplayDoc<'_> {
    /// The table and Markdown forms: the verdict, the heading, the policy table and its notes,
    /// the frontier, the essay's figures, the ground truth.
    fn text(&self, mut out: Box<dyn Text>) -> String {
        let (a, r) = (self.a, self.r);
        let answers = harness_replay::headline::answers(&r.replays, &r.summary);
        write_verdict(
            out.as_mut(),
            &answers,
            &r.left_out.sessions_label(),
            &r.profile,
            &harness_replay::headline::sensitivity(&r.replays, &answers),
        );
        let fallback = if r.judge.needs_labels() {
            format!(
                " ({} labelled; {} judged lexically)",
                r.labelled,
                r.replays.len() - r.labelled
            )
        } else if r.labelled > 0 {
            format!(" ({} labelled: premature folds counted)", r.labelled)
        } else {
            String::new()
        };
        out.heading(&format!(
            "Replay of {} from {}: {} × {}; judge {}{fallback}; window {}",
            r.left_out.sessions_phrase(),
            count(r.loaded.files, "file"),
            count(r.requests, "recorded request"),
            if r.labels_order.len() == 1 {
                "1 policy".to_string()
            } else {
                format!("{} policies", r.labels_order.len())
            },
            r.judge.name(),
            a.window
        ));
        out.table(
            &report::policy_table(&r.summary, r.labelled > 0),
            Kind::ReplayPolicies,
            a.view,
        );
        out.lines(&notes_of(a, r));
        write_frontier(out.as_mut(), &answers, a.view);
        if r.labels_order.iter().any(|p| p == report::NONE) && r.labels_order.len() > 1 {
            out.heading(&format!(
                "The essay's figures: median and last request as a fraction of none's, per session with {}+ human turns",
                a.source.min_turns
            ));
            out.table(
                &report::session_table(&r.replays, &r.labels_order, a.source.min_turns),
                Kind::ReplaySessions,
                a.view,
            );
        }
        crate::replay_subagents::write_subagents(out.as_mut(), &r.subagents, a.view);
        crate::replay_losses::write_losses(out.as_mut(), &r.losses, a.view);
        if r.truth_all.requests > 0 {
            out.heading(
                "Ground truth: reconstructed request size (prefix calibrated on each session's first request) against the recorded input + cache_read + cache_creation",
            );
            out.table(&r.truth, Kind::ReplayTruth, a.view);
        }
        out.finish()
    }
}

/// The notes under the policy table: the replay's, the hidden references', what the token
/// figures count, the ratios' legend and the prices'.
fn notes_of(a: &ReplayArgs, r: &Replayed) -> Vec<String> {
    let mut notes = r.left_out.notes();
    notes.extend(report::replay_notes(&r.replays, &r.summary, a.window));
    notes.extend(report::hidden_notes(&r.summary));
    notes.extend(r.caveats.iter().cloned());
    notes.push(report::TOKENS_NOTE.to_string());
    notes.push(harness_report::verdict::RATIO_LEGEND.to_string());
    notes.extend(r.price_notes.iter().cloned());
    notes
}

/// `-o PAGE.html`: the replay as one page.
fn write_replay_page(a: &ReplayArgs, r: &Replayed, path: &Path) -> Result<(), Error> {
    let tables = vec![
        ("Policies".to_string(), report::policy_table(&r.summary, r.labelled > 0)),
        (
            format!("The essay's figures: median and last request as a fraction of none's, per session with {}+ human turns", a.source.min_turns),
            report::session_table(&r.replays, &r.labels_order, a.source.min_turns),
        ),
        ("Ground truth: reconstructed against recorded request sizes".to_string(), r.truth.clone()),
    ];
    let (tables, notes) =
        crate::replay_subagents::with_subagents(tables, notes_of(a, r), &r.subagents);
    let (tables, notes) = crate::replay_losses::with_losses(tables, notes, &r.losses);
    let heading = format!(
        "{} from {}, {} recorded requests; judge {}; window {}",
        r.left_out.sessions_phrase(),
        count(r.loaded.files, "file"),
        r.requests,
        r.judge.name(),
        a.window
    );
    let answers = harness_replay::headline::answers(&r.replays, &r.summary);
    let opening = page_opening(
        &answers,
        &r.left_out.sessions_label(),
        &r.profile,
        &harness_replay::headline::sensitivity(&r.replays, &answers),
    );
    let page = harness_replay::replay_page(
        &heading,
        opening,
        tables,
        notes,
        &r.replays,
        &r.loaded.sessions,
        &r.subagents,
    );
    harness_runner::html::write(path, &page).map_err(Error::failed)
}

/// One analysed request as a JSON line.
#[derive(Serialize)]
struct CompositionLine<'a> {
    version: u32,
    session: &'a str,
    source: &'a str,
    request: usize,
    turn: u32,
    #[serde(flatten)]
    parts: &'a harness_replay::Composition,
}

#[derive(Serialize)]
struct AnalyzeJson<'a> {
    version: u32,
    files: usize,
    judge: &'a str,
    corpus: harness_replay::Composition,
    sessions: &'a [harness_replay::SessionComposition],
    /// Parents with subagents, as `replay` gives them (room and money under none and fold).
    subagents: crate::replay_subagents::SubagentsJson<'a>,
    /// What the recorded agents did after their losses, as `replay` gives it.
    after_compactions: crate::replay_losses::LossesJson<'a>,
}

/// An analysis of recorded sessions, in no format yet.
struct AnalyzeDoc<'a> {
    files: usize,
    judge: JudgeKind,
    min_turns: u32,
    corpus: harness_replay::Composition,
    sessions: &'a [harness_replay::SessionComposition],
    subagents: &'a [harness_replay::subagents::SessionSubagents],
    losses: &'a [harness_replay::losses::SessionLosses],
}

impl AnalyzeDoc<'_> {
    /// The table and Markdown forms: the heading, the composition table, the corpus's shares,
    /// the subagents and the losses.
    fn text(&self, mut out: Box<dyn Text>) -> String {
        let (sessions, judge, corpus) = (self.sessions, self.judge, &self.corpus);
        let requests: usize = sessions.iter().map(|s| s.requests.len()).sum();
        let labelled = sessions
            .iter()
            .filter(|s| s.judge != JudgeKind::Lexical)
            .count();
        let fallback = if judge.needs_labels() {
            format!(
                " ({labelled} labelled; {} judged lexically)",
                sessions.len() - labelled
            )
        } else {
            String::new()
        };
        out.heading(&format!(
            "What the model read: {} of {}, split by the {} judge{fallback} (sessions with {}+ human turns listed)",
            count(requests, "request"),
            count(sessions.len(), "session"),
            judge.name(),
            self.min_turns
        ));
        out.table(
            &report::composition_table(sessions, self.min_turns),
            Kind::Plain,
            ALL,
        );
        out.gap();
        out.line(&format!(
            "Over all {} requests: {:.1}% work in progress, {:.1}% conclusions of finished work, {:.1}% steps of finished work (token-weighted over the messages; the essay's sessions: about two thirds steps, 1% conclusions).",
            harness_core::fold::group_thousands(requests as u64),
            corpus.share(corpus.in_progress) * 100.0,
            corpus.share(corpus.conclusions) * 100.0,
            corpus.share(corpus.steps) * 100.0
        ));
        crate::replay_subagents::write_subagents(out.as_mut(), self.subagents, ViewArgs::default());
        crate::replay_losses::write_losses(out.as_mut(), self.losses, ViewArgs::default());
        out.finish()
    }
}

impl Document for AnalyzeDoc<'_> {
    fn terminal(&self) -> Form {
        Some(Ok(self.text(format::TerminalText::new())))
    }

    fn markdown(&self) -> Form {
        Some(Ok(self.text(format::MarkdownText::new())))
    }

    fn csv(&self) -> Form {
        Some(Ok(
            report::composition_table(self.sessions, self.min_turns).to_csv()
        ))
    }

    fn json(&self) -> Form {
        let doc = AnalyzeJson {
            version: 1,
            files: self.files,
            judge: self.judge.name(),
            corpus: self.corpus,
            sessions: self.sessions,
            subagents: crate::replay_subagents::subagents_json(self.subagents),
            after_compactions: crate::replay_losses::losses_json(self.losses),
        };
        Some(
            serde_json::to_string_pretty(&doc)
                .map(|s| format!("{s}\n"))
                .map_err(Error::from),
        )
    }

    fn junit(&self) -> Form {
        None
    }

    fn chart(&self) -> Form {
        None
    }

    fn page(&self) -> Form {
        None
    }
}

/// Runs `foldbench analyze`; returns the exit code.
pub fn analyze(a: AnalyzeArgs) -> Result<Code, Error> {
    let src = &a.source;
    let judge: JudgeKind = src.judge.into();
    let labels = load_labels(src)?;
    let loaded = load_sessions(src, "analyze")?;
    let sessions = harness_replay::parallel_map(&loaded.sessions, jobs_or_cores(src.jobs), |s| {
        analyze_session(s, judge, labels.as_ref())
    });
    if let Some(path) = &src.requests_out {
        let lines = sessions.iter().zip(&loaded.sessions).flat_map(|(c, s)| {
            c.requests
                .iter()
                .enumerate()
                .map(move |(k, parts)| CompositionLine {
                    version: 1,
                    session: &c.session.id,
                    source: &c.session.source,
                    request: k,
                    turn: s
                        .requests
                        .get(k)
                        .and_then(|r| s.messages.get(r.message))
                        .map_or(0, |m| m.turn),
                    parts,
                })
        });
        let lines = lines.map(|l| serde_json::to_string(&l).expect("a request line serializes"));
        let n = harness_runner::write_lines(path, lines).map_err(|source| Error::Write {
            path: path.clone(),
            source,
        })?;
        eprintln!("{n} request records in {}", path.display());
    }
    let corpus = report::corpus_composition(&sessions);
    let subagents = crate::replay_subagents::subagents_by_default(
        &loaded.sessions,
        judge,
        labels.as_ref(),
        jobs_or_cores(src.jobs),
    )?;
    let losses = harness_replay::losses::measure_all(&loaded.sessions, jobs_or_cores(src.jobs));
    let doc = AnalyzeDoc {
        files: loaded.files,
        judge,
        min_turns: src.min_turns,
        corpus,
        sessions: &sessions,
        subagents: &subagents,
        losses: &losses,
    };
    crate::out::print(&src.format.render(&doc)?)?;
    eprintln!("import and tokenize {:.2}s", loaded.seconds);
    Ok(Code::Ok)
}

#[cfg(test)]
mod tests;
