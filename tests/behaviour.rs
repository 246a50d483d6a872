//! The behaviour profile end to end: `replay --behaviour-out` measures it from recorded
//! losses, `--behaviour` reads one back (a bad file refused with its place and what to do),
//! the "After real compactions" section in every output, and `report --behaviour-out` on a
//! run's own cells.

use std::process::Command;

use harness_core::behaviour::{LossKind, Profile};

use crate::helpers::{binary, fb, root, run_matrix, task, text};

#[test]
fn replay_writes_the_profile_of_its_sessions_and_reads_one_back() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("mine.json");
    let o = fb(&[
        "replay",
        "tests/fixtures/compactions",
        "--policy",
        "none",
        "--behaviour-out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let p = Profile::parse(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(p.name, "mine");
    assert_eq!(p.provenance.losses, 4);
    assert!(p.measured(LossKind::Summary) && p.measured(LossKind::None));
    assert!(p.provenance.measured_with.contains("--behaviour-out"));
    // Read back: the verdict names it.
    let o = fb(&[
        "replay",
        "tests/fixtures/real-sessions",
        "--behaviour",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    // The terminal breaks prose at its width: read it as words.
    let words = |o: &std::process::Output| {
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(
        words(&o).contains("recovery as the behaviour profile `mine` says"),
        "{}",
        text(&o)
    );
    // Without the flag, the shipped one.
    let o = fb(&["replay", "tests/fixtures/real-sessions"]);
    assert!(
        words(&o).contains("the behaviour profile `fixtures`"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_bad_profile_is_refused_with_its_file_line_column_and_what_to_do() {
    let d = tempfile::tempdir().unwrap();
    let bad = d.path().join("bad.json");
    let mut p = Profile::shipped().clone();
    p.summary.as_mut().unwrap().recover.hi = 2.0;
    std::fs::write(&bad, p.to_json()).unwrap();
    let line = p
        .to_json()
        .lines()
        .position(|l| l.contains("\"hi\": 2.0"))
        .unwrap()
        + 1;
    let o = fb(&[
        "replay",
        "tests/fixtures/real-sessions",
        "--behaviour",
        bad.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        err.contains(&format!("bad.json:{line}:")),
        "line {line}: {err}"
    );
    assert!(err.contains("not a probability"), "{err}");
    assert!(err.contains("--behaviour-out FILE"), "{err}");
    assert!(o.stdout.is_empty(), "nothing printed: {}", text(&o));
    std::fs::write(&bad, "{ \"format\": \"foldbench-behaviour\",").unwrap();
    let o = fb(&[
        "replay",
        "tests/fixtures/real-sessions",
        "--behaviour",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("bad.json:1:"),
        "{}",
        text(&o)
    );
}

#[test]
fn sessions_with_no_loss_write_no_profile() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("none.json");
    let o = fb(&[
        "replay",
        "tests/fixtures/real-sessions",
        "--policy",
        "none",
        "--behaviour-out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("nothing to measure a behaviour profile from"),
        "{}",
        text(&o)
    );
    assert!(!out.exists());
}

#[test]
fn after_real_compactions_is_in_the_terminal_json_html_and_analyze() {
    let o = fb(&["replay", "tests/fixtures/compactions", "--policy", "none"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("After real compactions: 4 recorded losses in 3 sessions"),
        "{stdout}"
    );
    let o = fb(&[
        "replay",
        "tests/fixtures/compactions",
        "--policy",
        "none",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ac = &v["after_compactions"];
    assert_eq!(ac["window_calls"], 20);
    let losses: usize = ac["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["losses"].as_array().unwrap().len())
        .sum();
    assert_eq!(losses, 4);
    let groups: Vec<&str> = ac["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["group"].as_str().unwrap())
        .collect();
    assert!(
        groups.contains(&"kind: summary") && groups.contains(&"all"),
        "{groups:?}"
    );
    assert_eq!(v["behaviour"], "fixtures");
    let d = tempfile::tempdir().unwrap();
    let page = d.path().join("r.html");
    let o = fb(&[
        "replay",
        "tests/fixtures/compactions",
        "--policy",
        "none",
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("After real compactions"),
        "the page has the section"
    );
    let o = fb(&["analyze", "tests/fixtures/compactions", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["after_compactions"]["groups"].as_array().unwrap().len(),
        ac["groups"].as_array().unwrap().len()
    );
    let o = fb(&["analyze", "tests/fixtures/compactions"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("After real compactions"));
}

#[test]
fn report_writes_the_behaviour_of_a_runs_agent() {
    let d = tempfile::tempdir().unwrap();
    run_matrix(
        vec![task("trim-rerun")],
        &["none", "trim:mode=placeholder"],
        "sim",
        &[1, 2],
        d.path(),
    );
    let out = d.path().join("sim.json");
    let o = Command::new(binary())
        .current_dir(root())
        .args(["report"])
        .arg(d.path())
        .args(["--format", "md", "--behaviour-out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let p = Profile::parse(&std::fs::read_to_string(&out).unwrap()).unwrap();
    // The placeholder clears turn 1's results before turn 2: one loss per cell, nothing in
    // its place; none loses nothing.
    assert_eq!(p.provenance.losses, 2, "{:?}", p.provenance);
    assert!(p.measured(LossKind::None) && !p.measured(LossKind::Summary));
    assert_eq!(p.provenance.agents.get("sim"), Some(&2));
    // A run that lost nothing has nothing to write.
    let d2 = tempfile::tempdir().unwrap();
    run_matrix(vec![task("trim-rerun")], &["none"], "sim", &[1], d2.path());
    let o = Command::new(binary())
        .args(["report"])
        .arg(d2.path())
        .args(["--behaviour-out"])
        .arg(d2.path().join("x.json"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn run_follows_the_profile_it_is_given() {
    let d = tempfile::tempdir().unwrap();
    let write = |name: &str, recover: f64| {
        let p = Profile::uniform(
            name,
            recover,
            harness_core::behaviour::Means {
                rerun: 1.0,
                ..Default::default()
            },
        );
        let path = d.path().join(format!("{name}.json"));
        std::fs::write(&path, p.to_json()).unwrap();
        path
    };
    let (always, never) = (write("always", 1.0), write("never", 0.0));
    let run = |profile: &std::path::Path, out: &str| {
        let o = fb(&[
            "run",
            "--tasks",
            "trim-rerun",
            "--policy",
            "trim:mode=placeholder",
            "--seeds",
            "1",
            "--behaviour",
            profile.to_str().unwrap(),
            "-o",
            d.path().join(out).to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let line = std::fs::read_to_string(d.path().join(out).join("cells.jsonl")).unwrap();
        serde_json::from_str::<serde_json::Value>(line.lines().next().unwrap()).unwrap()
    };
    // The placeholder keeps turn 1's calls: an agent that re-runs them gets every fact back, the
    // essay's 4 re-runs; one that never tries writes what it cannot see and fails.
    let a = run(&always, "a");
    assert_eq!(a["status"], "success", "{a}");
    assert_eq!(a["metrics"]["reruns"], 4, "{a}");
    let n = run(&never, "n");
    assert_eq!(n["status"], "failure", "{n}");
    assert_eq!(n["metrics"]["reruns"], 0, "{n}");
    assert_eq!(n["metrics"]["lost_facts"], 4, "{n}");
    // --behaviour-end reads the profile at an end of its intervals: from never (low) to always
    // (high).
    let mut ranged = Profile::uniform(
        "ranged",
        0.5,
        harness_core::behaviour::Means {
            rerun: 1.0,
            ..Default::default()
        },
    );
    for k in [&mut ranged.summary, &mut ranged.none]
        .into_iter()
        .flatten()
    {
        k.recover = harness_core::behaviour::Rate {
            point: 0.5,
            lo: 0.0,
            hi: 1.0,
        };
    }
    let path = d.path().join("ranged.json");
    std::fs::write(&path, ranged.to_json()).unwrap();
    for (end, status) in [("low", "failure"), ("high", "success")] {
        let out = d.path().join(end);
        let o = fb(&[
            "run",
            "--tasks",
            "trim-rerun",
            "--policy",
            "trim:mode=placeholder",
            "--seeds",
            "1",
            "--behaviour",
            path.to_str().unwrap(),
            "--behaviour-end",
            end,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let line = std::fs::read_to_string(out.join("cells.jsonl")).unwrap();
        let r: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
        assert_eq!(r["status"], status, "{end}: {r}");
    }
}
