//! Manual compaction (spec §2.8): `compact_now`, idle only.
//!
//! The attempt runs as agent maintenance (the agent stays idle, prompts sent meanwhile queue
//! and run after it), owns no turn, selects everything but the newest balanced unit, skips the
//! pruner and the threshold, and flushes the session when the bracket closed. Nothing is
//! written when there is nothing worth compacting, or when the agent is busy.

use crate::engine::{CompactionEngine, CompactionResult};
use crate::failure::AttemptError;
use crate::region::{self, Owner, Region, Stability};
use crate::select::SelectFloor;
use dsh_agent::{AbortSignal, Agent, AgentCancelCause};
use dsh_llm::error_chain;
use std::sync::Arc;

/// Why a manual compaction did not compact, with a stable [`code`](Self::code) and the text
/// a person is shown ([`user_message`](Self::user_message)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManualCompactionError {
    /// The agent is not idle, or a compaction is already running.
    #[error("manual compaction is unavailable: {0}")]
    Busy(String),
    /// Cancelled (by the caller's signal or the agent's).
    #[error("manual compaction was cancelled")]
    Cancelled,
    /// The selected history changed while the summary was written.
    #[error("{0}")]
    Changed(String),
    /// No useful summary (model failure, truncation, empty, not smaller).
    #[error("{0}")]
    Summary(String),
    /// An append of the commit was refused; part of it may be in the log.
    #[error("{0}")]
    Commit(String),
    /// The compaction is in the log but the session could not be flushed.
    #[error("{0}")]
    Persistence(String),
}

impl ManualCompactionError {
    /// `busy`, `cancelled`, `changed`, `summary`, `commit` or `persistence`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Busy(_) => "busy",
            Self::Cancelled => "cancelled",
            Self::Changed(_) => "changed",
            Self::Summary(_) => "summary",
            Self::Commit(_) => "commit",
            Self::Persistence(_) => "persistence",
        }
    }

    /// What `/compact` tells the person.
    pub fn user_message(&self) -> &'static str {
        match self {
            Self::Busy(_) => {
                "Compaction is unavailable because this process has an active compaction, or the agent is not idle."
            }
            Self::Cancelled => "Compaction cancelled.",
            Self::Changed(_) => {
                "The history selected for compaction changed while the summary was being written. \
                 The conversation is unchanged; the attempt is recorded in the session log."
            }
            Self::Summary(_) => {
                "Compaction could not produce a useful summary. The conversation is unchanged; \
                 the attempt is recorded in the session log."
            }
            Self::Commit(_) => {
                "Compaction did not finish cleanly; some session history may have changed. \
                 The attempt is recorded in the session log."
            }
            Self::Persistence(_) => "Compaction finished, but the session could not be saved.",
        }
    }

    fn classify(error: AttemptError) -> Self {
        match error {
            AttemptError::Busy { reason } => Self::Busy(reason),
            AttemptError::Aborted => Self::Cancelled,
            AttemptError::Changed { .. } => Self::Changed(error_chain(&error)),
            AttemptError::Commit(_) => Self::Commit(error_chain(&error)),
            AttemptError::Persistence(_) => Self::Persistence(error_chain(&error)),
            other => Self::Summary(error_chain(&other)),
        }
    }
}

/// The text `/compact` shows for a successful or empty result.
pub fn result_message(result: Option<&CompactionResult>) -> String {
    match result {
        Some(result) => format!(
            "Compacted {} history items (~{} tokens).",
            result.shadowed_seqs.len(),
            result.shadowed_token_count
        ),
        None => "No compactable history yet.".into(),
    }
}

impl CompactionEngine {
    /// Compacts `agent`'s history now, as maintenance: fails with `busy` (nothing written)
    /// unless the agent is idle; `Ok(None)` (nothing written) when there is nothing worth
    /// compacting. The attempt runs to its end even if the returned future is dropped.
    pub async fn compact_now(
        &self,
        agent: &Arc<dyn Agent>,
        signal: AbortSignal,
        source_command_id: Option<String>,
    ) -> Result<Option<CompactionResult>, ManualCompactionError> {
        if signal.is_aborted() {
            return Err(ManualCompactionError::Cancelled);
        }
        let engine = self.handle().ok_or_else(|| {
            ManualCompactionError::Busy("the compaction service is shutting down".into())
        })?;
        let subject = Arc::clone(agent);
        let task = agent
            .run_maintenance(move |maintenance| async move {
                let combined = AbortSignal::new();
                let watcher = tokio::spawn(follow(maintenance, signal, combined.clone()));
                let outcome = manual_attempt(&engine, &subject, source_command_id, &combined).await;
                watcher.abort();
                outcome
            })
            .map_err(|_| {
                ManualCompactionError::Busy(
                    "manual compaction requires an idle agent with no waking queued work".into(),
                )
            })?;
        match task.await {
            Ok(outcome) => outcome.map_err(ManualCompactionError::classify),
            Err(error) => Err(ManualCompactionError::Summary(error.to_string())),
        }
    }
}

/// Aborts `combined` when either signal fires.
async fn follow(maintenance: AbortSignal, caller: AbortSignal, combined: AbortSignal) {
    let cause = tokio::select! {
        () = maintenance.cancelled() => maintenance.reason().cloned(),
        () = caller.cancelled() => caller.reason().cloned(),
    };
    combined.abort(cause.unwrap_or(AgentCancelCause::User));
}

async fn manual_attempt(
    engine: &CompactionEngine,
    agent: &Arc<dyn Agent>,
    source_command_id: Option<String>,
    signal: &AbortSignal,
) -> Result<Option<CompactionResult>, AttemptError> {
    if signal.is_aborted() {
        return Err(AttemptError::Aborted);
    }
    let session = agent.session();
    if let Some(reason) = engine.busy_reason(session) {
        return Err(AttemptError::Busy { reason });
    }
    let Some(range) = engine.select(session, 0, SelectFloor::framing())? else {
        return Ok(None);
    };
    let region = Region {
        range,
        owner: Owner::Standalone,
        stability: Stability::SelectedSpan,
        source_command_id,
    };
    region::run(engine, agent, region, signal).await.map(Some)
}
