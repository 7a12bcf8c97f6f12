//! Reading newline-terminated frames with a size bound: a line longer than the bound is
//! skipped (its bytes are read and dropped, never kept), so memory stays bounded whatever
//! the peer sends.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The largest frame dsh reads: room for a 10 MB prompt, refused with a clear error by the
/// method, rather than a frame dropped without an answer.
pub const MAX_FRAME_BYTES: usize = 16 << 20;

/// What one read gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// One line, without its `\n` (and a `\r` before it).
    Frame(Vec<u8>),
    /// A line over the bound, dropped; its length in bytes.
    TooLong(usize),
}

/// Frames from a buffered reader.
#[derive(Debug)]
pub struct LineReader<R> {
    reader: R,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(reader: R) -> Self {
        Self::with_limit(reader, MAX_FRAME_BYTES)
    }

    pub fn with_limit(reader: R, max: usize) -> Self {
        Self { reader, max }
    }

    /// The next non-empty line; `None` at the end of the stream (a last line without a
    /// newline still counts).
    pub async fn next(&mut self) -> std::io::Result<Option<Line>> {
        loop {
            let mut line = Vec::new();
            let mut total = 0usize;
            let mut ended = false;
            loop {
                let buf = self.reader.fill_buf().await?;
                if buf.is_empty() {
                    ended = true;
                    break;
                }
                let (take, newline) = match buf.iter().position(|&b| b == b'\n') {
                    Some(at) => (at + 1, true),
                    None => (buf.len(), false),
                };
                let body = if newline {
                    &buf[..take - 1]
                } else {
                    &buf[..take]
                };
                total = total.saturating_add(body.len());
                if total <= self.max {
                    line.extend_from_slice(body);
                } else if !line.is_empty() {
                    line = Vec::new();
                }
                self.reader.consume(take);
                if newline {
                    break;
                }
            }
            if total > self.max {
                return Ok(Some(Line::TooLong(total)));
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                if ended {
                    return Ok(None);
                }
                continue;
            }
            return Ok(Some(Line::Frame(line)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read_all(input: &[u8], max: usize) -> Vec<Line> {
        let mut reader = LineReader::with_limit(input, max);
        let mut lines = Vec::new();
        while let Some(line) = reader.next().await.unwrap() {
            lines.push(line);
        }
        lines
    }

    #[tokio::test]
    async fn lines_are_split_blank_ones_skipped_and_long_ones_dropped() {
        let lines = read_all(b"{\"a\":1}\r\n\n  \n0123456789abc\n{}", 10).await;
        assert_eq!(
            lines,
            vec![
                Line::Frame(b"{\"a\":1}".to_vec()),
                Line::TooLong(13),
                Line::Frame(b"{}".to_vec()),
            ]
        );
    }
}
