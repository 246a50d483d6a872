//! A constructed parent and child (Claude Code JSONL written here): the pairing, the room saved
//! and the money checked against figures computed by hand from the messages' token counts.

use harness_core::prices::PriceTable;
use harness_core::tokens;
use harness_core::Message;
use harness_import::ImportedSession;
use harness_replay::subagents::{self, Match};
use harness_replay::ReplayConfig;

const T: &str = "2026-01-01T10";

/// A Claude Code record line.
fn line(
    kind: &str,
    uuid: &str,
    parent: Option<&str>,
    at: &str,
    message: &str,
    side: bool,
) -> String {
    let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    let side = if side {
        r#","isSidechain":true,"agentId":"x1""#
    } else {
        ""
    };
    format!(
        r#"{{"type":"{kind}","uuid":"{uuid}","parentUuid":{parent},"sessionId":"P","timestamp":"{T}:{at}.000Z","requestId":"q-{uuid}"{side},"message":{message}}}"#
    )
}

fn assistant(id: &str, model: &str, content: &str, usage: &str) -> String {
    format!(r#"{{"id":"{id}","role":"assistant","model":"{model}","content":[{content}]{usage}}}"#)
}

fn result(call: &str, text: &str) -> String {
    format!(
        r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{call}","content":[{{"type":"text","text":"{text}"}}]}}]}}"#
    )
}

const PROMPT: &str = "Find where PORT is set and report the file and the value.";
const RECEIPT: &str = "PORT = 8080, set in app/config.py line 12.";
const GREP: &str = "app/config.py:12:PORT = 8080\\napp/server.py:3:from config import PORT\\napp/server.py:40:    serve(port=PORT)\\ntests/test_server.py:8:    assert PORT == 8080";

fn parent_jsonl() -> String {
    let opus = "claude-opus-4-5";
    let call = format!(
        r#"{{"type":"tool_use","id":"call1","name":"Agent","input":{{"description":"find the port","prompt":"{PROMPT}"}}}}"#
    );
    [
        line(
            "user",
            "u1",
            None,
            "00:00",
            r#"{"role":"user","content":"Which port does the server use?"}"#,
            false,
        ),
        line(
            "assistant",
            "a1",
            Some("u1"),
            "00:01",
            &assistant("m1", opus, &call, ""),
            false,
        ),
        line(
            "user",
            "r1",
            Some("a1"),
            "00:30",
            &result("call1", RECEIPT),
            false,
        ),
        line(
            "assistant",
            "a2",
            Some("r1"),
            "00:32",
            &assistant(
                "m2",
                opus,
                r#"{"type":"text","text":"It listens on 8080."}"#,
                "",
            ),
            false,
        ),
        line(
            "user",
            "u2",
            Some("a2"),
            "01:00",
            r#"{"role":"user","content":"Good. Is that the default?"}"#,
            false,
        ),
        line(
            "assistant",
            "a3",
            Some("u2"),
            "01:02",
            &assistant(
                "m3",
                opus,
                r#"{"type":"text","text":"Yes, nothing overrides it."}"#,
                "",
            ),
            false,
        ),
    ]
    .join("\n")
}

fn child_jsonl() -> String {
    let haiku = "claude-haiku-4-5";
    let grep =
        r#"{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"grep -rn PORT ."}}"#;
    let u1 = r#","usage":{"input_tokens":100,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":20}"#;
    let u2 = r#","usage":{"input_tokens":10,"cache_read_input_tokens":1000,"cache_creation_input_tokens":200,"output_tokens":30}"#;
    let prompt = format!(r#"{{"role":"user","content":"{PROMPT}"}}"#);
    [
        line("user", "c0", None, "00:02", &prompt, true),
        line(
            "assistant",
            "c1",
            Some("c0"),
            "00:05",
            &assistant("n1", haiku, grep, u1),
            true,
        ),
        line("user", "c2", Some("c1"), "00:06", &result("t1", GREP), true),
        line(
            "assistant",
            "c3",
            Some("c2"),
            "00:29",
            &assistant(
                "n2",
                haiku,
                &format!(r#"{{"type":"text","text":"{RECEIPT}"}}"#),
                u2,
            ),
            true,
        ),
    ]
    .join("\n")
}

fn sessions() -> Vec<ImportedSession> {
    let mut s = harness_import::import("p/P.jsonl", &parent_jsonl(), None).unwrap();
    s.extend(harness_import::import("p/agent-x1.jsonl", &child_jsonl(), None).unwrap());
    assert_eq!(
        s.len(),
        2,
        "{:?}",
        s.iter().map(|s| &s.id).collect::<Vec<_>>()
    );
    s
}

fn tok(m: &Message) -> u64 {
    u64::from(m.tokens)
}

/// The cost of requests under `none` with no fixed prefix, each request's context extending the
/// previous one's: request j writes S_j − S_(j−1) (its new messages) and reads S_(j−1) from the
/// cache; its output is its answer's tokens less the 4 of message overhead. Dollars per million
/// at the price's input rate times each multiplier.
fn none_cost(requests: &[(u64, u64)], input: f64, write: f64, read: f64, output: f64) -> f64 {
    let mut prev = 0;
    let mut cost = 0.0;
    for &(context, answer) in requests {
        let written = context - prev;
        cost += (written as f64 * write + prev as f64 * read + (answer - 4) as f64 * output)
            * input
            / 1e6;
        prev = context;
    }
    cost
}

#[test]
fn a_constructed_parent_and_child_pair_with_hand_computed_figures() {
    let sessions = sessions();
    let (parent, child) = (&sessions[0], &sessions[1]);
    assert_eq!(child.parent.as_deref(), Some("P"));
    let prices = PriceTable::default();
    let subs = subagents::delegations(&sessions, &prices);
    assert_eq!(subs.len(), 1);
    let c = subs[0].children[0].clone();
    assert_eq!((c.id.as_str(), c.matched), ("agent-x1", Match::Prompt));
    // Parent messages: 0 u1, 1 a1 (the call), 2 the receipt, 3 a2, 4 u2, 5 a3.
    let pm = &parent.messages;
    assert_eq!((c.call_message, c.receipt_message), (1, Some(2)));
    // Brief: the call as counted in a1 = name + canonical input + 4 of overhead; a1 holds no
    // text, so a1 = 4 + the call.
    let args = format!(r#"{{"description":"find the port","prompt":"{PROMPT}"}}"#);
    let brief = u64::from(tokens::count("Agent") + tokens::count(&args) + 4);
    assert_eq!(c.brief_tokens, brief);
    assert_eq!(tok(&pm[1]), 4 + brief);
    assert_eq!(c.receipt_tokens, tok(&pm[2]));
    // Child messages: 0 the prompt, 1 the grep call, 2 its result, 3 the final answer. Work =
    // the call and its result; the final answer is left out (the receipt carries it).
    let cm = &child.messages;
    assert_eq!(c.work_tokens, tok(&cm[1]) + tok(&cm[2]));
    // Recorded usage at Haiku 4.5's list price ($1 input, $1.25 write, $0.10 read, $5 output per
    // million): request 1 = 100 × 1 + 20 × 5 = 200; request 2 = 10 × 1 + 200 × 1.25 + 1000 ×
    // 0.10 + 30 × 5 = 10 + 250 + 100 + 150 = 510; 710 per million = $0.000710.
    assert_eq!(
        (
            c.requests,
            c.input_tokens,
            c.cached_tokens,
            c.written_tokens,
            c.output_tokens
        ),
        (2, 110, 1000, 200, 50)
    );
    assert!((c.cost - 0.000_710).abs() < 1e-12, "{}", c.cost);
    // Span 10:00:02 to 10:00:29 = 27 s, no sibling; the parent waited from its call (10:00:01)
    // to the receipt (10:00:30), the child running 27 s of it.
    assert_eq!((c.span_ms(), c.overlap_ms), (27_000, 0));
    assert_eq!(subs[0].parent_idle_ms, 27_000);
}

#[test]
fn a_constructed_parent_and_child_give_hand_computed_room_and_money() {
    let sessions = sessions();
    let (pm, cm) = (&sessions[0].messages, &sessions[1].messages);
    let mut subs = subagents::delegations(&sessions, &PriceTable::default());
    let c = subs[0].children[0].clone();
    let args = format!(r#"{{"description":"find the port","prompt":"{PROMPT}"}}"#);
    let config = ReplayConfig::default();
    subagents::measure(&sessions, &mut subs, &config, None, 1).unwrap();
    let m = subs[0].measured.as_ref().unwrap();
    // Inline: a1 keeps the call with input {} (stub = a1 − tokens(input) + tokens("{}")), then
    // the work, then the receipt. The parent's later requests (a2, a3) each carry the work and
    // the stub instead of the brief: saved = 2 × (work − tokens(input) + tokens("{}")).
    let stub = tok(&pm[1]) - u64::from(tokens::count(&args)) + u64::from(tokens::count("{}"));
    let per_request = c.work_tokens as i64 + stub as i64 - tok(&pm[1]) as i64;
    let none = m.saving("none").unwrap();
    assert_eq!(none.saved(), 2 * per_request);
    // As recorded, a1 read u1, a2 u1 a1 r, a3 u1 a1 r a2 u2 (no prefix: no usage recorded).
    let (u1, a1, r, a2, u2, a3) = (
        tok(&pm[0]),
        tok(&pm[1]),
        tok(&pm[2]),
        tok(&pm[3]),
        tok(&pm[4]),
        tok(&pm[5]),
    );
    assert_eq!(
        none.delegated_tokens,
        u1 + (u1 + a1 + r) + (u1 + a1 + r + a2 + u2)
    );
    assert!(m.saving("fold").is_some());
    assert_eq!(m.inline_requests, 2);

    // Money under none. Opus 4.5: $5 input, ×1.25 write, ×0.1 read, ×5 output.
    let opus = |reqs: &[(u64, u64)]| none_cost(reqs, 5.0, 1.25, 0.1, 5.0);
    let (w1, t1) = (tok(&cm[1]), tok(&cm[2]));
    // Delegated parent: a1 [u1], a2 [u1 a1 r], a3 [u1 a1 r a2 u2].
    let delegated = opus(&[(u1, a1), (u1 + a1 + r, a2), (u1 + a1 + r + a2 + u2, a3)]);
    // Base: the stub for a1 (so a1's request writes the stub, not the brief: writing the brief
    // is output the delegation pays), an empty receipt (4 tokens of overhead), no work.
    let base = opus(&[
        (u1, stub),
        (u1 + stub + 4, a2),
        (u1 + stub + 4 + a2 + u2, a3),
    ]);
    // Inline: a1 [u1] answering the stub, the child's first request [u1 stub] answering w1, its
    // last [u1 stub w1 t1] answering the receipt (its final answer), then a2 and a3.
    let inline = opus(&[
        (u1, stub),
        (u1 + stub, w1),
        (u1 + stub + w1 + t1, r),
        (u1 + stub + w1 + t1 + r, a2),
        (u1 + stub + w1 + t1 + r + a2 + u2, a3),
    ]);
    // The child replayed at Haiku 4.5 ($1, ×1.25, ×0.1, ×5): its fixed prefix is calibrated on
    // its first request (recorded 100 input tokens − the prompt's c0), so that request is 100
    // tokens answering w1, the next 100 + w1 + t1 answering its final answer.
    assert!(tok(&cm[0]) < 100);
    let child_cost = none_cost(
        &[(100, w1), (100 + w1 + t1, tok(&cm[3]))],
        1.0,
        1.25,
        0.1,
        5.0,
    );
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    assert!(
        close(m.money.children_cost, child_cost),
        "{} {child_cost}",
        m.money.children_cost
    );
    assert!(
        close(m.money.carried_cost, delegated - base),
        "{} {}",
        m.money.carried_cost,
        delegated - base
    );
    assert!(
        close(m.money.inline_cost, inline - base),
        "{} {}",
        m.money.inline_cost,
        inline - base
    );
    assert!(close(
        m.money.ratio(),
        (child_cost + delegated - base) / (inline - base)
    ));
    // The corpus ratio of one session is that session's, with no spread.
    let v = subagents::corpus(&subs).unwrap();
    assert!(close(v.cost.point, m.money.ratio()) && v.cost.lo == v.cost.hi);
}

#[test]
fn a_child_whose_prompt_matches_no_call_pairs_by_time_or_stays_unpaired() {
    let mut sessions = sessions();
    let child = &mut sessions[1];
    let first = child.messages.iter().position(|m| m.is_human()).unwrap();
    child.messages[first] = Message::user(1, "a prompt no call wrote", None);
    let subs = subagents::delegations(&sessions, &PriceTable::default());
    assert_eq!(subs[0].children[0].matched, Match::Time);
    // Without timestamps nothing places the child: it is unpaired and said so.
    sessions[1].started_ms = None;
    let subs = subagents::delegations(&sessions, &PriceTable::default());
    assert!(subs[0].children.is_empty());
    assert_eq!(subs[0].unpaired, vec!["agent-x1".to_string()]);
    let notes = subagents::subagent_notes(&subs).join("\n");
    assert!(
        notes.contains("1 subagent session found no call"),
        "{notes}"
    );
}
