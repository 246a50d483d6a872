//! Policy matrices in CI, end to end through the binary: the matrix file and its profiles,
//! `list` with partitions, sharded runs merged into one, reports (JUnit checked with an XML
//! parser, SVG), and `compare` as a CI gate — the flow of docs/ci.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output};

use harness_core::{CellRecord, Status};
use harness_runner::read_records;

use crate::helpers::{all_tasks, arms, binary, root};

/// Runs the binary in `cwd` with CI=true.
fn fb(cwd: &Path, args: &[&str]) -> Output {
    Command::new(binary())
        .current_dir(cwd)
        .args(args)
        .env("CI", "true")
        .output()
        .expect("the foldbench binary runs")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The ids of `list --json`.
fn listed(o: &Output) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("list --json prints JSON: {e}\n{}", text(o));
    });
    v["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .map(|c| c["id"].as_str().expect("id").to_string())
        .collect()
}

#[test]
fn list_partitions_give_every_cell_exactly_once() {
    let all = fb(&root(), &["list", "--json"]);
    assert_eq!(all.status.code(), Some(0), "{}", text(&all));
    let all = listed(&all);
    assert!(all.len() > 100, "{}", all.len());
    for kind in ["hash", "slice"] {
        let mut union = Vec::new();
        for k in 1..=2 {
            let part = format!("{kind}:{k}/2");
            let o = fb(&root(), &["list", "--json", "--partition", &part]);
            assert_eq!(o.status.code(), Some(0), "{}", text(&o));
            let ids = listed(&o);
            assert!(!ids.is_empty(), "{part} is not empty");
            union.extend(ids);
        }
        assert_eq!(union.len(), all.len(), "{kind}: no cell twice");
        let a: BTreeSet<&String> = union.iter().collect();
        let b: BTreeSet<&String> = all.iter().collect();
        assert_eq!(a, b, "{kind}: every cell once");
    }
    // Filters narrow the listing; a partition's cells keep their shard when filtered.
    let trim = listed(&fb(
        &root(),
        &[
            "list",
            "--json",
            "--profile",
            "ci",
            "--policy",
            "trim",
            "--task",
            "trim-rerun",
        ],
    ));
    assert_eq!(trim, vec!["trim-rerun/trim/sim/1", "trim-rerun/trim/sim/2"]);
    let bad = fb(&root(), &["list", "--partition", "hash:3/2"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    let unknown = fb(&root(), &["list", "--profile", "weekly"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("defines: default, ci, nightly"),
        "{}",
        text(&unknown)
    );
}

#[test]
fn the_default_profile_is_the_built_in_matrix() {
    // What `foldbench run` ran before there was a matrix file: every task × five policies ×
    // sim × seeds 1-3, in this order.
    let policies: Vec<&str> = policies::POLICIES.to_vec();
    let built_in: Vec<String> =
        harness_runner::run::expand(&all_tasks(), &arms(&policies), &["sim".into()], &[1, 2, 3])
            .into_iter()
            .map(|c| c.id)
            .collect();
    let with_file = fb(&root(), &["list", "--json"]);
    assert_eq!(listed(&with_file), built_in, "the committed foldbench.yaml");
    let elsewhere = tempfile::tempdir().unwrap();
    let tasks = root().join("tasks");
    let without = fb(
        elsewhere.path(),
        &["list", "--json", tasks.to_str().unwrap()],
    );
    assert_eq!(
        listed(&without),
        built_in,
        "no matrix file: the built-in defaults"
    );
    // Without a matrix file and without matrix flags, `list` still lists the tasks.
    let old = fb(&root(), &["tasks"]);
    assert_eq!(old.status.code(), Some(0), "{}", text(&old));
    assert!(String::from_utf8_lossy(&old.stdout).contains("fixture"));
    let old = fb(elsewhere.path(), &["list", tasks.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&old.stdout).contains("tool calls"),
        "{}",
        text(&old)
    );
    // With the matrix file, the text listing gives each task's row (turns, units, scripted
    // calls, fixture size) before the cells.
    let both = fb(&root(), &["list"]);
    assert_eq!(both.status.code(), Some(0), "{}", text(&both));
    let out = String::from_utf8_lossy(&both.stdout);
    let cells_at = out.find("│ id ").expect("a cell table");
    for t in all_tasks() {
        let s = &t.spec;
        let row = out[..cells_at]
            .lines()
            .find(|l| l.starts_with(&format!("│ {} ", s.name)))
            .unwrap_or_else(|| panic!("no task row for {}\n{out}", s.name));
        let cols: Vec<&str> = row.split('│').map(str::trim).collect();
        assert_eq!(cols[2], s.turns.len().to_string(), "{row}");
        assert_eq!(cols[3], s.units().len().to_string(), "{row}");
        assert_eq!(cols[4], s.scripted_tool_calls().to_string(), "{row}");
        assert!(cols[5].ends_with(" KB"), "{row}");
        assert!(out[cells_at..].contains(&format!("│ {}/none/sim/1 ", s.name)));
    }
}

#[test]
fn a_matrix_file_with_three_errors_gets_three_positions_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    std::fs::write(
        &file,
        "version: 1\nprofiles:\n  default:\n    seeds: 3-1\n    arms:\n      - none\n      - { label: t, policy: \"trim:keep=-1\" }\n    colour: red\n",
    )
    .unwrap();
    let f = file.display().to_string();
    let o = fb(dir.path(), &["run", "--config", &f]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let positioned: Vec<&str> = err.lines().filter(|l| l.starts_with(&f)).collect();
    assert_eq!(positioned.len(), 3, "{}", text(&o));
    assert!(
        positioned[0].starts_with(&format!("{f}:4:5: `seeds`: bad seed range")),
        "{err}"
    );
    assert!(
        positioned[1].starts_with(&format!("{f}:7:21: policy `trim`: parameter `keep`")),
        "{err}"
    );
    assert!(
        positioned[2].starts_with(&format!("{f}:8:5: unknown field `colour`")),
        "{err}"
    );
    assert!(err.contains("error: 3 problems in"), "{err}");
    // The same through `list` and `compare` (every reader of a matrix file).
    let l = fb(dir.path(), &["list", "--config", &f]);
    assert_eq!(l.status.code(), Some(2), "{}", text(&l));
}

/// The JUnit schema's required structure: testsuites / testsuite (name, tests, failures,
/// errors) / testcase (name, classname), counts that add up, properties with name and value.
fn check_junit(xml: &str) -> (usize, usize, usize) {
    let doc = roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let num = |n: roxmltree::Node, a: &str| -> usize {
        n.attribute(a)
            .unwrap_or_else(|| panic!("<{}> needs {a}", n.tag_name().name()))
            .parse()
            .unwrap_or_else(|_| panic!("{a} is a count"))
    };
    let (mut tests, mut failures, mut errors) = (0, 0, 0);
    for suite in root.children().filter(|n| n.is_element()) {
        assert_eq!(suite.tag_name().name(), "testsuite");
        let name = suite.attribute("name").expect("testsuite name");
        let cases: Vec<_> = suite.children().filter(|n| n.is_element()).collect();
        let (mut f, mut e) = (0, 0);
        for case in &cases {
            assert_eq!(case.tag_name().name(), "testcase");
            assert!(case.attribute("name").is_some(), "testcase name");
            assert_eq!(case.attribute("classname"), Some(name), "classname = task");
            let kids: Vec<&str> = case
                .children()
                .filter(|n| n.is_element())
                .map(|n| n.tag_name().name())
                .collect();
            assert_eq!(kids.first(), Some(&"properties"), "{kids:?}");
            assert!(kids.len() <= 2, "at most one failure or error: {kids:?}");
            for k in case.children().filter(|n| n.is_element()) {
                match k.tag_name().name() {
                    "properties" => {
                        let props: BTreeMap<&str, &str> = k
                            .children()
                            .filter(|n| n.is_element())
                            .map(|p| {
                                assert_eq!(p.tag_name().name(), "property");
                                (
                                    p.attribute("name").expect("property name"),
                                    p.attribute("value").expect("property value"),
                                )
                            })
                            .collect();
                        for want in ["request_tokens_median", "reruns", "folds"] {
                            assert!(props.contains_key(want), "property {want}");
                        }
                    }
                    "failure" => {
                        assert!(k.attribute("message").is_some());
                        f += 1;
                    }
                    "error" => {
                        assert!(k.attribute("message").is_some());
                        e += 1;
                    }
                    other => panic!("unexpected <{other}> in a testcase"),
                }
            }
        }
        assert_eq!(num(suite, "tests"), cases.len());
        assert_eq!(num(suite, "failures"), f);
        assert_eq!(num(suite, "errors"), e);
        tests += cases.len();
        failures += f;
        errors += e;
    }
    assert_eq!(num(root, "tests"), tests);
    assert_eq!(num(root, "failures"), failures);
    assert_eq!(num(root, "errors"), errors);
    (tests, failures, errors)
}

fn by_id(records: Vec<CellRecord>) -> BTreeMap<String, CellRecord> {
    records
        .into_iter()
        .map(|mut r| {
            r.wall_ms = 0;
            r.model_ms = 0;
            (r.id.clone(), r)
        })
        .collect()
}

/// The CI flow of docs/ci.md, locally: two shards, merge, reports, compare against a baseline.
#[test]
fn two_shards_merge_into_the_unsharded_run_and_compare_gates_a_regression() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tasks = root().join("tasks");
    let matrix = format!(
        r#"version: 1
regression:
  success: 0
  reruns: 0.5
  median_request_tokens: 5%
profiles:
  default:
    tasks: ["{t}/trim-rerun.yaml", "{t}/tool-heavy.yaml"]
    arms: [none, {{ label: trim, policy: "trim:keep=1" }}]
    seeds: 1-2
  worse:
    arms: [{{ label: trim, policy: "trim:keep=0" }}]
"#,
        t = tasks.display()
    );
    std::fs::write(d.join("foldbench.yaml"), matrix).unwrap();
    run_in(d, "shard1", &["--partition", "hash:1/2"]);
    run_in(d, "shard2", &["--partition", "hash:2/2"]);
    run_in(d, "whole", &[]);
    let m = fb(d, &["merge", "shard1", "shard2", "-o", "merged"]);
    assert_eq!(m.status.code(), Some(0), "{}", text(&m));
    assert!(
        String::from_utf8_lossy(&m.stderr).contains("8 of 8 cells"),
        "{}",
        text(&m)
    );

    merged_equals_whole(d);
    merge_refuses_what_does_not_fit(d);
    compare_gates_a_regression(d);
    reports_of_the_merged_run(d);
}

/// Runs the matrix file in `d` into `out` with `extra` flags; it must pass.
fn run_in(d: &Path, out: &str, extra: &[&str]) {
    let mut args = vec!["run", "--jobs", "2", "--out", out];
    args.extend(extra);
    let o = fb(d, &args);
    assert_eq!(o.status.code(), Some(0), "run {extra:?}: {}", text(&o));
}

fn merged_equals_whole(d: &Path) {
    // The merged run has the unsharded run's cells, with the same metrics.
    let merged = by_id(read_records(&d.join("merged")).unwrap());
    let whole = by_id(read_records(&d.join("whole")).unwrap());
    assert_eq!(merged.len(), 8);
    assert_eq!(
        merged.keys().collect::<Vec<_>>(),
        whole.keys().collect::<Vec<_>>()
    );
    assert_eq!(merged, whole, "same records but for times");
    let shard_matrix: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("shard1/matrix.json")).unwrap())
            .unwrap();
    assert_eq!(shard_matrix["partition"], "hash:1/2");
    assert_eq!(
        shard_matrix["cells"].as_array().unwrap().len(),
        8,
        "the full matrix"
    );
    let requests = std::fs::read_to_string(d.join("merged/requests.jsonl")).unwrap();
    assert_eq!(
        requests.lines().count(),
        std::fs::read_to_string(d.join("whole/requests.jsonl"))
            .unwrap()
            .lines()
            .count()
    );
    // `run --out merged` finds every cell done.
    let resumed = fb(d, &["run", "--out", "merged"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    assert_eq!(read_records(&d.join("merged")).unwrap().len(), 8);
}

fn merge_refuses_what_does_not_fit(d: &Path) {
    // Merge refuses a cell twice, and shards of different matrices.
    let dup = fb(d, &["merge", "shard1", "shard1", "-o", "dup"]);
    assert_eq!(dup.status.code(), Some(2), "{}", text(&dup));
    assert!(
        String::from_utf8_lossy(&dup.stderr).contains("is in both"),
        "{}",
        text(&dup)
    );
    run_in(d, "worse", &["--profile", "worse"]);
    let other = fb(d, &["merge", "shard1", "worse", "-o", "other"]);
    assert_eq!(other.status.code(), Some(2), "{}", text(&other));
    assert!(
        String::from_utf8_lossy(&other.stderr).contains("different matrices"),
        "{}",
        text(&other)
    );
    let half = fb(d, &["merge", "shard1", "-o", "half"]);
    assert_eq!(half.status.code(), Some(100), "{}", text(&half));
    assert!(
        String::from_utf8_lossy(&half.stderr).contains("in no shard"),
        "{}",
        text(&half)
    );
}

fn compare_gates_a_regression(d: &Path) {
    // compare: identical runs pass the gate; the worse parameter fails it, naming the metric.
    let same = fb(d, &["compare", "whole", "merged", "--fail-on-regression"]);
    assert_eq!(same.status.code(), Some(0), "{}", text(&same));
    assert!(
        String::from_utf8_lossy(&same.stdout).contains("no regression"),
        "{}",
        text(&same)
    );
    let worse = fb(
        d,
        &[
            "compare",
            "whole",
            "worse",
            "--fail-on-regression",
            "-o",
            "compare.md",
            "--format",
            "table",
        ],
    );
    assert_eq!(worse.status.code(), Some(100), "{}", text(&worse));
    let err = String::from_utf8_lossy(&worse.stderr);
    // `worse` runs trim:keep=0 under the label `trim` (the baseline's trim:keep=1): paired by
    // label, and said.
    assert!(
        err.contains(
            "note: policy changed under the label `trim`: base `trim:keep=1,mode=drop`, new \
             `trim:keep=0,mode=drop`; its 4 cells are paired by label"
        ),
        "{}",
        text(&worse)
    );
    // keep=0 trims turn 1 from turn 2, and nothing in view names a file to read again: the
    // cells fail (the sim no longer re-runs calls it cannot see).
    assert!(
        err.contains("error: regression in success"),
        "{}",
        text(&worse)
    );
    // As many cells flip as `trim:keep=1` made succeed in the base run (the shipped behaviour
    // profile's draws decide which).
    let won = read_records(&d.join("whole"))
        .unwrap()
        .iter()
        .filter(|r| r.arm == "trim" && r.status == harness_core::Status::Success)
        .count();
    assert!(won > 0, "keep=1 succeeds somewhere");
    let out = text(&worse);
    assert!(
        out.contains(&format!("{won} of 4 cells flipped from success")),
        "{}",
        text(&worse)
    );
    let md = std::fs::read_to_string(d.join("compare.md")).unwrap();
    assert!(md.contains("**Regressed: success"), "{md}");
    // -o reads an extension as report -o does, in any case, among the formats compare writes.
    let upper = fb(d, &["compare", "whole", "worse", "-o", "compare.MD"]);
    assert_eq!(upper.status.code(), Some(0), "{}", text(&upper));
    assert!(std::fs::read_to_string(d.join("compare.MD"))
        .unwrap()
        .contains("**Regressed: success"));
    let csv = fb(d, &["compare", "whole", "worse", "-o", "compare.csv"]);
    assert_eq!(csv.status.code(), Some(2), "{}", text(&csv));
    assert!(
        text(&csv).contains("use .md, .json or .txt"),
        "{}",
        text(&csv)
    );
    // Without --fail-on-regression the gate only reports.
    let soft = fb(d, &["compare", "whole", "worse"]);
    assert_eq!(soft.status.code(), Some(0), "{}", text(&soft));
    // A threshold from the command line overrides the file's.
    let loose = fb(
        d,
        &[
            "compare",
            "whole",
            "worse",
            "--fail-on-regression",
            "--threshold",
            "success=4",
            "--allow-missing",
        ],
    );
    assert_eq!(loose.status.code(), Some(0), "{}", text(&loose));
    // Half the cells (one shard) against the whole run: no metric regressed, but the gate
    // cannot judge the missing cells, so it fails unless told to judge only the pairs.
    let shard = fb(d, &["compare", "whole", "shard1", "--fail-on-regression"]);
    assert_eq!(shard.status.code(), Some(100), "{}", text(&shard));
    let err = String::from_utf8_lossy(&shard.stderr);
    assert!(
        err.contains("cells of whole are missing from shard1")
            && err.contains("pass --allow-missing"),
        "{}",
        text(&shard)
    );
    assert!(
        String::from_utf8_lossy(&shard.stdout).contains("no regression in the "),
        "{}",
        text(&shard)
    );
    let allowed = fb(
        d,
        &[
            "compare",
            "whole",
            "shard1",
            "--fail-on-regression",
            "--allow-missing",
        ],
    );
    assert_eq!(allowed.status.code(), Some(0), "{}", text(&allowed));
    // Without the gate, missing cells are reported, not fatal.
    let soft = fb(d, &["compare", "whole", "shard1"]);
    assert_eq!(soft.status.code(), Some(0), "{}", text(&soft));
}

fn reports_of_the_merged_run(d: &Path) {
    // Reports of the merged run: the extension picks the format.
    let r = fb(
        d,
        &[
            "report",
            "merged",
            "-o",
            "out/report.md",
            "-o",
            "out/junit.xml",
            "-o",
            "out/requests.svg",
            "-o",
            "out/cells.csv",
        ],
    );
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    let md = std::fs::read_to_string(d.join("out/report.md")).unwrap();
    assert!(
        md.starts_with("## foldbench: merged") && md.contains("| trim |"),
        "{md}"
    );
    assert!(std::fs::read_to_string(d.join("out/cells.csv"))
        .unwrap()
        .starts_with("arm,"));
    let junit = std::fs::read_to_string(d.join("out/junit.xml")).unwrap();
    let failed = read_records(&d.join("merged"))
        .unwrap()
        .iter()
        .filter(|r| r.status == harness_core::Status::Failure)
        .count();
    assert_eq!(check_junit(&junit), (8, failed, 0));
    let svg = std::fs::read_to_string(d.join("out/requests.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("the SVG is XML");
    let lines = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .count();
    assert_eq!(lines, 2, "one line per policy");
    assert!(svg.contains("tool-heavy"), "the longest session is charted");
    let bars = fb(
        d,
        &[
            "report",
            "merged",
            "--chart",
            "reruns",
            "-o",
            "out/reruns.svg",
        ],
    );
    assert_eq!(bars.status.code(), Some(0), "{}", text(&bars));
    roxmltree::Document::parse(&std::fs::read_to_string(d.join("out/reruns.svg")).unwrap())
        .expect("the bar chart is XML");
    let bad = fb(d, &["report", "merged", "-o", "out/report.pdf"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));

    // JUnit of failed and errored cells: <failure> and <error>. The first two cells (none's)
    // succeeded; the run's own failures stay failures.
    let mut records = read_records(&d.join("merged")).unwrap();
    assert!(records[..2].iter().all(|r| r.status == Status::Success));
    records[0].status = Status::Failure;
    records[0].checks[0].passed = false;
    records[1].status = Status::Error;
    records[1].error = Some("the workspace <could not> be made".into());
    let broken = d.join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    let lines: String = records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(broken.join("cells.jsonl"), lines).unwrap();
    let j = fb(d, &["report", "broken", "--format", "junit"]);
    assert_eq!(j.status.code(), Some(0), "{}", text(&j));
    assert_eq!(
        check_junit(&String::from_utf8_lossy(&j.stdout)),
        (8, 1 + failed, 1)
    );
    let flipped = fb(d, &["compare", "merged", "broken", "--fail-on-regression"]);
    assert_eq!(flipped.status.code(), Some(100), "{}", text(&flipped));
    let out = String::from_utf8_lossy(&flipped.stdout);
    assert!(
        out.contains(&format!("flipped to failure: {}", records[0].id)),
        "{out}"
    );
    assert!(
        out.contains(&format!("flipped to error: {}", records[1].id)),
        "{out}"
    );
}
