//! A tiny canned HTTP/1.1 server on 127.0.0.1 for adapter tests.

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// How the server answers one connection.
pub enum Reply {
    /// Write these byte pieces (pausing briefly between them) and close.
    Pieces(Vec<Vec<u8>>),
    /// Write these pieces, then keep the connection open until the client closes it.
    Stall(Vec<Vec<u8>>),
    /// Write `head`, then `piece` again and again, pausing `pause` between, until the client
    /// goes away.
    Forever {
        head: Vec<u8>,
        piece: Vec<u8>,
        pause: std::time::Duration,
    },
}

/// One request as the server saw it.
#[derive(Debug)]
pub struct Captured {
    pub head: String,
    pub body: Vec<u8>,
}

impl Captured {
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_string())
        })
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// What the server reports.
#[derive(Debug)]
pub enum Seen {
    Request(Captured),
    /// The client closed a stalled connection.
    ClientClosed,
}

pub struct Server {
    pub base_url: String,
    pub seen: mpsc::UnboundedReceiver<Seen>,
}

impl Server {
    /// Serves `replies`, one per connection, in order.
    pub async fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, seen) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            for reply in replies {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let tx = tx.clone();
                tokio::spawn(handle(socket, reply, tx));
            }
        });
        Server { base_url, seen }
    }

    pub async fn next(&mut self) -> Seen {
        tokio::time::timeout(Duration::from_secs(10), self.seen.recv())
            .await
            .expect("server event within 10 s")
            .expect("server alive")
    }

    pub async fn request(&mut self) -> Captured {
        match self.next().await {
            Seen::Request(captured) => captured,
            other => panic!("expected a request, got {other:?}"),
        }
    }
}

async fn handle(mut socket: TcpStream, reply: Reply, tx: mpsc::UnboundedSender<Seen>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let body = buf[head_end..head_end + length].to_vec();
    let _ = tx.send(Seen::Request(Captured { head, body }));
    let (pieces, stall) = match reply {
        Reply::Pieces(pieces) => (pieces, false),
        Reply::Stall(pieces) => (pieces, true),
        Reply::Forever { head, piece, pause } => {
            if socket.write_all(&head).await.is_err() {
                return;
            }
            while socket.write_all(&piece).await.is_ok() {
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
            }
            return;
        }
    };
    for piece in pieces {
        if socket.write_all(&piece).await.is_err() {
            return;
        }
        let _ = socket.flush().await;
        // Let the client see the pieces as separate reads.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    if stall {
        // Wait (bounded) for the client to hang up.
        let closed = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match socket.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await;
        if closed.is_ok() {
            let _ = tx.send(Seen::ClientClosed);
        }
    } else {
        let _ = socket.shutdown().await;
    }
}

/// A streaming 200 response head (chunked transfer encoding).
pub fn sse_head() -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
        .to_vec()
}

/// `data` as one HTTP chunk.
pub fn http_chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// The terminating zero-length chunk.
pub fn last_chunk() -> Vec<u8> {
    b"0\r\n\r\n".to_vec()
}

/// A complete streaming reply with `body` cut into HTTP chunks of `piece` bytes.
pub fn sse_reply(body: &[u8], piece: usize) -> Reply {
    let mut pieces = vec![sse_head()];
    pieces.extend(body.chunks(piece.max(1)).map(http_chunk));
    pieces.push(last_chunk());
    Reply::Pieces(pieces)
}

/// A complete non-streaming reply.
pub fn plain_reply(status: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head.push_str(body);
    Reply::Pieces(vec![head.into_bytes()])
}
