//! `dsh mcp list|add|remove`.
//!
//! `list` shows the configuration as dsh resolves it for the current workspace — every
//! server with its source file and line, transport, command or URL, and state (`enabled`,
//! `disabled`, `shadowed` by a same-named server in a higher layer, `untrusted` when it sits
//! in an untrusted workspace's `.mcp.json`) — plus every problem that made a server or file be
//! skipped. It never starts a server: listing must be safe in any directory.

use super::{exit, McpCommand};
use crate::config::{load, Env, Overrides};
use crate::mcp_config::{self, add_server, remove_server, McpConfig, NewServer, Scope};
use crate::trust::TrustDecision;
use serde_json::json;
use std::io::Write;
use std::path::Path;

pub(super) fn mcp(
    command: &McpCommand,
    env: &dyn Env,
    flags: &Overrides,
    cwd: &Path,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    match command {
        McpCommand::List { json } => list(env, flags, cwd, *json, out),
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
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let (config, _) = resolved(env, flags, cwd)?;
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
        if server.approval == mcp_config::Approval::Ask {
            writeln!(out, "    approval: ask (every call asks first)")?;
        }
    }
    for problem in &config.problems {
        writeln!(out, "problem: {problem}")?;
    }
    Ok(exit::SUCCESS)
}
