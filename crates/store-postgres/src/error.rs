//! Errors of connecting and migrating (the seam's own calls report `StoreError`).

/// Why the PostgreSQL store could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgStoreError {
    /// The URL does not parse; the message never repeats a password.
    #[error("[store] url is not a valid PostgreSQL connection string: {reason}")]
    InvalidUrl { reason: String },
    /// The server refused or could not be reached.
    #[error("cannot connect to the PostgreSQL session store at {target}: {reason}")]
    Connect { target: String, reason: String },
    /// The database holds a schema newer than this build knows.
    #[error(
        "the PostgreSQL session store at {target} has schema version {found}, but this build \
         of dsh knows only up to version {known}; upgrade dsh on this machine (or point \
         [store] url at another database)"
    )]
    SchemaTooNew {
        target: String,
        found: i32,
        known: i32,
    },
    /// A migration statement failed.
    #[error("migrating the PostgreSQL session store at {target} to version {version}: {reason}")]
    Migration {
        target: String,
        version: i32,
        reason: String,
    },
    /// The backend's runtime thread could not be started.
    #[error("starting the PostgreSQL store's runtime thread: {0}")]
    Runtime(#[source] std::io::Error),
}

impl PgStoreError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            PgStoreError::InvalidUrl { .. } => "PG_STORE_URL_INVALID",
            PgStoreError::Connect { .. } => "PG_STORE_CONNECT",
            PgStoreError::SchemaTooNew { .. } => "PG_STORE_SCHEMA_TOO_NEW",
            PgStoreError::Migration { .. } => "PG_STORE_MIGRATION",
            PgStoreError::Runtime(_) => "PG_STORE_RUNTIME",
        }
    }
}
