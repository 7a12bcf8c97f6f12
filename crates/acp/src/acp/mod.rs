//! `dsh acp`: an Agent Client Protocol (version 1) agent over stdio.
//!
//! - [`serve`]: the connection loop: frames in, one task per request, teardown on EOF;
//! - [`session`]: one session's agent, update feed, answerer and prompt in flight;
//! - [`updates`] and [`tools`]: session events as `session/update` payloads;
//! - [`permission`]: approval questions as `session/request_permission`;
//! - [`files`]: the client's `fs/*` methods as the file tools' text;
//! - [`prompt`]: prompt admission.
//!
//! Error texts and the stop-reason mapping follow the original (`@deepseek-ai` ACP bridge,
//! SDK 0.25.1 error prefixes); docs/acp.md lists them and every deviation.

pub mod files;
mod mcp;
mod permission;
mod prompt;
mod session;
pub mod tools;
pub mod updates;

pub use prompt::MAX_PROMPT_BYTES;
pub use session::{settle, Settled};

use crate::host::{AgentChoice, Host, HostError, Workspace};
use crate::rpc::frame::{self, code, Malformed};
use crate::rpc::{Incoming, Line, LineReader, Peer, RpcError, MAX_FRAME_BYTES};
use files::FsCapabilities;
use serde::Deserialize;
use serde_json::{json, Value};
use session::{lock, AcpSession};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufRead, AsyncWrite};
use updates::Translator;

/// ACP protocol version spoken.
pub const PROTOCOL_VERSION: u64 = 1;

/// The agent name the original reports (kept verbatim), with this build's version.
pub const AGENT_NAME: &str = "deepseek-harness-acp";

struct Server {
    host: Arc<dyn Host>,
    peer: Peer,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    closing: AtomicBool,
    /// What `initialize` said the client does with files.
    fs: Mutex<FsCapabilities>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams {
    /// Required and checked for type; dsh answers with the version it speaks.
    #[serde(rename = "protocolVersion")]
    _protocol_version: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NewSessionParams {
    cwd: String,
    #[serde(default)]
    mcp_servers: Vec<Value>,
    #[serde(default)]
    additional_directories: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LoadSessionParams {
    session_id: String,
    cwd: String,
    #[serde(default)]
    mcp_servers: Vec<Value>,
    #[serde(default)]
    additional_directories: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptParams {
    session_id: String,
    prompt: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CancelParams {
    session_id: String,
}

fn params<T: serde::de::DeserializeOwned>(method: &str, params: Value) -> Result<T, RpcError> {
    let params = if params.is_null() { json!({}) } else { params };
    serde_json::from_value(params).map_err(|e| RpcError::invalid_params(format!("{method}: {e}")))
}

/// Serves one client on `input`/`output` until the client closes its end, then tears down:
/// every session's turn is cancelled and its agent disposed (so every log ends balanced
/// and flushed), and the host unloads its workspaces.
pub async fn serve<R, W>(host: Arc<dyn Host>, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (peer, writer) = Peer::new(output);
    let server = Arc::new(Server {
        host,
        peer: peer.clone(),
        sessions: Mutex::new(HashMap::new()),
        closing: AtomicBool::new(false),
        fs: Mutex::new(FsCapabilities::default()),
    });
    let mut lines = LineReader::new(input);
    let mut tasks = tokio::task::JoinSet::new();
    let ended = loop {
        let line = match lines.next().await {
            Ok(Some(line)) => line,
            Ok(None) => break Ok(()),
            Err(error) => break Err(error),
        };
        while tasks.try_join_next().is_some() {}
        match line {
            Line::TooLong(bytes) => {
                tracing::warn!(bytes, "dropped a frame over the size limit");
                peer.respond(
                    &Value::Null,
                    Err(RpcError::new(
                        code::INVALID_REQUEST,
                        format!(
                            "Invalid request: a frame of {bytes} bytes is over the {} MiB limit",
                            MAX_FRAME_BYTES >> 20
                        ),
                    )),
                );
            }
            Line::Frame(bytes) => server.clone().dispatch(&bytes, &mut tasks),
        }
    };
    server.closing.store(true, Ordering::SeqCst);
    peer.close();
    server.teardown().await;
    while tasks.join_next().await.is_some() {}
    drop(server);
    drop(peer);
    let _ = writer.await;
    ended
}

impl Server {
    fn dispatch(self: Arc<Self>, bytes: &[u8], tasks: &mut tokio::task::JoinSet<()>) {
        let incoming = match frame::parse(bytes) {
            Ok(incoming) => incoming,
            Err(Malformed::InvalidRequest { id, why }) => {
                self.peer.respond(
                    &id,
                    Err(RpcError::new(
                        code::INVALID_REQUEST,
                        format!("Invalid request: {why}"),
                    )),
                );
                return;
            }
            Err(Malformed::NotJson(why)) => {
                // As the SDK's ndJsonStream: a line that is not JSON is logged and skipped.
                tracing::warn!(%why, "skipped a frame that is not JSON");
                return;
            }
            Err(Malformed::Unanswerable(why)) => {
                tracing::warn!(%why, "skipped an invalid frame");
                return;
            }
        };
        match incoming {
            Incoming::Response { id, result } => self.peer.answer(&id, result),
            Incoming::Notification { method, params } => {
                if method == "session/cancel" {
                    match self::params::<CancelParams>(&method, params) {
                        Ok(cancel) => self.cancel(&cancel.session_id),
                        Err(error) => tracing::warn!(%error, "ignored a malformed session/cancel"),
                    }
                } else {
                    tracing::debug!(%method, "ignored an unknown notification");
                }
            }
            Incoming::Request { id, method, params } => match method.as_str() {
                "initialize" => {
                    let result = self.initialize(params);
                    self.peer.respond(&id, result);
                }
                "authenticate" => self.peer.respond(&id, Ok(json!({}))),
                "session/new" | "session/load" | "session/prompt" => {
                    tasks.spawn(async move {
                        match method.as_str() {
                            "session/new" => self.new_session(id, params).await,
                            "session/load" => self.load_session(id, params).await,
                            _ => self.prompt(id, params).await,
                        }
                    });
                }
                _ => self
                    .peer
                    .respond(&id, Err(RpcError::method_not_found(&method))),
            },
        }
    }

    fn initialize(&self, params: Value) -> Result<Value, RpcError> {
        let fs = FsCapabilities::of(&params);
        let _asked: InitializeParams = self::params("initialize", params)?;
        *lock(&self.fs) = fs;
        // Version negotiation: dsh answers with the one version it speaks.
        Ok(json!({
            "protocolVersion": PROTOCOL_VERSION,
            "agentInfo": { "name": AGENT_NAME, "version": env!("CARGO_PKG_VERSION") },
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": { "image": false, "audio": false, "embeddedContext": false },
                "mcpCapabilities": { "http": true, "sse": false },
            },
            "authMethods": [],
        }))
    }

    /// The checks `session/new` and `session/load` share; the workspace on success.
    async fn open(
        &self,
        cwd: &str,
        mcp_servers: &[Value],
        additional: &[Value],
    ) -> Result<Arc<dyn Workspace>, RpcError> {
        if self.closing.load(Ordering::SeqCst) {
            return Err(RpcError::internal("the ACP bridge has been disposed"));
        }
        if !Path::new(cwd).is_absolute() {
            return Err(RpcError::invalid_params(format!(
                "cwd must be an absolute path: {cwd}"
            )));
        }
        if !additional.is_empty() {
            return Err(RpcError::invalid_params(
                "additionalDirectories is not supported",
            ));
        }
        let servers = mcp::client_servers(mcp_servers)?;
        self.host
            .open(Path::new(cwd), &servers)
            .await
            .map_err(|e| RpcError::internal(e.to_string()))
    }

    fn register(&self, session: Arc<AcpSession>) -> Result<(), Arc<AcpSession>> {
        let mut sessions = lock(&self.sessions);
        if self.closing.load(Ordering::SeqCst) {
            return Err(session);
        }
        sessions.insert(session.id.as_str().to_owned(), session);
        Ok(())
    }

    async fn new_session(self: Arc<Self>, id: Value, params: Value) {
        let result = self.create(params).await;
        let session = result.as_ref().ok().cloned();
        self.peer
            .respond(&id, result.map(|s| json!({ "sessionId": s.id.as_str() })));
        if let Some(session) = session {
            self.announce_commands(&session);
        }
    }

    async fn create(&self, params: Value) -> Result<Arc<AcpSession>, RpcError> {
        let asked: NewSessionParams = self::params("session/new", params)?;
        let workspace = self
            .open(
                &asked.cwd,
                &asked.mcp_servers,
                &asked.additional_directories,
            )
            .await?;
        let id = workspace.new_session_id();
        let handle = workspace
            .create(id, &AgentChoice::default())
            .await
            .map_err(|e| RpcError::internal(e.to_string()))?;
        let translator = Translator::new(workspace.root());
        let fs = *lock(&self.fs);
        let session = AcpSession::attach(workspace, handle.clone(), translator, &self.peer, fs);
        self.adopt(session, &handle).await
    }

    /// Registers an attached session, or disposes its agent when attaching failed or the
    /// connection is closing.
    async fn adopt(
        &self,
        session: Result<Arc<AcpSession>, String>,
        handle: &dsh_agent::AgentHandle,
    ) -> Result<Arc<AcpSession>, RpcError> {
        match session {
            Ok(session) => match self.register(session.clone()) {
                Ok(()) => Ok(session),
                Err(session) => {
                    session.close().await;
                    Err(RpcError::internal("the ACP bridge has been disposed"))
                }
            },
            Err(error) => {
                handle.dispose().await;
                Err(RpcError::internal(error))
            }
        }
    }

    async fn load_session(self: Arc<Self>, id: Value, params: Value) {
        let result = self.load(params).await;
        let session = result.as_ref().ok().cloned();
        self.peer.respond(&id, result.map(|_| json!({})));
        if let Some(session) = session {
            self.announce_commands(&session);
        }
    }

    /// Resumes a stored session, replays its conversation as updates, then feeds it live.
    async fn load(&self, params: Value) -> Result<Arc<AcpSession>, RpcError> {
        let asked: LoadSessionParams = self::params("session/load", params)?;
        let workspace = self
            .open(
                &asked.cwd,
                &asked.mcp_servers,
                &asked.additional_directories,
            )
            .await?;
        if lock(&self.sessions).contains_key(&asked.session_id) {
            return Err(RpcError::invalid_params(format!(
                "session {} is already open on this connection",
                asked.session_id
            )));
        }
        let handle = workspace
            .resume(
                dsh_protocol::SessionId::new(asked.session_id.clone()),
                &AgentChoice::default(),
            )
            .await
            .map_err(|e| match e {
                HostError::NotFound(_) => {
                    RpcError::invalid_params(format!("unknown session: {}", asked.session_id))
                }
                other => RpcError::internal(other.to_string()),
            })?;
        let mut translator = Translator::new(workspace.root());
        for event in handle.agent().session().events().iter() {
            for update in translator.replay(event) {
                self.peer.notify(
                    "session/update",
                    json!({ "sessionId": asked.session_id, "update": update }),
                );
            }
        }
        let fs = *lock(&self.fs);
        let session = AcpSession::attach(workspace, handle.clone(), translator, &self.peer, fs);
        self.adopt(session, &handle).await
    }

    /// `available_commands_update`: the custom slash commands and the skills a person may
    /// invoke with `/name` (both expanded by the skills plugin when the prompt runs).
    fn announce_commands(&self, session: &AcpSession) {
        let Some(skills) = session.workspace.ctx().get::<dsh_skills::Skills>() else {
            return;
        };
        let scan = skills.refresh();
        let mut seen = std::collections::HashSet::new();
        let mut commands = Vec::new();
        for command in &scan.commands {
            if seen.insert(command.name.clone()) {
                let mut entry = json!({ "name": command.name, "description": command.description });
                if let Some(hint) = &command.argument_hint {
                    entry["input"] = json!({ "hint": hint });
                }
                commands.push(entry);
            }
        }
        for skill in scan.skills.iter().filter(|s| s.user_invocable) {
            if seen.insert(skill.name.clone()) {
                commands.push(json!({ "name": skill.name, "description": skill.description }));
            }
        }
        self.peer.notify(
            "session/update",
            json!({
                "sessionId": session.id.as_str(),
                "update": { "sessionUpdate": "available_commands_update", "availableCommands": commands },
            }),
        );
    }

    async fn prompt(self: Arc<Self>, id: Value, params: Value) {
        let result = self.run_prompt(params).await;
        self.peer.respond(&id, result);
    }

    async fn run_prompt(&self, params: Value) -> Result<Value, RpcError> {
        let asked: PromptParams = self::params("session/prompt", params)?;
        let session = lock(&self.sessions)
            .get(&asked.session_id)
            .cloned()
            .ok_or_else(|| {
                RpcError::invalid_params(format!("unknown session: {}", asked.session_id))
            })?;
        let flight = session.begin().ok_or_else(|| {
            RpcError::invalid_params("a prompt is already in flight for this session")
        })?;
        let settled = match prompt::admit(&asked.prompt) {
            Ok(text) => session.run(&flight, text).await,
            Err(error) => {
                session.end();
                return Err(error);
            }
        };
        session.end();
        match settled {
            Settled::Stop(reason) => Ok(session::stop_value(reason)),
            Settled::Failed(message) => Err(RpcError::internal(message)),
        }
    }

    fn cancel(&self, id: &str) {
        // An unknown session id is ignored, as the original does.
        if let Some(session) = lock(&self.sessions).get(id).cloned() {
            session.cancel();
        }
    }

    async fn teardown(&self) {
        let sessions: Vec<_> = lock(&self.sessions).drain().map(|(_, s)| s).collect();
        futures_util::future::join_all(sessions.iter().map(|s| s.close())).await;
        self.host.shutdown();
    }
}
