//! Tests of `matrix`.

use super::*;

fn vocab_policy(s: &str, label: &str) -> Result<Vec<SweepPoint>, VocabError> {
    let (name, rest) = s.split_once(':').unwrap_or((s, ""));
    if !["none", "trim", "compact", "fold", "fold+strategies"].contains(&name) {
        return Err(format!("unknown policy `{name}`").into());
    }
    if name == "trim" && rest.contains("window") {
        return Err("trim: unknown parameter `window`".into());
    }
    // The one sweep this vocabulary knows: `keep=0..1`.
    if rest == "keep=0..1" {
        return Ok((0..2)
            .map(|k| SweepPoint {
                policy: format!("{name}:keep={k}"),
                label: if label == s {
                    format!("{name}:keep={k}")
                } else {
                    format!("{label}:keep={k}")
                },
                values: vec![("keep".into(), k.to_string())],
            })
            .collect());
    }
    Ok(vec![SweepPoint {
        policy: s.to_string(),
        label: label.to_string(),
        values: Vec::new(),
    }])
}

fn vocab_window(s: &str, w: u64) -> Option<String> {
    let takes =
        ["none", "compact", "fold", "fold+strategies"].contains(&s.split(':').next().unwrap_or(s));
    (takes && !s.contains("window=")).then(|| with_param(s, "window", w))
}

fn vocab_model(s: &str) -> Result<(), VocabError> {
    if s.starts_with("sim") || s.starts_with("openai:") {
        Ok(())
    } else {
        Err(format!("unknown model `{s}`").into())
    }
}

fn vocab() -> Vocabulary<'static> {
    Vocabulary {
        policy: &vocab_policy,
        window: &vocab_window,
        model: &vocab_model,
    }
}

const GOOD: &str = r#"version: 1
profiles:
  default:
    tasks: ["tasks/*.yaml"]
    arms: [none, trim, compact]
    models: [sim]
    seeds: 1-3
    regression:
      reruns: 0.5
  ci:
    tasks:
      - tasks/trim-rerun.yaml
    arms:
      - none
      - { label: trim, policy: "trim:keep=1" }
      - { policy: fold, model: "sim:judge=eager" }
    seeds: [1, 2]
    windows: [1000, 2000]
    prices:
      sim: { input: 1.5 }
    regression:
      median_request_tokens: 5%
"#;

#[test]
fn profiles_layer_on_default() {
    let f = load("foldbench.yaml", GOOD, &vocab()).unwrap();
    assert_eq!(f.profile_names(), vec!["default", "ci"]);
    let d = f.profile("default").unwrap();
    assert_eq!(d.seeds, Some(vec![1, 2, 3]));
    assert_eq!(d.arms.as_ref().unwrap().len(), 3);
    let ci = f.profile("ci").unwrap();
    assert_eq!(ci.seeds, Some(vec![1, 2]));
    assert_eq!(ci.models, Some(vec!["sim".to_string()]));
    assert_eq!(
        ci.tasks.as_ref().unwrap()[0].pattern,
        "tasks/trim-rerun.yaml"
    );
    assert_eq!(ci.tasks.as_ref().unwrap()[0].line, 12);
    assert_eq!(ci.regression.len(), 2, "maps merge");
    assert_eq!(ci.prices["sim"].input, 1.5);
    let arms = apply_windows(
        ci.arms.as_ref().unwrap(),
        ci.windows.as_deref().unwrap(),
        &vocab_window,
    );
    let labels: Vec<&str> = arms.iter().map(|a| a.label.as_str()).collect();
    assert_eq!(
        labels,
        vec![
            "none:window=1000",
            "none:window=2000",
            "trim",
            "fold:window=1000",
            "fold:window=2000"
        ]
    );
    assert_eq!(arms[2].policy, "trim:keep=1");
    let cells = expand(
        &["t".to_string()],
        &arms,
        ci.models.as_deref().unwrap(),
        &[1, 2],
    );
    assert_eq!(cells.len(), 10);
    assert_eq!(cells[4].id, "t/trim/sim/1");
    assert_eq!(cells[9].id, "t/fold:window=2000/sim:judge=eager/2");
    assert!(f
        .profile("nightly")
        .unwrap_err()
        .to_string()
        .contains("defines: default, ci"));
}

#[test]
fn every_problem_has_a_position() {
    let bad = GOOD
        .replace("    seeds: 1-3\n", "    seeds: 3-1\n    colour: red\n")
        .replace(
            "- { label: trim, policy: \"trim:keep=1\" }",
            "- { label: trim, policy: \"trim2\" }",
        )
        .replace("reruns: 0.5", "rerunz: 0.5");
    let problems = load("m.yaml", &bad, &vocab()).unwrap_err();
    let text: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    assert_eq!(problems.len(), 4, "{text:#?}");
    assert!(
        text.iter()
            .any(|t| t.starts_with("m.yaml:7:5: `seeds`: bad seed range")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|t| t.starts_with("m.yaml:8:5: unknown field `colour`")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|t| t.starts_with("m.yaml:10:7: unknown field `rerunz`")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|t| t.starts_with("m.yaml:16:24: unknown policy `trim2`")),
        "{text:#?}"
    );
}

#[test]
fn duplicate_arms_and_bad_values_are_reported() {
    let text = "arms: [trim, trim]\nseeds: [1, 1]\nwindows: 0\nprices:\n  sim: { output: 2 }\nregression:\n  reruns: lots\n";
    let problems = load("m.yaml", text, &vocab()).unwrap_err();
    let text: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    assert_eq!(problems.len(), 5, "{text:#?}");
    assert!(
        text[0].starts_with("m.yaml:1:14: the arm `trim` is given twice"),
        "{text:#?}"
    );
}

#[test]
fn an_empty_file_is_the_defaults() {
    let f = load("m.yaml", "", &vocab()).unwrap();
    assert_eq!(f.profile("default").unwrap(), Layer::default());
    for odd in [
        "[]",
        "3",
        "profiles: 3",
        "profiles: { a: [] }",
        "arms: {}",
        "\u{0}",
    ] {
        let _ = load("odd.yaml", odd, &vocab());
    }
}

#[test]
fn partitions_cover_every_cell_once() {
    let ids: Vec<String> = (0..100).map(|i| format!("t{i}/trim/sim/1")).collect();
    for kind in ["hash", "slice"] {
        let parts: Vec<Partition> = (1..=3)
            .map(|k| Partition::parse(&format!("{kind}:{k}/3")).unwrap())
            .collect();
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(parts.iter().filter(|p| p.contains(i, id)).count(), 1);
        }
    }
    let p = Partition::parse("hash:2/4").unwrap();
    assert_eq!(p.to_string(), "hash:2/4");
    // Stable under adding cells: a cell's hash shard does not depend on its position.
    assert_eq!(p.shard_of(0, "a/b/c/1"), p.shard_of(99, "a/b/c/1"));
    for bad in ["hash:0/2", "hash:3/2", "hash:1", "mod:1/2", "hash:a/b", ""] {
        assert!(Partition::parse(bad).is_err(), "{bad}");
    }
    assert_eq!(fnv1a64(""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a64("a"), 0xaf63_dc4c_8601_ec8c);
}

#[test]
fn seeds_parse() {
    assert_eq!(parse_seeds("1-3").unwrap(), vec![1, 2, 3]);
    assert_eq!(parse_seeds("1,5").unwrap(), vec![1, 5]);
    assert!(parse_seeds("3-1")
        .unwrap_err()
        .to_string()
        .contains("3 is after 1"));
    assert_eq!(parse_seeds("1-10000").unwrap().len(), 10_000);
    let e = parse_seeds("1-1000000000").unwrap_err().to_string();
    assert_eq!(
        e,
        "seed range `1-1000000000` gives 1000000000 seeds, more than 10000, the most one range gives; write a shorter range such as 1-10000"
    );
    assert!(parse_seeds("0-18446744073709551615")
        .unwrap_err()
        .to_string()
        .contains("gives 18446744073709551616 seeds"));
    assert!(parse_seeds("1,1")
        .unwrap_err()
        .to_string()
        .contains("twice"));
}

#[test]
fn a_swept_arm_becomes_arms_that_remember_their_sweep() {
    let text = "arms:\n  - none\n  - \"trim:keep=0..1\"\n  - { label: mine, policy: \"trim:keep=0..1\" }\n  - fold\n";
    let f = load("m.yaml", text, &vocab()).unwrap();
    let arms = f.profile("default").unwrap().arms.unwrap();
    let labels: Vec<&str> = arms.iter().map(|a| a.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "none",
            "trim:keep=0",
            "trim:keep=1",
            "mine:keep=0",
            "mine:keep=1",
            "fold"
        ],
        "a sweep's arms stay where it was written, together"
    );
    assert_eq!(arms[2].policy, "trim:keep=1");
    assert_eq!(
        arms[4].sweep,
        Some(SweepOf {
            arm: "mine".into(),
            values: vec![("keep".into(), "1".into())]
        })
    );
    assert_eq!(arms[0].sweep, None);
    // Two sweeps that make the same label: the second is reported where it is written.
    let twice = "arms:\n  - \"trim:keep=0..1\"\n  - trim:keep=1\n";
    let problems = load("m.yaml", twice, &vocab()).unwrap_err();
    assert!(
        problems[0]
            .to_string()
            .starts_with("m.yaml:3:3: the arm `trim:keep=1` is given twice"),
        "{problems:?}"
    );
}
