//! The persistence seam: what the rest of dsh needs from a session store.
//!
//! The write coordinator and the session commands (`resume`, `sessions list|show|verify`)
//! talk to this trait only, so a different backend can be mounted without touching them.
//! Calls block on disk I/O; async callers run them on a blocking thread.

use std::path::PathBuf;
use std::sync::Arc;

use dsh_protocol::SessionId;
use dsh_session::{Session, SessionEvent, SessionHeader};

use crate::error::StoreError;
use crate::header::LogHeader;
use crate::index::SessionSummary;
use crate::reader::TornTail;

/// A stored session storage backend.
pub trait SessionPersistence: Send + Sync + 'static {
    /// Registers a new session. A backend may write nothing until the first append; a
    /// session that is never appended to leaves nothing behind.
    fn create(&self, header: &SessionHeader) -> Result<(), StoreError>;

    /// The seq the next stored event must carry (0 for a new session).
    fn next_seq(&self, id: &SessionId) -> Result<u64, StoreError>;

    /// Stores `events` durably: when this returns `Ok` they survive a crash. The first
    /// event's seq must equal [`next_seq`](Self::next_seq) and the batch must be contiguous.
    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), StoreError>;

    /// Loads a stored session for resuming: reads it, closes a turn a crash left open with
    /// deterministic closers, commits that repair durably (cutting a torn tail first), and
    /// returns an unpublished session seeded with the result.
    fn prepare(&self, id: &SessionId) -> Result<SessionPreparation, StoreError>;

    /// Reads a stored session as it is, without repairing or changing anything.
    fn load(&self, id: &SessionId) -> Result<StoredSession, StoreError>;

    /// Checks a stored session and reports what [`prepare`](Self::prepare) would repair,
    /// without changing anything.
    fn inspect(&self, id: &SessionId) -> Result<Inspection, StoreError>;

    /// The stored events with `seq >= from_seq`.
    fn read_from(
        &self,
        id: &SessionId,
        from_seq: u64,
    ) -> Result<Vec<Arc<SessionEvent>>, StoreError>;

    /// Every stored session, most recently updated first.
    fn list(&self) -> Result<Vec<SessionSummary>, StoreError>;

    /// Lets go of a session's writer (and its lock); later appends reopen it.
    fn release(&self, id: &SessionId);
}

/// A stored session read as-is.
#[derive(Clone, Debug)]
pub struct StoredSession {
    pub header: SessionHeader,
    /// The durable prefix, typed.
    pub events: Vec<Arc<SessionEvent>>,
    /// What a crash left after the durable prefix.
    pub torn_tail: Option<TornTail>,
}

/// An unpublished session ready to be resumed, and what loading it repaired.
#[derive(Clone, Debug)]
pub struct SessionPreparation {
    /// Seeded from the stored log plus the closers (and the `session/end-seed` marker the
    /// session adds after a seed, which is not stored yet: the first flush stores it).
    pub session: Session,
    /// The torn tail that was cut off, if any.
    pub torn_tail: Option<TornTail>,
    /// Closers appended to the stored log to end a turn a crash left open.
    pub closers: Vec<SessionEvent>,
}

/// The result of checking a stored session.
#[derive(Clone, Debug)]
pub struct Inspection {
    pub path: PathBuf,
    /// The header as stored, unknown fields included.
    pub header: LogHeader,
    /// Events in the durable prefix.
    pub events: u64,
    /// Bytes on disk.
    pub size: u64,
    /// A torn tail that loading would cut off.
    pub torn_tail: Option<TornTail>,
    /// Closers that loading would append.
    pub pending_closers: Vec<SessionEvent>,
}

impl Inspection {
    /// Whether loading the session would change its log.
    pub fn needs_repair(&self) -> bool {
        self.torn_tail.is_some() || !self.pending_closers.is_empty()
    }
}
