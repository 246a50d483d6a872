//! After real compactions, on hand-made Claude Code sessions whose answers are known: every
//! kind of call after a loss (a re-read of an unchanged file, a re-read after an edit, an
//! identical command, a transcript read, a search of content shown before), the references by
//! source, the cost, the repeats, and the base rate of windows with no loss.

use harness_import::{import, Format, ImportedSession};
use harness_replay::hidden::{Common, SessionIndex};
use harness_replay::losses::{group, groups};
use harness_replay::losses::{measure, measure_all, LossKind, SessionLosses};
use serde_json::{json, Value};

/// A Claude Code session written record by record.
struct Cc {
    lines: Vec<String>,
    last: Option<String>,
    n: usize,
    calls: usize,
}

const TRANSCRIPT: &str = "/home/u/.claude/projects/-w/s1.jsonl";

impl Cc {
    fn new() -> Cc {
        Cc {
            lines: Vec::new(),
            last: None,
            n: 0,
            calls: 0,
        }
    }

    fn record(&mut self, mut v: Value) {
        self.n += 1;
        let uuid = format!("r{}", self.n);
        let o = v.as_object_mut().unwrap();
        o.insert("uuid".into(), json!(uuid));
        o.insert(
            "parentUuid".into(),
            self.last.clone().map_or(Value::Null, Value::String),
        );
        o.insert("sessionId".into(), json!("s1"));
        o.insert("cwd".into(), json!("/w"));
        o.insert("timestamp".into(), json!("2026-01-01T00:00:00Z"));
        o.insert("isSidechain".into(), json!(false));
        self.lines.push(v.to_string());
        self.last = Some(uuid);
    }

    fn prompt(&mut self, text: &str) -> &mut Self {
        self.record(json!({"type": "user", "message": {"role": "user", "content": text}}));
        self
    }

    fn assistant(&mut self, content: Value) {
        let k = self.n;
        self.record(json!({
            "type": "assistant",
            "requestId": format!("req{k}"),
            "message": {"id": format!("msg{k}"), "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5", "content": content,
                "usage": {"input_tokens": 1000 + k, "output_tokens": 10}}
        }));
    }

    /// One response with one call, and its result.
    fn call(&mut self, name: &str, input: Value, result: &str) -> &mut Self {
        self.calls += 1;
        let id = format!("toolu_{}", self.calls);
        self.assistant(json!([{"type": "tool_use", "id": id, "name": name, "input": input}]));
        self.record(json!({"type": "user", "message": {"role": "user",
            "content": [{"type": "tool_result", "tool_use_id": id, "content": result}]}}));
        self
    }

    fn read(&mut self, path: &str, content: &str) -> &mut Self {
        self.call(
            "Read",
            json!({ "file_path": format!("/w/{path}") }),
            content,
        )
    }

    fn bash(&mut self, command: &str, output: &str) -> &mut Self {
        self.call("Bash", json!({ "command": command }), output)
    }

    fn say(&mut self, text: &str) -> &mut Self {
        self.assistant(json!([{"type": "text", "text": text}]));
        self
    }

    fn compact(&mut self, summary: &str) -> &mut Self {
        self.record(json!({"type": "system", "subtype": "compact_boundary",
            "content": "Conversation compacted", "compactMetadata": {"trigger": "auto", "preTokens": 150000}}));
        self.record(json!({"type": "user", "isCompactSummary": true, "message": {"role": "user",
            "content": format!("This session is being continued from a previous conversation that ran out of context. {summary}\n\nIf you need specific details from before compaction, read the full transcript at: {TRANSCRIPT}")}}));
        self
    }

    fn session(&self) -> ImportedSession {
        import(
            "/corpus/p/s1.jsonl",
            &self.lines.join("\n"),
            Some(Format::ClaudeCode),
        )
        .unwrap()
        .remove(0)
    }
}

fn measured(cc: &Cc) -> SessionLosses {
    let s = cc.session();
    let ix = SessionIndex::new(&s);
    measure(&s, &ix, &Common::none())
}

/// A session with some work before its compaction: `a.py` and `b.py` read, `b.py` edited,
/// `cargo test` run.
fn before() -> Cc {
    let mut cc = Cc::new();
    cc.prompt("Fix the failing test in the parser module, the one about nested brackets.")
        .read("src/a.py", "def parse_nested(tokens):\n    return PARSE_TABLE[tokens]")
        .read("src/b.py", "BRACKET_LIMIT = 4096\nstack_depth_max = BRACKET_LIMIT")
        .bash("cargo test", "test parse_nested_brackets ... FAILED\ntest result: FAILED. 1 failed")
        .call(
            "Edit",
            json!({"file_path": "/w/src/b.py", "old_string": "BRACKET_LIMIT = 4096", "new_string": "BRACKET_LIMIT = 8192"}),
            "The file /w/src/b.py has been updated.",
        );
    cc
}

#[test]
fn a_reread_of_an_unchanged_file_after_a_compaction_is_a_refetch() {
    let mut cc = before();
    cc.compact("We were fixing the parser.").read(
        "src/a.py",
        "def parse_nested(tokens):\n    return PARSE_TABLE[tokens]",
    );
    let s = measured(&cc);
    assert_eq!(s.losses.len(), 1);
    let l = &s.losses[0];
    assert_eq!(l.kind, LossKind::Summary);
    assert_eq!(l.trigger.as_deref(), Some("auto"));
    assert_eq!(l.tokens_before, Some(150_000));
    assert_eq!(l.calls_before, 4);
    assert_eq!(l.transcript.as_deref(), Some(TRANSCRIPT));
    let w = &l.window;
    assert_eq!((w.calls, w.reread_unchanged, w.reread_changed), (1, 1, 0));
    assert_eq!(w.refetches(), 1);
    // The response re-reading it is one extra request; its output rides in no later request.
    assert_eq!(w.extra_requests, 1);
    assert_eq!(w.refetch_sizes.len(), 1);
}

#[test]
fn a_reread_after_an_edit_is_counted_apart_and_is_not_recovery() {
    let mut cc = before();
    cc.compact("We were fixing the parser.").read(
        "src/b.py",
        "BRACKET_LIMIT = 8192\nstack_depth_max = BRACKET_LIMIT",
    );
    let w = &measured(&cc).losses[0].window;
    assert_eq!((w.reread_unchanged, w.reread_changed), (0, 1));
    assert_eq!(w.refetches(), 0);
    assert_eq!(w.extra_requests, 0);
    // An edit made after the loss, between the read and the re-read, counts the same way.
    let mut cc = Cc::new();
    cc.prompt("Tidy the config loader please, it reads the file twice now.")
        .read("src/c.py", "LOAD_TWICE = True")
        .compact("We were tidying the loader.")
        .call(
            "Edit",
            json!({"file_path": "/w/src/c.py", "old_string": "LOAD_TWICE = True", "new_string": "LOAD_TWICE = False"}),
            "updated",
        )
        .read("src/c.py", "LOAD_TWICE = False");
    let w = &measured(&cc).losses[0].window;
    assert_eq!((w.calls, w.reread_unchanged, w.reread_changed), (2, 0, 1));
}

#[test]
fn an_identical_command_is_a_rerun_and_another_command_is_not() {
    let mut cc = before();
    cc.compact("We were fixing the parser.")
        .bash(
            "cargo test",
            "test parse_nested_brackets ... ok\ntest result: ok. 1 passed",
        )
        .bash("cargo test --release", "test result: ok. 1 passed");
    let w = &measured(&cc).losses[0].window;
    assert_eq!((w.calls, w.reruns), (2, 1));
    assert_eq!(w.refetches(), 1);
}

#[test]
fn a_read_of_the_transcript_the_summary_names_is_an_archive_read() {
    let mut cc = before();
    cc.compact("We were fixing the parser.").call(
        "Bash",
        json!({ "command": format!("grep -n BRACKET_LIMIT {TRANSCRIPT}") }),
        "12: BRACKET_LIMIT = 4096",
    );
    let w = &measured(&cc).losses[0].window;
    assert_eq!((w.calls, w.archive_reads, w.searches), (1, 1, 0));
    assert_eq!(w.refetches(), 1);
}

#[test]
fn a_search_whose_output_was_shown_before_is_a_refetch_and_a_new_one_is_not() {
    let mut cc = before();
    cc.compact("We were fixing the parser.")
        .call(
            "Grep",
            json!({"pattern": "BRACKET_LIMIT"}),
            "src/b.py:1:BRACKET_LIMIT = 4096\nsrc/b.py:2:stack_depth_max = BRACKET_LIMIT",
        )
        .call(
            "Grep",
            json!({"pattern": "lexer"}),
            "src/lexer.py:3:def lexer_entry_point(source_text):",
        );
    let w = &measured(&cc).losses[0].window;
    assert_eq!((w.calls, w.searches), (2, 1));
}

#[test]
fn references_are_held_by_the_summary_refetched_shown_by_new_work_or_used_with_no_source() {
    let mut cc = before();
    cc.compact("We were fixing parse_nested in src/a.py.")
        .read("src/x.py", "unrelated = 1")
        // An unchanged re-read (a re-fetch) and a re-read of a file edited since (new work).
        .read(
            "src/a.py",
            "def parse_nested(tokens):\n    return PARSE_TABLE[tokens]",
        )
        .bash(
            "cat src/b.py",
            "BRACKET_LIMIT = 8192\nstack_depth_max = BRACKET_LIMIT",
        )
        .call(
            "Edit",
            json!({"file_path": "/w/src/a.py", "old_string": "return PARSE_TABLE[tokens]",
                   "new_string": "return parse_nested(stack_depth_max)"}),
            "updated",
        );
    let w = &measured(&cc).losses[0].window;
    assert_eq!((w.reread_unchanged, w.reread_changed), (1, 1));
    // held: parse_nested (the summary names it); re-fetched: PARSE_TABLE and the copied line
    // `return PARSE_TABLE[tokens]` (from the unchanged re-read); new output: stack_depth_max
    // (from the re-read of the edited file); no source: `/w/src/a.py`, first written in the
    // re-read's own call (the summary names `src/a.py`, another string).
    assert_eq!(
        (
            w.refs_held,
            w.refs_refetched,
            w.refs_new_output,
            w.refs_no_source
        ),
        (1, 2, 1, 1),
        "{w:?}"
    );
}

#[test]
fn a_prompt_that_restates_an_earlier_one_is_a_repeat() {
    let mut cc = before();
    cc.compact("We were fixing the parser.")
        .prompt("again: fix the failing test in the parser module, the one about nested brackets")
        .say("On it.")
        .prompt("and run the whole suite after")
        .say("Will do.");
    let w = &measured(&cc).losses[0].window;
    assert_eq!((w.prompts, w.repeats), (2, 1));
}

#[test]
fn carried_outputs_and_extra_requests_are_the_recovery_cost() {
    let mut cc = before();
    cc.compact("We were fixing the parser.")
        .read(
            "src/a.py",
            "def parse_nested(tokens):\n    return PARSE_TABLE[tokens]",
        )
        .say("Read it.")
        .say("Still here.");
    let s = cc.session();
    let w = &measured(&cc).losses[0].window;
    let result = s
        .messages
        .iter()
        .rev()
        .find(|m| m.role == harness_core::Role::Tool)
        .unwrap();
    // The re-read's result is held by the two requests after it.
    assert_eq!(w.carried_tokens, 2 * u64::from(result.tokens));
    assert_eq!(w.extra_requests, 1);
    let k = s
        .requests
        .iter()
        .position(|r| r.message > s.events[0].message)
        .unwrap();
    assert_eq!(
        w.extra_request_tokens,
        s.requests[k].usage.unwrap().prompt_tokens()
    );
}

/// A session of `n` calls with no loss: reads of `f0..f18` and `pytest -q`, then, in the window
/// of calls 20–39, re-reads of `f0` and `f1`, in the window of 40–59 `pytest -q` again.
fn no_loss(n: usize) -> Cc {
    let mut cc = Cc::new();
    cc.prompt("Survey the modules and tell me which ones need tests, one by one please.");
    for i in 0..19 {
        cc.read(&format!("m/f{i}.py"), &format!("VALUE_{i} = {}", 1000 + i));
    }
    cc.bash("pytest -q", "3 passed");
    cc.read("m/f0.py", "VALUE_0 = 1000")
        .read("m/f1.py", "VALUE_1 = 1001");
    for i in 22..40 {
        cc.read(&format!("m/g{i}.py"), &format!("OTHER_{i} = {}", 2000 + i));
    }
    for i in 40..n {
        if i == 50 {
            cc.bash("pytest -q", "3 passed");
        } else {
            cc.read(&format!("m/h{i}.py"), &format!("MORE_{i} = {}", 3000 + i));
        }
    }
    cc
}

#[test]
fn windows_with_no_loss_give_the_base_rate() {
    let s = measured(&no_loss(60));
    assert!(s.losses.is_empty());
    // Calls 0–19 are history; 20–39 and 40–59 are windows.
    assert_eq!(s.base.len(), 2);
    let b: Vec<_> = s.base.iter().map(|b| &b.counts).collect();
    assert_eq!((b[0].calls, b[0].reread_unchanged, b[0].reruns), (20, 2, 0));
    assert_eq!((b[1].calls, b[1].reread_unchanged, b[1].reruns), (20, 0, 1));
    // A 59th call does not make a third, shorter window.
    assert_eq!(measured(&no_loss(59)).base.len(), 1);
    // Windows end before the first loss: a compaction after call 45 leaves one window.
    let mut cc = no_loss(45);
    cc.compact("Surveyed.").read("m/f3.py", "VALUE_3 = 1003");
    let s = measured(&cc);
    assert_eq!((s.base.len(), s.losses.len()), (1, 1));
}

#[test]
fn the_excess_over_the_base_rate_and_the_recovery_probability() {
    // After the loss: 1 call, 1 re-fetch (rate 1.0). Base: 40 calls, 3 re-fetches (0.075).
    let mut after = before();
    after
        .compact("We were fixing the parser.")
        .bash("cat src/a.py", "def parse_nested(tokens):\n    return PARSE_TABLE[tokens]")
        .call(
            "Edit",
            json!({"file_path": "/w/src/a.py", "old_string": "x", "new_string": "parse_nested(stack_depth_max) + PARSE_TABLE"}),
            "updated",
        );
    let sessions = vec![measured(&after), measured(&no_loss(60))];
    let all = groups(&sessions);
    let g = all.iter().find(|g| g.group == "all").unwrap();
    assert_eq!((g.after.calls, g.after.refetches()), (2, 1));
    assert_eq!((g.base.calls, g.base.refetches()), (40, 3));
    assert!((g.refetch_rate.point - 0.5).abs() < 1e-9);
    assert!((g.base_rate.unwrap().point - 0.075).abs() < 1e-9);
    assert!((g.excess_rate.unwrap().point - 0.425).abs() < 1e-9);
    // References to lost content: parse_nested and PARSE_TABLE re-fetched by the `cat`,
    // stack_depth_max and `/w/src/a.py` with no source (this summary names neither).
    let lost = g.after.refs_lost();
    let share = g.after.refs_refetched as f64 / lost as f64;
    assert!((g.refetched_share.point - share).abs() < 1e-9);
    // With no loss, the re-reads of f0 and f1 name paths that were in view: held, not
    // re-fetched; so nothing is re-fetched ordinarily and all of the share is recovery.
    assert_eq!((g.base.refs_held, g.base.refs_refetched), (2, 0));
    assert_eq!(g.base_refetched_share, Some(0.0));
    assert!((g.recover.point - share).abs() < 1e-9, "{:?}", g.recover);
    assert!(g.recover.lo <= g.recover.point && g.recover.point <= g.recover.hi);
    // The per-agent group is the same data here.
    let by_model = all
        .iter()
        .find(|g| g.group == "claude-code · claude-sonnet-4-5")
        .unwrap();
    assert_eq!(by_model.after, g.after);
    // A group with no base window says so.
    let no_base = group("x", &sessions[0].losses.iter().collect::<Vec<_>>(), &[]);
    assert!(no_base.base_rate.is_none());
}

#[test]
fn one_loss_gives_an_interval_not_a_point() {
    // Over one loss every bootstrap resample is that loss; the interval must still say how
    // little two calls tell.
    let mut after = before();
    after
        .compact("We were fixing the parser.")
        .bash("cat src/a.py", "def parse_nested(tokens):\n    return PARSE_TABLE[tokens]")
        .call(
            "Edit",
            json!({"file_path": "/w/src/a.py", "old_string": "x", "new_string": "parse_nested(stack_depth_max) + PARSE_TABLE"}),
            "updated",
        );
    let sessions = vec![measured(&after), measured(&no_loss(60))];
    let all = groups(&sessions);
    let g = all.iter().find(|g| g.group == "all").unwrap();
    assert_eq!((g.measured, g.after.calls, g.after.refetches()), (1, 2, 1));
    // Wilson's 95% interval for 1 of 2: 0.0945 to 0.9055.
    assert!(
        g.refetch_rate.lo < 0.1 && g.refetch_rate.hi > 0.9,
        "{:?}",
        g.refetch_rate
    );
    let (lo, hi) = harness_replay::losses::wilson(1, 2);
    assert!(
        (lo - 0.0945).abs() < 1e-3 && (hi - 0.9055).abs() < 1e-3,
        "{lo} {hi}"
    );
    for r in [
        g.no_source,
        g.recover,
        g.refetched_share,
        g.excess_rate.unwrap(),
    ] {
        assert!(r.lo < r.point || r.point < r.hi, "{r:?}");
        assert!(r.lo <= r.point && r.point <= r.hi, "{r:?}");
    }
    // The excess is a difference of two rates (0.5 − 0.075): Newcombe's interval from 1 of 2
    // and 3 of 40 reaches down to about 0.001, where one resampled loss would say 0.425.
    let e = g.excess_rate.unwrap();
    assert!(e.lo < 0.01 && e.hi > 0.8, "{e:?}");
}

#[test]
fn measure_all_finds_the_same_losses() {
    let sessions = vec![before().session(), {
        let mut cc = before();
        cc.compact("x")
            .read("src/a.py", "def parse_nested(tokens):");
        cc.session()
    }];
    let all = measure_all(&sessions, 2);
    assert_eq!(all.len(), 2);
    assert_eq!((all[0].losses.len(), all[1].losses.len()), (0, 1));
}

#[test]
fn the_shipped_profile_is_what_the_fixtures_measure() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/compactions");
    let report = harness_import::import_paths(&[dir], None).unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let measured = measure_all(&report.sessions, 2);
    let p = harness_replay::losses::profile(&measured, "fixtures", "x").unwrap();
    let shipped = harness_core::behaviour::Profile::shipped();
    assert_eq!(
        p.summary, shipped.summary,
        "measure again: docs/replay.md says how"
    );
    assert_eq!(p.none, shipped.none);
    assert_eq!(p.window_calls, shipped.window_calls);
    let ids = |p: &harness_core::behaviour::Profile| {
        p.provenance
            .sessions
            .iter()
            .map(|s| (s.id.clone(), s.losses))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&p), ids(shipped));
    assert_eq!(
        (p.provenance.losses, p.provenance.base_windows),
        (shipped.provenance.losses, shipped.provenance.base_windows)
    );
    assert_eq!(shipped.name, "fixtures");
    assert!(shipped
        .provenance
        .sessions
        .iter()
        .all(|s| s.source.starts_with("tests/fixtures/compactions/")));
}
