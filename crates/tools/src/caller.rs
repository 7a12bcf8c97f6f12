//! [`ToolCaller`]: the agent a call runs for, as a tool body sees it.

use dsh_agent::{Agent, AgentError, AgentHandle, AgentRegistry, CreateAgentOptions};
use dsh_kernel::{Context, ScopeKey};
use dsh_protocol::SessionId;
use dsh_session::Session;
use std::fmt;
use std::sync::{Arc, Weak};

/// The calling agent of one tool execution (see [`crate::ToolExecution::caller`]).
///
/// It owns a strong reference, so a body may clone it (or [`downgrade`](Self::downgrade)
/// it) and keep it after the call returned: a background job wakes its owner later with
/// `caller.agent().followup(..)`. Keep a [`Weak`] for anything long-lived, so a disposed
/// agent is not kept alive by its jobs.
#[derive(Clone)]
pub struct ToolCaller {
    agent: Arc<dyn Agent>,
}

impl ToolCaller {
    pub fn new(agent: Arc<dyn Agent>) -> Self {
        Self { agent }
    }

    /// The agent itself: its inbox (`followup`, `steer`, `inject`), status and options.
    pub fn agent(&self) -> &Arc<dyn Agent> {
        &self.agent
    }

    pub fn id(&self) -> &SessionId {
        self.agent.id()
    }

    /// The live session the agent drives; what a tool records lands here.
    pub fn session(&self) -> &Session {
        self.agent.session()
    }

    /// The agent's scoped context: registrations through it are the agent's own and unwind
    /// when it is disposed; services (`ctx().get::<T>()`) are the kernel's.
    pub fn ctx(&self) -> &Context {
        self.agent.ctx()
    }

    pub fn scope_key(&self) -> &ScopeKey {
        self.agent.scope_key()
    }

    /// The kernel's agent registry, when one is mounted.
    pub fn registry(&self) -> Option<Arc<AgentRegistry>> {
        self.ctx().get::<AgentRegistry>()
    }

    /// Creates an agent owned by the caller: the registry records the caller as its owner,
    /// and disposing the caller disposes it.
    pub async fn create_child(
        &self,
        options: CreateAgentOptions,
    ) -> Result<AgentHandle, AgentError> {
        let registry = self.ctx().require::<AgentRegistry>()?;
        registry.create(self.ctx(), options).await
    }

    /// A handle that does not keep the agent alive.
    pub fn downgrade(&self) -> Weak<dyn Agent> {
        Arc::downgrade(&self.agent)
    }
}

impl fmt::Debug for ToolCaller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCaller")
            .field("agent", self.agent.id())
            .finish()
    }
}
