//! An in-memory stand-in for the store's resume path.

use dsh_agent::{ResumeError, ResumeSource};
use dsh_protocol::SessionId;
use dsh_session::{interrupted_turn_closers, SeedSource, Session, SessionEvent, SessionHeader};
use futures_util::future::BoxFuture;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio_util::sync::CancellationToken;

/// A [`ResumeSource`] over logs saved in memory: on resume, a saved log is repaired the way
/// the store repairs a crashed one (deterministic closers appended) and seeded into an
/// unpublished session. Provide it with
/// [`Harness::mount_memory_source`](super::Harness::mount_memory_source).
#[derive(Debug, Default)]
pub struct MemorySource {
    logs: Mutex<HashMap<SessionId, Vec<Arc<SessionEvent>>>>,
}

impl MemorySource {
    /// Saves `events` as the stored log of `id` (as if the process stopped here).
    pub fn save(&self, id: &SessionId, events: Vec<Arc<SessionEvent>>) {
        self.lock().insert(id.clone(), events);
    }

    /// Saves `session`'s log as it is now.
    pub fn save_session(&self, session: &Session) {
        self.save(session.id(), session.events().to_vec());
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, Vec<Arc<SessionEvent>>>> {
        self.logs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ResumeSource for MemorySource {
    fn prepare(
        &self,
        id: &SessionId,
        _cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Session, ResumeError>> {
        let stored = self.lock().get(id).cloned();
        let id = id.clone();
        Box::pin(async move {
            let mut events = stored.ok_or(ResumeError::NotFound { id: id.clone() })?;
            events.extend(interrupted_turn_closers(&events).into_iter().map(Arc::new));
            Session::with_seed(SessionHeader::new(id, 1), events, SeedSource::Persistence)
                .map_err(|e| ResumeError::Failed(Box::new(e)))
        })
    }
}
