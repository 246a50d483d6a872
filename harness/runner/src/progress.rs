//! A run's progress on standard error, as cargo-nextest shows it.
//!
//! - On a terminal (and `CI` unset): one bar with the count of finished cells, the ETA, the
//!   requests sent and the cells in flight; warnings (`warn`) are printed above the bar, not
//!   through it.
//! - Off a terminal (CI, a pipe, a file): one line per finished cell, in the order they finish:
//!   `[ 37/255] long-session/fold/sim/2 ok 1.2 s`, the status word `ok`, `FAIL` or `ERROR`.

use std::io::IsTerminal as _;
use std::sync::Mutex;
use std::time::Duration;

use harness_core::{CellRecord, Status};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A bar redrawn in place (a terminal).
    Bar,
    /// One line per finished cell (CI, a pipe).
    Lines,
    /// Nothing (library callers, tests).
    Off,
}

impl Mode {
    /// The bar on a terminal with `CI` unset, else lines.
    pub(crate) fn detect() -> Mode {
        if std::io::stderr().is_terminal() && std::env::var_os("CI").is_none() {
            Mode::Bar
        } else {
            Mode::Lines
        }
    }
}

/// The bar being drawn, so [`warn`] can print above it.
static BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Prints a line on standard error — a note, a warning, what was written — above the progress
/// bar when one is drawn, so the bar is redrawn below it rather than torn through. The library
/// writes to standard error only through here (tests/architecture.rs checks it).
pub fn say(message: &str) {
    let bar = BAR.lock().ok().and_then(|b| b.clone());
    match bar {
        Some(bar) => bar.suspend(|| eprintln!("{message}")),
        None => eprintln!("{message}"),
    }
}

/// Prints a warning on standard error ([`say`]: above the progress bar).
pub(crate) fn warn(message: &str) {
    say(message);
}

/// The line printed off a terminal when a cell finishes: `[ 37/255] id ok 1.2 s`, the count
/// padded to the width of the total.
pub(crate) fn line(done: usize, total: usize, record: &CellRecord) -> String {
    let width = total.to_string().len();
    let word = match record.status {
        Status::Success => "ok",
        Status::Failure => "FAIL",
        Status::Error => "ERROR",
        Status::Unchecked => "done",
    };
    format!(
        "[{done:>width$}/{total}] {} {word} {:.1} s",
        record.id,
        record.wall_ms as f64 / 1000.0
    )
}

/// The progress of one run.
pub(crate) struct Progress {
    mode: Mode,
    done: usize,
    total: usize,
    requests: usize,
    in_flight: Vec<String>,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Progress over `total` cells of which `already` were done before this run (a resume).
    pub(crate) fn new(mode: Mode, already: usize, total: usize) -> Progress {
        let bar = (mode == Mode::Bar).then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr())
                    .with_position(already as u64);
            let style = ProgressStyle::with_template(
                "{bar:30} {pos}/{len} cells · ETA {eta} · {prefix} requests · {wide_msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("█▉▊▋▌▍▎▏ ");
            bar.set_style(style);
            bar.set_prefix("0");
            bar.reset_eta();
            bar.enable_steady_tick(Duration::from_millis(250));
            if let Ok(mut b) = BAR.lock() {
                *b = Some(bar.clone());
            }
            bar
        });
        Progress {
            mode,
            done: already,
            total,
            requests: 0,
            in_flight: Vec::new(),
            bar,
        }
    }

    /// A cell started.
    pub(crate) fn started(&mut self, id: &str) {
        self.in_flight.push(id.to_string());
        self.redraw_message();
    }

    /// A request went to a model.
    pub(crate) fn request(&mut self) {
        self.requests += 1;
        if let Some(bar) = &self.bar {
            bar.set_prefix(self.requests.to_string());
        }
    }

    /// A cell finished with this record.
    pub(crate) fn finished(&mut self, record: &CellRecord) {
        self.done += 1;
        self.in_flight.retain(|id| id != &record.id);
        match self.mode {
            Mode::Off => {}
            Mode::Lines => eprintln!("{}", line(self.done, self.total, record)),
            Mode::Bar => {
                if let Some(bar) = &self.bar {
                    if record.status != Status::Success {
                        let word = line(self.done, self.total, record);
                        bar.suspend(|| eprintln!("{word}"));
                    }
                    bar.set_position(self.done as u64);
                }
                self.redraw_message();
            }
        }
    }

    fn redraw_message(&self) {
        let Some(bar) = &self.bar else { return };
        let msg = match self.in_flight.as_slice() {
            [] => String::new(),
            [one] => one.clone(),
            [first, rest @ ..] => format!("{first} +{}", rest.len()),
        };
        bar.set_message(msg);
    }

    /// The run ended: the bar is cleared (the report follows).
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
            if let Ok(mut b) = BAR.lock() {
                *b = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_cell_is_one_line_with_its_status_word() {
        let mut r = CellRecord {
            version: 1,
            id: "long-session/fold/sim/2".into(),
            task: "long-session".into(),
            arm: "fold".into(),
            policy: "fold".into(),
            model: "sim".into(),
            seed: 2,
            status: Status::Success,
            error: None,
            checks: Vec::new(),
            turns: 1,
            metrics: Default::default(),
            wall_ms: 1234,
            model_ms: 0,
            agent: None,
            behaviour: None,
        };
        assert_eq!(
            line(37, 255, &r),
            "[ 37/255] long-session/fold/sim/2 ok 1.2 s"
        );
        r.status = Status::Failure;
        assert!(line(7, 9, &r).starts_with("[7/9] long-session/fold/sim/2 FAIL "));
        r.status = Status::Error;
        assert!(line(7, 9, &r).contains(" ERROR "));
    }
}
