//! The store's error type.
//!
//! Every failure names the file it concerns, and corruption names the record, because the
//! person reading the message usually has to decide whether to repair a log by hand.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Where in a stored log a problem was found.
///
/// `line` counts logical lines from 1, the header being line 1; in zstd mode lines are
/// counted in the decoded text, and `frame` says which frame held the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordLocation {
    pub line: u64,
    pub frame: Option<FrameLocation>,
}

/// A zstd frame: its index in the file (the header frame is 0) and its first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameLocation {
    pub index: u64,
    pub offset: u64,
}

impl fmt::Display for RecordLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}", self.line)?;
        if let Some(frame) = self.frame {
            write!(f, " (zstd frame {} at byte {})", frame.index, frame.offset)?;
        }
        Ok(())
    }
}

/// Failures of the session store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The operating system refused a file operation.
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The log is damaged somewhere a crash cannot explain (before a committed `turn/end`,
    /// a bad header, a bad checksum or a malformed packed row).
    #[error("session log {path} is corrupt at {at}: {reason}")]
    Corruption {
        path: PathBuf,
        at: RecordLocation,
        reason: String,
    },
    /// The header names a format version this build does not read.
    #[error(
        "session log {path} has format version {version}, but this build of dsh reads only \
         version 0; open it with the dsh release that wrote it, or export it there first"
    )]
    UnsupportedFormat { path: PathBuf, version: String },
    /// Publishing a new log found a file already in its place.
    #[error("session log {path} already exists")]
    AlreadyExists { path: PathBuf },
    /// No stored log exists for the session.
    #[error("no stored log for session {id}")]
    NotFound { id: String },
    /// An append did not continue the stored log exactly.
    #[error("append to {path} must continue at seq {expected}, but got seq {found}")]
    SeqMismatch {
        path: PathBuf,
        expected: u64,
        found: u64,
    },
    /// An event given to the store is not an object with a string `type` and integer `seq`.
    #[error("event at position {position} cannot be stored: {reason}")]
    InvalidEvent { position: usize, reason: String },
    /// A session id that cannot name a directory (only the empty id today).
    #[error("invalid session id {id:?}: {reason}")]
    InvalidId { id: String, reason: &'static str },
    /// Another writer holds the log.
    #[error("session log {path} is already open for writing by another process")]
    Locked { path: PathBuf },
    /// The stored log holds an event or header the session model refuses (for example a
    /// required event type this build does not know).
    #[error("session log {path} cannot be loaded: {source}")]
    Rejected {
        path: PathBuf,
        #[source]
        source: dsh_session::SessionError,
    },
    /// A session given to the store is not valid (its header or events).
    #[error("session cannot be stored: {source}")]
    InvalidSession {
        #[source]
        source: dsh_session::SessionError,
    },
    /// A session directory holds its log in both encodings, and neither can be trusted to
    /// be the whole story.
    #[error(
        "session log exists twice, as {plain} and as {zstd}; keep the one with the \
         session's latest events and move the other out of the directory"
    )]
    BothEncodings { plain: PathBuf, zstd: PathBuf },
    /// An earlier write failed and the log could not be restored to its last durable length;
    /// the writer refuses further appends until the log is read again.
    #[error("session log {path} is in an unknown state after a failed write; reopen it")]
    Poisoned { path: PathBuf },
    /// A storage service behind the seam (a database server) failed or refused an
    /// operation; `reason` never holds a password.
    #[error("{backend} session store: {op}: {reason}")]
    Backend {
        backend: &'static str,
        op: &'static str,
        reason: String,
    },
}

impl StoreError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Io { .. } => "SESSION_PERSISTENCE_IO",
            StoreError::Backend { .. } => "SESSION_PERSISTENCE_BACKEND",
            StoreError::Corruption { .. } => "SESSION_PERSISTENCE_CORRUPTION",
            StoreError::UnsupportedFormat { .. } => "SESSION_FORMAT_UNSUPPORTED",
            StoreError::AlreadyExists { .. } => "SESSION_ALREADY_EXISTS",
            StoreError::NotFound { .. } => "SESSION_NOT_FOUND",
            StoreError::SeqMismatch { .. } => "SESSION_SEQ_MISMATCH",
            StoreError::InvalidEvent { .. } => "SESSION_EVENT_INVALID",
            StoreError::InvalidId { .. } => "SESSION_ID_INVALID",
            StoreError::Locked { .. } => "SESSION_LOCKED",
            StoreError::Poisoned { .. } => "SESSION_WRITER_POISONED",
            StoreError::Rejected { source, .. } | StoreError::InvalidSession { source } => {
                source.root().code()
            }
            StoreError::BothEncodings { .. } => "SESSION_LOG_DUPLICATED",
        }
    }

    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        StoreError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_names_line_and_frame() {
        let plain = RecordLocation {
            line: 7,
            frame: None,
        };
        assert_eq!(plain.to_string(), "line 7");
        let framed = RecordLocation {
            line: 7,
            frame: Some(FrameLocation {
                index: 2,
                offset: 810,
            }),
        };
        assert_eq!(framed.to_string(), "line 7 (zstd frame 2 at byte 810)");
    }

    #[test]
    fn unsupported_format_message_is_actionable() {
        let err = StoreError::UnsupportedFormat {
            path: PathBuf::from("/s/session.jsonl"),
            version: "3".into(),
        };
        assert_eq!(err.code(), "SESSION_FORMAT_UNSUPPORTED");
        assert!(err.to_string().contains("reads only version 0"));
    }
}
