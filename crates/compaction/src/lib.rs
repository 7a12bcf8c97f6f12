//! Long sessions: measuring the context a session's next request will cost, and the
//! model-free parts of keeping it under the model's window.
//!
//! - [`events`]: the original's log-only `compaction/*` event types and [`EVENT_TYPES`].
//! - [`estimate`]: the fixed token heuristic (UTF-16 code units).
//! - [`meter`]: [`TokenMeter`], the incremental per-session fold with provider calibration.
//! - [`service`]: [`MeterService`], one meter per live session, advanced on `session/event`.
//!
//! Docs: `docs/compaction.md`.

pub mod error;
pub mod estimate;
pub mod events;
pub mod meter;
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
pub use service::MeterService;
