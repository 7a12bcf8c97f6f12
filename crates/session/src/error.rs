//! Errors of the session log.
//!
//! Every refusal is a typed [`SessionError`] with a stable [`SessionError::code`]; a refused
//! append or construction leaves the log exactly as it was.

use dsh_protocol::SessionId;

pub use dsh_kernel::BoxError;

/// Why the log (or a store operation) refused a request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The payload is not lossless JSON, names a reserved type, or breaks the shape rules of
    /// its type (identified messages, provider/model on headers, ...), including the decoding
    /// and validation hook of a plugin's declaration.
    #[error("invalid data for session event \"{type_name}\": {reason}")]
    InvalidEventData { type_name: String, reason: String },

    /// A record this build refuses on purpose: `request/header-delta` and header reason
    /// `fallback` belong to a retired codec and would be misread.
    #[error("session event \"{type_name}\" uses the unsupported legacy format: {detail}")]
    LegacyFormat { type_name: String, detail: String },

    /// A type this build does not know, not marked `ignorable`: skipping it could rebuild a
    /// wrong session, so it is refused.
    #[error("unknown session event type \"{type_name}\" is not marked ignorable")]
    UnknownEventType { type_name: String },

    /// A plugin's event declaration cannot be registered: its name is empty, belongs to the
    /// core, appears twice in one batch or is already declared by another Rust type.
    #[error("cannot register session event type \"{type_name}\": {reason}")]
    InvalidDeclaration { type_name: String, reason: String },

    /// Surface metadata (`surfaceOp`, `sourceEventSeqs`) breaks the surface rules.
    #[error("invalid surface metadata on \"{type_name}\" at seq {seq}: {violation}")]
    InvalidSurface {
        seq: u64,
        type_name: String,
        violation: SurfaceViolation,
    },

    /// A registered invariant companion refused the event (a rule spanning several events,
    /// such as an unclosed bracket; see `register_invariant_companion`).
    #[error(
        "session event \"{type_name}\" at seq {seq} breaks the {companion} invariant: {reason}"
    )]
    InvariantViolation {
        seq: u64,
        type_name: String,
        companion: String,
        reason: String,
    },

    /// An append was attempted while the same session was publishing `session/event`
    /// (an observer tried to write from inside its notification).
    #[error("session append cannot reenter while session \"{session}\" is publishing an event")]
    AppendReentered { session: SessionId },

    /// A serialized event whose envelope is malformed.
    #[error("invalid session event envelope: {reason}")]
    InvalidEnvelope { reason: String },

    /// One event of a constructor seed was refused.
    #[error("invalid seed event at index {index}: {source}")]
    InvalidSeed {
        index: usize,
        #[source]
        source: Box<SessionError>,
    },

    /// The session header is malformed.
    #[error("invalid session header: {reason}")]
    InvalidHeader { reason: String },

    /// The session is unknown to the store.
    #[error("session \"{id}\" not found")]
    SessionNotFound { id: SessionId },

    /// The session object is not the store's live instance for its id.
    #[error("session \"{id}\" is not live in this store")]
    SessionNotLive { id: SessionId },

    /// A session with this id is already live (or the object is already attached).
    #[error("session \"{id}\" already exists")]
    SessionAlreadyExists { id: SessionId },

    /// A fork boundary that is not an existing seq of the source.
    #[error("fork boundary {boundary} does not exist in session \"{id}\" (length {len})")]
    InvalidBoundary {
        id: SessionId,
        boundary: u64,
        len: u64,
    },

    /// A fork boundary inside an open turn.
    #[error("fork boundary {boundary} of session \"{id}\" is inside open turn {turn}")]
    OpenTurn {
        id: SessionId,
        boundary: u64,
        turn: u64,
    },

    /// The session object is already attached to a store.
    #[error("session \"{id}\" is already attached to a store")]
    AlreadyAttached { id: SessionId },

    /// `session/created` was already announced for this entry.
    #[error("session \"{id}\" was already announced")]
    AlreadyAnnounced { id: SessionId },

    /// A `session/created` listener vetoed publication.
    #[error("session \"{id}\" creation was vetoed by a listener: {source}")]
    CreationVetoed {
        id: SessionId,
        #[source]
        source: BoxError,
    },

    /// A `session/flush` listener failed (the first failure is kept).
    #[error("flushing session \"{id}\" failed: {source}")]
    FlushFailed {
        id: SessionId,
        #[source]
        source: BoxError,
    },

    /// The kernel refused a registration (for example on a disposed fiber).
    #[error("kernel: {0}")]
    Kernel(#[from] dsh_kernel::KernelError),
}

impl SessionError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidEventData { .. } => "INVALID_EVENT_DATA",
            Self::LegacyFormat { .. } => "LEGACY_FORMAT",
            Self::UnknownEventType { .. } => "UNKNOWN_EVENT_TYPE",
            Self::InvalidDeclaration { .. } => "INVALID_EVENT_DECLARATION",
            Self::InvalidSurface { .. } => "INVALID_SURFACE",
            Self::InvariantViolation { .. } => "INVARIANT_VIOLATION",
            Self::AppendReentered { .. } => "APPEND_REENTERED",
            Self::InvalidEnvelope { .. } => "INVALID_ENVELOPE",
            Self::InvalidSeed { .. } => "INVALID_SEED",
            Self::InvalidHeader { .. } => "INVALID_HEADER",
            Self::SessionNotFound { .. } => "SESSION_NOT_FOUND",
            Self::SessionNotLive { .. } => "SESSION_NOT_LIVE",
            Self::SessionAlreadyExists { .. } => "SESSION_ALREADY_EXISTS",
            Self::InvalidBoundary { .. } => "INVALID_BOUNDARY",
            Self::OpenTurn { .. } => "OPEN_TURN",
            Self::AlreadyAttached { .. } => "SESSION_ALREADY_ATTACHED",
            Self::AlreadyAnnounced { .. } => "ALREADY_ANNOUNCED",
            Self::CreationVetoed { .. } => "CREATION_VETOED",
            Self::FlushFailed { .. } => "FLUSH_FAILED",
            Self::Kernel(e) => e.code(),
        }
    }

    /// For [`SessionError::InvalidSeed`], the error of the offending event; otherwise `self`.
    pub fn root(&self) -> &SessionError {
        match self {
            Self::InvalidSeed { source, .. } => source.root(),
            other => other,
        }
    }

    pub(crate) fn data(type_name: &str, reason: impl Into<String>) -> Self {
        Self::InvalidEventData {
            type_name: type_name.to_owned(),
            reason: reason.into(),
        }
    }
}

/// The surface rule an event broke.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SurfaceViolation {
    #[error("a message-producing event requires a surfaceOp")]
    MissingSurfaceOp,
    #[error("only message-producing events may carry surfaceOp")]
    UnexpectedSurfaceOp,
    #[error("only message-producing events may carry sourceEventSeqs")]
    UnexpectedSourceSeqs,
    #[error("sourceEventSeqs may be empty only on assistant/message")]
    EmptySourceSeqs,
    #[error("sourceEventSeqs repeats seq {0}")]
    DuplicateSourceSeq(u64),
    #[error("sourceEventSeqs must cite earlier events: {source_seq} >= {seq}")]
    ForwardSourceSeq { source_seq: u64, seq: u64 },
    #[error("replace start seq {0} is not a current surface node")]
    ReplaceStartNotFound(u64),
    #[error("replace end seq {0} is not a current surface node")]
    ReplaceEndNotFound(u64),
    #[error("replace start seq {start} comes after end seq {end} on the surface")]
    ReplaceRangeInverted { start: u64, end: u64 },
    #[error("sourceEventSeqs must cite every shadowed node; missing {0:?}")]
    ShadowedNotCited(Vec<u64>),
    #[error("a tool/result replace must shadow exactly one node, not {0}")]
    ToolResultReplaceCount(usize),
    #[error("a tool/result replace must shadow a tool/result")]
    ToolResultReplaceTarget,
    #[error("a tool/result replace may change only the inner result content")]
    ToolResultReplaceChangedMore,
}
