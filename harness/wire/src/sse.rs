//! Server-sent events (the `text/event-stream` format all three APIs stream in), read and
//! written event by event.
//!
//! [`SseParser`] takes the bytes of a stream as they arrive, in pieces of any size (a piece may
//! end in the middle of a line or of a UTF-8 character), and returns each event once its blank
//! line has arrived. Lines are split on `\n`, `\r\n` or `\r`; `:` lines are comments; `data:`
//! lines of one event are joined with `\n`; `event:` names it; other fields (`id:`, `retry:`)
//! are ignored, as none of the three APIs uses them. [`write_event`] writes one event.

/// Why a byte stream is no event stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// A line longer than `MAX_LINE_BYTES`.
    #[error("an event-stream line is longer than {MAX_LINE_BYTES} bytes")]
    LineTooLong,
    /// A line that is not UTF-8.
    #[error("an event-stream line is not UTF-8")]
    NotUtf8(#[source] std::str::Utf8Error),
}

/// One event of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field (Anthropic and Responses name every event; Chat Completions names
    /// none).
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// An incremental reader of an event stream.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the line not yet ended.
    line: Vec<u8>,
    /// The last byte fed was `\r` (a following `\n` belongs to the same line end).
    after_cr: bool,
    event: Option<String>,
    data: Option<String>,
}

/// Bytes an unfinished line may hold before the stream is refused (a line of 16 MiB is no
/// model answer's).
pub(crate) const MAX_LINE_BYTES: usize = 16 << 20;

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Feeds the next bytes; returns the events they completed, in order. An error when a line
    /// grows past `MAX_LINE_BYTES` or is not UTF-8.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut out = Vec::new();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if b != b'\n' && b != b'\r' {
                continue;
            }
            if b == b'\n' && self.after_cr && i == start && self.line.is_empty() {
                // The `\n` of a `\r\n` whose `\r` ended the previous piece or line.
                self.after_cr = false;
                start = i + 1;
                continue;
            }
            self.line.extend_from_slice(&bytes[start..i]);
            let line = std::mem::take(&mut self.line);
            self.after_cr = b == b'\r';
            start = i + 1;
            self.line_end(&line, &mut out)?;
        }
        if start < bytes.len() {
            self.after_cr = false;
            self.line.extend_from_slice(&bytes[start..]);
            if self.line.len() > MAX_LINE_BYTES {
                return Err(SseError::LineTooLong);
            }
        }
        Ok(out)
    }

    fn line_end(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                out.push(SseEvent {
                    event: self.event.take(),
                    data,
                });
            }
            self.event = None;
            return Ok(());
        }
        let line = std::str::from_utf8(line).map_err(SseError::NotUtf8)?;
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            },
            _ => {}
        }
        Ok(())
    }

    /// Whether the bytes fed so far end between events (nothing of an event is pending): a
    /// stream that ends otherwise was cut.
    pub fn at_boundary(&self) -> bool {
        self.line.is_empty() && self.data.is_none()
    }
}

/// One event in the stream's text form, ended by its blank line.
pub fn write_event(event: Option<&str>, data: &str) -> String {
    let mut s = String::with_capacity(data.len() + 32);
    if let Some(e) = event {
        s.push_str("event: ");
        s.push_str(e);
        s.push('\n');
    }
    for line in data.split('\n') {
        s.push_str("data: ");
        s.push_str(line);
        s.push('\n');
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_anywhere_come_out_whole() {
        let text = "event: a\ndata: {\"x\":1}\n\n: comment\r\ndata: one\r\ndata: two\r\n\r\ndata: [DONE]\n\n";
        let whole = SseParser::new().feed(text.as_bytes()).unwrap();
        assert_eq!(
            whole,
            vec![
                SseEvent {
                    event: Some("a".into()),
                    data: "{\"x\":1}".into()
                },
                SseEvent {
                    event: None,
                    data: "one\ntwo".into()
                },
                SseEvent {
                    event: None,
                    data: "[DONE]".into()
                },
            ]
        );
        for cut in 0..text.len() {
            let mut p = SseParser::new();
            let mut got = p.feed(&text.as_bytes()[..cut]).unwrap();
            got.extend(p.feed(&text.as_bytes()[cut..]).unwrap());
            assert_eq!(got, whole, "cut at {cut}");
            assert!(p.at_boundary());
        }
        let mut byte_by_byte = SseParser::new();
        let mut got = Vec::new();
        for b in text.as_bytes() {
            got.extend(byte_by_byte.feed(std::slice::from_ref(b)).unwrap());
        }
        assert_eq!(got, whole);
    }

    #[test]
    fn a_cut_stream_is_not_at_a_boundary_and_written_events_read_back() {
        let mut p = SseParser::new();
        assert!(p.feed(b"data: {\"par").unwrap().is_empty());
        assert!(!p.at_boundary());
        let written = write_event(Some("message_stop"), "{\"a\":\n1}");
        let back = SseParser::new().feed(written.as_bytes()).unwrap();
        assert_eq!(back[0].event.as_deref(), Some("message_stop"));
        assert_eq!(back[0].data, "{\"a\":\n1}");
    }

    #[test]
    fn a_line_that_is_not_utf8_is_an_error() {
        let mut p = SseParser::new();
        let err = p.feed(b"data: \xff\xfe\n\n").unwrap_err();
        assert!(err.to_string().contains("not UTF-8"), "{err}");
        assert!(
            std::error::Error::source(&err).is_some(),
            "the UTF-8 error is kept"
        );
        let long = vec![b'x'; MAX_LINE_BYTES + 1];
        assert_eq!(
            SseParser::new().feed(&long).unwrap_err().to_string(),
            format!("an event-stream line is longer than {MAX_LINE_BYTES} bytes")
        );
    }
}
