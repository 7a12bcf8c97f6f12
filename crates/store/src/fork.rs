//! Forking a stored session into a new stored session, without loading either as a live
//! agent (`dsh sessions fork`).
//!
//! The rules are `dsh-session`'s [`fork`](dsh_session::fork()): the seed is the stored
//! prefix through the boundary, which may not cut inside a turn; the child's header records
//! the parent and the seed length, and the child's log ends with the `session/end-seed`
//! marker. Because the inbox replays splices only from the seed length, the child starts
//! with an empty inbox even when the parent had pending items.

use std::sync::Arc;

use dsh_protocol::SessionId;
use dsh_session::{SeedSource, Session, SessionBuilder, SessionError, SessionHeader};

use crate::error::StoreError;
use crate::persistence::SessionPersistence;

/// Why a stored session could not be forked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ForkError {
    /// Reading the source or writing the child failed (`SESSION_NOT_FOUND` when the source
    /// is not stored, `SESSION_ALREADY_EXISTS` when the child id is taken, I/O, corruption).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The boundary is not a stored seq (`INVALID_BOUNDARY`) or cuts inside a turn
    /// (`OPEN_TURN`).
    #[error("cannot fork stored session: {0}")]
    Boundary(#[source] SessionError),
    /// The stored source log does not form a valid session.
    #[error("stored session \"{id}\" cannot be forked: {source}")]
    Rejected {
        id: SessionId,
        #[source]
        source: SessionError,
    },
}

impl ForkError {
    /// A stable machine-readable code (the underlying error's).
    pub fn code(&self) -> &'static str {
        match self {
            ForkError::Store(err) => err.code(),
            ForkError::Boundary(err) => err.code(),
            ForkError::Rejected { source, .. } => source.root().code(),
        }
    }
}

/// Forks the stored session `source` through `at_seq` (inclusive; default: its last stored
/// event) into a new stored session `new_id`, and returns the child's header.
///
/// Only the durable log is read: flush a live source first if its latest events should be
/// included. Blocks on disk I/O; async callers run it on a blocking thread.
pub fn fork_stored(
    persistence: &dyn SessionPersistence,
    source: &SessionId,
    at_seq: Option<u64>,
    new_id: SessionId,
) -> Result<SessionHeader, ForkError> {
    let stored = persistence.load(source)?;
    let len = stored.events.len() as u64;
    if let Some(boundary) = at_seq.filter(|&seq| seq >= len) {
        return Err(ForkError::Boundary(SessionError::InvalidBoundary {
            id: source.clone(),
            boundary,
            len,
        }));
    }
    let rejected = |source_err| ForkError::Rejected {
        id: source.clone(),
        source: source_err,
    };
    let child = match at_seq.or(len.checked_sub(1)) {
        // Nothing stored: the child starts empty (no seed, no marker).
        None => {
            let plan = dsh_session::fork(
                &Session::new(stored.header).map_err(rejected)?,
                None,
                new_id,
            )
            .map_err(ForkError::Boundary)?;
            Session::new(plan.header).map_err(rejected)?
        }
        // Only the prefix is needed; seeding the source with it validates it like a resume.
        Some(boundary) => {
            let prefix = stored.events[..=boundary as usize].to_vec();
            let parent = SessionBuilder::new(stored.header)
                .seed(prefix, SeedSource::Persistence)
                .build()
                .map_err(rejected)?;
            dsh_session::fork(&parent, Some(boundary), new_id)
                .map_err(ForkError::Boundary)?
                .build(&parent)
                .map_err(rejected)?
        }
    };
    write_child(persistence, &child)?;
    Ok(child.header().clone())
}

/// Stores the whole child (seed and marker) as its first append; a session with no events
/// leaves nothing on disk, like any session never appended to.
fn write_child(persistence: &dyn SessionPersistence, child: &Session) -> Result<(), StoreError> {
    let id = child.id();
    persistence.create(child.header())?;
    let events: Vec<Arc<_>> = child.events().to_vec();
    let written = persistence.append(id, &events);
    // Do not keep the child's writer (and its lock): whoever resumes it opens the log anew.
    persistence.release(id);
    written
}
