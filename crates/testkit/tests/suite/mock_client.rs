//! A minimal raw HTTP/1.1 client over tokio, so the mock server's bytes are observed
//! exactly (no HTTP library smoothing over resets or framing).

use std::net::SocketAddr;
use std::time::Duration;

use dsh_testkit::mock_llm::CREATED;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How a response body ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEnd {
    /// Framing completed (Content-Length reached or the last chunk seen).
    Complete,
    /// The connection was reset.
    Reset,
    /// The peer closed the connection before the framing completed.
    Eof,
    /// No bytes arrived within the idle limit while the connection stayed open.
    Stalled,
}

#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    /// Lower-cased names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub end: BodyEnd,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// The `data:` payloads: JSON ones parsed, anything else (`[DONE]`, malformed lines)
    /// as a JSON string.
    pub fn events(&self) -> Vec<Value> {
        let text = String::from_utf8(self.body.clone()).unwrap();
        text.split("\n\n")
            .filter(|event| !event.is_empty())
            .map(|event| {
                let data = event.strip_prefix("data: ").unwrap_or_else(|| {
                    panic!("event without data prefix: {event:?}");
                });
                serde_json::from_str(data).unwrap_or_else(|_| Value::from(data))
            })
            .collect()
    }
}

/// Where a partial read of a streamed body stops.
#[derive(Clone, Copy)]
enum StopAt {
    Events(usize),
    Bytes(usize),
}

/// How a read attempt ended.
enum Read {
    Bytes,
    Eof,
    Reset,
    Idle,
}

pub struct RawClient {
    stream: TcpStream,
    buf: Vec<u8>,
    /// How long silence counts as a stall (long by default; stall tests shorten it).
    pub idle_limit: Duration,
}

impl RawClient {
    pub async fn connect(addr: SocketAddr) -> RawClient {
        RawClient {
            stream: TcpStream::connect(addr).await.unwrap(),
            buf: Vec::new(),
            idle_limit: Duration::from_secs(10),
        }
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    /// Sends a request with optional JSON body and extra headers.
    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        extra: &[(&str, &str)],
    ) {
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut head = format!("{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n");
        for (name, value) in extra {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            head.push_str("content-type: application/json\r\n");
            head.push_str(&format!("content-length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        head.push_str(&body);
        self.send_raw(head.as_bytes()).await;
    }

    /// `send` then `read_response`.
    pub async fn request(&mut self, method: &str, path: &str, body: Option<&Value>) -> RawResponse {
        self.send(method, path, body, &[]).await;
        self.read_response().await.expect("a response head")
    }

    async fn fill(&mut self) -> Read {
        let mut chunk = [0u8; 8192];
        match tokio::time::timeout(self.idle_limit, self.stream.read(&mut chunk)).await {
            Err(_) => Read::Idle,
            Ok(Ok(0)) => Read::Eof,
            Ok(Ok(n)) => {
                self.buf.extend_from_slice(&chunk[..n]);
                Read::Bytes
            }
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => Read::Reset,
            Ok(Err(e)) => panic!("read failed: {e}"),
        }
    }

    /// Bytes received but not yet consumed by a response read.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Waits for the connection to end; returns how it ended (never `Bytes`).
    pub async fn wait_end(&mut self) -> BodyEnd {
        loop {
            match self.fill().await {
                Read::Bytes => continue,
                Read::Eof => return BodyEnd::Eof,
                Read::Reset => return BodyEnd::Reset,
                Read::Idle => return BodyEnd::Stalled,
            }
        }
    }

    /// Reads one response; `Err(end)` when no complete head arrived.
    pub async fn read_response(&mut self) -> Result<RawResponse, BodyEnd> {
        self.read_response_until(None).await
    }

    /// Reads a streamed response's head and its first `events` SSE events, then stops
    /// (the body is left open; `end` says `Stalled`).
    pub async fn read_events(&mut self, events: usize) -> RawResponse {
        self.read_response_until(Some(StopAt::Events(events)))
            .await
            .expect("a response head")
    }

    /// Reads a streamed response's head and at least `bytes` body bytes, then stops (the
    /// body is left open; `end` says `Stalled`).
    pub async fn read_bytes(&mut self, bytes: usize) -> RawResponse {
        self.read_response_until(Some(StopAt::Bytes(bytes)))
            .await
            .expect("a response head")
    }

    async fn read_response_until(
        &mut self,
        stop_after: Option<StopAt>,
    ) -> Result<RawResponse, BodyEnd> {
        let head_end = loop {
            if let Some(at) = find(&self.buf, b"\r\n\r\n") {
                break at;
            }
            match self.fill().await {
                Read::Bytes => {}
                Read::Eof => return Err(BodyEnd::Eof),
                Read::Reset => return Err(BodyEnd::Reset),
                Read::Idle => return Err(BodyEnd::Stalled),
            }
        };
        let head = String::from_utf8(self.buf[..head_end].to_vec()).unwrap();
        self.buf.drain(..head_end + 4);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .map(|line| {
                let (k, v) = line.split_once(':').unwrap();
                (k.trim().to_ascii_lowercase(), v.trim().to_string())
            })
            .collect();
        let mut response = RawResponse {
            status,
            headers,
            body: Vec::new(),
            end: BodyEnd::Complete,
        };
        if (100..200).contains(&status) {
            // Interim response: no body.
        } else if response.header("transfer-encoding") == Some("chunked") {
            self.read_chunked(&mut response, stop_after).await;
        } else {
            let length: usize = response
                .header("content-length")
                .expect("content-length or chunked")
                .parse()
                .unwrap();
            while self.buf.len() < length {
                match self.fill().await {
                    Read::Bytes => {}
                    Read::Eof => {
                        response.end = BodyEnd::Eof;
                        break;
                    }
                    Read::Reset => {
                        response.end = BodyEnd::Reset;
                        break;
                    }
                    Read::Idle => {
                        response.end = BodyEnd::Stalled;
                        break;
                    }
                }
            }
            let take = length.min(self.buf.len());
            response.body = self.buf.drain(..take).collect();
        }
        Ok(response)
    }

    async fn read_chunked(&mut self, response: &mut RawResponse, stop_after: Option<StopAt>) {
        loop {
            // Parse as many complete chunks as are buffered.
            while let Some(line_end) = find(&self.buf, b"\r\n") {
                let size_line = String::from_utf8(self.buf[..line_end].to_vec()).unwrap();
                let size = usize::from_str_radix(size_line.trim(), 16).unwrap();
                if size == 0 {
                    if self.buf.len() < line_end + 4 {
                        break;
                    }
                    assert_eq!(&self.buf[line_end + 2..line_end + 4], b"\r\n");
                    self.buf.drain(..line_end + 4);
                    return;
                }
                let need = line_end + 2 + size + 2;
                if self.buf.len() < need {
                    break;
                }
                response
                    .body
                    .extend_from_slice(&self.buf[line_end + 2..line_end + 2 + size]);
                assert_eq!(&self.buf[need - 2..need], b"\r\n");
                self.buf.drain(..need);
            }
            let done = match stop_after {
                None => false,
                Some(StopAt::Bytes(n)) => response.body.len() >= n,
                Some(StopAt::Events(n)) => {
                    response.body.windows(2).filter(|w| w == b"\n\n").count() >= n
                }
            };
            if done {
                response.end = BodyEnd::Stalled;
                return;
            }
            match self.fill().await {
                Read::Bytes => {}
                Read::Eof => {
                    response.end = BodyEnd::Eof;
                    return;
                }
                Read::Reset => {
                    response.end = BodyEnd::Reset;
                    return;
                }
                Read::Idle => {
                    response.end = BodyEnd::Stalled;
                    return;
                }
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

pub const MODEL: &str = "deepseek-v4-flash";

/// A streaming chat request body like the real adapter's (with one tool).
pub fn chat_body(stream: bool) -> Value {
    json!({
        "model": MODEL,
        "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}],
        "stream": stream,
        "stream_options": {"include_usage": true},
        "tools": [{"type": "function", "function": {"name": "bash", "description": "run", "parameters": {"type": "object"}}}],
        "max_tokens": 256000
    })
}

/// Expected chunk with a delta, for request `n`.
pub fn delta(n: u64, delta: Value) -> Value {
    json!({"id": format!("chatcmpl-mock-{n}"), "object": "chat.completion.chunk", "created": CREATED,
           "model": MODEL, "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
}

/// Expected finish chunk for request `n`.
pub fn finish(n: u64, reason: &str) -> Value {
    json!({"id": format!("chatcmpl-mock-{n}"), "object": "chat.completion.chunk", "created": CREATED,
           "model": MODEL, "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

/// Expected usage chunk for request `n`.
pub fn usage(n: u64, usage: Value) -> Value {
    json!({"id": format!("chatcmpl-mock-{n}"), "object": "chat.completion.chunk", "created": CREATED,
           "model": MODEL, "choices": [], "usage": usage})
}

/// The estimated prompt tokens of [`chat_body`] (characters of messages and tools / 4).
pub fn chat_body_prompt_tokens() -> u64 {
    let body = chat_body(true);
    let chars =
        body["messages"].to_string().chars().count() + body["tools"].to_string().chars().count();
    (chars / 4) as u64
}

/// The usage object the server reports by default.
pub fn default_usage(completion: u64, reasoning: u64) -> Value {
    let prompt = chat_body_prompt_tokens();
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
           "prompt_tokens_details": {"cached_tokens": 0},
           "prompt_cache_hit_tokens": 0, "prompt_cache_miss_tokens": prompt,
           "completion_tokens_details": {"reasoning_tokens": reasoning}})
}
