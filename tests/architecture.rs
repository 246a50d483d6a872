//! The invariants of ARCHITECTURE.md that can be checked by reading the code.

use crate::helpers::root;

mod messages;

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
        "harness/import/src",
    ] {
        rust_files(&root().join(dir), &mut files);
    }
    // The importers' one IO module: walking folders and reading files.
    files.retain(|f| !f.ends_with("harness/import/src/fs.rs"));
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

/// The Cargo manifests under `dirs`, without build output.
fn manifests(dirs: &[&str]) -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() && p.file_name().is_some_and(|n| n != "target") {
                walk(&p, out);
            } else if p.file_name().is_some_and(|n| n == "Cargo.toml") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    for dir in dirs {
        walk(&root().join(dir), &mut out);
    }
    out
}

/// Only the binary depends on clap, only harness-config on serde_yaml; rustc does the rest (a
/// crate cannot name a crate its manifest does not list).
#[test]
fn only_the_binary_names_clap_and_only_config_names_serde_yaml() {
    let files = manifests(&["harness", "policies", "tests"]);
    assert!(files.len() > 9, "{files:?}");
    for f in &files {
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        let text = std::fs::read_to_string(f).unwrap();
        let depends = |dep: &str| text.lines().any(|l| l.trim_start().starts_with(dep));
        if rel != "harness/cli/Cargo.toml" {
            assert!(
                !depends("clap"),
                "{rel} depends on clap: only the binary parses the command line"
            );
        }
        if rel != "harness/config/Cargo.toml" {
            assert!(
                !depends("serde_yaml"),
                "{rel} depends on serde_yaml: only harness-config reads YAML"
            );
        }
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

/// Whether a long file says why it is long: a `// Long: …` or `//! Long: …` line among its
/// first 40 lines.
fn file_says_why_long(lines: &[&str]) -> bool {
    lines.iter().take(40).any(|l| {
        let t = l.trim_start();
        t.starts_with("// Long: ") || t.starts_with("//! Long: ")
    })
}

/// Whether the function that starts at `at` says why it is long: a `// Long: …` line (or
/// `/// Long: …` in its doc) among the comments and attributes just above it.
fn function_says_why_long(lines: &[&str], at: usize) -> bool {
    lines[..at]
        .iter()
        .rev()
        .map(|l| l.trim_start())
        .take_while(|t| t.starts_with("//") || t.starts_with("#["))
        .any(|t| t.starts_with("// Long: ") || t.starts_with("/// Long: "))
}

#[test]
fn long_files_and_functions_say_why() {
    // Size is guidance, not a cap: a file past 1,000 lines or a function past 120 says why it
    // is long (`// Long: …`), so a reader sees the reason and a reviewer can weigh it; split it
    // when there is none.
    let mut unexplained = Vec::new();
    for f in sources(&["harness", "policies", "tests"]) {
        let text = std::fs::read_to_string(&f).unwrap();
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() > 1_000 && !file_says_why_long(&lines) {
            unexplained.push(format!("{rel}: {} lines", lines.len()));
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
                if n + 2 > 120 && !function_says_why_long(&lines, i) {
                    unexplained.push(format!("{rel}:{}: a function of {} lines", i + 1, n + 2));
                }
            }
        }
    }
    assert!(
        unexplained.is_empty(),
        "long, with no `// Long: …` reason (say why, or split): {unexplained:#?}"
    );
}

#[test]
fn the_size_reasons_are_read() {
    // The rule above must see a reason where one is given and none where none is.
    let file: Vec<&str> = "//! A module.\n// Long: one table.\nfn a() {}"
        .lines()
        .collect();
    assert!(file_says_why_long(&file));
    assert!(!file_says_why_long(&["//! A module.", "fn a() {}"]));
    let f = [
        "/// Does a.",
        "// Long: one match over every event.",
        "#[inline]",
        "fn a() {",
    ];
    assert!(function_says_why_long(&f, 3));
    let g = [
        "// Long: for the other one.",
        "fn b() {}",
        "/// Does a.",
        "fn a() {",
    ];
    assert!(!function_says_why_long(&g, 3));
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
/// `// string error: why` comment on the line above), and so has the binary; the runner is held
/// at its count until it gets its own types.
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
        ("harness/runner/src", 0, true),
        ("harness/cli/src", 0, true),
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

/// The top-level modules of the runner that a file's code names (`crate::NAME`,
/// `crate::{A, B}`), in the file's code outside comments and its `#[cfg(test)] mod tests`; with
/// `folder`, the modules of that folder module it names (`crate::FOLDER::NAME`).
fn names_in_runner(text: &str, folder: Option<&str>) -> std::collections::BTreeSet<String> {
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
    let prefix = match folder {
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

/// The first circle of a graph, as its nodes in order, if it has one.
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

/// Who imports whom among the runner's top-level modules (`folder: None`, folder modules
/// included) or among one folder module's modules; test files and test modules left out.
fn runner_imports(
    folder: Option<&str>,
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let src = root().join("harness/runner/src");
    let dir = folder.map_or(src.clone(), |w| src.join(w));
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
        let module = parts[0].clone();
        let text = std::fs::read_to_string(&f).unwrap();
        let names = names_in_runner(&text, folder);
        edges
            .entry(module.clone())
            .or_default()
            .extend(names.into_iter().filter(|n| *n != module));
    }
    edges
}

#[test]
fn the_runner_has_no_import_circle() {
    let modules = runner_imports(None);
    // The scan sees the runner's arrows: a cell runs in the execution modules with the tools.
    for (from, to) in [
        ("cell", "execution"),
        ("cell", "tools"),
        ("tools", "execution"),
    ] {
        assert!(
            modules[from].contains(to),
            "{from} -> {to} not seen: {modules:?}"
        );
    }
    assert_eq!(
        first_circle(&modules),
        None,
        "a circle of imports among the runner's modules"
    );
    // Execution is the ground the tools and the session loop stand on: it names no other
    // module of the runner but the progress sink.
    let up: Vec<&String> = modules["execution"]
        .iter()
        .filter(|r| *r != "progress")
        .collect();
    assert!(up.is_empty(), "execution imports modules above it: {up:?}");
    for folder in [
        "execution",
        "judge",
        "backends",
        "tools",
        "html",
        "sessions",
    ] {
        let inside = runner_imports(Some(folder));
        assert_eq!(
            first_circle(&inside),
            None,
            "a circle of imports inside {folder}/"
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
        "harness/core/src/driver/",
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

/// A string literal of Rust code: its text, its line (1-based), the innermost `[` it stands in
/// (numbered in order of opening) and whether a `|` joins it to the literal before it.
struct Literal {
    text: String,
    line: usize,
    bracket: Option<usize>,
    joined: bool,
}

/// The string literals of `code` (comments, char literals and lifetimes passed over).
fn literals(code: &str) -> Vec<Literal> {
    let c: Vec<char> = code.chars().collect();
    let (mut out, mut brackets, mut opened) = (Vec::new(), Vec::new(), 0usize);
    let (mut i, mut line) = (0, 1);
    // What came last, white space and comments aside: a literal (`'s'`), a lone `|` (`'|'`),
    // anything else (`'o'`); and before that.
    let (mut last, mut before) = ('o', 'o');
    let step = |last: &mut char, before: &mut char, now: char| {
        *before = *last;
        *last = now;
    };
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            i += 2;
            while i < c.len() && !(c[i] == '*' && c.get(i + 1) == Some(&'/')) {
                line += usize::from(c[i] == '\n');
                i += 1;
            }
            i += 2;
        } else if ch == '"' || (ch == 'r' && matches!(next, Some('"' | '#'))) {
            // A string, or a raw string `r#"…"#` or `br"…"` (an `r` ending a name is not one).
            let raw = ch == 'r';
            let ident = |k: usize| c[k].is_alphanumeric() || c[k] == '_';
            let named = i > 0 && ident(i - 1) && !(c[i - 1] == 'b' && (i < 2 || !ident(i - 2)));
            if raw && named {
                i += 1;
                step(&mut last, &mut before, 'o');
                continue;
            }
            let hashes = if raw {
                c[i + 1..].iter().take_while(|x| **x == '#').count()
            } else {
                0
            };
            let (start_line, mut j) = (line, i + usize::from(raw) + hashes + 1);
            let mut text = String::new();
            while j < c.len() {
                let closes = c[j] == '"' && c[j + 1..].iter().take(hashes).all(|x| *x == '#');
                if closes && c[j + 1..].len() >= hashes {
                    break;
                }
                if c[j] == '\\' && !raw {
                    text.push(c[j]);
                    j += 1;
                }
                line += usize::from(c[j] == '\n');
                text.push(c[j]);
                j += 1;
            }
            i = j + 1 + hashes;
            out.push(Literal {
                text,
                line: start_line,
                bracket: brackets.last().copied(),
                joined: last == '|' && before == 's',
            });
            step(&mut last, &mut before, 's');
        } else if ch == '\'' {
            // A char literal (`'x'`, `'\n'`) or a lifetime (`'a`).
            i += match (next, c.get(i + 2)) {
                (Some('\\'), _) => 3 + c[i + 3..].iter().take_while(|x| **x != '\'').count() + 1,
                (_, Some('\'')) => 3,
                _ => 1,
            };
            step(&mut last, &mut before, 'o');
        } else {
            match ch {
                '[' => {
                    opened += 1;
                    brackets.push(opened);
                }
                ']' => {
                    brackets.pop();
                }
                _ => {}
            }
            let lone_bar = ch == '|' && next != Some('|') && next != Some('=');
            i += if ch == '|' && !lone_bar { 2 } else { 1 };
            step(&mut last, &mut before, if lone_bar { '|' } else { 'o' });
        }
    }
    out
}

/// The lines of `code` where two or more of `names` stand in one list: string literals in the
/// same `[…]` (an array, a slice, a `vec!`), or joined by `|` (a match's or-pattern).
fn lists_of_names(code: &str, names: &[&str]) -> Vec<usize> {
    let lits = literals(code);
    let mut groups: Vec<(usize, std::collections::BTreeSet<&str>)> = Vec::new();
    let mut by_bracket = std::collections::BTreeMap::new();
    let mut chain: Option<usize> = None;
    for l in &lits {
        let name = names.iter().find(|n| **n == l.text).copied();
        // An or-pattern: a chain of literals joined by `|`.
        chain = match chain {
            Some(g) if l.joined => Some(g),
            _ => {
                groups.push((l.line, Default::default()));
                Some(groups.len() - 1)
            }
        };
        if let Some(n) = name {
            groups[chain.unwrap()].1.insert(n);
            if let Some(b) = l.bracket {
                let g = *by_bracket.entry(b).or_insert_with(|| {
                    groups.push((l.line, Default::default()));
                    groups.len() - 1
                });
                groups[g].1.insert(n);
            }
        }
    }
    let mut lines: Vec<usize> = groups
        .into_iter()
        .filter(|(_, set)| set.len() >= 2)
        .map(|(line, _)| line)
        .collect();
    lines.sort_unstable();
    lines.dedup();
    lines
}

#[test]
fn a_list_of_tool_names_is_found() {
    let names = ["read_file", "grep", "shell", "edit_file", "write_file"];
    let found = |code: &str| lists_of_names(code, &names);
    assert_eq!(found(r#"const R: [&str; 2] = ["read_file", "grep"];"#), [1]);
    assert_eq!(
        found("let x = 1;\nlet v = vec![\n  (\"grep\", 1),\n  (\"shell\", 2),\n];"),
        [3]
    );
    assert_eq!(
        found(r#"match n { "edit_file" | "write_file" => 1, _ => 0 }"#),
        [1]
    );
    assert_eq!(found(r#"matches!(n, "read_file" | "Read" | "grep")"#), [1]);
    assert_eq!(found(r#"let t = &["read_file", r"grep"];"#), [1]);
    // One tool name in a list or a pattern is not a list of them.
    assert!(found(r#"["cat", "ls", "grep"]; "cat" | "ls" | "grep" => 1"#).is_empty());
    assert!(found(r#"let a = ["grep"]; let b = ["shell"]; let c = ["x", "grep"];"#).is_empty());
    // Arms of one tool each, comparisons, comments, char literals and other strings are not.
    assert!(found("match n {\n \"grep\" => 1,\n \"shell\" => 2,\n _ => 3 }").is_empty());
    assert!(
        found(r#"a == "grep" || b == "shell"; x |= y; f(|c| c == "shell", "grep")"#).is_empty()
    );
    assert!(found("// [\"grep\", \"shell\"]\n/* \"grep\" | \"shell\" */ let c = '|';").is_empty());
    assert!(found(r##"let s = r#"["grep", "shell"]"#; let q = "a \" | \" b";"##).is_empty());
    assert!(found(r#"let s = "grep"; let t: &'static str = "shell";"#).is_empty());
    assert!(found(r##"let q = ['\'', '"']; let b = br#"["grep", "shell"]"#; x.br"##).is_empty());
    assert_eq!(
        found(r#"let q = '\''; let u = '\u{22}'; ["grep", "shell"]"#),
        [1]
    );
}

/// The workspace tools are described once (`harness_core::tools`): no other list of their
/// names in library code — no array or slice of them, no or-pattern over them. A place that
/// needs a set of tools asks the descriptor (`reads_only`, `path_arg`, `sim_reruns`, …); a
/// single tool's own behaviour may still name it.
#[test]
fn the_tool_descriptor_is_the_only_list_of_tool_names() {
    let names = harness_core::tools::names();
    assert_eq!(names.len(), harness_core::tools::TOOLS.len());
    let mut found = Vec::new();
    let mut read = 0;
    for f in sources(&["harness", "policies"]) {
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let library = rel.contains("/src/") && name != "tests.rs" && !name.ends_with("_tests.rs");
        if !library || rel == "harness/core/src/tools.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        // A file's tests sit at its end, after `#[cfg(test)]`.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        read += 1;
        for line in lists_of_names(code, &names) {
            found.push(format!("{rel}:{line}"));
        }
    }
    assert!(read > 100, "{read} files read");
    assert!(
        found.is_empty(),
        "a list of workspace tool names outside harness_core::tools (ask the descriptor instead): {found:#?}"
    );
}

/// The real agents and the output formats are described once each (`harness_runner::agents`'
/// `AGENTS`, the CLI's `format::FORMATS`): no other list of their names in library or binary
/// code — no array or slice of them, no or-pattern over them — so a new agent or format cannot
/// be left out of a list written by hand. The transcript formats of the import crate (which
/// agent wrote a session file) are another set, and exempt; format words are looked for where
/// output is printed (the CLI and the report crate), since elsewhere `md` or `json` is a file
/// extension.
#[test]
fn agent_and_format_names_are_listed_once() {
    let agents: Vec<&str> = harness_runner::agents::AGENTS
        .iter()
        .map(|a| a.name())
        .collect();
    let formats = ["table", "md", "csv", "json", "junit", "svg", "html"];
    let mut found = Vec::new();
    for f in sources(&["harness", "policies"]) {
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let library = rel.contains("/src/") && name != "tests.rs" && !name.ends_with("_tests.rs");
        if !library || rel.starts_with("harness/import/") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let prints = rel.starts_with("harness/cli/") || rel.starts_with("harness/report/");
        for (what, names) in [("agent", &agents[..]), ("format", &formats[..])] {
            if what == "format" && !prints {
                continue;
            }
            for line in lists_of_names(code, names) {
                found.push(format!("{what}: {rel}:{line}"));
            }
        }
    }
    assert!(
        agents.len() >= 3,
        "the agents' names were not read: {agents:?}"
    );
    assert!(
        found.is_empty(),
        "a list of agent or format names outside their descriptors' lists: {found:#?}"
    );
}

/// The lines of `code` (library code of the CLI file `rel`) that read an environment variable,
/// from 1; the terminal's width (`COLUMNS`, read in `view.rs`) is presentation and allowed.
fn environment_reads(rel: &str, code: &str) -> Vec<usize> {
    code.lines()
        .enumerate()
        .filter(|(_, l)| {
            let l = l.split("//").next().unwrap_or("");
            l.contains("env::var") && !(rel.ends_with("/view.rs") && l.contains("\"COLUMNS\""))
        })
        .map(|(i, _)| i + 1)
        .collect()
}

#[test]
fn an_environment_read_in_the_cli_is_found() {
    let code = "fn a() {\n    let k = std::env::var(\"OPENAI_API_KEY\");\n    // env::var in a comment\n    let h = env::var_os(\"HOME\");\n    let c = std::env::var(\"COLUMNS\");\n}";
    assert_eq!(environment_reads("harness/cli/src/run.rs", code), [2, 4, 5]);
    assert_eq!(environment_reads("harness/cli/src/view.rs", code), [2, 4]);
}

/// The command line reads no environment variable itself (but the terminal's width): an API key
/// or a setting is read by the library, through the lookup the command passes it
/// (`harness_runner::settings::process_env`), where a test gives a map instead.
#[test]
fn the_cli_reads_the_environment_through_the_library() {
    let mut found = Vec::new();
    let files = sources(&["harness/cli/src"]);
    assert!(files.len() > 20, "{} files of the CLI", files.len());
    for f in files {
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        let text = std::fs::read_to_string(&f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for line in environment_reads(&rel, code) {
            found.push(format!("{rel}:{line}"));
        }
    }
    assert!(
        found.is_empty(),
        "environment variables read in the CLI (read them in the library, through a lookup the command passes): {found:#?}"
    );
}

/// The public modules declared in `code` (one Rust file), as `(line from 1, name)`: `pub mod x;`
/// and `pub mod x {`, not `pub(crate) mod`.
fn public_modules(code: &str) -> Vec<(usize, String)> {
    code.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let rest = l.trim_start().strip_prefix("pub mod ")?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            Some((i + 1, name))
        })
        .collect()
}

#[test]
fn a_public_module_is_found_and_a_crate_private_one_is_not() {
    let code = "pub mod a;\n    pub mod b {\npub(crate) mod c;\nmod d;\n// pub mod e;";
    let found: Vec<String> = public_modules(code).into_iter().map(|(_, n)| n).collect();
    assert_eq!(found, ["a", "b"]);
}

/// A library crate's surface is chosen in its `lib.rs`: a public module is one of its features,
/// declared there and named in the crate's documentation; every module below is private to the
/// crate, and what its parent hands out is re-exported by `pub use` (so rustc's dead-code lint
/// sees everything else).
#[test]
fn library_crates_keep_their_insides_private() {
    let crates = [
        "harness/config",
        "harness/core",
        "harness/import",
        "harness/replay",
        "harness/report",
        "harness/runner",
        "harness/wire",
        "policies",
    ];
    let mut found = Vec::new();
    for krate in crates {
        let src = root().join(krate).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in files {
            let rel = f.strip_prefix(root()).unwrap().display().to_string();
            let text = std::fs::read_to_string(&f).unwrap();
            let modules = public_modules(&text);
            if f != src.join("lib.rs") {
                found.extend(
                    modules
                        .iter()
                        .map(|(l, n)| format!("{rel}:{l}: `pub mod {n}` below the crate root")),
                );
                continue;
            }
            let docs: String = text
                .lines()
                .filter(|l| l.starts_with("//!"))
                .collect::<Vec<_>>()
                .join("\n");
            for (l, n) in modules {
                if !docs.contains(&format!("[`{n}`]")) {
                    found.push(format!(
                        "{rel}:{l}: public module `{n}` is not named in the crate's documentation"
                    ));
                }
            }
        }
    }
    assert!(found.is_empty(), "insides made public: {found:#?}");
}
