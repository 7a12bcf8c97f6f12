//! The MCP client: each configured server's tools as dsh tools named `mcp__<server>__<tool>`.
//!
//! | module | what |
//! |---|---|
//! | [`config`] | [`McpPluginConfig`] (row `mcp`), [`McpServerConfig`], [`McpTransport`], reconnect policy |
//! | [`naming`] | public tool names: sanitising and the hash suffix |
//! | [`result`] | `tools/call` results to the canonical value and the model's projection |
//! | [`status`] | [`McpStatusBoard`]: per-server status and the failure notices |
//! | [`stdio`] | spawning a stdio server: scrubbed env, process group, bounded stderr |
//! | `client` | one rmcp connection over stdio or Streamable HTTP; list and call |
//! | `supervisor` | background start, tool sync, reconnect with backoff, giving up |
//! | [`tool`] | [`McpTool`]: one server tool behind the `Tool` trait |
//! | [`plugin`] | [`McpPlugin`]: mounts the board and starts the servers |
//!
//! Servers run outside the sandbox, with the person's rights: they are trusted code (see
//! docs/mcp.md).

mod client;
pub mod config;
mod http;
pub mod naming;
pub mod plugin;
pub mod result;
pub mod status;
pub mod stdio;
mod supervisor;
pub mod tool;

pub use config::{
    McpApproval, McpPluginConfig, McpServerConfig, McpTransport, ReconnectPolicy,
    DEFAULT_STARTUP_TIMEOUT_MS, DEFAULT_TOOL_TIMEOUT_MS,
};
pub use naming::public_tool_name;
pub use plugin::McpPlugin;
pub use status::{McpNotice, McpServerStatus, McpState, McpStatusBoard};
pub use tool::McpTool;
