//! `dsh sdk`: the original's SDK JSON-RPC runtime over stdio, for programs.
//!
//! Methods `initialize`, `session/prompt` (returns `{messageId}` once the message is
//! queued), `shutdown`, and — beyond the original — `session/cancel`. Notifications carry
//! every durable event of every session in the runtime (`session.event`, full envelopes),
//! each agent's `running`/`idle` changes (`session.status`) and children's lifecycle
//! (`subagent.started`, `subagent.finished`). A `session/prompt` for a session id this
//! process has not seen resumes the stored session of that id, or creates it (the original
//! always creates afresh); docs/acp.md has the details.

mod notify;

use crate::host::{AgentChoice, Host, HostError, Workspace};
use crate::rpc::frame;
use crate::rpc::{Incoming, Line, LineReader, Peer, RpcError};
use dsh_agent::{AgentCancelCause, AgentHandle, CancelOptions};
use dsh_kernel::Disposer;
use dsh_protocol::{ContentBlock, Message, MessageSource, Role, SessionId};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncBufRead, AsyncWrite};

/// The server name the original reports (kept verbatim).
pub const SERVER_NAME: &str = "deepseek-harness-sdk-runtime";

/// The largest safe integer of JavaScript, the bound the original checks `maxTokens` by.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn internal(message: impl Into<String>) -> RpcError {
    RpcError::new(frame::code::INTERNAL_ERROR, message)
}

/// What `initialize` chose.
struct Config {
    cwd: PathBuf,
    choice: AgentChoice,
}

/// The workspace in use and its notification listeners.
type Booted = (Arc<dyn Workspace>, Vec<Disposer>);

struct Runtime {
    host: Arc<dyn Host>,
    peer: Peer,
    config: Mutex<Config>,
    /// The workspace in use and its notification listeners.
    workspace: tokio::sync::Mutex<Option<Booted>>,
    agents: tokio::sync::Mutex<HashMap<String, AgentHandle>>,
    shutting_down: AtomicBool,
    /// Set by `shutdown`: the loop stops reading.
    stop: tokio::sync::Notify,
}

/// Serves one client until `shutdown` or the end of input; then every agent is cancelled
/// and disposed (their logs closed) and the host unloads.
pub async fn serve<R, W>(host: Arc<dyn Host>, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (peer, writer) = Peer::new(output);
    let runtime = Arc::new(Runtime {
        config: Mutex::new(Config {
            cwd: host.default_cwd(),
            choice: AgentChoice::default(),
        }),
        host,
        peer: peer.clone(),
        workspace: tokio::sync::Mutex::new(None),
        agents: tokio::sync::Mutex::new(HashMap::new()),
        shutting_down: AtomicBool::new(false),
        stop: tokio::sync::Notify::new(),
    });
    let mut lines = LineReader::new(input);
    let mut tasks = tokio::task::JoinSet::new();
    let ended = loop {
        let line = tokio::select! {
            line = lines.next() => line,
            () = runtime.stop.notified() => break Ok(()),
        };
        while tasks.try_join_next().is_some() {}
        match line {
            Ok(Some(Line::Frame(bytes))) => runtime.clone().dispatch(&bytes, &mut tasks),
            // Malformed (and oversized) lines are ignored, as the original's transport does.
            Ok(Some(Line::TooLong(bytes))) => tracing::warn!(bytes, "ignored an oversized frame"),
            Ok(None) => break Ok(()),
            Err(error) => break Err(error),
        }
    };
    runtime.shutting_down.store(true, Ordering::SeqCst);
    while tasks.join_next().await.is_some() {}
    runtime.teardown().await;
    peer.close();
    drop(runtime);
    drop(peer);
    let _ = writer.await;
    ended
}

impl Runtime {
    fn dispatch(self: Arc<Self>, bytes: &[u8], tasks: &mut tokio::task::JoinSet<()>) {
        let Ok(incoming) = frame::parse(bytes) else {
            tracing::warn!("ignored a malformed frame");
            return;
        };
        let (id, method, params) = match incoming {
            Incoming::Request { id, method, params } => (id, method, params),
            Incoming::Response { .. } => return,
            Incoming::Notification { method, .. } => {
                tracing::debug!(%method, "ignored a notification");
                return;
            }
        };
        // Non-object params are read as `{}`.
        let params = if params.is_object() {
            params
        } else {
            json!({})
        };
        tasks.spawn(async move {
            let result = match method.as_str() {
                "initialize" => self.initialize(&params).await,
                "session/prompt" => self.prompt(&params).await,
                "session/cancel" => self.cancel(&params).await,
                "shutdown" => {
                    self.shutting_down.store(true, Ordering::SeqCst);
                    self.peer.respond(&id, Ok(json!({})));
                    self.stop.notify_one();
                    return;
                }
                other => Err(internal(format!(
                    "unknown DeepSeek Harness SDK runtime method: {other}"
                ))),
            };
            self.peer.respond(&id, result);
        });
    }

    async fn initialize(&self, params: &Value) -> Result<Value, RpcError> {
        let text = |key: &str| -> Result<Option<String>, RpcError> {
            match params.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(internal(format!("initialize {key} must be a string"))),
            }
        };
        let max_tokens = match params.get("maxTokens") {
            None | Some(Value::Null) => None,
            Some(value) => match value.as_u64() {
                Some(n) if (1..=MAX_SAFE_INTEGER).contains(&n) => Some(n),
                _ => {
                    return Err(internal(
                        "initialize maxTokens must be a positive safe integer",
                    ))
                }
            },
        };
        let cwd = match text("cwd")? {
            Some(cwd) => {
                let cwd = Path::new(&cwd);
                if cwd.is_absolute() {
                    cwd.to_path_buf()
                } else {
                    self.host.default_cwd().join(cwd)
                }
            }
            None => self.host.default_cwd(),
        };
        let choice = AgentChoice {
            provider: text("provider")?,
            model: text("model")?,
            max_tokens,
        };
        self.host
            .check_choice(&choice)
            .map_err(|e| internal(e.to_string()))?;
        {
            let mut config = lock(&self.config);
            config.cwd = cwd;
            config.choice = choice;
        }
        self.workspace().await?;
        Ok(json!({ "serverInfo": { "name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION") } }))
    }

    /// The workspace of the configured cwd, booted (with its listeners) on first use.
    async fn workspace(&self) -> Result<Arc<dyn Workspace>, RpcError> {
        let cwd = lock(&self.config).cwd.clone();
        let mut slot = self.workspace.lock().await;
        if let Some((workspace, _)) = slot.as_ref() {
            if workspace.root() == cwd
                || cwd.canonicalize().ok().as_deref() == Some(workspace.root())
            {
                return Ok(workspace.clone());
            }
        }
        let workspace = self
            .host
            .open(&cwd, &[])
            .await
            .map_err(|e| internal(e.to_string()))?;
        let listeners = notify::install(workspace.ctx(), &self.peer).map_err(internal)?;
        if let Some((_, old)) = slot.replace((workspace.clone(), listeners)) {
            old.iter().for_each(Disposer::dispose);
        }
        Ok(workspace)
    }

    async fn prompt(&self, params: &Value) -> Result<Value, RpcError> {
        if self.shutting_down.load(Ordering::SeqCst) {
            return Err(internal("SDK server is shutting down"));
        }
        let session_id = params
            .get("sessionId")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| internal("session/prompt needs a string sessionId"))?
            .to_owned();
        let blocks = params
            .get("contentBlocks")
            .and_then(Value::as_array)
            .ok_or_else(|| internal("session/prompt needs a contentBlocks array"))?;
        let mut content = Vec::new();
        let mut size = 0usize;
        for block in blocks {
            match serde_json::from_value::<ContentBlock>(block.clone()) {
                Ok(ContentBlock::Text { text }) => {
                    size += text.len();
                    content.push(ContentBlock::Text { text });
                }
                _ => {
                    return Err(internal(format!(
                        "unsupported content block: {}",
                        block.get("type").unwrap_or(&Value::Null)
                    )))
                }
            }
        }
        if content.is_empty() {
            return Err(internal("session/prompt needs at least one text block"));
        }
        if size > crate::acp::MAX_PROMPT_BYTES {
            return Err(internal(format!(
                "the prompt is larger than {} MiB",
                crate::acp::MAX_PROMPT_BYTES >> 20
            )));
        }
        let agent = self.agent(&session_id).await?;
        if self.shutting_down.load(Ordering::SeqCst) {
            return Err(internal("SDK server is shutting down"));
        }
        let message = Message::new(Role::User, content, MessageSource::user());
        let message_id = message.id.clone();
        agent
            .agent()
            .followup(message)
            .map_err(|e| internal(e.to_string()))?;
        Ok(json!({ "messageId": message_id }))
    }

    /// The agent of `id` in this process; else the stored session `id` resumed; else a new
    /// session with that id.
    async fn agent(&self, id: &str) -> Result<AgentHandle, RpcError> {
        let mut agents = self.agents.lock().await;
        if let Some(handle) = agents.get(id) {
            return Ok(handle.clone());
        }
        let workspace = self.workspace().await?;
        let choice = lock(&self.config).choice.clone();
        let session = SessionId::new(id.to_owned());
        let handle = match workspace.resume(session.clone(), &choice).await {
            Ok(handle) => handle,
            Err(HostError::NotFound(_)) => workspace
                .create(session, &choice)
                .await
                .map_err(|e| internal(e.to_string()))?,
            Err(error) => return Err(internal(error.to_string())),
        };
        agents.insert(id.to_owned(), handle.clone());
        Ok(handle)
    }

    async fn cancel(&self, params: &Value) -> Result<Value, RpcError> {
        let id = params
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or_else(|| internal("session/cancel needs a string sessionId"))?;
        let agents = self.agents.lock().await;
        let handle = agents
            .get(id)
            .ok_or_else(|| internal(format!("unknown session: {id}")))?;
        handle
            .agent()
            .cancel(AgentCancelCause::User, CancelOptions::default())
            .map_err(|e| internal(e.to_string()))?;
        Ok(json!({}))
    }

    async fn teardown(&self) {
        let agents: Vec<AgentHandle> = self.agents.lock().await.drain().map(|(_, h)| h).collect();
        futures_util::future::join_all(agents.iter().map(AgentHandle::dispose)).await;
        if let Some((_, listeners)) = self.workspace.lock().await.take() {
            listeners.iter().for_each(Disposer::dispose);
        }
        self.host.shutdown();
    }
}
