//! A minimal in-crate agent for unit tests of the inbox, events and registry.
//!
//! This is the one copy of a fake agent that stays outside `dsh_testkit::fake_agent`, and on
//! purpose: dsh-testkit depends on dsh-agent, so a unit test inside dsh-agent that used the
//! testkit's fake would see a second build of this crate, whose `Agent` trait is a different
//! type from the one under test. Integration tests of every crate use the testkit's.

use crate::{
    AbortSignal, Agent, AgentCancelCause, AgentError, AgentEvents, AgentOptions, AgentStatus,
    CancelOptions, Inbox, MaintenanceLease,
};
use dsh_kernel::{Context, ScopeKey};
use dsh_protocol::{Message, SessionId};
use dsh_session::{InboxTarget, Session, SessionHeader};
use futures_util::future::BoxFuture;
use std::sync::Arc;

pub(crate) struct FakeAgent {
    pub(crate) options: AgentOptions,
    pub(crate) session: Session,
    pub(crate) inbox: Inbox,
    pub(crate) ctx: Context,
    pub(crate) scope: ScopeKey,
}

pub(crate) fn session(id: &str) -> Session {
    Session::builder(SessionHeader::new(SessionId::from(id), 1))
        .clock(Arc::new(|| 7))
        .build()
        .unwrap()
}

impl FakeAgent {
    pub(crate) fn create(root: &Context, session: Session) -> Arc<FakeAgent> {
        let scope = ScopeKey::new(session.id().as_str());
        let ctx = root.create_scope(scope.clone(), None).unwrap();
        let events = AgentEvents::new(root.clone(), scope.clone());
        let inbox = Inbox::restore(session.clone(), events.clone()).unwrap();
        let agent = Arc::new(FakeAgent {
            options: AgentOptions::default(),
            session,
            inbox,
            ctx,
            scope,
        });
        let dyn_agent: Arc<dyn Agent> = agent.clone();
        events.bind(Arc::downgrade(&dyn_agent));
        agent
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
        AgentStatus::Idle
    }
    fn ctx(&self) -> &Context {
        &self.ctx
    }
    fn scope_key(&self) -> &ScopeKey {
        &self.scope
    }
    fn cancel(&self, _cause: AgentCancelCause, options: CancelOptions) -> Result<(), AgentError> {
        if !options.keep_inbox {
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
