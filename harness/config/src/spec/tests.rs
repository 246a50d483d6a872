//! Tests of spec parsing and validation.

use super::*;

const GOOD: &str = r#"name: t
description: d
repo: fixtures/t
turns:
  - user: "find the port"
    unit: a
    script:
      - read_file: { path: src/a.py }
        expect: "PORT = 8080"
      - say: "found it"
  - user: "ok, change it"
    unit: a
    needs: ["PORT = 8080"]
    script:
      - edit_file: { path: src/a.py, old: "PORT = 8080", new: "PORT = 0" }
      - say: "done"
checks:
  - shell: "python3 -m unittest"
  - file_contains: { path: src/a.py, text: "PORT = 0" }
  - answer_contains: { turn: 2, text: "done" }
"#;

#[test]
fn loads_a_good_spec() {
    let s = load("t.yaml", GOOD).unwrap();
    assert_eq!(s.turns.len(), 2);
    assert_eq!(s.scripted_tool_calls(), 2);
    assert_eq!(s.turns[1].needs, vec![Need::plain("PORT = 8080")]);
    assert_eq!(s.checks.len(), 3);
    assert_eq!(s.turns[0].say(), "found it");
}

#[test]
fn network_and_env_are_read_and_checked() {
    let s = load("t.yaml", GOOD).unwrap();
    assert!(!s.network && s.env.is_empty());
    let with = GOOD.replace(
        "description: d",
        "description: d\nnetwork: true\nenv: { APP_MODE: test, RETRIES: 3 }",
    );
    let s = load("t.yaml", &with).unwrap();
    assert!(s.network);
    assert_eq!(
        s.env,
        vec![
            ("APP_MODE".to_string(), "test".to_string()),
            ("RETRIES".to_string(), "3".to_string())
        ]
    );
    let bad = GOOD.replace(
        "description: d",
        "description: d\nnetwork: sometimes\nenv: { 9LIVES: x }",
    );
    let text: Vec<String> = load("bad.yaml", &bad)
        .unwrap_err()
        .iter()
        .map(|p| p.to_string())
        .collect();
    assert!(
        text.iter()
            .any(|t| t.starts_with("bad.yaml:3:1: `network` must be true or false")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|t| t.starts_with("bad.yaml:4:")
                && t.contains("`env` name \"9LIVES\" must be letters")),
        "{text:#?}"
    );
}

#[test]
fn cache_false_on_a_task_or_a_step() {
    assert!(load("t.yaml", GOOD).unwrap().cache);
    let s = load(
        "t.yaml",
        &GOOD.replace("description: d", "description: d\ncache: false"),
    )
    .unwrap();
    assert!(!s.cache);
    let stepped = GOOD.replace(
        "      - say: \"found it\"",
        "      - shell: { command: \"date +%s\" }\n        cache: false\n      - shell: { command: \"ls\" }\n      - say: \"found it\"",
    );
    let s = load("t.yaml", &stepped).unwrap();
    assert_eq!(s.uncached_commands(), vec!["date +%s"]);
    let bad = GOOD.replace("description: d", "description: d\ncache: maybe");
    let text: Vec<String> = load("bad.yaml", &bad)
        .unwrap_err()
        .iter()
        .map(|p| p.to_string())
        .collect();
    assert!(
        text.iter()
            .any(|t| t.contains("`cache` must be true or false")),
        "{text:#?}"
    );
}

#[test]
fn reports_every_problem_with_positions() {
    let bad = GOOD
        .replace("description: d", "description: d\ncolour: red")
        .replace("needs: [\"PORT = 8080\"]", "needs: [\"PORT = 9090\"]")
        .replace("      - say: \"found it\"\n", "");
    let problems = load("bad.yaml", &bad).unwrap_err();
    let text: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    assert!(
        text.iter()
            .any(|t| t.starts_with("bad.yaml:3:1: unknown field `colour`")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|t| t.starts_with("bad.yaml:8:5: turn 1 has no `say` step")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|t| t.starts_with("bad.yaml:13:13: turn 2 `needs` \"PORT = 9090\"")),
        "{text:#?}"
    );
    assert_eq!(problems.len(), 3, "{text:#?}");
}

#[test]
fn rejects_unknown_tools_and_missing_arguments() {
    let bad = GOOD
        .replace(
            "read_file: { path: src/a.py }",
            "read_fil: { path: src/a.py }",
        )
        .replace(
            "edit_file: { path: src/a.py, old: \"PORT = 8080\", new: \"PORT = 0\" }",
            "edit_file: { path: src/a.py, new: \"PORT = 0\" }",
        );
    let problems = load("bad.yaml", &bad).unwrap_err();
    let text: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    assert!(
        text.iter()
            .any(|t| t.contains("unknown field `read_fil` in a script step")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|t| t.contains("`edit_file` needs the argument `old`")),
        "{text:#?}"
    );
}

#[test]
fn empty_script_and_bad_turn_reference() {
    let bad = GOOD.replace(
        "    script:\n      - edit_file: { path: src/a.py, old: \"PORT = 8080\", new: \"PORT = 0\" }\n      - say: \"done\"\n",
        "    script: []\n",
    ).replace("turn: 2", "turn: 7");
    let problems = load("bad.yaml", &bad).unwrap_err();
    let text: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    assert!(
        text.iter()
            .any(|t| t.contains("turn 2 has an empty script")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|t| t.contains("names turn 7, but the task has turns 1 to 2")),
        "{text:#?}"
    );
}

#[test]
fn needs_as_maps_and_their_checks() {
    let good = GOOD.replace(
        "    needs: [\"PORT = 8080\"]\n",
        "    needs:\n      - { fact: \"PORT = 8080\", value: \"PORT = 8080\", guess: \"PORT = 80\" }\n",
    );
    let s = load("t.yaml", &good).unwrap();
    assert_eq!(s.turns[1].needs[0].guess.as_deref(), Some("PORT = 80"));
    // A value the script does not write, a guess equal to its value, a fact with no source.
    let bad = GOOD.replace(
        "    needs: [\"PORT = 8080\"]\n",
        "    needs:\n      - { fact: \"PORT = 8080\", value: \"8081\", guess: \"80\" }\n      - { fact: \"PORT = 8080\", guess: \"PORT = 8080\" }\n      - { fact: \"nowhere\" }\n",
    );
    let text: Vec<String> = load("bad.yaml", &bad)
        .unwrap_err()
        .iter()
        .map(|p| p.to_string())
        .collect();
    assert!(
        text.iter()
            .any(|t| t.starts_with("bad.yaml:14:32: the `value` \"8081\"")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|t| t.contains("`guess` equals the value it replaces")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|t| t.contains("turn 2 `needs` \"nowhere\", but no earlier step")),
        "{text:#?}"
    );
}

#[test]
fn a_need_has_a_cue_of_its_own_words() {
    let good = GOOD.replace(
        "    needs: [\"PORT = 8080\"]\n",
        "    needs:\n      - { fact: \"PORT = 8080\", cue: \"PORT\" }\n",
    );
    let s = load("t.yaml", &good).unwrap();
    assert_eq!(s.turns[1].needs[0].cue.as_deref(), Some("PORT"));
    assert_eq!(s.turns[1].needs[0].value, "PORT = 8080");
    assert_eq!(load("t.yaml", GOOD).unwrap().turns[1].needs[0].cue, None);
    // Empty, not in the fact, across lines, misspelled: each reported where it is written.
    let bad = GOOD.replace(
        "    needs: [\"PORT = 8080\"]\n",
        "    needs:\n      - { fact: \"PORT = 8080\", cue: \"\" }\n      - { fact: \"PORT = 8080\", cue: \"port\" }\n      - { fact: \"PORT = 8080\", cue: \"PORT\\n=\" }\n      - { fact: \"PORT = 8080\", cues: \"PORT\" }\n",
    );
    let text: Vec<String> = load("bad.yaml", &bad)
        .unwrap_err()
        .iter()
        .map(|p| p.to_string())
        .collect();
    let has = |prefix: &str| text.iter().any(|t| t.starts_with(prefix));
    assert!(has("bad.yaml:14:32: `cue` is empty"), "{text:#?}");
    assert!(
        has("bad.yaml:15:32: `cue` \"port\" does not occur in the fact \"PORT = 8080\""),
        "{text:#?}"
    );
    assert!(
        has("bad.yaml:16:32: `cue` \"PORT\\n=\" spans lines"),
        "{text:#?}"
    );
    assert!(has("bad.yaml:17:32: unknown field `cues`"), "{text:#?}");
    assert_eq!(text.len(), 4, "{text:#?}");
}

#[test]
fn a_need_may_come_from_an_earlier_user_message() {
    let good = GOOD
        .replace(
            "find the port",
            "find the port, it must stay 8080 (ticket T-1)",
        )
        .replace(
            "    needs: [\"PORT = 8080\"]\n",
            "    needs: [\"ticket T-1\"]\n",
        );
    assert!(load("t.yaml", &good).is_ok());
}

#[test]
fn awaits_back_agrees_with_the_next_turn() {
    let strategy = GOOD.replace(
        "    unit: a\n    script:\n      - read_file",
        "    unit: a\n    strategy: errand\n    script:\n      - read_file",
    );
    let back = strategy.replace("ok, change it", "/back");
    let text = |doc: &str| -> Vec<String> {
        load("s.yaml", doc)
            .err()
            .unwrap_or_default()
            .iter()
            .map(|p| p.to_string())
            .collect()
    };
    assert!(
        text(&back)
            .iter()
            .any(|t| t.contains("add `awaits_back: true`")),
        "{:#?}",
        text(&back)
    );
    let waits = |doc: &str| {
        doc.replace(
            "strategy: errand\n",
            "strategy: errand\n    awaits_back: true\n",
        )
    };
    assert!(text(&waits(&back)).is_empty(), "{:#?}", text(&waits(&back)));
    assert!(
        text(&waits(&strategy))
            .iter()
            .any(|t| t.contains("turn 2 is not `/back`")),
        "{:#?}",
        text(&waits(&strategy))
    );
}

#[test]
fn never_panics_on_odd_documents() {
    for doc in [
        "",
        "[]",
        "3",
        "name: [",
        "turns: 5",
        "turns: [1, 2]",
        "checks: [{}]",
        "\u{0}",
    ] {
        let _ = load("odd.yaml", doc);
    }
}

/// Runs `f` on a thread and waits at most `secs` for it: a guard against a validation that
/// hangs, not a timing measurement (the figures are in docs/performance.md).
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("did not finish within {secs} s"))
}

/// A spec of `n` turns built in memory: turn `i`'s user says the code `C{i}`, and every turn
/// after the first needs the code the user said one turn before (no step `expect`s it).
fn chained(n: usize) -> TaskSpec {
    let say = Step {
        action: Action::Say("ok".into()),
        expect: None,
        needs: Vec::new(),
        cache: true,
    };
    TaskSpec {
        name: "chained".into(),
        description: String::new(),
        repo: "r".into(),
        setup: Vec::new(),
        network: false,
        cache: true,
        env: Vec::new(),
        turns: (0..n)
            .map(|i| TurnSpec {
                user: format!("turn {i}: the code is C{i}."),
                unit: "a".into(),
                needs: if i == 0 {
                    Vec::new()
                } else {
                    vec![Need::plain(format!("code is C{}.", i - 1))]
                },
                strategy: None,
                awaits_back: false,
                script: vec![say.clone()],
            })
            .collect(),
        checks: Vec::new(),
    }
}

fn semantic_problems(spec: TaskSpec) -> Vec<String> {
    let mut r = Reader::new("t.yaml", "");
    validate_semantics(&mut r, &spec);
    r.problems.iter().map(|p| p.message.clone()).collect()
}

#[test]
fn facts_said_by_earlier_users_are_found_in_one_pass_over_them() {
    // 100,000 turns, each needing what the user said one turn before. Scanning the earlier
    // user messages for every need was 5·10⁹ substring searches (and as many pointers copied
    // into a list per turn); the one pass over them takes well under a second.
    let problems = within(120, || semantic_problems(chained(100_000)));
    assert!(
        problems.is_empty(),
        "{:?}",
        &problems[..problems.len().min(3)]
    );

    // A fact the need's own turn or a later one says has no source before it.
    let mut spec = chained(3);
    spec.turns[1].needs = vec![Need::plain("code is C1.")];
    spec.turns[0].needs = vec![Need::plain("code is C2.")];
    spec.turns[2].script[0].needs = vec![Need::plain("code is C0."), Need::plain("")];
    let problems = semantic_problems(spec);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].starts_with("turn 1 `needs` \"code is C2.\""),
        "{problems:?}"
    );
    assert!(
        problems[1].starts_with("turn 2 `needs` \"code is C1.\""),
        "{problems:?}"
    );
}

const DELEGATED: &str = r#"name: t
description: d
repo: fixtures/t
turns:
  - user: "the port is now 9090; get someone to fix the config"
    unit: a
    script:
      - delegate:
          brief: "Set PORT = 9090 in src/a.py."
          script:
            - read_file: { path: src/a.py }
              expect: "PORT = 8080"
            - edit_file: { path: src/a.py, old: "PORT = 8080", new: "PORT = 9090" }
              needs: [{ fact: "9090", guess: "8081" }]
            - say: "src/a.py has PORT = 9090"
      - say: "done: PORT = 9090"
checks:
  - file_contains: { path: src/a.py, text: "PORT = 9090" }
"#;

#[test]
fn a_delegation_is_read_with_its_brief_and_the_childs_script() {
    let s = load("t.yaml", DELEGATED).unwrap();
    let d = s.turns[0].delegations().next().unwrap();
    assert_eq!(d.brief, "Set PORT = 9090 in src/a.py.");
    assert_eq!(d.script.len(), 3);
    assert_eq!(d.receipt(), "src/a.py has PORT = 9090");
    assert_eq!(s.scripted_tool_calls(), 2, "the child's tool steps count");
    // A child's need may come from the turn's own user message (the parent read it).
    assert_eq!(d.script[1].needs[0].fact, "9090");
}

#[test]
fn a_bad_delegation_is_reported_where_it_is_written() {
    let problems = |text: &str| -> Vec<String> {
        load("bad.yaml", text)
            .unwrap_err()
            .iter()
            .map(|p| p.to_string())
            .collect()
    };
    let no_say = DELEGATED.replace("            - say: \"src/a.py has PORT = 9090\"\n", "");
    let p = problems(&no_say);
    assert!(
        p.iter().any(|x| x.starts_with("bad.yaml:10:11:")
            && x.contains("exactly one, last: the child's receipt")),
        "{p:?}"
    );
    let no_brief = DELEGATED.replace("          brief: \"Set PORT = 9090 in src/a.py.\"\n", "");
    let p = problems(&no_brief);
    assert!(
        p.iter().any(|x| x.contains("`delegate` needs `brief`")),
        "{p:?}"
    );
    let nested = DELEGATED.replace(
        "            - say: \"src/a.py has PORT = 9090\"",
        "            - report: \"half way\"\n            - say: \"src/a.py has PORT = 9090\"",
    );
    let p = problems(&nested);
    assert!(
        p.iter().any(|x| x.contains("`report`")),
        "a child has no report: {p:?}"
    );
    let unsourced = DELEGATED.replace("needs: [{ fact: \"9090\"", "needs: [{ fact: \"7070\"");
    let p = problems(&unsourced);
    assert!(
        p.iter()
            .any(|x| x.contains("child step 2 of step 1 of turn 1 `needs` \"7070\"")),
        "{p:?}"
    );
}
