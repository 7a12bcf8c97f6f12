//! The log of a stored (not held) session, read for `history` pages.
//!
//! Reading a stored log means reading and typing all of it, so paging back through a long
//! one read it once a page: 34 reads of the whole log for a 10,000-event session in the
//! page's 300-event pages. The last log read is kept, stamped with the store's summary of
//! it (events, bytes, last update), and served again while that stamp holds; a session
//! another process appends to gets a new stamp and is read afresh. One log at most is
//! kept, so memory stays bounded by the largest session read.

use super::{lock, Hub};
use crate::error::ApiError;
use dsh_protocol::SessionId;
use dsh_session::SessionEvent;
use std::sync::{Arc, Mutex};

/// A session's log as of one state of the store.
pub type Events = Arc<[Arc<SessionEvent>]>;

/// What the store says about a log; a change means the log changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    events: u64,
    size: u64,
    updated_at: u64,
}

impl Stamp {
    pub(crate) fn of(summary: &dsh_store::SessionSummary) -> Self {
        Self {
            events: summary.events,
            size: summary.size,
            updated_at: summary.updated_at,
        }
    }
}

/// The last stored log read.
#[derive(Default)]
pub(crate) struct StoredLogs {
    last: Mutex<Option<(SessionId, Stamp, Events)>>,
}

impl StoredLogs {
    /// The kept log of `id`, if it was read at `stamp`.
    pub(crate) fn get(&self, id: &SessionId, stamp: Stamp) -> Option<Events> {
        match &*lock(&self.last) {
            Some((kept, at, events)) if kept == id && *at == stamp => Some(events.clone()),
            _ => None,
        }
    }

    /// Keeps `events` as `id`'s log at `stamp`, in place of the last one.
    pub(crate) fn keep(&self, id: &SessionId, stamp: Stamp, events: Events) {
        *lock(&self.last) = Some((id.clone(), stamp, events));
    }
}

impl Hub {
    /// A stored session's events as the store holds them now, read without resuming it;
    /// `None` when the store does not have `id`.
    pub fn stored_events(&self, id: &SessionId) -> Result<Option<Events>, ApiError> {
        let Some(summary) = self.stored_summary(id)? else {
            return Ok(None);
        };
        let Some(persistence) = self.persistence() else {
            return Ok(None);
        };
        let stamp = Stamp::of(&summary);
        if let Some(events) = self.inner.stored_logs.get(id, stamp) {
            return Ok(Some(events));
        }
        let stored = persistence
            .load(id)
            .map_err(|e| ApiError::Internal(format!("reading the session log failed: {e}")))?;
        let events: Events = stored.events.into();
        self.inner.stored_logs.keep(id, stamp, events.clone());
        Ok(Some(events))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(events: u64) -> Stamp {
        Stamp {
            events,
            size: events * 100,
            updated_at: events,
        }
    }

    fn log(n: u64) -> Events {
        (0..n)
            .map(|seq| {
                Arc::new(SessionEvent {
                    seq,
                    time: 0,
                    data: dsh_session::EventData::other("x", serde_json::json!({})),
                    ignorable: false,
                    surface_op: None,
                    source_event_seqs: None,
                })
            })
            .collect()
    }

    #[test]
    fn the_last_log_read_is_served_while_its_stamp_holds() {
        let logs = StoredLogs::default();
        let (a, b) = (
            SessionId::new("a".to_owned()),
            SessionId::new("b".to_owned()),
        );
        assert!(logs.get(&a, stamp(3)).is_none());
        logs.keep(&a, stamp(3), log(3));
        assert_eq!(logs.get(&a, stamp(3)).map(|e| e.len()), Some(3));
        // Appended since (another process): read again.
        assert!(logs.get(&a, stamp(4)).is_none());
        assert!(logs.get(&b, stamp(3)).is_none());
        // One log kept: reading another replaces it.
        logs.keep(&b, stamp(5), log(5));
        assert!(logs.get(&a, stamp(3)).is_none());
        assert_eq!(logs.get(&b, stamp(5)).map(|e| e.len()), Some(5));
    }
}
