//! The exec policy's own tests: the text after `exec:`, sweeps and pipelines in it, and a
//! process's life under protocols 1 and 2.

use super::*;

/// `examples/policies/none.py` as an `exec:` text, `pin` replacing the version it answers.
fn none_py(dir: &std::path::Path, pin: Option<&str>) -> ExecText {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/policies/none.py"
    );
    let mut text = std::fs::read_to_string(script).expect("the example");
    if let Some(v) = pin {
        text = text.replace(r#"min(req.get("protocol", 1), 2)"#, v);
    }
    let path = dir.join(format!("none-{}.py", pin.unwrap_or("2")));
    std::fs::write(&path, text).expect("a copy");
    ExecText::parse(&format!("python3 {}", path.display())).expect("a command")
}

fn gone(pid: u32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn a_process_of_protocol_2_serves_the_next_session_and_ends_with_end_idle() {
    set_sandbox(Sandbox::unconfined());
    let dir = tempfile::tempdir().unwrap();
    let text = none_py(dir.path(), None);
    let first = ExecPolicy::start(text.clone(), 1_000);
    assert!(first.failed().is_none(), "{:?}", first.failed());
    assert_eq!(first.protocol(), 2);
    let pid = first.process_id().expect("a process");
    drop(first);
    assert!(!gone(pid), "kept between sessions");
    let second = ExecPolicy::start(text.clone(), 1_000);
    assert!(second.failed().is_none(), "{:?}", second.failed());
    assert_eq!(second.process_id(), Some(pid), "the kept process serves it");
    drop(second);
    end_idle();
    assert!(gone(pid), "ended and reaped");
    let third = ExecPolicy::start(text, 1_000);
    assert_ne!(third.process_id(), Some(pid), "a fresh process");
    drop(third);
    end_idle();
}

#[test]
fn a_process_of_protocol_1_ends_with_its_session_and_another_version_is_refused() {
    set_sandbox(Sandbox::unconfined());
    let dir = tempfile::tempdir().unwrap();
    let old = ExecPolicy::start(none_py(dir.path(), Some("1")), 1_000);
    assert!(old.failed().is_none(), "{:?}", old.failed());
    assert_eq!(old.protocol(), 1);
    let pid = old.process_id().expect("a process");
    drop(old);
    assert!(gone(pid), "a process of protocol 1 is not kept");
    let odd = ExecPolicy::start(none_py(dir.path(), Some("3")), 1_000);
    let err = odd.failed().expect("refused");
    assert!(
        err.contains("answered the handshake with protocol 3; foldbench speaks protocols 1 to 2"),
        "{err}"
    );
}

#[test]
fn the_text_is_options_then_the_command() {
    let t = ExecText::parse("  timeout=2.5 max_line=100 python3 my.py keep=1 ").unwrap();
    assert_eq!(t.timeout, Duration::from_millis(2500));
    assert_eq!(t.max_line, 100);
    assert_eq!(t.command, "python3 my.py keep=1");
    assert_eq!(
        t.canonical(),
        "timeout=2.5 max_line=100 python3 my.py keep=1"
    );
    let plain = ExecText::parse("python3 my.py").unwrap();
    assert_eq!(plain.timeout, DEFAULT_TIMEOUT);
    assert_eq!(plain.canonical(), "python3 my.py");
    let err = ExecText::parse("timeout=0 x").unwrap_err();
    assert!(matches!(err, ExecError::Timeout(_)), "{err}");
    assert!(err.to_string().contains("above 0"), "{err}");
    let err = ExecText::parse("timeout=5").unwrap_err();
    assert!(matches!(err, ExecError::NoCommand), "{err}");
    assert!(err.to_string().contains("needs a command"), "{err}");
    assert!(ExecText::parse("")
        .unwrap_err()
        .to_string()
        .contains("exec:python3 my_policy.py"));
}

#[test]
fn a_pipe_in_the_command_is_the_command_s_and_exec_is_checked_without_a_process() {
    let reg = with_exec(Registry::builtin());
    let spec = reg.parse("exec:python3 p.py | tee log").unwrap();
    assert_eq!(spec.name, NAME);
    assert_eq!(spec.arg.as_deref(), Some("python3 p.py | tee log"));
    assert_eq!(spec.label(), "exec:python3 p.py | tee log");
    assert!(
        reg.check("exec:/no/such/program").is_ok(),
        "checking starts nothing"
    );
    assert!(reg.check("exec:").is_err());
}

/// The texts and swept values of `text`'s arms.
fn arms(text: &str) -> Vec<(String, Vec<(String, String)>)> {
    let reg = with_exec(Registry::builtin());
    reg.expand(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .into_iter()
        .map(|p| (p.text, p.values))
        .collect()
}

#[test]
fn a_sweep_in_the_command_makes_one_arm_per_value_and_a_quoted_word_stays_as_written() {
    let kv = |k: &str, v: &str| (k.to_string(), v.to_string());
    assert_eq!(
        arms("exec:python3 p.py --keep=0..2"),
        [0, 1, 2]
            .iter()
            .map(|n| (
                format!("exec:python3 p.py --keep={n}"),
                vec![kv("--keep", &n.to_string())]
            ))
            .collect::<Vec<_>>()
    );
    let crossed = arms("exec:timeout=5 python3 p.py keep=[1,3] --mode=[a,b]");
    assert_eq!(crossed.len(), 4, "{crossed:?}");
    assert_eq!(crossed[1].0, "exec:timeout=5 python3 p.py keep=1 --mode=b");
    assert_eq!(crossed[1].1, vec![kv("keep", "1"), kv("--mode", "b")]);
    // Quoted, or one value in brackets (a character class): passed on as written.
    for text in [
        "exec:python3 p.py '--keep=0..2'",
        "exec:python3 p.py \"keep=[1,2]\"",
        "exec:python3 p.py --re=[a-z]",
        "exec:python3 ../p.py",
    ] {
        assert_eq!(arms(text), [(text.to_string(), vec![])], "{text}");
    }
    let reg = with_exec(Registry::builtin());
    let err = reg.expand("exec:python3 p.py --keep=3..1").unwrap_err();
    assert!(err.to_string().contains("3..1"), "{err}");
}

#[test]
fn a_policy_after_the_command_makes_a_pipeline_and_a_shell_pipe_stays_the_command_s() {
    let reg = with_exec(Registry::builtin());
    let spec = reg.parse("exec:python3 p.py|trim").unwrap();
    assert_eq!(spec.name, policies::pipeline::NAME);
    assert_eq!(spec.label(), "exec:python3 p.py|trim");
    assert_eq!(reg.parse(&spec.label()).unwrap(), spec);
    let spec = reg
        .parse("exec:python3 p.py | tee log|trim:keep=2")
        .unwrap();
    assert_eq!(spec.name, policies::pipeline::NAME);
    assert_eq!(spec.label(), "exec:python3 p.py | tee log|trim:keep=2");
    let spec = reg.parse("exec:python3 p.py | tee log").unwrap();
    assert_eq!(spec.name, NAME);
    assert_eq!(spec.arg.as_deref(), Some("python3 p.py | tee log"));
    // After a step as before one; sweeps cross.
    assert_eq!(
        reg.parse("trim|exec:python3 p.py").unwrap().label(),
        "trim|exec:python3 p.py"
    );
    let texts: Vec<String> = arms("exec:python3 p.py --k=1..2|trim:keep=[0,1]")
        .into_iter()
        .map(|a| a.0)
        .collect();
    assert_eq!(
        texts,
        [
            "exec:python3 p.py --k=1|trim:keep=0",
            "exec:python3 p.py --k=1|trim:keep=1",
            "exec:python3 p.py --k=2|trim:keep=0",
            "exec:python3 p.py --k=2|trim:keep=1"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Saving state: `saves_state`, `save`, `restore`

/// `tests/policies/stateful.py` (counts its plans, clears the results but the last at every
/// third, keeps what it cleared by fingerprint) as an `exec:` text, with `args`.
fn stateful(args: &str) -> ExecText {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/policies/stateful.py");
    ExecText::parse(&format!("python3 {script} {args}")).expect("a command")
}

/// The first `n` messages of a session of one turn: the user's, then calls and their long
/// results; made anew on each call (new ids, the same fingerprints), as a host that brings a
/// conversation back reads them again. The first is a note that leaves the context after the
/// first plan, as a compaction or a splice takes messages out.
fn steps(n: usize) -> Vec<Arc<Message>> {
    let mut out = vec![
        Message::user(1, "a note that leaves", None),
        Message::user(1, "work on it", None),
    ];
    let mut k = 0;
    while out.len() < n + 1 {
        k += 1;
        let call = ToolCall {
            id: format!("c{k}"),
            name: "shell".into(),
            args: json!({"command": format!("make step{k}")}),
        };
        out.push(Message::assistant(
            1,
            format!("step {k}"),
            vec![call.clone()],
        ));
        out.push(Message::tool_result(
            1,
            &call,
            format!("output of step {k}\n").repeat(20),
            false,
        ));
    }
    out.truncate(n + 1);
    out
}

/// What each plan sent (each message's text), over a session grown a message at a time to
/// `total` messages ([`steps`]); with `reload_at`, the policy is taken out after that many
/// plans (its state saved), a new one of `text` started, given the state, and the messages
/// read again. Also the state given to the new policy, when there was one.
fn plans(
    text: &ExecText,
    total: usize,
    reload_at: Option<usize>,
) -> (Vec<Vec<String>>, Option<Value>) {
    let mut p = ExecPolicy::start(text.clone(), 100_000);
    let mut ctx = Context {
        turn: 1,
        ..Context::default()
    };
    let mut sent = Vec::new();
    let mut given = None;
    let mut all = steps(total);
    for n in 1..=total {
        if reload_at == Some(n - 1) {
            let state = p.saved_state();
            assert!(p.failed().is_none(), "{:?}", p.failed());
            drop(p);
            p = ExecPolicy::start(text.clone(), 100_000);
            if let Some(s) = &state {
                p.restore_state(s);
            }
            given = state;
            all = steps(total);
        }
        // The note in the first plan's context only.
        let from = usize::from(n > 1);
        ctx.messages = all[from..=n].to_vec();
        let plan = p.plan(&ctx, 100);
        let messages = plan.sent().expect("stateful.py never compacts");
        sent.push(messages.iter().map(|m| m.text.clone()).collect());
        assert!(p.failed().is_none(), "{:?}", p.failed());
    }
    (sent, given)
}

#[test]
fn a_process_that_saves_its_state_sends_the_same_after_a_reload_under_both_protocols() {
    set_sandbox(Sandbox::unconfined());
    for args in ["", "--protocol=1"] {
        let text = stateful(args);
        let (kept, none) = plans(&text, 9, None);
        assert!(none.is_none());
        let cleared = |s: &[Vec<String>]| {
            s.iter()
                .map(|p| p.iter().filter(|t| t.contains("[cleared by")).count())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            cleared(&kept),
            [0, 0, 0, 0, 0, 1, 1, 1, 3],
            "{args}: every third plan clears"
        );
        // Taken out after its seventh plan (its count and what it cleared saved), brought back.
        let (again, state) = plans(&text, 9, Some(7));
        let state = state.expect("a state");
        assert_eq!(state["plans"], 7, "{args}: {state}");
        assert_eq!(
            state["cleared"].as_array().map(Vec::len),
            Some(1),
            "{args}: {state}"
        );
        assert_eq!(
            kept, again,
            "{args}: the same plans with the state given back"
        );
        // The same process ignoring what it is given starts again: other plans.
        let (forgot, _) = plans(&stateful(&format!("{args} --forget")), 9, Some(7));
        assert_ne!(
            kept, forgot,
            "{args}: the test sees a state that was not restored"
        );
        // Kept by protocol id, which counts again in the new session: other messages cleared.
        let by_id = stateful(&format!("{args} --by-id"));
        let (kept_by_id, _) = plans(&by_id, 9, None);
        assert_eq!(kept, kept_by_id, "{args}: by id within a session, the same");
        let (again_by_id, _) = plans(&by_id, 9, Some(7));
        assert_ne!(kept, again_by_id, "{args}: ids do not outlive the session");
    }
    end_idle();
}

#[test]
fn a_state_asked_again_before_any_other_request_is_the_one_given() {
    set_sandbox(Sandbox::unconfined());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("exchange.log");
    let p = ExecPolicy::start(stateful(""), 1_000);
    // The log of this policy only (the environment variable would reach other tests).
    p.inner.borrow_mut().log = Some(std::fs::File::create(&log).unwrap());
    assert_eq!(p.saved_state(), Some(json!({"plans": 0, "cleared": []})));
    assert_eq!(p.saved_state(), Some(json!({"plans": 0, "cleared": []})));
    let mut p = p;
    let ctx = Context {
        messages: steps(3),
        ..Context::default()
    };
    p.plan(&ctx, 100);
    assert_eq!(p.saved_state(), Some(json!({"plans": 1, "cleared": []})));
    p.restore_state(&json!({"plans": 7, "cleared": []}));
    assert_eq!(p.saved_state(), Some(json!({"plans": 7, "cleared": []})));
    let body = std::fs::read_to_string(&log).unwrap();
    let asked: Vec<&str> = body
        .lines()
        .filter(|l| l.starts_with("> "))
        .filter_map(|l| l.split("\"type\":\"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(asked, ["save", "plan", "save", "restore"], "{body}");
    drop(p);
    end_idle();
}

#[test]
fn a_process_that_does_not_save_its_state_is_never_asked_for_it() {
    set_sandbox(Sandbox::unconfined());
    // It answers `save` and `restore` out of protocol: being sent either would fail it.
    for args in ["--no-save", "--no-save --protocol=1"] {
        let mut p = ExecPolicy::start(stateful(args), 1_000);
        assert_eq!(p.saved_state(), None, "{args}");
        p.restore_state(&json!({"plans": 7, "cleared": []}));
        let ctx = Context {
            messages: steps(3),
            ..Context::default()
        };
        assert!(p.plan(&ctx, 100).sent().is_some());
        assert!(p.failed().is_none(), "{args}: {:?}", p.failed());
    }
    end_idle();
}

#[test]
fn a_save_answered_out_of_protocol_fails_the_policy_naming_it() {
    set_sandbox(Sandbox::unconfined());
    let p = ExecPolicy::start(stateful("--bad-save"), 1_000);
    let pid = p.process_id().expect("a process");
    assert_eq!(p.saved_state(), None);
    let err = p.failed().expect("failed");
    assert!(
        err.contains(
            "wrote an unknown or unexpected message (type \"ok\") answering the `save` request, which is answered with \"state\""
        ),
        "{err}"
    );
    assert!(err.contains("; the line: {\"type\": \"ok\""), "{err}");
    assert!(gone(pid), "the process is ended");
    // Asked again: nothing, no panic, the same reason.
    assert_eq!(p.saved_state(), None);
    assert_eq!(p.failed(), Some(err));
    // A state without its field, and a declaration that is not a boolean.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("odd.py");
    std::fs::write(
        &script,
        "import json, sys\n\
         for line in sys.stdin:\n    \
             r = json.loads(line)\n    \
             a = {'hello': {'type': 'hello', 'protocol': 2}, 'open': {'type': 'open', 'saves_state': True if sys.argv[1] == 'yes' else 'yes'}}.get(r['type'], {'type': 'state'})\n    \
             a['re'] = r['id']\n    \
             print(json.dumps(a), flush=True)\n",
    )
    .unwrap();
    let odd = |arg: &str| {
        ExecPolicy::start(
            ExecText::parse(&format!("python3 {} {arg}", script.display())).unwrap(),
            1_000,
        )
    };
    let p = odd("yes");
    assert!(p.failed().is_none(), "{:?}", p.failed());
    assert_eq!(p.saved_state(), None);
    let err = p.failed().expect("failed");
    assert!(
        err.contains("answered `state` without a `state` field"),
        "{err}"
    );
    let err = odd("other").failed().expect("failed");
    assert!(
        err.contains("declared `saves_state` as \"yes\": write true"),
        "{err}"
    );
    end_idle();
}

#[test]
fn the_topic_example_keeps_the_topics_it_will_fold_across_a_reload() {
    // examples/policies/fold_on_topic_change.py learns at the end of turn 1 that its topic
    // ended, and folds it at the end of turn 2: taken out between, it is given it back.
    set_sandbox(Sandbox::unconfined());
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/policies/fold_on_topic_change.py"
    );
    let text = ExecText::parse(&format!("python3 {script}")).unwrap();
    let turn = |t: u32| {
        vec![
            Message::user(t, format!("the question of turn {t}"), None),
            Message::assistant(t, format!("the answer of turn {t}"), vec![]),
        ]
    };
    let next = "a new topic, in a message longer than sixty characters: the user moved on";
    let folds = |restore: bool| {
        let mut p = ExecPolicy::start(text.clone(), 100_000);
        let mut ctx = Context {
            turn: 1,
            messages: turn(1),
            ..Context::default()
        };
        assert!(
            p.end_turn(&ctx, Some(next)).is_empty(),
            "turn 1 is in progress"
        );
        let state = p.saved_state().expect("its state");
        assert_eq!(state, json!({"start": 2, "pending": [[1, 1]]}));
        drop(p);
        let mut p = ExecPolicy::start(text.clone(), 100_000);
        if restore {
            p.restore_state(&state);
        }
        ctx.turn = 2;
        ctx.messages.extend(turn(2));
        let splices = p.end_turn(&ctx, Some("ok"));
        assert!(p.failed().is_none(), "{:?}", p.failed());
        splices.iter().map(|s| (s.from, s.to)).collect::<Vec<_>>()
    };
    assert_eq!(
        folds(true),
        [(1, 1)],
        "the topic of turn 1, folded at the end of turn 2"
    );
    assert_eq!(folds(false), [], "started again, it forgot it");
    end_idle();
}
