//! The `Agent` contract and the types that travel with it: options, status, maintenance
//! leases, creation handles and the factory / resume seams the registry delegates to.

use crate::cause::{AbortSignal, AgentCancelCause, CancelOptions};
use crate::error::{AgentError, BoxError};
use crate::inbox::Inbox;
use dsh_kernel::{Context, ScopeKey};
use dsh_protocol::{Message, SessionId};
use dsh_session::{InboxTarget, Session, SessionEvent, SessionOrigin};
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use tokio_util::sync::CancellationToken;

/// The largest integer JSON readers keep exactly.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Per-agent model choices, fixed at creation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Output cap; must be a positive safe integer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
}

impl AgentOptions {
    /// Options naming a provider route and a model.
    pub fn new(provider: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            provider: Some(provider.into()),
            model: Some(model.into()),
            max_tokens: None,
        }
    }

    /// Checks the options (`max_tokens` must be a positive safe integer).
    pub fn validate(&self) -> Result<(), AgentError> {
        match self.max_tokens {
            Some(n) if n == 0 || n > MAX_SAFE_INTEGER => Err(AgentError::InvalidOptions {
                reason: format!("maxTokens must be a positive safe integer, got {n}"),
            }),
            _ => Ok(()),
        }
    }
}

/// Whether an agent's driver is running. Maintenance reports `Idle`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentStatus {
    Idle,
    Running,
}

/// One agent: a session it drives, an inbox of pending input and a scoped context.
///
/// `id` equals `session().id()`. Implementations are shared as `Arc<dyn Agent>`.
pub trait Agent: Send + Sync + 'static {
    fn id(&self) -> &SessionId;
    /// Options fixed at creation.
    fn options(&self) -> &AgentOptions;
    /// The live session this agent drives; the source of truth.
    fn session(&self) -> &Session;
    /// Pending input, a projection of the session's `agent/inbox/spliced` events.
    fn inbox(&self) -> &Inbox;
    fn status(&self) -> AgentStatus;
    /// The agent-scoped context: registrations made through it are visible to this agent
    /// (and its scope descendants) only, and unwind when the agent is disposed.
    fn ctx(&self) -> &Context;
    /// The agent's scope key: the carrier of every `agent/*` dispatch about it.
    fn scope_key(&self) -> &ScopeKey;

    /// Clears the inbox durably (unless `keep_inbox`) and aborts active work with `cause`
    /// (the first cause wins). On an idle agent nothing else happens. The active work is
    /// aborted even when clearing the inbox fails; that failure is returned.
    fn cancel(&self, cause: AgentCancelCause, options: CancelOptions) -> Result<(), AgentError>;

    /// Resolves once the agent is idle and no replacement activity is pending. Never fails.
    fn when_idle(&self) -> BoxFuture<'static, ()>;

    /// Enters the maintenance phase (status stays idle); fails when work is active.
    /// Dropping the lease ends maintenance and replays a wake latched meanwhile.
    /// Most callers want [`run_maintenance`](Self::run_maintenance).
    fn begin_maintenance(&self) -> Result<MaintenanceLease, AgentError>;

    /// The unified input primitive: queue `message` for `target`, waking the driver when
    /// `wakeup` is set (spec: `send`).
    fn send(&self, message: Message, target: InboxTarget, wakeup: bool) -> Result<(), AgentError>;

    /// Queue a prompt that becomes its own turn.
    fn followup(&self, message: Message) -> Result<(), AgentError> {
        self.send(message, InboxTarget::NextTurn, true)
    }

    /// Steer: idle → starts a turn now; running → consumed at the next step boundary.
    fn steer(&self, message: Message) -> Result<(), AgentError> {
        self.send(message, InboxTarget::NextStep, true)
    }

    /// Inject context without waking; claimed at the next pre-step boundary.
    fn inject(&self, message: Message) -> Result<(), AgentError> {
        self.send(message, InboxTarget::NextStep, false)
    }
}

impl fmt::Debug for dyn Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("id", self.id())
            .field("status", &self.status())
            .finish()
    }
}

impl dyn Agent {
    /// Runs `task` as maintenance: fails at once when work is active; otherwise the task
    /// runs (spawned, so it proceeds even if the returned future is not polled) with the
    /// maintenance signal, and its output is returned verbatim.
    pub fn run_maintenance<T, F, Fut>(&self, task: F) -> Result<MaintenanceTask<T>, AgentError>
    where
        F: FnOnce(AbortSignal) -> Fut,
        Fut: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| AgentError::NoRuntime)?;
        let lease = self.begin_maintenance()?;
        let work = task(lease.signal().clone());
        let join = runtime.spawn(async move {
            let output = work.await;
            drop(lease);
            output
        });
        Ok(MaintenanceTask { join })
    }
}

/// The running maintenance task of [`run_maintenance`](dyn Agent::run_maintenance).
pub struct MaintenanceTask<T> {
    join: tokio::task::JoinHandle<T>,
}

impl<T> fmt::Debug for MaintenanceTask<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaintenanceTask")
            .field("finished", &self.join.is_finished())
            .finish()
    }
}

impl<T> Future for MaintenanceTask<T> {
    type Output = Result<T, AgentError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.join).poll(cx).map(|joined| {
            joined.map_err(|e| AgentError::message(format!("maintenance task failed: {e}")))
        })
    }
}

/// Holds an agent in its maintenance phase; dropping it ends the phase.
pub struct MaintenanceLease {
    signal: AbortSignal,
    release: Option<Box<dyn FnOnce() + Send>>,
}

impl MaintenanceLease {
    /// A lease whose `release` runs exactly once, when the lease is dropped.
    pub fn new(signal: AbortSignal, release: impl FnOnce() + Send + 'static) -> Self {
        Self {
            signal,
            release: Some(Box::new(release)),
        }
    }

    /// Aborted by `cancel` while the maintenance runs.
    pub fn signal(&self) -> &AbortSignal {
        &self.signal
    }
}

impl Drop for MaintenanceLease {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            release();
        }
    }
}

impl fmt::Debug for MaintenanceLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaintenanceLease")
            .field("signal", &self.signal)
            .finish()
    }
}

type DisposeFn = dyn Fn() -> BoxFuture<'static, ()> + Send + Sync;

/// What a creator holds: the agent plus the capability to dispose it. `agents.get(id)`
/// hands out only the bare agent.
#[derive(Clone)]
pub struct AgentHandle {
    agent: Arc<dyn Agent>,
    dispose: Arc<DisposeFn>,
}

impl AgentHandle {
    /// A handle whose `dispose` runs `dispose` (which must be memoized by the factory:
    /// concurrent calls share one completion).
    pub fn new(
        agent: Arc<dyn Agent>,
        dispose: impl Fn() -> BoxFuture<'static, ()> + Send + Sync + 'static,
    ) -> Self {
        Self {
            agent,
            dispose: Arc::new(dispose),
        }
    }

    pub fn agent(&self) -> &Arc<dyn Agent> {
        &self.agent
    }

    /// Ordered teardown: cancel (disposed), wait for idle, unwind the scope, leave the
    /// registry (`agent/disposed`), detach the session (`session/disposed`).
    pub fn dispose(&self) -> BoxFuture<'static, ()> {
        (self.dispose)()
    }
}

impl fmt::Debug for AgentHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentHandle")
            .field("agent", &self.agent.id())
            .finish()
    }
}

/// Header metadata of a session created for an agent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionMeta {
    /// Absolute working directory.
    pub cwd: Option<String>,
    pub parent_session: Option<SessionId>,
    /// Length of an inherited fork prefix.
    pub seed_length: Option<u64>,
    /// Who created the session, when not a person (`subagent` for a delegated child).
    pub origin: Option<SessionOrigin>,
    pub delegation_depth: Option<u64>,
    pub agent_preset: Option<Value>,
}

/// Commits what a setup callback prepared; runs synchronously just before publication.
pub type SetupCommit = Box<dyn FnOnce() -> Result<(), BoxError> + Send>;

/// Composes an agent's scoped world (tools, sections, listeners) through its context
/// before the agent is published.
pub type AgentSetup =
    Box<dyn FnOnce(Context) -> BoxFuture<'static, Result<Option<SetupCommit>, BoxError>> + Send>;

/// Options of [`AgentRegistry::create`](crate::AgentRegistry::create).
#[derive(Default)]
pub struct CreateAgentOptions {
    /// Defaults to a generated id.
    pub session_id: Option<SessionId>,
    /// Events to seed the session with (fork, import).
    pub seed: Option<Vec<Arc<SessionEvent>>>,
    pub meta: SessionMeta,
    pub agent_options: AgentOptions,
    pub setup: Option<AgentSetup>,
    /// Cancels creation while it is setting up; detached once the handle is returned.
    pub cancel: Option<CancellationToken>,
}

impl fmt::Debug for CreateAgentOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CreateAgentOptions")
            .field("session_id", &self.session_id)
            .field("seed_len", &self.seed.as_ref().map(Vec::len))
            .field("meta", &self.meta)
            .field("agent_options", &self.agent_options)
            .finish_non_exhaustive()
    }
}

/// Options of [`AgentRegistry::resume`](crate::AgentRegistry::resume).
pub struct ResumeAgentOptions {
    pub session_id: SessionId,
    pub agent_options: AgentOptions,
    pub setup: Option<AgentSetup>,
    pub cancel: Option<CancellationToken>,
}

impl ResumeAgentOptions {
    pub fn new(session_id: SessionId) -> Self {
        Self {
            session_id,
            agent_options: AgentOptions::default(),
            setup: None,
            cancel: None,
        }
    }
}

impl fmt::Debug for ResumeAgentOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResumeAgentOptions")
            .field("session_id", &self.session_id)
            .field("agent_options", &self.agent_options)
            .finish_non_exhaustive()
    }
}

/// The driver implementation the registry delegates creation to (one at a time).
pub trait AgentFactory: Send + Sync + 'static {
    /// Creates and publishes a new agent owned by `owner` (the calling context).
    fn create(
        &self,
        owner: Context,
        options: CreateAgentOptions,
    ) -> BoxFuture<'static, Result<AgentHandle, AgentError>>;

    /// Loads a stored session and publishes an agent driving it.
    fn resume(
        &self,
        owner: Context,
        options: ResumeAgentOptions,
    ) -> BoxFuture<'static, Result<AgentHandle, AgentError>>;
}

/// Why a stored session could not be prepared for resume.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// Nothing is stored under this id.
    #[error("session \"{id}\" is not stored")]
    NotFound { id: SessionId },
    /// Loading or repairing failed (corruption, I/O, unsupported format).
    #[error("{0}")]
    Failed(BoxError),
}

impl ResumeError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => "SESSION_NOT_STORED",
            Self::Failed(_) => "RESUME_FAILED",
        }
    }
}

/// The persistence seam resume needs: load a stored log (repairing a crashed tail) into an
/// unpublished [`Session`]. Provided as the kernel service `dyn ResumeSource`; the store
/// crate implements it.
pub trait ResumeSource: Send + Sync + 'static {
    fn prepare(
        &self,
        id: &SessionId,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Session, ResumeError>>;
}
