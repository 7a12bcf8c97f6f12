//! The agent contract: what an agent is, how input reaches it, and how it is published.
//!
//! - [`Agent`] is the trait every driver implements (the concrete one is
//!   `dsh-agent-loop`'s `ReactLoopAgent`); agents are shared as `Arc<dyn Agent>`.
//! - [`Inbox`] is an agent's pending input, a projection of the durable
//!   `agent/inbox/spliced` events of its session.
//! - [`events`] declares the `agent/*` extension points; [`AgentEvents`] is the fused
//!   dispatcher that injects the subject agent and scopes every dispatch to it.
//! - [`AgentRegistry`] (the `agents` service) tracks live agents and owners and delegates
//!   creation to the one registered [`AgentFactory`].
//! - The [initiator](initiator) chain says which agent started the current work;
//!   [`AbortSignal`] carries *why* work was cancelled ([`AgentCancelCause`]).
//! - [`fold_consumed_work`] and [`install_model_selection`] are small helpers for owners.

mod agent;
mod cause;
mod consumed;
mod error;
pub mod events;
mod inbox;
pub mod initiator;
mod model_selection;
mod registry;

#[cfg(test)]
mod testing;

pub use agent::{
    Agent, AgentFactory, AgentHandle, AgentOptions, AgentSetup, AgentStatus, CreateAgentOptions,
    MaintenanceLease, MaintenanceTask, ResumeAgentOptions, ResumeError, ResumeSource, SessionMeta,
    SetupCommit,
};
pub use cause::{AbortSignal, Aborted, AgentCancelCause, CancelOptions};
pub use consumed::{fold_consumed_work, ConsumedTurn, ConsumedWork};
pub use error::{AgentError, BoxError};
pub use events::{
    AgentCreated, AgentDisposed, AgentDisposing, AgentErrorEvent, AgentErrorReport, AgentEvent,
    AgentEvents, AgentRequest, AgentStatusChanged, ClaimedMessage, ConfigStartFailed,
    ConfigStartFailure, InboxClaimed, InboxDiscarded, InboxInserted, PreStep, PreStepArgs,
    PreStepDecision, RequestArgs, RequestError, RequestErrorAction, RequestErrorArgs, SessionStart,
    SessionStartSource, TurnStopping, TurnStoppingArgs,
};
pub use inbox::Inbox;
pub use initiator::{current_initiator, require_initiator, with_initiator, without_initiator};
pub use model_selection::{install_model_selection, ModelSelection, ModelSelectionRef};
pub use registry::{AgentRegistry, AgentsConfig, AgentsPlugin, RegistryExit};
