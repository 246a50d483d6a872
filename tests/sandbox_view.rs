//! The sandbox's view does not depend on the folder foldbench starts in: started from `/`, from
//! the home folder and from a checkout, a shell call of a cell, an `exec:` policy and a real
//! agent's process (`run --agent exec:CMD`) each see bubblewrap as pid 1 (their own `/proc`),
//! cannot read `/etc/shadow`, and see neither the host's `/tmp` nor its home folder (issue 37,
//! items 5 and 11).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::helpers::{binary, root, skipped};

/// The shell text that prints what a process sees: `VIEW pid1=… shadow=… tmp=… home=… null=…`,
/// with `tmp` and `home` saying whether the canary files the test left there are visible and
/// `null` whether `/dev/null` takes a write (the sandbox's own `/dev`).
fn probe(tmp_canary: &Path, home_canary: &Path) -> String {
    format!(
        "printf 'VIEW pid1=%s shadow=%s tmp=%s home=%s null=%s END' \"$(cat /proc/1/comm)\" \
         \"$(cat /etc/shadow 2>&1 | grep -q '^root:' && echo readable || echo denied)\" \
         \"$(test -e {} && echo visible || echo hidden)\" \
         \"$(test -e {} && echo visible || echo hidden)\" \
         \"$(echo x >/dev/null 2>&1 && echo works || echo broken)\"",
        tmp_canary.display(),
        home_canary.display()
    )
}

/// The view every sandboxed process must report, wherever foldbench starts.
const HIDDEN: &str = "VIEW pid1=bwrap shadow=denied tmp=hidden home=hidden null=works END";

/// The `VIEW … END` line the probe printed in `text` (not the probe's own format string).
fn view_in(text: &str) -> Option<String> {
    text.match_indices("VIEW pid1=").find_map(|(start, _)| {
        let end = text[start..].find(" END")? + start + 4;
        let line = &text[start..end];
        (!line.contains('%')).then(|| line.to_string())
    })
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The canaries: a file in a folder of the host's `/tmp`, one in the home folder (removed on
/// drop).
struct Canaries {
    tmp: tempfile::TempDir,
    home: PathBuf,
}

impl Canaries {
    fn new() -> Canaries {
        let tmp = tempfile::Builder::new()
            .prefix("foldbench-view-")
            .tempdir_in("/tmp")
            .unwrap();
        std::fs::write(tmp.path().join("canary"), "tmp").unwrap();
        let home = PathBuf::from(std::env::var("HOME").expect("HOME is set"))
            .join(format!(".foldbench-view-canary-{}", std::process::id()));
        std::fs::write(&home, "home").unwrap();
        Canaries { tmp, home }
    }

    fn probe(&self) -> String {
        probe(&self.tmp.path().join("canary"), &self.home)
    }
}

impl Drop for Canaries {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.home);
    }
}

/// The folders foldbench is started in: `/`, the home folder, a checkout.
fn starts() -> Vec<PathBuf> {
    vec![
        PathBuf::from("/"),
        PathBuf::from(std::env::var("HOME").unwrap()),
        root(),
    ]
}

fn sandbox_works() -> bool {
    let ok = Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "--unshare-pid", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        skipped("bubblewrap does not work here", "FOLDBENCH_REQUIRE_SANDBOX");
    }
    ok && Path::new("/etc/shadow").exists()
}

#[test]
fn a_shell_call_sees_the_same_sandbox_from_root_home_and_a_checkout() {
    if !sandbox_works() {
        return;
    }
    let c = Canaries::new();
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("fx")).unwrap();
    std::fs::write(d.path().join("fx/a.txt"), "A = 1\n").unwrap();
    let spec = format!(
        "name: view\ndescription: what a shell call sees\nrepo: fx\nturns:\n  - user: \"look\"\n    unit: a\n    script:\n      - shell: {{ command: {} }}\n      - say: \"seen\"\nchecks:\n  - file_contains: {{ path: a.txt, text: \"A = 1\" }}\n",
        serde_json::to_string(&c.probe()).unwrap()
    );
    std::fs::write(d.path().join("view.yaml"), spec).unwrap();
    for (k, start) in starts().iter().enumerate() {
        let out = d.path().join(format!("run-{k}"));
        let o = Command::new(binary())
            .current_dir(start)
            .arg("run")
            .arg("--tasks")
            .arg(d.path().join("view.yaml"))
            .args(["--policy", "none", "--seeds", "1", "--sandbox", "bwrap"])
            .arg("--out")
            .arg(&out)
            .env("CI", "true")
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}: {}",
            start.display(),
            text(&o)
        );
        let mut transcripts = String::new();
        for cell in std::fs::read_dir(out.join("cells")).unwrap().flatten() {
            transcripts
                .push_str(&std::fs::read_to_string(cell.path().join("transcript.jsonl")).unwrap());
        }
        assert_eq!(
            view_in(&transcripts).as_deref(),
            Some(HIDDEN),
            "a shell call of a run started in {}",
            start.display()
        );
    }
}

#[test]
fn an_exec_policy_sees_the_same_sandbox_from_root_home_and_a_checkout() {
    if !sandbox_works() {
        return;
    }
    let c = Canaries::new();
    // The policy's script, in a folder under the build's target folder.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let script = dir.path().join("probe.py");
    std::fs::write(
        &script,
        format!(
            "import subprocess, sys\nsys.stderr.write(subprocess.run(['sh', '-c', {}], capture_output=True, text=True).stdout)\nsys.exit(3)\n",
            serde_json::to_string(&c.probe()).unwrap()
        ),
    )
    .unwrap();
    let session = root().join("tests/fixtures/real-sessions/codex/Hoper-J_cpolar-connect");
    // `read=`: the build's target folder may sit under a folder the sandbox hides (a clone in
    // /tmp); the policy is shown its own folder, and nothing else of it.
    let policy = format!(
        "exec:read={} python3 {}",
        dir.path().display(),
        script.display()
    );
    for start in starts() {
        let o = Command::new(binary())
            .current_dir(&start)
            .arg("replay")
            .arg(&session)
            .args(["--policy", &policy])
            .env("CI", "true")
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(100),
            "{}: {}",
            start.display(),
            text(&o)
        );
        assert_eq!(
            view_in(&text(&o)).as_deref(),
            Some(HIDDEN),
            "an exec: policy of a replay started in {}: {}",
            start.display(),
            text(&o)
        );
    }
}

#[test]
fn an_agent_process_sees_the_same_sandbox_from_root_home_and_a_checkout() {
    if !sandbox_works() {
        return;
    }
    let c = Canaries::new();
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("fx")).unwrap();
    std::fs::write(d.path().join("fx/a.txt"), "A = 1\n").unwrap();
    // The check passes when the agent's process saw the hidden view.
    let spec = format!(
        "name: view\ndescription: what an agent's process sees\nrepo: fx\nturns:\n  - user: \"look\"\n    unit: a\n    script:\n      - say: \"seen\"\nchecks:\n  - file_contains: {{ path: view.txt, text: {} }}\n",
        serde_json::to_string(HIDDEN).unwrap()
    );
    std::fs::write(d.path().join("view.yaml"), spec).unwrap();
    // The agent: the probe's output written into the workspace, in the command itself (no file
    // of the host is needed).
    let script = format!(
        "import subprocess\nopen('view.txt', 'w').write(subprocess.run(['sh', '-c', {}], capture_output=True, text=True).stdout)\nprint('seen')\n",
        serde_json::to_string(&c.probe()).unwrap()
    );
    let hex: String = script.bytes().map(|b| format!("{b:02x}")).collect();
    let agent = format!("exec:python3 -c \"exec(bytes.fromhex('{hex}').decode())\"");
    for (k, start) in starts().iter().enumerate() {
        let out = d.path().join(format!("run-{k}"));
        let o = Command::new(binary())
            .current_dir(start)
            .args(["run", "--agent", &agent, "--tasks"])
            .arg(d.path().join("view.yaml"))
            .args(["--policy", "none", "--seeds", "1", "--sandbox", "bwrap"])
            .arg("--out")
            .arg(&out)
            .env("CI", "true")
            .output()
            .unwrap();
        let cells = std::fs::read_to_string(out.join("cells.jsonl")).unwrap_or_default();
        let record: serde_json::Value = serde_json::from_str(cells.trim())
            .unwrap_or_else(|e| panic!("{}: {e}: {}", start.display(), text(&o)));
        assert_eq!(
            record["checks"][0]["passed"],
            true,
            "an agent's process of a run started in {}: {}",
            start.display(),
            record["checks"]
        );
    }
}
