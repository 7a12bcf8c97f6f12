//! The store's side of resume: [`dsh_agent::ResumeSource`] over the write coordinator.
//!
//! The agent factory asks the `dyn ResumeSource` service for an unpublished session and
//! publishes it itself. Preparing goes through the [`WriteCoordinator`] rather than the
//! backend directly, so that a session this process is still persisting is flushed first
//! and refused while its turn runs: repair may close a turn a crash left open, never one
//! that is still live.

use dsh_agent::{ResumeError, ResumeSource};
use dsh_protocol::SessionId;
use dsh_session::Session;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::coordinator::WriteCoordinator;
use crate::error::StoreError;

/// Resume was cancelled by the caller before the session was ready.
///
/// A repair already committed stays committed: it is what any later load would write.
#[derive(Debug, thiserror::Error)]
#[error("resuming session \"{id}\" was cancelled")]
pub struct ResumeCancelled {
    pub id: SessionId,
}

impl ResumeCancelled {
    pub fn code(&self) -> &'static str {
        "RESUME_CANCELLED"
    }
}

/// Loads stored sessions for resume: read, repair a crashed tail durably, construct.
///
/// The session comes back seeded from the log (seed source `persistence`) with the
/// `session/end-seed` marker appended; the marker is stored by the first flush after the
/// session is published. Failures other than "not stored" carry the [`StoreError`], which
/// names the file (and, for corruption, the line).
#[derive(Clone, Debug)]
pub struct StoreResumeSource {
    coordinator: WriteCoordinator,
}

impl StoreResumeSource {
    pub fn new(coordinator: WriteCoordinator) -> Self {
        StoreResumeSource { coordinator }
    }
}

fn resume_error(id: &SessionId, err: StoreError) -> ResumeError {
    match err {
        StoreError::NotFound { .. } => ResumeError::NotFound { id: id.clone() },
        other => ResumeError::Failed(Box::new(other)),
    }
}

impl ResumeSource for StoreResumeSource {
    fn prepare(
        &self,
        id: &SessionId,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Session, ResumeError>> {
        let coordinator = self.coordinator.clone();
        let id = id.clone();
        Box::pin(async move {
            let cancelled =
                |id: &SessionId| ResumeError::Failed(Box::new(ResumeCancelled { id: id.clone() }));
            if cancel.is_cancelled() {
                return Err(cancelled(&id));
            }
            let prepared = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(cancelled(&id)),
                prepared = coordinator.prepare(&id) => prepared,
            };
            let prepared = prepared.map_err(|err| resume_error(&id, err))?;
            if !prepared.closers.is_empty() || prepared.torn_tail.is_some() {
                tracing::info!(
                    session = %id,
                    closers = prepared.closers.len(),
                    torn_tail = prepared.torn_tail.is_some(),
                    "repaired a session a crash left open"
                );
            }
            Ok(prepared.session)
        })
    }
}
