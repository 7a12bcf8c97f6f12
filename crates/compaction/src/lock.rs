//! The compaction lock (spec §2.1).
//!
//! **Durable:** the latest `compaction/start` with no matching `compaction/end` holds the lock,
//! unless a `session/end-seed` came after it: every resume seeds the log and appends that
//! marker, so a start left by a crashed process is stale and never wedges the session.
//! [`durable_lock`] is the definition (a backward scan); [`LockFold`] keeps the same answer
//! incrementally, O(new events) per look.
//!
//! **In-process:** [`InFlight`] marks the sessions this process is compacting right now, so two
//! attempts of one process never both pass the durable check while the first one has not yet
//! appended its start.

use crate::events::{CompactionEnd, CompactionStart};
use dsh_kernel::sync::lock;
use dsh_protocol::SessionId;
use dsh_session::{EventData, Session, SessionEvent};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// The bracket that holds a session's durable lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockHolder {
    pub compaction_id: String,
    pub start_seq: u64,
    /// The owning turn (`None`: a standalone manual compaction).
    pub turn: Option<u64>,
}

/// The durable lock of `events`, by definition: scanning back from the tail, a start seen
/// before any end or end-seed holds it.
pub fn durable_lock(events: &[Arc<SessionEvent>]) -> Option<LockHolder> {
    for event in events.iter().rev() {
        match &event.data {
            EventData::EndSeed => return None,
            EventData::Other { .. } => {
                if event.is::<CompactionEnd>() {
                    return None;
                }
                if let Some(Ok(start)) = event.decode::<CompactionStart>() {
                    return Some(LockHolder {
                        compaction_id: start.compaction_id,
                        start_seq: event.seq,
                        turn: start.turn,
                    });
                }
            }
            _ => {}
        }
    }
    None
}

/// The lock and the open turn of one session, folded event by event.
#[derive(Clone, Debug, Default)]
pub struct LockFold {
    consumed: u64,
    holder: Option<LockHolder>,
    open_turn: Option<u64>,
}

impl LockFold {
    /// Folds the events `session` gained since the last call.
    pub fn catch_up(&mut self, session: &Session) {
        if session.len() == self.consumed {
            return;
        }
        for event in session.events_from(self.consumed) {
            self.observe(&event);
        }
    }

    /// Folds one event (in seq order).
    pub fn observe(&mut self, event: &SessionEvent) {
        self.consumed = event.seq + 1;
        match &event.data {
            EventData::TurnStart(t) => self.open_turn = Some(t.turn),
            EventData::TurnEnd(_) => self.open_turn = None,
            EventData::EndSeed => self.holder = None,
            EventData::Other { .. } => {
                if event.is::<CompactionEnd>() {
                    self.holder = None;
                } else if let Some(Ok(start)) = event.decode::<CompactionStart>() {
                    self.holder = Some(LockHolder {
                        compaction_id: start.compaction_id,
                        start_seq: event.seq,
                        turn: start.turn,
                    });
                }
            }
            _ => {}
        }
    }

    /// The bracket holding the durable lock, if any.
    pub fn holder(&self) -> Option<&LockHolder> {
        self.holder.as_ref()
    }

    /// The turn open at the end of the folded log.
    pub fn open_turn(&self) -> Option<u64> {
        self.open_turn
    }
}

/// The sessions this process is compacting.
#[derive(Debug, Default)]
pub struct InFlight {
    sessions: Mutex<HashSet<SessionId>>,
}

impl InFlight {
    /// Marks `session` as compacting; `None` when it already is.
    pub fn enter(self: &Arc<Self>, session: &SessionId) -> Option<InFlightGuard> {
        if !lock(&self.sessions).insert(session.clone()) {
            return None;
        }
        Some(InFlightGuard {
            owner: Arc::clone(self),
            session: session.clone(),
        })
    }

    /// Whether `session` is compacting.
    pub fn contains(&self, session: &SessionId) -> bool {
        lock(&self.sessions).contains(session)
    }
}

/// Releases the in-process mark when dropped.
#[derive(Debug)]
pub struct InFlightGuard {
    owner: Arc<InFlight>,
    session: SessionId,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        lock(&self.owner.sessions).remove(&self.session);
    }
}
