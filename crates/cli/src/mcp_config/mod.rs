//! MCP server configuration in every form people already have, resolved into the list the
//! `mcp` row runs (docs/mcp.md, "Configuration").
//!
//! | Layer | File | Form |
//! |---|---|---|
//! | settings | `$DSH_HOME/settings.toml` | `[mcp_servers.NAME]` (codex's keys + `approval`) |
//! | workspace | `<workspace>/.mcp.json` | `mcpServers` JSON; only in a trusted workspace |
//! | user | `$DSH_HOME/mcp.json` | `mcpServers` JSON |
//!
//! A server name in a higher layer replaces the same name below it (settings > workspace >
//! user). A broken file or entry is one [`McpProblem`] (file, line, key) and is skipped;
//! nothing here stops dsh.

mod edit;
mod expand;
pub mod json;
mod model;

pub use edit::{add_server, remove_server, EditError, NewServer};
pub use expand::expand;
pub use model::{
    is_server_name, sanitize_name, Approval, McpProblem, McpServer, Scope, Transport,
    DEFAULT_STARTUP_TIMEOUT_MS, DEFAULT_TOOL_TIMEOUT_MS, MAX_NAME_CHARS,
};

use crate::config::{Env, Settings};
use crate::trust::TrustDecision;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The user-level `mcpServers` file inside `$DSH_HOME`.
pub const USER_FILE: &str = "mcp.json";
/// The workspace's `mcpServers` file.
pub const WORKSPACE_FILE: &str = ".mcp.json";
/// The largest JSON configuration file read.
pub const MCP_MAX_BYTES: u64 = 1 << 20;

/// The resolved servers and what was skipped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpConfig {
    /// The servers the `mcp` row gets, in precedence order (settings, workspace, user; file
    /// order within each).
    pub servers: Vec<McpServer>,
    /// Servers hidden by a same-named server in a higher layer: `(hidden, winner's source)`.
    pub shadowed: Vec<(McpServer, String)>,
    /// One per skipped file or entry.
    pub problems: Vec<McpProblem>,
    /// The workspace's `.mcp.json` when it exists but was not read (workspace not trusted).
    pub untrusted_file: Option<PathBuf>,
}

impl McpConfig {
    /// The `mcp` row's config (`dsh_mcp::McpPluginConfig`'s JSON).
    pub fn row_config(&self) -> Value {
        json!({ "servers": self.servers })
    }
}

/// Resolves the three layers. `trust` decides whether the workspace's `.mcp.json` is read.
pub fn resolve(
    settings: &Settings,
    workspace: &Path,
    trust: TrustDecision,
    env: &dyn Env,
) -> McpConfig {
    let mut config = McpConfig {
        problems: settings.mcp_problems.clone(),
        ..McpConfig::default()
    };
    let mut layers = vec![settings.mcp_servers.clone()];
    let workspace_file = workspace.join(WORKSPACE_FILE);
    if trust.allows_project_files() {
        layers.push(read_json(
            &workspace_file,
            Scope::Workspace,
            env,
            &mut config,
        ));
    } else if workspace_file.exists() {
        config.untrusted_file = Some(workspace_file);
    }
    let user_file = settings.home.value.join(USER_FILE);
    layers.push(read_json(&user_file, Scope::User, env, &mut config));
    for layer in layers {
        for server in layer {
            match config.servers.iter().find(|s| s.name == server.name) {
                Some(winner) => {
                    let source = winner.source.clone();
                    config.shadowed.push((server, source));
                }
                None => config.servers.push(server),
            }
        }
    }
    config
}

fn read_json(path: &Path, scope: Scope, env: &dyn Env, config: &mut McpConfig) -> Vec<McpServer> {
    match dsh_store::read_regular_text(path, MCP_MAX_BYTES) {
        Ok(text) => {
            let file = json::read(path, &text, scope, env);
            config.problems.extend(file.problems);
            file.servers
        }
        Err(error) if error.is_not_found() => Vec::new(),
        Err(error) => {
            config.problems.push(McpProblem {
                path: path.to_path_buf(),
                line: 1,
                key: String::new(),
                message: format!("cannot read the file ({}); it is skipped", error.reason()),
            });
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests;
