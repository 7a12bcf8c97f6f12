//! [`McpPlugin`] (row `mcp`): starts every configured server in the background.

use crate::config::{McpApproval, McpPluginConfig};
use crate::status::{McpServerStatus, McpState, McpStatusBoard};
use crate::supervisor::{AskNames, Supervisor};
use dsh_kernel::{BoxError, Context, Plugin, ServiceName};
use dsh_tools::{PreExecute, PreExecuteDecision, ToolRuntime};
use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, RwLock};
use tokio_util::sync::CancellationToken;

/// Mounts the [`McpStatusBoard`] service and one supervised connection per enabled server.
///
/// Activation never waits for a server: each starts on its own task and its tools appear (a
/// `tools/change`) when it is ready. A server that fails shows up as one notice on the board.
#[derive(Debug)]
pub struct McpPlugin;

impl Plugin for McpPlugin {
    const NAME: &'static str = "mcp";
    type Config = McpPluginConfig;

    fn requires() -> Vec<ServiceName> {
        vec![ServiceName::of::<ToolRuntime>()]
    }

    fn apply(ctx: &Context, config: McpPluginConfig) -> Result<(), BoxError> {
        let tools = ctx.require::<ToolRuntime>()?;
        let board = Arc::new(McpStatusBoard::new());
        ctx.provide(board.clone())?.forget();
        let ask: AskNames = Arc::new(RwLock::new(HashSet::new()));
        if config
            .servers
            .iter()
            .any(|s| s.approval == McpApproval::Ask)
        {
            let names = ask.clone();
            ctx.on_waterfall::<PreExecute, _, _>(move |args, next| {
                let asks = names
                    .read()
                    .unwrap_or_else(|p| p.into_inner())
                    .contains(args.exec.name());
                async move {
                    let inner = next.run().await?;
                    Ok(match inner {
                        PreExecuteDecision::Allow if asks => PreExecuteDecision::Ask {
                            reason: Some(
                                "this MCP server is configured with approval = \"ask\"".into(),
                            ),
                        },
                        other => other,
                    })
                }
            })?
            .forget();
        }
        let stop = CancellationToken::new();
        let on_unload = stop.clone();
        ctx.effect("mcp servers", move || on_unload.cancel())?
            .forget();
        let mut seen = BTreeSet::new();
        let mut runtime = None;
        for server in config.servers {
            let mut status = McpServerStatus {
                name: server.name.clone(),
                source: server.source.clone(),
                transport: server.transport.kind().to_owned(),
                target: server.transport.describe(),
                state: McpState::Starting,
                tool_count: 0,
                last_error: None,
                gave_up: false,
            };
            let invalid = match server.validate() {
                Err(error) => Some(error),
                Ok(()) if !seen.insert(server.name.clone()) => {
                    Some("another server already has this name".to_owned())
                }
                Ok(()) => None,
            };
            if let Some(error) = invalid {
                status.state = McpState::Failed;
                status.last_error = Some(error.clone());
                board.insert(status);
                board.notice(
                    &server.name,
                    format!("MCP server \"{}\" is not started: {error}", server.name),
                );
                continue;
            }
            if !server.enabled {
                status.state = McpState::Disabled;
                board.insert(status);
                continue;
            }
            board.insert(status);
            let handle = match &runtime {
                Some(handle) => handle,
                None => runtime
                    .insert(tokio::runtime::Handle::try_current().map_err(|_| {
                        "the mcp plugin needs a tokio runtime to start its servers"
                    })?),
            };
            let supervisor = Supervisor::new(
                server,
                ctx.clone(),
                tools.clone(),
                board.clone(),
                ask.clone(),
            );
            handle.spawn(supervisor.run(stop.clone()));
        }
        Ok(())
    }
}
