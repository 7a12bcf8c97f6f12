//! `dsh mcp list|add|remove`.
//!
//! `list` shows the configuration as dsh resolves it for the current workspace — every
//! server with its source file and line, transport, command or URL, and state (`enabled`,
//! `disabled`, `shadowed` by a same-named server in a higher layer, `untrusted` when it sits
//! in an untrusted workspace's `.mcp.json`) — plus every problem that made a server or file be
//! skipped. Unless `--no-connect`, it then connects the enabled servers (never an untrusted
//! or shadowed one) on a kernel holding only the tools registry and the `mcp` plugin, waits
//! until each has settled or run out of its startup time, and shows each one's live status,
//! tool count and last error; disposing that kernel stops the servers again.
use super::{exit, McpCommand};
use crate::config::{load, Env, Overrides};
use crate::mcp_config::{self, add_server, remove_server, McpConfig, NewServer, Scope};
use crate::trust::TrustDecision;
use dsh_kernel::Context;
use dsh_mcp::{McpPlugin, McpPluginConfig, McpServerStatus, McpState, McpStatusBoard};
use dsh_tools::{ToolsConfig, ToolsPlugin};
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

pub(super) fn mcp(
    command: &McpCommand,
    env: &dyn Env,
    flags: &Overrides,
    cwd: &Path,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    match command {
        McpCommand::List { json, no_connect } => list(env, flags, cwd, *json, !*no_connect, out),
        McpCommand::Add {
            name,
            url,
            header,
            env: vars,
            command,
        } => {
            let settings_path = crate::config::resolve_home(env, flags)?
                .value
                .join(crate::config::SETTINGS_FILE);
            let server = match (url, command.split_first()) {
                (Some(url), None) => {
                    if !vars.is_empty() {
                        return Err(super::UsageError(
                            "--env is for a stdio server (`-- CMD ARGS...`); an http server takes --header".into(),
                        )
                        .into());
                    }
                    NewServer::Http {
                        url: url.clone(),
                        headers: pairs(header, "--header")?,
                    }
                }
                (None, Some((program, args))) => {
                    if !header.is_empty() {
                        return Err(super::UsageError(
                            "--header is for an http server (--url)".into(),
                        )
                        .into());
                    }
                    NewServer::Stdio {
                        command: program.clone(),
                        args: args.to_vec(),
                        env: pairs(vars, "--env")?,
                    }
                }
                (Some(_), Some(_)) => {
                    return Err(super::UsageError(
                        "give either --url URL or -- CMD ARGS..., not both".into(),
                    )
                    .into())
                }
                (None, None) => {
                    return Err(super::UsageError(
                        "say how to reach the server: `dsh mcp add NAME -- CMD ARGS...` or \
                         `dsh mcp add NAME --url URL`"
                            .into(),
                    )
                    .into())
                }
            };
            add_server(&settings_path, name, &server)?;
            writeln!(
                out,
                "added MCP server `{name}` to {} ([mcp_servers.{name}])",
                settings_path.display()
            )?;
            Ok(exit::SUCCESS)
        }
        McpCommand::Remove { name } => {
            let settings_path = crate::config::resolve_home(env, flags)?
                .value
                .join(crate::config::SETTINGS_FILE);
            if remove_server(&settings_path, name)? {
                writeln!(
                    out,
                    "removed MCP server `{name}` from {}",
                    settings_path.display()
                )?;
                return Ok(exit::SUCCESS);
            }
            // Not in settings.toml: say where it is, if anywhere.
            let settings = load(env, flags)?;
            let config = mcp_config::resolve(&settings, cwd, TrustDecision::Trusted, env);
            let found = config
                .servers
                .iter()
                .chain(config.shadowed.iter().map(|(s, _)| s))
                .find(|s| s.name == *name);
            match found {
                Some(server) => Err(super::UsageError(format!(
                    "server `{name}` is configured in {} (line {}), which dsh does not edit; \
                     remove its entry under `mcpServers` there",
                    server.source, server.line
                ))
                .into()),
                None => Err(super::UsageError(format!(
                    "no MCP server is named `{name}` (see `dsh mcp list`)"
                ))
                .into()),
            }
        }
    }
}

fn pairs(items: &[String], flag: &str) -> anyhow::Result<Vec<(String, String)>> {
    items
        .iter()
        .map(|item| match item.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
            _ => Err(super::UsageError(format!("{flag} takes KEY=VALUE, got {item:?}")).into()),
        })
        .collect()
}

/// The resolved configuration for `cwd`, trust applied.
pub(super) fn resolved(
    env: &dyn Env,
    flags: &Overrides,
    cwd: &Path,
) -> anyhow::Result<(McpConfig, TrustDecision)> {
    let settings = load(env, flags)?;
    let trust = TrustDecision::for_workspace(&settings.home.value, cwd);
    Ok((mcp_config::resolve(&settings, cwd, trust, env), trust))
}

fn list(
    env: &dyn Env,
    flags: &Overrides,
    cwd: &Path,
    json: bool,
    connect: bool,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let (config, _) = resolved(env, flags, cwd)?;
    let live = if connect && !config.servers.is_empty() {
        probe(&config)?
    } else {
        BTreeMap::new()
    };
    // The servers an untrusted `.mcp.json` would add, shown (never started) so the person
    // sees what trusting the workspace enables.
    let untrusted: Vec<mcp_config::McpServer> = match &config.untrusted_file {
        Some(path) => dsh_store::read_regular_text(path, mcp_config::MCP_MAX_BYTES)
            .map(|text| mcp_config::json::read(path, &text, Scope::Workspace, env).servers)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let mut rows = Vec::new();
    for server in &config.servers {
        let state = if server.enabled {
            "enabled"
        } else {
            "disabled"
        };
        rows.push((server, state.to_owned()));
    }
    for (server, winner) in &config.shadowed {
        rows.push((server, format!("shadowed by {winner}")));
    }
    for server in &untrusted {
        rows.push((server, "untrusted (run `dsh trust` to enable)".to_owned()));
    }
    // Live status belongs to the servers that were started, not to a shadowed or untrusted
    // entry of the same name.
    let status = |server: &mcp_config::McpServer| {
        let started = config.servers.iter().any(|s| std::ptr::eq(s, server));
        live.get(&server.name).filter(|_| started)
    };
    if json {
        let servers: Vec<_> = rows
            .iter()
            .map(|(s, state)| {
                json!({
                    "name": s.name,
                    "scope": s.scope,
                    "source": s.source,
                    "line": s.line,
                    "transport": s.transport.kind(),
                    "target": s.transport.describe(),
                    "approval": s.approval,
                    "state": state,
                    "status": status(s).map(|l| l.state),
                    "toolCount": status(s).map(|l| l.tool_count),
                    "lastError": status(s).and_then(|l| l.last_error.clone()),
                })
            })
            .collect();
        let problems: Vec<String> = config.problems.iter().map(ToString::to_string).collect();
        let text = serde_json::to_string_pretty(&json!({
            "servers": servers,
            "problems": problems,
        }))?;
        writeln!(out, "{text}")?;
        return Ok(exit::SUCCESS);
    }
    if rows.is_empty() {
        writeln!(
            out,
            "no MCP servers configured (add one with `dsh mcp add NAME -- CMD ARGS...` or \
             `dsh mcp add NAME --url URL`)"
        )?;
    }
    for (server, state) in &rows {
        writeln!(
            out,
            "{}  {}  {}  [{}]",
            server.name,
            server.transport.kind(),
            server.transport.describe(),
            state
        )?;
        writeln!(
            out,
            "    source: {}:{} ({})",
            server.source, server.line, server.scope
        )?;
        if let Some(status) = status(server) {
            let state = serde_json::to_value(status.state)?;
            let state = state.as_str().unwrap_or("unknown");
            let tools = match status.tool_count {
                1 => "1 tool".to_owned(),
                n => format!("{n} tools"),
            };
            writeln!(out, "    status: {state}, {tools}")?;
            if let Some(error) = &status.last_error {
                writeln!(out, "    last error: {error}")?;
            }
        }
        if server.approval == mcp_config::Approval::Ask {
            writeln!(out, "    approval: ask (every call asks first)")?;
        }
    }
    for problem in &config.problems {
        writeln!(out, "problem: {problem}")?;
    }
    Ok(exit::SUCCESS)
}

/// Extra time past a server's startup timeout before the listing stops waiting for it.
const SETTLE_MARGIN: Duration = Duration::from_millis(500);

/// Connects every enabled server of `config` on a kernel of its own (the tools registry and
/// the `mcp` plugin, nothing that needs model credentials) and returns each server's first
/// settled status: the first one that is not `starting`, or the last seen once its time ran
/// out (connect plus first listing, each within the startup timeout). Servers are stopped
/// when the kernel is disposed, and any still running when the runtime drops are killed.
fn probe(config: &McpConfig) -> anyhow::Result<BTreeMap<String, McpServerStatus>> {
    let row: McpPluginConfig = serde_json::from_value(config.row_config())?;
    let deadlines: BTreeMap<String, Duration> = row
        .servers
        .iter()
        .map(|s| {
            let startup = Duration::from_millis(s.startup_timeout_ms);
            (s.name.clone(), startup.saturating_mul(2) + SETTLE_MARGIN)
        })
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let ctx = Context::root();
        let mut progress = |line: &str| super::stderr_line(format_args!("dsh: {line}"));
        let result = watch(&ctx, row, &deadlines, &mut progress).await;
        ctx.fiber().dispose();
        // Let the servers see their stdin close before the runtime drops (and kills) them.
        tokio::time::sleep(Duration::from_millis(100)).await;
        result
    })
}

/// When the listing first says which servers it is still waiting for, and how often it
/// repeats that: a slow server must never leave the terminal silent for its whole timeout.
const FIRST_PROGRESS: Duration = Duration::from_secs(1);
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

async fn watch(
    ctx: &Context,
    row: McpPluginConfig,
    deadlines: &BTreeMap<String, Duration>,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<BTreeMap<String, McpServerStatus>> {
    ctx.plugin::<ToolsPlugin>(ToolsConfig::default())
        .map_err(|e| anyhow::anyhow!("cannot mount the tools registry: {e}"))?;
    ctx.plugin::<McpPlugin>(row)
        .map_err(|e| anyhow::anyhow!("cannot mount the mcp plugin: {e}"))?;
    let board = ctx
        .get::<McpStatusBoard>()
        .ok_or_else(|| anyhow::anyhow!("the mcp plugin provided no status board"))?;
    let started = Instant::now();
    let mut settled = BTreeMap::new();
    let mut next_progress = FIRST_PROGRESS;
    loop {
        let mut waiting: Vec<(String, Duration)> = Vec::new();
        for status in board.servers() {
            if settled.contains_key(&status.name) {
                continue;
            }
            let limit = deadlines.get(&status.name).copied().unwrap_or_default();
            if status.state != McpState::Starting || started.elapsed() >= limit {
                settled.insert(status.name.clone(), status);
            } else {
                waiting.push((status.name.clone(), limit));
            }
        }
        if waiting.is_empty() {
            return Ok(settled);
        }
        if started.elapsed() >= next_progress {
            progress(&waiting_line(&waiting, started.elapsed()));
            next_progress += PROGRESS_EVERY;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// `waiting for MCP server "slow" to start (1 s so far, at most 21 s; ...)`.
fn waiting_line(waiting: &[(String, Duration)], elapsed: Duration) -> String {
    let names: Vec<String> = waiting
        .iter()
        .map(|(name, _)| format!("{name:?}"))
        .collect();
    let limit = waiting
        .iter()
        .map(|(_, limit)| *limit)
        .max()
        .unwrap_or_default();
    let plural = if names.len() == 1 { "" } else { "s" };
    format!(
        "waiting for MCP server{plural} {} to start ({} s so far, at most {} s; \
         `dsh mcp list --no-connect` lists without starting them)",
        names.join(", "),
        elapsed.as_secs(),
        limit.as_secs_f64().ceil()
    )
}
