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
use harness_core::record::CellRecord;
use harness_report::svg::{self, RequestPoint, SessionChoice};
use harness_report::view::Kind;
use harness_report::{junit, render};

use crate::error::{Code, Error};

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A terminal table.
    Table,
    /// Markdown (a CI job summary).
    Md,
    /// CSV.
    Csv,
    /// JSON.
    Json,
    /// JUnit XML, one test case per cell.
    Junit,
    /// An SVG chart (see `--chart`).
    Svg,
    /// One self-contained HTML page: the tables, a chart per task, model and seed with every
    /// arm, drill-downs to turns, folds and results (`harness_report::html`).
    Html,
}

impl Format {
    /// The format a file's extension asks for.
    pub fn of_path(p: &Path) -> Result<Format, String> {
        match p
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("md" | "markdown") => Ok(Format::Md),
            Some("csv") => Ok(Format::Csv),
            Some("json") => Ok(Format::Json),
            Some("xml") => Ok(Format::Junit),
            Some("svg") => Ok(Format::Svg),
            Some("txt") => Ok(Format::Table),
            Some("html" | "htm") => Ok(Format::Html),
            _ => Err(format!(
                "cannot tell the format of {} from its extension; use .md, .csv, .json, .xml (JUnit), .svg, .html or .txt",
                p.display()
            )),
        }
    }
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
    #[arg(long, value_enum)]
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
}

/// Reads the chart fields of `requests.jsonl`.
pub fn read_requests(dir: &Path) -> Result<Vec<RequestPoint>, String> {
    let path = dir.join(harness_runner::results::REQUESTS_FILE);
    let f =
        std::fs::File::open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|e| format!("{}:{}: cannot read: {e}", path.display(), i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(serde_json::from_str(&line).map_err(|e| {
            format!(
                "{}:{}:{}: not a request record: {e}",
                path.display(),
                i + 1,
                e.column()
            )
        })?);
    }
    Ok(out)
}

/// Renders one format. `dir` is the run directory (for `requests.jsonl`).
pub fn render_format(
    format: Format,
    a: &ReportArgs,
    records: &[CellRecord],
) -> Result<String, String> {
    let table = || {
        if a.cells {
            render::cells_table(records)
        } else {
            render::summary_table(records)
        }
    };
    let title = a
        .run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| a.run_dir.display().to_string());
    Ok(match format {
        Format::Table => {
            let kind = if a.cells { Kind::Cells } else { Kind::Summary };
            let baseline = a.baseline.as_deref();
            let width = crate::view::width();
            let mut out = String::new();
            for line in harness_report::answer::run_block(records, baseline, width) {
                out.push_str(&line);
                out.push('\n');
            }
            let shown = harness_report::fmt::displayed(&table());
            out.push_str(&format!("{}\n", a.view.render(&shown, kind)));
            for line in harness_report::answer::run_tail(records, baseline, width) {
                out.push_str(&line);
                out.push('\n');
            }
            out
        }
        Format::Md => {
            let baseline = a.baseline.as_deref();
            let mut md = harness_report::markdown::report(
                records,
                &title,
                a.cells,
                &harness_report::answer::run_markdown(records, baseline),
            );
            md.push_str(&harness_report::answer::run_markdown_tail(
                records, baseline,
            ));
            md
        }
        Format::Csv if a.cells => render::cells_table(records).to_csv(),
        Format::Csv => render::summary_csv(records),
        Format::Json => {
            let v = if a.cells {
                serde_json::to_string_pretty(records)
            } else {
                serde_json::to_string_pretty(&render::summarize(records))
            };
            format!("{}\n", v.map_err(|e| e.to_string())?)
        }
        Format::Junit => junit::to_junit(records, &format!("foldbench {title}")),
        Format::Html => harness_report::html::render(
            &harness_runner::html::run_page(&a.run_dir, records, a.baseline.as_deref(), &title)
                .map_err(|e| e.to_string())?,
        ),
        Format::Svg => match a.chart {
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
                )
                .map_err(|e| e.to_string())?;
                svg::line_chart(&chart)
            }
        },
    })
}

/// Runs `foldbench report`.
pub fn cmd(a: ReportArgs) -> Result<Code, Error> {
    let records = match harness_runner::results::read_records(&a.run_dir) {
        Ok(r) => r,
        Err(e) => {
            return Err(Error::Usage(e.to_string()));
        }
    };
    let mut outputs = Vec::new();
    for p in &a.output {
        match Format::of_path(p) {
            Ok(f) => outputs.push((p.clone(), f)),
            Err(e) => {
                return Err(Error::Usage(e.to_string()));
            }
        }
    }
    let stdout = match (a.format, outputs.is_empty()) {
        (Some(f), _) => Some(f),
        (None, true) => Some(Format::Table),
        (None, false) => None,
    };
    if let Some(f) = stdout {
        match render_format(f, &a, &records) {
            Ok(s) => crate::out::print(&s)?,
            Err(e) => {
                return Err(Error::Usage(e.to_string()));
            }
        }
    }
    write_files(&a, &records, &outputs)?;
    Ok(Code::Ok)
}

/// What `run -o` and `ab -o` name: the run folder (at most one) and report files, each with the
/// format its extension picks, written from the folder when the run ends.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RunOutputs {
    /// The run folder, when one is given.
    pub folder: Option<PathBuf>,
    /// The reports to write, in the order given.
    pub reports: Vec<(PathBuf, Format)>,
}

/// Sorts the `-o` paths of `run`/`ab`: an existing folder, or a path whose extension is no
/// report format, is the run folder; a path with a report extension (`.md`, `.html`, …) is a
/// report. A `.jsonl` path (the records file) and two folders are refused with what to give.
pub fn run_outputs(paths: &[PathBuf]) -> Result<RunOutputs, String> {
    let mut outs = RunOutputs::default();
    for p in paths {
        let ext = p
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        if p.is_dir() {
            // An existing folder is the run folder, whatever its name.
        } else if let Ok(f) = Format::of_path(p) {
            outs.reports.push((p.clone(), f));
            continue;
        } else if ext.as_deref() == Some("jsonl") {
            return Err(format!(
                "-o {}: a run writes its records into its folder (DIR/{}); give the folder \
                 (-o results/x), and a report file to write one (-o report.html)",
                p.display(),
                harness_runner::results::CELLS_FILE
            ));
        }
        if let Some(first) = &outs.folder {
            return Err(format!(
                "-o {} and -o {}: a run has one folder; give one, and report files (.md, \
                 .html, …) beside it",
                first.display(),
                p.display()
            ));
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
    let reports = run_outputs(paths).map_err(Error::Usage)?.reports;
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
    };
    let records = harness_runner::results::read_records(run_dir).map_err(Error::usage)?;
    write_files(&a, &records, &reports)
}

/// Renders `records` in each `(path, format)` and writes it, saying so on stderr.
fn write_files(
    a: &ReportArgs,
    records: &[CellRecord],
    outputs: &[(PathBuf, Format)],
) -> Result<(), Error> {
    for (path, f) in outputs {
        let text = render_format(*f, a, records).map_err(Error::Usage)?;
        if let Err(e) = harness_runner::atomic::write(path, text.as_bytes()) {
            return Err(Error::Internal(format!(
                "cannot write {}: {e}",
                path.display()
            )));
        }
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_picks_the_format() {
        for (file, f) in [
            ("a/report.md", Format::Md),
            ("x.CSV", Format::Csv),
            ("s.json", Format::Json),
            ("junit.xml", Format::Junit),
            ("chart.svg", Format::Svg),
            ("report.HTML", Format::Html),
            ("t.txt", Format::Table),
        ] {
            assert_eq!(Format::of_path(Path::new(file)).unwrap(), f, "{file}");
        }
        assert!(Format::of_path(Path::new("report.pdf")).is_err());
        assert!(Format::of_path(Path::new("report")).is_err());
    }
}
