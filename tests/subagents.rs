//! `foldbench replay` of the in-repository sessions shows the subagent figures: the real Claude
//! Code session in `claude-code/-experiments-worktrees/` delegates to six subagents in two rounds
//! of three parallel `Agent` calls (its `subagents/` folder).

use crate::helpers::on_real_sessions;

const PARENT: &str = "ef958aa1-0e93-49f0-bb71-150f63befcd1";

fn replay(args: &[&str]) -> String {
    on_real_sessions("replay", args)
}

#[test]
fn replay_of_the_real_sessions_pairs_each_subagent_with_its_call_and_measures_it() {
    let json: serde_json::Value = serde_json::from_str(&replay(&["--format", "json"])).unwrap();
    let subs = &json["subagents"];
    let sessions = subs["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{subs:#}");
    let s = &sessions[0];
    assert_eq!(s["session"], PARENT);
    let children = s["children"].as_array().unwrap();
    assert_eq!(children.len(), 6);
    assert!(s["unpaired"].as_array().unwrap().is_empty());
    // Every child found its call by its first prompt, each a different call, three per round
    // (two assistant messages with three calls each).
    let mut calls: Vec<&str> = children
        .iter()
        .map(|c| c["call_id"].as_str().unwrap())
        .collect();
    calls.sort_unstable();
    calls.dedup();
    assert_eq!(calls.len(), 6);
    let mut rounds: Vec<u64> = children
        .iter()
        .map(|c| c["call_message"].as_u64().unwrap())
        .collect();
    rounds.dedup();
    assert_eq!(rounds.len(), 2, "{rounds:?}");
    for c in children {
        assert_eq!(c["matched"], "prompt", "{c:#}");
        assert_eq!(c["tool"], "Agent");
        for k in ["brief_tokens", "receipt_tokens", "work_tokens", "requests"] {
            assert!(c[k].as_u64().unwrap() > 0, "{k}: {c:#}");
        }
        // The three of a round ran side by side.
        assert!(c["overlap_ms"].as_i64().unwrap() > 0, "{c:#}");
        assert_eq!(c["requests"], c["requests_with_usage"]);
        assert!(c["cost"].as_f64().unwrap() > 0.0);
    }
    // The parent waited while they ran: idle no longer than the children's time.
    let idle = s["parent_idle_ms"].as_i64().unwrap();
    assert!(idle > 0 && idle <= s["span_ms"].as_i64().unwrap());
    let m = &s["measured"];
    let room = m["room"].as_array().unwrap();
    let policies: Vec<&str> = room.iter().map(|r| r["policy"].as_str().unwrap()).collect();
    assert_eq!(policies, ["none", "fold"]);
    for r in room {
        assert!(
            r["inline_tokens"].as_u64().unwrap() > r["delegated_tokens"].as_u64().unwrap(),
            "the work outweighs the briefs and receipts: {r:#}"
        );
    }
    let requests: u64 = children
        .iter()
        .map(|c| c["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(m["inline_requests"].as_u64().unwrap(), requests);
}

#[test]
fn the_subagents_table_shows_the_parents_row_and_the_ratio_over_sessions() {
    let json: serde_json::Value = serde_json::from_str(&replay(&["--format", "json"])).unwrap();
    let subs = &json["subagents"];
    let money = &subs["sessions"][0]["measured"]["money"];
    let delegated =
        money["children_cost"].as_f64().unwrap() + money["carried_cost"].as_f64().unwrap();
    let ratio = delegated / money["inline_cost"].as_f64().unwrap();
    let corpus = subs["cost_ratio"]["ratio"].as_f64().unwrap();
    assert!(
        (ratio - corpus).abs() < 1e-9,
        "one session: its own ratio {ratio} {corpus}"
    );
    let text = replay(&[]);
    let at = text
        .find("Subagents: 6 delegated from 1 parent session")
        .unwrap_or_else(|| panic!("no subagents section:\n{text}"));
    let section = &text[at..];
    let row = section
        .lines()
        .find(|l| l.contains(&PARENT[..8]))
        .unwrap_or_else(|| panic!("no row for the parent:\n{section}"));
    assert!(row.contains(&format!("{ratio:.2}×")), "{row}");
    assert!(
        section.contains("delegated vs inline over 1 session: cost Σ×"),
        "{section}"
    );
    assert!(
        section.contains("lost: the parent never saw the children's work"),
        "{section}"
    );
}

#[test]
fn the_replay_page_marks_each_subagent_on_its_parents_chart() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("replay.html");
    replay(&[
        "--policy",
        "none",
        "--policy",
        "fold",
        "-o",
        page.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(
        html.matches("<g class=\"span\">").count(),
        6,
        "one band per subagent"
    );
    assert!(html.contains("6 subagents: ▼ where it started, the band while it ran"));
    assert!(html.contains("subagent agent-a4ca7529859c158c2 (Research Claude Code plan mode)"));
}

#[test]
fn analyze_gives_the_same_subagent_figures_as_replay() {
    let of = |cmd: &str| -> serde_json::Value {
        let json: serde_json::Value =
            serde_json::from_str(&on_real_sessions(cmd, &["--format", "json"])).unwrap();
        json["subagents"].clone()
    };
    let (analyzed, replayed) = (of("analyze"), of("replay"));
    assert_eq!(
        analyzed["sessions"][0]["children"].as_array().map(Vec::len),
        Some(6),
        "{analyzed}"
    );
    assert_eq!(analyzed, replayed);
    let text = on_real_sessions("analyze", &[]);
    assert!(
        text.contains("Subagents: 6 delegated from 1 parent session"),
        "{text}"
    );
}
