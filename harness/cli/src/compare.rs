//! `foldbench compare BASE NEW`: pairs the cells of two run directories by id and prints
//! per-metric changes with a paired sign test and a bootstrap interval, the cells that flipped
//! from success to failure, and — with `--fail-on-regression` — exits 100 when a metric worsened
//! by more than its threshold or when cells of the base run are missing from the new one (unless
//! `--allow-missing`). An arm whose policy text changed under the same label is paired by label
//! and said (a note in the report and on stderr).
//!
//! Thresholds come from the matrix file's `regression:` section (profile layered as for `run`),
//! then `--threshold metric=value` flags; without either, `harness_report::compare::
//! default_thresholds` (no success flip, re-runs +0.5, median request +5%); the layering is
//! `harness_core::regression::thresholds`. The logic is `harness_report::compare`; this module
//! reads records and writes reports.

use std::path::PathBuf;

use harness_report::compare;

use crate::error::{Code, Error};
use crate::format::{self, Document, Form, Format, Outputs};
use crate::matrix::ConfigArgs;

/// `foldbench compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline run directory (e.g. results/baselines/ci).
    pub base: PathBuf,
    /// The new run directory.
    pub new: PathBuf,
    /// Exit 100 when a metric regressed beyond its threshold, or when cells of BASE are
    /// missing from NEW (see --allow-missing).
    #[arg(long)]
    pub fail_on_regression: bool,
    /// With --fail-on-regression: judge only the cells in both runs, and pass when cells of
    /// BASE are missing from NEW (a partial run, one shard).
    #[arg(long)]
    pub allow_missing: bool,
    /// A threshold over the matrix file's: `metric=value`, e.g. `reruns=0.5`,
    /// `median_request_tokens=5%`, `success=0`. Repeatable.
    #[arg(long = "threshold", value_name = "METRIC=VALUE")]
    pub thresholds: Vec<String>,
    /// Format on standard output (default table; with -o, only when given).
    #[arg(long, value_parser = format::parser(&OUTPUTS))]
    pub format: Option<Format>,
    /// Write to FILE; the extension picks the format (.md, .json, .txt). Repeatable.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Vec<PathBuf>,
    #[command(flatten)]
    /// Matrix file and profile (for the thresholds).
    pub config: ConfigArgs,
}

/// What `compare` prints, with the line `--format`'s help shows for each.
pub static OUTPUTS: Outputs = Outputs {
    terminal: Some("A terminal table and notes"),
    markdown: Some("Markdown (a CI job summary)"),
    csv: None,
    json: Some("JSON"),
    junit: None,
    chart: None,
    page: None,
};

/// A comparison of two runs, in no format yet.
struct CompareDoc<'a> {
    c: &'a compare::Comparison,
    a: &'a CompareArgs,
}

impl Document for CompareDoc<'_> {
    fn terminal(&self) -> Form {
        let mut s = format!("{}\n", compare::table(self.c).to_terminal());
        for n in compare::notes(self.c) {
            s.push_str(&n);
            s.push('\n');
        }
        Some(Ok(s))
    }

    fn markdown(&self) -> Form {
        Some(Ok(compare::markdown(
            self.c,
            &self.a.base.display().to_string(),
            &self.a.new.display().to_string(),
        )))
    }

    fn csv(&self) -> Form {
        None
    }

    fn json(&self) -> Form {
        Some(
            serde_json::to_string_pretty(self.c)
                .map(|j| format!("{j}\n"))
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

/// Runs `foldbench compare`.
pub fn cmd(a: CompareArgs) -> Result<Code, Error> {
    let (_, _, layer) = a.config.source().layer()?;
    let thresholds = harness_core::regression::thresholds(layer.regression, &a.thresholds)
        .map_err(Error::refused)?;
    let mut outputs = Vec::new();
    for p in &a.output {
        let Some(f) = format::for_path(p, &OUTPUTS) else {
            return Err(Error::Usage(format!(
                "cannot tell the format of {} from its extension; use {}",
                p.display(),
                format::extension_hints(&OUTPUTS)
            )));
        };
        outputs.push((p.clone(), f));
    }
    let read = |d: &PathBuf| harness_runner::read_records(d);
    let (base, new) = match (read(&a.base), read(&a.new)) {
        (Ok(b), Ok(n)) => (b, n),
        (Err(e), _) | (_, Err(e)) => return Err(Error::refused(e)),
    };
    let c = compare::compare(&base, &new, &thresholds);
    let stdout = match (a.format, outputs.is_empty()) {
        (Some(f), _) => Some(f),
        (None, true) => Some(format::default()),
        (None, false) => None,
    };
    if let Some(f) = stdout {
        crate::out::print(&f.render(&CompareDoc { c: &c, a: &a })?)?;
    }
    for (path, f) in outputs {
        let s = f.render(&CompareDoc { c: &c, a: &a })?;
        harness_runner::atomic::write(&path, s.as_bytes())
            .map_err(|source| Error::Write { path, source })?;
    }
    if c.pairs == 0 {
        eprintln!(
            "error: no cell of {} is in {}; compare runs of the same matrix",
            a.base.display(),
            a.new.display()
        );
        return Ok(Code::NoCells);
    }
    Ok(gate(&a, &c))
}

/// The exit code of a comparison that paired cells: 100 under `--fail-on-regression` when a
/// metric regressed or base cells are missing from new (unless `--allow-missing`); what it
/// found goes to stderr.
fn gate(a: &CompareArgs, c: &compare::Comparison) -> Code {
    for p in &c.policy_changes {
        eprintln!("note: {}", compare::policy_change_note(p));
    }
    let regressed = c.regressed_metrics();
    let missing = if a.allow_missing {
        0
    } else {
        c.only_base.len()
    };
    if a.fail_on_regression && missing > 0 {
        eprintln!(
            "error: {missing} cell{} of {} {} missing from {} (first: {}); the gate cannot judge \
             {}: run them, or pass --allow-missing to judge only the {} cells in both",
            if missing == 1 { "" } else { "s" },
            a.base.display(),
            if missing == 1 { "is" } else { "are" },
            a.new.display(),
            c.only_base[0],
            if missing == 1 { "it" } else { "them" },
            c.pairs
        );
    }
    if regressed.is_empty() {
        if a.fail_on_regression && missing > 0 {
            Code::Failed
        } else {
            Code::Ok
        }
    } else if a.fail_on_regression {
        eprintln!("error: regression in {}", regressed.join(", "));
        Code::Failed
    } else {
        eprintln!(
            "regression in {} (pass --fail-on-regression to fail on it)",
            regressed.join(", ")
        );
        Code::Ok
    }
}
