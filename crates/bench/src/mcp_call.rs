//! `mcp-call`: what the MCP bridge adds to one tool call over stdio, and what configured
//! servers add to start-up.
//!
//! Call overhead: the same minimal stdio server (`dsh-mcp-fixture-server`, echo tool) is timed
//! two ways, round after round: a bare newline-JSON-RPC round trip written by hand (the
//! server's own time plus the pipes), and a whole `ToolRuntime::execute` of
//! `mcp__fx__echo` through the pipeline, rmcp and result mapping. The difference is the
//! harness's share. Start-up: mounting the tool runtime and the `mcp` row with no servers
//! versus five servers (which start in the background, so mounting must not wait for them).

use crate::stats::{report, summarize};
use dsh_kernel::Context;
use dsh_mcp::{
    McpPlugin, McpPluginConfig, McpServerConfig, McpState, McpStatusBoard, McpTransport,
};
use dsh_protocol::CallId;
use dsh_tools::{ToolInvocation, ToolRuntime, ToolsConfig, ToolsPlugin};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const WARMUP: usize = 50;
const RUNS: usize = 1000;
const MOUNTS: usize = 200;
const BENCH: &str = "mcp-call";

/// The fixture server: `$DSH_MCP_FIXTURE`, else next to this binary.
fn fixture() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("DSH_MCP_FIXTURE") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe()?;
    let path = exe
        .parent()
        .map(|dir| dir.join("dsh-mcp-fixture-server"))
        .ok_or_else(|| anyhow::anyhow!("no directory for {}", exe.display()))?;
    anyhow::ensure!(
        path.exists(),
        "{} is missing: cargo build --release -p dsh-mcp --bin dsh-mcp-fixture-server",
        path.display()
    );
    Ok(path)
}

fn server(name: &str, command: &str, args: &[&str]) -> McpServerConfig {
    McpServerConfig::new(
        name,
        McpTransport::Stdio {
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::new(),
            cwd: None,
        },
    )
}

fn mount(servers: Vec<McpServerConfig>) -> anyhow::Result<Context> {
    let ctx = Context::root();
    ctx.plugin::<ToolsPlugin>(ToolsConfig::default())?;
    ctx.plugin::<McpPlugin>(McpPluginConfig { servers })?;
    Ok(ctx)
}

/// One bare `tools/call` round trip over the pipes.
async fn raw_call(
    stdin: &mut tokio::process::ChildStdin,
    stdout: &mut BufReader<tokio::process::ChildStdout>,
    id: u64,
) -> anyhow::Result<Duration> {
    let request = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"x\"}}}}}}\n"
    );
    let mut line = String::new();
    let start = Instant::now();
    stdin.write_all(request.as_bytes()).await?;
    stdin.flush().await?;
    stdout.read_line(&mut line).await?;
    let elapsed = start.elapsed();
    anyhow::ensure!(line.contains("\"x\""), "unexpected reply {line}");
    Ok(elapsed)
}

async fn calls() -> anyhow::Result<()> {
    let path = fixture()?;
    let mut child = tokio::process::Command::new(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdin"))?;
    let mut stdout = BufReader::new(
        child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?,
    );

    let ctx = mount(vec![server("fx", &path.display().to_string(), &[])])?;
    let board = ctx.require::<McpStatusBoard>()?;
    let tools = ctx.require::<ToolRuntime>()?;
    for _ in 0..400 {
        if board
            .server("fx")
            .is_some_and(|s| s.state == McpState::Ready)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    anyhow::ensure!(
        tools.get(None, "mcp__fx__echo").is_some(),
        "the fixture never got ready"
    );
    let dsh_call = || async {
        let start = Instant::now();
        let result = tools
            .execute(ToolInvocation::new(
                CallId::from("c"),
                "mcp__fx__echo",
                r#"{"text":"x"}"#,
            ))
            .await;
        let elapsed = start.elapsed();
        anyhow::ensure!(!result.is_error(), "the call failed: {:?}", result.content);
        Ok::<_, anyhow::Error>(elapsed)
    };
    for i in 0..WARMUP {
        raw_call(&mut stdin, &mut stdout, i as u64).await?;
        dsh_call().await?;
    }
    let (mut raw, mut full) = (Vec::new(), Vec::new());
    for i in 0..RUNS {
        raw.push(raw_call(&mut stdin, &mut stdout, (WARMUP + i) as u64).await?);
        full.push(dsh_call().await?);
    }
    let raw = summarize(raw);
    let full = summarize(full);
    report(BENCH, "bare JSON-RPC round trip (server + pipes)", &raw);
    report(BENCH, "mcp__fx__echo through ToolRuntime::execute", &full);
    println!(
        "{:<44} median {:>10.3?}  (budget <= 1 ms)",
        "harness overhead per call",
        full.median.saturating_sub(raw.median)
    );
    ctx.fiber().dispose();
    Ok(())
}

fn startup(rt: &tokio::runtime::Runtime) -> anyhow::Result<()> {
    let _guard = rt.enter();
    let five: Vec<McpServerConfig> = (0..5)
        .map(|i| server(&format!("s{i}"), "sleep", &["30"]))
        .collect();
    let (mut none, mut with_five) = (Vec::new(), Vec::new());
    for _ in 0..MOUNTS {
        let start = Instant::now();
        let ctx = mount(Vec::new())?;
        none.push(start.elapsed());
        ctx.fiber().dispose();
        let start = Instant::now();
        let ctx = mount(five.clone())?;
        with_five.push(start.elapsed());
        ctx.fiber().dispose();
        // Let the supervisors see the stop and reap their children.
        rt.block_on(tokio::time::sleep(Duration::from_millis(2)));
    }
    report(BENCH, "mount tools + mcp, no servers", &summarize(none));
    report(
        BENCH,
        "mount tools + mcp, 5 servers configured",
        &summarize(with_five),
    );
    Ok(())
}

pub fn run() -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(calls())?;
    startup(&rt)
}
