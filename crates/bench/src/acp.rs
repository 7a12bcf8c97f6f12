//! `acp`: what `dsh acp` costs an editor, measured on the real binary over its stdio against
//! the mock model server on 127.0.0.1 (no scripted delay).
//!
//! - `initialize` → `session/new`: from `initialize`'s answer to `session/new`'s, in a fresh
//!   process and a fresh workspace (the first `session/new` boots the workspace's plugin
//!   composition). Budget: ≤ 20 ms. Measured with a fresh `DSH_HOME` each time (dsh's first
//!   run ever: the memory index and the installation id are created) and with one `DSH_HOME`
//!   shared by every sample (an editor's usual start). A second `session/new` in the same
//!   workspace is shown too.
//! - per streamed chunk: a prompt whose answer streams as 2,000 deltas against the same text
//!   in one delta; `(many − one) / 1,999` is what one more chunk costs end to end (SSE parse,
//!   `assistant/chunk` appended and persisted, its `agent_message_chunk` frame written and
//!   read), less what the mock server itself spends on one more delta (timed alone with a
//!   bare HTTP client).
//! - per tool call: one step of 11 `todo_write` calls against one step of 1; `(eleven − one) /
//!   10` is one more call (the tool, its `tool/call`/`tool/result` events, and its
//!   `tool_call`, `plan` and `tool_call_update` frames).
//!
//! The binary is `dsh` beside this program (build both with `cargo build --release -p dsh-cli
//! -p dsh-bench`), or `$DSH_BIN`.

use crate::stats::{report_range as report, summarize};
use dsh_testkit::mock_llm::{MockServer, Reply, RuleMatch, Script};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const RUNS: usize = 15;
const CHUNKS: usize = 2_000;
const CALLS: usize = 11;
const BUDGET_NEW_SESSION: Duration = Duration::from_millis(20);

fn binary() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("DSH_BIN") {
        return Ok(std::path::absolute(PathBuf::from(path))?);
    }
    let exe = std::env::current_exe()?;
    let dsh = exe.with_file_name("dsh");
    anyhow::ensure!(
        dsh.exists(),
        "{} not found: build it with `cargo build --release -p dsh-cli` (or set DSH_BIN)",
        dsh.display()
    );
    Ok(dsh)
}

fn script() -> Script {
    let text: String = "word ".repeat(CHUNKS);
    // Each call's list differs: identical calls in a row would draw the repeat-tool
    // reminder (a user message after the results, so the follow-up would match no rule).
    let todo = |n: usize| json!({"todos": [{"content": format!("task {n}"), "status": "pending"}]});
    let mut many_calls = Reply::empty();
    for n in 0..CALLS {
        many_calls = many_calls.with_tool_call("todo_write", todo(n));
    }
    Script::new()
        .rule(
            RuleMatch::any().last_message_contains("MANY"),
            Reply::text(text.clone()).chunks(CHUNKS),
        )
        .rule(
            RuleMatch::any().last_message_contains("ONE"),
            Reply::text(text).chunks(1),
        )
        .rule(RuleMatch::any().last_message_contains("CALLS"), many_calls)
        .rule(
            RuleMatch::any().last_message_contains("CALL1"),
            Reply::tool_call("todo_write", todo(0)),
        )
        .rule(
            RuleMatch::any().last_message_contains("Updated todo list"),
            Reply::text("done"),
        )
}

/// One `dsh acp` process.
struct Acp {
    child: Child,
    stdin: Option<ChildStdin>,
    frames: mpsc::Receiver<Value>,
    next_id: u64,
    _home: Option<tempfile::TempDir>,
    workspace: tempfile::TempDir,
}

impl Acp {
    fn start(dsh: &PathBuf, base_url: &str) -> anyhow::Result<Self> {
        let home = tempfile::tempdir()?;
        let path = home.path().to_path_buf();
        Self::start_in(dsh, base_url, &path, Some(home))
    }

    /// Started with `DSH_HOME` (and `HOME`) `home`; `owned` is removed with this process.
    fn start_in(
        dsh: &PathBuf,
        base_url: &str,
        home: &std::path::Path,
        owned: Option<tempfile::TempDir>,
    ) -> anyhow::Result<Self> {
        let workspace = tempfile::tempdir()?;
        let mut child = Command::new(dsh)
            .args(["acp", "--approval", "never"])
            .current_dir(workspace.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("DSH_HOME", home)
            .env("DEEPSEEK_API_KEY", "sk-bench")
            .env("DEEPSEEK_BASE_URL", base_url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        let (tx, frames) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let Ok(frame) = serde_json::from_str::<Value>(&line) else {
                    return;
                };
                if tx.send(frame).is_err() {
                    return;
                }
            }
        });
        Ok(Self {
            stdin: child.stdin.take(),
            child,
            frames,
            next_id: 0,
            _home: owned,
            workspace,
        })
    }

    /// Sends a request and waits for its answer, counting the notifications meanwhile.
    fn call(&mut self, method: &str, params: Value) -> anyhow::Result<(Value, usize)> {
        self.next_id += 1;
        let id = self.next_id;
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| anyhow::anyhow!("closed"))?;
        writeln!(stdin, "{frame}")?;
        stdin.flush()?;
        let mut notes = 0;
        loop {
            let frame = self.frames.recv_timeout(Duration::from_secs(60))?;
            if frame["id"] == json!(id) {
                anyhow::ensure!(frame.get("error").is_none(), "{method} failed: {frame}");
                return Ok((frame["result"].clone(), notes));
            }
            notes += 1;
        }
    }

    fn new_session(&mut self) -> anyhow::Result<String> {
        let cwd = self.workspace.path().canonicalize()?.display().to_string();
        let (result, _) = self.call("session/new", json!({"cwd": cwd, "mcpServers": []}))?;
        result["sessionId"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| anyhow::anyhow!("no session id"))
    }

    fn prompt(&mut self, session: &str, text: &str) -> anyhow::Result<(Duration, usize)> {
        let started = Instant::now();
        let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
        let (result, notes) = self.call("session/prompt", params)?;
        anyhow::ensure!(result["stopReason"] == "end_turn", "{result}");
        Ok((started.elapsed(), notes))
    }

    fn close(mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// The mock's own time for a streamed reply, read to the end by a bare client.
async fn bare_stream(
    client: &reqwest::Client,
    base_url: &str,
    prompt: &str,
) -> anyhow::Result<Duration> {
    let body = json!({"model": "deepseek-v4-flash", "stream": true,
        "messages": [{"role": "user", "content": prompt}]});
    let started = Instant::now();
    let response = client
        .post(format!("{base_url}/chat/completions"))
        .json(&body)
        .send()
        .await?;
    let _ = response.bytes().await?;
    Ok(started.elapsed())
}

fn per_item(many: Duration, one: Duration, extra: usize) -> Duration {
    many.saturating_sub(one) / u32::try_from(extra).unwrap_or(u32::MAX)
}

pub fn run() -> anyhow::Result<()> {
    let dsh = binary()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let server = runtime.block_on(MockServer::start(script()))?;
    let base_url = server.base_url();

    let mut first = Vec::new();
    let mut second = Vec::new();
    for _ in 0..RUNS {
        let mut acp = Acp::start(&dsh, &base_url)?;
        acp.call("initialize", json!({"protocolVersion": 1}))?;
        let started = Instant::now();
        acp.new_session()?;
        first.push(started.elapsed());
        let started = Instant::now();
        acp.new_session()?;
        second.push(started.elapsed());
        acp.close();
    }
    let first = summarize(first);
    report(
        "acp",
        "initialize -> session/new (fresh workspace, fresh DSH_HOME)",
        &first,
    );
    let home = tempfile::tempdir()?;
    let mut warm = Vec::new();
    for _ in 0..=RUNS {
        let mut acp = Acp::start_in(&dsh, &base_url, home.path(), None)?;
        acp.call("initialize", json!({"protocolVersion": 1}))?;
        let started = Instant::now();
        acp.new_session()?;
        warm.push(started.elapsed());
        acp.close();
    }
    // The first sample created the home.
    warm.remove(0);
    let warm = summarize(warm);
    report(
        "acp",
        "initialize -> session/new (fresh workspace, used DSH_HOME)",
        &warm,
    );
    report(
        "acp",
        "second session/new (booted workspace)",
        &summarize(second),
    );
    println!(
        "budget initialize -> session/new <= {BUDGET_NEW_SESSION:?} (used DSH_HOME): {}",
        if warm.median <= BUDGET_NEW_SESSION {
            "met"
        } else {
            "MISSED"
        }
    );

    let mut acp = Acp::start(&dsh, &base_url)?;
    acp.call("initialize", json!({"protocolVersion": 1}))?;
    let client = dsh_llm_openai::client_builder()
        .no_proxy()
        .build()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let (mut chunk, mut call) = (Vec::new(), Vec::new());
    let (mut chunk_frames, mut call_frames) = (0, 0);
    for _ in 0..RUNS {
        // A fresh session each time, so the history (and the request) stays the same size.
        let session = acp.new_session()?;
        let (many, frames) = acp.prompt(&session, "MANY")?;
        chunk_frames = frames;
        let session = acp.new_session()?;
        let (one, _) = acp.prompt(&session, "ONE")?;
        let (bare_many, bare_one) = runtime.block_on(async {
            let many = bare_stream(&client, &base_url, "MANY").await?;
            let one = bare_stream(&client, &base_url, "ONE").await?;
            anyhow::Ok((many, one))
        })?;
        let stack = per_item(many, one, CHUNKS - 1);
        let mock = per_item(bare_many, bare_one, CHUNKS - 1);
        chunk.push(stack.saturating_sub(mock));
        let session = acp.new_session()?;
        let (eleven, frames) = acp.prompt(&session, "CALLS")?;
        call_frames = frames;
        let session = acp.new_session()?;
        let (one, _) = acp.prompt(&session, "CALL1")?;
        call.push(per_item(eleven, one, CALLS - 1));
    }
    acp.close();
    report(
        "acp",
        "per streamed chunk (beyond the mock)",
        &summarize(chunk),
    );
    println!("    ({chunk_frames} notifications for a {CHUNKS}-delta answer)");
    report("acp", "per tool call", &summarize(call));
    println!("    ({call_frames} notifications for a {CALLS}-call step)");
    Ok(())
}
