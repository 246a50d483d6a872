//! Tests of `cli.rs`: the failure lines, the exit codes, the run-folder check, and the policy
//! texts of the help made from the registry and the commands' defaults.

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
        behaviour: None,
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
        behaviour: None,
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

/// The built-in policies and one of the test's own, registered as a program embedding
/// foldbench registers its own (examples/embed-policy, `main_with`).
fn registry_with_own_policy() -> policies::Registry {
    let mut reg = policies::Registry::builtin();
    reg.register(
        policies::Entry::new("test-keep-all", |_, b| {
            Ok(Box::new(policies::none::NonePolicy::new(b.window)))
        })
        .summary("every message, a policy of the test's own")
        .source("the command line's tests")
        .param("turns", "2", "turns", "the turns it keeps"),
    )
    .expect("a new name");
    reg
}

/// What `args` print as help with the policies of `reg`.
fn help_with(reg: &policies::Registry, args: &[&str]) -> String {
    use clap::CommandFactory;
    let e = with_policy_help(Cli::command(), reg)
        .try_get_matches_from(args)
        .expect_err("help is asked for");
    assert_eq!(e.kind(), clap::error::ErrorKind::DisplayHelp, "{args:?}");
    e.to_string()
}

#[test]
fn a_policy_a_program_registers_is_in_the_help_and_the_listing_without_a_hand_edit() {
    let own = registry_with_own_policy();
    let builtin = policies::Registry::builtin();
    for command in ["run", "replay", "ab"] {
        let help = help_with(&own, &["foldbench", command, "--help"]);
        assert!(
            help.contains("test-keep-all")
                && help.contains("every message, a policy of the test's own"),
            "{command}: {help}"
        );
        for name in builtin.names() {
            assert!(
                help.contains(&format!("  {name} ")),
                "{command} lists {name}"
            );
        }
        let plain = help_with(&builtin, &["foldbench", command, "--help"]);
        assert!(!plain.contains("test-keep-all"), "{command}: {plain}");
    }
    let listing = crate::policy::listing(&own, None).unwrap();
    let entry = "test-keep-all  every message, a policy of the test's own\n  source: the command \
                 line's tests\n  turns=2  turns: the turns it keeps\n";
    assert!(listing.ends_with(&format!("\n\n{entry}")), "{listing}");
    assert_eq!(
        crate::policy::listing(&own, Some("test-keep-all")).unwrap(),
        entry
    );
    assert!(crate::policy::listing(&builtin, Some("test-keep-all"))
        .unwrap_err()
        .to_string()
        .starts_with("error: unknown policy `test-keep-all`"));
}

#[test]
fn the_default_policies_in_the_help_are_the_ones_the_commands_take() {
    let reg = policies::Registry::builtin();
    let run = policies::POLICIES.join(", ");
    let top = help_with(&reg, &["foldbench", "--help"]);
    assert!(
        top.contains(&format!("under each context policy — {run} — and")),
        "{top}"
    );
    let short = help_with(&reg, &["foldbench", "run", "-h"]);
    assert!(short.contains(&format!("(default: {run});")), "{short}");
    // replay's are the ones its replayer takes without --policy: fold+strategies only when named.
    let replay = crate::replay::default_policies();
    assert_eq!(replay, ["none", "trim", "compact", "fold"]);
    let long = help_with(&reg, &["foldbench", "replay", "--help"]);
    assert!(
        long.contains("Policy to replay under (default: none, trim, compact, fold):"),
        "{long}"
    );
    let short = help_with(&reg, &["foldbench", "replay", "-h"]);
    assert!(
        short.contains("else none, trim, compact and fold; fold+strategies only when named"),
        "{short}"
    );
}
