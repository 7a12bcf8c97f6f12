//! What delegation refuses, with stable codes the tool results carry.

use dsh_protocol::SessionId;
use dsh_tools::ToolFailure;

/// A refused or failed delegation step. `code()` is the stable wire string.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubagentError {
    /// The child would sit deeper than the configured cap.
    #[error("subagent depth {depth} exceeds maxDepth {max}; do the work yourself instead of delegating it further")]
    Depth { depth: u64, max: u64 },
    /// The tool ran outside any agent.
    #[error("{tool} requires a calling agent")]
    NoCaller { tool: &'static str },
    /// A service the step needs is not mounted.
    #[error("{what} unavailable: {hint}")]
    Unavailable {
        what: &'static str,
        hint: &'static str,
    },
    /// No child of this process or of the store has this id.
    #[error("unknown subagent {id}: use an id returned by subagent (list_agents shows them); a background job id (bash-N, subagent-N) is read with job_output instead")]
    Unknown { id: String },
    /// The caller may not act on this agent.
    #[error("agent {id} was not started by you (only its direct parent may message it, and only an ancestor may interrupt it)")]
    Unauthorized { id: SessionId },
    /// The stored session is not a continuable child.
    #[error("subagent {id} cannot be resumed ({reason}); do not retry send_message with this id")]
    NotResumable { id: SessionId, reason: String },
    /// The child's parent is gone (a report with no one to receive it).
    #[error(
        "the agent that started you is no longer running; finish with a closing message instead"
    )]
    ParentUnavailable,
    /// `run_in_background` was asked of a tool that cannot run in the background here.
    #[error("{0}")]
    Background(String),
    /// Creating, resuming or messaging the child failed.
    #[error("{0}")]
    Agent(#[from] dsh_agent::AgentError),
    /// Composing the child failed.
    #[error("could not set the subagent up: {0}")]
    Setup(String),
}

impl SubagentError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Depth { .. } => "SUBAGENT_DEPTH",
            Self::NoCaller { .. } => "NO_CALLING_AGENT",
            Self::Unavailable { .. } => "SUBAGENTS_UNAVAILABLE",
            Self::Unknown { .. } => "UNKNOWN_SUBAGENT",
            Self::Unauthorized { .. } => "UNAUTHORIZED",
            Self::NotResumable { .. } => "NOT_RESUMABLE",
            Self::ParentUnavailable => "PARENT_UNAVAILABLE",
            Self::Background(_) => "BACKGROUND_UNAVAILABLE",
            Self::Agent(_) => "SUBAGENT_FAILED",
            Self::Setup(_) => "SUBAGENT_SETUP_FAILED",
        }
    }

    /// As the coded result of `tool`.
    pub fn into_failure(self, tool: &str) -> ToolFailure {
        ToolFailure::coded(tool, self.code(), self.to_string())
    }
}
