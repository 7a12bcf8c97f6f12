//! ACP `mcpServers` entries as the host's [`ClientMcpServer`]s: stdio and Streamable HTTP
//! (`sse` is not advertised and is refused).

use crate::host::{ClientMcpServer, ClientMcpTransport};
use crate::rpc::RpcError;
use serde::Deserialize;
use serde_json::Value;

/// The longest server name dsh accepts (the `<server>` of `mcp__<server>__<tool>`).
const MAX_NAME_CHARS: usize = 32;

#[derive(Deserialize)]
struct Pair {
    name: String,
    value: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Entry {
    Http {
        #[serde(rename = "type")]
        kind: String,
        name: String,
        url: String,
        #[serde(default)]
        headers: Vec<Pair>,
    },
    Stdio {
        name: String,
        command: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: Vec<Pair>,
    },
}

/// `name` in dsh's server-name alphabet: other characters become `_`, cut to 32.
fn server_name(name: &str) -> String {
    let mapped: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME_CHARS)
        .collect();
    if mapped.is_empty() {
        "client".to_owned()
    } else {
        mapped
    }
}

fn pairs(pairs: Vec<Pair>) -> Vec<(String, String)> {
    pairs.into_iter().map(|p| (p.name, p.value)).collect()
}

/// Converts and checks the client's list; two entries with one name are refused.
pub fn client_servers(entries: &[Value]) -> Result<Vec<ClientMcpServer>, RpcError> {
    let mut servers: Vec<ClientMcpServer> = Vec::new();
    for entry in entries {
        let entry: Entry = serde_json::from_value(entry.clone()).map_err(|_| {
            RpcError::invalid_params(format!("mcpServers: not an MCP server entry: {entry}"))
        })?;
        let server = match entry {
            Entry::Http {
                kind,
                name,
                url,
                headers,
            } => {
                if kind != "http" {
                    return Err(RpcError::invalid_params(format!(
                        "mcpServers: the {kind:?} transport is not supported (use stdio or http)"
                    )));
                }
                ClientMcpServer {
                    name: server_name(&name),
                    transport: ClientMcpTransport::Http {
                        url,
                        headers: pairs(headers),
                    },
                }
            }
            Entry::Stdio {
                name,
                command,
                args,
                env,
            } => ClientMcpServer {
                name: server_name(&name),
                transport: ClientMcpTransport::Stdio {
                    command,
                    args,
                    env: pairs(env),
                },
            },
        };
        if servers.iter().any(|s| s.name == server.name) {
            return Err(RpcError::invalid_params(format!(
                "mcpServers: two servers are named {:?}",
                server.name
            )));
        }
        servers.push(server);
    }
    Ok(servers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stdio_and_http_entries_convert_and_sse_is_refused() {
        let servers = client_servers(&[
            json!({"name": "My Files", "command": "fs", "args": ["."], "env": [{"name": "A", "value": "1"}]}),
            json!({"type": "http", "name": "web", "url": "http://127.0.0.1:1/mcp", "headers": []}),
        ])
        .unwrap();
        assert_eq!(
            servers,
            vec![
                ClientMcpServer {
                    name: "My_Files".into(),
                    transport: ClientMcpTransport::Stdio {
                        command: "fs".into(),
                        args: vec![".".into()],
                        env: vec![("A".into(), "1".into())],
                    },
                },
                ClientMcpServer {
                    name: "web".into(),
                    transport: ClientMcpTransport::Http {
                        url: "http://127.0.0.1:1/mcp".into(),
                        headers: vec![],
                    },
                },
            ]
        );
        let sse = client_servers(&[
            json!({"type": "sse", "name": "s", "url": "http://x", "headers": []}),
        ]);
        assert_eq!(
            sse.unwrap_err().message,
            "Invalid params: mcpServers: the \"sse\" transport is not supported (use stdio or http)"
        );
        let twice = client_servers(&[
            json!({"name": "a", "command": "x"}),
            json!({"name": "a", "command": "y"}),
        ]);
        assert!(twice.is_err());
    }
}
