//! The initiator chain: which agent started the work currently running.
//!
//! A task-local "current agent". The loop runs each driver lifetime inside
//! [`with_initiator`]; the tool scheduler reads it with [`require_initiator`] and puts it in
//! every tool execution, and `agents.create` made from inside a tool records it as owner.

use crate::agent::Agent;
use crate::error::AgentError;
use std::future::Future;
use std::sync::Arc;

tokio::task_local! {
    static CURRENT: Option<Arc<dyn Agent>>;
}

/// Runs `work` with `agent` as the ambient initiator; returns its exact output.
pub fn with_initiator<F: Future>(
    agent: Arc<dyn Agent>,
    work: F,
) -> impl Future<Output = F::Output> {
    CURRENT.scope(Some(agent), work)
}

/// Runs `work` with no ambient initiator (work that must not be attributed to the caller).
pub fn without_initiator<F: Future>(work: F) -> impl Future<Output = F::Output> {
    CURRENT.scope(None, work)
}

/// Runs synchronous `work` with `agent` as the ambient initiator.
pub fn sync_with_initiator<R>(agent: Arc<dyn Agent>, work: impl FnOnce() -> R) -> R {
    CURRENT.sync_scope(Some(agent), work)
}

/// The agent of the innermost enclosing initiator boundary, if any.
pub fn current_initiator() -> Option<Arc<dyn Agent>> {
    CURRENT.try_with(Clone::clone).ok().flatten()
}

/// Like [`current_initiator`], or `no initiating agent is active`.
pub fn require_initiator() -> Result<Arc<dyn Agent>, AgentError> {
    current_initiator().ok_or(AgentError::NoInitiator)
}
