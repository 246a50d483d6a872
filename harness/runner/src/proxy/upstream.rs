//! The proxy's side as the upstream's client: the agent's request sent on with its headers, the
//! answer's head within the time limit, its body read within the cap, a client's error read for
//! what it is (no connection, a malformed answer, too slow), and a request outside any
//! conversation passed through as it came.

use super::*;

/// Headers not forwarded either way (hop by hop, or set by the proxy's own client).
pub(super) fn hop_by_hop(name: &str) -> bool {
    matches!(
        name,
        "host"
            | "content-length"
            | "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authorization"
            | "proxy-authenticate"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "accept-encoding"
    )
}

/// The upstream URL of an agent's path and query.
pub(super) fn upstream_url(base: &str, path_and_query: &str) -> String {
    if base.ends_with("/v1") && path_and_query.starts_with("/v1/") {
        format!("{base}{}", &path_and_query[3..])
    } else {
        format!("{base}{path_and_query}")
    }
}

/// The agent's headers as the upstream gets them (its key included).
pub(super) fn upstream_headers(h: &HeaderMap) -> reqwest::header::HeaderMap {
    let mut out = reqwest::header::HeaderMap::new();
    for (k, v) in h {
        if hop_by_hop(k.as_str()) {
            continue;
        }
        if let (Ok(k), Ok(v)) = (
            reqwest::header::HeaderName::from_bytes(k.as_str().as_bytes()),
            reqwest::header::HeaderValue::from_bytes(v.as_bytes()),
        ) {
            out.append(k, v);
        }
    }
    out.insert(
        reqwest::header::ACCEPT_ENCODING,
        reqwest::header::HeaderValue::from_static("identity"),
    );
    out
}

/// A client error and its causes, in words (`error sending request: … : invalid header`).
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut words = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let w = s.to_string();
        if !words.contains(&w) {
            words.push_str(": ");
            words.push_str(&w);
        }
        cur = s.source();
    }
    words
}

/// Whether the client's error is the upstream's answer being malformed (a head that does not
/// parse or is too large, a body whose framing does not decode, a connection closed before the
/// answer) rather than no connection at all.
pub(crate) fn malformed(e: &reqwest::Error) -> bool {
    if e.is_connect() {
        return false;
    }
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = cur {
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            if h.is_parse()
                || h.is_parse_status()
                || h.is_parse_too_large()
                || h.is_incomplete_message()
            {
                return true;
            }
        }
        // hyper's body decoder says a chunk size line or a length is not one this way.
        if s.downcast_ref::<std::io::Error>().is_some_and(|io| {
            matches!(
                io.kind(),
                std::io::ErrorKind::InvalidData | std::io::ErrorKind::InvalidInput
            )
        }) {
            return true;
        }
        cur = s.source();
    }
    false
}

/// Reads a whole answer body within the limits.
pub(crate) async fn read_whole(
    mut resp: reqwest::Response,
    limits: AnswerLimits,
    deadline: tokio::time::Instant,
) -> Result<Bytes, AnswerError> {
    let mut out: Vec<u8> = Vec::new();
    loop {
        match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Err(_) => return Err(AnswerError::TooSlow(limits.time)),
            Ok(Ok(Some(c))) => {
                if out.len() + c.len() > limits.bytes {
                    return Err(AnswerError::TooLarge(limits.bytes));
                }
                out.extend_from_slice(&c);
            }
            Ok(Ok(None)) => return Ok(Bytes::from(out)),
            Ok(Err(e)) if malformed(&e) => return Err(AnswerError::Malformed(error_chain(&e))),
            Ok(Err(e)) => return Err(AnswerError::Cut(error_chain(&e))),
        }
    }
}

impl Shared {
    /// When an answer asked for now must have ended.
    pub(crate) fn deadline(&self) -> tokio::time::Instant {
        tokio::time::Instant::now() + self.cfg.limits.time
    }
}

/// Sends `body` upstream with the agent's method and headers; its answer's head must come by
/// `deadline`.
pub(super) async fn send_upstream(
    shared: &Shared,
    method: &hyper::Method,
    headers: &HeaderMap,
    path_q: &str,
    body: Vec<u8>,
    deadline: tokio::time::Instant,
) -> Result<reqwest::Response, ProxyError> {
    let url = upstream_url(&shared.cfg.upstream, path_q);
    let method =
        reqwest::Method::from_bytes(method.as_str().as_bytes()).map_err(ProxyError::Method)?;
    let mut h = upstream_headers(headers);
    h.insert(
        reqwest::header::CONTENT_TYPE,
        reqwest::header::HeaderValue::from_static("application/json"),
    );
    if let Some(ct) = headers.get(hyper::header::CONTENT_TYPE) {
        if let Ok(v) = reqwest::header::HeaderValue::from_bytes(ct.as_bytes()) {
            h.insert(reqwest::header::CONTENT_TYPE, v);
        }
    }
    let sending = shared
        .client
        .request(method, &url)
        .headers(h)
        .body(body)
        .send();
    match tokio::time::timeout_at(deadline, sending).await {
        Err(_) => Err(ProxyError::Slow {
            url,
            limit: shared.cfg.limits.time,
        }),
        Ok(Ok(r)) => Ok(r),
        Ok(Err(source)) if malformed(&source) => Err(ProxyError::Malformed {
            url,
            cause: error_chain(&source),
        }),
        Ok(Err(source)) => Err(ProxyError::Unreachable {
            url,
            cause: error_chain(&source),
        }),
    }
}

/// The response head for the agent from the upstream's.
pub(super) fn agent_head(resp: &reqwest::Response) -> hyper::http::response::Builder {
    let mut b = Response::builder().status(resp.status().as_u16());
    for (k, v) in resp.headers() {
        if hop_by_hop(k.as_str()) {
            continue;
        }
        b = b.header(k.as_str(), v.as_bytes());
    }
    b
}

/// Relays a request as it came and its answer as it comes (a stream piece by piece).
pub(super) async fn pass_through(
    shared: &Arc<Shared>,
    parts: &hyper::http::request::Parts,
    path_q: &str,
    body: Bytes,
    kind: &str,
    reason: &str,
) -> Response<ProxyBody> {
    shared
        .side
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = parts.uri.path().to_string();
    let deadline = shared.deadline();
    let resp = match send_upstream(
        shared,
        &parts.method,
        &parts.headers,
        path_q,
        body.to_vec(),
        deadline,
    )
    .await
    {
        Ok(r) => r,
        Err(e) => {
            let e = harness_core::one_line(&e);
            shared.log(Exchange::new(kind, &path).status(502).note(&e));
            return error(StatusCode::BAD_GATEWAY, &e);
        }
    };
    let status = resp.status().as_u16();
    shared.log(Exchange::new(kind, &path).status(status).note(reason));
    let head = agent_head(&resp);
    let (tx, rx) = mpsc::channel::<Piece>(16);
    let limits = shared.cfg.limits;
    let log = Arc::clone(shared);
    let kind = kind.to_string();
    // Relayed as it comes, nothing held; past the cap or the time limit the body ends with an
    // error (the agent sees an incomplete answer) and the exchange says why.
    tokio::spawn(async move {
        let mut resp = resp;
        let mut read = 0usize;
        let why = loop {
            match tokio::time::timeout_at(deadline, resp.chunk()).await {
                Err(_) => break Some(AnswerError::TooSlow(limits.time)),
                Ok(Ok(Some(chunk))) => {
                    read += chunk.len();
                    if read > limits.bytes {
                        break Some(AnswerError::TooLarge(limits.bytes));
                    }
                    if tx.send(Ok(chunk)).await.is_err() {
                        break None;
                    }
                }
                Ok(Ok(None)) => break None,
                Ok(Err(e)) if malformed(&e) => break Some(AnswerError::Malformed(error_chain(&e))),
                Ok(Err(e)) => break Some(AnswerError::Cut(error_chain(&e))),
            }
        };
        if let Some(why) = why {
            let msg = harness_core::one_line(&why);
            log.log(Exchange::new(&kind, &path).status(status).note(&msg));
            let _ = tx.send(Err(std::io::Error::other(msg))).await;
        }
    });
    head.body(ProxyBody::Stream(rx)).unwrap_or_else(|_| {
        error(
            StatusCode::BAD_GATEWAY,
            "the upstream's answer head is not valid",
        )
    })
}
