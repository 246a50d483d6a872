//! A streamed upstream answer forwarded to the agent as it comes: the policy's own calls left
//! out (the later parts' indexes moved down, none reused), the closing events held while the
//! model may be asked again, the answer read within the cap and the time limit.

use super::*;

/// How a forwarded stream ended.
pub(super) struct Forwarded {
    /// The answer the events added up to.
    pub(super) answer: harness_wire::Answer,
    /// Its policy-tool calls (left out of the stream).
    pub(super) ours: Vec<ToolCall>,
    /// Its closing events, held back while the model may be asked again (part indexes mapped,
    /// the policy's calls left out; sequence numbers set when they go).
    pub(super) held: Vec<SseEvent>,
    /// Parts forwarded so far (the next answer's indexes start after them).
    pub(super) parts: usize,
    /// The last sequence number written (Responses).
    pub(super) seq: Option<u64>,
    /// Why it ended early: the upstream cut it, it passed the cap or the time limit, or the
    /// agent left.
    pub(super) ended: Option<String>,
    /// The agent disconnected.
    pub(super) gone: bool,
}

/// Sends an event to the agent; `false` when the agent is gone.
pub(super) async fn send_event(tx: &mpsc::Sender<Piece>, ev: &SseEvent) -> bool {
    tx.send(Ok(Bytes::from(write_event(ev.event.as_deref(), &ev.data))))
        .await
        .is_ok()
}

/// Forwards one upstream stream to the agent as it comes: parts of policy-tool calls left out
/// (the later parts' indexes moved down), the closing events held when there were such calls;
/// `offset` moves every part index (a continuation's), `skip_start` leaves out its head. At most
/// the proxy's cap of bytes is read, within the answer's time limit.
#[allow(clippy::too_many_arguments)]
pub(super) async fn forward(
    limits: AnswerLimits,
    deadline: tokio::time::Instant,
    owned: &[String],
    api: Api,
    mut resp: reqwest::Response,
    tx: &mpsc::Sender<Piece>,
    offset: usize,
    skip_start: bool,
    mut seq: Option<u64>,
) -> Forwarded {
    let mut parser = SseParser::new();
    let mut dec = StreamDecoder::new(api);
    let mut dropped: Vec<usize> = Vec::new();
    let mut ours: Vec<(usize, String)> = Vec::new();
    let mut held: Vec<SseEvent> = Vec::new();
    let mut forwarded: std::collections::BTreeSet<usize> = std::collections::BTreeSet::new();
    let mut read = 0usize;
    let ended: Option<String>;
    let mut gone = false;
    'read: loop {
        let events =
            match next_events(&mut resp, &mut parser, &dec, limits, deadline, &mut read).await {
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
            let keep = match role {
                EventRole::Start if skip_start => false,
                EventRole::Part(n) => {
                    if dropped.contains(&n) {
                        false
                    } else if let Some((id, name)) = dec.call(n) {
                        if owned.iter().any(|o| o == name) {
                            dropped.push(n);
                            ours.push((n, id.to_string()));
                            false
                        } else {
                            true
                        }
                    } else {
                        true
                    }
                }
                _ => true,
            };
            if !keep {
                continue;
            }
            if let EventRole::Part(n) = role {
                forwarded.insert(n);
            }
            let below = |n: usize| dropped.iter().filter(|&&d| d < n).count();
            let map = |n: usize| n + offset - below(n);
            let drop_ids: Vec<String> = ours.iter().map(|(_, id)| id.clone()).collect();
            if role == EventRole::Finish && !ours.is_empty() {
                held.push(rewrite(api, &ev, &map, &drop_ids, None));
                continue;
            }
            let next_seq = seq.map(|s| s + 1);
            let ev = if offset > 0 || !dropped.is_empty() || next_seq.is_some() {
                rewrite(api, &ev, &map, &drop_ids, next_seq)
            } else {
                ev
            };
            note_seq(api, &ev, &mut seq);
            text.push_str(&write_event(ev.event.as_deref(), &ev.data));
        }
        if !text.is_empty() && tx.send(Ok(Bytes::from(text))).await.is_err() {
            gone = true;
            ended = Some(
                "the agent disconnected in the middle of the stream; the upstream call was ended"
                    .into(),
            );
            break 'read;
        }
    }
    // An answer that ended early is not read (it may be as large as the cap), only said.
    let answer = if ended.is_some() {
        harness_wire::Answer::default()
    } else {
        dec.answer()
    };
    drop(dec);
    let ours_calls: Vec<ToolCall> = answer
        .calls
        .iter()
        .filter(|c| ours.iter().any(|(_, id)| *id == c.id))
        .cloned()
        .collect();
    Forwarded {
        answer,
        ours: ours_calls,
        held,
        parts: offset + forwarded.len(),
        seq,
        ended,
        gone,
    }
}

/// Keeps the sequence number of a Responses event written.
pub(super) fn note_seq(api: Api, ev: &SseEvent, seq: &mut Option<u64>) {
    if api == Api::Responses {
        if let Some(s) = serde_json::from_str::<serde_json::Value>(&ev.data)
            .ok()
            .and_then(|v| v.get("sequence_number").and_then(|s| s.as_u64()))
        {
            *seq = Some(s);
        }
    }
}

/// The events of the upstream's next chunk; at its end, why it ended early (`None`: it closed
/// after its closing event). `read` counts the answer's bytes against the cap.
pub(super) async fn next_events(
    resp: &mut reqwest::Response,
    parser: &mut SseParser,
    dec: &StreamDecoder,
    limits: AnswerLimits,
    deadline: tokio::time::Instant,
    read: &mut usize,
) -> Result<Vec<SseEvent>, Option<String>> {
    let chunk = match tokio::time::timeout_at(deadline, resp.chunk()).await {
        Err(_) => return Err(Some(AnswerError::TooSlow(limits.time).to_string())),
        Ok(Ok(Some(c))) => c,
        Ok(Ok(None)) if dec.done() => return Err(None),
        Ok(Ok(None)) => {
            return Err(Some(if parser.at_boundary() {
                "the upstream ended the stream before its closing event".to_string()
            } else {
                "the upstream cut the stream in the middle of an event".to_string()
            }))
        }
        Ok(Err(err)) if malformed(&err) => {
            return Err(Some(AnswerError::Malformed(error_chain(&err)).to_string()))
        }
        Ok(Err(err)) => {
            return Err(Some(format!(
                "the upstream's stream broke: {}",
                error_chain(&err)
            )))
        }
    };
    *read += chunk.len();
    if *read > limits.bytes {
        return Err(Some(AnswerError::TooLarge(limits.bytes).to_string()));
    }
    parser.feed(&chunk).map_err(|err| {
        Some(format!(
            "the upstream's stream is not an event stream: {}",
            harness_core::one_line(&err)
        ))
    })
}

/// Sends the held closing events: sequence numbers set after `seq`; with no call of the agent's
/// left in the answer, the stop reason of an answer without calls; on Responses, the output
/// items of the answers joined before it first. `false` when the agent is gone.
pub(super) async fn release(
    api: Api,
    tx: &mpsc::Sender<Piece>,
    f: &mut Forwarded,
    no_calls: bool,
    earlier: &[serde_json::Value],
) -> bool {
    let same = |n: usize| n;
    for ev in std::mem::take(&mut f.held) {
        let ev = if no_calls {
            harness_wire::without_call_stop(api, &ev)
        } else {
            ev
        };
        let ev = harness_wire::with_earlier_output(api, &ev, earlier);
        let ev = rewrite(api, &ev, &same, &[], f.seq.map(|s| s + 1));
        note_seq(api, &ev, &mut f.seq);
        if !send_event(tx, &ev).await {
            return false;
        }
    }
    true
}
