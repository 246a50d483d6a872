//! The simulated agent against specs read by `harness-config`.

use std::sync::Arc;

use harness_config::spec;
use harness_core::behaviour::{Means, SimBehaviour};
use harness_core::judge::Judge;
use harness_core::sim::{summary, Sim, SimConfig};
use harness_core::ToolCall;
use harness_core::{Message, ToolSpec};
use harness_core::{Purpose, Request, Response};

/// A sim that always tries to get a missing fact back, by every means in a fixed order: an
/// archive read first, then re-runs, re-reads and the workspace search (the order the sim
/// followed before the behaviour profile).
fn test_behaviour() -> SimBehaviour {
    SimBehaviour::ordered(Means {
        archive: 0.4,
        rerun: 0.3,
        reread: 0.2,
        search: 0.1,
    })
}
use harness_core::spec::TaskSpec;
use serde_json::json;

const SPEC: &str = r#"name: two
repo: fixtures/x
turns:
  - user: "look at a"
    unit: a
    script:
      - read_file: { path: a.py }
        expect: "A = 1"
      - say: "seen"
  - user: "now use it"
    unit: a
    needs: ["A = 1"]
    script:
      - edit_file: { path: a.py, old: "A = 1", new: "A = 2" }
      - say: "done"
checks:
  - file_contains: { path: a.py, text: "A = 2" }
"#;

fn req(msgs: Vec<Arc<Message>>, tools: &[&str]) -> Request {
    let tools: Vec<ToolSpec> = tools
        .iter()
        .map(|n| ToolSpec {
            name: n.to_string(),
            description: String::new(),
            parameters: json!({}),
        })
        .collect();
    Request::new(Arc::from("sys"), Arc::from(tools), 0, msgs, Purpose::Turn)
}

fn sim(recheck: f64) -> Sim {
    Sim::new(
        Arc::new(spec::load("t.yaml", SPEC).unwrap()),
        SimConfig {
            seed: 3,
            recheck,
            judge: Judge::Oracle,
            behaviour: test_behaviour(),
        },
    )
}

#[test]
fn follows_the_script_and_reruns_missing_facts() {
    let mut s = sim(0.0);
    let u1 = Message::user(1, "look at a", None);
    let r = s.respond(&req(vec![u1.clone()], &[]));
    assert_eq!(r.tool_calls[0].name, "read_file");
    assert_eq!(r.expects[0].1, "A = 1");
    let out = Message::tool_result(1, &r.tool_calls[0], "     1\tA = 1", false);
    let a1 = Message::assistant(1, "", r.tool_calls.clone());
    let r = s.respond(&req(vec![u1.clone(), a1.clone(), out.clone()], &[]));
    assert_eq!(r.text, "seen");
    // Turn 2 with the fact visible: straight to the edit.
    let close = Message::assistant(1, "seen", vec![]);
    let u2 = Message::user(2, "now use it", None);
    let mut s2 = sim(0.0);
    s2.continue_turn(1);
    let r = s2.respond(&req(
        vec![u1.clone(), a1, out, close.clone(), u2.clone()],
        &[],
    ));
    assert_eq!(r.tool_calls[0].name, "edit_file");
    // Turn 2 with the fact gone (trimmed) but a.py named in the closing message: read it.
    let named = Message::assistant(1, "seen: A is set in a.py.", vec![]);
    let r = s.respond(&req(vec![u1, named, u2], &[]));
    assert_eq!(r.tool_calls[0].name, "read_file");
    assert_eq!(r.tool_calls[0].args, json!({ "path": "a.py" }));
    assert_eq!(r.from_request, vec![r.tool_calls[0].id.clone()]);
}

#[test]
fn summary_keeps_users_and_closings_only() {
    let k = ToolCall {
        id: "1".into(),
        name: "shell".into(),
        args: json!({"command": "ls"}),
    };
    let msgs = vec![
        Message::user(1, "hello", None),
        Message::assistant(1, "", vec![k.clone()]),
        Message::tool_result(1, &k, "SECRET OUTPUT", false),
        Message::assistant(1, "all done", vec![]),
        Message::user(2, "summarize", None),
    ];
    let mut r = req(msgs, &[]);
    r.purpose = Purpose::Compaction;
    let text = summary(&r);
    assert!(text.contains("\"hello\"") && text.contains("all done"));
    assert!(!text.contains("SECRET OUTPUT") && !text.contains("summarize"));
}

const LOSS: &str = r#"name: loss
repo: fixtures/x
turns:
  - user: "what is the limit?"
    unit: a
    script:
      - read_file: { path: a.py }
        expect: "LIMIT = 60"
      - say: "found it"
  - user: "raise it to 120"
    unit: a
    script:
      - edit_file: { path: a.py, old: "LIMIT = 60", new: "LIMIT = 120" }
      - say: "done"
  - user: "changelog, with the old value"
    unit: b
    needs:
      - { fact: "LIMIT = 60", value: "from 60 to", guess: "to" }
    script:
      - write_file: { path: CHANGES, content: "limit raised from 60 to 120" }
      - say: "raised from 60 to 120"
checks:
  - file_contains: { path: CHANGES, text: "from 60" }
"#;

fn loss_sim(text: &str) -> Sim {
    Sim::new(
        Arc::new(spec::load("t.yaml", text).unwrap()),
        SimConfig {
            seed: 3,
            recheck: 0.0,
            judge: Judge::Oracle,
            behaviour: test_behaviour(),
        },
    )
}

/// Drives one turn: answers every tool call with `output(call)`, until a closing message.
fn drive(
    s: &mut Sim,
    msgs: &mut Vec<Arc<Message>>,
    tools: &[&str],
    output: &dyn Fn(&ToolCall) -> String,
) -> Vec<Response> {
    let mut out = Vec::new();
    for _ in 0..20 {
        let r = s.respond(&req(msgs.clone(), tools));
        msgs.push(Message::assistant(
            msgs.last().unwrap().turn,
            r.text.clone(),
            r.tool_calls.clone(),
        ));
        let done = r.tool_calls.is_empty();
        for c in &r.tool_calls {
            let t = msgs.last().unwrap().turn;
            msgs.push(Message::tool_result(t, c, output(c), false));
        }
        out.push(r);
        if done {
            break;
        }
    }
    out
}

/// Turn 3 of LOSS after turns 1-2 were trimmed away (user and closing messages only); turn 1's
/// closing message names `a.py`.
fn trimmed_turn3(rerun_output: &str) -> Vec<Response> {
    trimmed_turn3_saying("found it in a.py", rerun_output)
}

fn trimmed_turn3_saying(closing: &str, rerun_output: &str) -> Vec<Response> {
    let mut s = loss_sim(LOSS);
    s.continue_turn(2);
    let mut msgs = vec![
        Message::user(1, "what is the limit?", None),
        Message::assistant(1, closing, vec![]),
        Message::user(2, "raise it to 120", None),
        Message::assistant(2, "done", vec![]),
        Message::user(3, "changelog, with the old value", None),
    ];
    let out = rerun_output.to_string();
    drive(&mut s, &mut msgs, &[], &move |_| out.clone())
}

#[test]
fn a_rerun_that_no_longer_shows_the_fact_leads_to_the_guess() {
    let rs = trimmed_turn3("     1\tLIMIT = 120");
    assert_eq!(rs[0].tool_calls[0].name, "read_file", "recovery first");
    // Not there: it lists the workspace (the listing names nothing more), then the guess.
    assert_eq!(rs[1].tool_calls[0].name, "list_files");
    let write = &rs[2].tool_calls[0];
    assert_eq!(write.args["content"], "limit raised to 120");
    assert_eq!(rs[3].text, "raised to 120");
}

#[test]
fn under_trim_with_the_path_nowhere_visible_it_lists_the_workspace_and_then_writes_the_guess() {
    let rs = trimmed_turn3_saying("found it", "written");
    // Nothing in view names a.py: no re-run of the call (the old sim re-read it from memory);
    // it re-explores with a listing, which here names nothing, then writes the guess.
    assert_eq!(rs[0].tool_calls[0].name, "list_files", "{rs:?}");
    assert_eq!(rs[0].tool_calls[0].args, json!({}));
    assert_eq!(rs[0].from_request, vec![rs[0].tool_calls[0].id.clone()]);
    assert_eq!(rs[1].tool_calls[0].name, "write_file", "{rs:?}");
    assert_eq!(rs[1].tool_calls[0].args["content"], "limit raised to 120");
    assert_eq!(rs[2].text, "raised to 120");
}

#[test]
fn a_listing_that_names_a_file_of_the_step_leads_to_a_read_that_brings_the_fact_back() {
    let mut s = loss_sim(LOSS);
    s.continue_turn(2);
    let mut msgs = vec![
        Message::user(1, "what is the limit?", None),
        Message::assistant(1, "found it", vec![]),
        Message::user(3, "changelog, with the old value", None),
    ];
    // The listing names a.py and notes.md; the changelog step writes CHANGES, whose words
    // share nothing with them, but "limit" in the request is a word of `limit.py`.
    let rs = drive(&mut s, &mut msgs, &[], &|c| match c.name.as_str() {
        "list_files" => "a.py\nnotes.md\nlimit.py\n".into(),
        "read_file" if c.args["path"] == "limit.py" => "     1\tLIMIT = 60".into(),
        _ => String::new(),
    });
    let calls: Vec<String> = rs
        .iter()
        .flat_map(|r| &r.tool_calls)
        .map(|c| format!("{} {}", c.name, c.args))
        .collect();
    assert_eq!(calls[0], "list_files {}");
    assert_eq!(calls[1], r#"read_file {"path":"limit.py"}"#, "{calls:?}");
    assert_eq!(
        rs[2].tool_calls[0].args["content"],
        "limit raised from 60 to 120"
    );
}

#[test]
fn with_a_recovery_probability_of_zero_it_goes_on_without_the_fact() {
    let mut s = Sim::new(
        Arc::new(spec::load("t.yaml", LOSS).unwrap()),
        SimConfig {
            seed: 3,
            recheck: 0.0,
            judge: Judge::Oracle,
            behaviour: SimBehaviour::never(),
        },
    );
    s.continue_turn(2);
    let mut msgs = vec![
        Message::user(1, "what is the limit?", None),
        Message::assistant(1, "found it in a.py", vec![]),
        Message::user(3, "changelog, with the old value", None),
    ];
    let rs = drive(&mut s, &mut msgs, &[], &|_| "     1\tLIMIT = 60".into());
    // a.py is named, and a read would bring the fact back, but the agent does not try.
    assert_eq!(rs[0].tool_calls[0].name, "write_file", "{rs:?}");
    assert_eq!(rs[0].tool_calls[0].args["content"], "limit raised to 120");
}

#[test]
fn the_decision_is_drawn_once_per_fact_and_turn_from_the_seed() {
    // Half the time it tries; over seeds both happen, and each seed decides the same twice.
    let run = |seed: u64| {
        let mut s = Sim::new(
            Arc::new(spec::load("t.yaml", LOSS).unwrap()),
            SimConfig {
                seed,
                recheck: 0.0,
                judge: Judge::Oracle,
                behaviour: {
                    let mut b = test_behaviour();
                    b.none.recover = 0.5;
                    b.summary.recover = 0.5;
                    b
                },
            },
        );
        s.continue_turn(2);
        let mut msgs = vec![
            Message::user(1, "what is the limit?", None),
            Message::assistant(1, "found it in a.py", vec![]),
            Message::user(3, "changelog, with the old value", None),
        ];
        let rs = drive(&mut s, &mut msgs, &[], &|_| "     1\tLIMIT = 60".into());
        rs[0].tool_calls[0].name.clone()
    };
    let first: Vec<String> = (1..=12).map(run).collect();
    assert_eq!(first, (1..=12).map(run).collect::<Vec<_>>());
    assert!(first.iter().any(|n| n == "read_file"), "{first:?}");
    assert!(first.iter().any(|n| n == "write_file"), "{first:?}");
}

#[test]
fn a_sim_with_the_old_private_map_reruns_a_call_it_cannot_see() {
    let mut s = Sim::remembering_sources(
        Arc::new(spec::load("t.yaml", LOSS).unwrap()),
        SimConfig {
            seed: 3,
            recheck: 0.0,
            judge: Judge::Oracle,
            behaviour: test_behaviour(),
        },
    );
    s.continue_turn(2);
    let r = req(
        vec![
            Message::user(1, "what is the limit?", None),
            Message::assistant(1, "found it", vec![]),
            Message::user(3, "changelog, with the old value", None),
        ],
        &[],
    );
    let resp = s.respond(&r);
    let call = &resp.tool_calls[0];
    assert_eq!(
        (call.name.as_str(), &call.args),
        ("read_file", &json!({ "path": "a.py" }))
    );
    assert_eq!(resp.from_request, vec![call.id.clone()]);
    assert_eq!(r.unseen_arguments(call), vec!["a.py".to_string()]);
}

#[test]
fn a_rerun_that_shows_the_fact_recovers_it() {
    let rs = trimmed_turn3("     1\tLIMIT = 60");
    assert_eq!(
        rs[1].tool_calls[0].args["content"],
        "limit raised from 60 to 120"
    );
    assert_eq!(rs[2].text, "raised from 60 to 120");
}

#[test]
fn a_visible_fact_is_written_as_scripted() {
    let mut s = loss_sim(LOSS);
    s.continue_turn(2);
    let k = ToolCall {
        id: "r".into(),
        name: "read_file".into(),
        args: json!({"path": "a.py"}),
    };
    let mut msgs = vec![
        Message::user(1, "what is the limit?", None),
        Message::assistant(1, "", vec![k.clone()]),
        Message::tool_result(1, &k, "     1\tLIMIT = 60", false),
        Message::assistant(1, "found it", vec![]),
        Message::user(3, "changelog, with the old value", None),
    ];
    let rs = drive(&mut s, &mut msgs, &[], &|_| String::new());
    assert_eq!(rs[0].tool_calls[0].name, "write_file", "no recovery needed");
    assert_eq!(
        rs[0].tool_calls[0].args["content"],
        "limit raised from 60 to 120"
    );
}

#[test]
fn a_lost_fact_without_a_guess_stops_the_turn() {
    let text = LOSS.replace(
        "      - { fact: \"LIMIT = 60\", value: \"from 60 to\", guess: \"to\" }",
        "      - \"LIMIT = 60\"",
    );
    let mut s = loss_sim(&text);
    s.continue_turn(2);
    let mut msgs = vec![Message::user(3, "changelog, with the old value", None)];
    let rs = drive(&mut s, &mut msgs, &[], &|_| "     1\tLIMIT = 120".into());
    assert_eq!(
        rs.len(),
        2,
        "a listing, then nothing to recover it from: {rs:?}"
    );
    assert_eq!(rs[0].tool_calls[0].name, "list_files");
    assert!(rs[1].tool_calls.is_empty());
    assert!(
        rs[1]
            .text
            .starts_with("I stopped before the write_file of CHANGES"),
        "{}",
        rs[1].text
    );
}

const CUE: &str = r#"name: cue
repo: fixtures/x
turns:
  - user: "the importer crashes at start"
    unit: a
    script:
      - shell: { command: "python3 -m importer" }
        expect: "ConfigError: batch_size must be a whole number, got 'fifty'"
      - say: "The config has a bad batch size; fixed."
  - user: "write the incident note, quote the ConfigError exactly"
    unit: b
    needs:
      - fact: "ConfigError: batch_size must be a whole number, got 'fifty'"
        value: "batch_size must be a whole number, got 'fifty'"
        guess: "the batch size was not a number"
        cue: "ConfigError"
    script:
      - write_file: { path: NOTE, content: "error: batch_size must be a whole number, got 'fifty'" }
      - say: "noted"
checks:
  - file_contains: { path: NOTE, text: "got 'fifty'" }
"#;

fn cue_sim(text: &str) -> Sim {
    let mut s = loss_sim(text);
    s.continue_turn(1);
    s
}

/// Turn 1 folded into an archive, then turn 2 with `user`'s words.
fn folded(user: &str) -> Vec<Arc<Message>> {
    let fold = harness_core::fold::result_message(
        1,
        1,
        &[Message::user(1, "the importer crashes at start", None)],
        ".foldbench/archive/fold-turns-001-001.txt",
        "00",
    );
    vec![fold, Message::user(2, user, None)]
}

#[test]
fn a_fact_lost_under_fold_is_recovered_by_a_grep_of_the_archive_for_its_cue() {
    let mut s = cue_sim(CUE);
    let mut msgs = folded("write the incident note, quote the ConfigError exactly");
    let first = s.respond(&req(msgs.clone(), &[]));
    let grep = &first.tool_calls[0];
    assert_eq!(
        (grep.name.as_str(), &grep.args),
        (
            "grep",
            &json!({ "pattern": "ConfigError", "path": ".foldbench/archive/fold-turns-001-001.txt" })
        ),
        "a grep for the cue, not for the fact"
    );
    assert_eq!(first.from_request, vec![grep.id.clone()]);
    assert!(req(msgs.clone(), &[]).unseen_arguments(grep).is_empty());
    // The cue matches more than the fact: every matching line comes back, and the fact is in it.
    msgs.push(Message::assistant(2, "", first.tool_calls.clone()));
    msgs.push(Message::tool_result(
        2,
        grep,
        ".foldbench/archive/fold-turns-001-001.txt:4:  \"tool_call: shell python3 -m importer\"\n\
         .foldbench/archive/fold-turns-001-001.txt:9:Traceback: importer.config.ConfigError raised\n\
         .foldbench/archive/fold-turns-001-001.txt:10:importer.config.ConfigError: batch_size must be a whole number, got 'fifty'",
        false,
    ));
    let next = s.respond(&req(msgs, &[]));
    assert_eq!(
        next.tool_calls[0].args["content"],
        "error: batch_size must be a whole number, got 'fifty'"
    );
}

#[test]
fn with_no_cue_visible_no_archive_grep_happens() {
    let mut s = cue_sim(CUE);
    let mut msgs = folded("write the incident note");
    let rs = drive(&mut s, &mut msgs, &[], &|_| String::new());
    assert!(
        rs.iter()
            .all(|r| r.tool_calls.iter().all(|c| c.name != "grep")),
        "{rs:?}"
    );
    // Nothing else to recover it from (no call or path in view, an empty listing): the guess.
    assert_eq!(rs[0].tool_calls[0].name, "list_files");
    assert_eq!(
        rs[1].tool_calls[0].args["content"],
        "error: the batch size was not a number"
    );
}

#[test]
fn with_no_archive_the_cue_is_searched_for_in_the_workspace_after_the_reruns() {
    let mut s = cue_sim(CUE);
    let mut msgs = vec![
        Message::user(1, "the importer crashes at start", None),
        Message::assistant(
            1,
            "The config in config/importer.ini has a bad batch size.",
            vec![],
        ),
        Message::user(
            2,
            "write the incident note, quote the ConfigError exactly",
            None,
        ),
    ];
    let rs = drive(&mut s, &mut msgs, &[], &|c| match c.name.as_str() {
        "grep" => "importer/config.py:7:class ConfigError(ValueError):".into(),
        _ => "     1\t[importer]\n     2\tbatch_size = 50".into(),
    });
    let calls: Vec<(&str, &serde_json::Value)> = rs
        .iter()
        .flat_map(|r| &r.tool_calls)
        .map(|c| (c.name.as_str(), &c.args))
        .collect();
    assert_eq!(
        calls[0],
        ("read_file", &json!({ "path": "config/importer.ini" }))
    );
    assert_eq!(calls[1].0, "list_files");
    assert_eq!(calls[2], ("grep", &json!({ "pattern": "ConfigError" })));
    // None brought the line back (the config was fixed): the guess.
    assert_eq!(
        calls[3].1["content"],
        "error: the batch size was not a number"
    );
}

#[test]
fn the_users_words_have_no_call_to_repeat() {
    let text = r#"name: words
repo: fixtures/x
turns:
  - user: "keep 7 days (LEGAL-1)"
    unit: a
    script:
      - say: "ok"
  - user: "note it"
    unit: b
    needs: [{ fact: "keep 7 days (LEGAL-1)", value: "LEGAL-1", guess: "legal" }]
    script:
      - write_file: { path: N, content: "LEGAL-1" }
      - say: "noted LEGAL-1"
checks:
  - file_contains: { path: N, text: "LEGAL-1" }
"#;
    // No archive and no call to repeat: the guess, without a recovery call.
    let mut s = loss_sim(text);
    s.continue_turn(1);
    let mut msgs = vec![Message::user(2, "note it", None)];
    let rs = drive(&mut s, &mut msgs, &[], &|_| String::new());
    assert_eq!(rs[0].tool_calls[0].name, "list_files");
    assert_eq!(rs[1].tool_calls[0].args["content"], "legal");
    // A fold result covering turn 1 quotes the user's words: written as scripted.
    let mut s = loss_sim(text);
    s.continue_turn(1);
    let fold = harness_core::fold::result_message(
        1,
        1,
        &[Message::user(1, "keep 7 days (LEGAL-1)", None)],
        ".foldbench/archive/f.txt",
        "00",
    );
    let mut msgs = vec![fold, Message::user(2, "note it", None)];
    let rs = drive(&mut s, &mut msgs, &[], &|_| String::new());
    assert_eq!(rs[0].tool_calls[0].name, "write_file");
    assert_eq!(rs[0].tool_calls[0].args["content"], "LEGAL-1");
}

const STRATEGY: &str = r#"name: strat
repo: fixtures/x
turns:
  - user: "go find out why CI is flaky"
    unit: ci
    strategy: errand
    script:
      - read_file: { path: ci.log }
        expect: "seed 4 FAIL"
      - report: "seed 4 fails"
      - say: "seed 4 fails"
  - user: "NEXT"
    unit: ci
    script:
      - say: "ok"
checks:
  - answer_contains: { turn: 1, text: "seed" }
"#;

fn strategy_turn1(spec: TaskSpec) -> Vec<(String, Vec<(String, serde_json::Value)>)> {
    let mut s = Sim::new(
        Arc::new(spec),
        SimConfig {
            seed: 3,
            recheck: 0.0,
            judge: Judge::Oracle,
            behaviour: test_behaviour(),
        },
    );
    let mut msgs = vec![Message::user(1, "go find out why CI is flaky", None)];
    let tools = ["strategy_request", "strategy_report", "strategy_yield"];
    drive(&mut s, &mut msgs, &tools, &|_| "seed 4 FAIL".into())
        .into_iter()
        .map(|r| {
            let calls = r.tool_calls.into_iter().map(|c| (c.name, c.args)).collect();
            (r.text, calls)
        })
        .collect()
}

#[test]
fn the_next_turn_does_not_change_the_current_one() {
    let other = spec::load("t.yaml", &STRATEGY.replace("NEXT", "thanks, what next?")).unwrap();
    let mut back = other.clone();
    back.turns[1].user = "/back".into();
    let a = strategy_turn1(other);
    let b = strategy_turn1(back);
    assert_eq!(a, b);
    assert!(
        a.iter()
            .any(|(_, c)| c.iter().any(|(n, _)| n == "strategy_yield")),
        "{a:?}"
    );
}

#[test]
fn awaits_back_leaves_the_strategy_open() {
    let text = STRATEGY.replace("NEXT", "/back").replace(
        "    strategy: errand\n",
        "    strategy: errand\n    awaits_back: true\n",
    );
    let turns = strategy_turn1(spec::load("t.yaml", &text).unwrap());
    assert!(
        !turns
            .iter()
            .any(|(_, c)| c.iter().any(|(n, _)| n == "strategy_yield")),
        "{turns:?}"
    );
    assert_eq!(turns.last().unwrap().0, "seed 4 fails");
}

#[test]
fn after_a_stopped_turn_the_script_expects_nothing_of_the_workspace() {
    let text = r#"name: off
repo: fixtures/x
turns:
  - user: "look at a"
    unit: a
    script:
      - read_file: { path: a.py }
        expect: "A = 1"
      - say: "seen"
  - user: "now use it"
    unit: a
    needs: ["A = 1"]
    script:
      - edit_file: { path: a.py, old: "A = 1", new: "A = 2" }
      - say: "done"
  - user: "run it"
    unit: a
    script:
      - shell: { command: "python3 a.py" }
        expect: "2"
      - say: "ran"
checks:
  - file_contains: { path: a.py, text: "A = 2" }
"#;
    // On the script, turn 3's call carries its expect.
    let mut s = loss_sim(text);
    s.continue_turn(2);
    let r = s.respond(&req(vec![Message::user(3, "run it", None)], &[]));
    assert_eq!(r.expects.len(), 1);
    // Turn 2 stopped (the fact was nowhere in view): the edit was never made, so the shell
    // call of turn 3 expects nothing (the checks fail the cell, not a "broken task").
    let mut s = loss_sim(text);
    s.continue_turn(1);
    let mut msgs = vec![Message::user(2, "now use it", None)];
    let rs = drive(&mut s, &mut msgs, &[], &|_| String::new());
    assert_eq!(rs[0].tool_calls[0].name, "list_files");
    assert!(rs[1].text.starts_with("I stopped"), "{rs:?}");
    msgs.push(Message::user(3, "run it", None));
    let r = s.respond(&req(msgs, &[]));
    assert_eq!(r.tool_calls[0].name, "shell");
    assert!(r.expects.is_empty(), "{r:?}");
}
