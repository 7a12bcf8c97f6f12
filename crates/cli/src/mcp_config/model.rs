//! The resolved server model. Its JSON is exactly the `mcp` row's config
//! (`dsh_mcp::McpPluginConfig`: camelCase, `transport` tagged by `type`), so handing the list to
//! the row is a plain serialisation.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// Default time a server has to connect, initialize and list its tools.
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 10_000;
/// Default timeout of one `tools/call`.
pub const DEFAULT_TOOL_TIMEOUT_MS: u64 = 60_000;
/// Longest server name (the `<server>` of `mcp__<server>__<tool>`).
pub const MAX_NAME_CHARS: usize = 32;

/// Which configuration layer a server came from; a name in a higher layer replaces the
/// same name below it (settings.toml > workspace `.mcp.json` > `$DSH_HOME/mcp.json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// `$DSH_HOME/mcp.json`.
    User,
    /// `<workspace>/.mcp.json` (needs workspace trust).
    Workspace,
    /// `[mcp_servers.NAME]` in `$DSH_HOME/settings.toml`.
    Settings,
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scope::User => "user",
            Scope::Workspace => "workspace",
            Scope::Settings => "settings",
        })
    }
}

/// One configured server.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServer {
    /// `^[A-Za-z0-9_-]{1,32}$`.
    pub name: String,
    pub transport: Transport,
    /// A disabled server is listed but never started.
    pub enabled: bool,
    pub startup_timeout_ms: u64,
    pub tool_timeout_ms: u64,
    /// When set, only these raw tool names are registered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    /// Raw tool names never registered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disabled_tools: Vec<String>,
    pub approval: Approval,
    /// The file the server was configured in.
    pub source: String,
    /// The layer of [`Self::source`]; not part of the row config.
    #[serde(skip)]
    pub scope: Scope,
    /// The line of the server's table or key in [`Self::source`].
    #[serde(skip)]
    pub line: u32,
}

impl McpServer {
    /// A server with every default.
    pub fn new(name: String, transport: Transport, scope: Scope, source: String) -> Self {
        McpServer {
            name,
            transport,
            enabled: true,
            startup_timeout_ms: DEFAULT_STARTUP_TIMEOUT_MS,
            tool_timeout_ms: DEFAULT_TOOL_TIMEOUT_MS,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            approval: Approval::Policy,
            source,
            scope,
            line: 1,
        }
    }
}

/// How a server is reached.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum Transport {
    /// A child process (no shell) speaking JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        bearer_token_env_var: Option<String>,
    },
}

impl Transport {
    /// `stdio` or `http`.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }

    /// The command line or the URL, on one line.
    pub fn describe(&self) -> String {
        match self {
            Transport::Stdio { command, args, .. } => {
                let mut line = command.clone();
                for arg in args {
                    line.push(' ');
                    line.push_str(arg);
                }
                line
            }
            Transport::Http { url, .. } => url.clone(),
        }
    }
}

/// Whether every call of a server asks first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    /// The session's approval policy, like any tool that is not sandboxed.
    #[default]
    Policy,
    /// Every call asks.
    Ask,
}

/// A problem in one MCP configuration file: where, which key, what. The server (or the file)
/// it names is skipped; everything else still loads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpProblem {
    pub path: PathBuf,
    pub line: u32,
    /// The full key (`mcpServers.web.type`, `mcp_servers.fs.args`); empty for a syntax error.
    pub key: String,
    pub message: String,
}

impl fmt::Display for McpProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: ", self.path.display(), self.line)?;
        if !self.key.is_empty() {
            write!(f, "`{}`: ", self.key)?;
        }
        f.write_str(&self.message)
    }
}

/// Whether `name` may be a server name as written.
pub fn is_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A `mcpServers` key as a server name: characters outside `[A-Za-z0-9_-]` become `_`, and
/// the result is cut to 32 characters (Claude Code and Cursor allow names dsh cannot use in a
/// tool name).
pub fn sanitize_name(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME_CHARS)
        .collect()
}
