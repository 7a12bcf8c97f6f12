use std::sync::Arc;

use dsh_agent::{Agent, AgentCancelCause, AgentStatus, CancelOptions};
use dsh_kernel::Context;
use dsh_protocol::{Message, SessionId};
use dsh_session::{InboxTarget, Session, SessionHeader};
use dsh_testkit::fake_agent::FakeAgent;

fn session(id: &str) -> Session {
    Session::builder(SessionHeader::new(SessionId::from(id), 1))
        .clock(Arc::new(|| 7))
        .build()
        .unwrap()
}

#[test]
fn default_agent_is_idle_scoped_by_session_and_keeps_its_inbox_on_cancel() {
    let root = Context::root();
    let agent = FakeAgent::create(&root, session("s1")).unwrap();
    assert_eq!(agent.id(), &SessionId::from("s1"));
    assert_eq!(agent.scope_key().name(), "s1");
    assert_eq!(agent.status(), AgentStatus::Idle);

    agent
        .send(Message::user_text("hi"), InboxTarget::NextTurn, true)
        .unwrap();
    assert!(agent.inbox().has_pending());
    agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    assert!(agent.inbox().has_pending());
}

#[test]
fn builder_sets_status_and_lets_cancel_clear_the_inbox() {
    let root = Context::root();
    let agent = FakeAgent::builder()
        .status(AgentStatus::Running)
        .clear_inbox_on_cancel(true)
        .create(&root, session("s2"))
        .unwrap();
    assert_eq!(agent.status(), AgentStatus::Running);

    agent
        .send(Message::user_text("hi"), InboxTarget::NextTurn, true)
        .unwrap();
    agent
        .cancel(AgentCancelCause::User, CancelOptions::keep_inbox())
        .unwrap();
    assert!(agent.inbox().has_pending());
    agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    assert!(!agent.inbox().has_pending());
}
