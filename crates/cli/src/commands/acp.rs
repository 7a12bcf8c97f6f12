//! `dsh acp` and `dsh sdk`: the protocol servers of `dsh-acp` on stdin/stdout, hosted on
//! the same boot as every other surface ([`Runtime`]): one runtime per workspace directory a
//! client names, booted on first use with this invocation's settings (flags, environment,
//! settings.toml), so trust, sandbox, approval policy, rules, MCP servers, hooks and skills
//! apply exactly as in `dsh run`.
//!
//! stdout carries protocol frames only; notices go to stderr.

use super::{stderr_line, GlobalArgs};
use crate::app::{AgentStart, AppError, BootOptions, Runtime};
use crate::config::{load, Env, Settings};
use crate::mcp_config::{McpServer, Scope, Transport};
use dsh_acp::{AgentChoice, ClientMcpServer, ClientMcpTransport, Host, HostError, Workspace};
use dsh_agent::{AgentHandle, AgentOptions};
use dsh_kernel::Context;
use dsh_protocol::SessionId;
use futures_util::future::BoxFuture;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// Which server to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Acp,
    Sdk,
}

/// Runs the server until the client closes stdin (or, for the SDK, sends `shutdown`).
pub(super) fn serve(global: &GlobalArgs, env: &dyn Env, protocol: Protocol) -> anyhow::Result<u8> {
    let settings = load(env, &global.overrides())?;
    let options = BootOptions::from_process(global.cwd.clone())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let host = Arc::new(RuntimeHost::new(settings, options));
    runtime.block_on(async move {
        let input = tokio::io::BufReader::new(tokio::io::stdin());
        let output = tokio::io::stdout();
        match protocol {
            Protocol::Acp => dsh_acp::acp::serve(host, input, output).await,
            Protocol::Sdk => dsh_acp::sdk::serve(host, input, output).await,
        }
    })?;
    // Reading stdin goes through a blocking thread that only ends with a line or EOF; after
    // `shutdown` nothing may wait for it.
    runtime.shutdown_background();
    Ok(super::exit::SUCCESS)
}

/// A booted workspace's key: its directory and the client's MCP servers.
type WorkspaceKey = (PathBuf, Vec<ClientMcpServer>);

/// Boots a [`Runtime`] per workspace directory, on demand.
pub struct RuntimeHost {
    settings: Settings,
    boot: BootOptions,
    /// By workspace directory and the client's MCP servers.
    workspaces: Mutex<HashMap<WorkspaceKey, Arc<RuntimeWorkspace>>>,
}

/// A client's server in the configuration's model; its source says where it came from.
fn configured(server: &ClientMcpServer) -> McpServer {
    let transport = match &server.transport {
        ClientMcpTransport::Stdio { command, args, env } => Transport::Stdio {
            command: command.clone(),
            args: args.clone(),
            env: env.iter().cloned().collect(),
            cwd: None,
        },
        ClientMcpTransport::Http { url, headers } => Transport::Http {
            url: url.clone(),
            headers: headers.iter().cloned().collect(),
            bearer_token_env_var: None,
        },
    };
    McpServer::new(
        server.name.clone(),
        transport,
        Scope::Settings,
        "ACP client (session/new mcpServers)".to_owned(),
    )
}

/// Waits until none of `names` is still starting on `ctx`'s MCP board, so the session's
/// first request already offers their tools. Bounded by the startup timeout (a server
/// that hangs is reported failed by then).
async fn servers_started(ctx: &Context, names: &[String]) {
    let Some(board) = ctx.get::<dsh_mcp::McpStatusBoard>() else {
        return;
    };
    let mut changes = board.subscribe();
    let starting = || {
        board
            .servers()
            .iter()
            .any(|s| names.contains(&s.name) && s.state == dsh_mcp::McpState::Starting)
    };
    let wait = async {
        while starting() {
            if changes.changed().await.is_err() {
                return;
            }
        }
    };
    let limit =
        std::time::Duration::from_millis(crate::mcp_config::DEFAULT_STARTUP_TIMEOUT_MS + 1_000);
    let _ = tokio::time::timeout(limit, wait).await;
}

impl RuntimeHost {
    pub fn new(settings: Settings, boot: BootOptions) -> Self {
        Self {
            settings,
            boot,
            workspaces: Mutex::new(HashMap::new()),
        }
    }

    /// The settings every workspace boots with.
    pub(super) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The booted workspace rooted at `root` (`dsh web` reaches its runtime through it).
    pub(super) fn booted(&self, root: &Path) -> Option<Arc<RuntimeWorkspace>> {
        self.workspaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|((dir, _), _)| dir == root)
            .map(|(_, workspace)| workspace.clone())
    }

    fn boot(
        &self,
        cwd: &Path,
        mcp: &[ClientMcpServer],
    ) -> Result<(Arc<RuntimeWorkspace>, bool), HostError> {
        let workspace =
            crate::app::canonical_workspace(cwd).map_err(|e| HostError::Boot(e.to_string()))?;
        let key = (workspace.clone(), mcp.to_vec());
        let mut workspaces = self
            .workspaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(existing) = workspaces.get(&key) {
            return Ok((existing.clone(), false));
        }
        for notice in
            crate::app::workspace_notices(&self.settings, &workspace, &crate::config::ProcessEnv)
        {
            stderr_line(notice);
        }
        let options = BootOptions {
            cwd: workspace.clone(),
            env: self.boot.env.clone(),
        };
        let extra = mcp.iter().map(configured).collect();
        let runtime = Runtime::boot_with_mcp(self.settings.clone(), options, extra)
            .map_err(|e| HostError::Boot(e.to_string()))?;
        for notice in runtime.hook_notices() {
            stderr_line(format_args!("dsh: {notice}"));
        }
        let booted = Arc::new(RuntimeWorkspace {
            ctx: runtime.ctx().clone(),
            root: runtime.workspace().to_path_buf(),
            runtime,
        });
        workspaces.insert(key, booted.clone());
        Ok((booted, true))
    }
}

impl Host for RuntimeHost {
    fn open<'a>(
        &'a self,
        cwd: &'a Path,
        mcp: &'a [ClientMcpServer],
    ) -> BoxFuture<'a, Result<Arc<dyn Workspace>, HostError>> {
        Box::pin(async move {
            let (booted, fresh) = self.boot(cwd, mcp)?;
            if fresh && !mcp.is_empty() {
                let names: Vec<String> = mcp.iter().map(|s| s.name.clone()).collect();
                servers_started(&booted.ctx, &names).await;
            }
            Ok(booted as Arc<dyn Workspace>)
        })
    }

    fn default_cwd(&self) -> PathBuf {
        self.boot.cwd.clone()
    }

    fn check_choice(&self, choice: &AgentChoice) -> Result<(), HostError> {
        match &choice.provider {
            Some(provider) if self.settings.provider(provider).is_none() => Err(HostError::Agent(
                format!("no adapter registered for provider \"{provider}\""),
            )),
            _ => Ok(()),
        }
    }

    fn shutdown(&self) {
        let booted: Vec<_> = self
            .workspaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, w)| w)
            .collect();
        for workspace in booted {
            match Arc::try_unwrap(workspace) {
                Ok(workspace) => workspace.runtime.shutdown(),
                // Still referenced (a task that outlived teardown): unload the plugins anyway.
                Err(shared) => shared.ctx.fiber().dispose(),
            }
        }
    }
}

/// One booted workspace.
pub struct RuntimeWorkspace {
    runtime: Runtime,
    ctx: Context,
    root: PathBuf,
}

impl RuntimeWorkspace {
    pub(super) fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    fn options(&self, choice: &AgentChoice) -> AgentOptions {
        let mut options = self.runtime.agent_options();
        if let Some(provider) = &choice.provider {
            options.provider = Some(provider.clone());
        }
        if let Some(model) = &choice.model {
            options.model = Some(model.clone());
        }
        options.max_tokens = choice.max_tokens;
        options
    }

    fn is_stored(&self, id: &SessionId) -> Result<bool, HostError> {
        let persistence = self.runtime.persistence().ok_or_else(|| {
            HostError::Agent(
                AppError::MissingPart {
                    service: "session store",
                    row: crate::config::PERSISTENCE_ROW,
                }
                .to_string(),
            )
        })?;
        let all = persistence
            .list()
            .map_err(|e| HostError::Agent(e.to_string()))?;
        Ok(all.iter().any(|s| s.id == id.as_str()))
    }
}

impl Workspace for RuntimeWorkspace {
    fn root(&self) -> &Path {
        &self.root
    }

    fn ctx(&self) -> &Context {
        &self.ctx
    }

    fn new_session_id(&self) -> SessionId {
        Runtime::new_session_id()
    }

    fn create(
        &self,
        id: SessionId,
        choice: &AgentChoice,
    ) -> BoxFuture<'_, Result<AgentHandle, HostError>> {
        let options = self.options(choice);
        Box::pin(async move {
            let start = AgentStart {
                session_id: Some(id),
                ..AgentStart::default()
            };
            self.runtime
                .create_agent_with(start, options)
                .await
                .map_err(|e| HostError::Agent(e.to_string()))
        })
    }

    fn resume(
        &self,
        id: SessionId,
        choice: &AgentChoice,
    ) -> BoxFuture<'_, Result<AgentHandle, HostError>> {
        let options = self.options(choice);
        Box::pin(async move {
            if !self.is_stored(&id)? {
                return Err(HostError::NotFound(id.as_str().to_owned()));
            }
            self.runtime
                .resume_agent_with(id, AgentStart::default(), options)
                .await
                .map_err(|e| HostError::Agent(e.to_string()))
        })
    }
}
