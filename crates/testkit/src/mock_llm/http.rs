//! A deliberately small HTTP/1.1 server side: request parsing with keep-alive and
//! pipelining, and response writing with `Content-Length` or chunked bodies.
//!
//! Hand-written rather than a framework so faults can be exact at the byte level: a reset
//! lands between two specific events, a stall holds an open chunked body, a truncated body
//! closes the socket mid-way.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Largest request head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Largest request body accepted.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// One parsed request.
#[derive(Debug, Clone)]
pub(crate) struct HttpRequest {
    pub method: String,
    /// The request target as sent (path plus optional query).
    pub target: String,
    /// `true` for HTTP/1.0, where connections close by default.
    pub http10: bool,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The path without the query string.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// Whether the client wants the connection closed after this exchange.
    pub fn wants_close(&self) -> bool {
        let connection = self.header("connection").map(str::to_ascii_lowercase);
        match connection.as_deref() {
            Some(v) if v.contains("close") => true,
            Some(v) if v.contains("keep-alive") => false,
            _ => self.http10,
        }
    }
}

/// Why no request could be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    #[error("malformed request: {0}")]
    Malformed(String),
    #[error("connection closed mid-request")]
    Truncated,
}

/// A connection with its read buffer (bytes past one request belong to the next).
pub(crate) struct Connection {
    pub stream: TcpStream,
    buf: Vec<u8>,
    /// Response bytes queued but not yet written (see [`Connection::send`]).
    out: Vec<u8>,
}

impl Connection {
    pub fn new(stream: TcpStream) -> Self {
        Self {
            stream,
            buf: Vec::new(),
            out: Vec::new(),
        }
    }

    /// Reads more bytes into the buffer; `Ok(0)` at end of stream.
    async fn fill(&mut self) -> std::io::Result<usize> {
        // Straight into the buffer, with room for a typical request body in one read.
        self.buf.reserve(64 * 1024);
        self.stream.read_buf(&mut self.buf).await
    }

    /// Reads the next request; `Ok(None)` when the peer closed between requests.
    pub async fn read_request(&mut self) -> Result<Option<HttpRequest>, ReadError> {
        let head_end = loop {
            if let Some(at) = find(&self.buf, b"\r\n\r\n") {
                break at;
            }
            if self.buf.len() > MAX_HEAD {
                return Err(ReadError::Malformed("request head too large".into()));
            }
            if self.fill().await? == 0 {
                return if self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(ReadError::Truncated)
                };
            }
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).into_owned();
        self.buf.drain(..head_end + 4);
        let mut lines = head.split("\r\n");
        let request_line = lines.next().unwrap_or("");
        let mut parts = request_line.split(' ');
        let (Some(method), Some(target), Some(version), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(ReadError::Malformed(format!(
                "bad request line {request_line:?}"
            )));
        };
        if !version.starts_with("HTTP/1.") {
            return Err(ReadError::Malformed(format!(
                "unsupported version {version}"
            )));
        }
        let mut headers = Vec::new();
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                return Err(ReadError::Malformed(format!("bad header line {line:?}")));
            };
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
        let mut request = HttpRequest {
            method: method.to_string(),
            target: target.to_string(),
            http10: version == "HTTP/1.0",
            headers,
            body: Vec::new(),
        };
        // curl (not reqwest) waits for this before sending large bodies.
        let expects_continue = request
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
        if expects_continue {
            self.stream
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .await?;
        }
        let chunked = request
            .header("transfer-encoding")
            .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
        request.body = if chunked {
            self.read_chunked_body().await?
        } else {
            let length = match request.header("content-length") {
                None => 0,
                Some(v) => v
                    .parse::<usize>()
                    .map_err(|_| ReadError::Malformed(format!("bad content-length {v:?}")))?,
            };
            self.read_exact_body(length).await?
        };
        Ok(Some(request))
    }

    async fn read_exact_body(&mut self, length: usize) -> Result<Vec<u8>, ReadError> {
        if length > MAX_BODY {
            return Err(ReadError::Malformed("request body too large".into()));
        }
        while self.buf.len() < length {
            if self.fill().await? == 0 {
                return Err(ReadError::Truncated);
            }
        }
        Ok(self.buf.drain(..length).collect())
    }

    async fn read_line(&mut self) -> Result<String, ReadError> {
        loop {
            if let Some(at) = find(&self.buf, b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[..at]).into_owned();
                self.buf.drain(..at + 2);
                return Ok(line);
            }
            if self.buf.len() > MAX_HEAD {
                return Err(ReadError::Malformed("chunk line too long".into()));
            }
            if self.fill().await? == 0 {
                return Err(ReadError::Truncated);
            }
        }
    }

    async fn read_chunked_body(&mut self) -> Result<Vec<u8>, ReadError> {
        let mut body = Vec::new();
        loop {
            let line = self.read_line().await?;
            let size_text = line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| ReadError::Malformed(format!("bad chunk size {line:?}")))?;
            if size == 0 {
                // Trailers, up to the empty line.
                while !self.read_line().await?.is_empty() {}
                return Ok(body);
            }
            if body.len() + size > MAX_BODY {
                return Err(ReadError::Malformed("request body too large".into()));
            }
            let data = self.read_exact_body(size).await?;
            body.extend_from_slice(&data);
            if !self.read_line().await?.is_empty() {
                return Err(ReadError::Malformed("chunk not followed by CRLF".into()));
            }
        }
    }

    /// Queues a status line and headers. `body_len: None` selects chunked encoding.
    pub fn queue_head(
        &mut self,
        status: u16,
        headers: &[(String, String)],
        body_len: Option<usize>,
        close: bool,
    ) {
        use std::fmt::Write as _;
        let mut head = format!("HTTP/1.1 {status} {}\r\n", reason_phrase(status));
        for (name, value) in headers {
            let _ = write!(head, "{name}: {value}\r\n");
        }
        match body_len {
            Some(len) => {
                let _ = write!(head, "content-length: {len}\r\n");
            }
            None => head.push_str("transfer-encoding: chunked\r\n"),
        }
        head.push_str(if close {
            "connection: close\r\n"
        } else {
            "connection: keep-alive\r\n"
        });
        head.push_str("\r\n");
        self.out.extend_from_slice(head.as_bytes());
    }

    /// Queues raw bytes (a `Content-Length` body or part of one).
    pub fn queue(&mut self, data: &[u8]) {
        self.out.extend_from_slice(data);
    }

    /// Queues one HTTP chunk holding `parts` back to back.
    pub fn queue_chunk(&mut self, parts: &[&[u8]]) {
        let len: usize = parts.iter().map(|part| part.len()).sum();
        self.out
            .extend_from_slice(format!("{len:x}\r\n").as_bytes());
        for part in parts {
            self.out.extend_from_slice(part);
        }
        self.out.extend_from_slice(b"\r\n");
    }

    /// Queues the end of a chunked body.
    pub fn queue_last_chunk(&mut self) {
        self.out.extend_from_slice(b"0\r\n\r\n");
    }

    /// Writes everything queued to the socket.
    ///
    /// Queued pieces go out together, as a server with a write buffer sends what it has
    /// ready; a plan that wants them apart in time (a sleep, a stall, a reset, an endless
    /// body) sends what is queued before it waits or closes, so timing-dependent faults land
    /// exactly where the script puts them.
    pub async fn send(&mut self) -> std::io::Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        let result = self.stream.write_all(&self.out).await;
        self.out.clear();
        result
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The standard reason phrase, or a neutral one for unusual statuses.
pub(crate) fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}
