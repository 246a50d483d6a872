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
        "harness/wire/src",
    ] {
        rust_files(&root().join(dir), &mut files);
    }
    assert!(files.len() > 20);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for word in forbidden {
            assert!(
                !text.contains(word),
                "{} uses `{word}`: the core, config, report, the policies, the importers (but fs.rs), the replay engine and the wire formats do no IO",
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

/// The Rust files under `dirs`, without build output and fuzz workspaces.
fn sources(dirs: &[&str]) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for dir in dirs {
        rust_files(&root().join(dir), &mut files);
    }
    files.retain(|f| {
        !f.components()
            .any(|c| c.as_os_str() == "target" || c.as_os_str() == "fuzz")
    });
    files
}

/// Whether `text` names the crate `name` in code (a path or a `use`), not only in a comment.
fn names_crate(text: &str, name: &str) -> bool {
    text.lines().any(|l| {
        let code = l.split("//").next().unwrap_or("");
        code.contains(&format!("{name}::")) || code.contains(&format!("use {name}"))
    })
}

#[test]
fn only_the_binary_names_clap_and_only_config_names_serde_yaml() {
    let files = sources(&["harness", "policies", "tests"]);
    assert!(files.len() > 40);
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        if !rel.starts_with("harness/cli/") {
            assert!(
                !names_crate(&text, "clap"),
                "{rel} names clap: only the binary parses the command line"
            );
        }
        if !rel.starts_with("harness/config/") && !rel.ends_with("architecture.rs") {
            assert!(
                !names_crate(&text, "serde_yaml"),
                "{rel} names serde_yaml: only harness-config reads YAML"
            );
        }
    }
    for (manifest, dep) in [
        ("harness/core/Cargo.toml", "clap"),
        ("harness/config/Cargo.toml", "clap"),
        ("harness/report/Cargo.toml", "clap"),
        ("harness/runner/Cargo.toml", "clap"),
        ("harness/replay/Cargo.toml", "clap"),
        ("harness/import/Cargo.toml", "clap"),
        ("policies/Cargo.toml", "clap"),
        ("harness/core/Cargo.toml", "serde_yaml"),
        ("harness/report/Cargo.toml", "serde_yaml"),
        ("harness/runner/Cargo.toml", "serde_yaml"),
        ("harness/cli/Cargo.toml", "serde_yaml"),
    ] {
        let text = std::fs::read_to_string(root().join(manifest)).unwrap();
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with(dep)),
            "{manifest} depends on {dep}"
        );
    }
}

#[test]
fn the_crates_depend_inward() {
    // The domain depends on no other foldbench crate; the readers and the writers on the domain
    // only; the IO shell never on the binary.
    let deps = |manifest: &str| -> Vec<String> {
        let text = std::fs::read_to_string(root().join(manifest)).unwrap();
        text.lines()
            .filter_map(|l| {
                l.split_once(".workspace = true")
                    .map(|(n, _)| n.trim().to_string())
            })
            .filter(|n| n.starts_with("harness-") || n == "policies" || n == "foldbench")
            .collect()
    };
    assert_eq!(
        deps("harness/core/Cargo.toml"),
        vec!["harness-config"],
        "the core's only foldbench dependency is a dev-dependency (its sim tests read specs)"
    );
    let core = std::fs::read_to_string(root().join("harness/core/Cargo.toml")).unwrap();
    let runtime = core
        .split("[dependencies]")
        .nth(1)
        .and_then(|s| s.split("[dev-dependencies]").next())
        .unwrap();
    assert!(!runtime.contains("harness-"), "{runtime}");
    assert_eq!(deps("harness/config/Cargo.toml"), vec!["harness-core"]);
    assert_eq!(deps("harness/report/Cargo.toml"), vec!["harness-core"]);
    assert_eq!(deps("harness/wire/Cargo.toml"), vec!["harness-core"]);
    assert!(!deps("harness/runner/Cargo.toml").contains(&"foldbench".to_string()));
    // The runner's library needs no replay: the replay page is the replay crate's own (only the
    // runner's example uses the replay crate).
    let runner = std::fs::read_to_string(root().join("harness/runner/Cargo.toml")).unwrap();
    let runtime = runner
        .split("[dependencies]")
        .nth(1)
        .and_then(|s| s.split("[dev-dependencies]").next())
        .unwrap();
    assert!(runtime.contains("harness-import"), "{runtime}");
    assert!(!runtime.contains("harness-replay"), "{runtime}");
}

#[test]
fn files_and_functions_fit() {
    // Past 1,000 lines a file becomes a folder module; past 120 lines a function is split into
    // named phases.
    let mut too_long = Vec::new();
    for f in sources(&["harness", "policies", "tests"]) {
        let text = std::fs::read_to_string(&f).unwrap();
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() > 1_000 {
            too_long.push(format!("{rel}: {} lines", lines.len()));
        }
        for (i, l) in lines.iter().enumerate() {
            let indent = l.len() - l.trim_start().len();
            let code = l.trim_start();
            let is_fn = [
                "fn ",
                "pub fn ",
                "pub(crate) fn ",
                "pub(super) fn ",
                "async fn ",
                "pub async fn ",
                "pub(crate) async fn ",
                "pub(super) async fn ",
            ]
            .iter()
            .any(|p| code.starts_with(p));
            if !is_fn || l.trim_end().ends_with(';') {
                continue;
            }
            let close = format!("{}}}", &l[..indent]);
            if let Some(n) = lines[i + 1..].iter().position(|x| *x == close) {
                if n + 2 > 120 {
                    too_long.push(format!("{rel}:{}: a function of {} lines", i + 1, n + 2));
                }
            }
        }
    }
    assert!(too_long.is_empty(), "{too_long:#?}");
}

/// The library writes to standard error through one function (`progress::say`, which keeps the
/// progress bar whole), and the pure crates not at all; the binary's own messages are its own.
#[test]
fn the_library_writes_to_stderr_in_one_place() {
    let mut files = Vec::new();
    for dir in [
        "harness/runner/src",
        "harness/core/src",
        "harness/config/src",
        "harness/report/src",
        "harness/replay/src",
        "harness/wire/src",
        "harness/import/src",
        "policies/src",
    ] {
        rust_files(&root().join(dir), &mut files);
    }
    let mut found = Vec::new();
    for f in &files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "tests.rs" || name.ends_with("_tests.rs") || name == "progress.rs" {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        // A file's tests sit at its end, after `#[cfg(test)]`.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (i, line) in code.lines().enumerate() {
            if line.contains("eprintln!(") || line.contains("eprint!(") {
                found.push(format!("{}:{}", f.display(), i + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "standard error written outside harness_runner::progress::say: {found:?}"
    );
}

/// The lines of library code (a file's tests, after `#[cfg(test)]`, and test files left out)
/// that return a `Result` whose error is a `String`, with the line before each.
fn string_errors(dir: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for f in sources(&[dir]) {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let lines: Vec<&str> = code.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            // `Result<…, String>` within one signature or type: no `;` or `{` in between.
            let hit = line.match_indices("Result<").any(|(at, _)| {
                let rest = &line[at..];
                let end = rest.find([';', '{']).unwrap_or(rest.len());
                rest[..end].contains(", String>")
            });
            if hit {
                let rel = f.strip_prefix(root()).unwrap().display();
                let above = if i > 0 { lines[i - 1] } else { "" };
                found.push((format!("{rel}:{}", i + 1), above.to_string()));
            }
        }
    }
    found
}

/// Errors are types (`thiserror`, sources kept): each crate's `Result<_, String>` in library
/// code stays within its budget. The inner crates have none but the justified ones (a
/// `// string error: why` comment on the line above); the runner and the binary are held at
/// their count until they get their own types.
#[test]
fn string_errors_stay_within_their_budget() {
    // (folder, budget, whether each needs its justification)
    let budgets = [
        ("policies/src", 0, true),
        ("harness/config/src", 0, true),
        ("harness/core/src", 0, true),
        ("harness/wire/src", 0, true),
        ("harness/report/src", 0, true),
        ("harness/replay/src", 0, false),
        ("harness/import/src", 0, false),
        ("harness/runner/src", 3, false),
        ("harness/cli/src", 35, false),
    ];
    let mut over = Vec::new();
    for (dir, budget, justified) in budgets {
        let found = string_errors(dir);
        if found.len() > budget {
            let lines: Vec<&str> = found.iter().map(|(at, _)| at.as_str()).collect();
            over.push(format!(
                "{dir}: {} string errors, budget {budget}; give the new ones an error type (thiserror): {lines:?}",
                found.len()
            ));
        }
        if justified {
            for (at, above) in &found {
                if !above.trim_start().starts_with("// string error:") {
                    over.push(format!(
                        "{at}: a string error without `// string error: why` on the line above"
                    ));
                }
            }
        }
    }
    assert!(over.is_empty(), "{over:#?}");
}

/// The rooms of the runner that a file's code names (`crate::NAME`, `crate::{A, B}`), in the
/// file's code outside comments and its `#[cfg(test)] mod tests`; with `wing`, the modules of
/// that wing it names (`crate::WING::NAME`).
fn names_in_runner(text: &str, wing: Option<&str>) -> std::collections::BTreeSet<String> {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let test_mod = lines
            .peek()
            .is_some_and(|n| n.trim_start().starts_with("mod tests"));
        if line.trim() == "#[cfg(test)]" && test_mod {
            break;
        }
        code.push_str(line.split("//").next().unwrap_or(""));
        code.push('\n');
    }
    let prefix = match wing {
        Some(w) => format!("crate::{w}::"),
        None => "crate::".to_string(),
    };
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect()
    };
    let mut names = std::collections::BTreeSet::new();
    for (at, _) in code.match_indices(&prefix) {
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a::X, b}`: the first name of each part at the group's own depth.
            let (mut depth, mut part) = (0usize, String::new());
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        names.insert(ident(&part));
                        part.clear();
                        continue;
                    }
                    _ => {}
                }
                part.push(c);
            }
            names.insert(ident(&part));
        } else {
            names.insert(ident(rest));
        }
    }
    names.remove("");
    names
}

/// The first circle of a graph, as its rooms in order, if it has one.
fn first_circle(
    edges: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Option<Vec<String>> {
    fn visit(
        at: &str,
        edges: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == at) {
            let mut circle = path[i..].to_vec();
            circle.push(at.to_string());
            return Some(circle);
        }
        if !done.insert(at.to_string()) {
            return None;
        }
        path.push(at.to_string());
        for next in edges.get(at).into_iter().flatten() {
            if let Some(c) = visit(next, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = std::collections::BTreeSet::new();
    edges
        .keys()
        .find_map(|k| visit(k, edges, &mut Vec::new(), &mut done))
}

/// Who imports whom among the runner's rooms (`wing: None`: its top-level modules and wings) or
/// among one wing's modules; test files and test modules left out.
fn runner_imports(
    wing: Option<&str>,
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let src = root().join("harness/runner/src");
    let dir = wing.map_or(src.clone(), |w| src.join(w));
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let mut edges = std::collections::BTreeMap::<String, std::collections::BTreeSet<String>>::new();
    for f in files {
        let rel = f.strip_prefix(&dir).unwrap().with_extension("");
        let parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let last = parts.last().unwrap();
        if last == "tests" || last.ends_with("_tests") || parts == ["lib"] || parts == ["mod"] {
            continue;
        }
        let room = parts[0].clone();
        let text = std::fs::read_to_string(&f).unwrap();
        let names = names_in_runner(&text, wing);
        edges
            .entry(room.clone())
            .or_default()
            .extend(names.into_iter().filter(|n| *n != room));
    }
    edges
}

#[test]
fn the_runner_has_no_import_circle() {
    let rooms = runner_imports(None);
    // The scan sees the runner's arrows: a cell runs in the execution wing with the tools.
    for (from, to) in [
        ("cell", "execution"),
        ("cell", "tools"),
        ("tools", "execution"),
    ] {
        assert!(
            rooms[from].contains(to),
            "{from} -> {to} not seen: {rooms:?}"
        );
    }
    assert_eq!(
        first_circle(&rooms),
        None,
        "a circle of imports among the runner's rooms"
    );
    // Execution is the ground the tools and the session loop stand on: it names no other room
    // of the runner but the progress sink.
    let up: Vec<&String> = rooms["execution"]
        .iter()
        .filter(|r| *r != "progress")
        .collect();
    assert!(up.is_empty(), "execution imports rooms above it: {up:?}");
    for wing in ["execution", "judge", "backends", "tools", "html"] {
        let modules = runner_imports(Some(wing));
        assert_eq!(
            first_circle(&modules),
            None,
            "a circle of imports inside {wing}/"
        );
    }
    assert!(runner_imports(Some("execution"))["workspace"].contains("template"));
}

/// Whether a line of code names `ty::` as a type of its own (`Plan::`, not `CellPlan::`).
fn names_variant(code: &str, ty: &str) -> bool {
    let pat = format!("{ty}::");
    code.match_indices(&pat).any(|(at, _)| {
        !code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[test]
fn a_policys_decisions_are_interpreted_by_the_driver_alone() {
    // `Plan` and `SpliceKind` are matched in one place, `harness_core::driver`, which every mode
    // (the live cell loop, the replay engine, the proxy, the judgement replay) hosts; the types'
    // own module and the policies that make them may name them anywhere. Elsewhere they may be
    // built (a policy of the runner's or of a test), never matched: no line that names a variant
    // in an arm (`=>`), an `if let`/`while let`/`let … else`, or a `matches!`.
    let allowed = [
        "harness/core/src/driver.rs",
        "harness/core/src/driver_tests.rs",
        "harness/core/src/policy.rs",
        "policies/",
    ];
    let mut found = Vec::new();
    for f in sources(&["harness", "policies", "tests", "examples"]) {
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        if allowed.iter().any(|a| rel.starts_with(a)) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, l) in text.lines().enumerate() {
            let code = l.split("//").next().unwrap_or("");
            if !names_variant(code, "Plan") && !names_variant(code, "SpliceKind") {
                continue;
            }
            let t = code.trim_start();
            let matched = code.contains("=>")
                || t.starts_with("if let ")
                || t.starts_with("} else if let ")
                || t.starts_with("while let ")
                || (t.starts_with("let ") && code.contains(" else"))
                || code.contains("matches!(");
            if matched {
                found.push(format!("{rel}:{}: {}", i + 1, l.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a policy's decisions matched outside harness_core::driver (host the driver instead): {found:#?}"
    );
}
