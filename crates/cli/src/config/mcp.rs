//! `[mcp_servers.NAME]` tables of settings.toml (codex's keys, plus `approval`).
//!
//! ```toml
//! [mcp_servers.fs]
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-filesystem", "/repo"]
//! env = { ROOT = "/repo" }
//! startup_timeout_sec = 20
//! approval = "ask"                      # every call of this server asks
//!
//! [mcp_servers.web]
//! url = "http://127.0.0.1:3001/mcp"
//! headers = { "X-Team" = "core" }
//! bearer_token_env_var = "WEB_TOKEN"
//! enabled_tools = ["search"]
//! ```
//!
//! Unlike the rest of the file, a bad server table does not stop dsh: that server is skipped
//! with one problem naming the file, line and key, and every other setting still loads.

use super::reader::{At, Doc, Entries};
use super::tree::{Node, Value};
use super::ConfigError;
use crate::mcp_config::{is_server_name, Approval, McpProblem, McpServer, Scope, Transport};
use std::collections::BTreeMap;

const SERVER: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "bearer_token_env_var",
    "enabled",
    "startup_timeout_sec",
    "tool_timeout_sec",
    "enabled_tools",
    "disabled_tools",
    "approval",
];

/// The servers of a `mcp_servers` table, and one problem per skipped server.
#[derive(Debug, Default)]
pub(crate) struct McpLayer {
    pub servers: Vec<McpServer>,
    pub problems: Vec<McpProblem>,
}

pub(crate) fn read(doc: &Doc<'_>, node: &Node) -> McpLayer {
    let mut layer = McpLayer::default();
    let entries = match doc.table("mcp_servers", node) {
        Ok(entries) => entries,
        Err(error) => {
            layer
                .problems
                .push(problem(doc, node, "mcp_servers", error));
            return layer;
        }
    };
    for (key, table) in entries {
        match server(doc, &key.name, key.span.start, table) {
            Ok(server) => layer.servers.push(server),
            Err(error) => layer.problems.push(problem(doc, table, &key.name, error)),
        }
    }
    layer
}

fn problem(doc: &Doc<'_>, node: &Node, name: &str, error: ConfigError) -> McpProblem {
    let (line, key, message) = match error {
        ConfigError::UnknownKey { at, key, hint } => (at.line(), key, format!("unknown key{hint}")),
        ConfigError::InvalidValue {
            at,
            key,
            expected,
            found,
        } => (
            at.line(),
            key,
            format!("expected {expected}, found {found}"),
        ),
        ConfigError::Inconsistent { at, key, message } => (at.line(), key, message),
        other => (None, String::new(), other.to_string()),
    };
    McpProblem {
        path: doc.path.to_path_buf(),
        line: line.unwrap_or_else(|| doc.line(&node.span)),
        key,
        message: format!("{message}; server `{name}` is skipped"),
    }
}

fn get<'a>(entries: &'a Entries, name: &str) -> Option<&'a Node> {
    entries.iter().find(|(k, _)| k.name == name).map(|(_, v)| v)
}

fn server(doc: &Doc<'_>, name: &str, offset: usize, node: &Node) -> Result<McpServer, ConfigError> {
    let prefix = format!("mcp_servers.{name}");
    let key = |field: &str| format!("{prefix}.{field}");
    if !is_server_name(name) {
        return Err(doc.invalid(
            &(offset..offset),
            &prefix,
            "a server name of 1 to 32 letters, digits, `_` and `-`",
            format!("{name:?}"),
        ));
    }
    let table = doc.table(&prefix, node)?;
    doc.check_keys(&prefix, table, SERVER)?;
    let text = |field: &str| -> Result<Option<At<String>>, ConfigError> {
        get(table, field)
            .map(|n| doc.text(&key(field), n))
            .transpose()
    };
    let strings = |field: &str| -> Result<Option<Vec<String>>, ConfigError> {
        get(table, field)
            .map(|n| doc.strings(&key(field), n))
            .transpose()
    };
    let map = |field: &str| -> Result<BTreeMap<String, String>, ConfigError> {
        let Some(node) = get(table, field) else {
            return Ok(BTreeMap::new());
        };
        doc.table(&key(field), node)?
            .iter()
            .map(|(k, v)| {
                Ok((
                    k.name.clone(),
                    doc.string(&format!("{}.{}", key(field), k.name), v)?.value,
                ))
            })
            .collect()
    };
    let transport = match (text("command")?, text("url")?) {
        (Some(command), None) => {
            for field in ["headers", "bearer_token_env_var"] {
                if let Some(node) = get(table, field) {
                    return Err(doc.inconsistent(
                        &node.span,
                        &key(field),
                        "belongs to an http server (`url`), not a stdio one (`command`)".into(),
                    ));
                }
            }
            Transport::Stdio {
                command: command.value,
                args: strings("args")?.unwrap_or_default(),
                env: map("env")?,
                cwd: text("cwd")?.map(|c| c.value.into()),
            }
        }
        (None, Some(url)) => {
            for field in ["args", "env", "cwd"] {
                if let Some(node) = get(table, field) {
                    return Err(doc.inconsistent(
                        &node.span,
                        &key(field),
                        "belongs to a stdio server (`command`), not an http one (`url`)".into(),
                    ));
                }
            }
            if let Err(found) = super::check_url(&url.value) {
                return Err(ConfigError::InvalidValue {
                    at: super::Location::File {
                        path: doc.path.to_path_buf(),
                        line: url.line,
                    },
                    key: key("url"),
                    expected: super::URL_EXPECTED.into(),
                    found,
                });
            }
            Transport::Http {
                url: url.value,
                headers: map("headers")?,
                bearer_token_env_var: text("bearer_token_env_var")?.map(|v| v.value),
            }
        }
        (Some(_), Some(url)) => {
            return Err(ConfigError::Inconsistent {
                at: super::Location::File {
                    path: doc.path.to_path_buf(),
                    line: url.line,
                },
                key: key("url"),
                message: "a server has either `command` (stdio) or `url` (http), not both".into(),
            })
        }
        (None, None) => {
            return Err(doc.inconsistent(
                &(offset..offset),
                &prefix,
                "needs `command` (stdio) or `url` (http)".into(),
            ))
        }
    };
    let mut server = McpServer::new(
        name.to_owned(),
        transport,
        Scope::Settings,
        doc.path.display().to_string(),
    );
    server.line = doc.line(&(offset..offset));
    if let Some(node) = get(table, "enabled") {
        server.enabled = doc.boolean(&key("enabled"), node)?.value;
    }
    for (field, slot) in [
        ("startup_timeout_sec", &mut server.startup_timeout_ms),
        ("tool_timeout_sec", &mut server.tool_timeout_ms),
    ] {
        if let Some(node) = get(table, field) {
            *slot = seconds_ms(doc, &key(field), node)?;
        }
    }
    server.enabled_tools = strings("enabled_tools")?;
    server.disabled_tools = strings("disabled_tools")?.unwrap_or_default();
    if let Some(node) = get(table, "approval") {
        let word = doc.string(&key("approval"), node)?;
        server.approval = match word.value.as_str() {
            "ask" => Approval::Ask,
            "policy" => Approval::Policy,
            _ => {
                return Err(doc.invalid(
                    &node.span,
                    &key("approval"),
                    "\"ask\" or \"policy\"",
                    format!("{:?}", word.value),
                ))
            }
        };
    }
    Ok(server)
}

/// Seconds (an integer or a float, as codex writes them) as positive milliseconds.
fn seconds_ms(doc: &Doc<'_>, key: &str, node: &Node) -> Result<u64, ConfigError> {
    let ms = match node.value {
        Value::Integer(n) if n > 0 => u64::try_from(n).ok().and_then(|n| n.checked_mul(1000)),
        Value::Float(x) if x.is_finite() && x > 0.0 && x < 1e12 => {
            // In range: positive and below 2^53 ms.
            Some((x * 1000.0).ceil() as u64)
        }
        _ => None,
    };
    ms.ok_or_else(|| {
        doc.invalid(
            &node.span,
            key,
            "a positive number of seconds",
            super::reader::found(&node.value),
        )
    })
}
