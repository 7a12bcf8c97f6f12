//! The `session-checkpoint-policy` plugin: *when* the write-behind log must be durable.
//!
//! Write-behind keeps streaming cheap, but a crash must never lose anything a model or a
//! tool has already acted on. So the log is flushed at exactly three points, each just
//! before something leaves the process:
//!
//! - `llm/stream`: before a request carrying a live session id is handed on (the request is
//!   derived from the log, so the log holds everything it was built from);
//! - `agent/pre-step`: before the next step is derived (the previous step's answer and tool
//!   results become durable);
//! - `tools/execute`: before the body of a top-level call made by an agent (a side effect
//!   never happens without its `tool/call` on disk); a call whose signal was cancelled
//!   during that flush is settled as aborted-before-dispatch instead of running.
//!
//! Turn boundaries and streamed chunks do not flush: what a crash loses there is what no
//! model has been asked about. A failed flush is an error at every point — the request is
//! not sent, the step not entered, the tool not run — with a message that says what to fix.

use std::fmt;
use std::io;
use std::sync::Arc;

use dsh_agent::PreStep;
use dsh_kernel::{BoxError, Context, Plugin, ServiceName};
use dsh_llm::LlmStream;
use dsh_protocol::SessionId;
use dsh_session::{Session, SessionError, SessionStore};
use dsh_tools::{Execute, InvocationResult, ToolExecution, ToolFailure, ToolOutcome};

use crate::error::StoreError;

/// Where a checkpoint is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CheckpointPoint {
    /// Before a model request is sent.
    ModelRequest,
    /// Before an agent's next step is derived.
    PreStep,
    /// Before a top-level tool body runs.
    ToolCall,
}

impl CheckpointPoint {
    /// What did not happen because the checkpoint failed.
    fn withheld(self) -> &'static str {
        match self {
            CheckpointPoint::ModelRequest => "the model request was not sent",
            CheckpointPoint::PreStep => "the next step was not started",
            CheckpointPoint::ToolCall => "the tool call was not run",
        }
    }
}

/// The likely cause of a failed checkpoint, read from the error chain, so the message can
/// tell the user what to fix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StorageProblem {
    /// No space (or quota) left on the device holding the sessions root.
    DiskFull,
    /// The sessions root, or the log, may not be written (permissions, read-only mount).
    NotWritable,
    /// Another process holds the log's write lock.
    Locked,
    /// Anything else (corruption found while reopening, a poisoned writer, ...).
    Other,
}

impl StorageProblem {
    /// Classifies the first recognisable cause in `error`'s source chain.
    pub fn of(error: &(dyn std::error::Error + 'static)) -> Self {
        let mut current = Some(error);
        while let Some(err) = current {
            if let Some(StoreError::Locked { .. }) = err.downcast_ref::<StoreError>() {
                return StorageProblem::Locked;
            }
            if let Some(io) = err.downcast_ref::<io::Error>() {
                match io.kind() {
                    io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => {
                        return StorageProblem::DiskFull
                    }
                    io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
                        return StorageProblem::NotWritable
                    }
                    _ => {}
                }
            }
            current = err.source();
        }
        StorageProblem::Other
    }
}

impl fmt::Display for StorageProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StorageProblem::DiskFull => {
                "the disk holding the session store is full: free some space, then resume \
                 the session"
            }
            StorageProblem::NotWritable => {
                "the session store is not writable: fix the permissions of the sessions \
                 directory (or remount it read-write), then resume the session"
            }
            StorageProblem::Locked => {
                "another dsh process is writing this session: stop it, then resume the session"
            }
            StorageProblem::Other => {
                "check the session store (`dsh sessions verify`), then resume the session"
            }
        })
    }
}

/// A checkpoint could not make the session log durable.
#[derive(Debug, thiserror::Error)]
#[error(
    "session \"{session}\" could not be saved to disk, so {withheld}; {problem}",
    withheld = point.withheld()
)]
pub struct CheckpointError {
    pub session: SessionId,
    pub point: CheckpointPoint,
    pub problem: StorageProblem,
    #[source]
    pub source: SessionError,
}

impl CheckpointError {
    fn new(session: &Session, point: CheckpointPoint, source: SessionError) -> Self {
        CheckpointError {
            session: session.id().clone(),
            point,
            problem: StorageProblem::of(&source),
            source,
        }
    }

    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        "SESSION_CHECKPOINT_FAILED"
    }
}

/// Flushes `session` through every `session/flush` listener (the persistence plugin).
pub async fn checkpoint(
    sessions: &SessionStore,
    session: &Session,
    point: CheckpointPoint,
) -> Result<(), CheckpointError> {
    sessions
        .flush(session)
        .await
        .map_err(|source| CheckpointError::new(session, point, source))
}

/// The canonical outcome of a call cancelled before its body started.
fn aborted_before_dispatch(exec: &ToolExecution) -> ToolFailure {
    let result = InvocationResult::aborted_before_dispatch(exec.call_id().clone(), exec.name());
    match result.outcome {
        ToolOutcome::Failure { error } => ToolFailure {
            message: error.message,
            info: error.info,
        },
        // `aborted_before_dispatch` always builds a failure.
        ToolOutcome::Success { .. } => ToolFailure::new("tool call aborted before dispatch"),
    }
}

/// Mounts the flush policy. Needs the session store; flushing does nothing useful unless a
/// persistence plugin listens to `session/flush`.
#[derive(Debug)]
pub struct CheckpointPolicyPlugin;

impl Plugin for CheckpointPolicyPlugin {
    const NAME: &'static str = "session-checkpoint-policy";
    type Config = ();

    fn requires() -> Vec<ServiceName> {
        vec![ServiceName::of::<SessionStore>()]
    }

    fn apply(ctx: &Context, (): ()) -> Result<(), BoxError> {
        let sessions = ctx.require::<SessionStore>()?;

        let store = Arc::clone(&sessions);
        ctx.on_waterfall::<LlmStream, _, _>(move |request, next| {
            let store = Arc::clone(&store);
            async move {
                let live = request.session_id.as_ref().and_then(|id| store.get(id));
                if let Some(session) = live {
                    checkpoint(&store, &session, CheckpointPoint::ModelRequest).await?;
                }
                next.run().await
            }
        })?
        .forget();

        let store = Arc::clone(&sessions);
        ctx.on_waterfall::<PreStep, _, _>(move |args, next| {
            let store = Arc::clone(&store);
            async move {
                let session = args.agent.session().clone();
                if store.is_live(&session) {
                    checkpoint(&store, &session, CheckpointPoint::PreStep).await?;
                }
                next.run().await
            }
        })?
        .forget();

        let store = sessions;
        ctx.on_waterfall::<Execute, _, _>(move |args, next| {
            let store = Arc::clone(&store);
            async move {
                let exec = Arc::clone(args.execution());
                // Nested calls run inside a top-level call whose checkpoint covered them.
                let session = match (exec.parent(), exec.caller()) {
                    (None, Some(caller)) => Some(caller.session().clone()),
                    _ => None,
                };
                if let Some(session) = session {
                    if store.is_live(&session) {
                        checkpoint(&store, &session, CheckpointPoint::ToolCall).await?;
                    }
                    if exec.signal().is_cancelled() || args.signal().is_cancelled() {
                        return Ok(Err(aborted_before_dispatch(&exec)));
                    }
                }
                next.run().await
            }
        })?
        .forget();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn flush_failure(source: StoreError) -> SessionError {
        SessionError::FlushFailed {
            id: SessionId::from("s-1"),
            source: Box::new(source),
        }
    }

    fn io_failure(kind: io::ErrorKind) -> SessionError {
        flush_failure(StoreError::Io {
            op: "append to",
            path: PathBuf::from("/sessions/s-1/session.jsonl"),
            source: io::Error::new(kind, "refused"),
        })
    }

    #[test]
    fn problems_are_read_from_the_error_chain() {
        let cases = [
            (
                io_failure(io::ErrorKind::StorageFull),
                StorageProblem::DiskFull,
            ),
            (
                io_failure(io::ErrorKind::QuotaExceeded),
                StorageProblem::DiskFull,
            ),
            (
                io_failure(io::ErrorKind::PermissionDenied),
                StorageProblem::NotWritable,
            ),
            (
                io_failure(io::ErrorKind::ReadOnlyFilesystem),
                StorageProblem::NotWritable,
            ),
            (io_failure(io::ErrorKind::Other), StorageProblem::Other),
            (
                flush_failure(StoreError::Locked {
                    path: PathBuf::from("/x"),
                }),
                StorageProblem::Locked,
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(StorageProblem::of(&error), expected, "{error}");
        }
    }

    #[test]
    fn message_says_what_was_withheld_and_what_to_do() {
        let session =
            Session::new(dsh_session::SessionHeader::new(SessionId::from("s-1"), 1)).unwrap();
        let err = CheckpointError::new(
            &session,
            CheckpointPoint::ModelRequest,
            io_failure(io::ErrorKind::StorageFull),
        );
        assert_eq!(err.code(), "SESSION_CHECKPOINT_FAILED");
        assert_eq!(
            err.to_string(),
            "session \"s-1\" could not be saved to disk, so the model request was not sent; \
             the disk holding the session store is full: free some space, then resume the \
             session"
        );
        // the chain still names the file
        let chain = dsh_llm::error_chain(&err);
        assert!(chain.contains("/sessions/s-1/session.jsonl"), "{chain}");
    }
}
