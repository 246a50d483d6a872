//! `foldbench proxy` as a user runs it: in front of an upstream on loopback (tests/proxy-e2e.py,
//! standard-library Python playing the model and the agent), then `report`, `-o report.html` and
//! `compare` on the folder it wrote.

use std::process::Command;

use crate::helpers::{binary, root};

#[test]
fn the_proxy_trims_what_the_upstream_receives_and_its_folder_reports_like_a_run() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("proxy");
    let script = root().join("tests/proxy-e2e.py");
    let run = Command::new("python3")
        .arg(&script)
        .arg(binary())
        .arg(&out)
        .arg("trim")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let seen: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(seen["exit"], 0, "the proxy stops cleanly on SIGINT");
    let received = seen["received"].as_array().unwrap();
    assert_eq!(received.len(), 2);
    for r in received {
        let msgs = r["body"]["messages"].to_string();
        assert!(
            !msgs.contains("the long content"),
            "trimmed upstream: {msgs}"
        );
        assert!(msgs.contains("now use it"), "{msgs}");
        assert_eq!(
            r["key"], "sk-test-KEY-never-written",
            "the key goes upstream"
        );
    }
    assert_eq!(seen["answers"][1]["content"][0]["text"], "ok");
    // The key is in no file the proxy wrote.
    let mut stack = vec![out.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).to_string();
                assert!(
                    !text.contains("KEY-never-written"),
                    "{} holds the key",
                    p.display()
                );
            }
        }
    }
    let report = Command::new(binary())
        .arg("report")
        .arg(&out)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&report.stdout);
    assert!(report.status.success() && table.contains("trim"), "{table}");
    let html = d.path().join("report.html");
    let page = Command::new(binary())
        .arg("report")
        .arg(&out)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert!(
        page.status.success(),
        "{}",
        String::from_utf8_lossy(&page.stderr)
    );
    assert!(std::fs::read_to_string(&html).unwrap().contains("trim"));
    let compare = Command::new(binary())
        .arg("compare")
        .arg(&out)
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        compare.status.success(),
        "{}{}",
        String::from_utf8_lossy(&compare.stdout),
        String::from_utf8_lossy(&compare.stderr)
    );
}
