//! A minimal [`Agent`] over a live session, for tests that dispatch `agent/*` or tool events
//! without running the real loop.
//!
//! Listeners under test (retry, checkpoints, tool approval, ...) only need an agent that
//! owns a session, an inbox restored from it and a scope under the kernel root; this fake
//! provides exactly that and nothing else: it never runs turns, `when_idle` resolves at
//! once and maintenance always succeeds.
//!
//! ```no_run
//! # use dsh_testkit::fake_agent::FakeAgent;
//! # use dsh_agent::AgentStatus;
//! # fn demo(root: &dsh_kernel::Context, session: dsh_session::Session) -> Result<(), dsh_agent::AgentError> {
//! let agent = FakeAgent::builder()
//!     .status(AgentStatus::Running)
//!     .create(root, session)?;
//! # Ok(()) }
//! ```

use std::sync::Arc;

use dsh_agent::{
    AbortSignal, Agent, AgentCancelCause, AgentError, AgentEvents, AgentOptions, AgentStatus,
    CancelOptions, Inbox, MaintenanceLease,
};
use dsh_kernel::{Context, ScopeKey};
use dsh_protocol::{Message, SessionId};
use dsh_session::{InboxTarget, Session};
use futures_util::future::BoxFuture;

/// An agent that drives nothing: it holds a session, its inbox and a scope.
///
/// `send` appends to the inbox; `cancel` does nothing unless built with
/// [`FakeAgentBuilder::clear_inbox_on_cancel`].
pub struct FakeAgent {
    options: AgentOptions,
    session: Session,
    inbox: Inbox,
    ctx: Context,
    scope: ScopeKey,
    status: AgentStatus,
    clear_inbox_on_cancel: bool,
}

/// How a [`FakeAgent`] behaves where tests disagree: the status it reports and whether
/// `cancel` honours `keep_inbox`.
#[derive(Clone, Debug)]
pub struct FakeAgentBuilder {
    status: AgentStatus,
    clear_inbox_on_cancel: bool,
}

impl Default for FakeAgentBuilder {
    fn default() -> Self {
        Self {
            status: AgentStatus::Idle,
            clear_inbox_on_cancel: false,
        }
    }
}

impl FakeAgentBuilder {
    /// The status `status()` always reports (default [`AgentStatus::Idle`]); listeners that
    /// act only mid-turn want [`AgentStatus::Running`].
    pub fn status(mut self, status: AgentStatus) -> Self {
        self.status = status;
        self
    }

    /// Makes `cancel` clear the inbox unless `keep_inbox` is set, as the real loop does.
    pub fn clear_inbox_on_cancel(mut self, clear: bool) -> Self {
        self.clear_inbox_on_cancel = clear;
        self
    }

    /// Opens the agent's scope under `root` (keyed by the session id), restores the inbox
    /// from `session` and binds the agent's event emitter to it.
    pub fn create(self, root: &Context, session: Session) -> Result<Arc<FakeAgent>, AgentError> {
        let scope = ScopeKey::new(session.id().as_str());
        let ctx = root.create_scope(scope.clone(), None)?;
        let events = AgentEvents::new(root.clone(), scope.clone());
        let inbox = Inbox::restore(session.clone(), events.clone())?;
        let agent = Arc::new(FakeAgent {
            options: AgentOptions::default(),
            session,
            inbox,
            ctx,
            scope,
            status: self.status,
            clear_inbox_on_cancel: self.clear_inbox_on_cancel,
        });
        let dyn_agent: Arc<dyn Agent> = agent.clone();
        events.bind(Arc::downgrade(&dyn_agent));
        Ok(agent)
    }
}

impl FakeAgent {
    /// Options for an agent that differs from the default (idle, cancel keeps the inbox).
    pub fn builder() -> FakeAgentBuilder {
        FakeAgentBuilder::default()
    }

    /// An idle agent whose `cancel` leaves the inbox alone, shared as `Arc<dyn Agent>`.
    pub fn create(root: &Context, session: Session) -> Result<Arc<dyn Agent>, AgentError> {
        let agent: Arc<dyn Agent> = Self::builder().create(root, session)?;
        Ok(agent)
    }
}

impl Agent for FakeAgent {
    fn id(&self) -> &SessionId {
        self.session.id()
    }
    fn options(&self) -> &AgentOptions {
        &self.options
    }
    fn session(&self) -> &Session {
        &self.session
    }
    fn inbox(&self) -> &Inbox {
        &self.inbox
    }
    fn status(&self) -> AgentStatus {
        self.status
    }
    fn ctx(&self) -> &Context {
        &self.ctx
    }
    fn scope_key(&self) -> &ScopeKey {
        &self.scope
    }
    fn cancel(&self, _cause: AgentCancelCause, options: CancelOptions) -> Result<(), AgentError> {
        if self.clear_inbox_on_cancel && !options.keep_inbox {
            self.inbox.clear()?;
        }
        Ok(())
    }
    fn when_idle(&self) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
    fn begin_maintenance(&self) -> Result<MaintenanceLease, AgentError> {
        Ok(MaintenanceLease::new(AbortSignal::new(), || {}))
    }
    fn send(&self, message: Message, target: InboxTarget, _wakeup: bool) -> Result<(), AgentError> {
        self.inbox.append(target, message)
    }
}
