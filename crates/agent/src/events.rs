//! The `agent/*` extension points and the fused dispatcher that fires them.
//!
//! Every payload is an [`AgentEvent<T>`]: the subject agent plus event data. Callers only
//! ever supply the data; [`AgentEvents`] injects the agent and always dispatches with the
//! agent's scope key as carrier, so a listener registered through `agent.ctx()` hears its
//! own agent (and scope descendants) only, and the subject can never be overridden.

use crate::agent::{Agent, AgentStatus};
use crate::cause::AbortSignal;
use dsh_kernel::{BoxError, Context, Event, Notification, Parallel, ScopeKey, Serial, Waterfall};
use dsh_llm::ResolvedRetryPolicy;
use dsh_protocol::{LlmCallConfig, LlmFailure, Message, SessionId};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::sync::{Arc, OnceLock, Weak};

/// The payload of every `agent/*` event: the subject agent and the event's own data.
pub struct AgentEvent<T> {
    pub agent: Arc<dyn Agent>,
    pub data: T,
}

impl<T> Deref for AgentEvent<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.data
    }
}

impl<T: fmt::Debug> fmt::Debug for AgentEvent<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentEvent")
            .field("agent", self.agent.id())
            .field("data", &self.data)
            .finish()
    }
}

macro_rules! agent_event {
    ($(#[$doc:meta])* $name:ident, $wire:literal, Notification<$payload:ty>) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;
        impl Event for $name {
            const NAME: &'static str = $wire;
        }
        impl Notification for $name {
            type Payload = AgentEvent<$payload>;
        }
    };
}

agent_event!(
    /// `agent/created`: both registry entries exist; a failing listener vetoes publication.
    AgentCreated, "agent/created", Notification<()>
);
agent_event!(
    /// `agent/disposed`: the exact agent left the registry.
    AgentDisposed, "agent/disposed", Notification<()>
);
agent_event!(
    /// `agent/status`: every status transition (never the same status twice in a row).
    AgentStatusChanged, "agent/status", Notification<AgentStatus>
);
agent_event!(
    /// `agent/inbox/inserted`: one per inserted message.
    InboxInserted, "agent/inbox/inserted", Notification<Arc<Message>>
);
agent_event!(
    /// `agent/inbox/claimed`: one per claimed message, after the claim's splices.
    InboxClaimed, "agent/inbox/claimed", Notification<ClaimedMessage>
);
agent_event!(
    /// `agent/inbox/discarded`: one per message removed by a cancel/replace/remove.
    InboxDiscarded, "agent/inbox/discarded", Notification<Arc<Message>>
);
agent_event!(
    /// `agent/session-start`: once per published lifecycle; the first place to `inject()`.
    SessionStart, "agent/session-start", Notification<SessionStartSource>
);
agent_event!(
    /// `agent/error`: a non-abort failure the driver reported.
    AgentErrorEvent, "agent/error", Notification<AgentErrorReport>
);

/// `agent/disposing`: a disposal's cancel has taken effect and the agent is idle; its scope
/// is about to unwind. Listeners stop work they run on the agent's behalf (its background
/// jobs) and the disposal awaits them, so nothing the agent started outlives it.
#[derive(Debug)]
pub struct AgentDisposing;
impl Event for AgentDisposing {
    const NAME: &'static str = "agent/disposing";
}
impl Parallel for AgentDisposing {
    type Args = AgentEvent<()>;
}

/// Data of [`InboxClaimed`].
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimedMessage {
    pub message: Arc<Message>,
    /// The turn that claimed it.
    pub turn: u64,
}

/// Why an agent lifecycle was published.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionStartSource {
    Startup,
    Resume,
    Clear,
    Compact,
}

/// Data of [`AgentErrorEvent`].
#[derive(Clone)]
pub struct AgentErrorReport {
    pub turn: u64,
    pub step: u64,
    /// The facts logged in `turn/end {error}`.
    pub failure: LlmFailure,
    pub error: Arc<dyn std::error::Error + Send + Sync>,
}

impl fmt::Debug for AgentErrorReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentErrorReport")
            .field("turn", &self.turn)
            .field("step", &self.step)
            .field("failure", &self.failure)
            .finish()
    }
}

/// `agent/pre-step`: the only input gate. The innermost default enters the claimed
/// messages plus a runtime-context snapshot when it changed.
#[derive(Debug)]
pub struct PreStep;
impl Event for PreStep {
    const NAME: &'static str = "agent/pre-step";
}
impl Waterfall for PreStep {
    type Args = AgentEvent<PreStepArgs>;
    type Output = PreStepDecision;
}

/// Arguments of [`PreStep`].
#[derive(Clone, Debug)]
pub struct PreStepArgs {
    /// What this pre-step claimed from the inbox.
    pub messages: Vec<Arc<Message>>,
    pub turn: u64,
    pub step: u64,
    pub signal: AbortSignal,
}

/// What a pre-step decides.
#[derive(Clone, Debug, PartialEq)]
pub enum PreStepDecision {
    /// Close the turn `blocked`; the claimed input is discarded.
    Reject,
    /// Enter a step with these user messages (an empty first proposal ends the turn).
    Enter(Vec<Arc<Message>>),
}

/// `agent/request`: config-only middleware around each request (it cannot touch messages;
/// whatever it returns is logged as a `request/header`).
#[derive(Debug)]
pub struct AgentRequest;
impl Event for AgentRequest {
    const NAME: &'static str = "agent/request";
}
impl Waterfall for AgentRequest {
    type Args = AgentEvent<RequestArgs>;
    type Output = LlmCallConfig;
}

/// Arguments of [`AgentRequest`].
#[derive(Clone, Debug)]
pub struct RequestArgs {
    pub turn: u64,
    pub step: u64,
    pub signal: AbortSignal,
}

/// `agent/request-error`: offered in-band model failures; returning
/// `Some(RequestErrorAction::Retry)` re-issues the request within the same step.
#[derive(Debug)]
pub struct RequestError;
impl Event for RequestError {
    const NAME: &'static str = "agent/request-error";
}
impl Waterfall for RequestError {
    type Args = AgentEvent<RequestErrorArgs>;
    type Output = Option<RequestErrorAction>;
}

/// Arguments of [`RequestError`].
#[derive(Clone, Debug)]
pub struct RequestErrorArgs {
    pub turn: u64,
    pub step: u64,
    pub provider: String,
    pub failure: LlmFailure,
    /// The policy of the adapter registration that served the call, when it was prepared.
    pub retry_policy: Option<ResolvedRetryPolicy>,
    pub signal: AbortSignal,
}

/// What a request-error listener asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestErrorAction {
    Retry,
}

/// `agent/turn-stopping`: runs (serially) only when the turn would close; a listener may
/// `steer()` to continue it. Return values are ignored except that `Some` ends the chain.
#[derive(Debug)]
pub struct TurnStopping;
impl Event for TurnStopping {
    const NAME: &'static str = "agent/turn-stopping";
}
impl Serial for TurnStopping {
    type Args = AgentEvent<TurnStoppingArgs>;
    type Output = ();
}

/// Arguments of [`TurnStopping`].
#[derive(Clone, Debug)]
pub struct TurnStoppingArgs {
    pub turn: u64,
    pub signal: AbortSignal,
}

/// `agent-loop/config-start-failed` (unscoped): a configured agent failed before it was
/// published.
#[derive(Debug)]
pub struct ConfigStartFailed;
impl Event for ConfigStartFailed {
    const NAME: &'static str = "agent-loop/config-start-failed";
}
impl Notification for ConfigStartFailed {
    type Payload = ConfigStartFailure;
}

/// Payload of [`ConfigStartFailed`].
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigStartFailure {
    /// The configured agent's id (its `agents[].id`).
    pub config_id: String,
    pub session_id: Option<SessionId>,
    pub error: String,
}

/// The fused dispatcher for one agent: injects the subject and uses its scope as carrier.
///
/// Created before the agent exists (the inbox needs it during construction) and bound to
/// the agent once it is shared; dispatches before binding are skipped.
#[derive(Clone)]
pub struct AgentEvents {
    ctx: Context,
    carrier: ScopeKey,
    subject: Arc<OnceLock<Weak<dyn Agent>>>,
}

impl fmt::Debug for AgentEvents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentEvents")
            .field("carrier", &self.carrier)
            .finish()
    }
}

/// Why a dispatch could not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the agent of this dispatcher is not bound or no longer exists")]
pub struct SubjectGone;

impl AgentEvents {
    /// An unbound dispatcher routing through `ctx`'s kernel with `carrier`.
    pub fn new(ctx: Context, carrier: ScopeKey) -> Self {
        Self {
            ctx,
            carrier,
            subject: Arc::new(OnceLock::new()),
        }
    }

    /// A dispatcher bound to `agent` (carrier = its scope key).
    pub fn for_agent(ctx: &Context, agent: &Arc<dyn Agent>) -> Self {
        let events = Self::new(ctx.clone(), agent.scope_key().clone());
        events.bind(Arc::downgrade(agent));
        events
    }

    /// Binds the subject once; later binds are ignored (returns false).
    pub fn bind(&self, agent: Weak<dyn Agent>) -> bool {
        self.subject.set(agent).is_ok()
    }

    pub fn subject(&self) -> Option<Arc<dyn Agent>> {
        self.subject.get().and_then(Weak::upgrade)
    }

    pub fn carrier(&self) -> &ScopeKey {
        &self.carrier
    }

    fn wrap<T>(&self, data: T) -> Option<Arc<AgentEvent<T>>> {
        self.subject()
            .map(|agent| Arc::new(AgentEvent { agent, data }))
    }

    /// Contained notification: a failing listener is logged, the others still run.
    pub fn emit<E, T>(&self, data: T)
    where
        E: Notification<Payload = AgentEvent<T>>,
        T: Send + Sync + 'static,
    {
        if let Some(agent) = self.subject() {
            self.ctx
                .emit::<E>(Some(&self.carrier), &AgentEvent { agent, data });
        }
    }

    /// Notification whose first failing listener propagates (the veto form).
    pub fn emit_strict<E, T>(&self, data: T) -> Result<(), BoxError>
    where
        E: Notification<Payload = AgentEvent<T>>,
        T: Send + Sync + 'static,
    {
        let agent = self.subject().ok_or(SubjectGone)?;
        self.ctx
            .emit_strict::<E>(Some(&self.carrier), &AgentEvent { agent, data })
    }

    /// Serial dispatch.
    pub async fn serial<E, T>(&self, data: T) -> Result<Option<E::Output>, BoxError>
    where
        E: Serial<Args = AgentEvent<T>>,
        T: Send + Sync + 'static,
    {
        let args = self.wrap(data).ok_or(SubjectGone)?;
        self.ctx.serial::<E>(Some(&self.carrier), args).await
    }

    /// Waterfall dispatch with `default` innermost.
    pub async fn waterfall<E, T, D, DFut>(&self, data: T, default: D) -> Result<E::Output, BoxError>
    where
        E: Waterfall<Args = AgentEvent<T>>,
        T: Send + Sync + 'static,
        D: FnOnce(Arc<AgentEvent<T>>) -> DFut + Send + 'static,
        DFut: Future<Output = Result<E::Output, BoxError>> + Send + 'static,
    {
        let args = self.wrap(data).ok_or(SubjectGone)?;
        self.ctx
            .waterfall::<E, D, DFut>(Some(&self.carrier), args, default)
            .await
    }
}
