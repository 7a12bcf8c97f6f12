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

use crate::stats::summarize;
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
        // Every other request (the idle sessions' one-line turns, their titles) gets a
        // short answer; a one-shot `respond` would leave the second request unanswered
        // and the agent retrying with backoff.
        .rule(RuleMatch::any(), Reply::text("ok"))
}

/// KiB, from `/proc/PID/status`.
#[derive(Clone, Copy)]
struct Memory {
    rss: u64,
    hwm: u64,
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

    /// The server's resident set and its high-water mark (`/proc/PID/status`).
    fn memory(&self) -> Memory {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
                .unwrap_or(0)
        };
        Memory {
            rss: field("VmRSS:"),
            hwm: field("VmHWM:"),
        }
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

/// Reads one client's stream: the replayed history up to seq `last` (then it signals
/// `caught_up`), then the live events until `turn/end`; each live event's lag in ms, in order.
fn watch(
    port: u16,
    token: String,
    id: String,
    last: u64,
    caught_up: std::sync::mpsc::Sender<()>,
) -> anyhow::Result<Vec<(String, u64)>> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    write!(
        stream,
        "GET /api/sessions/{id}/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\r\n"
    )?;
    let mut reader = BufReader::new(stream);
    let mut lags = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            anyhow::bail!("the stream ended");
        }
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let Ok(event) = serde_json::from_str::<Value>(data.trim()) else {
            continue;
        };
        let (Some(seq), Some(time)) = (event["seq"].as_u64(), event["time"].as_u64()) else {
            continue;
        };
        if seq <= last {
            // The replayed history: its lag is its age. Its last event is the marker.
            if seq == last {
                let _ = caught_up.send(());
            }
            continue;
        }
        let kind = event["type"].as_str().unwrap_or_default().to_owned();
        lags.push((kind, now_ms().saturating_sub(time)));
        if event["type"] == "turn/end" {
            return Ok(lags);
        }
    }
}

/// Median, p90 and max of `samples`, on one line.
fn report_with_max(case: &str, samples: Vec<Duration>) {
    let max = samples.iter().copied().max().unwrap_or_default();
    let summary = summarize(samples);
    println!(
        "{case:<44} median {:>10.3?}  p90 {:>10.3?}  max {:>10.3?}  ({} samples)",
        summary.median, summary.p90, max, summary.samples
    );
    println!("    command: cargo run --release -p dsh-bench -- {BENCH}");
}

fn mean(values: &[u64]) -> f64 {
    values.iter().sum::<u64>() as f64 / values.len().max(1) as f64
}

/// The 20-client stream: every client replays the history first (the live turn starts
/// only once each has seen the history's last event), then the live events' lags.
fn stream_to_clients(web: &Web, id: &str, last: u64) -> anyhow::Result<()> {
    let (caught_up_tx, caught_up) = std::sync::mpsc::channel();
    let started = Instant::now();
    let watchers: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (port, token, id, caught_up) = (
                web.port,
                web.token.clone(),
                id.to_owned(),
                caught_up_tx.clone(),
            );
            std::thread::spawn(move || watch(port, token, id, last, caught_up))
        })
        .collect();
    for _ in 0..CLIENTS {
        caught_up.recv_timeout(Duration::from_secs(120))?;
    }
    println!(
        "{CLIENTS} clients replayed the {}-event history in {:.0?} (all caught up before the live turn)",
        last + 1,
        started.elapsed()
    );
    let live_started = Instant::now();
    web.json(
        "POST",
        &format!("/api/sessions/{id}/prompt"),
        Some(&json!({"text": "STREAM"})),
    )?;
    let mut live_events = 0;
    let mut all = Vec::new();
    let mut chunks = Vec::new();
    let mut closing: Vec<(String, u64)> = Vec::new();
    // The closing events' kinds as one client saw them (every client sees the same ones).
    let mut closing_kinds: Vec<String> = Vec::new();
    for watcher in watchers {
        let live = watcher
            .join()
            .map_err(|_| anyhow::anyhow!("a client panicked"))??;
        anyhow::ensure!(live.len() >= 10, "a client saw {} live events", live.len());
        live_events = live.len();
        all.push(live.iter().map(|(_, lag)| *lag).collect::<Vec<_>>());
        // What follows the last chunk closes the message and the turn.
        let last_chunk = live
            .iter()
            .rposition(|(kind, _)| kind == "assistant/chunk")
            .unwrap_or(live.len() - 1);
        chunks.push(
            live[..=last_chunk]
                .iter()
                .filter(|(kind, _)| kind == "assistant/chunk")
                .map(|(_, lag)| *lag)
                .collect::<Vec<_>>(),
        );
        if closing_kinds.is_empty() {
            closing_kinds = live[last_chunk + 1..]
                .iter()
                .map(|(kind, _)| kind.clone())
                .collect();
        }
        closing.extend(live[last_chunk + 1..].iter().cloned());
    }
    let elapsed = live_started.elapsed();
    println!(
        "{CLIENTS} clients x {live_events} live events ({STREAM_CHUNKS} chunks) in {elapsed:.0?}"
    );
    growth("every live event", &all);
    growth("the streamed chunks (assistant/chunk)", &chunks);
    println!(
        "    after the last chunk: {} (mean lag {:.1} ms, max {} ms)",
        closing_kinds.join(", "),
        mean(&closing.iter().map(|(_, lag)| *lag).collect::<Vec<_>>()),
        closing.iter().map(|(_, lag)| *lag).max().unwrap_or(0)
    );
    println!("    command: cargo run --release -p dsh-bench -- {BENCH}");
    Ok(())
}

/// Lag across the clients: percentiles, the first tenth against the last (each client's,
/// averaged), and the mean by tenth.
fn growth(what: &str, clients: &[Vec<u64>]) {
    let mut every: Vec<u64> = clients.iter().flatten().copied().collect();
    every.sort_unstable();
    let at = |q: f64| every[((every.len() - 1) as f64 * q).round() as usize];
    let mut deciles = [0f64; 10];
    let (mut early, mut late) = (0f64, 0f64);
    for lags in clients {
        let tenth = (lags.len() / 10).max(1);
        early += mean(&lags[..tenth]) / clients.len() as f64;
        late += mean(&lags[lags.len() - tenth..]) / clients.len() as f64;
        for (d, slot) in deciles.iter_mut().enumerate() {
            let slice = &lags[(d * tenth).min(lags.len())..((d + 1) * tenth).min(lags.len())];
            *slot += mean(slice) / clients.len() as f64;
        }
    }
    println!(
        "  {what}: lag median {} ms, p90 {} ms, max {} ms; mean first tenth {early:.1} ms, last tenth {late:.1} ms ({})",
        at(0.5),
        at(0.9),
        at(1.0),
        if late > early * 1.5 + 1.0 { "grows" } else { "no growth" },
    );
    println!(
        "    by tenth: {}",
        deciles
            .iter()
            .map(|d| format!("{d:.1}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
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
    let fresh = web.memory();

    // First byte of the page (the real one: HTML, script and style are compiled in).
    let (status, page) = web.request("GET", "/", None)?;
    anyhow::ensure!(status == 200, "GET /: {status}");
    let mut first_byte = Vec::new();
    for _ in 0..200 {
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
    report_with_max(
        &format!(
            "first byte of GET / ({} B page) (budget <= 30 ms)",
            page.len()
        ),
        first_byte,
    );

    // History of a 10k-event session.
    let id = web.create()?;
    web.turn(&id, "HISTORY")?;
    let last = web.json("GET", &format!("/api/sessions/{id}"), None)?["lastSeq"]
        .as_u64()
        .unwrap_or(0);
    println!("history session: {} events", last + 1);
    let tail = format!("/api/sessions/{id}/history?limit=200");
    let tail_html = format!("/api/sessions/{id}/history?limit=300&render=html");
    let mut held_tail = Vec::new();
    let mut held_tail_html = Vec::new();
    let mut held_all = Vec::new();
    for _ in 0..30 {
        held_tail.push(time(|| web.request("GET", &tail, None))?);
        held_tail_html.push(time(|| web.request("GET", &tail_html, None))?);
        held_all.push(time(|| whole_history(&web, &id))?);
    }
    report_with_max(
        "history tail page (200) of 10k, held (budget <= 30 ms)",
        held_tail,
    );
    report_with_max(
        "tail page (300, render=html) as the page asks",
        held_tail_html,
    );
    report_with_max("whole 10k history in 2,000-event pages, held", held_all);

    // 20 clients on one session while 2,000 chunks stream.
    stream_to_clients(&web, &id, last)?;

    // 50 idle sessions, created here (each ran one short turn).
    let before = web.memory();
    let mut idle = Vec::new();
    for _ in 0..IDLE_SESSIONS {
        let id = web.create()?;
        web.turn(&id, "hello")?;
        idle.push(id);
    }
    let after = web.memory();
    println!(
        "RSS, created: fresh server {} KiB; after the streams {} KiB (HWM {}); with {IDLE_SESSIONS} more idle sessions {} KiB (HWM {}), {:.0} KiB each",
        fresh.rss,
        before.rss,
        before.hwm,
        after.rss,
        after.hwm,
        after.rss.saturating_sub(before.rss) as f64 / IDLE_SESSIONS as f64
    );
    println!("    command: cargo run --release -p dsh-bench -- {BENCH}");
    drop(web);

    // A fresh server that holds nothing: the 50 idle sessions resumed (held in the hub),
    // then the 10k history read from disk (not held).
    let web = Web::start(&dsh, &base_url, home.path(), workspace.path())?;
    let fresh = web.memory();
    // The first resume pays one-off costs (the workspace's tools, the model client);
    // the other 49 are the per-session figure.
    let mut resume = vec![time(|| {
        web.json("GET", &format!("/api/sessions/{}", idle[0]), None)
    })?];
    let warm = web.memory();
    for id in &idle[1..] {
        resume.push(time(|| {
            web.json("GET", &format!("/api/sessions/{id}"), None)
        })?);
    }
    let listed = web.json("GET", "/api/sessions", None)?;
    let held = listed["sessions"]
        .as_array()
        .map_or(0, |all| all.iter().filter(|s| s["live"] == true).count());
    std::thread::sleep(Duration::from_secs(1));
    let after = web.memory();
    report_with_max("resume one idle session (GET /api/sessions/ID)", resume);
    println!(
        "RSS, resumed: fresh server {} KiB (HWM {}); one idle session resumed {} KiB; all {IDLE_SESSIONS} resumed ({held} held) {} KiB (HWM {}), {:.0} KiB per session after the first",
        fresh.rss,
        fresh.hwm,
        warm.rss,
        after.rss,
        after.hwm,
        after.rss.saturating_sub(warm.rss) as f64 / (IDLE_SESSIONS - 1) as f64
    );
    println!("    command: cargo run --release -p dsh-bench -- {BENCH}");
    let mut stored_tail = Vec::new();
    let mut stored_all = Vec::new();
    for _ in 0..30 {
        stored_tail.push(time(|| web.request("GET", &tail, None))?);
    }
    for _ in 0..5 {
        stored_all.push(time(|| whole_history(&web, &id))?);
    }
    report_with_max("history tail page (200) of 10k, stored", stored_tail);
    report_with_max("whole 10k history in 2,000-event pages, stored", stored_all);
    // Opening it as the page does: the detail (which resumes it) and the tail page.
    let opened = time(|| {
        web.json("GET", &format!("/api/sessions/{id}"), None)?;
        web.request("GET", &tail_html, None)
    })?;
    println!("open the stored 10k session as the page does (resume + tail page): {opened:.1?}");
    drop(web);
    runtime.block_on(server.shutdown());
    Ok(())
}

/// Reads the whole log in pages of 2,000 (the most a page holds).
fn whole_history(web: &Web, id: &str) -> anyhow::Result<()> {
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
}
