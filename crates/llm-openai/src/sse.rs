//! A small incremental parser for `text/event-stream` bodies.
//!
//! Network reads split the body anywhere: inside a line, between `\r` and `\n`, inside a UTF-8
//! sequence. The parser buffers bytes until a line is complete, so only whole lines are
//! decoded. Only `data` fields matter to chat-completions streams; comments (`:` lines, often
//! keep-alives) and other fields are skipped.

/// Splits SSE bytes into event `data` payloads.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    /// The last byte seen ended a line with `\r`; a `\n` right after it belongs to that line end.
    after_cr: bool,
    /// `data` lines of the event being built, joined with `\n`.
    data: String,
    has_data: bool,
    started: bool,
}

impl SseParser {
    /// An empty parser.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds `bytes`; every event completed by them is appended to `out` as its data payload.
    pub fn push(&mut self, mut bytes: &[u8], out: &mut Vec<String>) {
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
                if self.buf.is_empty() {
                    self.line(&bytes[start..i], out);
                } else {
                    self.buf.extend_from_slice(&bytes[start..i]);
                    let line = std::mem::take(&mut self.buf);
                    self.line(&line, out);
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
        self.buf.extend_from_slice(&bytes[start..]);
    }

    /// Ends the input: a last line without a terminator and an event without its closing
    /// blank line are still delivered, since some servers end the body that way.
    pub fn finish(&mut self, out: &mut Vec<String>) {
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            self.line(&line, out);
        }
        self.dispatch(out);
    }

    fn line(&mut self, raw: &[u8], out: &mut Vec<String>) {
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
            return;
        }
        if raw[0] == b':' {
            return;
        }
        let (field, value) = match raw.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &raw[colon + 1..];
                (&raw[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (raw, &b""[..]),
        };
        if field == b"data" {
            if self.has_data {
                self.data.push('\n');
            }
            self.data.push_str(&String::from_utf8_lossy(value));
            self.has_data = true;
        }
    }

    fn dispatch(&mut self, out: &mut Vec<String>) {
        if self.has_data {
            out.push(std::mem::take(&mut self.data));
            self.has_data = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(body: &[u8], piece: usize) -> Vec<String> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for chunk in body.chunks(piece.max(1)) {
            parser.push(chunk, &mut out);
        }
        parser.finish(&mut out);
        out
    }

    fn parse_every_split(body: &[u8]) -> Vec<String> {
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
            parser.push(&body[..cut], &mut out);
            parser.push(&body[cut..], &mut out);
            parser.finish(&mut out);
            assert_eq!(out, whole, "cut at {cut}");
        }
        whole
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
}
