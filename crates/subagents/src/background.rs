//! One-shot background children (`subagent_fork` with `run_in_background: true`): run as
//! `subagent-N` jobs of the jobs registry, collected with `job_output`.

use crate::child::ChildPlan;
use crate::error::SubagentError;
use crate::service::Inner;
use dsh_tools::ToolExecution;
use std::sync::Arc;

/// Starts `plan` as a job owned by the caller; returns the job id.
pub(crate) fn start(
    _inner: &Arc<Inner>,
    _exec: &ToolExecution,
    _plan: ChildPlan,
    _prompt: String,
    _label: String,
) -> Result<String, SubagentError> {
    Err(SubagentError::Background(
        "background jobs unavailable: mount the jobs plugin, or call subagent_fork without run_in_background".into(),
    ))
}
