//! JUnit XML from cell records, for CI systems that show test results (GitHub Actions reporters,
//! GitLab, Jenkins, Buildkite).
//!
//! ```xml
//! <testsuites name="foldbench" tests="4" failures="1" errors="0" time="3.200">
//!   <testsuite name="trim-rerun" tests="4" failures="1" errors="0" skipped="0" time="3.200">
//!     <testcase name="trim/sim/1" classname="trim-rerun" time="0.800">
//!       <properties>
//!         <property name="policy" value="trim:keep=0,mode=drop"/>
//!         <property name="request_tokens_median" value="971"/> …
//!       </properties>
//!       <failure message="1 of 4 checks failed" type="check">…</failure>
//!     </testcase>
//!   </testsuite>
//! </testsuites>
//! ```
//!
//! One `<testsuite>` per task and one `<testcase>` per cell (`classname` = task, `name` =
//! `arm/model/seed`); `<failure>` when a check failed, `<error>` when the cell ended in `error`
//! (an infrastructure reason). Request tokens, re-runs, folds and the rest are `<property>`s.

use harness_core::{CellRecord, Status};

/// Escapes text for XML content: the five markup characters as entities, ANSI terminal escape
/// sequences (colours from a check's tool output) removed whole, and the other characters XML
/// 1.0 cannot hold shown as U+FFFD rather than dropped silently.
pub(crate) fn escape(s: &str) -> String {
    escape_with(s, false)
}

/// Escapes text for an XML attribute value: as [`escape`], and tab, newline and carriage return
/// as character references, which a parser keeps (a literal one it would turn into a space).
pub(crate) fn escape_attr(s: &str) -> String {
    escape_with(s, true)
}

fn escape_with(s: &str, attr: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' if attr => out.push_str(&format!("&#{};", c as u32)),
            '\t' | '\n' | '\r' => out.push(c),
            // CSI (`ESC [ params final`): drop the whole sequence, not only the ESC.
            '\u{1b}' if chars.peek() == Some(&'[') => {
                chars.next();
                for p in chars.by_ref() {
                    if ('@'..='~').contains(&p) {
                        break;
                    }
                }
            }
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

fn secs(ms: u64) -> String {
    format!("{:.3}", ms as f64 / 1000.0)
}

fn properties(r: &CellRecord) -> Vec<(&'static str, String)> {
    let m = &r.metrics;
    vec![
        ("policy", r.policy.clone()),
        ("requests", m.requests.to_string()),
        ("request_tokens_median", m.request_tokens.median.to_string()),
        ("request_tokens_max", m.request_tokens.max.to_string()),
        ("request_tokens_last", m.request_tokens.last.to_string()),
        ("request_tokens_total", m.request_tokens.total.to_string()),
        ("tool_calls", m.tool_calls.to_string()),
        ("reruns", m.reruns.to_string()),
        ("reruns_hidden", m.reruns_hidden.to_string()),
        ("archive_reads", m.archive_reads.to_string()),
        ("folds", m.folds.to_string()),
        ("premature_folds", m.premature_folds.to_string()),
        ("fold_regret", m.fold_regret.to_string()),
        ("compactions", m.compactions.to_string()),
        ("cached_tokens", m.cached_tokens.to_string()),
        ("written_tokens", m.written_tokens.to_string()),
        ("cost", format!("{:.6}", m.cost)),
    ]
}

fn testcase(out: &mut String, r: &CellRecord) {
    let name = r.id.strip_prefix(&format!("{}/", r.task)).unwrap_or(&r.id);
    out.push_str(&format!(
        "    <testcase name=\"{}\" classname=\"{}\" time=\"{}\">\n      <properties>\n",
        escape_attr(name),
        escape_attr(&r.task),
        secs(r.wall_ms)
    ));
    for (k, v) in properties(r) {
        out.push_str(&format!(
            "        <property name=\"{k}\" value=\"{}\"/>\n",
            escape_attr(&v)
        ));
    }
    out.push_str("      </properties>\n");
    match r.status {
        Status::Success => {}
        Status::Failure => {
            let failed: Vec<_> = r.checks.iter().filter(|c| !c.passed).collect();
            let mut body = String::new();
            for c in &failed {
                body.push_str(&c.label);
                if !c.detail.is_empty() {
                    body.push_str(": ");
                    body.push_str(&c.detail);
                }
                body.push('\n');
            }
            let message = if failed.is_empty() {
                "the cell failed".to_string()
            } else {
                format!(
                    "{} of {} checks failed: {}",
                    failed.len(),
                    r.checks.len(),
                    failed
                        .iter()
                        .map(|c| c.label.as_str())
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            };
            out.push_str(&format!(
                "      <failure message=\"{}\" type=\"check\">{}</failure>\n",
                escape_attr(&message),
                escape(&body)
            ));
        }
        Status::Unchecked => {
            out.push_str("      <skipped message=\"nothing was checked\"/>\n");
        }
        Status::Error => {
            let e = r.error.as_deref().unwrap_or("the cell ended in error");
            out.push_str(&format!(
                "      <error message=\"{}\" type=\"error\">{}</error>\n",
                escape_attr(e),
                escape(e)
            ));
        }
    }
    out.push_str("    </testcase>\n");
}

fn counts(records: &[&CellRecord]) -> (usize, usize, usize, u64) {
    (
        records.len(),
        records
            .iter()
            .filter(|r| r.status == Status::Failure)
            .count(),
        records.iter().filter(|r| r.status == Status::Error).count(),
        records.iter().map(|r| r.wall_ms).sum(),
    )
}

/// Renders records as a JUnit XML document named `name`.
pub fn to_junit(records: &[CellRecord], name: &str) -> String {
    let mut tasks: Vec<&str> = Vec::new();
    for r in records {
        if !tasks.contains(&r.task.as_str()) {
            tasks.push(&r.task);
        }
    }
    let all: Vec<&CellRecord> = records.iter().collect();
    let (tests, failures, errors, ms) = counts(&all);
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{}\">\n",
        escape_attr(name),
        secs(ms)
    );
    for task in tasks {
        let cells: Vec<&CellRecord> = records.iter().filter(|r| r.task == task).collect();
        let (tests, failures, errors, ms) = counts(&cells);
        let skipped = cells
            .iter()
            .filter(|r| r.status == Status::Unchecked)
            .count();
        out.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{}\">\n",
            escape_attr(task),
            secs(ms)
        ));
        for r in cells {
            testcase(&mut out, r);
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_core::metrics::CellMetrics;
    use harness_core::CheckResult;

    #[test]
    fn escapes_and_counts() {
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        let r = CellRecord {
            version: 1,
            id: "t/trim/sim/1".into(),
            task: "t".into(),
            arm: "trim".into(),
            policy: "trim".into(),
            model: "sim".into(),
            seed: 1,
            status: Status::Failure,
            error: None,
            checks: vec![CheckResult {
                label: "shell: x < y".into(),
                passed: false,
                detail: "exit 1".into(),
            }],
            turns: 1,
            metrics: CellMetrics::default(),
            wall_ms: 1500,
            model_ms: 0,
            agent: None,
            behaviour: None,
        };
        let x = to_junit(&[r], "foldbench");
        assert!(
            x.contains("<testsuite name=\"t\" tests=\"1\" failures=\"1\" errors=\"0\""),
            "{x}"
        );
        assert!(
            x.contains("<testcase name=\"trim/sim/1\" classname=\"t\" time=\"1.500\">"),
            "{x}"
        );
        assert!(
            x.contains("<failure message=\"1 of 1 checks failed: shell: x &lt; y\""),
            "{x}"
        );
    }

    #[test]
    fn tool_output_with_control_characters_and_colours_stays_readable() {
        // A check's output as a test runner prints it on a terminal: colours, a bell, a NUL.
        let detail = "\u{1b}[31mFAILED\u{1b}[0m test_parse\u{7}\u{0}\nexpected 2";
        assert_eq!(
            escape(detail),
            "FAILED test_parse\u{FFFD}\u{FFFD}\nexpected 2",
            "colour sequences removed whole, other control characters visible"
        );
        assert_eq!(escape_attr("line 1\nline 2\t."), "line 1&#10;line 2&#9;.");
        let r = CellRecord {
            version: 1,
            id: "t/none/sim/1".into(),
            task: "t".into(),
            arm: "none".into(),
            policy: "none".into(),
            model: "sim".into(),
            seed: 1,
            status: Status::Error,
            error: Some("setup failed:\n\u{1b}[1mno such file\u{1b}[0m".into()),
            checks: Vec::new(),
            turns: 0,
            metrics: CellMetrics::default(),
            wall_ms: 0,
            model_ms: 0,
            agent: None,
            behaviour: None,
        };
        let x = to_junit(&[r], "foldbench");
        assert!(
            x.contains("<error message=\"setup failed:&#10;no such file\" type=\"error\">"),
            "{x}"
        );
        assert!(!x.contains("[1m") && !x.contains('\u{1b}'), "{x}");
    }
}
