//! Forking: a child session seeded with a closed-turn prefix of a source session.

use crate::error::SessionError;
use crate::event::{EventData, SessionEvent};
use crate::header::SessionHeader;
use crate::seed::SeedSource;
use crate::session::Session;
use dsh_protocol::SessionId;
use std::sync::Arc;

/// The parts of a child session: its header and its seed.
#[derive(Clone, Debug, PartialEq)]
pub struct Fork {
    /// Source cwd, `parentSession` = source id, `seedLength` = seed length.
    pub header: SessionHeader,
    /// Source events `0..=boundary`, shared with the source.
    pub seed: Vec<Arc<SessionEvent>>,
}

impl Fork {
    /// Constructs the child (which gets its `session/end-seed` marker), stamping times with
    /// the source's clock.
    pub fn build(self, source: &Session) -> Result<Session, SessionError> {
        Session::builder(self.header)
            .seed(self.seed, SeedSource::Fork)
            .clock(Arc::clone(source.clock()))
            .build()
    }
}

/// Plans a fork of `source` through `boundary` (inclusive; default: its last event; an
/// empty source gives an empty seed).
///
/// Refused with `INVALID_BOUNDARY` when `boundary` is not a seq of the source, and with
/// `OPEN_TURN` when the boundary cuts inside a turn (the last `turn/start`/`turn/end` at or
/// before it is a `turn/start`). Log-only events after a closed turn may be included.
pub fn fork(
    source: &Session,
    boundary: Option<u64>,
    child_id: SessionId,
) -> Result<Fork, SessionError> {
    let events = source.events();
    let len = events.len() as u64;
    let seed: Vec<Arc<SessionEvent>> = match boundary.or(len.checked_sub(1)) {
        None => Vec::new(),
        Some(boundary) => {
            if boundary >= len {
                return Err(SessionError::InvalidBoundary {
                    id: source.id().clone(),
                    boundary,
                    len,
                });
            }
            let prefix = &events[..=boundary as usize];
            let last_boundary = prefix.iter().rev().find_map(|e| match &e.data {
                EventData::TurnStart(t) => Some(Some(t.turn)),
                EventData::TurnEnd(_) => Some(None),
                _ => None,
            });
            if let Some(Some(turn)) = last_boundary {
                return Err(SessionError::OpenTurn {
                    id: source.id().clone(),
                    boundary,
                    turn,
                });
            }
            prefix.to_vec()
        }
    };
    let mut header = SessionHeader::new(child_id, (source.clock())());
    header.cwd = source.header().cwd.clone();
    header.parent_session = Some(source.id().clone());
    header.seed_length = Some(seed.len() as u64);
    Ok(Fork { header, seed })
}
