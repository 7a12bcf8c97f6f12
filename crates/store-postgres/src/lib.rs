//! Session storage on PostgreSQL: [`dsh_store::SessionPersistence`] over tokio-postgres.
//!
//! - [`PgConfig`]: where the database is and how to authenticate (the password never
//!   appears in a message);
//! - [`schema`]: the versioned migrations the binary applies at start;
//! - [`PostgresBackend`]: the backend; one row per session, one row per event in the file
//!   format's JSON, durable appends that return after commit, and one writer per session
//!   across machines through a session-level advisory lock;
//! - [`PostgresPersistencePlugin`]: the backend mounted on a kernel context with the store's
//!   write coordinator (`session-persistence-postgres`);
//! - the seam is synchronous, so every database call runs on the backend's own runtime
//!   thread (`bridge`), never on a caller's tokio worker.
//!
//! See `docs/postgres.md` for setup, schema, locking and guarantees.

mod append;
mod backend;
mod bridge;
mod config;
mod error;
mod plugin;
pub mod schema;

pub use backend::PostgresBackend;
pub use config::PgConfig;
pub use error::PgStoreError;
pub use plugin::{PostgresPersistenceConfig, PostgresPersistencePlugin};
pub use schema::{MigrationReport, SCHEMA_VERSION};
