//! What a protocol server needs from the program that embeds it: agents for a workspace.
//!
//! The `dsh` binary implements [`Host`] over its boot code (settings, the plugin
//! composition, trust, sandbox and approval), so an ACP or SDK session runs exactly like a
//! CLI session: this crate never builds a composition of its own.

use dsh_agent::AgentHandle;
use dsh_kernel::Context;
use dsh_protocol::SessionId;
use futures_util::future::BoxFuture;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why the host could not do what was asked; the message is shown to the client.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The workspace could not be booted (bad settings, a missing key, an unreadable
    /// directory).
    #[error("{0}")]
    Boot(String),
    /// No stored session has this id.
    #[error("no stored session has the id {0}")]
    NotFound(String),
    /// Creating or resuming the agent failed.
    #[error("{0}")]
    Agent(String),
}

impl HostError {
    /// A stable code for logs and tests.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Boot(_) => "host_boot",
            Self::NotFound(_) => "session_not_found",
            Self::Agent(_) => "host_agent",
        }
    }
}

/// Per-agent choices that differ from the configured ones (the SDK's `initialize`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentChoice {
    /// A provider route of the settings.
    pub provider: Option<String>,
    pub model: Option<String>,
    /// The output cap of each model request.
    pub max_tokens: Option<u64>,
}

/// An MCP server the client asked a session to use (ACP `mcpServers`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientMcpServer {
    /// Already in dsh's server-name alphabet (`[A-Za-z0-9_-]{1,32}`).
    pub name: String,
    pub transport: ClientMcpTransport,
}

/// How to reach a client's MCP server.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ClientMcpTransport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// Boots workspaces.
pub trait Host: Send + Sync + 'static {
    /// The workspace rooted at `cwd` (absolute) with the client's MCP servers besides the
    /// configured ones (a same-named one replaces the configured), booted on first use and
    /// shared afterwards by every session asking for the same; the servers have connected
    /// (or failed) when it resolves.
    fn open<'a>(
        &'a self,
        cwd: &'a Path,
        mcp_servers: &'a [ClientMcpServer],
    ) -> BoxFuture<'a, Result<Arc<dyn Workspace>, HostError>>;

    /// The workspace the process was started in (the SDK runtime's default).
    fn default_cwd(&self) -> PathBuf;

    /// Refuses a choice the settings cannot serve (an unknown provider route).
    fn check_choice(&self, choice: &AgentChoice) -> Result<(), HostError>;

    /// Unloads every workspace (their agents must already be disposed).
    fn shutdown(&self);
}

/// One booted workspace: a plugin composition rooted at a directory.
pub trait Workspace: Send + Sync + 'static {
    /// The canonical workspace directory.
    fn root(&self) -> &Path;

    /// The root context (session events, approvals, skills and subagents live here).
    fn ctx(&self) -> &Context;

    /// A fresh session id in dsh's shape.
    fn new_session_id(&self) -> SessionId;

    /// Creates and publishes an agent on a new session `id`.
    fn create(
        &self,
        id: SessionId,
        choice: &AgentChoice,
    ) -> BoxFuture<'_, Result<AgentHandle, HostError>>;

    /// Loads the stored session `id` (repairing a crashed tail) and publishes an agent on it.
    fn resume(
        &self,
        id: SessionId,
        choice: &AgentChoice,
    ) -> BoxFuture<'_, Result<AgentHandle, HostError>>;
}
