//! foldbench never acts on what the agent planted: what it reads of a workspace after the agent's
//! commands (the diff, the fingerprint, the tool cache's snapshots) follows no setting, link or
//! size the agent chose, and a task's fixture resolves inside its tasks folder.

use std::path::Path;

use harness_core::judge::Judge;
use harness_runner::cell::CellOptions;
use harness_runner::tasks::LoadedTask;

use crate::helpers::run_one;

/// A task `name` from `spec` (YAML) with a fixture folder `fx` holding `a.txt` (`A = 1`), in
/// `dir`.
fn task_in(dir: &Path, name: &str, spec: &str) -> LoadedTask {
    std::fs::create_dir_all(dir.join("fx")).unwrap();
    std::fs::write(dir.join("fx/a.txt"), "A = 1\n").unwrap();
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(&file, spec).unwrap();
    harness_runner::tasks::load_task(&file).unwrap_or_else(|p| panic!("{p:?}"))
}

/// A one-turn task whose agent runs `command` (YAML-quoted here) and then says it is done.
fn one_shell(name: &str, command: &str) -> String {
    format!(
        "name: {name}\ndescription: the agent plants something\nrepo: fx\nturns:\n  - user: \"go\"\n    unit: a\n    script:\n      - shell: {{ command: {command:?} }}\n      - say: \"done\"\nchecks:\n  - file_contains: {{ path: a.txt, text: \"B\" }}\n"
    )
}

#[test]
fn the_diff_ignores_the_repositorys_own_config() {
    let d = tempfile::tempdir().unwrap();
    // A host folder the agent names from inside: its files must not reach diff.patch, and no
    // program the repository's config names may run.
    let host = tempfile::tempdir().unwrap();
    let h = host.path().display().to_string();
    std::fs::write(host.path().join("secret.txt"), "HOST SECRET\n").unwrap();
    std::fs::write(
        host.path().join("included.cfg"),
        format!("[core]\n\tworktree = {h}\n"),
    )
    .unwrap();
    let cases = [
        ("worktree", format!("git config core.worktree {h}")),
        ("include", format!("git config include.path {h}/included.cfg")),
        (
            "filter",
            format!(
                "git config filter.x.clean 'touch {h}/ran-clean; cat' && git config filter.x.smudge cat && git config diff.x.textconv 'touch {h}/ran-textconv; cat' && printf '* filter=x diff=x\\n' > .gitattributes"
            ),
        ),
        (
            "gitfile",
            format!("rm -rf .git && printf 'gitdir: {h}\\n' > .git"),
        ),
        ("link", format!("rm -rf .git && ln -s {h} .git")),
        (
            "nested",
            format!("mkdir sub && git -C sub init -q && git -C sub config core.worktree {h}"),
        ),
    ];
    let mut wrong = Vec::new();
    for (name, plant) in cases {
        let spec = one_shell(name, &format!("{plant} && echo B >> a.txt"));
        let t = task_in(&d.path().join(name), name, &spec);
        let (out, _) = run_one(&t, "none", Judge::Oracle, CellOptions::default());
        assert!(
            out.record.checks.iter().all(|c| c.passed),
            "{name}: {:?}",
            out.record
        );
        if !(out.diff.contains("+B") && out.diff.contains("a/a.txt")) {
            wrong.push(format!(
                "{name}: the workspace's change is not in the diff:\n{}",
                out.diff
            ));
        }
        if out.diff.contains("HOST SECRET") || out.diff.contains("secret.txt") {
            wrong.push(format!("{name}: host files in the diff:\n{}", out.diff));
        }
        for ran in ["ran-clean", "ran-textconv"] {
            if host.path().join(ran).exists() {
                wrong.push(format!(
                    "{name}: the repository's config ran a program ({ran})"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A cell whose agent makes a 2 GB sparse file (no disk used), and another a 1 GB file under
/// `.git`, with the tool cache on: every file foldbench reads for the snapshots, the fingerprint,
/// the cache's changes, the diff and the checks is measured first; the large one is hashed by
/// its size and samples, so the cache neither keys on nor stores these calls (they run), and
/// the cell ends as it would without it.
#[test]
fn files_too_large_to_read_whole_are_measured_not_read() {
    let d = tempfile::tempdir().unwrap();
    for (name, make) in [
        ("sparse", "truncate -s 2G sparse.bin"),
        ("bigref", "truncate -s 1G .git/bigref"),
    ] {
        let spec = format!(
            "name: {name}\ndescription: the agent makes a huge file\nrepo: fx\nturns:\n  - user: \"go\"\n    unit: a\n    script:\n      - shell: {{ command: \"{make} && echo made\" }}\n        expect: made\n      - shell: {{ command: \"echo B >> a.txt && echo edited\" }}\n        expect: edited\n      - read_file: {{ path: a.txt }}\n        expect: B\n      - say: \"done\"\nchecks:\n  - file_contains: {{ path: a.txt, text: \"B\" }}\n"
        );
        let t = task_in(&d.path().join(name), name, &spec);
        for _ in 0..2 {
            let cache = std::sync::Arc::new(harness_runner::execution::ToolCache::new());
            let mut opts = CellOptions::default();
            opts.tool_limits.cache = Some(std::sync::Arc::clone(&cache));
            let (out, _) = run_one(&t, "none", Judge::Oracle, opts);
            assert!(
                out.record.checks.iter().all(|c| c.passed),
                "{name}: {:?}",
                out.record
            );
            let stats = cache.stats();
            assert_eq!(
                (stats.hits, stats.misses, stats.uncacheable),
                (0, 2, 2),
                "{name}: neither call is stored, the first because it wrote a file too large \
                 to store, the second because its workspace holds one too large to hash: \
                 {stats:?}"
            );
            if name == "sparse" {
                assert!(
                    out.diff
                        .contains("sparse.bin: 2147483648 bytes, larger than"),
                    "{}",
                    out.diff
                );
            }
        }
    }
}

/// A spec `t.yaml` in `dir` whose `repo:` (line 3) is `repo`.
fn spec_with_repo(dir: &Path, repo: &str) -> std::path::PathBuf {
    let file = dir.join("t.yaml");
    std::fs::write(
        &file,
        format!("name: t\ndescription: a fixture that is not what it seems\nrepo: {repo}\nturns:\n  - user: \"go\"\n    unit: a\n    script:\n      - say: \"done\"\nchecks:\n  - answer_contains: {{ turn: 1, text: \"done\" }}\n"),
    )
    .unwrap();
    file
}

#[test]
fn a_fixture_must_resolve_inside_its_tasks_folder() {
    let host = tempfile::tempdir().unwrap();
    std::fs::write(host.path().join("secret.txt"), "HOST SECRET\n").unwrap();
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::create_dir_all(p.join("fixtures/real/sub")).unwrap();
    std::fs::write(p.join("fixtures/real/a.txt"), "A = 1\n").unwrap();
    // `repo:` a link to a host folder; a folder on the way a link; a link inside the fixture.
    std::os::unix::fs::symlink(host.path(), p.join("fixtures/link")).unwrap();
    std::os::unix::fs::symlink(p.join("fixtures"), p.join("via")).unwrap();
    let cases = [
        ("fixtures/link", "is a symbolic link"),
        ("via/real", "is a symbolic link"),
        ("fixtures/real", "holds a symbolic link"),
    ];
    for (i, (repo, says)) in cases.iter().enumerate() {
        if i == 2 {
            std::os::unix::fs::symlink(host.path(), p.join("fixtures/real/sub/escape")).unwrap();
        }
        let file = spec_with_repo(p, repo);
        let problems = harness_runner::tasks::load_task(&file).expect_err(repo);
        assert_eq!(problems.len(), 1, "{repo}: {problems:?}");
        let pr = &problems[0];
        assert_eq!((pr.line, pr.col), (3, 1), "{repo}: {pr:?}");
        assert!(pr.message.contains(says), "{repo}: {pr:?}");
        // `validate` and `run` both refuse it with file:line:col, and nothing is copied.
        for args in [
            vec!["validate".to_string(), file.display().to_string()],
            vec![
                "run".into(),
                "--tasks".into(),
                file.display().to_string(),
                "--out".into(),
                p.join(format!("run{i}")).display().to_string(),
            ],
        ] {
            let o = std::process::Command::new(crate::helpers::binary())
                .args(&args)
                .env("CI", "true")
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{repo} {args:?}: {err}");
            assert!(
                err.contains(&format!("{}:3:1", file.display())) && err.contains(says),
                "{repo} {args:?}: {err}"
            );
        }
    }
    // Without the links, the same fixture is fine.
    std::fs::remove_file(p.join("fixtures/real/sub/escape")).unwrap();
    harness_runner::tasks::load_task(&spec_with_repo(p, "fixtures/real")).unwrap();
}
