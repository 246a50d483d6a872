//! `foldbench report RUN_DIR`: reports rendered from a run directory's records (never from
//! memory) — a terminal table, Markdown for a CI job summary, CSV, JSON, JUnit XML and SVG charts.
//!
//! `-o FILE` (repeatable) writes a file whose extension picks the format: `.md`, `.csv`,
//! `.json`, `.xml` (JUnit), `.svg` (the chart chosen with `--chart`), `.html` (one
//! self-contained page: tables, charts, drill-downs; [`harness_runner::html`]), `.txt` (the table).
//! Without `-o` the report goes to standard output in `--format`. The exporters are the pure
//! functions of `harness_report::{render, junit, svg}`; this module only reads and writes files.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use harness_core::CellRecord;
use harness_report::svg::{self, RequestPoint, SessionChoice};
use harness_report::view::Kind;
use harness_report::{junit, render};

use crate::error::{Code, Error};
use crate::format::{self, Document, Form, Format, Outputs};

/// What `report` prints, with the line `--format`'s help shows for each.
pub static OUTPUTS: Outputs = Outputs {
    terminal: Some("A terminal table"),
    markdown: Some("Markdown (a CI job summary)"),
    csv: Some("CSV"),
    json: Some("JSON"),
    junit: Some("JUnit XML, one test case per cell"),
    chart: Some("An SVG chart (see `--chart`)"),
    page: Some("One self-contained HTML page: the tables, a chart per task, model and seed with every arm, drill-downs to turns, folds and results (`harness_report::html`)"),
};

/// The format a report file's extension asks for (`report -o FILE`, `run -o FILE`), in any
/// case.
pub fn format_of_path(p: &Path) -> Result<Format, ReportError> {
    format::for_path(p, &OUTPUTS).ok_or_else(|| ReportError::Extension {
        path: p.to_path_buf(),
        known: format::extension_hints(&OUTPUTS),
    })
}

/// Why a report cannot be written: an output or an input it refuses.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// `-o FILE` with an extension that names no format.
    #[error(
        "cannot tell the format of {} from its extension; use {known}",
        path.display()
    )]
    Extension {
        /// The file.
        path: PathBuf,
        /// The extensions `report` takes ([`format::extension_hints`]).
        known: String,
    },
    /// `requests.jsonl` cannot be opened.
    #[error("cannot open {}", path.display())]
    OpenRequests {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line of `requests.jsonl` cannot be read.
    #[error("{}:{line}: cannot read", path.display())]
    ReadRequests {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line of `requests.jsonl` that is no request record.
    #[error("{}:{line}:{}: not a request record", path.display(), source.column())]
    BadRequest {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// The parser's complaint (with the column).
        #[source]
        source: serde_json::Error,
    },
    /// The records do not serialize as JSON.
    #[error(transparent)]
    Json(serde_json::Error),
    /// The request chart cannot be drawn (`--task`, `--seed`, `--model` name no session).
    #[error(transparent)]
    Chart(#[from] svg::ChartError),
    /// The HTML page cannot be made from the run folder (the runner's words).
    #[error(transparent)]
    Page(crate::error::Cause),
    /// `run -o` given the records file.
    #[error(
        "-o {}: a run writes its records into its folder (DIR/{}); give the folder (-o results/x), and a report file to write one (-o report.html)",
        .0.display(),
        harness_runner::CELLS_FILE
    )]
    RecordsFile(PathBuf),
    /// `run -o` given two folders.
    #[error(
        "-o {} and -o {}: a run has one folder; give one, and report files (.md, .html, …) beside it",
        first.display(),
        second.display()
    )]
    TwoFolders {
        /// The first folder.
        first: PathBuf,
        /// The second.
        second: PathBuf,
    },
}

/// Which chart an SVG report draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Chart {
    /// Request size over the requests of one session, one line per arm.
    Requests,
    /// Re-runs per arm (hidden and visible).
    Reruns,
}

/// `foldbench report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The run directory.
    pub run_dir: PathBuf,
    /// Format on standard output (default table; with -o, only when given).
    #[arg(long, value_parser = format::parser(&OUTPUTS))]
    pub format: Option<Format>,
    /// One row per cell instead of one per arm.
    #[arg(long)]
    pub cells: bool,
    /// Write to FILE; the extension picks the format (.md .csv .json .xml .svg .html .txt).
    /// Repeatable.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Vec<PathBuf>,
    /// The chart of an SVG report.
    #[arg(long, value_enum, default_value_t = Chart::Requests)]
    pub chart: Chart,
    /// Request chart: the task (default: the first with the longest session).
    #[arg(long)]
    pub task: Option<String>,
    /// Request chart: the seed (default: the smallest).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Request chart: the model (default: the first).
    #[arg(long)]
    pub model: Option<String>,
    /// The arm every other arm is judged against in the verdict lines (default: `none` when the
    /// run has it, else the first arm).
    #[arg(long)]
    pub baseline: Option<String>,
    #[command(flatten)]
    pub view: crate::view::ViewArgs,
    /// Write the behaviour profile measured from the run's cells to FILE: what its agent (a
    /// real agent behind the proxy, or the sim) did after each loss its policies caused, in
    /// the shape `replay --behaviour-out` writes (docs/replay.md, "The behaviour profile").
    #[arg(long, value_name = "FILE")]
    pub behaviour_out: Option<PathBuf>,
}

/// Reads the chart fields of `requests.jsonl`.
pub fn read_requests(dir: &Path) -> Result<Vec<RequestPoint>, ReportError> {
    let path = dir.join(harness_runner::REQUESTS_FILE);
    let f = std::fs::File::open(&path).map_err(|source| ReportError::OpenRequests {
        path: path.clone(),
        source,
    })?;
    let mut out = Vec::new();
    for (i, line) in BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|source| ReportError::ReadRequests {
            path: path.clone(),
            line: i + 1,
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(
            serde_json::from_str(&line).map_err(|source| ReportError::BadRequest {
                path: path.clone(),
                line: i + 1,
                source,
            })?,
        );
    }
    Ok(out)
}

/// Renders one format. `dir` is the run directory (for `requests.jsonl`).
pub fn render_format(
    format: Format,
    a: &ReportArgs,
    records: &[CellRecord],
) -> Result<String, Error> {
    let title = a
        .run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| a.run_dir.display().to_string());
    format.render(&ReportDoc { a, records, title })
}

/// A report of a run's records, in no format yet.
struct ReportDoc<'a> {
    a: &'a ReportArgs,
    records: &'a [CellRecord],
    /// The run folder's name.
    title: String,
}

impl ReportDoc<'_> {
    fn table(&self) -> render::Table {
        if self.a.cells {
            render::cells_table(self.records)
        } else {
            render::summary_table(self.records)
        }
    }

    fn svg(&self) -> Result<String, ReportError> {
        let (a, records) = (self.a, self.records);
        Ok(match a.chart {
            Chart::Reruns => svg::bar_chart(&svg::reruns_chart(records)),
            Chart::Requests => {
                let requests = read_requests(&a.run_dir)?;
                let chart = svg::request_chart(
                    records,
                    &requests,
                    &SessionChoice {
                        task: a.task.clone(),
                        seed: a.seed,
                        model: a.model.clone(),
                    },
                )?;
                svg::line_chart(&chart)
            }
        })
    }
}

impl Document for ReportDoc<'_> {
    fn terminal(&self) -> Form {
        let (a, records) = (self.a, self.records);
        let kind = if a.cells { Kind::Cells } else { Kind::Summary };
        let baseline = a.baseline.as_deref();
        let width = crate::view::width();
        let mut out = String::new();
        for line in harness_report::headline::run_block(records, baseline, width) {
            out.push_str(&line);
            out.push('\n');
        }
        let shown = harness_report::fmt::displayed(&self.table());
        out.push_str(&format!("{}\n", a.view.render(&shown, kind)));
        for line in harness_report::headline::run_tail(records, baseline, width) {
            out.push_str(&line);
            out.push('\n');
        }
        Some(Ok(out))
    }

    fn markdown(&self) -> Form {
        let baseline = self.a.baseline.as_deref();
        let mut md = harness_report::markdown::report(
            self.records,
            &self.title,
            self.a.cells,
            &harness_report::headline::run_markdown(self.records, baseline),
        );
        md.push_str(&harness_report::headline::run_markdown_tail(
            self.records,
            baseline,
        ));
        Some(Ok(md))
    }

    fn csv(&self) -> Form {
        Some(Ok(if self.a.cells {
            render::cells_table(self.records).to_csv()
        } else {
            render::summary_csv(self.records)
        }))
    }

    fn json(&self) -> Form {
        let v = if self.a.cells {
            serde_json::to_string_pretty(self.records)
        } else {
            serde_json::to_string_pretty(&render::summarize(self.records))
        };
        Some(
            v.map(|v| format!("{v}\n"))
                .map_err(|e| ReportError::Json(e).into()),
        )
    }

    fn junit(&self) -> Form {
        Some(Ok(junit::to_junit(
            self.records,
            &format!("foldbench {}", self.title),
        )))
    }

    fn chart(&self) -> Form {
        Some(self.svg().map_err(Error::from))
    }

    fn page(&self) -> Form {
        Some(
            harness_runner::html::run_page(
                &self.a.run_dir,
                self.records,
                self.a.baseline.as_deref(),
                &self.title,
            )
            .map(|page| harness_report::html::render(&page))
            .map_err(|e| ReportError::Page(e.into()).into()),
        )
    }
}

/// Runs `foldbench report`.
pub fn cmd(a: ReportArgs) -> Result<Code, Error> {
    let records = harness_runner::read_records(&a.run_dir).map_err(Error::refused)?;
    let mut outputs = Vec::new();
    for p in &a.output {
        outputs.push((p.clone(), format_of_path(p)?));
    }
    let stdout = match (a.format, outputs.is_empty()) {
        (Some(f), _) => Some(f),
        (None, true) => Some(format::default()),
        (None, false) => None,
    };
    if let Some(f) = stdout {
        crate::out::print(&render_format(f, &a, &records)?)?;
    }
    write_files(&a, &records, &outputs)?;
    if let Some(path) = &a.behaviour_out {
        write_behaviour(&a.run_dir, &records, path)?;
    }
    Ok(Code::Ok)
}

/// `report --behaviour-out FILE`: every cell's losses (from its transcript and events) measured
/// as a recorded session's are, and the profile of them written; cells whose files do not
/// pair up are said and left out.
fn write_behaviour(
    dir: &Path,
    records: &[harness_core::CellRecord],
    path: &Path,
) -> Result<(), Error> {
    let mut sessions = Vec::new();
    for r in records {
        let (transcript, events) =
            harness_runner::read_cell_files(dir, &r.id).map_err(Error::refused)?;
        let agent = r.agent.as_ref().map_or("sim", |a| a.name.as_str());
        match harness_replay::losses::measure_cell(&r.id, agent, &r.model, transcript, &events) {
            Ok(s) => sessions.push(s),
            Err(e) => eprintln!(
                "warning: cell {} left out of the behaviour profile: {e}",
                r.id
            ),
        }
    }
    let (name, command) = crate::behaviour::name_and_command(path);
    let Some(profile) = harness_replay::losses::profile(&sessions, &name, &command) else {
        return Err(Error::Usage(format!(
            "--behaviour-out {}: no cell of {} lost a result it had shown (every arm kept its context), so there is nothing to measure; run an arm that trims, folds or compacts",
            path.display(),
            dir.display()
        )));
    };
    harness_runner::sessions::write_behaviour(path, &profile).map_err(Error::failed)?;
    eprintln!(
        "behaviour profile `{name}` in {}: {} losses in {} cells",
        path.display(),
        profile.provenance.losses,
        sessions.iter().filter(|s| !s.losses.is_empty()).count()
    );
    Ok(())
}

/// What `run -o` and `ab -o` name: the run folder (at most one) and report files, each with the
/// format its extension picks, written from the folder when the run ends.
#[derive(Debug, Default)]
pub struct RunOutputs {
    /// The run folder, when one is given.
    pub folder: Option<PathBuf>,
    /// The reports to write, in the order given.
    pub reports: Vec<(PathBuf, Format)>,
}

/// Sorts the `-o` paths of `run`/`ab`: an existing folder, or a path whose extension is no
/// report format, is the run folder; a path with a report extension (`.md`, `.html`, …) is a
/// report. A `.jsonl` path (the records file) and two folders are refused with what to give.
pub fn run_outputs(paths: &[PathBuf]) -> Result<RunOutputs, ReportError> {
    let mut outs = RunOutputs::default();
    for p in paths {
        let ext = p
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        if p.is_dir() {
            // An existing folder is the run folder, whatever its name.
        } else if let Ok(f) = format_of_path(p) {
            outs.reports.push((p.clone(), f));
            continue;
        } else if ext.as_deref() == Some("jsonl") {
            return Err(ReportError::RecordsFile(p.clone()));
        }
        if let Some(first) = &outs.folder {
            return Err(ReportError::TwoFolders {
                first: first.clone(),
                second: p.clone(),
            });
        }
        outs.folder = Some(p.clone());
    }
    Ok(outs)
}

/// Writes the reports named among `paths` (see [`run_outputs`]) from the run folder `run_dir`
/// once the run ended: the records are read back from the folder, so each file has the bytes
/// `foldbench report RUN_DIR -o FILE` writes (with `--baseline` when given).
pub fn write_run_reports(
    run_dir: &Path,
    paths: &[PathBuf],
    baseline: Option<&str>,
) -> Result<(), Error> {
    let reports = run_outputs(paths)?.reports;
    if reports.is_empty() {
        return Ok(());
    }
    let a = ReportArgs {
        run_dir: run_dir.to_path_buf(),
        format: None,
        cells: false,
        output: reports.iter().map(|(p, _)| p.clone()).collect(),
        chart: Chart::Requests,
        task: None,
        seed: None,
        model: None,
        baseline: baseline.map(str::to_string),
        view: crate::view::ViewArgs::default(),
        behaviour_out: None,
    };
    let records = harness_runner::read_records(run_dir).map_err(Error::refused)?;
    write_files(&a, &records, &reports)
}

/// Renders `records` in each `(path, format)` and writes it, saying so on stderr.
fn write_files(
    a: &ReportArgs,
    records: &[CellRecord],
    outputs: &[(PathBuf, Format)],
) -> Result<(), Error> {
    for (path, f) in outputs {
        let text = render_format(*f, a, records)?;
        harness_runner::atomic::write(path, text.as_bytes()).map_err(|source| Error::Write {
            path: path.clone(),
            source,
        })?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
