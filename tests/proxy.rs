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

/// The proxy's shutdown line counts the requests the model answered as `report` counts them
/// (the one the proxy asked again after `fold_unit` included), apart from the agent's own
/// requests and its side requests; and `report` says nothing was checked, never `1/1`.
#[test]
fn the_shutdown_line_and_report_agree_on_the_requests_and_nothing_is_called_a_success() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("proxy");
    let run = Command::new("python3")
        .arg(root().join("tests/proxy-e2e.py"))
        .arg(binary())
        .arg(&out)
        .arg("fold:card_after_tool_calls=1")
        .arg("fold")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let seen: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(seen["exit"], 0, "{stderr}");
    // Two main requests, the one asked again after fold_unit, two count-tokens requests.
    assert_eq!(seen["received"].as_array().unwrap().len(), 5, "{seen}");
    let csv = Command::new(binary())
        .args(["report", "--cells", "--format", "csv"])
        .arg(&out)
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&csv.stdout).to_string();
    let mut lines = csv.lines();
    let headers: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = headers.iter().position(|h| *h == "requests").unwrap();
    let counted: u64 = lines
        .map(|l| l.split(',').nth(at).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(counted, 3, "{csv}");
    let line = stderr
        .lines()
        .find(|l| l.contains("recorded in"))
        .unwrap_or_else(|| panic!("no shutdown line: {stderr}"));
    assert!(
        line.starts_with(&format!(
            "{counted} request(s) to the model in 1 conversation(s)"
        )),
        "the shutdown line counts what report counts: {line}"
    );
    assert!(
        line.contains("4 from the agent (2 side or pass-through)"),
        "{line}"
    );
    let report = Command::new(binary())
        .arg("report")
        .arg(&out)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&report.stdout);
    assert!(report.status.success(), "{table}");
    assert!(table.contains("not checked"), "{table}");
    assert!(!table.contains("1/1"), "nothing was checked: {table}");
}
