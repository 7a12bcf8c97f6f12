//! The append-only session event log.
//!
//! A [`Session`] is the durable truth of one agent conversation: every fact (turn and step
//! boundaries, streamed chunks, messages, tool calls and results, request headers, inbox
//! splices, plugin records) is a frozen [`SessionEvent`] whose `seq` is its index. Model
//! history is *derived* from the log through the [surface](surface) (`append`/`replace`
//! nodes), so anything a model saw can be rebuilt from the log alone.
//!
//! - [`event`] / [`vocabulary`]: the envelope and the typed payloads of the core types;
//!   every other type is carried losslessly as [`EventData::Other`].
//! - [`PluginEvent`]: how a plugin crate declares its own event type (wire name, serde
//!   payload, validation hook), appends it ([`Session::append_typed`]) and decodes it
//!   ([`SessionEvent::decode`]); [`register_event_types`] adds the declarations compiled into
//!   a binary to its vocabulary ([`event_types`] says what is known).
//! - [`Session::append`] validates everything before commit; a refused event leaves the log
//!   unchanged. [`InvariantCompanion`]s add stateful rules spanning several events
//!   ([`register_invariant_companion`]).
//! - [`SessionBuilder`] constructs sessions from seeds (resume, fork, import), given whole or
//!   checked as a reader types them ([`SeedLog`]);
//!   [`fork`](fork()) plans a child session; [`interrupted_turn_closers`] repairs crashed tails.
//! - [`SessionStore`] is the kernel service that publishes sessions and their
//!   events to plugins (`session/created`, `session/event`, `session/flush`,
//!   `session/disposed`).

mod companion;
mod derive;
mod error;
pub mod event;
pub mod event_types;
mod fork;
mod header;
mod plugin_event;
mod repair;
mod seed;
mod session;
mod store;
pub mod surface;
mod validate;
pub mod vocabulary;
mod wire;

pub use companion::{
    register_invariant_companion, registered_invariant_companions, CompanionState, EventOrigin,
    InvariantCompanion,
};
pub use derive::{
    canonical_header, derive_event_message, derive_messages, fold_request_context,
    fold_request_header, header_equals,
};
pub use error::{BoxError, SessionError, SurfaceViolation};
pub use event::{EventData, SessionEvent, SurfaceOp};
pub use fork::{fork, Fork};
pub use header::{SessionHeader, SessionOrigin, SESSION_FORMAT_VERSION};
pub use plugin_event::{
    declared_event_type, register_event_types, registered_event_types, EventDeclaration,
    PluginEvent,
};
pub use repair::{
    interrupted_turn_closers, TOOL_NOT_STARTED, TOOL_NOT_STARTED_TEXT, TOOL_OUTCOME_UNKNOWN,
    TOOL_OUTCOME_UNKNOWN_TEXT,
};
pub use seed::{SeedLog, SeedSource, SessionBuilder};
pub use session::{system_clock, AppendOptions, Clock, Session};
pub use store::{
    Detach, PublishedEvent, Seed, SessionCreated, SessionDisposed, SessionEventPublished,
    SessionFlush, SessionOptions, SessionStore, SessionsPlugin,
};
pub use surface::{fold_surface, Surface};
pub use validate::json_eq;
pub use vocabulary::*;
