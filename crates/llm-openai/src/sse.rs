//! A small incremental parser for `text/event-stream` bodies.
//!
//! Network reads split the body anywhere: inside a line, between `\r` and `\n`, inside a UTF-8
//! sequence. The parser buffers bytes until a line is complete, so only whole lines are
//! decoded. Chat-completions streams use `data` fields and, on some servers, `event: error`;
//! comments (`:` lines, often keep-alives) and other fields are skipped.
//!
//! What it buffers is bounded: a line longer than the limit, or an event whose data lines
//! add up to more than it, is an [`SseOverflow`] and the parser takes no more input, so a
//! peer that never sends a newline cannot grow memory without end.

use std::fmt;

/// The limit the parser starts with ([`SseParser::new`]).
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event` field, when the server named the event type (`error`); `None` for the
    /// default type.
    pub event: Option<String>,
    /// The `data` lines, joined with `\n`.
    pub data: String,
}

impl SseEvent {
    /// An event of the default type.
    pub fn data(data: impl Into<String>) -> Self {
        Self {
            event: None,
            data: data.into(),
        }
    }

    /// Whether the server marked this as an error event (`event: error`).
    pub fn is_error(&self) -> bool {
        self.event.as_deref() == Some("error")
    }
}

/// A line, or an event's data, longer than the parser's limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseOverflow {
    /// The limit in bytes.
    pub limit: usize,
}

impl fmt::Display for SseOverflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "an event-stream line or event is longer than {} bytes",
            self.limit
        )
    }
}

impl std::error::Error for SseOverflow {}

/// Splits SSE bytes into events.
#[derive(Debug)]
pub struct SseParser {
    buf: Vec<u8>,
    /// The last byte seen ended a line with `\r`; a `\n` right after it belongs to that line end.
    after_cr: bool,
    /// `data` lines of the event being built, joined with `\n`.
    data: String,
    has_data: bool,
    /// The `event` field of the event being built.
    event: Option<String>,
    started: bool,
    max_line: usize,
    /// Set once the limit was exceeded; every later call reports it again.
    overflowed: bool,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    /// An empty parser with [`DEFAULT_MAX_LINE_BYTES`].
    pub fn new() -> Self {
        Self::with_max_line(DEFAULT_MAX_LINE_BYTES)
    }

    /// An empty parser refusing lines and events longer than `max_line` bytes (at least 1).
    pub fn with_max_line(max_line: usize) -> Self {
        Self {
            buf: Vec::new(),
            after_cr: false,
            data: String::new(),
            has_data: false,
            event: None,
            started: false,
            max_line: max_line.max(1),
            overflowed: false,
        }
    }

    fn overflow(&mut self) -> SseOverflow {
        self.overflowed = true;
        self.buf = Vec::new();
        self.data = String::new();
        SseOverflow {
            limit: self.max_line,
        }
    }

    /// Feeds `bytes`; every event completed by them is appended to `out`. Events completed
    /// before an overflow are still appended.
    pub fn push(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseOverflow> {
        if self.overflowed {
            return Err(self.overflow());
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            let byte = bytes[i];
            if byte == b'\n' || byte == b'\r' {
                if self.buf.len() + (i - start) > self.max_line {
                    return Err(self.overflow());
                }
                if self.buf.is_empty() {
                    self.line(&bytes[start..i], out)?;
                } else {
                    self.buf.extend_from_slice(&bytes[start..i]);
                    let line = std::mem::take(&mut self.buf);
                    self.line(&line, out)?;
                }
                if byte == b'\r' {
                    if i + 1 < bytes.len() {
                        if bytes[i + 1] == b'\n' {
                            i += 1;
                        }
                    } else {
                        self.after_cr = true;
                    }
                }
                start = i + 1;
            }
            i += 1;
        }
        let rest = &bytes[start..];
        if self.buf.len() + rest.len() > self.max_line {
            return Err(self.overflow());
        }
        self.buf.extend_from_slice(rest);
        Ok(())
    }

    /// Ends the input: a last line without a terminator and an event without its closing
    /// blank line are still delivered, since some servers end the body that way.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseOverflow> {
        if self.overflowed {
            return Err(self.overflow());
        }
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            self.line(&line, out)?;
        }
        self.dispatch(out);
        Ok(())
    }

    fn line(&mut self, raw: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseOverflow> {
        let mut raw = raw;
        if !self.started {
            self.started = true;
            // A UTF-8 byte-order mark may precede the first line.
            if let Some(rest) = raw.strip_prefix(b"\xEF\xBB\xBF") {
                raw = rest;
            }
        }
        if raw.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if raw[0] == b':' {
            return Ok(());
        }
        let (field, value) = match raw.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &raw[colon + 1..];
                (&raw[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (raw, &b""[..]),
        };
        match field {
            b"data" => {
                let joined = self.data.len() + usize::from(self.has_data) + value.len();
                if joined > self.max_line {
                    return Err(self.overflow());
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if self.has_data {
            out.push(SseEvent {
                event,
                data: std::mem::take(&mut self.data),
            });
            self.has_data = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(body: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for chunk in body.chunks(piece.max(1)) {
            parser.push(chunk, &mut out).unwrap();
        }
        parser.finish(&mut out).unwrap();
        out
    }

    fn parse_every_split_events(body: &[u8]) -> Vec<SseEvent> {
        let whole = parse_in_pieces(body, body.len());
        for piece in 1..body.len() {
            assert_eq!(
                parse_in_pieces(body, piece),
                whole,
                "split every {piece} bytes"
            );
        }
        // Also every single two-way split.
        for cut in 0..=body.len() {
            let mut parser = SseParser::new();
            let mut out = Vec::new();
            parser.push(&body[..cut], &mut out).unwrap();
            parser.push(&body[cut..], &mut out).unwrap();
            parser.finish(&mut out).unwrap();
            assert_eq!(out, whole, "cut at {cut}");
        }
        whole
    }

    fn parse_every_split(body: &[u8]) -> Vec<String> {
        parse_every_split_events(body)
            .into_iter()
            .map(|event| event.data)
            .collect()
    }

    #[test]
    fn data_lines_comments_and_other_fields() {
        let body = b": keep-alive\n\nevent: message\nid: 7\ndata: {\"a\":1}\nretry: 10\n\ndata:no-space\n\ndata: [DONE]\n\n";
        assert_eq!(
            parse_every_split(body),
            vec!["{\"a\":1}", "no-space", "[DONE]"]
        );
    }

    #[test]
    fn the_event_field_names_its_event_only() {
        let body = b"event: error\ndata: {\"error\":{}}\n\ndata: plain\n\nevent: ping\n\ndata: after-ping\n\n";
        let events = parse_every_split_events(body);
        assert_eq!(
            events,
            vec![
                SseEvent {
                    event: Some("error".into()),
                    data: "{\"error\":{}}".into()
                },
                SseEvent::data("plain"),
                // An event without data dispatches nothing, and its type does not leak on.
                SseEvent::data("after-ping"),
            ]
        );
        assert!(events[0].is_error());
        assert!(!events[1].is_error());
    }

    #[test]
    fn multi_line_data_is_joined_with_newlines() {
        let body = b"data: first\ndata:  second\ndata\n\n";
        assert_eq!(parse_every_split(body), vec!["first\n second\n"]);
    }

    #[test]
    fn crlf_and_lone_cr_line_ends() {
        let crlf = b"data: a\r\n\r\ndata: b\r\n\r\n";
        assert_eq!(parse_every_split(crlf), vec!["a", "b"]);
        let cr = b"data: a\r\rdata: b\r\r";
        assert_eq!(parse_every_split(cr), vec!["a", "b"]);
    }

    #[test]
    fn utf8_split_inside_a_character_survives() {
        let body = "data: h\u{e9}llo \u{1F600}\n\n".as_bytes();
        assert_eq!(parse_every_split(body), vec!["h\u{e9}llo \u{1F600}"]);
    }

    #[test]
    fn events_without_data_are_skipped_and_trailing_event_is_flushed() {
        let body = b"event: ping\n\n: comment only\n\ndata: tail";
        assert_eq!(parse_every_split(body), vec!["tail"]);
        let bom = b"\xEF\xBB\xBFdata: x\n\n";
        assert_eq!(parse_every_split(bom), vec!["x"]);
    }

    #[test]
    fn a_line_that_never_ends_overflows_however_it_is_split() {
        let limit = 64;
        for piece in [1, 7, 64, 65, 1000] {
            let mut parser = SseParser::with_max_line(limit);
            let mut out = Vec::new();
            let mut result = Ok(());
            let mut fed = 0;
            // Far more than the limit, with no line end anywhere.
            while result.is_ok() && fed < 10_000 {
                result = parser.push(&vec![b'a'; piece], &mut out);
                fed += piece;
            }
            assert_eq!(result, Err(SseOverflow { limit }), "pieces of {piece}");
            assert!(
                fed <= limit + piece,
                "read {fed} bytes in pieces of {piece}"
            );
            assert!(out.is_empty());
            // A parser that overflowed stays failed, and holds nothing.
            assert_eq!(parser.push(b"\n\n", &mut out), Err(SseOverflow { limit }));
            assert_eq!(parser.finish(&mut out), Err(SseOverflow { limit }));
            assert!(parser.buf.is_empty() && parser.data.is_empty());
        }
    }

    #[test]
    fn a_line_or_event_at_the_limit_passes_and_one_byte_more_does_not() {
        let limit = 16;
        let at_limit = format!("data: {}\n\n", "x".repeat(limit - 6));
        let mut parser = SseParser::with_max_line(limit);
        let mut out = Vec::new();
        parser.push(at_limit.as_bytes(), &mut out).unwrap();
        assert_eq!(out, vec![SseEvent::data("x".repeat(limit - 6))]);
        let over = format!("data: {}\n\n", "x".repeat(limit - 5));
        let mut parser = SseParser::with_max_line(limit);
        assert!(parser.push(over.as_bytes(), &mut Vec::new()).is_err());

        // Many short data lines of one event add up.
        let mut parser = SseParser::with_max_line(limit);
        let mut out = Vec::new();
        let mut result = Ok(());
        for _ in 0..100 {
            result = parser.push(b"data: abc\n", &mut out);
            if result.is_err() {
                break;
            }
        }
        assert_eq!(result, Err(SseOverflow { limit }));
        assert!(out.is_empty());
    }

    #[test]
    fn events_before_an_overflow_are_delivered() {
        let mut parser = SseParser::with_max_line(32);
        let mut out = Vec::new();
        let body = format!("data: one\n\ndata: {}", "y".repeat(100));
        assert!(parser.push(body.as_bytes(), &mut out).is_err());
        assert_eq!(out, vec![SseEvent::data("one")]);
    }
}
