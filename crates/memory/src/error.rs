//! The crate's errors, each with a stable code.

use thiserror::Error;

/// What can go wrong in memory: the index, a session read, a reference, a note.
#[derive(Debug, Error)]
pub enum MemoryError {
    /// The index file could not be opened or written (permissions, a full disk).
    #[error("memory index {path}: {source}")]
    Index {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    /// A session log could not be read.
    #[error("session {id}: {message}")]
    Session { id: String, message: String },
    /// No stored session has this id (or the prefix is ambiguous).
    #[error("{0}")]
    UnknownSession(String),
    /// A session outside the caller's workspace was asked for.
    #[error("session {0} is outside this workspace")]
    OutsideWorkspace(String),
    /// Bad arguments (an empty query, a seq past the end).
    #[error("{0}")]
    InvalidInput(String),
    /// A note could not be written.
    #[error("note: {0}")]
    Note(String),
}

impl MemoryError {
    /// A stable code for callers and tests.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Index { .. } => "MEMORY_INDEX",
            Self::Session { .. } => "MEMORY_SESSION_READ",
            Self::UnknownSession(_) => "MEMORY_UNKNOWN_SESSION",
            Self::OutsideWorkspace(_) => "MEMORY_OUTSIDE_WORKSPACE",
            Self::InvalidInput(_) => "MEMORY_INVALID_INPUT",
            Self::Note(_) => "MEMORY_NOTE",
        }
    }

    pub(crate) fn index(path: &std::path::Path) -> impl FnOnce(rusqlite::Error) -> Self + '_ {
        move |source| Self::Index {
            path: path.display().to_string(),
            source,
        }
    }
}
