//! Tests of `cli.rs`: the failure lines, the exit codes and the run-folder check.

use super::*;

#[test]
fn a_timed_out_check_is_printed_with_what_timed_out_and_the_limit() {
    let check = |label: &str, detail: &str| harness_core::record::CheckResult {
        label: label.into(),
        passed: false,
        detail: detail.into(),
    };
    let r = CellRecord {
        version: 1,
        id: "t/none/sim/1".into(),
        task: "t".into(),
        arm: "none".into(),
        policy: "none".into(),
        model: "sim".into(),
        seed: 1,
        status: Status::Failure,
        error: None,
        checks: vec![
            check(
                "shell: sleep 100",
                "timed out after 60s, the time limit of a check (--tool-timeout, at least \
                 60s)\nstarted",
            ),
            check("shell: false", "\n[exit code: 1]"),
        ],
        turns: 1,
        metrics: Default::default(),
        wall_ms: 0,
        model_ms: 0,
        agent: None,
    };
    assert_eq!(
        failure_line(&r),
        "failure t/none/sim/1: shell: sleep 100 (timed out after 60s, the time limit of a \
         check (--tool-timeout, at least 60s)); shell: false"
    );
}

#[test]
fn only_an_infrastructure_error_or_fail_on_failure_exits_100() {
    let cell = |id: &str, status: Status| CellRecord {
        version: 1,
        id: id.into(),
        task: "t".into(),
        arm: "none".into(),
        policy: "none".into(),
        model: "sim".into(),
        seed: 1,
        status,
        error: (status == Status::Error).then(|| "the workspace could not be made".into()),
        checks: vec![],
        turns: 1,
        metrics: Default::default(),
        wall_ms: 0,
        model_ms: 0,
        agent: None,
    };
    let ok = cell("a", Status::Success);
    let failed = cell("b", Status::Failure);
    let broken = cell("c", Status::Error);
    let both = [ok.clone(), failed.clone()];
    assert_eq!(outcome_code(&both, false), Code::Ok);
    assert_eq!(outcome_code(&both, true), Code::Failed);
    assert_eq!(outcome_code(std::slice::from_ref(&ok), true), Code::Ok);
    assert_eq!(
        outcome_code(&[ok.clone(), broken.clone()], false),
        Code::Failed
    );
    assert_eq!(outcome_note(std::slice::from_ref(&ok), false), None);
    assert_eq!(
        outcome_note(&[ok, failed, broken], false).unwrap(),
        "error: 1 of 3 cells ended in an infrastructure error (exit 100; the same command \
         runs them again); 1 failed a check"
    );
    assert!(matches!(exit_for(&[], false), Ok(Code::NoCells)));
}

#[test]
fn seeds_and_arms() {
    use harness_config::matrix::parse_seeds;
    assert_eq!(parse_seeds("1-3").unwrap(), vec![1, 2, 3]);
    assert_eq!(parse_seeds("1,5").unwrap(), vec![1, 5]);
    assert!(parse_seeds("3-1").is_err());
    assert_eq!(split_arms("none,trim"), vec!["none", "trim"]);
    assert_eq!(
        split_arms("fold:timing=eager,fold:timing=pressure,pressure_tokens=9"),
        vec![
            "fold:timing=eager",
            "fold:timing=pressure,pressure_tokens=9"
        ]
    );
    let id = run_id();
    assert!(
        id.len() == 19 && id.starts_with("run-20") && id.as_bytes()[12] == b'-',
        "{id}"
    );
}
