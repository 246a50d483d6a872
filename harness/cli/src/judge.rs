//! `foldbench judge build` and `foldbench judge run`: boundary judgement (docs/design.md §12,
//! docs/judge.md). This module parses the flags, checks the models named, and prints or writes
//! what the judge gives in the format asked. The judge is a library's: its pure part (the
//! dataset, the gold, the scores) is [`harness_core::judge`]; gathering the items, asking the
//! models, the tables and the page are [`harness_runner::judge`].

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Subcommand, ValueEnum};
use harness_core::judge::{dataset_stats, to_line, AnswerMode, Item, DEFAULT_TOOL_OUTPUT_CAP};
use harness_core::metrics::Price;

use harness_runner::backends::BackendOptions;
use harness_runner::backends::SharedModel;

use harness_runner::judge::{
    build, build_tables, classify, expand_history, filter_table, judge_page, read_dataset,
    run_tables, score, scores_table, select, Answering, JudgeOptions, Scored,
};

use crate::error::{Code, Error};
use crate::format::{self, Document, Form, Format, Outputs, Text};
use harness_runner::write_lines;

/// `foldbench judge ...`.
#[derive(Debug, Subcommand)]
pub enum JudgeCommand {
    /// Build a dataset of card points from task specs and labelled real sessions.
    Build(BuildArgs),
    /// Show every item's card to models and baselines and score their answers.
    Run(RunArgs),
}

/// `judge build`.
#[derive(Debug, Clone, clap::Args)]
pub struct BuildArgs {
    /// Task spec files or folders, data folders holding `labels/` (e.g.
    /// tests/fixtures/real-sessions), labels files, or `history` (your Claude Code and Codex
    /// sessions in the places `replay` reads with no path, where a `labels/` folder beside them
    /// gives their units); repeatable (default: tasks/).
    #[arg(long = "from")]
    pub from: Vec<PathBuf>,
    /// The dataset to write (JSONL).
    #[arg(short = 'o', long = "out", default_value = "judge.jsonl")]
    pub out: PathBuf,
    /// Characters a tool output keeps in an item (head and tail; the middle is cut), at most
    /// 64 MiB.
    #[arg(long, default_value_t = DEFAULT_TOOL_OUTPUT_CAP, value_parser = crate::limits::chars)]
    pub max_tool_output: usize,
    /// Tasks run at once, 1 to 1024 (default: the number of cores).
    #[arg(long, value_parser = crate::limits::jobs)]
    pub jobs: Option<usize>,
    /// Output format of the summary tables.
    #[arg(long, value_parser = format::parser(&OUTPUTS), default_value = "table")]
    pub format: Format,
}

/// `judge run`.
/// `--answer` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AnswerArg {
    /// `fold_unit(from, to)` calls, or none (the card ignored).
    Tool,
    /// One line: `fold 2-4`, `fold 2-4 and 6-7` or `ignore`; anything else is unparsable.
    Text,
}

/// The answer flags of `judge run`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AnswerFlags {
    /// How models answer the card: `tool` (fold_unit calls; the default) or `text` (one line,
    /// `fold 2-4`, `fold 2-4 and 6-7` or `ignore`, no tools sent). A `replay:DIR` model takes it
    /// from the cassette's answer.json.
    #[arg(long = "answer", value_enum)]
    pub answer: Option<AnswerArg>,
    /// With `--answer text`: constrain the answer with a GBNF grammar, sent to `openai:` models
    /// as the request's `grammar` field (llama.cpp and llama-cpp-python servers).
    #[arg(long)]
    pub grammar: bool,
    /// Stop an `openai:` model's answer after N tokens (the request's `max_tokens`): a small
    /// model can repeat `and 2-3` until its context is full. A text answer cut short does not
    /// parse and counts as unparsable. At most 10,000,000.
    #[arg(long, value_name = "N", value_parser = crate::limits::max_answer_tokens)]
    pub max_answer_tokens: Option<u32>,
}

impl From<&AnswerFlags> for harness_runner::judge::AnswerArgs {
    fn from(f: &AnswerFlags) -> Self {
        harness_runner::judge::AnswerArgs {
            answer: f.answer.map(|a| match a {
                AnswerArg::Tool => AnswerMode::Tool,
                AnswerArg::Text => AnswerMode::Text,
            }),
            grammar: f.grammar,
            max_answer_tokens: f.max_answer_tokens,
        }
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// The dataset (from `judge build`).
    #[arg(long)]
    pub dataset: PathBuf,
    /// A model to judge: `openai:NAME`, `anthropic:NAME`, `replay:DIR`; repeatable. The
    /// baselines oracle, lexical, eager and never are always in the table.
    #[arg(long = "model")]
    pub models: Vec<String>,
    /// Requests in flight at once (also the backends' per-provider cap), 1 to 1024.
    #[arg(long, default_value_t = 4, value_parser = crate::limits::jobs)]
    pub jobs: usize,
    /// Record every model exchange into this cassette folder (one real model at a time).
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// With --record: answer every request the cassette already holds from it and ask the
    /// model only the missing ones, so an interrupted recording goes on where it stopped.
    #[arg(long, requires = "record")]
    pub resume: bool,
    /// Write one judged record per model and item (JSONL) here; a FILE.html gets one
    /// self-contained page instead (the tables, each session's card points and answers).
    /// Repeatable.
    #[arg(short = 'o', long = "out")]
    pub out: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_parser = format::parser(&OUTPUTS), default_value = "table")]
    pub format: Format,
    /// Only items of this source (`task`, `claude-code`, ...).
    #[arg(long)]
    pub source: Option<String>,
    /// Only items where the counting threshold showed a card.
    #[arg(long)]
    pub threshold_only: bool,
    /// Only the first N items (after the other filters).
    #[arg(long, value_parser = crate::limits::items)]
    pub limit: Option<usize>,
    /// Cut tool outputs in requests to this many characters (on top of the dataset's cut).
    #[arg(long, value_parser = crate::limits::chars)]
    pub max_tool_output: Option<usize>,
    /// Price of the judge's requests, `[SCHEME:]PRICE` as replay's `--price` (`3`: $3 per
    /// million input tokens, cache and output at Anthropic's ratios; `openai:1.75`; `2.5/15`).
    #[arg(long, default_value = "3", value_parser = crate::limits::price, value_name = "[SCHEME:]PRICE")]
    pub price: Price,
    /// Time-out of one model request, in seconds (at most 86,400, a day).
    #[arg(long, default_value_t = 120, value_parser = crate::limits::judge_timeout)]
    pub timeout: u64,
    /// Retries of a failed request (after the first attempt), at most 100.
    #[arg(long, default_value_t = 4, value_parser = crate::limits::retries)]
    pub retries: u32,
    /// The longest wait between two attempts that a server's `Retry-After` imposes, in seconds
    /// (a longer one is cut to this, and the warning says so); at most 3,600.
    #[arg(long, default_value_t = 60, value_name = "SECS", value_parser = crate::limits::max_retry_wait)]
    pub max_retry_wait: u64,
    /// The sampling temperature sent to the models, 0 to 2 (Anthropic: 0 to 1); 0 asks each
    /// model for its most likely answer (default: none sent, the provider's own, which samples).
    #[arg(long, value_name = "T", value_parser = harness_runner::backends::parse_temperature)]
    pub temperature: Option<f64>,
    /// Fit every request into N o200k tokens: the oldest whole turns of the context are left
    /// out (a note says so; the card and the current message stay whole); an item whose card
    /// alone is over N is not asked and counted as `too long`. At most 10,000,000.
    #[arg(long, value_name = "N", value_parser = crate::limits::max_context)]
    pub max_context: Option<u64>,
    /// How the models answer (`--answer tool|text`, `--grammar`).
    #[command(flatten)]
    pub answer: AnswerFlags,
}

/// Runs a `judge` subcommand; returns the exit code.
pub async fn main(cmd: JudgeCommand) -> Result<Code, Error> {
    match cmd {
        JudgeCommand::Build(a) => cmd_build(a).await,
        JudgeCommand::Run(a) => cmd_run(a).await,
    }
}

/// What `judge build` and `judge run` print, with the line `--format`'s help shows for each.
pub static OUTPUTS: Outputs = Outputs {
    terminal: Some("Terminal tables"),
    markdown: Some("GitHub Markdown"),
    csv: Some("CSV (the scores table only, for `run`; the filter table for `build`)"),
    json: Some("JSON"),
    junit: None,
    chart: None,
    page: None,
};

/// What `judge build` or `judge run` prints, in no format yet: titled tables, the one CSV
/// prints, and the JSON document.
struct JudgeDoc {
    tables: Vec<(&'static str, harness_report::render::Table)>,
    csv: harness_report::render::Table,
    json: String,
}

impl JudgeDoc {
    fn text(&self, mut out: Box<dyn Text>) -> Form {
        for (title, t) in &self.tables {
            out.titled_table(title, t);
        }
        Some(Ok(out.finish()))
    }
}

impl Document for JudgeDoc {
    fn terminal(&self) -> Form {
        self.text(format::TerminalText::new())
    }

    fn markdown(&self) -> Form {
        self.text(format::MarkdownText::new())
    }

    fn csv(&self) -> Form {
        Some(Ok(self.csv.to_csv()))
    }

    fn json(&self) -> Form {
        Some(Ok(format!("{}\n", self.json)))
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

async fn cmd_build(a: BuildArgs) -> Result<Code, Error> {
    let from = if a.from.is_empty() {
        vec![PathBuf::from("tasks")]
    } else {
        expand_history(a.from.clone(), &harness_runner::progress::say).map_err(Error::refused)?
    };
    let sources = classify(&from).map_err(Error::refused)?;
    let jobs = a.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    });
    let started = Instant::now();
    let warn = |w: &str| eprintln!("warning: {w}");
    let items = build(&sources, a.max_tool_output, jobs, &warn)
        .await
        .map_err(Error::refused)?;
    write_lines(&a.out, items.iter().map(to_line)).map_err(|source| Error::Write {
        path: a.out.clone(),
        source,
    })?;
    let stats = dataset_stats(&items);
    let doc = JudgeDoc {
        tables: build_tables(&stats),
        csv: filter_table(&stats),
        json: serde_json::to_string_pretty(&stats)?,
    };
    crate::out::print(&a.format.render(&doc)?)?;
    eprintln!(
        "{} items ({} with a card at the threshold) from {} task source(s) and {} labelled session(s) in {:.1}s → {}",
        items.len(),
        items.iter().filter(|i| i.threshold).count(),
        sources.tasks.len(),
        sources.labels.len(),
        started.elapsed().as_secs_f64(),
        a.out.display()
    );
    Ok(Code::Ok)
}

/// The models `--model` names, with the backend options the flags give.
fn run_models(a: &RunArgs) -> Result<Vec<(SharedModel, Answering)>, Error> {
    let opts = BackendOptions {
        record: a.record.clone(),
        resume_recording: a.resume,
        in_flight: a.jobs.max(1),
        timeout: Duration::from_secs(a.timeout),
        max_retries: a.retries,
        max_retry_wait: Duration::from_secs(a.max_retry_wait),
        temperature: a.temperature,
        ..BackendOptions::default()
    };
    harness_runner::judge::run_models(&a.models, &(&a.answer).into(), &opts).map_err(Error::refused)
}

async fn cmd_run(a: RunArgs) -> Result<Code, Error> {
    let items = select(
        read_dataset(&a.dataset).map_err(Error::refused)?,
        a.source.as_deref(),
        a.threshold_only,
        a.limit,
    );
    if items.is_empty() {
        eprintln!("error: no item selected from {}", a.dataset.display());
        return Ok(Code::NoCells);
    }
    let models = run_models(&a)?;
    let opts = JudgeOptions {
        jobs: a.jobs,
        max_tool_output: a.max_tool_output,
        price: a.price,
        progress: !models.is_empty(),
        max_context: a.max_context,
    };
    let scored = score(&items, &models, &opts).await;
    write_run_outputs(&a, &items, &scored)?;
    let (aggs, names) = (&scored.aggregates, &scored.judges);
    let doc = JudgeDoc {
        tables: run_tables(aggs, &scored.sources),
        csv: scores_table(aggs),
        json: serde_json::to_string_pretty(
            &serde_json::json!({ "scores": aggs, "sources": scored.sources }),
        )?,
    };
    crate::out::print(&a.format.render(&doc)?)?;
    let errors: usize = aggs.iter().map(|x| x.errors).sum();
    eprintln!(
        "{} items × {} models{}",
        items.len(),
        names.len(),
        a.out
            .iter()
            .filter(|o| !harness_runner::html::is_html(o))
            .map(|o| format!(" · records in {}", o.display()))
            .collect::<String>()
    );
    if errors > 0 {
        eprintln!("error: {errors} request(s) got no answer; see the records");
        return Ok(Code::Failed);
    }
    Ok(Code::Ok)
}

/// `judge run -o`: the records as JSON lines, or an HTML page (by extension).
fn write_run_outputs(a: &RunArgs, items: &[Item], scored: &Scored) -> Result<(), Error> {
    for out in a.out.iter().filter(|p| !harness_runner::html::is_html(p)) {
        let lines = scored
            .records
            .iter()
            .map(|r| serde_json::to_string(r).unwrap_or_default());
        write_lines(out, lines).map_err(|source| Error::Write {
            path: out.clone(),
            source,
        })?;
    }
    for out in a.out.iter().filter(|p| harness_runner::html::is_html(p)) {
        let tables = run_tables(&scored.aggregates, &scored.sources)
            .into_iter()
            .map(|(title, t)| (title.to_string(), t))
            .collect();
        let heading = format!(
            "{} items of {} × {} judges",
            items.len(),
            a.dataset.display(),
            scored.judges.len()
        );
        let page = judge_page(&heading, tables, items, &scored.records);
        harness_runner::html::write(out, &page).map_err(Error::failed)?;
    }
    Ok(())
}
