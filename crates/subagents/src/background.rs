//! One-shot background children (`subagent_fork` with `run_in_background: true`): run as
//! `subagent-N` jobs of the jobs registry, collected with `job_output`, stopped with
//! `job_kill`; and the alias that lets `job_output` answer for a continuable child's id.

use crate::child::ChildPlan;
use crate::error::SubagentError;
use crate::outcome::StopReason;
use crate::run::run_one_shot;
use crate::service::Inner;
use dsh_jobs::{JobAliasResolver, JobHandle, JobKind, JobOutcome, JobRegistry};
use dsh_protocol::SessionId;
use dsh_tools::ToolExecution;
use futures_util::future::BoxFuture;
use std::sync::{Arc, Weak};
use tokio_util::sync::CancellationToken;

/// Stops a background child: its run sees the cancellation as the parent's.
struct StopRun(CancellationToken);

impl JobHandle for StopRun {
    fn kill(&self) -> BoxFuture<'static, ()> {
        self.0.cancel();
        Box::pin(async {})
    }
}

/// Starts `plan` as a job owned by the caller; returns the job id.
pub(crate) fn start(
    inner: &Arc<Inner>,
    exec: &ToolExecution,
    plan: ChildPlan,
    prompt: String,
    label: String,
) -> Result<String, SubagentError> {
    let caller = exec
        .caller()
        .ok_or(SubagentError::NoCaller {
            tool: "subagent_fork",
        })?
        .clone();
    let jobs = inner
        .ctx
        .get::<JobRegistry>()
        .ok_or(SubagentError::Unavailable {
            what: "background jobs",
            hint: "mount the jobs plugin, or call subagent_fork without run_in_background",
        })?;
    let runtime =
        tokio::runtime::Handle::try_current().map_err(|_| SubagentError::Unavailable {
            what: "background jobs",
            hint: "no async runtime is running",
        })?;
    let cancel = CancellationToken::new();
    let ticket = jobs
        .start(
            caller.agent(),
            JobKind::Subagent,
            label,
            Arc::new(StopRun(cancel.clone())),
        )
        .map_err(|e| SubagentError::Background(e.to_string()))?;
    let id = ticket.id().to_string();
    let inner = inner.clone();
    runtime.spawn(async move {
        let result = run_one_shot(&inner, &caller, plan, &prompt, &cancel).await;
        let outcome = match result {
            Ok((_, run)) => match run.stop {
                StopReason::Completed => JobOutcome::Completed {
                    detail: None,
                    output: Some(run.text()),
                },
                StopReason::Aborted => JobOutcome::Killed { detail: None },
                stop => JobOutcome::Failed {
                    detail: match &run.diagnostic {
                        Some(d) => format!("{}; diagnostic: {d}", stop.as_str()),
                        None => stop.as_str().to_owned(),
                    },
                },
            },
            Err(_) if cancel.is_cancelled() => JobOutcome::Killed { detail: None },
            Err(error) => JobOutcome::Failed {
                detail: error.to_string(),
            },
        };
        ticket.settle(outcome);
    });
    Ok(id)
}

/// `job_output` with a continuable child's id: its state and latest report, and what to
/// do instead.
pub(crate) struct ChildAlias(pub Weak<Inner>);

impl JobAliasResolver for ChildAlias {
    fn describe(&self, owner: &SessionId, id: &str) -> Option<String> {
        let inner = self.0.upgrade()?;
        let state = inner.state();
        let record = state
            .children
            .iter()
            .find(|c| c.id.as_str() == id && &c.parent == owner)?;
        let snapshot = inner.snapshot(record);
        let progress = if snapshot.working {
            "is working; you will get a notice when it settles".to_owned()
        } else {
            match snapshot.last_stop {
                Some(stop) => format!("has settled ({})", stop.as_str()),
                None => "is at rest".to_owned(),
            }
        };
        let mut text = format!(
            "{id} is a subagent id, not a job id: subagent {id} ({}) {progress}. Status: {}.",
            snapshot.label, snapshot.status
        );
        if let Some(report) = &snapshot.last_report {
            text.push_str(&format!("\nLatest report:\n{report}"));
        }
        if let Some(output) = &snapshot.last_output {
            text.push_str(&format!("\nClosing message:\n{output}"));
        }
        text.push_str("\nUse send_message to give it more work; do not poll it with job_output.");
        Some(text)
    }
}
