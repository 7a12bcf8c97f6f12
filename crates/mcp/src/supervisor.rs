//! The supervised life of one server: background connect, tool sync, re-sync on
//! `tools/list_changed`, reconnect with the spec's backoff, giving up (spec extensions §1.7).

use crate::client::{self, Connection};
use crate::config::{McpApproval, McpServerConfig};
use crate::naming::public_tool_name;
use crate::status::{McpState, McpStatusBoard};
use crate::tool::{input_schema, LivePeer, McpTool};
use dsh_kernel::{Context, Disposer};
use dsh_tools::ToolRuntime;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// How long a lost stdio server's exit may take to be reaped before the notice is written.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_millis(250);

/// Public names of the tools whose server has `approval = "ask"`.
pub(crate) type AskNames = Arc<RwLock<HashSet<String>>>;

pub(crate) struct Supervisor {
    pub(crate) config: McpServerConfig,
    pub(crate) ctx: Context,
    pub(crate) tools: Arc<ToolRuntime>,
    pub(crate) board: Arc<McpStatusBoard>,
    pub(crate) ask: AskNames,
    pub(crate) live: LivePeer,
    /// This generation's registrations, by public name.
    registered: Vec<(String, Disposer)>,
}

/// How a connected period ended.
enum Ended {
    Stopped,
    Lost(String),
}

impl Supervisor {
    pub(crate) fn new(
        config: McpServerConfig,
        ctx: Context,
        tools: Arc<ToolRuntime>,
        board: Arc<McpStatusBoard>,
        ask: AskNames,
    ) -> Self {
        Supervisor {
            config,
            ctx,
            tools,
            board,
            ask,
            live: Arc::new(RwLock::new(None)),
            registered: Vec::new(),
        }
    }

    fn name(&self) -> &str {
        &self.config.name
    }

    fn log_prefix(&self) -> String {
        format!("mcp-client({}): ", self.config.name)
    }

    /// Runs until `stop` fires or the server gives up; always leaves no tool registered when
    /// it returns because of `stop` or a give-up.
    pub(crate) async fn run(mut self, stop: CancellationToken) {
        let policy = self.config.reconnect;
        let mut failed_attempts: u32 = 0;
        let mut connected_at: Option<Instant> = None;
        let mut ever_connected = false;
        // A notice goes out when the server turns bad, not for every failed retry.
        let mut noticed = false;
        loop {
            self.set_state(McpState::Starting, None);
            let list_changed = Arc::new(Notify::new());
            let attempt = tokio::select! {
                () = stop.cancelled() => break,
                attempt = self.attempt(list_changed.clone()) => attempt,
            };
            let reason = match attempt {
                Ok(connection) => {
                    connected_at = Some(Instant::now());
                    ever_connected = true;
                    noticed = false;
                    if failed_attempts > 0 {
                        tracing::info!(
                            "{}reconnected and re-synced tools (attempt {failed_attempts}/{})",
                            self.log_prefix(),
                            policy.max_attempts
                        );
                    }
                    match self.serve(connection, list_changed, &stop).await {
                        Ended::Stopped => break,
                        Ended::Lost(reason) => reason,
                    }
                }
                Err(reason) => reason,
            };
            *self.live.write().unwrap_or_else(|p| p.into_inner()) = None;
            // On down (spec §1.7).
            if !policy.enabled {
                let what = if ever_connected {
                    "connection lost and reconnect is disabled; its tools stay registered but fail"
                } else {
                    "connection failed and reconnect is disabled"
                };
                self.fail(&reason, format!("{what}: {reason}"), !noticed);
                stop.cancelled().await;
                break;
            }
            if connected_at
                .is_some_and(|at| at.elapsed() >= Duration::from_millis(policy.max_delay_ms))
            {
                failed_attempts = 0;
            }
            connected_at = None;
            failed_attempts = failed_attempts.saturating_add(1);
            if failed_attempts > policy.max_attempts {
                self.unregister_all();
                self.board.update(&self.config.name, |s| {
                    s.state = McpState::Failed;
                    s.tool_count = 0;
                    s.gave_up = true;
                    s.last_error = Some(reason.clone());
                });
                let message = format!(
                    "giving up after {} consecutive failed reconnect attempts; its tools are removed (last error: {reason})",
                    policy.max_attempts
                );
                tracing::error!("{}{message}", self.log_prefix());
                self.board.notice(
                    self.name(),
                    format!("MCP server \"{}\" {message}", self.name()),
                );
                return;
            }
            let delay = policy.delay_ms(failed_attempts);
            let what = if ever_connected {
                format!(
                    "connection lost; reconnecting in {delay}ms (attempt {failed_attempts}/{})",
                    policy.max_attempts
                )
            } else {
                format!(
                    "connection failed; retrying in {delay}ms (attempt {failed_attempts}/{})",
                    policy.max_attempts
                )
            };
            self.fail(&reason, format!("{reason}; {what}"), !noticed);
            noticed = true;
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(Duration::from_millis(delay)) => {}
            }
        }
        *self.live.write().unwrap_or_else(|p| p.into_inner()) = None;
        self.unregister_all();
        self.board.update(&self.config.name, |s| s.tool_count = 0);
    }

    fn set_state(&self, state: McpState, tool_count: Option<usize>) {
        self.board.update(&self.config.name, |s| {
            s.state = state;
            if let Some(count) = tool_count {
                s.tool_count = count;
            }
        });
    }

    fn fail(&self, reason: &str, log: String, notice: bool) {
        tracing::warn!("{}{log}", self.log_prefix());
        let reason = reason.to_owned();
        self.board.update(&self.config.name, |s| {
            s.state = McpState::Failed;
            s.last_error = Some(reason);
        });
        if notice {
            self.board.notice(
                self.name(),
                format!("MCP server \"{}\": {log}", self.name()),
            );
        }
    }

    /// Connect, initialize and sync, within the startup timeout.
    async fn attempt(&mut self, list_changed: Arc<Notify>) -> Result<Connection, String> {
        let budget = Duration::from_millis(self.config.startup_timeout_ms);
        let config = self.config.clone();
        let connected = tokio::time::timeout(budget, client::connect(&config, list_changed)).await;
        let connection = match connected {
            Ok(Ok(connection)) => connection,
            Ok(Err(error)) => return Err(error),
            Err(_) => {
                return Err(format!(
                    "no answer to initialize within {} ms",
                    self.config.startup_timeout_ms
                ))
            }
        };
        let listed = tokio::time::timeout(budget, client::list_tools(&connection.peer)).await;
        let tools = match listed {
            Ok(Ok(tools)) => tools,
            Ok(Err(error)) => {
                let _ = connection.close().await;
                return Err(error);
            }
            Err(_) => {
                let _ = connection.close().await;
                return Err(format!(
                    "no answer to tools/list within {} ms",
                    self.config.startup_timeout_ms
                ));
            }
        };
        *self.live.write().unwrap_or_else(|p| p.into_inner()) = Some(connection.peer.clone());
        if let Err(error) = self.swap(&tools) {
            let _ = connection.close().await;
            *self.live.write().unwrap_or_else(|p| p.into_inner()) = None;
            return Err(error);
        }
        Ok(connection)
    }

    /// While connected: re-sync on `list_changed`, end on close or stop.
    async fn serve(
        &mut self,
        mut connection: Connection,
        list_changed: Arc<Notify>,
        stop: &CancellationToken,
    ) -> Ended {
        loop {
            tokio::select! {
                () = stop.cancelled() => {
                    *self.live.write().unwrap_or_else(|p| p.into_inner()) = None;
                    let _ = connection.close().await;
                    return Ended::Stopped;
                }
                () = connection.closed.cancelled() => {
                    let mut reason = "the connection closed".to_owned();
                    if let Some(child) = connection.child.as_mut() {
                        if let Some(status) = child.exit_status_within(EXIT_GRACE).await {
                            reason = format!("the server exited ({status})");
                        }
                    }
                    if let Some(line) = connection.stderr_line() {
                        reason.push_str(&format!("; stderr: {line}"));
                    }
                    let _ = connection.close().await;
                    return Ended::Lost(reason);
                }
                () = list_changed.notified() => {
                    match client::list_tools(&connection.peer).await {
                        Ok(tools) => {
                            if let Err(error) = self.swap(&tools) {
                                tracing::warn!("{}{error}", self.log_prefix());
                            }
                        }
                        // A failed fetch keeps the previous generation.
                        Err(error) => tracing::warn!("{}re-sync failed: {error}", self.log_prefix()),
                    }
                }
            }
        }
    }

    /// Phase 1 (build, refuse duplicates) and phase 2 (swap, roll back on conflict).
    fn swap(&mut self, listed: &[Value]) -> Result<(), String> {
        let name = self.config.name.clone();
        let mut raws = BTreeSet::new();
        let mut publics = BTreeMap::new();
        let mut build = Vec::new();
        let mut skipped = Vec::new();
        for tool in listed {
            let Some(raw) = tool.get("name").and_then(Value::as_str) else {
                skipped.push("a tool without a name".to_owned());
                continue;
            };
            let public = public_tool_name(&name, raw);
            if !raws.insert(raw.to_owned()) || publics.insert(public.clone(), raw).is_some() {
                return Err(format!(
                    "server listed tool \"{raw}\" more than once — invalid tool list"
                ));
            }
            if !self.config.allows_tool(raw) {
                continue;
            }
            let schema = match input_schema(tool.get("inputSchema")) {
                Ok(schema) => schema,
                Err(error) => {
                    skipped.push(format!("\"{raw}\": {error}"));
                    continue;
                }
            };
            let description = tool
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            build.push(McpTool {
                public,
                raw: raw.to_owned(),
                description,
                schema,
                timeout: Duration::from_millis(self.config.tool_timeout_ms),
                live: self.live.clone(),
                services: self.ctx.clone(),
            });
        }
        self.unregister_all();
        let mut registered = Vec::new();
        for tool in build {
            let public = tool.public.clone();
            match self.tools.register(&self.ctx, Arc::new(tool)) {
                Ok(disposer) => registered.push((public, disposer)),
                Err(error) => {
                    for (_, disposer) in registered {
                        disposer.dispose();
                    }
                    self.set_state(McpState::Failed, Some(0));
                    return Err(format!(
                        "tool registration failed, no tools registered: {error} ({})",
                        error.code()
                    ));
                }
            }
        }
        if self.config.approval == McpApproval::Ask {
            let mut ask = self.ask.write().unwrap_or_else(|p| p.into_inner());
            ask.extend(registered.iter().map(|(public, _)| public.clone()));
        }
        let count = registered.len();
        self.registered = registered;
        let skipped_note =
            (!skipped.is_empty()).then(|| format!("tools skipped: {}", skipped.join("; ")));
        if let Some(note) = &skipped_note {
            tracing::warn!("{}{note}", self.log_prefix());
        }
        self.board.update(&name, |s| {
            s.state = McpState::Ready;
            s.tool_count = count;
            if skipped_note.is_some() {
                s.last_error = skipped_note;
            }
        });
        Ok(())
    }

    fn unregister_all(&mut self) {
        let gone = std::mem::take(&mut self.registered);
        if gone.is_empty() {
            return;
        }
        {
            let mut ask = self.ask.write().unwrap_or_else(|p| p.into_inner());
            for (public, _) in &gone {
                ask.remove(public);
            }
        }
        for (_, disposer) in gone {
            disposer.dispose();
        }
        // The board's count is left to the caller: a re-sync swaps generations and reports
        // the new count once, so nobody reads a transient 0 while the server is ready.
    }
}
