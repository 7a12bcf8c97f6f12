//! Write-behind: batching session events into durable appends.
//!
//! Syncing after every streamed chunk would make the disk the bottleneck of every answer,
//! so events are written in batches: the first unwritten event arms a fixed window (200 ms
//! by default), events arriving meanwhile join it, and its expiry writes them as one append.
//! The agent loop asks for a [`flush`](WriteCoordinator::flush) before each model request,
//! tool side effect and pre-step; a flush cancels the window and drains everything,
//! including events that arrive while it drains, so a crash loses at most what no model has
//! been asked about yet.
//!
//! The session itself is the queue: the coordinator keeps the session and a cursor (the
//! next seq the store holds) and writes `events_from(cursor)`. A failed write therefore
//! loses nothing: the events stay in the session, automatic retries pause until a new event
//! arrives, and the next flush retries and reports a repeated failure. One write per session
//! runs at a time, in seq order.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use dsh_protocol::SessionId;
use dsh_session::{interrupted_turn_closers, EventData, SeedSource, Session, SessionError};
use tokio::runtime::Handle;

use crate::error::StoreError;
use crate::persistence::{SessionPersistence, SessionPreparation};

/// Batching settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteBehindConfig {
    /// How long the first unwritten event may wait for company (`writeBatchMaxDelayMs`).
    pub max_delay: Duration,
}

impl Default for WriteBehindConfig {
    fn default() -> Self {
        WriteBehindConfig {
            max_delay: Duration::from_millis(200),
        }
    }
}

#[derive(Debug)]
struct QueueState {
    /// The next seq the store holds; events before it are written.
    stored_next: u64,
    timer_armed: bool,
    /// Bumped to cancel an armed window.
    timer_generation: u64,
    /// A background write failed; wait for a new event or a flush before retrying.
    paused: bool,
    failure_logged: bool,
}

#[derive(Debug)]
struct Queue {
    session: Session,
    state: Mutex<QueueState>,
    /// Serializes this session's writes (held across the blocking append).
    writing: tokio::sync::Mutex<()>,
}

struct Inner {
    persistence: Arc<dyn SessionPersistence>,
    config: WriteBehindConfig,
    /// Where batching windows run; taken from the first caller inside a runtime.
    runtime: OnceLock<Handle>,
    queues: Mutex<HashMap<SessionId, Arc<Queue>>>,
}

/// Persists live sessions through a [`SessionPersistence`] with write-behind batching.
#[derive(Clone)]
pub struct WriteCoordinator {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for WriteCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteCoordinator")
            .field("config", &self.inner.config)
            .field("sessions", &lock(&self.inner.queues).len())
            .finish()
    }
}

use dsh_kernel::sync::lock;

impl WriteCoordinator {
    /// A coordinator whose batching windows run on the tokio runtime it is created or first
    /// notified on. Until it has seen a runtime, events wait for an explicit flush.
    pub fn new(persistence: Arc<dyn SessionPersistence>, config: WriteBehindConfig) -> Self {
        let runtime = OnceLock::new();
        if let Ok(handle) = Handle::try_current() {
            let _ = runtime.set(handle);
        }
        WriteCoordinator {
            inner: Arc::new(Inner {
                persistence,
                config,
                runtime,
                queues: Mutex::new(HashMap::new()),
            }),
        }
    }

    fn runtime(&self) -> Option<Handle> {
        if let Some(handle) = self.inner.runtime.get() {
            return Some(handle.clone());
        }
        let handle = Handle::try_current().ok()?;
        Some(self.inner.runtime.get_or_init(|| handle).clone())
    }

    fn queue(&self, id: &SessionId) -> Option<Arc<Queue>> {
        lock(&self.inner.queues).get(id).cloned()
    }

    /// Removes `queue` from the map if it is still the one registered for `id`.
    fn remove_if_current(&self, id: &SessionId, queue: &Arc<Queue>) -> bool {
        let mut queues = lock(&self.inner.queues);
        match queues.get(id) {
            Some(current) if Arc::ptr_eq(current, queue) => {
                queues.remove(id);
                true
            }
            _ => false,
        }
    }

    pub fn persistence(&self) -> &Arc<dyn SessionPersistence> {
        &self.inner.persistence
    }

    /// Starts persisting a live session (`session/created`).
    ///
    /// A new session is registered with the store (which writes nothing yet); a resumed one
    /// continues after what is stored. Events the store does not hold yet — a fork's seed,
    /// the `session/end-seed` marker of a resume — are scheduled like any new event.
    pub fn register(&self, session: &Session) -> Result<(), StoreError> {
        let id = session.id();
        // The same live session registering again is a no-op. A *different* session with this
        // id is a successor (the log was disposed and resumed again in this process): its
        // predecessor's queue was drained by `prepare`, and may still be waiting for its
        // detached release; the successor must get a queue of its own, or its events would
        // join the stale queue and never be written.
        if let Some(existing) = lock(&self.inner.queues).get(id) {
            if Session::ptr_eq(&existing.session, session) {
                return Ok(());
            }
        }
        // Only a session loaded from the store continues a stored log; any other session
        // is new, and a stored log with its id makes `create` fail rather than be joined.
        let stored_next = if session.seed_source() == Some(SeedSource::Persistence) {
            self.inner.persistence.next_seq(id)?
        } else {
            self.inner.persistence.create(session.header())?;
            0
        };
        let queue = Arc::new(Queue {
            session: session.clone(),
            state: Mutex::new(QueueState {
                stored_next,
                timer_armed: false,
                timer_generation: 0,
                paused: false,
                failure_logged: false,
            }),
            writing: tokio::sync::Mutex::new(()),
        });
        lock(&self.inner.queues).insert(id.clone(), Arc::clone(&queue));
        if session.len() > stored_next {
            self.arm(&queue);
        }
        Ok(())
    }

    /// A session event was committed (`session/event`): make sure a window is armed.
    pub fn notify(&self, id: &SessionId) {
        let queue = lock(&self.inner.queues).get(id).cloned();
        if let Some(queue) = queue {
            lock(&queue.state).paused = false;
            self.arm(&queue);
        }
    }

    fn arm(&self, queue: &Arc<Queue>) {
        let Some(runtime) = self.runtime() else {
            return;
        };
        let generation = {
            let mut state = lock(&queue.state);
            if state.timer_armed || state.paused {
                return;
            }
            state.timer_armed = true;
            state.timer_generation += 1;
            state.timer_generation
        };
        let inner = Arc::clone(&self.inner);
        let queue = Arc::clone(queue);
        runtime.spawn(async move {
            tokio::time::sleep(inner.config.max_delay).await;
            {
                let mut state = lock(&queue.state);
                if !state.timer_armed || state.timer_generation != generation {
                    return;
                }
                state.timer_armed = false;
            }
            let _writing = queue.writing.lock().await;
            if let Err(err) = write_batch(&inner, &queue).await {
                let mut state = lock(&queue.state);
                state.paused = true;
                if !state.failure_logged {
                    state.failure_logged = true;
                    tracing::warn!(
                        session = %queue.session.id(),
                        code = err.code(),
                        %err,
                        "session write failed; it is retried on the next event or flush"
                    );
                }
            }
        });
    }

    /// Drains a session to the store (`session/flush`): cancels its window and writes every
    /// event, including those appended while the flush runs. Unknown sessions flush
    /// trivially.
    pub async fn flush(&self, id: &SessionId) -> Result<(), StoreError> {
        let queue = lock(&self.inner.queues).get(id).cloned();
        match queue {
            Some(queue) => drain(&self.inner, &queue).await,
            None => Ok(()),
        }
    }

    /// Flushes every registered session; returns the first failure after trying them all.
    pub async fn flush_all(&self) -> Result<(), StoreError> {
        let queues: Vec<Arc<Queue>> = lock(&self.inner.queues).values().cloned().collect();
        let mut first_error = None;
        for queue in queues {
            if let Err(err) = drain(&self.inner, &queue).await {
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Final flush, then forgets the session (`session/disposed`). If the flush fails the
    /// session stays registered so that a later flush can still save it.
    pub async fn release(&self, id: &SessionId) -> Result<(), StoreError> {
        match self.queue(id) {
            Some(queue) => self.release_queue(id, queue).await,
            None => Ok(()),
        }
    }

    async fn release_queue(&self, id: &SessionId, queue: Arc<Queue>) -> Result<(), StoreError> {
        drain(&self.inner, &queue).await?;
        // A successor session with the same id may have registered meanwhile; releasing
        // the predecessor must leave the successor's queue and file handle alone.
        if !self.remove_if_current(id, &queue) {
            return Ok(());
        }
        let persistence = Arc::clone(&self.inner.persistence);
        let released = id.clone();
        // Releasing drops a file handle; cheap, but keep blocking calls off the reactor.
        let _ = tokio::task::spawn_blocking(move || persistence.release(&released)).await;
        Ok(())
    }

    /// Releases a session from synchronous code (a `session/disposed` listener): on a
    /// runtime the final flush runs as a task; without one it runs here, blocking. The queue
    /// is captured now, so a successor registered before the task runs is left alone.
    pub fn release_detached(&self, id: &SessionId) {
        let Some(queue) = self.queue(id) else {
            return;
        };
        match self.runtime() {
            Some(runtime) => {
                let this = self.clone();
                let id = id.clone();
                runtime.spawn(async move {
                    if let Err(err) = this.release_queue(&id, queue).await {
                        tracing::warn!(session = %id, code = err.code(), %err,
                            "final flush of a disposed session failed; it stays queued");
                    }
                });
            }
            None => match drain_blocking(&self.inner, &queue) {
                Ok(()) => {
                    if self.remove_if_current(id, &queue) {
                        self.inner.persistence.release(id);
                    }
                }
                Err(err) => tracing::warn!(session = %id, code = err.code(), %err,
                    "final flush of a disposed session failed; it stays queued"),
            },
        }
    }

    /// Writes everything pending, blocking the calling thread (for teardown paths that
    /// cannot await). Sessions whose write is in progress are left to that write.
    pub fn flush_all_blocking(&self) -> Result<(), StoreError> {
        let queues: Vec<Arc<Queue>> = lock(&self.inner.queues).values().cloned().collect();
        let mut first_error = None;
        for queue in queues {
            if let Err(err) = drain_blocking(&self.inner, &queue) {
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Loads a session for resuming through the store. A session this coordinator is
    /// persisting is flushed first and refused while a turn is open: repair closes turns a
    /// crash left open, never a turn that is still running.
    pub async fn prepare(&self, id: &SessionId) -> Result<SessionPreparation, StoreError> {
        if let Some(queue) = self.queue(id) {
            drain(&self.inner, &queue).await?;
            let events = queue.session.events();
            if !interrupted_turn_closers(&events).is_empty() {
                let turn = events
                    .iter()
                    .rev()
                    .find_map(|e| match &e.data {
                        EventData::TurnStart(t) => Some(t.turn),
                        _ => None,
                    })
                    .unwrap_or(0);
                return Err(StoreError::InvalidSession {
                    source: SessionError::OpenTurn {
                        id: id.clone(),
                        boundary: queue.session.len().saturating_sub(1),
                        turn,
                    },
                });
            }
        }
        let persistence = Arc::clone(&self.inner.persistence);
        let id = id.clone();
        tokio::task::spawn_blocking(move || persistence.prepare(&id))
            .await
            .map_err(join_error)?
    }

    /// The next seq the store holds for a registered session.
    pub fn stored_next(&self, id: &SessionId) -> Option<u64> {
        let queue = lock(&self.inner.queues).get(id).cloned()?;
        let next = lock(&queue.state).stored_next;
        Some(next)
    }
}

async fn drain(inner: &Arc<Inner>, queue: &Arc<Queue>) -> Result<(), StoreError> {
    {
        let mut state = lock(&queue.state);
        state.timer_armed = false;
        state.timer_generation += 1;
    }
    let _writing = queue.writing.lock().await;
    loop {
        let stored_next = lock(&queue.state).stored_next;
        if queue.session.len() <= stored_next {
            lock(&queue.state).paused = false;
            return Ok(());
        }
        if let Err(err) = write_batch(inner, queue).await {
            lock(&queue.state).paused = true;
            return Err(err);
        }
    }
}

/// Writes the events after the cursor as one append, on a blocking thread. Caller holds
/// `queue.writing`.
async fn write_batch(inner: &Arc<Inner>, queue: &Arc<Queue>) -> Result<(), StoreError> {
    let inner = Arc::clone(inner);
    let queue_for_write = Arc::clone(queue);
    tokio::task::spawn_blocking(move || write_batch_now(&inner, &queue_for_write))
        .await
        .map_err(join_error)?
}

/// Writes the events after the cursor as one append on this thread.
fn write_batch_now(inner: &Inner, queue: &Queue) -> Result<(), StoreError> {
    let stored_next = lock(&queue.state).stored_next;
    let batch = queue.session.events_from(stored_next);
    let Some(last) = batch.last().map(|e| e.seq) else {
        return Ok(());
    };
    inner.persistence.append(queue.session.id(), &batch)?;
    let mut state = lock(&queue.state);
    state.stored_next = last + 1;
    state.failure_logged = false;
    Ok(())
}

/// [`drain`] for callers that cannot await.
fn drain_blocking(inner: &Inner, queue: &Queue) -> Result<(), StoreError> {
    {
        let mut state = lock(&queue.state);
        state.timer_armed = false;
        state.timer_generation += 1;
    }
    let Ok(_writing) = queue.writing.try_lock() else {
        return Ok(());
    };
    while queue.session.len() > lock(&queue.state).stored_next {
        if let Err(err) = write_batch_now(inner, queue) {
            lock(&queue.state).paused = true;
            return Err(err);
        }
    }
    Ok(())
}

fn join_error(err: tokio::task::JoinError) -> StoreError {
    StoreError::io(
        "run the session writer task",
        std::path::PathBuf::new(),
        std::io::Error::other(err.to_string()),
    )
}

#[cfg(test)]
mod tests;
