//! A request of the main conversation, relayed: the splices written and applied, the policy's
//! plan (a compaction asked of the upstream first), the request sent on, and the answer relayed
//! back whole or streamed, the policy's own tool calls in it answered here and the model asked
//! again.

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
        return error(StatusCode::INTERNAL_SERVER_ERROR, &err.to_string());
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
    let resp = match send_upstream(&shared, &parts.method, &parts.headers, path_q, out.body).await {
        Ok(r) => r,
        Err(err) => {
            let err = err.to_string();
            shared.log(main_x(&path, e, index).status(502).note(&err));
            flush(&shared, e);
            return error(StatusCode::BAD_GATEWAY, &err);
        }
    };
    let status = resp.status();
    if !status.is_success() {
        // Passed through as it came: status, headers and body.
        shared.log(
            Exchange::new("main", &path)
                .cell(&e.cell)
                .status(status.as_u16())
                .index(index)
                .note("the upstream's error, passed through"),
        );
        flush(&shared, e);
        let head = agent_head(&resp);
        let bytes = resp.bytes().await.unwrap_or_default();
        return with_body(head, ProxyBody::Full(Some(bytes)));
    }
    let is_stream = decoded.env.stream
        || resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_stream {
        let head = agent_head(&resp);
        let bytes = match resp.bytes().await {
            Ok(b) => b,
            Err(err) => {
                let msg = format!("the upstream's answer was cut: {err}");
                shared.log(main_x(&path, e, index).status(502).note(&msg));
                flush(&shared, e);
                return error(StatusCode::BAD_GATEWAY, &msg);
            }
        };
        let body = whole_answer(
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
        shared.log(main_x(&path, e, index).status(200));
        flush(&shared, e);
        return with_body(head, ProxyBody::Full(Some(body)));
    }
    let head = agent_head(&resp);
    let (tx, rx) = mpsc::channel::<Bytes>(32);
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
            crate::progress::warn(&format!("warning: proxy records: {err}"));
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

/// The messages of the request asked again: what was sent, the model's answer with its policy
/// calls, and their results.
fn continued(
    conv: &mut Conversation,
    sent: &[std::sync::Arc<Message>],
    text: &str,
    calls: &[ToolCall],
    ours: &[ToolCall],
    index: usize,
) -> Vec<std::sync::Arc<Message>> {
    let turn = conv.turn();
    let mut messages = sent.to_vec();
    messages.push(Message::assistant(turn, text, calls.to_vec()));
    for c in ours {
        let (result, is_error) = conv.policy_tool(c, index);
        messages.push(Message::tool_result(turn, c, result, is_error));
    }
    // A call of the agent's own tools beside the policy's gets no answer here: the model is
    // asked again and the agent sees only the answer that follows.
    messages
}

/// A non-streamed answer: relayed as it came, or, when it calls the policy's tool, answered and
/// asked again, the agent's answer being the parts before the call and the next answer.
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
) -> Bytes {
    let Ok(answer) = parse_answer(api, &bytes) else {
        return bytes;
    };
    let r = answer.response();
    e.conv
        .record_response(index, answer.usage, r.output_tokens, ms_since(began));
    let mut ours = policy_calls(&e.conv, &answer.calls);
    if ours.is_empty() {
        return bytes;
    }
    let Ok(mut first) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return bytes;
    };
    let mut messages = sent;
    let mut answer = answer;
    let mut dropped: Vec<String> = ours.iter().map(|c| c.id.clone()).collect();
    for _ in 0..MAX_POLICY_ROUNDS {
        messages = continued(
            &mut e.conv,
            &messages,
            &answer.text,
            &answer.calls,
            &ours,
            index,
        );
        let record = e.conv.record_continuation(&messages);
        e.conv.set_sent(messages.clone());
        let body = e
            .conv
            .continuation_body(api, &decoded.env, decoded, &messages);
        let t = Instant::now();
        let Ok(resp) = send_upstream(shared, &parts.method, &parts.headers, path_q, body).await
        else {
            break;
        };
        if !resp.status().is_success() {
            break;
        }
        let Ok(next) = resp.bytes().await else { break };
        let Ok(a) = parse_answer(api, &next) else {
            break;
        };
        let rr = a.response();
        e.conv
            .record_response(record.index, a.usage, rr.output_tokens, ms_since(t));
        let Ok(next_v) = serde_json::from_slice::<serde_json::Value>(&next) else {
            break;
        };
        first = prepend_parts(api, &next_v, &first, &dropped);
        ours = policy_calls(&e.conv, &a.calls);
        answer = a;
        if ours.is_empty() {
            return Bytes::from(first.to_string());
        }
        dropped.extend(ours.iter().map(|c| c.id.clone()));
    }
    Bytes::from(harness_wire::answer::without_calls(api, &first, &dropped).to_string())
}

/// How a forwarded stream ended.
struct Forwarded {
    /// The answer the events added up to.
    answer: harness_wire::answer::Answer,
    /// Its policy-tool calls (held back).
    ours: Vec<ToolCall>,
    /// Its closing events, held back while the model is asked again.
    held: Vec<SseEvent>,
    /// Parts forwarded (the next answer's indexes start after them).
    parts: usize,
    /// The last sequence number written (Responses).
    seq: Option<u64>,
    /// Why it ended early: the upstream cut it, or the agent left.
    ended: Option<String>,
    /// The agent disconnected.
    gone: bool,
}

/// Forwards one upstream stream to the agent: parts of policy-tool calls left out (the later
/// parts' indexes moved down), the closing events held when there were such calls; `offset`
/// moves every part index (a continuation's), `skip_start` leaves out its head.
#[allow(clippy::too_many_arguments)]
async fn forward(
    owned: &[String],
    api: Api,
    mut resp: reqwest::Response,
    tx: &mpsc::Sender<Bytes>,
    offset: usize,
    skip_start: bool,
    mut seq: Option<u64>,
) -> Forwarded {
    let mut parser = SseParser::new();
    let mut dec = StreamDecoder::new(api);
    let mut dropped: Vec<usize> = Vec::new();
    let mut ours: Vec<(usize, String)> = Vec::new();
    let mut held: Vec<SseEvent> = Vec::new();
    let mut max_part: Option<usize> = None;
    let ended: Option<String>;
    let mut gone = false;
    'read: loop {
        let events = match next_events(&mut resp, &mut parser, &dec).await {
            Ok(events) => events,
            Err(why) => {
                ended = why;
                break;
            }
        };
        let mut text = String::new();
        for ev in events {
            let role = match dec.decode(&ev) {
                Ok(r) => r,
                Err(_) => EventRole::Ping,
            };
            let out = match role {
                EventRole::Start if skip_start => None,
                EventRole::Part(n) => {
                    if dropped.contains(&n) {
                        None
                    } else if let Some((id, name)) = dec.call(n) {
                        if owned.iter().any(|o| o == name) {
                            dropped.push(n);
                            ours.push((n, id.to_string()));
                            None
                        } else {
                            Some(ev)
                        }
                    } else {
                        Some(ev)
                    }
                }
                EventRole::Finish if !ours.is_empty() => {
                    held.push(ev);
                    None
                }
                _ => Some(ev),
            };
            let Some(ev) = out else { continue };
            if let EventRole::Part(n) = role {
                max_part = Some(max_part.map_or(n, |m| m.max(n)));
            }
            let below = |n: usize| dropped.iter().filter(|&&d| d < n).count();
            let next_seq = seq.map(|s| s + 1);
            let ev = if offset > 0 || !dropped.is_empty() || next_seq.is_some() {
                let map = |n: usize| n + offset - below(n);
                let drop_ids: Vec<String> = ours.iter().map(|(_, id)| id.clone()).collect();
                rewrite(api, &ev, &map, &drop_ids, next_seq)
            } else {
                ev
            };
            if api == Api::Responses {
                if let Some(s) = serde_json::from_str::<serde_json::Value>(&ev.data)
                    .ok()
                    .and_then(|v| v.get("sequence_number").and_then(|s| s.as_u64()))
                {
                    seq = Some(s);
                }
            }
            text.push_str(&write_event(ev.event.as_deref(), &ev.data));
        }
        if !text.is_empty() && tx.send(Bytes::from(text)).await.is_err() {
            gone = true;
            ended = Some(
                "the agent disconnected in the middle of the stream; the upstream call was ended"
                    .into(),
            );
            break 'read;
        }
    }
    let answer = dec.answer();
    let ours_calls: Vec<ToolCall> = answer
        .calls
        .iter()
        .filter(|c| ours.iter().any(|(_, id)| *id == c.id))
        .cloned()
        .collect();
    let parts = max_part.map_or(0, |m| m + 1).saturating_sub(dropped.len()) + offset;
    Forwarded {
        answer,
        ours: ours_calls,
        held,
        parts,
        seq,
        ended,
        gone,
    }
}

/// The events of the upstream's next chunk; at its end, why it ended early (`None`: it closed
/// after its closing event).
async fn next_events(
    resp: &mut reqwest::Response,
    parser: &mut SseParser,
    dec: &StreamDecoder,
) -> Result<Vec<SseEvent>, Option<String>> {
    let chunk = match resp.chunk().await {
        Ok(Some(c)) => c,
        Ok(None) if dec.done() => return Err(None),
        Ok(None) => {
            return Err(Some(if parser.at_boundary() {
                "the upstream ended the stream before its closing event".to_string()
            } else {
                "the upstream cut the stream in the middle of an event".to_string()
            }))
        }
        Err(err) => return Err(Some(format!("the upstream's stream broke: {err}"))),
    };
    parser.feed(&chunk).map_err(|err| {
        Some(format!(
            "the upstream's stream is not an event stream: {err}"
        ))
    })
}

/// A streamed answer relayed event by event; a policy-tool call in it is answered and the model
/// asked again, its answer streamed on in the same stream. Returns what the record notes.
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
    resp: reqwest::Response,
    tx: &mpsc::Sender<Bytes>,
) -> Option<String> {
    let owned: Vec<String> = e.conv.policy_tools().into_iter().map(|t| t.name).collect();
    let mut f = forward(&owned, api, resp, tx, 0, false, None).await;
    let r = f.answer.response();
    e.conv
        .record_response(index, f.answer.usage, r.output_tokens, ms_since(began));
    let mut messages = sent;
    let mut rounds = 0;
    loop {
        if let Some(why) = f.ended.take() {
            if !f.gone {
                let ev = error_event(api, &why);
                let _ = tx
                    .send(Bytes::from(write_event(ev.event.as_deref(), &ev.data)))
                    .await;
            }
            return Some(why);
        }
        if f.ours.is_empty() || rounds >= MAX_POLICY_ROUNDS {
            for ev in &f.held {
                if tx
                    .send(Bytes::from(write_event(ev.event.as_deref(), &ev.data)))
                    .await
                    .is_err()
                {
                    return Some("the agent disconnected before the stream's end".into());
                }
            }
            return (rounds > 0)
                .then(|| format!("{rounds} policy tool round(s) answered by the proxy"));
        }
        rounds += 1;
        messages = continued(
            &mut e.conv,
            &messages,
            &f.answer.text,
            &f.answer.calls,
            &f.ours,
            index,
        );
        let record = e.conv.record_continuation(&messages);
        e.conv.set_sent(messages.clone());
        let body = e
            .conv
            .continuation_body(api, &decoded.env, decoded, &messages);
        let t = Instant::now();
        let resp = match send_upstream(shared, &parts.method, &parts.headers, path_q, body).await {
            Ok(r) if r.status().is_success() => r,
            Ok(r) => {
                let why = format!(
                    "asking the model again after a policy tool call failed with status {}",
                    r.status().as_u16()
                );
                let ev = error_event(api, &why);
                let _ = tx
                    .send(Bytes::from(write_event(ev.event.as_deref(), &ev.data)))
                    .await;
                return Some(why);
            }
            Err(err) => {
                let err = err.to_string();
                let ev = error_event(api, &err);
                let _ = tx
                    .send(Bytes::from(write_event(ev.event.as_deref(), &ev.data)))
                    .await;
                return Some(err);
            }
        };
        let next = forward(&owned, api, resp, tx, f.parts, true, f.seq).await;
        let rr = next.answer.response();
        e.conv.record_response(
            record.index,
            next.answer.usage,
            rr.output_tokens,
            ms_since(t),
        );
        f = next;
    }
}

/// Reads the request into the conversation and applies the splices due: each archive written
/// (and flushed) under the agent's folder before its splice is applied.
fn write_splices(shared: &Shared, e: &mut Entry, decoded: &Decoded) {
    // Splices first: each archive written and flushed before the policy applies it.
    let splices = e.conv.read(decoded);
    let turn = e.conv.turn();
    let root = archive_root(&shared.cfg, decoded);
    if root.is_some() {
        e.root.clone_from(&root);
    }
    apply_splices(shared, e, &splices, turn.saturating_sub(1), root.as_deref());
    // The files the policy keeps for the model, written under the agent's folder. (The
    // messages of this request join the context in the plan: a file for one of them is asked
    // for at the next request.)
    let root = e.root.clone();
    for f in e.conv.offloads() {
        let written = root
            .as_deref()
            .is_some_and(|r| crate::execution::beneath::write_new(r, &f.path, &f.bytes).is_ok());
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
    root: Option<&std::path::Path>,
) {
    for p in splices {
        let written = match root {
            Some(r) => {
                crate::execution::beneath::write_new(r, &p.archived.archive.path, &p.archived.bytes)
                    .map_err(|source| ProxyError::Archive {
                        path: p.archived.archive.path.clone(),
                        source,
                    })
            }
            None => Err(ProxyError::NoWorkdir {
                path: p.archived.archive.path.clone(),
            }),
        };
        let ok = written.is_ok();
        if e.conv.apply_splice(p, turn, written).is_some() && ok {
            if let Ok(mut r) = shared.recorder.lock() {
                r.archive(&e.cell, &p.archived.archive.path, &p.archived.bytes);
            }
        }
    }
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
                let resp = match send_upstream(shared, &parts.method, &parts.headers, path_q, body)
                    .await
                {
                    Ok(r) => r,
                    Err(err) => {
                        let err = err.to_string();
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
                let bytes = resp.bytes().await.unwrap_or_default();
                if !status.is_success() {
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
