//! Typed errors with stable codes.

use dsh_session::SessionError;

/// A log the meter cannot fold. The meter's state is unchanged when one is returned, so the
/// same event is retried identically.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MeterError {
    /// Events must be folded in seq order, each once.
    #[error("token meter: expected event seq {expected}, got {got}")]
    OutOfOrder { expected: u64, got: u64 },
    /// A `step/start` while another step is open.
    #[error("token meter: step/start at seq {seq} while step {turn}/{step} is open")]
    StepAlreadyOpen { seq: u64, turn: u64, step: u64 },
    /// A `step/end` that does not close the open step.
    #[error("token meter: step/end at seq {seq} does not match the open step")]
    StepMismatch { seq: u64 },
    /// An `assistant/message` outside its own open step.
    #[error("token meter: assistant/message at seq {seq} is not inside its open step")]
    MessageOutsideStep { seq: u64 },
    /// A replace whose range is not on the surface, or is inverted.
    #[error("token surface: replace at seq {seq} has invalid current range {start}-{end}")]
    InvalidReplace { seq: u64, start: u64, end: u64 },
    /// An assistant message cites a chunk that is not an earlier, unique `assistant/chunk` of
    /// the same turn and step.
    #[error("token meter: assistant/message at seq {seq} cites {cited}: {reason}")]
    BadChunkCitation {
        seq: u64,
        cited: u64,
        reason: &'static str,
    },
}

impl MeterError {
    /// A stable code for logs and surfaces.
    pub fn code(&self) -> &'static str {
        match self {
            Self::OutOfOrder { .. } => "METER_OUT_OF_ORDER",
            Self::StepAlreadyOpen { .. } => "METER_STEP_ALREADY_OPEN",
            Self::StepMismatch { .. } => "METER_STEP_MISMATCH",
            Self::MessageOutsideStep { .. } => "METER_MESSAGE_OUTSIDE_STEP",
            Self::InvalidReplace { .. } => "METER_INVALID_REPLACE",
            Self::BadChunkCitation { .. } => "METER_BAD_CHUNK_CITATION",
        }
    }
}

/// Why a compaction-side operation (selection, pairing, pruning) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactionError {
    #[error(transparent)]
    Meter(#[from] MeterError),
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The meter has not folded the session's current surface (it is behind or belongs to
    /// another session).
    #[error("token-meter surface does not match the session surface")]
    SurfaceMismatch,
    /// A seq asked about is not a current surface node.
    #[error("seq {seq} is not on the surface")]
    NotOnSurface { seq: u64 },
    /// A surface `tool/result` with no open tool call before it.
    #[error("corrupt surface: tool/result at seq {seq} has no open tool call")]
    UnpairedToolResult { seq: u64 },
    /// A surface node whose event is missing from the log.
    #[error("corrupt surface: node {seq} is not in the log")]
    MissingEvent { seq: u64 },
    /// The pruner's configuration breaks its rules.
    #[error("tool-result pruner: {reason}")]
    PrunerConfig { reason: String },
    /// A pruned result broke the pruner's postcondition.
    #[error("tool-result pruner: {reason}")]
    Prune { reason: String },
    /// A compaction attempt failed (the engine's errors, `crate::failure`).
    #[error(transparent)]
    Attempt(Box<crate::failure::AttemptError>),
}

impl From<crate::failure::AttemptError> for CompactionError {
    fn from(error: crate::failure::AttemptError) -> Self {
        match error {
            crate::failure::AttemptError::Compaction(inner) => inner,
            other => Self::Attempt(Box::new(other)),
        }
    }
}

impl CompactionError {
    /// A stable code for logs and surfaces.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Meter(e) => e.code(),
            Self::Session(e) => e.code(),
            Self::SurfaceMismatch => "SURFACE_MISMATCH",
            Self::NotOnSurface { .. } => "NOT_ON_SURFACE",
            Self::UnpairedToolResult { .. } => "UNPAIRED_TOOL_RESULT",
            Self::MissingEvent { .. } => "MISSING_EVENT",
            Self::PrunerConfig { .. } => "PRUNER_CONFIG",
            Self::Prune { .. } => "PRUNE_FAILED",
            Self::Attempt(e) => e.code(),
        }
    }
}
