//! `dsh config ...`

use crate::config::{load, render_json, render_text, Env, Overrides};
use crate::mcp_config;
use crate::trust::TrustDecision;
use std::io::{ErrorKind, Write};
use std::path::Path;

/// `dsh config show [--json]`: the settings, then the MCP servers as resolved for the
/// workspace `cwd` (each with the file and line it came from).
pub(super) fn show(
    env: &dyn Env,
    flags: &Overrides,
    cwd: &Path,
    json: bool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let settings = load(env, flags)?;
    let trust = TrustDecision::for_workspace(&settings.home.value, cwd);
    let mcp = mcp_config::resolve(&settings, cwd, trust, env);
    let text = if json {
        let mut value = render_json(&settings);
        if let Some(object) = value.as_object_mut() {
            object.insert("mcp".into(), mcp_json(&mcp));
        }
        let mut text = serde_json::to_string_pretty(&value)?;
        text.push('\n');
        text
    } else {
        let mut text = render_text(&settings);
        text.push_str(&mcp_text(&mcp));
        text
    };
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        // A closed pipe (`dsh config show | head`) is the reader's choice, not a failure.
        Err(error) if error.kind() == ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

fn mcp_json(mcp: &mcp_config::McpConfig) -> serde_json::Value {
    let mut servers = Vec::new();
    for server in &mcp.servers {
        let mut value = serde_json::to_value(redacted(server)).unwrap_or_default();
        if let Some(object) = value.as_object_mut() {
            object.insert("line".into(), server.line.into());
            object.insert("scope".into(), server.scope.to_string().into());
        }
        servers.push(value);
    }
    serde_json::json!({
        "servers": servers,
        "shadowed": mcp.shadowed.iter().map(|(s, winner)| serde_json::json!({
            "name": s.name, "source": s.source, "line": s.line, "shadowedBy": winner,
        })).collect::<Vec<_>>(),
        "untrustedFile": mcp.untrusted_file.as_ref().map(|p| p.display().to_string()),
        "problems": mcp.problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
    })
}

/// The server with its `env` and `headers` values masked: they often hold tokens, and
/// `dsh config show` never prints a secret.
fn redacted(server: &mcp_config::McpServer) -> mcp_config::McpServer {
    let mut server = server.clone();
    match &mut server.transport {
        mcp_config::Transport::Stdio { env, .. } => {
            env.values_mut().for_each(|v| *v = "(set)".into())
        }
        mcp_config::Transport::Http { headers, .. } => {
            headers.values_mut().for_each(|v| *v = "(set)".into())
        }
    }
    server
}

fn mcp_text(mcp: &mcp_config::McpConfig) -> String {
    let mut text = String::new();
    for server in &mcp.servers {
        text.push_str(&format!(
            "\n[mcp_servers.{}] # {}:{}\n",
            server.name, server.source, server.line
        ));
        text.push_str(&format!("transport = {:?}\n", server.transport.kind()));
        text.push_str(&format!("target = {:?}\n", server.transport.describe()));
        text.push_str(&format!("enabled = {}\n", server.enabled));
        text.push_str(&format!(
            "startup_timeout_ms = {}\ntool_timeout_ms = {}\n",
            server.startup_timeout_ms, server.tool_timeout_ms
        ));
        if server.approval == mcp_config::Approval::Ask {
            text.push_str("approval = \"ask\"\n");
        }
    }
    for (server, winner) in &mcp.shadowed {
        text.push_str(&format!(
            "# mcp server `{}` of {}:{} is shadowed by {winner}\n",
            server.name, server.source, server.line
        ));
    }
    if let Some(path) = &mcp.untrusted_file {
        text.push_str(&format!(
            "# {} is ignored: the workspace is not trusted (dsh trust)\n",
            path.display()
        ));
    }
    for problem in &mcp.problems {
        text.push_str(&format!("# mcp problem: {problem}\n"));
    }
    text
}
