//! `web`: what `dsh web` costs its clients, measured on the real binary over loopback HTTP
//! against the mock model server on 127.0.0.1.
//!
//! - first byte of `GET /` over a fresh connection (budget ≤ 30 ms);
//! - `history` of a 10,000-event session: the tail page the page loads (limit 200) and
//!   the whole log in pages of 2,000, on a held session and on a stored one (a fresh
//!   server that reads it from disk). Budget: tail page ≤ 30 ms;
//! - 20 clients streaming one session while a 2,000-chunk answer streams: each event's lag
//!   (received − the event's `time`), first tenth against last tenth (no growth wanted);
//! - server RSS with 50 idle sessions held (each ran one short turn), against the RSS
//!   of the freshly started server.
//!
//! The binary is `dsh` beside this program (`cargo build --release -p dsh-cli -p
//! dsh-bench`), or `$DSH_BIN`.

use crate::stats::{report, summarize};
use dsh_testkit::mock_llm::{MockServer, Reply, RuleMatch, Script};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const BENCH: &str = "web";
const HISTORY_CHUNKS: usize = 10_000;
const STREAM_CHUNKS: usize = 2_000;
const CLIENTS: usize = 20;
const IDLE_SESSIONS: usize = 50;

fn binary() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("DSH_BIN") {
        return Ok(std::path::absolute(PathBuf::from(path))?);
    }
    let dsh = std::env::current_exe()?.with_file_name("dsh");
    anyhow::ensure!(
        dsh.exists(),
        "{} not found: build it with `cargo build --release -p dsh-cli` (or set DSH_BIN)",
        dsh.display()
    );
    Ok(dsh)
}

fn script() -> Script {
    Script::new()
        .rule(
            RuleMatch::any().last_message_contains("HISTORY"),
            Reply::text("w ".repeat(HISTORY_CHUNKS)).chunks(HISTORY_CHUNKS),
        )
        .rule(
            RuleMatch::any().last_message_contains("STREAM"),
            Reply::text("w ".repeat(STREAM_CHUNKS)).chunks(STREAM_CHUNKS),
        )
        .respond(Reply::text("ok"))
}

/// One `dsh web` process.
struct Web {
    child: Child,
    port: u16,
    token: String,
}

impl Web {
    fn start(
        dsh: &PathBuf,
        base_url: &str,
        home: &std::path::Path,
        workspace: &std::path::Path,
    ) -> anyhow::Result<Self> {
        let mut child = Command::new(dsh)
            .args(["web", "--port", "0", "--no-open", "--approval", "never"])
            .current_dir(workspace)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("DSH_HOME", home)
            .env("DEEPSEEK_API_KEY", "sk-bench")
            .env("DEEPSEEK_BASE_URL", base_url)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let url = line
            .trim()
            .strip_prefix("dsh web: http://127.0.0.1:")
            .ok_or_else(|| anyhow::anyhow!("no URL line: {line:?}"))?;
        let (port, token) = url
            .split_once("/?token=")
            .ok_or_else(|| anyhow::anyhow!("no token in {url:?}"))?;
        Ok(Self {
            child,
            port: port.parse()?,
            token: token.to_owned(),
        })
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<(u16, Vec<u8>)> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        let body = body.map(Value::to_string).unwrap_or_default();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.port,
            self.token,
            body.len()
        )?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw)?;
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(|| anyhow::anyhow!("no response head"))?;
        let head = String::from_utf8_lossy(&raw[..split]).into_owned();
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("bad status line"))?;
        Ok((status, raw[split + 4..].to_vec()))
    }

    fn json(&self, method: &str, path: &str, body: Option<&Value>) -> anyhow::Result<Value> {
        let (status, body) = self.request(method, path, body)?;
        anyhow::ensure!(
            status < 300,
            "{method} {path}: {status} {}",
            String::from_utf8_lossy(&body)
        );
        Ok(serde_json::from_slice(&body)?)
    }

    fn create(&self) -> anyhow::Result<String> {
        let created = self.json("POST", "/api/sessions", Some(&json!({})))?;
        created["session"]["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| anyhow::anyhow!("no session id"))
    }

    /// Prompts and waits until the session is idle again (polling its status).
    fn turn(&self, id: &str, text: &str) -> anyhow::Result<()> {
        self.json(
            "POST",
            &format!("/api/sessions/{id}/prompt"),
            Some(&json!({"text": text})),
        )?;
        let started = Instant::now();
        loop {
            let detail = self.json("GET", &format!("/api/sessions/{id}"), None)?;
            let queued = detail["queue"]["followUps"].as_array().map_or(0, Vec::len);
            if detail["session"]["status"] == "idle"
                && queued == 0
                && detail["lastSeq"].as_u64().unwrap_or(0) > 3
            {
                return Ok(());
            }
            anyhow::ensure!(
                started.elapsed() < Duration::from_secs(120),
                "the turn did not end"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn rss_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
            })
            .unwrap_or(0)
    }
}

impl Drop for Web {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn time<T>(work: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<Duration> {
    let started = Instant::now();
    work()?;
    Ok(started.elapsed())
}

/// Reads one client's stream until `turn/end`; each event's lag in ms, in order.
fn watch(
    port: u16,
    token: String,
    id: String,
    from_seq: u64,
    ready: std::sync::mpsc::Sender<()>,
) -> anyhow::Result<Vec<u64>> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    write!(
        stream,
        "GET /api/sessions/{id}/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\r\n"
    )?;
    let mut reader = BufReader::new(stream);
    let mut lags = Vec::new();
    let mut line = String::new();
    let mut announced = false;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            anyhow::bail!("the stream ended");
        }
        if !announced && line.starts_with("event: status") {
            announced = true;
            let _ = ready.send(());
        }
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let Ok(event) = serde_json::from_str::<Value>(data.trim()) else {
            continue;
        };
        let Some(time) = event["time"].as_u64() else {
            continue;
        };
        if event["seq"].as_u64().is_none_or(|seq| seq < from_seq) {
            continue;
        }
        lags.push(now_ms().saturating_sub(time));
        if event["type"] == "turn/end" {
            return Ok(lags);
        }
    }
}

fn mean(values: &[u64]) -> f64 {
    values.iter().sum::<u64>() as f64 / values.len().max(1) as f64
}

pub fn run() -> anyhow::Result<()> {
    let dsh = binary()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let server = runtime.block_on(MockServer::start(script()))?;
    let base_url = server.base_url();
    let home = tempfile::tempdir()?;
    let workspace = tempfile::tempdir()?;
    let web = Web::start(&dsh, &base_url, home.path(), workspace.path())?;
    let fresh_rss = web.rss_kib();

    // First byte of the page.
    let mut first_byte = Vec::new();
    for _ in 0..50 {
        let started = Instant::now();
        let mut stream = TcpStream::connect(("127.0.0.1", web.port))?;
        write!(
            stream,
            "GET / HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            web.port
        )?;
        let mut byte = [0u8; 1];
        stream.read_exact(&mut byte)?;
        first_byte.push(started.elapsed());
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest)?;
    }
    report(
        BENCH,
        "first byte of GET / (budget <= 30 ms)",
        &summarize(first_byte),
    );

    // History of a 10k-event session.
    let id = web.create()?;
    web.turn(&id, "HISTORY")?;
    let last = web.json("GET", &format!("/api/sessions/{id}"), None)?["lastSeq"]
        .as_u64()
        .unwrap_or(0);
    println!("history session: {} events", last + 1);
    let tail = format!("/api/sessions/{id}/history?limit=200");
    let mut held_tail = Vec::new();
    let mut held_all = Vec::new();
    for _ in 0..30 {
        held_tail.push(time(|| web.request("GET", &tail, None))?);
        held_all.push(time(|| {
            let mut after: i64 = -1;
            loop {
                let page = web.json(
                    "GET",
                    &format!("/api/sessions/{id}/history?after={after}&limit=2000"),
                    None,
                )?;
                let events = page["events"].as_array().map_or(0, Vec::len);
                after += events as i64;
                if page["hasMore"] != true {
                    return Ok(());
                }
            }
        })?);
    }
    report(
        BENCH,
        "history tail page (200) of 10k, held (budget <= 30 ms)",
        &summarize(held_tail),
    );
    report(
        BENCH,
        "whole 10k history in 2,000-event pages, held",
        &summarize(held_all),
    );

    // 20 clients on one session while 2,000 chunks stream.
    let (ready_tx, ready) = std::sync::mpsc::channel();
    let watchers: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (port, token, id, ready) =
                (web.port, web.token.clone(), id.clone(), ready_tx.clone());
            std::thread::spawn(move || watch(port, token, id, last + 1, ready))
        })
        .collect();
    for _ in 0..CLIENTS {
        ready.recv_timeout(Duration::from_secs(30))?;
    }
    // Each client first replays the 10k-event history; the live part is what is measured.
    std::thread::sleep(Duration::from_secs(2));
    web.json(
        "POST",
        &format!("/api/sessions/{id}/prompt"),
        Some(&json!({"text": "STREAM"})),
    )?;
    let mut early = Vec::new();
    let mut late = Vec::new();
    let mut worst = 0;
    for watcher in watchers {
        let lags = watcher
            .join()
            .map_err(|_| anyhow::anyhow!("a client panicked"))??;
        // Only the events of the new turn (the replayed history's lag is its age).
        let live = lags;
        anyhow::ensure!(!live.is_empty(), "a client saw no live event");
        let tenth = (live.len() / 10).max(1);
        early.push(mean(&live[..tenth]));
        late.push(mean(&live[live.len().saturating_sub(tenth)..]));
        worst = worst.max(live.iter().copied().max().unwrap_or(0));
    }
    println!(
        "{CLIENTS} clients x {STREAM_CHUNKS} chunks: mean lag first tenth {:.1} ms, last tenth {:.1} ms, worst {worst} ms",
        early.iter().sum::<f64>() / early.len() as f64,
        late.iter().sum::<f64>() / late.len() as f64,
    );
    println!("    command: cargo run --release -p dsh-bench -- {BENCH}");

    // 50 idle sessions.
    let before = web.rss_kib();
    for _ in 0..IDLE_SESSIONS {
        let id = web.create()?;
        web.turn(&id, "hello")?;
    }
    let after = web.rss_kib();
    println!(
        "RSS: fresh server {fresh_rss} KiB; before the idle sessions {before} KiB; with {IDLE_SESSIONS} more idle sessions {after} KiB ({:.0} KiB each)",
        (after.saturating_sub(before)) as f64 / IDLE_SESSIONS as f64
    );
    println!("    command: cargo run --release -p dsh-bench -- {BENCH}");
    drop(web);

    // The same history from disk: a fresh server that does not hold the session.
    let web = Web::start(&dsh, &base_url, home.path(), workspace.path())?;
    let mut stored_tail = Vec::new();
    for _ in 0..15 {
        stored_tail.push(time(|| web.request("GET", &tail, None))?);
    }
    report(
        BENCH,
        "history tail page (200) of 10k, stored",
        &summarize(stored_tail),
    );
    drop(web);
    runtime.block_on(server.shutdown());
    Ok(())
}
