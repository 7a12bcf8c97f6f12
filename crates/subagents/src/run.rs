//! One-shot runs: a child started for one result, awaited in the foreground (the parent's
//! tool call waits) and disposed when it ends.

use crate::child::{self, ChildPlan};
use crate::error::SubagentError;
use crate::outcome::{fold_outcome, RunOutcome};
use crate::service::{ChildLifecycle, Inner, SubagentEnd, SubagentStart};
use dsh_agent::{Agent, AgentCancelCause, CancelOptions};
use dsh_protocol::{ContentBlock, Message, MessageSource, Role};
use dsh_tools::ToolCaller;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The child's first message: a person's on every path (it is the task).
pub(crate) fn task_message(prompt: &str) -> Message {
    Message::new(
        Role::User,
        vec![ContentBlock::text(prompt)],
        MessageSource::user(),
    )
}

/// Runs `plan` to its end; the parent's `signal` cancels the child with cause `parent`.
pub(crate) async fn run_one_shot(
    inner: &Arc<Inner>,
    caller: &ToolCaller,
    plan: ChildPlan,
    prompt: &str,
    signal: &CancellationToken,
) -> Result<(String, RunOutcome), SubagentError> {
    if signal.is_cancelled() {
        return Err(SubagentError::Background(
            "subagent request was aborted before child publication".into(),
        ));
    }
    let options = child::create_options(inner, &plan)?;
    let handle = caller.create_child(options).await?;
    let child = handle.agent().clone();
    let run_id = uuid::Uuid::new_v4().to_string();
    let lifecycle = ChildLifecycle {
        run_id: run_id.clone(),
        provider: plan.provider.name().to_owned(),
        id: plan.id.clone(),
        parent: caller.id().clone(),
        mode: plan.descriptor.mode,
        label: plan.descriptor.label.clone().unwrap_or_default(),
        stop: None,
        last_message: None,
    };
    inner.ctx.emit::<SubagentStart>(None, &lifecycle);
    let first_live = child.session().first_live_seq();
    let cancelled = match child.followup(task_message(prompt)) {
        Ok(()) => wait(&child, signal).await,
        Err(error) => {
            handle.dispose().await;
            inner.ctx.emit::<SubagentEnd>(
                None,
                &ChildLifecycle {
                    stop: Some(crate::outcome::StopReason::Error),
                    ..lifecycle
                },
            );
            return Err(error.into());
        }
    };
    let events = child.session().events_from(first_live);
    let outcome = fold_outcome(&events, false, cancelled);
    handle.dispose().await;
    let text = outcome.text();
    inner.ctx.emit::<SubagentEnd>(
        None,
        &ChildLifecycle {
            stop: Some(outcome.stop),
            last_message: (!text.is_empty()).then_some(text),
            ..lifecycle
        },
    );
    Ok((run_id, outcome))
}

/// Waits for the child to finish; returns whether the parent cancelled it.
async fn wait(child: &Arc<dyn Agent>, signal: &CancellationToken) -> bool {
    tokio::select! {
        biased;
        () = child.when_idle() => false,
        () = signal.cancelled() => {
            if let Err(error) = child.cancel(AgentCancelCause::Parent, CancelOptions::default()) {
                tracing::debug!(child = %child.id(), %error, "cancelling a subagent failed");
            }
            child.when_idle().await;
            true
        }
    }
}
