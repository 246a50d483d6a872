//! The policy's own tool (`fold_unit`) through the proxy in every dialect, streamed and whole,
//! against the scripted upstream of `scripted/` (written from the APIs' documentation): the
//! answered call stays visible to the model for the rest of its turn, a call made in the same
//! answer as an agent's tool call never leaves an orphan call upstream or a wrong stop reason
//! or a reused index with the agent, and a model that keeps making rejected calls is stopped.

mod scripted;

use std::path::Path;

use harness_runner::proxy::{Proxy, ProxyConfig};
use scripted::{call, text, Agent, Dialect, Entry, Reply, Seen, Upstream};
use serde_json::{json, Value};

async fn proxy(policy: &str, up: &Upstream, out: &Path, workdir: &Path) -> Proxy {
    let mut cfg = ProxyConfig::new(
        policies::parse_policy(policy).unwrap(),
        &up.url(),
        "127.0.0.1:0".parse().unwrap(),
        out,
    );
    cfg.workdir = Some(workdir.to_path_buf());
    Proxy::start(cfg).await.unwrap()
}

/// The turns a card offers, from its text (`turn N · …` lines).
fn card_turns(t: &str) -> Vec<u32> {
    let Some(card) = t.split("<fold-card>").last() else {
        return Vec::new();
    };
    card.lines()
        .filter_map(|l| l.trim_start().strip_prefix("turn "))
        .filter_map(|r| r.split(' ').next()?.parse().ok())
        .collect()
}

/// Where the turn in progress starts: the last user text that is not a result.
fn turn_start(h: &[Entry]) -> usize {
    h.iter()
        .rposition(|e| matches!(e, Entry::User(_)))
        .unwrap_or(0)
}

/// Whether the turn in progress shows a card with no `fold_unit` call after it.
fn unanswered_card(h: &[Entry]) -> Option<Vec<u32>> {
    let start = h
        .iter()
        .rposition(|e| matches!(e, Entry::User(t) if t.contains("<fold-card>")))?;
    // The card is the turn's (on its prompt or after it).
    if start < turn_start(h)
        && !h[turn_start(h)..]
            .iter()
            .any(|e| matches!(e, Entry::User(t) if t.contains("<fold-card>")))
    {
        return None;
    }
    let answered = h[start..]
        .iter()
        .any(|e| matches!(e, Entry::Call(_, n) if n == "fold_unit"));
    let Entry::User(t) = &h[start] else {
        return None;
    };
    (!answered).then(|| card_turns(t))
}

/// Bash results in the turn in progress.
fn results_this_turn(h: &[Entry]) -> usize {
    h[turn_start(h)..]
        .iter()
        .filter(|e| matches!(e, Entry::Result(_, t) if t.starts_with("ran")))
        .count()
}

/// A deterministic model: it answers a card it has not answered with `fold_unit` over the
/// turns offered (alone, or beside a `Bash` call, before or after it: `parallel`), runs one
/// `Bash` call per turn, then closes the turn.
fn model(parallel: Option<bool>) -> scripted::Model {
    let mut n = 0;
    Box::new(move |s: &Seen| {
        n += 1;
        let h = s.history();
        let bash = call(
            &format!("b{n}"),
            "Bash",
            json!({"command": format!("echo {n}")}),
        );
        if let Some(turns) = unanswered_card(&h) {
            let (from, to) = (
                *turns.iter().min().unwrap_or(&1),
                *turns.iter().max().unwrap_or(&1),
            );
            let fold = call(
                &format!("f{n}"),
                "fold_unit",
                json!({"from": from, "to": to}),
            );
            return Reply::Parts(match parallel {
                None => vec![text("Folding first. "), fold],
                Some(true) if results_this_turn(&h) == 0 => {
                    vec![text("Both at once. "), fold, bash]
                }
                Some(false) if results_this_turn(&h) == 0 => {
                    vec![text("Both at once. "), bash, fold]
                }
                Some(_) => vec![text("Folding now. "), fold],
            });
        }
        if results_this_turn(&h) == 0 {
            Reply::Parts(vec![text("Running. "), bash])
        } else {
            Reply::Parts(vec![text("done")])
        }
    })
}

fn ran(_: &str, input: &Value) -> String {
    format!("ran {}", input["command"].as_str().unwrap_or(""))
}

/// Four turns of an agent through the proxy under `fold:card_after_tool_calls=1` against the
/// deterministic model. The upstream, the agent, the run folder.
async fn session(
    dialect: Dialect,
    stream: bool,
    parallel: Option<bool>,
) -> (Upstream, Agent, tempfile::TempDir, tempfile::TempDir) {
    let up = Upstream::start(model(parallel)).await;
    let out = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let p = proxy("fold:card_after_tool_calls=1", &up, out.path(), work.path()).await;
    let mut agent = Agent::new(dialect, stream, "turn one");
    for t in 1..=4 {
        if t > 1 {
            agent.prompt(&format!("turn {}", ["", "one", "two", "three", "four"][t]));
        }
        agent.turn(&p.base_url(), 12, &ran).await;
    }
    p.stop().await.unwrap();
    (up, agent, out, work)
}

fn label(dialect: Dialect, stream: bool, parallel: Option<bool>) -> String {
    format!(
        "{dialect:?} {} {}",
        if stream { "streamed" } else { "whole" },
        match parallel {
            None => "fold_unit alone",
            Some(true) => "fold_unit, then Bash",
            Some(false) => "Bash, then fold_unit",
        }
    )
}

/// The events of the run folder's one cell.
fn events(out: &Path) -> Vec<Value> {
    let cells = out.join("cells");
    let dir = std::fs::read_dir(&cells)
        .unwrap()
        .flatten()
        .next()
        .expect("a cell")
        .path();
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn outcomes(out: &Path) -> Vec<String> {
    events(out)
        .iter()
        .filter(|e| e["event"] == "tool_call" && e["name"] == "fold_unit")
        .map(|e| e["outcome"]["outcome"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Every check of a session: no request the real API would refuse, every answer the agent
/// read well-formed, one fold accepted and none rejected, at most `max` upstream requests.
fn checked(
    dialect: Dialect,
    stream: bool,
    parallel: Option<bool>,
    up: &Upstream,
    agent: &Agent,
    out: &Path,
    max: usize,
) {
    let what = label(dialect, stream, parallel);
    assert_eq!(
        up.problems(),
        Vec::<String>::new(),
        "{what}: the upstream refused requests"
    );
    for (i, a) in agent.answers.iter().enumerate() {
        assert_eq!(a.status, 200, "{what}: answer {i}: {}", a.raw);
        assert!(a.error.is_none(), "{what}: answer {i}: {:?}", a.error);
        assert_eq!(a.broken, None, "{what}: answer {i} is malformed: {}", a.raw);
        assert!(
            a.calls.iter().all(|c| c.1 != "fold_unit"),
            "{what}: the agent never sees fold_unit: {}",
            a.raw
        );
    }
    let o = outcomes(out);
    assert_eq!(
        o.iter().filter(|x| *x == "fold_rejected").count(),
        0,
        "{what}: no rejected fold: {o:?}"
    );
    assert!(
        o.iter().any(|x| x == "fold_accepted"),
        "{what}: a fold accepted: {o:?}"
    );
    assert!(
        up.count() <= max,
        "{what}: {} upstream requests, at most {max}",
        up.count()
    );
}

/// Item 1: after the proxy answered `fold_unit(1,1)` and asked again, the agent's next request
/// of that turn shows the model its own call and its result — so the model does not answer the
/// card again — and the card is not attached a second time.
#[tokio::test]
async fn the_answered_fold_unit_stays_visible_to_the_model_until_its_turn_ends() {
    for dialect in Dialect::ALL {
        for stream in [true, false] {
            let (up, agent, out, work) = session(dialect, stream, None).await;
            let what = label(dialect, stream, None);
            // Turn 1: Bash, done (2). Turn 2: fold_unit, asked again → Bash; done (4).
            // Turns 3 and 4: the card offers turn 2 and then 3: one fold each time (4 each).
            checked(dialect, stream, None, &up, &agent, out.path(), 14);
            let seen = up.seen();
            // Turn 2's third request (after the Bash result) holds the fold call and its ok.
            let after: Vec<&Seen> = seen
                .iter()
                .filter(|s| {
                    let h = s.history();
                    h.iter().any(|e| matches!(e, Entry::User(t) if t == "turn two" || t.starts_with("turn two")))
                        && !h.iter().any(|e| matches!(e, Entry::User(t) if t.starts_with("turn three")))
                        && results_this_turn(&h) == 1
                })
                .collect();
            assert!(
                !after.is_empty(),
                "{what}: a request after turn 2's Bash result"
            );
            for s in after {
                let h = s.history();
                let start = turn_start(&h);
                let turn: Vec<&Entry> = h[start..].iter().collect();
                assert!(
                    turn.iter()
                        .any(|e| matches!(e, Entry::Call(_, n) if n == "fold_unit")),
                    "{what}: the fold call is visible: {turn:?}"
                );
                assert!(
                    turn.iter()
                        .any(|e| matches!(e, Entry::Result(_, t) if t.starts_with("ok: turn 1"))),
                    "{what}: and its result: {turn:?}"
                );
                let cards = s.body.to_string().matches("<fold-card>").count();
                assert_eq!(cards, 1, "{what}: one card, not attached again: {}", s.body);
            }
            assert!(
                work.path()
                    .join(".foldbench/archive/fold-turns-001-001.txt")
                    .exists(),
                "{what}: turn 1 was folded when turn 2 ended"
            );
        }
    }
}

/// Item 2: `fold_unit` in the same answer as the agent's `Bash`, in both orders, streamed and
/// whole, in every dialect. The agent gets the `Bash` call with the stop reason of an answer
/// that calls a tool and well-formed indexes; the proxy does not ask the model again with an
/// unanswered `Bash` call; the agent's next request goes upstream with the fold call beside
/// `Bash` and both results.
#[tokio::test]
async fn fold_unit_beside_an_agent_tool_call_leaves_no_orphan_and_no_wrong_stop_reason() {
    for dialect in Dialect::ALL {
        for stream in [true, false] {
            for fold_first in [true, false] {
                let parallel = Some(fold_first);
                let (up, agent, out, _work) = session(dialect, stream, parallel).await;
                let what = label(dialect, stream, parallel);
                // Each turn: one answer with both calls (or Bash alone), then `done`: 2 requests.
                checked(dialect, stream, parallel, &up, &agent, out.path(), 8);
                let both: Vec<&scripted::Got> = agent
                    .answers
                    .iter()
                    .filter(|a| a.text.starts_with("Both at once"))
                    .collect();
                assert!(
                    !both.is_empty(),
                    "{what}: an answer with both calls reached the agent"
                );
                for a in both {
                    assert_eq!(a.calls.len(), 1, "{what}: Bash only: {}", a.raw);
                    assert_eq!(a.calls[0].1, "Bash", "{what}");
                }
                // The request after it holds Bash and fold_unit, each with its result.
                let seen = up.seen();
                let next = seen
                    .iter()
                    .find(|s| {
                        let h = s.history();
                        h.iter()
                            .any(|e| matches!(e, Entry::Call(_, n) if n == "fold_unit"))
                    })
                    .unwrap_or_else(|| panic!("{what}: no request shows the fold call"));
                let h = next.history();
                let fold_id = h
                    .iter()
                    .find_map(|e| match e {
                        Entry::Call(id, n) if n == "fold_unit" => Some(id.clone()),
                        _ => None,
                    })
                    .unwrap();
                assert!(
                    h.iter().any(|e| matches!(e, Entry::Result(id, t) if *id == fold_id && t.starts_with("ok"))),
                    "{what}: the fold's result: {h:?}"
                );
            }
        }
    }
}

/// The breaker: a model that answers every card with an illegal `fold_unit` is stopped after
/// three rejected calls in a turn: the card comes off, the model is asked once more without it
/// and goes on with the user's work, the proxy asks no more for the policy's tool, and the
/// record says so.
#[tokio::test]
async fn a_model_that_keeps_making_rejected_policy_calls_is_stopped_and_the_record_says_so() {
    for dialect in Dialect::ALL {
        for stream in [true, false] {
            let up = Upstream::start(Box::new(move |s: &Seen| {
                let h = s.history();
                let calls = h.iter().filter(|e| matches!(e, Entry::Call(..))).count();
                if h.iter()
                    .any(|e| matches!(e, Entry::User(t) if t.contains("<fold-card>")))
                {
                    // Always the turn in progress: illegal.
                    return Reply::Parts(vec![call(
                        &format!("f{calls}"),
                        "fold_unit",
                        json!({"from": 2, "to": 2}),
                    )]);
                }
                if results_this_turn(&h) == 0 {
                    Reply::Parts(vec![call(
                        &format!("b{calls}"),
                        "Bash",
                        json!({"command": "ls"}),
                    )])
                } else {
                    Reply::Parts(vec![text("done")])
                }
            }))
            .await;
            let out = tempfile::tempdir().unwrap();
            let work = tempfile::tempdir().unwrap();
            let p = proxy("fold:card_after_tool_calls=1", &up, out.path(), work.path()).await;
            let mut agent = Agent::new(dialect, stream, "turn one");
            agent.turn(&p.base_url(), 10, &ran).await;
            agent.prompt("turn two");
            let got = agent.turn(&p.base_url(), 10, &ran).await;
            p.stop().await.unwrap();
            let what = format!("{dialect:?} stream={stream}");
            assert_eq!(up.problems(), Vec::<String>::new(), "{what}");
            let last = got.last().unwrap();
            assert_eq!(last.status, 200, "{what}: {}", last.raw);
            assert!(last.calls.is_empty(), "{what}: the turn ends: {}", last.raw);
            let rejected = outcomes(out.path())
                .iter()
                .filter(|o| *o == "fold_rejected")
                .count();
            assert_eq!(
                rejected, 3,
                "{what}: three rejected calls, then the breaker"
            );
            // Turn 1: 2 requests. Turn 2: the first request, two asked again, one more asked
            // again without the card (the model goes on with the user's work: Bash), and the
            // one after Bash.
            assert_eq!(up.count(), 7, "{what}: upstream requests");
            let seen = up.seen();
            assert!(
                seen[5..]
                    .iter()
                    .all(|s| !s.body.to_string().contains("<fold-card>")),
                "{what}: the card is off after the breaker"
            );
            assert_eq!(
                last.text, "done",
                "{what}: the turn ends with the model's answer"
            );
            let stopped: Vec<Value> = events(out.path())
                .into_iter()
                .filter(|e| e["event"] == "policy_tool_stopped")
                .collect();
            assert_eq!(stopped.len(), 1, "{what}: the record says so");
            assert_eq!(stopped[0]["turn"], 2);
            assert_eq!(stopped[0]["rejected"], 3);
        }
    }
}

/// The model asked again after `fold_unit` is overloaded: the agent gets the upstream's own
/// error type (`overloaded_error`), so it retries as it would, not a generic `api_error`.
#[tokio::test]
async fn an_upstream_error_after_fold_unit_keeps_the_upstreams_error_type() {
    for dialect in Dialect::ALL {
        for stream in [true, false] {
            let overloaded = scripted::api_error(dialect, "overloaded_error", "Overloaded");
            let up = Upstream::scripted(vec![
                Reply::Parts(vec![call("b1", "Bash", json!({"command": "ls"}))]),
                Reply::Parts(vec![text("done")]),
                Reply::Parts(vec![call("f1", "fold_unit", json!({"from": 1, "to": 1}))]),
                Reply::Error(529, overloaded),
            ])
            .await;
            let out = tempfile::tempdir().unwrap();
            let work = tempfile::tempdir().unwrap();
            let p = proxy("fold:card_after_tool_calls=1", &up, out.path(), work.path()).await;
            let mut agent = Agent::new(dialect, stream, "turn one");
            agent.turn(&p.base_url(), 4, &ran).await;
            agent.prompt("turn two");
            let got = agent.turn(&p.base_url(), 4, &ran).await;
            p.stop().await.unwrap();
            let what = format!("{dialect:?} stream={stream}");
            let last = got.last().unwrap();
            let error = last.error.clone().unwrap_or_default();
            assert!(error.contains("overloaded_error"), "{what}: {}", last.raw);
            assert!(!error.contains("api_error"), "{what}: {error}");
            if !stream {
                assert_eq!(last.status, 529, "{what}: passed on as it came");
            }
            let failed = events(out.path())
                .into_iter()
                .filter(|e| e["event"] == "request_failed")
                .count();
            assert_eq!(failed, 1, "{what}: the request asked again failed");
        }
    }
}

/// An upstream that was reached but answered with a malformed HTTP head: the agent is told its
/// answer was malformed, not that it could not be reached (which stays for an upstream that
/// is not there).
#[tokio::test]
async fn a_malformed_upstream_answer_is_reported_as_malformed_not_unreachable() {
    let body = r#"{"id":"m","type":"message","content":[],"stop_reason":"end_turn"}"#;
    let heads: Vec<(&str, Vec<u8>)> = vec![
        (
            "an ESC in a header value",
            format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-bad: a\x1bb\r\ncontent-length: {}\r\n\r\n{body}", body.len()).into_bytes(),
        ),
        (
            "two Content-Length headers",
            format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\ncontent-length: 5\r\n\r\n{body}", body.len()).into_bytes(),
        ),
        (
            "Transfer-Encoding with Content-Length",
            format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\ncontent-length: {}\r\n\r\n{body}", body.len()).into_bytes(),
        ),
        ("16 MB of headers", {
            let mut h = b"HTTP/1.1 200 OK\r\n".to_vec();
            for i in 0..16_000 {
                h.extend_from_slice(format!("x-h{i}: {}\r\n", "v".repeat(1000)).as_bytes());
            }
            h.extend_from_slice(b"content-length: 0\r\n\r\n");
            h
        }),
    ];
    for (what, raw) in heads {
        let up = Upstream::scripted(vec![Reply::Raw(raw)]).await;
        let out = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let p = proxy("trim", &up, out.path(), work.path()).await;
        let got = scripted::ask(
            &p.base_url(),
            Dialect::Anthropic,
            &scripted::first_body(Dialect::Anthropic, false, "go"),
        )
        .await;
        p.stop().await.unwrap();
        assert_eq!(got.status, 502, "{what}: {}", got.raw);
        assert!(
            got.raw.contains("answered with a malformed HTTP response"),
            "{what}: {}",
            got.raw
        );
        assert!(
            !got.raw.contains("could not be reached"),
            "{what}: {}",
            got.raw
        );
    }
    // An upstream that is not there.
    let gone = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = gone.local_addr().unwrap();
    drop(gone);
    let out = tempfile::tempdir().unwrap();
    let mut cfg = ProxyConfig::new(
        policies::parse_policy("trim").unwrap(),
        &format!("http://{addr}"),
        "127.0.0.1:0".parse().unwrap(),
        out.path(),
    );
    cfg.workdir = None;
    let p = Proxy::start(cfg).await.unwrap();
    let got = scripted::ask(
        &p.base_url(),
        Dialect::Anthropic,
        &scripted::first_body(Dialect::Anthropic, false, "go"),
    )
    .await;
    p.stop().await.unwrap();
    assert!(got.raw.contains("could not be reached"), "{}", got.raw);
}
