//! The model-facing tools: `subagent` and `subagent_fork` (delegate), `send_message`,
//! `interrupt_agent` and `list_agents` (control), and a continuable child's `report`.

pub mod control;
pub mod delegate;
pub mod report;

use crate::error::SubagentError;
use crate::service::Inner;
use dsh_tools::{ToolCaller, ToolExecution};
use std::sync::{Arc, Weak};

/// The service and the calling agent, or the typed refusal.
pub(crate) fn context<'a>(
    inner: &Weak<Inner>,
    exec: &'a ToolExecution,
    tool: &'static str,
) -> Result<(Arc<Inner>, &'a ToolCaller), SubagentError> {
    let inner = inner.upgrade().ok_or(SubagentError::Unavailable {
        what: "subagents",
        hint: "the subagents plugin was unloaded",
    })?;
    let caller = exec.caller().ok_or(SubagentError::NoCaller { tool })?;
    Ok((inner, caller))
}
