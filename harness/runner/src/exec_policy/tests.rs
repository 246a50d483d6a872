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
