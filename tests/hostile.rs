//! What an agent may plant for foldbench to trip over, and cells that would wait for ever: links
//! where archives are written, FIFOs under checks, checks and sessions that run past their
//! limits.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use harness_core::judge::Judge;
use harness_core::Event;
use harness_core::Status;
use harness_runner::cell::{CellOptions, CellOutput};
use harness_runner::tasks::LoadedTask;

use crate::helpers::{binary, run_one};

/// A task `name` from `spec` (YAML) with a fixture folder `fx` holding `a.txt` (`A = 1`), in
/// `dir`.
fn task_in(dir: &Path, name: &str, spec: &str) -> LoadedTask {
    std::fs::create_dir_all(dir.join("fx")).unwrap();
    std::fs::write(dir.join("fx/a.txt"), "A = 1\n").unwrap();
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(&file, spec).unwrap();
    harness_runner::tasks::load_task(&file).unwrap_or_else(|p| panic!("{p:?}"))
}

/// Runs one cell of `t` with the oracle sim on a thread, and fails (instead of hanging) when it
/// has not ended within two minutes.
fn run_bounded(t: LoadedTask, policy: &'static str, opts: CellOptions) -> CellOutput {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (out, _) = run_one(&t, policy, Judge::Oracle, opts);
        let _ = tx.send(out);
    });
    rx.recv_timeout(Duration::from_secs(120))
        .expect("the cell did not end within two minutes")
}

#[test]
fn a_fifo_under_a_check_fails_the_check_instead_of_blocking_it() {
    let d = tempfile::tempdir().unwrap();
    let spec = "name: fifo-check\ndescription: the checked file is replaced by a FIFO\nrepo: fx\nsetup:\n  - \"rm a.txt && mkfifo a.txt\"\nturns:\n  - user: \"look\"\n    unit: a\n    script:\n      - say: \"seen\"\nchecks:\n  - file_contains: { path: a.txt, text: \"A = 1\" }\n  - file_lacks: { path: a.txt, text: \"B\" }\n";
    let out = run_bounded(
        task_in(d.path(), "fifo-check", spec),
        "none",
        CellOptions::default(),
    );
    assert_eq!(out.record.status, Status::Failure, "{:?}", out.record);
    for c in &out.record.checks {
        assert!(!c.passed);
        assert!(
            c.detail.contains("not a regular file") && c.detail.contains("FIFO"),
            "{c:?}"
        );
    }
}

#[test]
fn a_check_on_a_file_larger_than_any_read_is_answered_in_pieces() {
    let d = tempfile::tempdir().unwrap();
    // 300 MB, not UTF-8 (a byte 0xff first), then zeros, the text at the very end: searched as
    // bytes, found across a piece boundary without reading the file whole (the holes cost no
    // disk).
    let spec = "name: big-check\ndescription: a large file under a check\nrepo: fx\nsetup:\n  - \"printf '\\\\377' > big.bin && truncate -s 300000000 big.bin && printf 'NEEDLE' >> big.bin\"\nturns:\n  - user: \"look\"\n    unit: a\n    script:\n      - say: \"seen\"\nchecks:\n  - file_contains: { path: big.bin, text: \"NEEDLE\" }\n  - file_lacks: { path: big.bin, text: \"HAY\" }\n";
    let out = run_bounded(
        task_in(d.path(), "big-check", spec),
        "none",
        CellOptions::default(),
    );
    assert_eq!(
        out.record.status,
        Status::Success,
        "{:?}",
        out.record.checks
    );
}

#[test]
fn a_timed_out_check_says_what_timed_out_and_the_limit() {
    let d = tempfile::tempdir().unwrap();
    let spec = "name: slow-check\ndescription: a check that sleeps\nrepo: fx\nturns:\n  - user: \"look\"\n    unit: a\n    script:\n      - say: \"seen\"\nchecks:\n  - shell: \"echo started; sleep 30\"\n";
    let mut opts = CellOptions::default();
    opts.tool_limits.check_timeout = Duration::from_secs(1);
    let out = run_bounded(task_in(d.path(), "slow-check", spec), "none", opts);
    let c = &out.record.checks[0];
    assert!(!c.passed);
    assert!(
        c.detail.starts_with(
            "timed out after 1s, the time limit of a check (--tool-timeout, at least 60s)\n"
        ) && c.detail.contains("started"),
        "{c:?}"
    );
}

#[test]
fn a_session_that_never_waits_stops_at_the_cell_timeout() {
    let d = tempfile::tempdir().unwrap();
    let mut spec =
        String::from("name: chatty\ndescription: ten thousand say-only turns\nrepo: fx\nturns:\n");
    for i in 0..10_000 {
        spec.push_str(&format!(
            "  - user: \"turn {i}\"\n    unit: u\n    script:\n      - say: \"ok {i}\"\n"
        ));
    }
    spec.push_str("checks:\n  - answer_contains: { turn: 1, text: \"ok\" }\n");
    task_in(d.path(), "chatty", &spec);
    let out = d.path().join("run");
    let o = std::process::Command::new(binary())
        .args(["run", "--tasks"])
        .arg(d.path().join("chatty.yaml"))
        .args(["--policy", "none", "--seeds", "1", "--cell-timeout", "1"])
        .arg("--out")
        .arg(&out)
        .env("CI", "true")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(100), "{err}");
    let cells = std::fs::read_to_string(out.join("cells.jsonl")).unwrap();
    assert!(
        cells.contains("\"status\":\"error\"")
            && cells.contains("the cell timed out after 1s (--cell-timeout)"),
        "{cells}"
    );
}

/// A task whose first turn runs `plant` (a shell command) and whose second turn starts a new
/// unit, so `fold:card_after_tool_calls=1` folds turn 1 into
/// `.foldbench/archive/fold-turns-001-001.txt` at the end of turn 2.
fn planting_task(dir: &Path, plant: &str) -> LoadedTask {
    let spec = format!("name: planted\ndescription: turn 1 plants a link where an archive goes\nrepo: fx\nturns:\n  - user: \"look at a\"\n    unit: a\n    script:\n      - shell: {{ command: {plant:?} }}\n      - read_file: {{ path: a.txt }}\n        expect: \"A = 1\"\n      - say: \"seen a\"\n  - user: \"now something else\"\n    unit: b\n    script:\n      - read_file: {{ path: a.txt }}\n        expect: \"A = 1\"\n      - say: \"seen b\"\n  - user: \"and a third thing\"\n    unit: c\n    script:\n      - say: \"done\"\nchecks:\n  - answer_contains: {{ turn: 2, text: \"seen b\" }}\n");
    task_in(dir, "planted", &spec)
}

const POLICY: &str = "fold:card_after_tool_calls=1";

#[test]
fn a_fold_archives_where_no_link_was_planted() {
    let d = tempfile::tempdir().unwrap();
    let out = run_bounded(
        planting_task(d.path(), "true"),
        POLICY,
        CellOptions::default(),
    );
    let paths: Vec<&str> = out.archives.iter().map(|a| a.path.as_str()).collect();
    assert!(
        paths.contains(&".foldbench/archive/fold-turns-001-001.txt"),
        "the planting tests plant where this fold writes: {paths:?}"
    );
}

#[test]
fn a_symlink_planted_at_the_archive_file_is_replaced_and_the_host_file_untouched() {
    let d = tempfile::tempdir().unwrap();
    let host = tempfile::tempdir().unwrap();
    let victim = host.path().join("victim.txt");
    std::fs::write(&victim, "host file\n").unwrap();
    let plant = format!(
        "mkdir -p .foldbench/archive && ln -sf {} .foldbench/archive/fold-turns-001-001.txt",
        victim.display()
    );
    let out = run_bounded(
        planting_task(d.path(), &plant),
        POLICY,
        CellOptions::default(),
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "host file\n");
    assert!(
        out.archives
            .iter()
            .any(|a| a.path == ".foldbench/archive/fold-turns-001-001.txt"),
        "the fold was archived beside the link, not through it"
    );
}

#[test]
fn a_symlinked_archive_folder_is_refused_as_an_event_and_the_host_folder_stays_empty() {
    for planted in [".foldbench/archive", ".foldbench"] {
        let d = tempfile::tempdir().unwrap();
        let host = tempfile::tempdir().unwrap();
        let plant = format!(
            "mkdir -p $(dirname {planted}) && ln -s {} {planted}",
            host.path().display()
        );
        let out = run_bounded(
            planting_task(d.path(), &plant),
            POLICY,
            CellOptions::default(),
        );
        assert_eq!(
            std::fs::read_dir(host.path()).unwrap().count(),
            0,
            "{planted}: foldbench wrote into the host folder"
        );
        let failed: Vec<&String> = out
            .events
            .iter()
            .filter_map(|e| match e {
                Event::SpliceFailed { reason, .. } => Some(reason),
                _ => None,
            })
            .collect();
        assert!(
            failed
                .iter()
                .any(|r| r.contains(&format!("`{planted}` is a symlink"))),
            "{planted}: {failed:?}"
        );
        assert_eq!(out.record.error, None, "a refusal is not a crash");
        assert!(out.archives.is_empty(), "{planted}");
    }
}

/// `sleep N` processes alive (zombies excluded), by pid, as `/proc` lists their command lines.
fn sleeping(n: &str) -> Vec<u32> {
    let want = format!("sleep\0{n}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            (!zombie && cmdline == want.as_bytes()).then_some(pid)
        })
        .collect()
}

#[test]
fn without_a_sandbox_a_setsid_child_with_no_environment_dies_with_its_call() {
    setsid_orphan_dies(&[]);
}

/// The same run with foldbench in session 0, as a container's processes are when their session
/// leader lies outside their PID namespace (CI's case): `unshare --pid` puts a shell there, and
/// foldbench is its child.
#[test]
fn in_session_0_the_orphan_dies_with_its_call_too() {
    let probe = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        crate::helpers::skipped(
            &format!("unshare --pid is unavailable here (root is needed): {probe:?}"),
            "FOLDBENCH_REQUIRE_SANDBOX",
        );
        return;
    }
    setsid_orphan_dies(&[
        "unshare",
        "--pid",
        "--fork",
        "--mount-proc",
        "sh",
        "-c",
        "test \"$(cut -d' ' -f6 /proc/self/stat)\" = 0 || exit 9; \"$0\" \"$@\"",
    ]);
}

/// Runs a task whose shell call leaves `setsid env -i sleep N` behind, under `wrapper` (a
/// command foldbench's own command line is appended to, or none), and asserts the sleep died
/// with its call.
fn setsid_orphan_dies(wrapper: &[&str]) {
    let d = tempfile::tempdir().unwrap();
    let n = (600_000 + std::process::id() % 100_000).to_string();
    // Turn 1 leaves `sleep N` in a session of its own with a cleared environment; the check,
    // after the call has ended, fails while it is alive.
    let seen = format!(
        "for f in /proc/[0-9]*/cmdline; do tr '\\\\0' ' ' 2>/dev/null <$f; echo; done | grep -q '^sleep {n} $'"
    );
    let spec = format!(
        "name: orphan\ndescription: a shell call leaves a setsid child with no environment\nrepo: fx\nturns:\n  - user: \"start it\"\n    unit: a\n    script:\n      - shell: {{ command: \"setsid env -i sleep {n} </dev/null >/dev/null 2>&1 & until {seen}; do sleep 0.01; done; echo started\" }}\n        expect: \"started\"\n      - say: \"started\"\nchecks:\n  - shell: \"! ({seen})\"\n"
    );
    task_in(d.path(), "orphan", &spec);
    let mut cmd = match wrapper.split_first() {
        Some((program, args)) => {
            let mut c = std::process::Command::new(program);
            c.args(args).arg(binary());
            c
        }
        None => std::process::Command::new(binary()),
    };
    let out = cmd
        .args(["run", "--tasks"])
        .arg(d.path().join("orphan.yaml"))
        .args([
            "--policy",
            "none",
            "--seeds",
            "1",
            "--jobs",
            "1",
            "--sandbox",
            "none",
        ])
        .arg("--out")
        .arg(d.path().join("run"))
        .env("CI", "true")
        .output()
        .unwrap();
    assert_ne!(
        out.status.code(),
        Some(9),
        "the wrapper did not put foldbench in session 0"
    );
    let left = sleeping(&n);
    for pid in &left {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let cells = std::fs::read_to_string(d.path().join("run/cells.jsonl")).unwrap_or_default();
    let record: serde_json::Value = serde_json::from_str(cells.trim())
        .unwrap_or_else(|e| panic!("{e}: {cells}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(
        record["status"], "success",
        "the orphan outlived its call: {cells}"
    );
    assert!(left.is_empty(), "the orphan outlived the run: {left:?}");
}
