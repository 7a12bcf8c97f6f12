//! Why a compaction attempt did not happen or did not finish.

use crate::config::CompactionConfigError;
use dsh_llm::LlmError;
use dsh_session::SessionError;

/// A compaction attempt's failure, with a stable [`code`](Self::code).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AttemptError {
    /// The session's compaction lock is held (a live unmatched `compaction/start`, or an
    /// attempt of this process in flight), or a manual compaction found a turn open.
    #[error("compaction: {reason}")]
    Busy { reason: String },
    /// An automatic or explicit region needs an open turn to own it.
    #[error("compactRegion: no open turn owns the compaction")]
    NoOpenTurn,
    /// The region is not a compactable span of the current surface.
    #[error("compactRegion: {reason}")]
    InvalidRegion { reason: String },
    /// The surface changed under the attempt.
    #[error("the history selected for compaction changed: {reason}")]
    Changed { reason: String },
    /// The summarizer failed (model error, truncation, no text, cancellation).
    #[error("summarization failed: {0}")]
    Summary(#[source] LlmError),
    /// No provider/model to summarize with.
    #[error("no provider/model available for summarization: {reason}")]
    NoTarget { reason: String },
    /// The framed summary would not shrink the context.
    #[error(
        "summary is not smaller than the shadowed content ({framed} estimated framed tokens >= {shadowed})"
    )]
    NotSmaller { framed: u64, shadowed: u64 },
    /// An append of the commit (summary, checkpoint, end) was refused.
    #[error("compaction commit failed: {0}")]
    Commit(#[source] SessionError),
    /// An append outside the commit (the start) was refused.
    #[error("compaction could not be recorded: {0}")]
    Log(#[source] SessionError),
    /// The target model's window is unknown, or the retention does not fit it.
    #[error("compaction cannot judge pressure for {provider}/{model}: {reason}")]
    TargetConfig {
        provider: String,
        model: String,
        reason: String,
    },
    /// The thresholds could not be resolved.
    #[error(transparent)]
    Config(#[from] CompactionConfigError),
    /// Pressure stayed at or above the threshold after every allowed attempt.
    #[error(
        "compaction still above threshold after {attempts} compaction attempts ({total} estimated tokens >= threshold {threshold})"
    )]
    StillAbove {
        attempts: u64,
        total: u64,
        threshold: u64,
    },
    /// Measuring, selecting or pruning failed.
    #[error(transparent)]
    Compaction(#[from] crate::error::CompactionError),
    /// The attempt was cancelled.
    #[error("compaction cancelled")]
    Aborted,
    /// Flushing the session after a manual compaction failed.
    #[error("compaction finished, but the session could not be saved: {0}")]
    Persistence(#[source] SessionError),
    /// A service the engine needs is not mounted.
    #[error("compaction needs the {0} service")]
    Missing(&'static str),
}

impl AttemptError {
    /// A stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Busy { .. } => "COMPACTION_BUSY",
            Self::NoOpenTurn => "COMPACTION_NO_OPEN_TURN",
            Self::InvalidRegion { .. } => "COMPACTION_INVALID_REGION",
            Self::Changed { .. } => "COMPACTION_SURFACE_CHANGED",
            Self::Summary(_) => "COMPACTION_SUMMARY_FAILED",
            Self::NoTarget { .. } => "COMPACTION_NO_TARGET",
            Self::NotSmaller { .. } => "COMPACTION_NOT_SMALLER",
            Self::Commit(_) => "COMPACTION_COMMIT_FAILED",
            Self::Log(_) => "COMPACTION_LOG_FAILED",
            Self::TargetConfig { .. } => "COMPACTION_TARGET_CONFIG",
            Self::Config(_) => "COMPACTION_CONFIG",
            Self::StillAbove { .. } => "COMPACTION_STILL_ABOVE_THRESHOLD",
            Self::Compaction(e) => e.code(),
            Self::Aborted => "ABORTED",
            Self::Persistence(_) => "COMPACTION_PERSISTENCE",
            Self::Missing(_) => "COMPACTION_MISSING_SERVICE",
        }
    }
}
