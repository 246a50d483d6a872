//! The invariants of ARCHITECTURE.md that can be checked by reading the code.

use crate::helpers::root;

fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn the_pure_crates_do_no_io() {
    let forbidden = [
        "std::fs",
        "std::process",
        "std::net",
        "SystemTime",
        "Instant::now",
        "tokio",
        "reqwest",
        "git2",
        "std::env",
    ];
    let mut files = Vec::new();
    for dir in [
        "harness/core/src",
        "harness/config/src",
        "harness/report/src",
        "policies/src",
        "harness/replay/src",
    ] {
        rust_files(&root().join(dir), &mut files);
    }
    assert!(files.len() > 20);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for word in forbidden {
            assert!(
                !text.contains(word),
                "{} uses `{word}`: the core, the policies and the replay engine do no IO",
                f.display()
            );
        }
    }
}

#[test]
fn serde_yaml_is_called_in_one_function() {
    let mut files = Vec::new();
    for dir in ["harness", "policies", "tests"] {
        rust_files(&root().join(dir), &mut files);
    }
    let calls: Vec<String> = files
        .iter()
        .filter(|f| {
            !f.components()
                .any(|c| c.as_os_str() == "target" || c.as_os_str() == "fuzz")
        })
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            text.lines()
                .filter(|l| l.contains("serde_yaml::from") || l.contains("serde_yaml::to"))
                .map(|l| format!("{}: {}", f.display(), l.trim()))
                .collect::<Vec<_>>()
        })
        .filter(|l| !l.contains("architecture.rs"))
        .collect();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert!(
        calls[0].contains("harness/config/src/yaml.rs"),
        "{calls:#?}"
    );
}
