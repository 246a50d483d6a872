//! `foldbench replay` and `foldbench analyze`: recorded sessions (Claude Code, Codex,
//! mini-swe-agent, SWE-agent, OpenHands) read from files and folders, replayed under each
//! policy or split into what the model read (docs/design.md §11).
//!
//! This module is the IO side only: it finds and reads the files (`harness_import::fs`), reads
//! labels, prints tables and writes the per-request records. The replay, the analysis and the
//! reports are the pure `harness-replay` crate.
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

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::ValueEnum;
use harness_core::metrics::Price;
use harness_core::render::Table;
use harness_import::fs::import_paths;
use harness_import::{Format, ImportedSession};
use harness_replay::engine::DEFAULT_WINDOW;
use harness_replay::report::{self, PolicySummary};
use harness_replay::truth::ErrorStats;
use harness_replay::{
    analyze_session, session_truth, JudgeKind, Labels, ReplayConfig, Replayer, SessionReplay,
};
use serde::Serialize;

use crate::cli::{EXIT_INTERNAL, EXIT_OK, EXIT_USAGE};

/// How tables are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Terminal tables.
    Table,
    /// Markdown (for a CI job summary).
    Md,
    /// CSV: the main table only.
    Csv,
    /// Everything as one JSON document.
    Json,
}

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
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
    /// Write one JSON record per request to this file (JSON lines, for plots).
    #[arg(long)]
    pub requests_out: Option<PathBuf>,
    /// List sessions with at least this many human turns in the per-session table.
    #[arg(long, default_value_t = 2)]
    pub min_turns: u32,
    /// Threads (default: the number of cores).
    #[arg(long)]
    pub jobs: Option<usize>,
}

/// `foldbench replay`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// Policy `NAME[:k=v,...]`, repeatable (default: none, trim, compact, fold, fold+strategies).
    #[arg(long = "policy")]
    policies: Vec<String>,
    /// The context window the policies assume (compact fires at 0.9 of it).
    #[arg(long, default_value_t = DEFAULT_WINDOW)]
    window: u64,
    /// Prices, repeatable: `[MODEL=]PRICE`, PRICE `INPUT` (dollars per million input tokens) or
    /// `input=3,cache_write=1.25,cache_read=0.1,output=5` (multipliers of the input price).
    /// With MODEL (`claude-sonnet-4`, `gpt-5=input=1.25,cache_read=0.1,output=8`) it prices
    /// that model over the built-in table; without, it is the default for models the table does
    /// not know and requests that name none.
    #[arg(long, value_name = "[MODEL=]PRICE")]
    price: Vec<String>,
    /// Write one self-contained HTML page (tables, a chart per session, drill-downs) to FILE.html.
    #[arg(short = 'o', long = "output", value_name = "FILE.html")]
    output: Option<PathBuf>,
}

/// `foldbench analyze`.
#[derive(Debug, Clone, clap::Args)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    source: SourceArgs,
}

/// Parses `--price`.
pub fn parse_price(s: &str) -> Result<Price, String> {
    let mut p = Price::default();
    if let Ok(x) = s.trim().parse::<f64>() {
        if !(x.is_finite() && x >= 0.0) {
            return Err(format!(
                "bad price `{s}`: a price is a number of dollars ≥ 0"
            ));
        }
        p.input = x;
        return Ok(p);
    }
    for kv in s.split(',').filter(|k| !k.trim().is_empty()) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("bad price `{kv}`: write key=value, e.g. input=3,output=5"))?;
        let x: f64 = v
            .trim()
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| format!("bad price `{kv}`: `{}` is not a number ≥ 0", v.trim()))?;
        match k.trim() {
            "input" => p.input = x,
            "cache_write" => p.cache_write = x,
            "cache_read" => p.cache_read = x,
            "output" => p.output = x,
            other => {
                return Err(format!(
                    "unknown price `{other}`; expected input, cache_write, cache_read or output"
                ))
            }
        }
    }
    Ok(p)
}

/// Sessions read from the paths, with what went wrong on the way.
struct Loaded {
    sessions: Vec<ImportedSession>,
    files: usize,
    seconds: f64,
}

/// `1 session`, `2 sessions`.
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn threads(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    })
    .max(1)
}

/// Reads the sessions (from the default places when no path is given), keeps those the filters
/// select; prints skipped files, counted warnings and what the filters kept on stderr.
fn load_sessions(src: &SourceArgs, command: &str) -> Result<Loaded, i32> {
    let filter = match crate::history::Filter::new(
        src.since.as_deref(),
        src.until.as_deref(),
        src.project.as_deref(),
        src.session.as_deref(),
    ) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return Err(EXIT_USAGE);
        }
    };
    let paths = if src.paths.is_empty() {
        crate::history::resolve(command).ok_or(EXIT_USAGE)?
    } else {
        src.paths.clone()
    };
    let mut loaded = import_all(src, &paths)?;
    if filter.is_active() {
        let before = loaded.sessions.len();
        loaded.sessions.retain(|s| filter.keeps(s));
        eprintln!(
            "{} of {} selected by the filters",
            loaded.sessions.len(),
            count(before, "session")
        );
        if loaded.sessions.is_empty() {
            eprintln!("error: no session matches --since/--until/--project/--session as given");
            return Err(EXIT_USAGE);
        }
    }
    Ok(loaded)
}

/// Imports every session under `paths`.
fn import_all(src: &SourceArgs, paths: &[PathBuf]) -> Result<Loaded, i32> {
    let format = match src.input_format.as_str() {
        "auto" => None,
        f => match f.parse::<Format>() {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("error: --input-format: {e} or auto");
                return Err(EXIT_USAGE);
            }
        },
    };
    let began = Instant::now();
    let report = match import_paths(paths, format) {
        Ok(r) => r,
        Err(e) => {
            let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            eprintln!("error: cannot read {}: {e}", names.join(", "));
            return Err(EXIT_USAGE);
        }
    };
    let seconds = began.elapsed().as_secs_f64();
    for (_, e) in &report.errors {
        eprintln!("warning: skipped {e}");
    }
    if report.loops > 0 {
        eprintln!(
            "warning: skipped {} symlink{} to a folder that contains {} (a loop)",
            report.loops,
            if report.loops == 1 { "" } else { "s" },
            if report.loops == 1 { "it" } else { "them" }
        );
    }
    if report.duplicates > 0 {
        eprintln!(
            "note: {} duplicate session{} skipped (same session id and same file content as one already read)",
            report.duplicates,
            if report.duplicates == 1 { "" } else { "s" }
        );
    }
    let warnings: Vec<&harness_import::Warning> =
        report.sessions.iter().flat_map(|s| &s.warnings).collect();
    if !warnings.is_empty() {
        eprintln!(
            "warning: {} line{} skipped while importing; the first: {}",
            warnings.len(),
            if warnings.len() == 1 { "" } else { "s" },
            warnings[0]
        );
    }
    if report.sessions.is_empty() {
        eprintln!(
            "error: no session found in {} file{} under {}; expected {}",
            report.files,
            if report.files == 1 { "" } else { "s" },
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            harness_import::EXPECTED
        );
        return Err(EXIT_USAGE);
    }
    Ok(Loaded {
        sessions: report.sessions,
        files: report.files,
        seconds,
    })
}

/// The labels files under a path (a file, or *.yaml / *.yml in a folder, recursively; symlinks
/// followed, loops skipped). Only regular files are listed.
fn label_files(path: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if !std::fs::metadata(path)?.is_dir() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    for entry in walkdir::WalkDir::new(path)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .flatten()
    {
        let yaml = entry
            .path()
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml");
        if entry.file_type().is_file() && yaml {
            out.push(entry.into_path());
        }
    }
    Ok(())
}

/// Reads `--labels`; every problem is printed.
fn load_labels(src: &SourceArgs) -> Result<Option<Labels>, i32> {
    let judge: JudgeKind = src.judge.into();
    if src.labels.is_empty() {
        if judge.needs_labels() {
            eprintln!(
                "error: --judge {} needs --labels FILE_OR_DIR (e.g. tests/fixtures/real-sessions/labels)",
                judge.name()
            );
            return Err(EXIT_USAGE);
        }
        return Ok(None);
    }
    let mut files = Vec::new();
    for p in &src.labels {
        if let Err(e) = label_files(p, &mut files) {
            eprintln!("error: cannot read labels {}: {e}", p.display());
            return Err(EXIT_USAGE);
        }
    }
    let mut labels = Labels::new();
    let mut problems = 0;
    for f in &files {
        let name = f.display().to_string();
        let text = match harness_import::fs::read_regular(f, crate::tasks::MAX_SPEC_BYTES)
            .and_then(|b| String::from_utf8(b).map_err(std::io::Error::other))
        {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: cannot read labels {name}: {e}");
                problems += 1;
                continue;
            }
        };
        if let Err(ps) = labels.add_file(&name, &text) {
            for p in &ps {
                eprintln!("{p}");
            }
            problems += ps.len();
        }
    }
    if problems > 0 {
        eprintln!(
            "error: {problems} problem{} in the labels",
            if problems == 1 { "" } else { "s" }
        );
        return Err(EXIT_USAGE);
    }
    if labels.is_empty() {
        eprintln!(
            "warning: no labelled prompt in {} labels file(s)",
            files.len()
        );
    }
    Ok(Some(labels))
}

fn print_table(t: &Table, format: OutputFormat) {
    match format {
        OutputFormat::Md => println!("{}", t.to_markdown()),
        OutputFormat::Csv => print!("{}", t.to_csv()),
        _ => println!("{}", t.to_terminal()),
    }
}

fn print_heading(text: &str, format: OutputFormat) {
    match format {
        OutputFormat::Md => println!("### {text}\n"),
        _ => println!("{text}"),
    }
}

fn write_lines<T: Serialize>(
    path: &Path,
    records: impl Iterator<Item = T>,
) -> std::io::Result<usize> {
    let mut w = BufWriter::new(File::create(path)?);
    let mut n = 0;
    for r in records {
        serde_json::to_writer(&mut w, &r)?;
        w.write_all(b"\n")?;
        n += 1;
    }
    w.flush()?;
    Ok(n)
}

/// One replayed request as a JSON line.
#[derive(Serialize)]
struct RequestLine<'a> {
    version: u32,
    session: &'a str,
    source: &'a str,
    policy: &'a str,
    #[serde(flatten)]
    request: &'a harness_replay::ReplayedRequest,
    recorded_tokens: Option<u64>,
}

/// Everything `replay --format json` prints.
#[derive(Serialize)]
struct ReplayJson<'a> {
    version: u32,
    files: usize,
    sessions: usize,
    requests: usize,
    judge: &'a str,
    policies: &'a [PolicySummary],
    /// The models the requests name and the price each was costed at.
    models: &'a [crate::history::ModelPrice],
    per_session: Vec<SessionJson<'a>>,
    ground_truth: ErrorStats,
    ground_truth_sessions: &'a [harness_replay::SessionTruth],
}

#[derive(Serialize)]
struct SessionJson<'a> {
    id: &'a str,
    source: &'a str,
    format: harness_import::Format,
    parent: Option<&'a str>,
    project: &'a str,
    date: Option<&'a str>,
    model: Option<&'a str>,
    turns: u32,
    requests: usize,
    judge: JudgeKind,
    prefix_tokens: u32,
    policies: Vec<SessionPolicyJson<'a>>,
}

#[derive(Serialize)]
struct SessionPolicyJson<'a> {
    policy: &'a str,
    median_request: f64,
    last_request: u64,
    total_input: u64,
    cards: usize,
    card_tokens: u64,
    folds: &'a [harness_replay::engine::FoldEvent],
    compactions: &'a [harness_replay::engine::CompactionEvent],
    cost: f64,
    hidden_references: usize,
    hidden_by_source: harness_replay::hidden::BySource,
    probes: harness_replay::hidden::ProbeFractions,
}

fn session_json(s: &SessionReplay) -> SessionJson<'_> {
    SessionJson {
        id: &s.id,
        source: &s.source,
        format: s.format,
        parent: s.parent.as_deref(),
        project: &s.project,
        date: s.date.as_deref(),
        model: s.model.as_deref(),
        turns: s.turns,
        requests: s.recorded.len(),
        judge: s.judge,
        prefix_tokens: s.prefix.tokens,
        policies: s
            .policies
            .iter()
            .map(|p| {
                let st = harness_core::metrics::SizeStats::of(&p.sizes());
                SessionPolicyJson {
                    policy: &p.policy,
                    median_request: st.median,
                    last_request: st.last,
                    total_input: p.total_input(),
                    cards: p.cards,
                    card_tokens: p.card_tokens,
                    folds: &p.folds,
                    compactions: &p.compactions,
                    cost: p.cost(),
                    hidden_references: p.hidden.total(),
                    hidden_by_source: p.hidden,
                    probes: p.probes.fractions(),
                }
            })
            .collect(),
    }
}

/// Runs `foldbench replay`; returns the exit code.
pub fn replay(a: ReplayArgs) -> i32 {
    let prices = match crate::history::parse_prices(&a.price, parse_price) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: --price: {e}");
            return EXIT_USAGE;
        }
    };
    if let Some(p) = a.output.as_ref().filter(|p| !crate::html::is_html(p)) {
        eprintln!(
            "error: -o {}: replay writes an HTML page (.html); per-request records go to --requests-out",
            p.display()
        );
        return EXIT_USAGE;
    }
    let list: Vec<String> = if a.policies.is_empty() {
        policies::POLICIES.iter().map(|s| s.to_string()).collect()
    } else {
        a.policies.clone()
    };
    let mut specs = Vec::new();
    for p in &list {
        match policies::parse_policy(p) {
            Ok(s) => specs.push(s),
            Err(e) => {
                eprintln!("error: --policy: {e}");
                return EXIT_USAGE;
            }
        }
    }
    let judge: JudgeKind = a.source.judge.into();
    let replayer = match Replayer::new(ReplayConfig {
        policies: specs,
        judge,
        window: a.window,
        prices: prices.clone(),
    }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let labels = match load_labels(&a.source) {
        Ok(l) => l,
        Err(c) => return c,
    };
    let loaded = match load_sessions(&a.source, "replay") {
        Ok(l) => l,
        Err(c) => return c,
    };
    let began = Instant::now();
    let replays = replayer.replay_all(&loaded.sessions, labels.as_ref(), threads(a.source.jobs));
    let truths: Vec<_> = loaded.sessions.iter().filter_map(session_truth).collect();
    let replay_seconds = began.elapsed().as_secs_f64();
    let labels_order = replayer.labels();
    let summary = report::summarize(&replays, &labels_order);
    let requests: usize = loaded.sessions.iter().map(|s| s.requests.len()).sum();
    let labelled = replays.iter().filter(|s| s.labelled).count();
    let (truth, truth_all) = report::truth_table(&truths);
    let models = crate::history::model_prices(&loaded.sessions, &prices);
    let price_notes = crate::history::price_notes(&models, &prices.default);

    if let Some(path) = &a.source.requests_out {
        let lines = replays.iter().flat_map(|s| {
            s.policies.iter().flat_map(move |p| {
                p.requests.iter().map(move |r| RequestLine {
                    version: 1,
                    session: &s.id,
                    source: &s.source,
                    policy: &p.policy,
                    request: r,
                    recorded_tokens: r.request.and_then(|k| s.recorded.get(k).copied().flatten()),
                })
            })
        });
        match write_lines(path, lines) {
            Ok(n) => eprintln!("{n} request records in {}", path.display()),
            Err(e) => {
                eprintln!("error: cannot write {}: {e}", path.display());
                return EXIT_INTERNAL;
            }
        }
    }

    let format = a.source.format;
    match format {
        OutputFormat::Json => {
            let doc = ReplayJson {
                version: 1,
                files: loaded.files,
                sessions: replays.len(),
                requests,
                judge: judge.name(),
                policies: &summary,
                models: &models,
                per_session: replays.iter().map(session_json).collect(),
                ground_truth: truth_all,
                ground_truth_sessions: &truths,
            };
            match serde_json::to_string_pretty(&doc) {
                Ok(s) => println!("{s}"),
                Err(e) => {
                    eprintln!("error: {e}");
                    return EXIT_INTERNAL;
                }
            }
        }
        OutputFormat::Csv => print!("{}", report::policy_csv(&summary)),
        OutputFormat::Table | OutputFormat::Md => {
            let fallback = if judge.needs_labels() {
                format!(
                    " ({labelled} labelled; {} judged lexically)",
                    replays.len() - labelled
                )
            } else if labelled > 0 {
                format!(" ({labelled} labelled: premature folds counted)")
            } else {
                String::new()
            };
            print_heading(
                &format!(
                    "Replay of {} from {}: {} × {}; judge {}{fallback}; window {}",
                    count(replays.len(), "session"),
                    count(loaded.files, "file"),
                    count(requests, "recorded request"),
                    if labels_order.len() == 1 {
                        "1 policy".to_string()
                    } else {
                        format!("{} policies", labels_order.len())
                    },
                    judge.name(),
                    a.window
                ),
                format,
            );
            print_table(&report::policy_table(&summary, labelled > 0), format);
            for note in report::replay_notes(&replays, &summary, a.window) {
                println!("{note}");
            }
            for note in report::hidden_notes(&summary) {
                println!("{note}");
            }
            for line in report::verdict_lines(&replays, &summary) {
                println!("{line}");
            }
            for note in &price_notes {
                println!("{note}");
            }
            if labels_order.iter().any(|p| p == report::NONE) && labels_order.len() > 1 {
                print_heading(
                    &format!(
                        "The essay's figures: median and last request as a fraction of none's, per session with {}+ human turns",
                        a.source.min_turns
                    ),
                    format,
                );
                print_table(
                    &report::session_table(&replays, &labels_order, a.source.min_turns),
                    format,
                );
            }
            if truth_all.requests > 0 {
                print_heading(
                    "Ground truth: reconstructed request size (prefix calibrated on each session's first request) against the recorded input + cache_read + cache_creation",
                    format,
                );
                print_table(&truth, format);
            }
        }
    }
    if let Some(path) = &a.output {
        let tables = vec![
            ("Policies".to_string(), report::policy_table(&summary, labelled > 0)),
            (
                format!("The essay's figures: median and last request as a fraction of none's, per session with {}+ human turns", a.source.min_turns),
                report::session_table(&replays, &labels_order, a.source.min_turns),
            ),
            ("Ground truth: reconstructed against recorded request sizes".to_string(), truth),
        ];
        let heading = format!(
            "{} from {}, {} recorded requests; judge {}; window {}",
            count(replays.len(), "session"),
            count(loaded.files, "file"),
            requests,
            judge.name(),
            a.window
        );
        let mut notes = report::replay_notes(&replays, &summary, a.window);
        notes.extend(report::hidden_notes(&summary));
        notes.extend(report::verdict_lines(&replays, &summary));
        notes.extend(price_notes.iter().cloned());
        let page = crate::html::replay_page(&heading, tables, notes, &replays, &loaded.sessions);
        if let Err(e) = crate::html::write(path, &page) {
            eprintln!("error: {e}");
            return EXIT_INTERNAL;
        }
    }
    eprintln!(
        "import and tokenize {:.2}s · replay {:.2}s ({}, {})",
        loaded.seconds,
        replay_seconds,
        count(replays.len(), "session"),
        count(threads(a.source.jobs), "thread")
    );
    EXIT_OK
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
}

/// Runs `foldbench analyze`; returns the exit code.
pub fn analyze(a: AnalyzeArgs) -> i32 {
    let src = &a.source;
    let judge: JudgeKind = src.judge.into();
    let labels = match load_labels(src) {
        Ok(l) => l,
        Err(c) => return c,
    };
    let loaded = match load_sessions(src, "analyze") {
        Ok(l) => l,
        Err(c) => return c,
    };
    let sessions = harness_replay::engine::parallel_map(&loaded.sessions, threads(src.jobs), |s| {
        analyze_session(s, judge, labels.as_ref())
    });
    if let Some(path) = &src.requests_out {
        let lines = sessions.iter().zip(&loaded.sessions).flat_map(|(c, s)| {
            c.requests
                .iter()
                .enumerate()
                .map(move |(k, parts)| CompositionLine {
                    version: 1,
                    session: &c.id,
                    source: &c.source,
                    request: k,
                    turn: s
                        .requests
                        .get(k)
                        .and_then(|r| s.messages.get(r.message))
                        .map_or(0, |m| m.turn),
                    parts,
                })
        });
        match write_lines(path, lines) {
            Ok(n) => eprintln!("{n} request records in {}", path.display()),
            Err(e) => {
                eprintln!("error: cannot write {}: {e}", path.display());
                return EXIT_INTERNAL;
            }
        }
    }
    let corpus = report::corpus_composition(&sessions);
    let format = src.format;
    match format {
        OutputFormat::Json => {
            let doc = AnalyzeJson {
                version: 1,
                files: loaded.files,
                judge: judge.name(),
                corpus,
                sessions: &sessions,
            };
            match serde_json::to_string_pretty(&doc) {
                Ok(s) => println!("{s}"),
                Err(e) => {
                    eprintln!("error: {e}");
                    return EXIT_INTERNAL;
                }
            }
        }
        OutputFormat::Csv => {
            print_table(&report::composition_table(&sessions, src.min_turns), format)
        }
        OutputFormat::Table | OutputFormat::Md => {
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
            print_heading(
                &format!(
                    "What the model read: {} of {}, split by the {} judge{fallback} (sessions with {}+ human turns listed)",
                    count(requests, "request"),
                    count(sessions.len(), "session"),
                    judge.name(),
                    src.min_turns
                ),
                format,
            );
            print_table(&report::composition_table(&sessions, src.min_turns), format);
            if format == OutputFormat::Md {
                println!();
            }
            println!(
                "Over all {} requests: {:.1}% work in progress, {:.1}% conclusions of finished work, {:.1}% steps of finished work (token-weighted over the messages; the essay's sessions: about two thirds steps, 1% conclusions).",
                harness_core::fold::group_thousands(requests as u64),
                corpus.share(corpus.in_progress) * 100.0,
                corpus.share(corpus.conclusions) * 100.0,
                corpus.share(corpus.steps) * 100.0
            );
        }
    }
    eprintln!("import and tokenize {:.2}s", loaded.seconds);
    EXIT_OK
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    const SESSION: &str = include_str!("../../replay/fixtures/claude-code/five-turns.jsonl");

    #[derive(Parser)]
    struct R {
        #[command(flatten)]
        a: ReplayArgs,
    }

    #[derive(Parser)]
    struct A {
        #[command(flatten)]
        a: AnalyzeArgs,
    }

    fn replay_with(args: &[&str]) -> i32 {
        let argv = std::iter::once("foldbench").chain(args.iter().copied());
        replay(R::try_parse_from(argv).expect("the arguments parse").a)
    }

    fn analyze_with(args: &[&str]) -> i32 {
        let argv = std::iter::once("foldbench").chain(args.iter().copied());
        analyze(A::try_parse_from(argv).expect("the arguments parse").a)
    }

    /// A folder with one good session and every kind of bad file.
    fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let w = |name: &str, bytes: &[u8]| std::fs::write(dir.path().join(name), bytes).unwrap();
        w("good.jsonl", SESSION.as_bytes());
        w("empty.jsonl", b"");
        w("binary.jsonl", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0");
        w(
            "truncated.traj.json",
            br#"{"trajectory_format": "mini-swe-agent-1.1", "messages": [{"role": "sys"#,
        );
        w(
            "other.jsonl",
            br#"{"name": "left-pad", "version": "1.0.0"}"#,
        );
        let cut = &SESSION[..SESSION.len() / 2];
        w("cut.jsonl", cut.as_bytes());
        dir
    }

    #[test]
    fn prices_parse() {
        assert_eq!(parse_price("15").unwrap().input, 15.0);
        let p = parse_price("input=1,output=4").unwrap();
        assert_eq!((p.input, p.output, p.cache_read), (1.0, 4.0, 0.1));
        assert!(parse_price("input=x").unwrap_err().contains("not a number"));
        assert!(parse_price("cheap=1")
            .unwrap_err()
            .contains("unknown price"));
        assert!(parse_price("-1").is_err());
    }

    #[test]
    fn bad_files_are_skipped_with_a_warning_and_good_ones_replayed() {
        let dir = folder();
        let d = dir.path().to_str().unwrap();
        let out = dir.path().join("requests.jsonl");
        assert_eq!(
            replay_with(&[d, "--requests-out", out.to_str().unwrap()]),
            EXIT_OK
        );
        let lines = std::fs::read_to_string(&out).unwrap();
        let first: serde_json::Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
        assert_eq!(first["version"], 1);
        assert_eq!(first["policy"], "none");
        assert!(first["recorded_tokens"].as_u64().is_some());
        assert_eq!(first["hidden_references"], 0, "none hides nothing");
        assert_eq!(first["probes"]["recall"], true);
        for format in ["md", "csv", "json"] {
            assert_eq!(replay_with(&[d, "--format", format]), EXIT_OK);
        }
        assert_eq!(analyze_with(&[d]), EXIT_OK);
        assert_eq!(analyze_with(&[d, "--format", "json"]), EXIT_OK);
    }

    #[test]
    fn nothing_readable_is_a_usage_error_never_a_panic() {
        let dir = folder();
        for bad in [
            "empty.jsonl",
            "binary.jsonl",
            "truncated.traj.json",
            "other.jsonl",
        ] {
            let p = dir.path().join(bad);
            let p = p.to_str().unwrap();
            assert_eq!(replay_with(&[p]), EXIT_USAGE, "{bad}");
            assert_eq!(analyze_with(&[p]), EXIT_USAGE, "{bad}");
        }
        let cut = dir.path().join("cut.jsonl");
        assert_eq!(
            replay_with(&[cut.to_str().unwrap()]),
            EXIT_OK,
            "a cut file keeps its whole lines"
        );
        assert_eq!(replay_with(&["/nonexistent/foldbench"]), EXIT_USAGE);
        assert_eq!(
            replay_with(&[dir.path().to_str().unwrap(), "--input-format", "nope"]),
            EXIT_USAGE
        );
    }

    #[test]
    fn judges_that_need_labels_ask_for_them() {
        let dir = folder();
        let d = dir.path().to_str().unwrap();
        assert_eq!(replay_with(&[d, "--judge", "oracle"]), EXIT_USAGE);
        let bad = dir.path().join("labels.yaml");
        std::fs::write(&bad, "turns:\n  - n: 1\n    unit: a\n").unwrap();
        assert_eq!(
            replay_with(&[d, "--judge", "labels", "--labels", bad.to_str().unwrap()]),
            EXIT_USAGE
        );
        let good = concat!(env!("CARGO_MANIFEST_DIR"), "/../replay/fixtures/labels");
        assert_eq!(
            replay_with(&[d, "--judge", "oracle", "--labels", good]),
            EXIT_OK
        );
        assert_eq!(
            analyze_with(&[d, "--judge", "labels", "--labels", good]),
            EXIT_OK
        );
        assert_eq!(replay_with(&[d, "--policy", "nope"]), EXIT_USAGE);
        assert_eq!(replay_with(&[d, "--price", "x=cheap"]), EXIT_USAGE);
    }
}
