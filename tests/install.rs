//! What a user meets outside the happy path of a checkout: the progress lines CI sees, CSV that
//! reads back as numbers, and an installed binary that runs with no checkout around it.

use std::path::Path;
use std::process::{Command, Output};

use crate::helpers::{binary, root};

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `bin` in `cwd` with stderr piped (so off a terminal) and its cache in `cache`.
fn fb(bin: &Path, cwd: &Path, cache: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .current_dir(cwd)
        .env("XDG_CACHE_HOME", cache)
        .args(args)
        .output()
        .expect("foldbench runs")
}

#[test]
fn off_a_terminal_each_finished_cell_is_one_line_on_stderr_and_the_csv_holds_numbers() {
    let d = tempfile::tempdir().unwrap();
    let spec = root().join("tasks/trim-rerun.yaml");
    let out = d.path().join("run");
    let o = fb(
        &binary(),
        d.path(),
        d.path(),
        &[
            "run",
            "--tasks",
            spec.to_str().unwrap(),
            "--policy",
            "none",
            "--policy",
            "trim",
            "--seeds",
            "1-2",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0) | Some(100)),
        "{}",
        text(&o)
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    let line = regex_free_match;
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(lines.len(), 4, "one line per cell:\n{stderr}");
    let mut counts: Vec<usize> = Vec::new();
    for l in &lines {
        let (n, id, word, secs) = line(l).unwrap_or_else(|| panic!("not a progress line: {l:?}"));
        assert!(
            id.starts_with("trim-rerun/") && (id.ends_with("/sim/1") || id.ends_with("/sim/2")),
            "{l}"
        );
        assert!(["ok", "FAIL", "ERROR"].contains(&word), "{l}");
        assert!(secs.parse::<f64>().is_ok(), "{l}");
        counts.push(n);
    }
    counts.sort();
    assert_eq!(counts, vec![1, 2, 3, 4], "{stderr}");
    assert!(
        !stderr.contains('\r') && !stderr.contains('\u{1b}'),
        "no bar drawn off a terminal"
    );

    let csv = d.path().join("report.csv");
    let o = fb(
        &binary(),
        d.path(),
        d.path(),
        &["report", out.to_str().unwrap(), "-o", csv.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let csv = std::fs::read_to_string(csv).unwrap();
    let mut rows = csv.lines().map(|l| l.split(',').collect::<Vec<_>>());
    let headers = rows.next().unwrap();
    assert!(
        headers.contains(&"successes") && headers.contains(&"success_rate"),
        "{csv}"
    );
    for row in rows {
        assert_eq!(row.len(), headers.len(), "no quoted display strings: {csv}");
        for (h, v) in headers.iter().zip(&row).skip(1) {
            assert!(
                v.is_empty() || v.parse::<f64>().is_ok(),
                "{h} = {v:?} is not a raw number: {csv}"
            );
        }
    }
}

/// `[ 37/255] id word 1.2 s` → (37, id, word, "1.2").
fn regex_free_match(l: &str) -> Option<(usize, &str, &str, &str)> {
    let rest = l.strip_prefix('[')?;
    let (count, rest) = rest.split_once(']')?;
    let (n, _total) = count.trim_start().split_once('/')?;
    let mut parts = rest.trim_start().split(' ');
    let id = parts.next()?;
    let word = parts.next()?;
    let secs = parts.next()?;
    (parts.next()? == "s" && parts.next().is_none()).then_some(())?;
    Some((n.parse().ok()?, id, word, secs))
}

#[test]
fn an_installed_binary_runs_outside_a_checkout() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("elsewhere");
    std::fs::create_dir(&home).unwrap();
    let bin = home.join("foldbench");
    std::fs::copy(binary(), &bin).unwrap();
    let cache = d.path().join("cache");

    // `list` with no tasks/ here: the built-in suite, said on stderr.
    let o = fb(&bin, &home, &cache, &["list", "--tasks-only"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("trim-rerun") && stdout.contains("long-session"),
        "{}",
        text(&o)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("built into foldbench"),
        "{}",
        text(&o)
    );

    let o = fb(&bin, &home, &cache, &["init"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        std::fs::read(home.join("tasks/trim-rerun.yaml")).unwrap(),
        std::fs::read(root().join("tasks/trim-rerun.yaml")).unwrap()
    );
    assert!(home.join("tasks/fixtures/trim-rerun").is_dir());

    let o = fb(
        &bin,
        &home,
        &cache,
        &[
            "run",
            "--tasks",
            "tasks/trim-rerun.yaml",
            "--policy",
            "none",
            "--seeds",
            "1",
            "--out",
            "out",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(home.join("out/cells.jsonl").is_file());

    // A second init does not write over the user's edits.
    std::fs::write(home.join("tasks/trim-rerun.yaml"), "changed").unwrap();
    let o = fb(&bin, &home, &cache, &["init"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(home.join("tasks/trim-rerun.yaml")).unwrap(),
        "changed"
    );
}

#[test]
fn replay_csv_holds_raw_numbers() {
    let d = tempfile::tempdir().unwrap();
    let sessions = root().join("tests/fixtures/real-sessions");
    let o = fb(
        &binary(),
        &root(),
        d.path(),
        &["replay", sessions.to_str().unwrap(), "--format", "csv"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let csv = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut rows = csv.lines().map(|l| l.split(',').collect::<Vec<_>>());
    let headers = rows.next().unwrap();
    assert_eq!(headers[..3], ["policy", "sessions", "requests"], "{csv}");
    let mut n = 0;
    for row in rows {
        n += 1;
        assert_eq!(row.len(), headers.len(), "no quoted display strings: {csv}");
        for (h, v) in headers.iter().zip(&row).skip(1) {
            assert!(
                v.is_empty() || v.parse::<f64>().is_ok(),
                "{h} = {v:?} is not a raw number (no ×, no thousands separator): {csv}"
            );
        }
    }
    assert!(n >= 2, "a row per policy: {csv}");
}
