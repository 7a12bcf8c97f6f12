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
//! The engine (what changes a log):
//! - [`invariant`]: the bracket rules every log keeps, an invariant companion registered
//!   process-wide ([`invariant::register`]).
//! - [`checkpoint`]: the replacing `user/message` (preamble, `<compacted-summary>`, source).
//! - [`lock`]: the durable lock (latest unmatched start, stale after an end-seed) and the
//!   in-process guard.
//! - [`summarizer`]: the summary request through the LLM runtime.
//! - [`region`]: the transaction from `compaction/start` to `compaction/end`.
//! - [`engine`]: [`CompactionEngine`], the service; [`pressure`] (pre-step), [`overflow`]
//!   (request-error) and [`manual`] (`compact_now`) drive it.
//! - [`config`] / [`plugin`]: [`CompactionConfig`] and [`CompactionPlugin`] (`"compaction"`).
//!
//! Docs: `docs/compaction.md`.

pub mod checkpoint;
pub mod config;
pub mod engine;
pub mod error;
pub mod estimate;
pub mod events;
pub mod failure;
pub mod invariant;
pub mod lock;
pub mod manual;
pub mod meter;
pub mod overflow;
pub mod pairing;
pub mod plugin;
pub mod pressure;
pub mod pruner;
pub mod region;
pub mod select;
pub mod service;
pub mod summarizer;

pub use checkpoint::CHECKPOINT_PREAMBLE;
pub use config::{CompactionConfig, CompactionConfigError, Pressure};
pub use engine::{CompactionEngine, CompactionResult, Trigger};
pub use error::{CompactionError, MeterError};
pub use estimate::{
    estimate_block, estimate_blocks, estimate_event, estimate_header, estimate_message,
    text_tokens, utf16_len,
};
pub use events::{
    CompactionEnd, CompactionPrune, CompactionStart, CompactionSummary, SeqRange, EVENT_TYPES,
};
pub use failure::AttemptError;
pub use lock::{durable_lock, LockHolder};
pub use manual::{result_message, ManualCompactionError};
pub use meter::{Baseline, Measurement, SurfaceNode, TokenMeter};
pub use overflow::still_too_large;
pub use pairing::{balanced_after, balanced_before, balanced_cuts, balanced_cuts_in};
pub use plugin::CompactionPlugin;
pub use pruner::{
    measure_content, prune_content, prune_session, PruneReport, PrunedResult, PrunerConfig,
    PRUNE_MARKER,
};
pub use select::{
    compactable_candidate, is_compact_checkpoint, is_compact_checkpoint_source,
    select_compactable_range, Candidate, CompactRange, SelectFloor, CHECKPOINT_PLUGIN,
};
pub use service::MeterService;
