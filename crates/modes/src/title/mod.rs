//! Session titles: a deterministic fallback from the first prompt at once, then a title from
//! the model through a small side request, and a person's rename that pins one.
//!
//! - [`normalize`]: terminal-safe, one-line, byte-capped title text;
//! - [`events`]: `session/title` and `session/title-llm-request` (the original's records) and
//!   the fold;
//! - [`request`]: the side request (purpose `title`, thinking off, 64 output tokens, at most
//!   4 KB of framed input, a 60 s deadline);
//! - [`service`]: [`SessionTitles`] (when to title, rename) and the `session-title` row.
//!
//! Title requests run beside the turn, never ahead of it, and never enter the conversation:
//! both records are log-only.

pub mod events;
pub mod normalize;
pub mod request;
pub mod service;

pub use events::{
    fold_title, session_title, SessionTitle, TitleLlmRequest, TitleRoute, TitleSource, EVENT_TYPES,
};
pub use normalize::{fallback_title, normalize_title};
pub use service::{SessionTitlePlugin, SessionTitles, TitleConfig, TitleError};
