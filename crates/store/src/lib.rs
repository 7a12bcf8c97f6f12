//! Durable session storage for dsh.
//!
//! Session logs are stored in the original's on-disk format (version 0), so logs move
//! freely between this build and the TypeScript original:
//! `<root>/--<project-key>--/<session-id>/session.jsonl.zstd` — a header line followed by
//! one record per line, either as plain JSON lines or as concatenated zstd frames (one for
//! the header, one per durable append batch), with runs of streamed deltas optionally
//! packed into single rows. The configured compression is the encoding of new logs; every
//! reader finds a log in either encoding, and a log keeps its own when it is appended to.
//!
//! The format layer works on `serde_json::Value` records, so it carries event types and
//! fields it does not know without loss:
//! - [`paths`]: where a session's log lives;
//! - [`LogHeader`]: line 1 of every log;
//! - [`chunk_rows`]: packing and unpacking of delta runs;
//! - [`LogWriter`]: lazy atomic creation and crash-safe appends; [`LogLock`]: its writer
//!   lock, held without writing (an explicit repair);
//! - [`read_log`] / [`read_header`]: lenient reading that drops a crash's torn tail and
//!   reports real damage as [`StoreError::Corruption`];
//! - [`read_typed_log`]: the same reading straight into typed events, the fast path that
//!   resuming uses (appends likewise encode typed events directly).
//!
//! On top of it, the typed layer speaks `dsh-session`'s vocabulary:
//! - [`SessionPersistence`]: the seam the rest of dsh uses (create, durable append,
//!   prepare-for-resume with crash repair, load, inspect, read-from, list);
//! - [`JsonlBackend`]: its implementation over this format;
//! - [`SessionIndex`]: the listing index that keeps `list` from opening logs;
//! - [`WriteCoordinator`]: write-behind batching with flush barriers;
//! - [`JsonlPersistencePlugin`]: all of it mounted on a kernel context, following the
//!   session store's `session/created|event|flush|disposed` events, and providing
//!   [`StoreResumeSource`] as the agent layer's `dyn ResumeSource`;
//! - [`CheckpointPolicyPlugin`]: flushes before every model request, pre-step and
//!   top-level tool call, so a crash never loses what a model or tool acted on;
//! - [`fork_stored`]: forks a stored session into a new stored session;
//! - [`read_regular_file`]: the bounded, regular-files-only read that every small file dsh
//!   reads whole goes through (the index here; settings and instructions in the CLI).

mod backend;
mod checkpoint;
pub mod chunk_rows;
mod coordinator;
mod discover;
mod error;
mod file;
mod fork;
mod frames;
mod header;
mod index;
pub mod paths;
mod persistence;
mod plugin;
mod reader;
mod regular_file;
mod resume;
mod typed_log;
mod typed_rows;

pub use backend::{JsonlBackend, JsonlConfig};
pub use checkpoint::{
    checkpoint, CheckpointError, CheckpointPoint, CheckpointPolicyPlugin, StorageProblem,
};
pub use coordinator::{WriteBehindConfig, WriteCoordinator};
pub use error::{FrameLocation, RecordLocation, StoreError};
pub use file::{LogFormat, LogLock, LogWriter};
pub use fork::{fork_stored, ForkError};
pub use header::{LogHeader, SESSION_FORMAT_VERSION};
pub use index::{SessionIndex, SessionSummary, INDEX_FILE};
pub use paths::{display_cwd, recorded_cwd, Compression, StoreLayout};
pub use persistence::{Inspection, SessionPersistence, SessionPreparation, StoredSession};
pub use plugin::{mount_persistence, JsonlPersistenceConfig, JsonlPersistencePlugin};
pub use reader::{parse_log, read_header, read_log, StoredLog, TornReason, TornTail};
pub use regular_file::{read_regular_file, read_regular_text, ReadFileError};
pub use resume::{ResumeCancelled, StoreResumeSource};
pub use typed_log::{parse_typed_log, read_typed_log, TypedLog};
