//! Errors of the agent contract. Every variant has a stable [`AgentError::code`].

use dsh_kernel::KernelError;
use dsh_protocol::{MessageId, SessionId};
use dsh_session::SessionError;

/// A boxed error from a listener, a factory or another crate (the kernel's one alias).
pub use dsh_kernel::BoxError;

/// Everything the agent contract can refuse.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// `require_initiator` outside any initiator boundary.
    #[error("no initiating agent is active")]
    NoInitiator,
    /// A new initiator boundary was requested after the registry started closing.
    #[error("agent initiator scope is disposed")]
    InitiatorClosed,
    /// `create`/`resume` without a factory.
    #[error("no agent factory registered (load an agent-loop plugin)")]
    NoFactory,
    /// A second factory while one is registered.
    #[error("an agent factory is already registered")]
    FactoryTaken,
    /// The agent's id differs from its session's id.
    #[error("agent id \"{agent}\" does not match its session id \"{session}\"")]
    IdMismatch {
        agent: SessionId,
        session: SessionId,
    },
    /// A live agent already uses this id.
    #[error("agent \"{id}\" already exists")]
    AlreadyExists { id: SessionId },
    /// `announce` ran twice for one entry.
    #[error("agent \"{id}\" was already announced")]
    AlreadyAnnounced { id: SessionId },
    /// `announce` for an agent that was never entered (or already left).
    #[error("agent \"{id}\" is not entered in the registry")]
    NotEntered { id: SessionId },
    /// An `agent/created` listener refused the agent.
    #[error("agent \"{id}\" creation was vetoed by a listener: {source}")]
    CreationVetoed {
        id: SessionId,
        #[source]
        source: BoxError,
    },
    /// `run_maintenance` while the agent is running or already maintaining.
    #[error("agent \"{id}\" already has active work")]
    Busy { id: SessionId },
    /// An inbox mutation would make a message id pending twice.
    #[error("message \"{id}\" is already pending")]
    DuplicatePending { id: MessageId },
    /// An inbox mutation attempted from inside the notification of another mutation of the
    /// same inbox on the same thread (for example from a `session/event` observer).
    #[error("inbox mutation cannot reenter while the same inbox is being written")]
    InboxReentered,
    /// A splice in the log that does not apply to the replayed inbox.
    #[error("invalid persisted inbox splice at session seq {seq}: {reason}")]
    InvalidPersistedSplice { seq: u64, reason: String },
    /// Options that cannot be honoured (`max_tokens` must be a positive safe integer, ...).
    #[error("invalid agent options: {reason}")]
    InvalidOptions { reason: String },
    /// Work needs a tokio runtime and none is running on this thread.
    #[error("no tokio runtime is available to run the agent")]
    NoRuntime,
    /// Resuming needs a persistence service and none is provided.
    #[error("resuming an agent requires a session persistence service")]
    NoPersistence,
    /// Creation was cancelled (creation signal, owner unload or factory teardown).
    #[error("agent creation was aborted")]
    CreationAborted,
    /// The session log refused a write.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The kernel refused a registration (for example on a disposed agent).
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// Any other failure (factories, setup callbacks, persistence).
    #[error("{message}")]
    Other {
        message: String,
        #[source]
        source: Option<BoxError>,
    },
}

impl AgentError {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoInitiator => "NO_INITIATOR",
            Self::InitiatorClosed => "INITIATOR_CLOSED",
            Self::NoFactory => "NO_AGENT_FACTORY",
            Self::FactoryTaken => "AGENT_FACTORY_TAKEN",
            Self::IdMismatch { .. } => "AGENT_ID_MISMATCH",
            Self::AlreadyExists { .. } => "AGENT_ALREADY_EXISTS",
            Self::AlreadyAnnounced { .. } => "AGENT_ALREADY_ANNOUNCED",
            Self::NotEntered { .. } => "AGENT_NOT_ENTERED",
            Self::CreationVetoed { .. } => "AGENT_CREATION_VETOED",
            Self::Busy { .. } => "AGENT_BUSY",
            Self::DuplicatePending { .. } => "DUPLICATE_PENDING_MESSAGE",
            Self::InboxReentered => "INBOX_REENTERED",
            Self::InvalidPersistedSplice { .. } => "INVALID_PERSISTED_SPLICE",
            Self::InvalidOptions { .. } => "INVALID_AGENT_OPTIONS",
            Self::NoRuntime => "NO_RUNTIME",
            Self::NoPersistence => "NO_PERSISTENCE",
            Self::CreationAborted => "CREATION_ABORTED",
            Self::Session(e) => e.code(),
            Self::Kernel(e) => e.code(),
            Self::Other { .. } => "AGENT_FAILED",
        }
    }

    /// Wraps any error as [`AgentError::Other`], keeping an `AgentError` inside as is.
    pub fn other(error: impl Into<BoxError>) -> Self {
        let error = error.into();
        match error.downcast::<AgentError>() {
            Ok(agent) => *agent,
            Err(error) => Self::Other {
                message: error.to_string(),
                source: Some(error),
            },
        }
    }

    /// An [`AgentError::Other`] with only a message.
    pub fn message(message: impl Into<String>) -> Self {
        Self::Other {
            message: message.into(),
            source: None,
        }
    }
}
