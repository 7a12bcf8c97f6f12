//! The `mcp` row's configuration: one resolved [`McpServerConfig`] per server.
//!
//! The CLI resolves every user-facing form (settings.toml, `mcp.json`, `.mcp.json`) into this
//! list; the plugin only runs what it is given. JSON is camelCase.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Default time a server has to connect, initialize and list its tools.
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 10_000;
/// Default timeout of one `tools/call`.
pub const DEFAULT_TOOL_TIMEOUT_MS: u64 = 60_000;

/// The `mcp` row's config. `null` or `{}` means no servers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct McpPluginConfig {
    /// The servers, in the order they start.
    pub servers: Vec<McpServerConfig>,
}

/// One MCP server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServerConfig {
    /// `^[A-Za-z0-9_-]{1,32}$`; the `<server>` of `mcp__<server>__<tool>`.
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// A disabled server is listed (status `disabled`) but never started.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Time for connect + initialize + the first tool listing of each attempt.
    #[serde(default = "default_startup_timeout")]
    pub startup_timeout_ms: u64,
    /// Timeout of one `tools/call` (the server receives `notifications/cancelled` when it runs out).
    #[serde(default = "default_tool_timeout")]
    pub tool_timeout_ms: u64,
    /// When set, only these raw tool names are registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    /// Raw tool names never registered (applied after `enabled_tools`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disabled_tools: Vec<String>,
    /// `ask`: every call of this server asks the person first.
    #[serde(default)]
    pub approval: McpApproval,
    /// Where the server was configured (a file path), for `dsh mcp list`; informational.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// Reconnect policy (spec §1.7 defaults).
    #[serde(default)]
    pub reconnect: ReconnectPolicy,
}

fn yes() -> bool {
    true
}
fn default_startup_timeout() -> u64 {
    DEFAULT_STARTUP_TIMEOUT_MS
}
fn default_tool_timeout() -> u64 {
    DEFAULT_TOOL_TIMEOUT_MS
}

impl McpServerConfig {
    /// A server with every default: enabled, 10 s startup, 60 s calls, all tools, policy approval.
    pub fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        McpServerConfig {
            name: name.into(),
            transport,
            enabled: true,
            startup_timeout_ms: DEFAULT_STARTUP_TIMEOUT_MS,
            tool_timeout_ms: DEFAULT_TOOL_TIMEOUT_MS,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            approval: McpApproval::Policy,
            source: String::new(),
            reconnect: ReconnectPolicy::default(),
        }
    }

    /// Whether the raw tool `raw` is registered under `enabled_tools` / `disabled_tools`.
    pub fn allows_tool(&self, raw: &str) -> bool {
        let enabled = self
            .enabled_tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == raw));
        enabled && !self.disabled_tools.iter().any(|t| t == raw)
    }
}

/// How a server is reached.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum McpTransport {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        /// The executable, spawned directly (no shell).
        command: String,
        /// Passed verbatim.
        #[serde(default)]
        args: Vec<String>,
        /// Set over the scrubbed parent environment (explicit values win).
        #[serde(default)]
        env: BTreeMap<String, String>,
        /// Working directory; `None` = dsh's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// The MCP endpoint.
        url: String,
        /// Sent on every request.
        #[serde(default)]
        headers: BTreeMap<String, String>,
        /// Name of an environment variable holding a bearer token for `Authorization`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bearer_token_env_var: Option<String>,
    },
}

impl McpTransport {
    /// `stdio` or `http`, as `dsh mcp list` shows it.
    pub fn kind(&self) -> &'static str {
        match self {
            McpTransport::Stdio { .. } => "stdio",
            McpTransport::Http { .. } => "http",
        }
    }

    /// One line: the command line or the URL.
    pub fn describe(&self) -> String {
        match self {
            McpTransport::Stdio { command, args, .. } => {
                let mut line = command.clone();
                for arg in args {
                    line.push(' ');
                    line.push_str(arg);
                }
                line
            }
            McpTransport::Http { url, .. } => url.clone(),
        }
    }
}

/// Whether a server's calls ask first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpApproval {
    /// Follow the session's approval policy, like any tool that is not sandboxed.
    #[default]
    Policy,
    /// Every call asks.
    Ask,
}

/// Reconnect and backoff (spec extensions §1.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ReconnectPolicy {
    /// `false`: a lost server stays down (its tools stay registered and fail).
    pub enabled: bool,
    /// First delay; doubles per consecutive failure.
    pub initial_delay_ms: u64,
    /// Delay cap, and the uptime after which the failure budget resets.
    pub max_delay_ms: u64,
    /// Consecutive failures before giving up (the tools are then unregistered).
    pub max_attempts: u32,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        ReconnectPolicy {
            enabled: true,
            initial_delay_ms: 500,
            max_delay_ms: 30_000,
            max_attempts: 10,
        }
    }
}

/// The JavaScript timer limit the original validates against.
const MAX_TIMER_MS: u64 = 2_147_483_647;

impl ReconnectPolicy {
    /// Checks the bounds: delays in 1..=2147483647 with initial ≤ max, at least one attempt.
    pub fn validate(&self) -> Result<(), String> {
        if self.initial_delay_ms == 0 || self.initial_delay_ms > MAX_TIMER_MS {
            return Err("reconnect.initialDelayMs must be in 1..=2147483647".into());
        }
        if self.max_delay_ms == 0 || self.max_delay_ms > MAX_TIMER_MS {
            return Err("reconnect.maxDelayMs must be in 1..=2147483647".into());
        }
        if self.initial_delay_ms > self.max_delay_ms {
            return Err("reconnect.initialDelayMs must not exceed reconnect.maxDelayMs".into());
        }
        if self.max_attempts == 0 {
            return Err("reconnect.maxAttempts must be at least 1".into());
        }
        Ok(())
    }

    /// The delay before reconnect attempt `failed_attempts` (1-based):
    /// `min(max, initial * 2^(n-1))`.
    pub fn delay_ms(&self, failed_attempts: u32) -> u64 {
        let exponent = failed_attempts.saturating_sub(1).min(62);
        let factor = 1u64 << exponent;
        self.initial_delay_ms
            .saturating_mul(factor)
            .min(self.max_delay_ms)
    }
}

impl McpServerConfig {
    /// The checks the plugin runs before starting the server.
    pub fn validate(&self) -> Result<(), String> {
        if !crate::naming::is_valid_server_name(&self.name) {
            return Err(format!(
                "server name `{}` must match ^[A-Za-z0-9_-]{{1,32}}$",
                self.name
            ));
        }
        if self.tool_timeout_ms == 0 {
            return Err("toolTimeoutMs must be positive".into());
        }
        if self.startup_timeout_ms == 0 {
            return Err("startupTimeoutMs must be positive".into());
        }
        match &self.transport {
            McpTransport::Stdio { command, .. } if command.trim().is_empty() => {
                return Err("stdio transport needs a command".into())
            }
            McpTransport::Http { url, .. } => {
                let parsed = reqwest::Url::parse(url)
                    .map_err(|error| format!("invalid url `{url}`: {error}"))?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err(format!("url `{url}` must be http or https"));
                }
            }
            McpTransport::Stdio { .. } => {}
        }
        self.reconnect.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn default_delays_follow_the_formula() {
        let policy = ReconnectPolicy::default();
        let delays: Vec<u64> = (1..=10).map(|n| policy.delay_ms(n)).collect();
        assert_eq!(
            delays,
            [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000, 30000]
        );
        assert_eq!(policy.delay_ms(500), 30_000);
    }

    #[test]
    fn camel_case_json_with_defaults() {
        let config: McpPluginConfig = serde_json::from_value(json!({"servers": [
            {"name": "fs", "transport": {"type": "stdio", "command": "srv", "args": ["/r"]}},
            {"name": "web", "transport": {"type": "http", "url": "http://127.0.0.1:1/mcp",
              "bearerTokenEnvVar": "T"}, "approval": "ask", "toolTimeoutMs": 5}
        ]}))
        .unwrap();
        assert_eq!(config.servers[0].tool_timeout_ms, 60_000);
        assert_eq!(config.servers[0].startup_timeout_ms, 10_000);
        assert_eq!(config.servers[1].approval, McpApproval::Ask);
        assert!(config.servers.iter().all(|s| s.validate().is_ok()));
        assert!(
            serde_json::from_value::<McpPluginConfig>(json!({"servers": [
            {"name": "x", "transport": {"type": "sse", "url": "u"}}]}))
            .is_err()
        );
    }

    #[test]
    fn validation_and_filters() {
        let mut server = McpServerConfig::new(
            "a.b",
            McpTransport::Stdio {
                command: "x".into(),
                args: vec![],
                env: BTreeMap::new(),
                cwd: None,
            },
        );
        assert!(server.validate().unwrap_err().contains("a.b"));
        server.name = "ab".into();
        server.reconnect.initial_delay_ms = 40_000;
        assert!(server.validate().is_err());
        server.reconnect = ReconnectPolicy::default();
        server.enabled_tools = Some(vec!["a".into(), "b".into()]);
        server.disabled_tools = vec!["b".into()];
        assert!(server.allows_tool("a"));
        assert!(!server.allows_tool("b"));
        assert!(!server.allows_tool("c"));
    }
}
