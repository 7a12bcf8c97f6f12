//! One live connection: connecting over either transport, listing tools, calling one.

use crate::config::{McpServerConfig, McpTransport};
use crate::stdio::{self, StdioChild};
use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientCapabilities, ClientConfig,
    ClientNotification, ClientRequest, Implementation, PaginatedRequestParams, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService, ServiceError};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Pages of `tools/list` followed before the list is refused as endless.
const MAX_TOOL_PAGES: usize = 1000;
/// How long a closed connection may take to report closed.
pub(crate) const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// The client side rmcp drives: our identity, and `tools/list_changed` turned into a wake-up.
pub(crate) struct Handler {
    pub(crate) list_changed: Arc<Notify>,
}

impl ClientHandler for Handler {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.list_changed.notify_one();
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("dsh-mcp-client", "0.0.1"),
        )
    }
}

/// A connected server.
pub(crate) struct Connection {
    pub(crate) peer: Peer<RoleClient>,
    stop: Option<rmcp::service::RunningServiceCancellationToken>,
    /// Fires when the service loop ended (transport closed or stopped).
    pub(crate) closed: CancellationToken,
    pub(crate) child: Option<StdioChild>,
}

/// A connection failure, as one line.
pub(crate) type ConnectError = String;

/// Connects and initializes (the caller bounds it with the startup timeout).
pub(crate) async fn connect(
    config: &McpServerConfig,
    list_changed: Arc<Notify>,
) -> Result<Connection, ConnectError> {
    let handler = Handler { list_changed };
    match &config.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let spawned = stdio::spawn(command, args, env, cwd.as_ref())
                .map_err(|error| format!("cannot start `{command}`: {error}"))?;
            let mut child = spawned.child;
            match handler.serve((spawned.stdout, spawned.stdin)).await {
                Ok(running) => Ok(started(running, Some(child))),
                Err(error) => {
                    // Give a dying server a moment so its exit status and last words count.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let mut message = format!("initialize failed: {error}");
                    if let Some(status) = child.exit_status() {
                        message = format!("the server exited during initialize ({status})");
                    }
                    if let Some(line) = child.stderr.last_line() {
                        message.push_str(&format!("; stderr: {line}"));
                    }
                    child.shutdown().await;
                    Err(message)
                }
            }
        }
        McpTransport::Http {
            url,
            headers,
            bearer_token_env_var,
        } => {
            use rmcp::transport::streamable_http_client::{
                StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
            };
            let client = crate::http::client(headers)?;
            let mut transport_config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            if let Some(var) = bearer_token_env_var {
                let token = std::env::var(var)
                    .map_err(|_| format!("bearer token variable `{var}` is not set"))?;
                transport_config = transport_config.auth_header(token);
            }
            let transport = StreamableHttpClientTransport::with_client(client, transport_config);
            let running = handler
                .serve(transport)
                .await
                .map_err(|error| format!("initialize failed: {error}"))?;
            Ok(started(running, None))
        }
    }
}

fn started(running: RunningService<RoleClient, Handler>, child: Option<StdioChild>) -> Connection {
    let peer = running.peer().clone();
    let stop = running.cancellation_token();
    let closed = CancellationToken::new();
    let done = closed.clone();
    tokio::spawn(async move {
        let _ = running.waiting().await;
        done.cancel();
    });
    Connection {
        peer,
        stop: Some(stop),
        closed,
        child,
    }
}

impl Connection {
    /// Stops the service, waits (bounded) for it to report closed, then ends the process.
    /// Returns `false` when the close never came.
    pub(crate) async fn close(mut self) -> bool {
        if let Some(stop) = self.stop.take() {
            stop.cancel();
        }
        let closed = tokio::time::timeout(CLOSE_WAIT, self.closed.cancelled())
            .await
            .is_ok();
        if let Some(child) = self.child.take() {
            child.shutdown().await;
        }
        closed
    }

    /// The server's stderr tail, for stdio servers.
    pub(crate) fn stderr_line(&self) -> Option<String> {
        self.child.as_ref().and_then(|c| c.stderr.last_line())
    }
}

/// Every page of `tools/list`, each tool as raw JSON.
pub(crate) async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<Value>, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_TOOL_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let page = peer
            .list_tools(Some(params))
            .await
            .map_err(|error| format!("tools/list failed: {}", error_text(&error)))?;
        let page =
            serde_json::to_value(&page).map_err(|error| format!("tools/list result: {error}"))?;
        if let Some(list) = page.get("tools").and_then(Value::as_array) {
            tools.extend(list.iter().cloned());
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) if !next.is_empty() => cursor = Some(next.to_owned()),
            _ => return Ok(tools),
        }
    }
    Err(format!(
        "tools/list returned more than {MAX_TOOL_PAGES} pages"
    ))
}

/// How a call ended without a result.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum CallError {
    /// The message after `Error: `.
    Failed(String),
    /// The caller's signal fired; the server was sent `notifications/cancelled`.
    Aborted,
}

/// One `tools/call`, bounded by `timeout` and `cancel`; either sends the server
/// `notifications/cancelled`. The result comes back as raw JSON.
pub(crate) async fn call_tool(
    peer: &Peer<RoleClient>,
    raw: &str,
    arguments: Map<String, Value>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Value, CallError> {
    let params = CallToolRequestParams::new(raw.to_owned()).with_arguments(arguments);
    let request = ClientRequest::CallToolRequest(rmcp::model::Request::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
        .await
        .map_err(|error| CallError::Failed(error_text(&error)))?;
    let id = handle.id.clone();
    let response = tokio::select! {
        response = handle.await_response() => response,
        () = cancel.cancelled() => {
            let note = CancelledNotificationParam::new(Some(id), Some("tool call aborted".into()));
            let _ = peer
                .send_notification(ClientNotification::CancelledNotification(
                    rmcp::model::Notification::new(note),
                ))
                .await;
            return Err(CallError::Aborted);
        }
    };
    match response {
        Ok(ServerResult::CallToolResult(result)) => serde_json::to_value(&result)
            .map_err(|error| CallError::Failed(format!("invalid tools/call result: {error}"))),
        Ok(other) => Err(CallError::Failed(format!(
            "unexpected reply to tools/call: {}",
            serde_json::to_value(&other)
                .map(|v| v.to_string())
                .unwrap_or_default()
        ))),
        Err(error) => Err(CallError::Failed(error_text(&error))),
    }
}

/// The model-facing text of an rmcp error, in the original's wording.
pub(crate) fn error_text(error: &ServiceError) -> String {
    match error {
        ServiceError::Timeout { .. } => "MCP error -32001: Request timed out".into(),
        ServiceError::TransportClosed => "MCP error -32000: Connection closed".into(),
        ServiceError::McpError(data) => format!("MCP error {}: {}", data.code.0, data.message),
        other => other.to_string(),
    }
}
