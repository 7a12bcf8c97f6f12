//! Long sessions: measuring the context a session's next request will cost, and the
//! model-free parts of keeping it under the model's window.
//!
//! - [`events`]: the original's log-only `compaction/*` event types and [`EVENT_TYPES`].
//! - [`estimate`]: the fixed token heuristic (UTF-16 code units).
//! - [`meter`]: [`TokenMeter`], the incremental per-session fold with provider calibration.
//! - [`service`]: [`MeterService`], one meter per live session, advanced on `session/event`.
//! - [`pairing`]: where the surface may be cut without splitting a tool call from its result.
//! - [`select`]: [`select_compactable_range`], the head-anchored span a compaction may
//!   summarise, with the [`SelectFloor`] that refuses spans not worth a model call.
//! - [`pruner`]: the model-free tool-result pruner ([`prune_session`]).
//!
//! Docs: `docs/compaction.md`.

pub mod error;
pub mod estimate;
pub mod events;
pub mod meter;
pub mod pairing;
pub mod pruner;
pub mod select;
pub mod service;

pub use error::{CompactionError, MeterError};
pub use estimate::{
    estimate_block, estimate_blocks, estimate_event, estimate_header, estimate_message,
    text_tokens, utf16_len,
};
pub use events::{
    CompactionEnd, CompactionPrune, CompactionStart, CompactionSummary, SeqRange, EVENT_TYPES,
};
pub use meter::{Baseline, Measurement, SurfaceNode, TokenMeter};
pub use pairing::{balanced_after, balanced_before, balanced_cuts, balanced_cuts_in};
pub use pruner::{
    measure_content, prune_content, prune_session, PruneReport, PrunedResult, PrunerConfig,
    PRUNE_MARKER,
};
pub use select::{
    is_compact_checkpoint, is_compact_checkpoint_source, select_compactable_range, CompactRange,
    SelectFloor, CHECKPOINT_PLUGIN,
};
pub use service::MeterService;
