//! Memory across sessions: every stored session searchable, earlier work within reach of
//! the model, and notes that last.
//!
//! - [`index`]: the full-text index (SQLite FTS5) over the session logs, a cache that
//!   [`MemoryIndex::sync`] catches up from the logs and rebuilds when it is unreadable;
//! - [`indexer`]: the live indexer, a background thread fed by `session/event`;
//! - [`query`]: literal queries (operators and odd characters are searched as text);
//! - [`service`]: the [`Memory`] kernel service (index, store, workspace checks);
//! - [`tools`]: the original's five read-only history tools, limited to the caller's
//!   workspace, their results framed as history;
//! - [`reference`]: `@session:ID` snapshots entered as untrusted context;
//! - [`notes`]: `#` / `##` notes appended to AGENTS.md, with a preview;
//! - [`remember`]: the `remember` tool and its approval gate;
//! - [`plugin`]: the `memory` plugin row;
//! - [`text`] and [`time`]: what of an event is searchable; ISO 8601 times.

pub mod error;
pub mod index;
pub mod indexer;
pub mod notes;
pub mod plugin;
pub mod query;
pub mod reference;
pub mod remember;
pub mod service;
pub mod text;
pub mod time;
pub mod tools;

pub use error::MemoryError;
pub use index::{
    EventFilter, EventHit, IndexStats, MemoryIndex, SessionFilter, SessionHit, SessionRow,
    SyncReport, INDEX_FILE,
};
pub use indexer::Indexer;
pub use notes::{note_path, parse_note_line, plan_note, write_note, NotePlan, NoteScope};
pub use plugin::{MemoryConfig, MemoryPlugin};
pub use reference::{reference_errors, reference_lines, SOURCE_KIND};
pub use remember::REMEMBER_TOOL;
pub use service::Memory;
pub use tools::HISTORY_TOOLS;
