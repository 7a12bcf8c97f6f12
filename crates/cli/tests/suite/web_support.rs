//! `dsh web` under test: the real binary on a free port, and a raw HTTP/1.1 client (so a
//! test controls every header, Host and Origin included) with a server-sent event reader.

use super::run_support::Sandbox;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A running `dsh web --port 0 --no-open`.
pub struct Web {
    pub child: Child,
    pub port: u16,
    pub token: String,
}

impl Web {
    /// Starts the server with `args` after `web` and reads the URL line.
    pub fn start(sandbox: &Sandbox, args: &[&str]) -> Self {
        let mut all = vec!["web", "--port", "0", "--no-open"];
        all.extend_from_slice(args);
        let mut child = sandbox
            .command(&all)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("dsh web: http://127.0.0.1:")
            .unwrap_or_else(|| panic!("no URL line: {line:?}"));
        let (port, token) = url.split_once("/?token=").unwrap();
        Self {
            child,
            port: port.parse().unwrap(),
            token: token.to_owned(),
        }
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A request with the right Host and the bearer token, plus `extra` headers.
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Reply {
        let body = body.map(|b| b.to_string());
        let mut headers = vec![
            ("Host".to_owned(), self.host()),
            ("Authorization".to_owned(), format!("Bearer {}", self.token)),
        ];
        if body.is_some() {
            headers.push(("Content-Type".to_owned(), "application/json".to_owned()));
        }
        self.raw(method, path, &headers, body.as_deref().map(str::as_bytes))
            .await
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.call("GET", path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.call("POST", path, Some(body)).await
    }

    /// A request with exactly `headers`.
    pub async fn raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(String, String)],
        body: Option<&[u8]>,
    ) -> Reply {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).await.unwrap();
        let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if let Some(body) = body {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await.unwrap();
        if let Some(body) = body {
            // A server may answer (413) before reading it all.
            let _ = stream.write_all(body).await;
        }
        let mut raw = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut raw)).await;
        Reply::parse(&raw)
    }

    /// A request whose `body` is written as is, without a Content-Length (a chunked body).
    /// The server may answer and close before it has all of it.
    pub async fn raw_unsized(
        &self,
        method: &str,
        path: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Reply {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).await.unwrap();
        let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await.unwrap();
        let (mut read, mut write) = stream.into_split();
        let body = body.to_vec();
        let writer = tokio::spawn(async move {
            let _ = write.write_all(&body).await;
            write
        });
        let mut raw = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match tokio::time::timeout(Duration::from_secs(60), read.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
                Ok(Ok(n)) => raw.extend_from_slice(&buf[..n]),
            }
            if raw.windows(4).any(|w| w == b"\r\n\r\n") && Reply::complete(&raw) {
                break;
            }
        }
        writer.abort();
        Reply::parse(&raw)
    }

    /// Opens a session's event stream (`query` such as `?after=5`).
    pub async fn events(&self, id: &str, query: &str) -> Events {
        self.stream(&format!("/api/sessions/{id}/events{query}"), &[])
            .await
    }

    /// Opens the event stream at `path` with the right Host and the bearer token, plus
    /// `extra` headers.
    pub async fn stream(&self, path: &str, extra: &[(&str, &str)]) -> Events {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).await.unwrap();
        let mut head = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nAccept: text/event-stream\r\n",
            self.host(),
            self.token
        );
        for (name, value) in extra {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut events = Events {
            stream,
            raw: Vec::new(),
            decoded: Vec::new(),
            status: 0,
            seen: Vec::new(),
        };
        events.read_head().await;
        events
    }

    /// Kills the server hard (SIGKILL).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, and the exit code.
    pub fn stop(&mut self) -> Option<i32> {
        let pid = self.child.id().to_string();
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        self.child.wait().unwrap().code()
    }
}

impl Drop for Web {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A parsed HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    fn parse(raw: &[u8]) -> Self {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
        let head = String::from_utf8_lossy(&raw[..split]).into_owned();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let rest = &raw[split + 4..];
        let chunked = headers
            .iter()
            .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
        let body = if chunked {
            let mut out = Vec::new();
            let mut input = rest.to_vec();
            dechunk(&mut input, &mut out);
            out
        } else {
            rest.to_vec()
        };
        Self {
            status,
            headers,
            body,
        }
    }

    /// Whether `raw` holds a whole response with a Content-Length body.
    fn complete(raw: &[u8]) -> bool {
        let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
            return false;
        };
        let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok());
        length.is_some_and(|n| raw.len() >= split + 4 + n)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }

    /// The error code of an error body.
    pub fn code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

/// Moves every complete chunk of `input` into `out`, leaving a partial one.
fn dechunk(input: &mut Vec<u8>, out: &mut Vec<u8>) {
    loop {
        let Some(line_end) = input.windows(2).position(|w| w == b"\r\n") else {
            return;
        };
        let size_text = String::from_utf8_lossy(&input[..line_end]).into_owned();
        let Ok(size) = usize::from_str_radix(size_text.trim(), 16) else {
            return;
        };
        if size == 0 {
            input.clear();
            return;
        }
        let start = line_end + 2;
        if input.len() < start + size + 2 {
            return;
        }
        out.extend_from_slice(&input[start..start + size]);
        input.drain(..start + size + 2);
    }
}

/// One server-sent event.
#[derive(Clone, Debug, PartialEq)]
pub struct Sse {
    pub event: String,
    pub id: Option<String>,
    pub data: Value,
}

/// A live event stream.
pub struct Events {
    stream: TcpStream,
    raw: Vec<u8>,
    decoded: Vec<u8>,
    pub status: u16,
    /// Every frame [`Events::next`] returned, in order.
    seen: Vec<Sse>,
}

impl Events {
    async fn fill(&mut self) -> bool {
        let mut buf = [0u8; 8192];
        match self.stream.read(&mut buf).await {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.raw.extend_from_slice(&buf[..n]);
                true
            }
        }
    }

    async fn read_head(&mut self) {
        loop {
            if let Some(split) = self.raw.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.raw[..split]).into_owned();
                self.status = head.split(' ').nth(1).unwrap().parse().unwrap();
                self.raw.drain(..split + 4);
                return;
            }
            assert!(self.fill().await, "the stream closed before its head");
        }
    }

    /// The next frame (keep-alive comments skipped); `None` when the stream ends or no
    /// frame comes for 30 s (keep-alives do not count).
    pub async fn next(&mut self) -> Option<Sse> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            dechunk(&mut self.raw, &mut self.decoded);
            if let Some(end) = self.decoded.windows(2).position(|w| w == b"\n\n") {
                let frame = String::from_utf8_lossy(&self.decoded[..end]).into_owned();
                self.decoded.drain(..end + 2);
                let mut sse = Sse {
                    event: "message".into(),
                    id: None,
                    data: Value::Null,
                };
                let mut data = String::new();
                for line in frame.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        sse.event = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("id:") {
                        sse.id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if data.is_empty() {
                    continue;
                }
                sse.data = serde_json::from_str(&data).unwrap_or(Value::String(data));
                if std::env::var_os("DSH_TEST_SSE_TRACE").is_some() {
                    eprintln!("sse: {sse:?}");
                }
                self.seen.push(sse.clone());
                return Some(sse);
            }
            match tokio::time::timeout_at(deadline, self.fill()).await {
                Ok(true) => {}
                _ => return None,
            }
        }
    }

    /// Every frame returned so far.
    pub fn seen(&self) -> &[Sse] {
        &self.seen
    }

    /// Frames until one satisfies `done` (inclusive).
    pub async fn until(&mut self, done: impl Fn(&Sse) -> bool) -> Vec<Sse> {
        let mut seen = Vec::new();
        loop {
            let frame = self
                .next()
                .await
                .unwrap_or_else(|| panic!("the stream ended; saw {seen:#?}"));
            let stop = done(&frame);
            seen.push(frame);
            if stop {
                return seen;
            }
        }
    }
}

/// A `turn/end` event frame.
pub fn is_turn_end(frame: &Sse) -> bool {
    frame.event == "event" && frame.data["type"] == "turn/end"
}
