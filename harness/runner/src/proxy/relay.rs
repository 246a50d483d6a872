//! A request of the main conversation, relayed: the splices written and applied, the policy's
//! plan (a compaction asked of the upstream first), the request sent on, and the answer relayed
//! back whole or streamed, the policy's own tool calls in it answered here and the model asked
//! again.

use super::forward::{forward, release, send_event};
use super::*;

/// A request of the main conversation: the policy applied, the upstream asked, the answer
/// relayed (its policy-tool calls answered by the proxy).
pub(super) async fn main_request(
    shared: Arc<Shared>,
    mut entry: tokio::sync::OwnedMutexGuard<Entry>,
    api: Api,
    parts: &hyper::http::request::Parts,
    path_q: &str,
    decoded: Decoded,
) -> Response<ProxyBody> {
    let path = parts.uri.path().to_string();
    let e = &mut *entry;
    if e.model.is_empty() {
        e.model = decoded.env.model.clone();
    }
    if let Err(err) = branch_if_new(&shared, e, &decoded, &path) {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &harness_core::one_line(&err),
        );
    }
    write_splices(&shared, e, &decoded);
    let out = match planned(&shared, e, api, parts, path_q, &decoded, &path).await {
        Ok(out) => out,
        Err(resp) => return resp,
    };
    let index = out.record.index;
    if let Some(resp) = policy_failed(&shared, e, &path, index) {
        return resp;
    }
    let began = Instant::now();
    let deadline = shared.deadline();
    let resp = match first_answer(&shared, e, parts, path_q, out.body, index, deadline).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let status = resp.status();
    let is_stream = decoded.env.stream
        || resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_stream {
        let head = agent_head(&resp);
        let bytes = match read_whole(resp, shared.cfg.limits, deadline).await {
            Ok(b) => b,
            Err(why) => {
                let msg = harness_core::one_line(&why);
                e.conv.request_failed(index, Some(status.as_u16()), &msg);
                shared.log(main_x(&path, e, index).status(502).note(&msg));
                flush(&shared, e);
                return error(StatusCode::BAD_GATEWAY, &msg);
            }
        };
        let whole = whole_answer(
            &shared,
            e,
            api,
            parts,
            path_q,
            &decoded,
            out.messages,
            index,
            began,
            bytes,
        )
        .await;
        let resp = match whole {
            Whole::Body(body) => {
                shared.log(main_x(&path, e, index).status(200));
                with_body(head, ProxyBody::Full(Some(body)))
            }
            Whole::Answer(resp) => {
                shared.log(
                    main_x(&path, e, index)
                        .status(resp.status().as_u16())
                        .note("asking the model again after a policy tool call failed"),
                );
                resp
            }
        };
        flush(&shared, e);
        return resp;
    }
    let head = agent_head(&resp);
    let (tx, rx) = mpsc::channel::<Piece>(32);
    let parts = parts.clone();
    let path_q = path_q.to_string();
    let shared2 = Arc::clone(&shared);
    tokio::spawn(async move {
        let e = &mut *entry;
        let note = streamed_answer(
            &shared2,
            e,
            api,
            &parts,
            &path_q,
            &decoded,
            out.messages,
            index,
            began,
            deadline,
            resp,
            &tx,
        )
        .await;
        let mut x = Exchange::new("main", parts.uri.path())
            .cell(&e.cell)
            .status(200)
            .index(index)
            .stream();
        if let Some(n) = note {
            x = x.note(&n);
        }
        shared2.log(x);
        flush(&shared2, e);
    });
    with_body(head, ProxyBody::Stream(rx))
}

/// The request sent on, its answer's head: an error (the upstream out of reach, its error status
/// passed through as it came) is the agent's answer at once, the request recorded as failed.
async fn first_answer(
    shared: &Arc<Shared>,
    e: &mut Entry,
    parts: &hyper::http::request::Parts,
    path_q: &str,
    body: Vec<u8>,
    index: usize,
    deadline: tokio::time::Instant,
) -> Result<reqwest::Response, Response<ProxyBody>> {
    let path = parts.uri.path();
    let resp = match send_upstream(
        shared,
        &parts.method,
        &parts.headers,
        path_q,
        body,
        deadline,
    )
    .await
    {
        Ok(r) => r,
        Err(err) => {
            let err = harness_core::one_line(&err);
            e.conv.request_failed(index, None, &err);
            shared.log(main_x(path, e, index).status(502).note(&err));
            flush(shared, e);
            return Err(error(StatusCode::BAD_GATEWAY, &err));
        }
    };
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    // Passed through as it came: status, headers and body.
    let note = "the upstream's error, passed through";
    e.conv.request_failed(index, Some(status.as_u16()), note);
    shared.log(main_x(path, e, index).status(status.as_u16()).note(note));
    flush(shared, e);
    let head = agent_head(&resp);
    Err(match read_whole(resp, shared.cfg.limits, deadline).await {
        Ok(bytes) => with_body(head, ProxyBody::Full(Some(bytes))),
        Err(why) => error(StatusCode::BAD_GATEWAY, &harness_core::one_line(&why)),
    })
}

/// A request asked again after a policy call that got no answer: the status the upstream
/// answered with (if any), why, and what the agent gets.
struct Failed {
    status: Option<u16>,
    why: String,
    answer: Response<ProxyBody>,
}

/// The model asked again with `body` (a whole answer): its answer and its JSON; the upstream's
/// error is passed on as it came (its type kept: the agent retries an `overloaded_error` as it
/// would).
async fn ask_again_whole(
    shared: &Shared,
    api: Api,
    parts: &hyper::http::request::Parts,
    path_q: &str,
    body: Vec<u8>,
) -> Result<(harness_wire::Answer, serde_json::Value), Failed> {
    let deadline = shared.deadline();
    let failed = |status: Option<u16>, why: String| Failed {
        status,
        answer: error(StatusCode::BAD_GATEWAY, &why),
        why,
    };
    let resp = send_upstream(
        shared,
        &parts.method,
        &parts.headers,
        path_q,
        body,
        deadline,
    )
    .await
    .map_err(|err| failed(None, harness_core::one_line(&err)))?;
    let status = resp.status().as_u16();
    if !resp.status().is_success() {
        let head = agent_head(&resp);
        let bytes = read_whole(resp, shared.cfg.limits, deadline)
            .await
            .unwrap_or_default();
        return Err(Failed {
            status: Some(status),
            why: "the upstream's error after a policy tool call, passed through".into(),
            answer: with_body(head, ProxyBody::Full(Some(bytes))),
        });
    }
    let b = read_whole(resp, shared.cfg.limits, deadline)
        .await
        .map_err(|why| {
            failed(
                Some(status),
                format!(
                    "asking the model again after a policy tool call: {}",
                    harness_core::one_line(&why)
                ),
            )
        })?;
    let a = parse_answer(api, &b).map_err(|err| {
        failed(
            Some(status),
            format!("the upstream's answer after a policy tool call could not be read: {err}"),
        )
    })?;
    let v = serde_json::from_slice::<serde_json::Value>(&b)
        .map_err(|err| failed(Some(status), err.to_string()))?;
    Ok((a, v))
}

/// The model asked again with `body` (a stream): the upstream's answer; else the status it
/// answered with, why, and the error event the agent gets — of the upstream's own type and
/// words when it named them, so the agent retries as it would.
async fn ask_again_stream(
    shared: &Shared,
    api: Api,
    parts: &hyper::http::request::Parts,
    path_q: &str,
    body: Vec<u8>,
    deadline: tokio::time::Instant,
) -> Result<reqwest::Response, (Option<u16>, String, SseEvent)> {
    match send_upstream(
        shared,
        &parts.method,
        &parts.headers,
        path_q,
        body,
        deadline,
    )
    .await
    {
        Ok(r) if r.status().is_success() => Ok(r),
        Ok(r) => {
            let status = r.status().as_u16();
            let body = read_whole(r, shared.cfg.limits, deadline)
                .await
                .unwrap_or_default();
            let why = format!(
                "asking the model again after a policy tool call failed with status {status}"
            );
            let ev = match harness_wire::error_of(&body) {
                Some((kind, message)) => {
                    harness_wire::error_event_of(api, &kind, &format!("{message} ({why})"))
                }
                None => error_event(api, &why),
            };
            Err((Some(status), why, ev))
        }
        Err(err) => {
            let why = harness_core::one_line(&err);
            let ev = error_event(api, &why);
            Err((None, why, ev))
        }
    }
}

/// The answer head with its body; a head the upstream made invalid is a 502.
fn with_body(head: hyper::http::response::Builder, body: ProxyBody) -> Response<ProxyBody> {
    head.body(body).unwrap_or_else(|_| {
        error(
            StatusCode::BAD_GATEWAY,
            "the upstream's answer head is not valid",
        )
    })
}

/// The exchange record of a main-conversation request.
/// A policy that failed (an `exec:` process gone) decides nothing: the agent gets an error that
/// says why, not a request the policy never made.
fn policy_failed(
    shared: &Shared,
    e: &mut Entry,
    path: &str,
    index: usize,
) -> Option<Response<ProxyBody>> {
    let reason = e.conv.policy_failed()?;
    let msg = format!("the policy failed: {reason}");
    shared.log(main_x(path, e, index).status(500).note(&msg));
    flush(shared, e);
    Some(error(StatusCode::INTERNAL_SERVER_ERROR, &msg))
}

fn main_x(path: &str, e: &Entry, index: usize) -> Exchange {
    Exchange::new("main", path).cell(&e.cell).index(index)
}

/// A history that does not continue the conversation's starts a new branch (the policy starts
/// again), said in the exchanges.
fn branch_if_new(
    shared: &Shared,
    e: &mut Entry,
    decoded: &Decoded,
    path: &str,
) -> Result<(), policies::PolicyError> {
    if e.conv.continues(decoded) {
        return Ok(());
    }
    e.conv.new_branch()?;
    if let Some(k) = super::first_route(decoded) {
        if !e.keys.contains(&k) {
            e.keys.push(k);
        }
    }
    shared.log(Exchange::new("branch", path).cell(&e.cell).note(&format!(
        "the history does not continue the conversation's (its first message was never seen: \
         the agent compacted or rewrote it); branch {} starts, the policy starts again",
        e.conv.branches
    )));
    Ok(())
}

/// Writes a conversation's new events and messages to its files.
fn flush(shared: &Shared, e: &mut Entry) {
    if let Ok(mut r) = shared.recorder.lock() {
        if let Err(err) = r.flush_entry(e) {
            crate::progress::warn(&format!(
                "warning: proxy records: {}",
                harness_core::one_line(&err)
            ));
        }
    }
}

/// The policy-tool calls of an answer.
fn policy_calls(conv: &Conversation, calls: &[ToolCall]) -> Vec<ToolCall> {
    calls
        .iter()
        .filter(|c| conv.owns_tool(&c.name))
        .cloned()
        .collect()
}

/// The ids of an answer's calls that are not in `ours` (the agent's own).
fn agent_ids(calls: &[ToolCall], ours: &[ToolCall]) -> Vec<String> {
    calls
        .iter()
        .filter(|c| !ours.iter().any(|o| o.id == c.id))
        .map(|c| c.id.clone())
        .collect()
}

/// What a whole answer comes to for the agent.
pub(super) enum Whole {
    /// This body (the upstream's status, 200).
    Body(Bytes),
    /// An answer of its own: the upstream's error after a policy call, passed on as it came, or
    /// the proxy's when the upstream could not answer.
    Answer(Response<ProxyBody>),
}

/// A non-streamed answer: relayed as it came; with calls of the policy's tool, those are
/// answered here — beside the agent's own calls of the same answer the agent gets the answer
/// without them; alone, the model is asked again and the agent gets the parts before the call
/// and the next answer. Every call answered is kept to be shown to the model again.
#[allow(clippy::too_many_arguments)]
async fn whole_answer(
    shared: &Shared,
    e: &mut Entry,
    api: Api,
    parts: &hyper::http::request::Parts,
    path_q: &str,
    decoded: &Decoded,
    sent: Vec<std::sync::Arc<Message>>,
    index: usize,
    began: Instant,
    bytes: Bytes,
) -> Whole {
    let Ok(answer) = parse_answer(api, &bytes) else {
        return Whole::Body(bytes);
    };
    let r = answer.response();
    e.conv
        .record_response(index, answer.usage, r.output_tokens, ms_since(began));
    let mut ours = policy_calls(&e.conv, &answer.calls);
    if ours.is_empty() {
        return Whole::Body(bytes);
    }
    let Ok(mut acc) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Whole::Body(bytes);
    };
    let mut answered = conversation::Answered::default();
    let mut messages = sent;
    let mut answer = answer;
    let mut at = index;
    let mut dropped: Vec<String> = Vec::new();
    let mut rounds = 0;
    let keep = |e: &mut Entry, answered, delivered: &[String]| {
        e.conv.keep_rounds(answered, delivered, &decoded.keys);
    };
    loop {
        dropped.extend(ours.iter().map(|c| c.id.clone()));
        let agents = agent_ids(&answer.calls, &ours);
        // Asked once more after the breaker stopped the card: what comes is the agent's.
        let stopped_before = e.conv.policy_tools_stopped();
        let results = e
            .conv
            .answer_policy_calls(&ours, &agents, at, &mut answered);
        if !agents.is_empty() || rounds >= MAX_POLICY_ROUNDS || stopped_before {
            keep(e, answered, &agents);
            let body = harness_wire::without_calls(api, &acc, &dropped);
            return Whole::Body(Bytes::from(body.to_string()));
        }
        if e.conv.policy_tools_stopped() {
            // The breaker tripped on these calls: the card comes off.
            messages = e.conv.without_cards(&messages);
        }
        rounds += 1;
        messages = e.conv.continuation(api, &messages, &answer, &results);
        let record = e.conv.record_continuation(&messages);
        e.conv.set_sent(messages.clone());
        let body = e
            .conv
            .continuation_body(api, &decoded.env, decoded, &messages);
        let t = Instant::now();
        let (a, next_v) = match ask_again_whole(shared, api, parts, path_q, body).await {
            Ok(next) => next,
            Err(failed) => {
                e.conv
                    .request_failed(record.index, failed.status, &failed.why);
                keep(e, answered, &[]);
                return Whole::Answer(failed.answer);
            }
        };
        let rr = a.response();
        e.conv
            .record_response(record.index, a.usage, rr.output_tokens, ms_since(t));
        acc = prepend_parts(api, &next_v, &acc, &[]);
        ours = policy_calls(&e.conv, &a.calls);
        at = record.index;
        answer = a;
        if ours.is_empty() {
            keep(e, answered, &agent_ids(&answer.calls, &[]));
            let body = harness_wire::without_calls(api, &acc, &dropped);
            return Whole::Body(Bytes::from(body.to_string()));
        }
    }
}

/// A streamed answer relayed event by event. A policy-tool call in it is answered here: beside
/// the agent's own calls the stream ends as it came (without the policy's call); alone, the
/// model is asked again and its answer streamed on in the same stream. Every call answered is
/// kept to be shown to the model again. Returns what the record notes.
#[allow(clippy::too_many_arguments)]
async fn streamed_answer(
    shared: &Shared,
    e: &mut Entry,
    api: Api,
    parts: &hyper::http::request::Parts,
    path_q: &str,
    decoded: &Decoded,
    sent: Vec<std::sync::Arc<Message>>,
    index: usize,
    began: Instant,
    deadline: tokio::time::Instant,
    resp: reqwest::Response,
    tx: &mpsc::Sender<Piece>,
) -> Option<String> {
    let owned: Vec<String> = e.conv.policy_tools().into_iter().map(|t| t.name).collect();
    let limits = shared.cfg.limits;
    let mut f = forward(limits, deadline, &owned, api, resp, tx, 0, false, None).await;
    let mut answered = conversation::Answered::default();
    let mut messages = sent;
    let mut at = index;
    let mut t = began;
    let mut rounds = 0;
    let mut earlier: Vec<serde_json::Value> = Vec::new();
    loop {
        if let Some(why) = f.ended.take() {
            e.conv.request_failed(at, None, &why);
            e.conv.keep_rounds(answered, &[], &decoded.keys);
            if !f.gone {
                let ev = error_event(api, &why);
                let _ = send_event(tx, &ev).await;
            }
            return Some(why);
        }
        let r = f.answer.response();
        e.conv
            .record_response(at, f.answer.usage, r.output_tokens, ms_since(t));
        let agents = agent_ids(&f.answer.calls, &f.ours);
        // Asked once more after the breaker stopped the card: what comes is the agent's.
        let stopped_before = e.conv.policy_tools_stopped();
        let done = f.ours.is_empty()
            || !agents.is_empty()
            || rounds >= MAX_POLICY_ROUNDS
            || stopped_before;
        if !f.ours.is_empty() {
            let ours = std::mem::take(&mut f.ours);
            let results = e
                .conv
                .answer_policy_calls(&ours, &agents, at, &mut answered);
            if !done {
                if e.conv.policy_tools_stopped() {
                    // The breaker tripped on these calls: the card comes off.
                    messages = e.conv.without_cards(&messages);
                }
                rounds += 1;
                earlier.extend(
                    f.answer
                        .parts
                        .iter()
                        .filter(|p| !is_call_of(p, &ours))
                        .cloned(),
                );
                messages = e.conv.continuation(api, &messages, &f.answer, &results);
            }
        }
        if done {
            e.conv.keep_rounds(answered, &agents, &decoded.keys);
            if !release(api, tx, &mut f, agents.is_empty(), &earlier).await {
                return Some("the agent disconnected before the stream's end".into());
            }
            return (rounds > 0)
                .then(|| format!("{rounds} policy tool round(s) answered by the proxy"));
        }
        let record = e.conv.record_continuation(&messages);
        e.conv.set_sent(messages.clone());
        let body = e
            .conv
            .continuation_body(api, &decoded.env, decoded, &messages);
        t = Instant::now();
        at = record.index;
        let deadline = shared.deadline();
        let resp = match ask_again_stream(shared, api, parts, path_q, body, deadline).await {
            Ok(r) => r,
            Err((status, why, ev)) => {
                e.conv.request_failed(at, status, &why);
                e.conv.keep_rounds(answered, &[], &decoded.keys);
                let _ = send_event(tx, &ev).await;
                return Some(why);
            }
        };
        f = forward(
            limits, deadline, &owned, api, resp, tx, f.parts, true, f.seq,
        )
        .await;
    }
}

/// Whether an answer part (a content block, an output item) is one of `calls`.
fn is_call_of(part: &serde_json::Value, calls: &[ToolCall]) -> bool {
    let id = part
        .get("call_id")
        .or_else(|| part.get("id"))
        .and_then(|v| v.as_str());
    id.is_some_and(|id| calls.iter().any(|c| c.id == id))
}

/// Reads the request into the conversation and applies the splices due: each archive written
/// (and flushed) under the agent's folder before its splice is applied.
fn write_splices(shared: &Shared, e: &mut Entry, decoded: &Decoded) {
    // Splices first: each archive written and flushed before the policy applies it.
    let splices = e.conv.read(decoded);
    let turn = e.conv.turn();
    let root = archive_root(&shared.cfg, &shared.archives_under, decoded);
    if root != Root::Unknown {
        e.root.clone_from(&root);
    }
    let root = e.root.clone();
    apply_splices(shared, e, &splices, turn.saturating_sub(1), &root);
    // The files the policy keeps for the model, written under the agent's folder (only the
    // folder given at start or named by its system prompt, as archives). (The messages of this
    // request join the context in the plan: a file for one of them is asked for at the next
    // request.)
    for f in e.conv.offloads() {
        let written = root
            .folder(&f.path)
            .is_ok_and(|r| crate::execution::beneath::write_new(r, &f.path, &f.bytes).is_ok());
        if written {
            if let Ok(mut r) = shared.recorder.lock() {
                r.archive(&e.cell, &f.path, &f.bytes);
            }
        }
        e.conv.offloaded(&f.path, written);
    }
}

/// Writes each splice's archive under `root` (flushed), then applies the splice; a splice
/// whose archive could not be written is recorded as failed and not applied.
pub(crate) fn apply_splices(
    shared: &Shared,
    e: &mut Entry,
    splices: &[conversation::PendingSplice],
    turn: u32,
    root: &Root,
) {
    for p in splices {
        let path = &p.archived.archive.path;
        let written = root.folder(path).and_then(|r| {
            crate::execution::beneath::write_new(r, path, &p.archived.bytes).map_err(|source| {
                ProxyError::Archive {
                    path: path.clone(),
                    source,
                }
            })
        });
        if let Err(why) = &written {
            // Said in the exchanges as well as in the events (a splice_failed).
            shared.log(
                Exchange::new("archive", "")
                    .cell(&e.cell)
                    .note(&format!("refused: {}", harness_core::one_line(why))),
            );
        }
        let ok = written.is_ok();
        if e.conv.apply_splice(p, turn, written).is_some() && ok {
            if let Ok(mut r) = shared.recorder.lock() {
                r.archive(&e.cell, &p.archived.archive.path, &p.archived.bytes);
            }
            if let (false, Root::Known(r)) = (e.excluded, root) {
                e.excluded = true;
                if let Err(err) = exclude_archives(r) {
                    shared.log(Exchange::new("archive", "").cell(&e.cell).note(&format!(
                        "the archive folder could not be left out of the agent's git status \
                         (.git/info/exclude): {}",
                        harness_core::one_line(&err)
                    )));
                }
            }
        }
    }
}

/// The line of `.git/info/exclude` that leaves the archive folder out of the agent's `git
/// status`.
const EXCLUDE_LINE: &str = ".foldbench/";

/// Leaves the archive folder out of the agent's `git status`: the line `.foldbench/` in the
/// repository's own `.git/info/exclude` (never the user's `.gitignore`), when `root` holds a
/// repository whose `.git` is a real folder. Read and written beneath `root`, never through a
/// link the agent planted.
fn exclude_archives(root: &std::path::Path) -> std::io::Result<()> {
    use crate::execution::beneath;
    let git = root.join(".git");
    if !std::fs::symlink_metadata(&git).is_ok_and(|m| m.is_dir()) {
        return Ok(());
    }
    let rel = ".git/info/exclude";
    let mut text = beneath::read_existing(root, rel, 1 << 20)?
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    if text.lines().any(|l| l.trim() == EXCLUDE_LINE) {
        return Ok(());
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("# foldbench's archives (foldbench proxy)\n");
    text.push_str(EXCLUDE_LINE);
    text.push('\n');
    beneath::write_new(root, rel, text.as_bytes())
}

/// The policy's plan for the request: the request to send, after any compaction it asks for
/// (the summary asked of the upstream, a real call recorded as one); an error answer for the
/// agent when the summary call fails.
#[allow(clippy::too_many_arguments)]
async fn planned(
    shared: &Shared,
    e: &mut Entry,
    api: Api,
    parts: &hyper::http::request::Parts,
    path_q: &str,
    decoded: &Decoded,
    path: &str,
) -> Result<conversation::Outgoing, Response<ProxyBody>> {
    loop {
        match e.conv.plan(api, &decoded.env, decoded) {
            Step::Send(out) => return Ok(out),
            Step::Compact { body, record, .. } => {
                let began = Instant::now();
                let deadline = shared.deadline();
                let resp = match send_upstream(
                    shared,
                    &parts.method,
                    &parts.headers,
                    path_q,
                    body,
                    deadline,
                )
                .await
                {
                    Ok(r) => r,
                    Err(err) => {
                        let err = harness_core::one_line(&err);
                        e.conv.request_failed(record.index, None, &err);
                        shared.log(
                            Exchange::new("compaction", path)
                                .cell(&e.cell)
                                .status(502)
                                .note(&err),
                        );
                        return Err(error(StatusCode::BAD_GATEWAY, &err));
                    }
                };
                let status = resp.status();
                let bytes = match read_whole(resp, shared.cfg.limits, deadline).await {
                    Ok(b) => b,
                    Err(why) => {
                        let msg = format!("the summary call: {}", harness_core::one_line(&why));
                        e.conv
                            .request_failed(record.index, Some(status.as_u16()), &msg);
                        shared.log(
                            Exchange::new("compaction", path)
                                .cell(&e.cell)
                                .status(502)
                                .note(&msg),
                        );
                        return Err(error(StatusCode::BAD_GATEWAY, &msg));
                    }
                };
                if !status.is_success() {
                    e.conv.request_failed(
                        record.index,
                        Some(status.as_u16()),
                        "the summary call failed",
                    );
                    shared.log(
                        Exchange::new("compaction", path)
                            .cell(&e.cell)
                            .status(status.as_u16())
                            .note("the summary call failed; its answer is passed to the agent"),
                    );
                    return Err(full(
                        StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::BAD_GATEWAY),
                        "application/json",
                        bytes,
                    ));
                }
                let answer = match parse_answer(api, &bytes) {
                    Ok(a) => a,
                    Err(err) => {
                        let msg = format!("the upstream's summary could not be read: {err}");
                        e.conv.request_failed(record.index, Some(200), &msg);
                        shared.log(
                            Exchange::new("compaction", path)
                                .cell(&e.cell)
                                .status(502)
                                .note(&msg),
                        );
                        return Err(error(StatusCode::BAD_GATEWAY, &msg));
                    }
                };
                let r = answer.response();
                e.conv.record_response(
                    record.index,
                    answer.usage,
                    r.output_tokens,
                    ms_since(began),
                );
                e.conv.compacted(&answer.text, &record, r.output_tokens);
                shared.log(
                    Exchange::new("compaction", path)
                        .cell(&e.cell)
                        .status(200)
                        .index(record.index),
                );
            }
        }
    }
}
