//! What a recorded tool call did, as far as the measure after a loss needs it: read a file,
//! edit one, search, run a command, or something else — for every agent's tool names, and for
//! the shell commands agents read files with (`cat`, `sed -n`, `nl`, `head`).

use harness_core::ToolCall;

/// What one tool call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Act {
    /// Read these files (workspace-relative where the session's folder is known).
    Read(Vec<String>),
    /// Changed these files (an edit, a write, a patch, `sed -i`, a redirect).
    Edit(Vec<String>),
    /// Searched or listed (`grep`, `rg`, `find`, `ls`, Claude Code's `Grep` and `Glob`).
    Search,
    /// Ran a command: its text and the folder it ran in, as the key of an identical re-run.
    Command(String),
    /// Anything else (a plan update, a web search, a subagent).
    Other,
}

/// Other agents' tools that read one file, by name (any case); foldbench's own are read through
/// their descriptors ([`harness_core::tools`]).
const READ_TOOLS: &[&str] = &["read", "notebookread", "view_file", "open_file"];
/// Other agents' tools that search or list (Claude Code's `Grep` is read through foldbench's
/// `grep` descriptor: the same name in another case).
const SEARCH_TOOLS: &[&str] = &[
    "glob",
    "ls",
    "find_file",
    "search_dir",
    "search_file",
    "find",
];
/// Other agents' tools that run a shell command.
const SHELL_TOOLS: &[&str] = &[
    "bash",
    "exec_command",
    "shell_command",
    "local_shell",
    "execute_bash",
    "run_command",
    "run_shell_command",
];
/// Programs that print a file.
const READ_PROGRAMS: &[&str] = &[
    "cat", "head", "tail", "sed", "nl", "less", "more", "bat", "batcat", "view",
];
/// Programs that search or list.
const SEARCH_PROGRAMS: &[&str] = &[
    "rg", "grep", "egrep", "ag", "ack", "find", "fd", "ls", "tree",
];

/// What `call` did; `cwd` is the session's working folder, which relative and absolute paths
/// are both made relative to, so `/w/src/a.rs` and `src/a.rs` name one file.
pub(crate) fn classify(call: &ToolCall, cwd: Option<&str>) -> Act {
    let name = call.name.to_ascii_lowercase();
    let workdir = call
        .str_arg("workdir")
        .or_else(|| call.str_arg("cwd"))
        .or(cwd);
    // foldbench's own tools (and Claude Code's `Grep`, the same name), by their descriptors.
    if let Some(t) = harness_core::tools::find(&name) {
        use harness_core::tools::Tool;
        let path = || call.str_arg("path").map(|p| relative(p, workdir, cwd));
        return match t.tool {
            Tool::ReadFile => path().map_or(Act::Other, |p| Act::Read(vec![p])),
            Tool::ListFiles | Tool::Grep => Act::Search,
            Tool::EditFile | Tool::WriteFile => path().map_or(Act::Other, |p| Act::Edit(vec![p])),
            Tool::Shell => shell_call(call, workdir, cwd),
        };
    }
    // OpenHands' editor tool: `view` reads, the other commands write.
    if name.contains("str_replace") || name == "editor" {
        let path = call.str_arg("path").map(|p| relative(p, workdir, cwd));
        return match (call.str_arg("command"), path) {
            (Some("view"), Some(p)) => Act::Read(vec![p]),
            (_, Some(p)) => Act::Edit(vec![p]),
            (_, None) => Act::Other,
        };
    }
    if crate::hidden::index::is_edit(&name) {
        let mut paths = Vec::new();
        crate::hidden::index::edited_paths(call, &mut paths);
        if paths.is_empty() {
            // `TodoWrite`, `NotebookEdit` of no path: nothing of the workspace named.
            return Act::Other;
        }
        return Act::Edit(paths.iter().map(|p| relative(p, workdir, cwd)).collect());
    }
    if READ_TOOLS.contains(&name.as_str()) {
        let path = ["file_path", "path", "notebook_path", "filename"]
            .iter()
            .find_map(|k| call.str_arg(k));
        return match path {
            Some(p) => Act::Read(vec![relative(p, workdir, cwd)]),
            None => Act::Other,
        };
    }
    if SEARCH_TOOLS.contains(&name.as_str()) {
        return Act::Search;
    }
    if SHELL_TOOLS.contains(&name.as_str()) {
        return shell_call(call, workdir, cwd);
    }
    Act::Other
}

/// A shell tool's call: its `command` (or `cmd`), a string or Codex's `["bash", "-lc", SCRIPT]`.
fn shell_call(call: &ToolCall, workdir: Option<&str>, cwd: Option<&str>) -> Act {
    let command = match call.args.get("command").or_else(|| call.args.get("cmd")) {
        Some(serde_json::Value::String(s)) => s.clone(),
        // `["bash", "-lc", "cat x"]`: the script, else the words.
        Some(serde_json::Value::Array(a)) => {
            let words: Vec<&str> = a.iter().filter_map(|v| v.as_str()).collect();
            match words.as_slice() {
                [sh, flag, script] if is_shell(sh) && flag.starts_with('-') => {
                    (*script).to_string()
                }
                _ => words.join(" "),
            }
        }
        _ => return Act::Other,
    };
    shell(&command, workdir, cwd)
}

fn is_shell(word: &str) -> bool {
    matches!(
        word.rsplit('/').next().unwrap_or(word),
        "bash" | "sh" | "zsh" | "dash"
    )
}

/// A shell command: a read when its first program (after any `cd`) prints files, an edit when
/// it writes one (`sed -i`, `> file`), a search, or a command keyed by its text and folder.
fn shell(command: &str, workdir: Option<&str>, cwd: Option<&str>) -> Act {
    let text = command.trim();
    let mut dir: Option<String> = workdir.map(str::to_string);
    let mut rest = text;
    // Leading `cd DIR &&` (or `;`) segments change the folder.
    loop {
        let t = rest.trim_start();
        let Some(after) = t.strip_prefix("cd ") else {
            break;
        };
        let end = after.find("&&").or_else(|| after.find(';'));
        let Some(end) = end else { break };
        let target = unquote(after[..end].trim());
        dir = Some(match dir.as_deref() {
            Some(d) if !target.starts_with('/') => {
                format!("{}/{}", d.trim_end_matches('/'), target)
            }
            _ => target.to_string(),
        });
        rest = after[end..].trim_start_matches(['&', ';']);
    }
    let dir = dir.as_deref();
    let first = rest
        .split(['|', ';'])
        .next()
        .unwrap_or("")
        .split("&&")
        .next()
        .unwrap_or("");
    let words = split_words(first);
    if let Some(target) = redirect_target(first) {
        return Act::Edit(vec![relative(&target, dir, cwd)]);
    }
    let Some(program) = words.first().map(|w| w.rsplit('/').next().unwrap_or(w)) else {
        return Act::Other;
    };
    let program = program.to_string();
    if program == "git"
        && words
            .get(1)
            .is_some_and(|w| matches!(w.as_str(), "grep" | "ls-files"))
    {
        return Act::Search;
    }
    if program == "sed" || program == "perl" {
        let in_place = words
            .iter()
            .any(|w| w.starts_with("-i") || w == "--in-place");
        if in_place {
            return Act::Edit(file_args(&words[1..], true, dir, cwd));
        }
    }
    if READ_PROGRAMS.contains(&program.as_str()) {
        let script_first = program == "sed";
        let files = file_args(&words[1..], script_first, dir, cwd);
        if !files.is_empty() {
            return Act::Read(files);
        }
    }
    if SEARCH_PROGRAMS.contains(&program.as_str()) {
        return Act::Search;
    }
    Act::Command(format!("{}\u{0}{}", rest.trim(), dir.unwrap_or("")))
}

/// The words of a command, quotes removed (no expansion).
fn split_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in s.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                any = true;
            }
            None if c.is_whitespace() => {
                if !cur.is_empty() || any {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            None => cur.push(c),
        }
    }
    if !cur.is_empty() || any {
        out.push(cur);
    }
    out
}

fn unquote(s: &str) -> &str {
    s.trim_matches(['\'', '"'])
}

/// The file a `> FILE` or `>> FILE` redirect writes (not `2>`, `>&`, `/dev/null`).
fn redirect_target(segment: &str) -> Option<String> {
    let b = segment.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'>' && (i == 0 || !b[i - 1].is_ascii_digit()) && b.get(i + 1) != Some(&b'&') {
            let mut j = i + 1;
            if b.get(j) == Some(&b'>') {
                j += 1;
            }
            let target = split_words(&segment[j..]).into_iter().next()?;
            if target.is_empty() || target.starts_with("/dev/") || target.starts_with('&') {
                return None;
            }
            return Some(target);
        }
        i += 1;
    }
    None
}

/// The file arguments of a printing command: words that are not flags (nor a flag's number),
/// the first one left out when it is a `sed` script.
fn file_args(
    words: &[String],
    script_first: bool,
    dir: Option<&str>,
    cwd: Option<&str>,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip_script = script_first;
    let mut skip_next = false;
    for w in words {
        if skip_next {
            skip_next = false;
            continue;
        }
        if w.starts_with('-') {
            // `-n 20`, `-c 5`: a flag whose value is the next word.
            skip_next =
                matches!(w.as_str(), "-n" | "-c" | "-e" | "--lines" | "--bytes") && !script_first;
            if script_first && (w == "-e" || w == "--expression") {
                skip_script = true;
            }
            continue;
        }
        if skip_script {
            skip_script = false;
            continue;
        }
        if w.is_empty() || w.chars().all(|c| c.is_ascii_digit() || c == ',') {
            continue;
        }
        out.push(relative(w, dir, cwd));
    }
    out
}

/// `path` made relative to the session's folder `cwd` when it lies inside it (a relative path is
/// first joined to `dir`, the folder the call ran in); `./` and repeated `/` dropped.
pub(crate) fn relative(path: &str, dir: Option<&str>, cwd: Option<&str>) -> String {
    let path = path.trim();
    let joined = if path.starts_with('/') {
        path.to_string()
    } else {
        match dir {
            Some(d) if d.starts_with('/') => format!("{}/{}", d.trim_end_matches('/'), path),
            _ => path.to_string(),
        }
    };
    let clean = normalize(&joined);
    if let Some(c) = cwd.map(|c| normalize(c.trim_end_matches('/'))) {
        if let Some(rest) = clean.strip_prefix(&c).and_then(|r| r.strip_prefix('/')) {
            return rest.to_string();
        }
    }
    clean
}

/// `a/./b//c` → `a/b/c`, `a/x/../b` → `a/b`.
fn normalize(p: &str) -> String {
    let abs = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." if parts.last().is_some_and(|l| *l != "..") => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let j = parts.join("/");
    if abs {
        format!("/{j}")
    } else {
        j
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            args,
        }
    }

    #[test]
    fn reads_by_tool_and_by_shell_command_name_one_file() {
        let cwd = Some("/w");
        let a = classify(&call("Read", json!({"file_path": "/w/src/a.rs"})), cwd);
        assert_eq!(a, Act::Read(vec!["src/a.rs".into()]));
        for cmd in [
            "sed -n '1,200p' src/a.rs",
            "cat ./src/a.rs",
            "nl -ba src/a.rs | sed -n '10,40p'",
            "head -n 50 src/a.rs",
            "cd /w && cat src/a.rs",
        ] {
            let a = classify(
                &call("exec_command", json!({ "cmd": cmd, "workdir": "/w" })),
                cwd,
            );
            assert_eq!(a, Act::Read(vec!["src/a.rs".into()]), "{cmd}");
        }
        let a = classify(
            &call(
                "shell",
                json!({"command": ["bash", "-lc", "cat src/a.rs"], "workdir": "/w"}),
            ),
            cwd,
        );
        assert_eq!(a, Act::Read(vec!["src/a.rs".into()]));
    }

    #[test]
    fn edits_searches_and_commands_are_told_apart() {
        let cwd = Some("/w");
        let sh = |c: &str| classify(&call("Bash", json!({ "command": c })), cwd);
        assert_eq!(
            sh("sed -i 's/a/b/' /w/x.py"),
            Act::Edit(vec!["x.py".into()])
        );
        assert_eq!(
            sh("cat > notes.md <<EOF"),
            Act::Edit(vec!["notes.md".into()])
        );
        assert_eq!(sh("rg -n MEMBER_RATE src"), Act::Search);
        assert_eq!(sh("git grep foo"), Act::Search);
        assert!(matches!(sh("cargo test 2>&1 | tail -5"), Act::Command(_)));
        assert_eq!(sh("cargo test"), sh("cargo test"));
        assert_eq!(
            classify(
                &call("Edit", json!({"file_path": "/w/a.rs", "old_string": "x"})),
                cwd
            ),
            Act::Edit(vec!["a.rs".into()])
        );
        assert_eq!(
            classify(
                &call(
                    "apply_patch",
                    json!({"input": "*** Begin Patch\n*** Update File: src/b.rs\n"})
                ),
                cwd
            ),
            Act::Edit(vec!["src/b.rs".into()])
        );
        assert_eq!(
            classify(&call("Grep", json!({"pattern": "x"})), cwd),
            Act::Search
        );
        assert_eq!(classify(&call("TodoWrite", json!({})), cwd), Act::Other);
    }
}
