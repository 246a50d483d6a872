//! The registry: names, parameters and their errors, sweeps, windows, arm lists.

use super::*;

fn reg() -> Registry {
    Registry::builtin()
}

#[test]
fn parameter_errors_name_the_policy_and_suggest() {
    let cases = [
        ("trim:kep=1", "policy `trim` has no parameter `kep` (did you mean `keep`?); its parameters: keep, mode, trigger_tokens"),
        ("none:x=1", "policy `none` has no parameter `x`; its parameters: window"),
        ("trim:mode=plceholder", "parameter `mode` must be one of drop, placeholder, not `plceholder` (did you mean `placeholder`?)"),
        ("trim:keep=many", "policy `trim`: parameter `keep` must be a whole number, not `many`"),
        ("clear-tool-uses:clear_tool_inputs=yes", "must be one of true, false, not `yes`"),
        ("clear-tool-uses:exclude_tools=shell++grep", "a list of names joined by `+`"),
        ("swe-agent:n=0", "parameter `n` must be at least 1, not 0"),
        ("trim:keep=1,keep=2", "parameter `keep` is given twice"),
        ("trim:keep", "parameter `keep` needs the form key=value"),
        ("fold:card_after_tool_calls=5,10", "to sweep `card_after_tool_calls` over several values write card_after_tool_calls=[5,10]"),
        ("trim:keep=0..5", "`keep=0..5` is a sweep"),
        ("clear-tool-use", "unknown policy `clear-tool-use` (did you mean `clear-tool-uses`?)"),
        ("obsrvation-masking:attention_window=5", "did you mean `observation-masking`?"),
        ("llm-summarizing:max_sise=100", "policy `llm-summarizing` has no parameter `max_sise` (did you mean `max_size`?); its parameters: max_size, keep_first, minimum_progress, max_tokens, max_input_tokens"),
        ("llm-summarizing:max_size=6", "`keep_first` (2) must be less than `max_size` / 2 - 1 (2)"),
        ("llm-summarizing:max_size=0", "parameter `max_size` must be at least 1, not 0"),
        ("llm-summarizing:keep_first=-1", "parameter `keep_first` must be a whole number, not `-1`"),
        ("llm-summarizing:minimum_progress=1", "`minimum_progress` is a fraction of the events (between 0 and 1), not 1"),
        ("llm-sumarizing", "did you mean `llm-summarizing`?"),
        ("llm-summarizing:max_tokens=lots", "policy `llm-summarizing`: parameter `max_tokens` must be a whole number, not `lots`"),
        ("hybrid:windw=5", "policy `hybrid` has no parameter `windw` (did you mean `window`?); its parameters: window, summarize_every, keep_last, trigger, context_window"),
        ("hybrid:window=0", "parameter `window` must be at least 1, not 0"),
        ("hybrid:trigger=lots", "parameter `trigger` must be a whole number, not `lots`"),
    ];
    for (text, want) in cases {
        let e = reg().check(text).unwrap_err();
        assert!(
            e.to_string().contains(want),
            "{text}:\n  got  {e}\n  want {want}"
        );
    }
}

#[test]
fn sweeps_expand_into_labelled_arms() {
    let texts = |t: &str| -> Vec<String> {
        reg()
            .expand(t)
            .unwrap()
            .into_iter()
            .map(|p| p.text)
            .collect()
    };
    assert_eq!(
        texts("trim:keep=0..2"),
        ["trim:keep=0", "trim:keep=1", "trim:keep=2"]
    );
    assert_eq!(
        texts("fold:card_after_tool_calls=[5,10,20],timing=eager"),
        [
            "fold:card_after_tool_calls=5,timing=eager",
            "fold:card_after_tool_calls=10,timing=eager",
            "fold:card_after_tool_calls=20,timing=eager"
        ]
    );
    assert_eq!(texts("none"), ["none"]);
    // In a pipeline each step's sweep crosses the others'.
    assert_eq!(
        texts("swe-agent:n=[2,5]|trim:keep=0..1"),
        [
            "swe-agent:n=2|trim:keep=0",
            "swe-agent:n=2|trim:keep=1",
            "swe-agent:n=5|trim:keep=0",
            "swe-agent:n=5|trim:keep=1"
        ]
    );
    let points = reg().expand("swe-agent:n=[2,5]|trim:keep=0..1").unwrap();
    assert_eq!(
        points[3].values,
        [
            ("n".to_string(), "5".to_string()),
            ("keep".into(), "1".into())
        ]
    );
    // Every point is checked: one bad value is an error naming it.
    let e = reg().expand("trim:mode=[drop,trash]").unwrap_err();
    assert!(e.to_string().contains("not `trash`"), "{e}");
}

#[test]
fn windows_go_to_the_policies_that_take_one() {
    let r = reg();
    assert_eq!(
        r.with_window("compact", 4000).as_deref(),
        Some("compact:window=4000")
    );
    assert_eq!(
        r.with_window("compact:window=10", 4000),
        None,
        "set already"
    );
    assert_eq!(r.with_window("trim", 4000), None, "trim takes no window");
    assert_eq!(
        r.with_window("trim|compact", 4000).as_deref(),
        Some("trim|compact:window=4000")
    );
    assert_eq!(
        r.with_window("codex", 4000).as_deref(),
        Some("codex:model_context_window=4000")
    );
    let takes_window = |text: &str| r.with_window(text, 4000).is_some();
    assert!(takes_window("fold") && takes_window("claude-code") && !takes_window("swe-agent"));
    // The hybrid's `window` is its masking window (tool results): the matrix's windows go to
    // its `context_window`.
    assert_eq!(
        r.with_window("hybrid:window=5", 4000).as_deref(),
        Some("hybrid:context_window=4000,window=5")
    );
    // OpenHands' summarising condenser takes the agent model's input limit.
    assert_eq!(
        r.with_window("llm-summarizing", 4000).as_deref(),
        Some("llm-summarizing:max_input_tokens=4000")
    );
    assert!(!takes_window("observation-masking"));
}

#[test]
fn arm_lists_split_at_policy_names_outside_brackets() {
    assert_eq!(
        reg().split_arms("none,trim:keep=1,mode=placeholder,fold:card_after_tool_calls=[5,10],timing=eager,swe-agent:n=2|trim"),
        [
            "none",
            "trim:keep=1,mode=placeholder",
            "fold:card_after_tool_calls=[5,10],timing=eager",
            "swe-agent:n=2|trim"
        ]
    );
    // A piece that is neither a policy nor a parameter is an arm of its own: its error names
    // it, not the arm before it.
    assert_eq!(reg().split_arms("none,trmi"), ["none", "trmi"]);
    assert_eq!(
        reg().split_arms("trim:keep=1,mode=drop,fodl:timing=eager"),
        ["trim:keep=1,mode=drop", "fodl:timing=eager"]
    );
}

#[test]
fn a_registered_policy_is_built_and_listed() {
    let mut r = reg();
    r.register(
        Entry::new("keep-nothing", |p, _| {
            let _ = p.take_u64("depth")?;
            Ok(Box::new(crate::none::NonePolicy::new(1)) as Box<dyn Policy>)
        })
        .summary("a test policy")
        .param("depth", "1", "turns", "how deep"),
    )
    .unwrap();
    assert!(r.check("keep-nothing:depth=3").is_ok());
    assert!(r
        .check("keep-nothing:dpth=3")
        .unwrap_err()
        .to_string()
        .contains("did you mean `depth`"));
    assert!(r.check("none|keep-nothing").is_ok(), "a pipeline step");
    assert!(
        r.help()
            .lines()
            .any(|l| l.trim_start().starts_with("keep-nothing") && l.ends_with(" a test policy")),
        "{}",
        r.help()
    );
    assert!(
        r.markdown()
            .contains("| `keep-nothing` | `depth` = 1 (turns) | your own |"),
        "{}",
        r.markdown()
    );
    let again = r.register(Entry::new("keep-nothing", |_, _| unreachable!()));
    assert!(again
        .unwrap_err()
        .to_string()
        .contains("registered already"));
    let bad = r.register(Entry::new("Keep Nothing", |_, _| unreachable!()));
    assert!(bad.unwrap_err().to_string().contains("lowercase letters"));
}

#[test]
fn the_delegate_modifier_goes_on_any_policy_named_by_name() {
    let r = reg();
    for (text, name, label) in [
        ("none+delegate", "none", "none+delegate"),
        (
            "fold+delegate:timing=eager",
            "fold",
            "fold+delegate:timing=eager",
        ),
        (
            "fold+strategies+delegate",
            "fold+strategies",
            "fold+strategies+delegate",
        ),
        (
            "trim+delegate:mode=placeholder,keep=1",
            "trim",
            "trim+delegate:keep=1,mode=placeholder",
        ),
    ] {
        let spec = r.parse(text).unwrap();
        assert!(spec.delegate, "{text}");
        assert_eq!(spec.name, name);
        assert_eq!(spec.label(), label);
        assert_eq!(
            r.parse(&spec.label()).unwrap(),
            spec,
            "the label reads back"
        );
        assert!(r.check(text).is_ok(), "{text}");
    }
    assert!(!r.parse("fold+strategies").unwrap().delegate);
    // A sweep keeps the modifier on every arm.
    let arms: Vec<String> = r
        .expand("trim+delegate:keep=[1,2]")
        .unwrap()
        .into_iter()
        .map(|p| p.text)
        .collect();
    assert_eq!(arms, ["trim+delegate:keep=1", "trim+delegate:keep=2"]);
    // Not on a pipeline's step, not on a name that does not exist.
    for bad in ["trim|fold+delegate", "fold+delegate|trim"] {
        let e = r.check(bad).unwrap_err();
        assert!(
            matches!(e, PolicyError::DelegateInPipeline(_)) && e.to_string().contains("+delegate"),
            "{bad}: {e}"
        );
    }
    let e = r.check("fodl+delegate").unwrap_err().to_string();
    assert!(e.contains("unknown policy `fodl+delegate`"), "{e}");
}

#[test]
fn a_state_a_policy_cannot_read_is_ignored() {
    use crate::messages::testing::{context, output, Step::*};
    use harness_core::policy::Plan;
    let c = context(vec![
        User("u1"),
        Calls(vec![("shell", output(300)), ("read_file", output(300))]),
        Close("done"),
        User("u2"),
        Calls(vec![("shell", output(300))]),
    ]);
    let as_json = |p: Plan| match p {
        Plan::Send { messages, action } => {
            let ms: Vec<&harness_core::Message> = messages.iter().map(|m| &**m).collect();
            format!("{action:?} {}", serde_json::to_string(&ms).unwrap())
        }
        other => format!("{other:?}"),
    };
    let bad = [
        serde_json::json!(null),
        serde_json::json!("state"),
        serde_json::json!({"cleared": 5, "files": "x", "input": [{"context": 3}], "last_tokens": -1}),
        serde_json::json!({"cleared": ["not a fingerprint"], "forgotten": [], "forgotten_events": []}),
    ];
    let mut tried = 0;
    for e in reg().entries() {
        let Some(parsed) = [format!("{}:window=1000", e.name()), e.name().to_string()]
            .iter()
            .filter_map(|t| reg().parse(t).ok())
            .find(|p| reg().build(p, 1000).is_ok())
        else {
            continue;
        };
        let mut fresh = reg().build(&parsed, 1000).unwrap();
        let want = as_json(fresh.plan(&c, 10));
        for state in &bad {
            let mut p = reg().build(&parsed, 1000).unwrap();
            p.restore_state(state);
            assert_eq!(as_json(p.plan(&c, 10)), want, "{}: {state}", e.name());
        }
        tried += 1;
    }
    assert!(tried > 20, "{tried} policies tried");
}

#[test]
fn policies_without_state_send_the_same_when_started_again() {
    // The policies judged to keep nothing between requests that the context does not give back
    // (no `saved_state`): started again before each request, with the context read again, each
    // sends what it sent kept in memory, while acting more than once.
    use crate::messages::testing::{count, host, output, Run, Step, Step::*};
    let session = |size: usize| -> Vec<Step> {
        let mut steps = Vec::new();
        for t in ["u1", "u2", "u3", "u4"] {
            steps.push(User(t));
            steps.push(Think(vec![("shell", output(size))]));
            steps.push(Calls(vec![
                ("read_file", output(size)),
                ("grep", output(size)),
            ]));
            steps.push(Think(vec![("shell", output(size))]));
            steps.push(Close("done"));
        }
        steps
    };
    let cases: [(&str, usize, &[&str]); 16] = [
        ("none", 100, &[]),
        ("trim", 100, &["trimmed"]),
        ("compact:window=1200", 100, &["compact false"]),
        ("clear-tool-uses:trigger=1000,keep=1", 100, &["cleared"]),
        ("clear-thinking:keep=1", 100, &["cleared the thinking"]),
        ("anthropic-compaction:trigger=50000", 6000, &["compact false"]),
        (
            "codex:model_context_window=2000,model_auto_compact_token_limit=700,tool_output_token_limit=20",
            100,
            &["compact false", "truncated"],
        ),
        ("aider:max_chat_history_tokens=600", 100, &["compact false"]),
        ("swe-agent:n=2", 100, &["elided"]),
        ("swe-agent:n=2,polling=3", 100, &["elided"]),
        ("observation-masking:attention_window=3", 100, &["masked"]),
        ("observation-masking:attention_window=3,view=foldbench", 100, &["masked"]),
        ("recent:max_events=8", 100, &["left out"]),
        ("llm-summarizing:max_size=8", 100, &["compact false"]),
        ("hybrid:window=2,summarize_every=3,keep_last=2", 100, &["compact false", "elided"]),
        ("swe-agent:n=2|compact:window=500", 100, &["compact false", "elided"]),
    ];
    for (spec, size, acted) in cases {
        let kept = host(spec, session(size), Run::Kept);
        for word in acted {
            assert!(count(&kept, word) >= 2, "{spec} {word}: {kept:#?}");
        }
        let again = host(spec, session(size), Run::Restarted);
        for (i, (a, b)) in kept.iter().zip(&again).enumerate() {
            assert_eq!(a, b, "{spec}: request {i} differs started again");
        }
        assert_eq!(kept.len(), again.len());
    }
}
