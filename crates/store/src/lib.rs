//! Durable session storage for dsh.
//!
//! Session logs are stored in the original's on-disk format (version 0), so logs move
//! freely between this build and the TypeScript original:
//! `<root>/--<project-key>--/<session-id>/session.jsonl.zstd` — a header line followed by
//! one record per line, either as plain JSON lines or as concatenated zstd frames (one for
//! the header, one per durable append batch), with runs of streamed deltas optionally
//! packed into single rows.
//!
//! The format layer works on `serde_json::Value` records, so it carries event types and
//! fields it does not know without loss:
//! - [`paths`]: where a session's log lives;
//! - [`LogHeader`]: line 1 of every log;
//! - [`chunk_rows`]: packing and unpacking of delta runs;
//! - [`LogWriter`]: lazy atomic creation and crash-safe appends;
//! - [`read_log`] / [`read_header`]: lenient reading that drops a crash's torn tail and
//!   reports real damage as [`StoreError::Corruption`].

pub mod chunk_rows;
mod error;
mod file;
mod frames;
mod header;
pub mod paths;
mod reader;

pub use error::{FrameLocation, RecordLocation, StoreError};
pub use file::{LogFormat, LogWriter};
pub use header::{LogHeader, SESSION_FORMAT_VERSION};
pub use paths::{Compression, StoreLayout};
pub use reader::{parse_log, read_header, read_log, StoredLog, TornReason, TornTail};
