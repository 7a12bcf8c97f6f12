//! [`Memory`]: the kernel service the tools, references and surfaces share: the index, the
//! store it caches, and the live indexer.

use std::sync::Arc;

use dsh_protocol::SessionId;
use dsh_session::SessionEvent;
use dsh_store::SessionPersistence;

use crate::error::MemoryError;
use crate::index::{MemoryIndex, SessionRow, SyncReport};
use crate::indexer::Indexer;

/// See the module docs.
pub struct Memory {
    index: Arc<MemoryIndex>,
    persistence: Arc<dyn SessionPersistence>,
    indexer: Option<Indexer>,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("index", &self.index.path())
            .finish_non_exhaustive()
    }
}

impl Memory {
    pub fn new(
        index: Arc<MemoryIndex>,
        persistence: Arc<dyn SessionPersistence>,
        indexer: Option<Indexer>,
    ) -> Self {
        Self {
            index,
            persistence,
            indexer,
        }
    }

    pub fn index(&self) -> &Arc<MemoryIndex> {
        &self.index
    }

    pub fn persistence(&self) -> &Arc<dyn SessionPersistence> {
        &self.persistence
    }

    pub fn indexer(&self) -> Option<&Indexer> {
        self.indexer.as_ref()
    }

    /// Catches the index up with the store (blocking; see [`MemoryIndex::sync`]).
    pub fn sync(&self) -> Result<SyncReport, MemoryError> {
        let live = match &self.indexer {
            Some(indexer) => {
                indexer.flush();
                indexer.live_ids()
            }
            None => std::collections::HashSet::new(),
        };
        let listed = self.persistence.list().map_err(|e| MemoryError::Session {
            id: "(listing)".into(),
            message: e.to_string(),
        })?;
        self.index
            .sync_listed(self.persistence.as_ref(), &listed, &live)
    }

    /// The indexed row of `id`, if that session belongs to `workspace`. A session of
    /// another workspace is refused the same way as an unknown one is not: it says why.
    pub fn authorize(&self, workspace: &str, id: &str) -> Result<SessionRow, MemoryError> {
        let row = match self.index.session(id)? {
            Some(row) => row,
            // Written since the last sync (another process, or just now): catch up once.
            None => {
                self.sync()?;
                self.index
                    .session(id)?
                    .ok_or_else(|| MemoryError::UnknownSession(format!("no stored session {id}")))?
            }
        };
        if row.cwd.as_deref() != Some(workspace) {
            return Err(MemoryError::OutsideWorkspace(id.to_owned()));
        }
        Ok(row)
    }

    /// A stored session's events, as the log has them (blocking).
    pub fn events(&self, id: &str) -> Result<Vec<Arc<SessionEvent>>, MemoryError> {
        self.persistence
            .load(&SessionId::new(id.to_owned()))
            .map(|stored| stored.events)
            .map_err(|e| MemoryError::Session {
                id: id.to_owned(),
                message: e.to_string(),
            })
    }
}
