//! Opening the session store the settings select, for the commands that read sessions
//! without booting a runtime (`dsh sessions ...`), and the errors of a store that cannot
//! be opened, which name the setting to fix and never the password.

use super::error::AppError;
use crate::config::{self, Settings, StoreBackend};
use dsh_store::{JsonlBackend, JsonlConfig, JsonlPersistenceConfig, SessionPersistence};
use dsh_store_postgres::{PgStoreError, PostgresBackend, PostgresPersistenceConfig};
use std::sync::Arc;

/// A session store opened directly. Most callers want [`persistence`](Self::persistence);
/// the file backend's own operations (`repair`'s byte-level cuts, the listing index's
/// problems) need [`files`](Self::files).
#[derive(Clone, Debug)]
pub enum OpenedStore {
    Files(Arc<JsonlBackend>),
    Postgres(Arc<PostgresBackend>),
}

impl OpenedStore {
    pub fn persistence(&self) -> &dyn SessionPersistence {
        match self {
            Self::Files(files) => files.as_ref(),
            Self::Postgres(pg) => pg.as_ref(),
        }
    }

    pub fn shared(&self) -> Arc<dyn SessionPersistence> {
        match self {
            Self::Files(files) => files.clone(),
            Self::Postgres(pg) => pg.clone(),
        }
    }

    pub fn files(&self) -> Option<&JsonlBackend> {
        match self {
            Self::Files(files) => Some(files),
            Self::Postgres(_) => None,
        }
    }

    /// Where the sessions are, for messages: a directory or `user@host:port/db`.
    pub fn describe(&self) -> String {
        match self {
            Self::Files(files) => files.layout().root().display().to_string(),
            Self::Postgres(pg) => format!("postgres {}", pg.target()),
        }
    }
}

/// The store the persistence row mounts (the same root and encoding, or the same database,
/// as runs write).
pub fn open_store(settings: &Settings) -> Result<OpenedStore, AppError> {
    let composition = super::rows::boot_composition(settings);
    let row = composition
        .rows
        .iter()
        .find(|row| row.id == config::PERSISTENCE_ROW)
        .filter(|row| !row.disabled);
    let Some(row) = row else {
        return Err(AppError::MissingPart {
            service: "session store",
            row: config::PERSISTENCE_ROW,
        });
    };
    let invalid = |message: String| {
        AppError::Mount(dsh_kernel::KernelError::InvalidConfig {
            id: row.id.clone(),
            plugin: row.plugin.clone(),
            message,
        })
    };
    if row.plugin == <dsh_store_postgres::PostgresPersistencePlugin as dsh_kernel::Plugin>::NAME {
        let config: PostgresPersistenceConfig =
            serde_json::from_value(row.config.clone()).map_err(|e| invalid(e.to_string()))?;
        return open_postgres_with(settings, &config).map(|pg| OpenedStore::Postgres(Arc::new(pg)));
    }
    let config: JsonlPersistenceConfig =
        serde_json::from_value(row.config.clone()).map_err(|e| invalid(e.to_string()))?;
    Ok(OpenedStore::Files(Arc::new(files_backend(&config))))
}

/// The file backend at `$DSH_HOME/sessions` (or the persistence row's root when the row is
/// the file store), whatever `[store] backend` says: `dsh sessions migrate`'s other side.
pub fn open_files(settings: &Settings) -> JsonlBackend {
    let composition = super::rows::boot_composition(settings);
    let config = composition
        .rows
        .iter()
        .find(|row| row.plugin == <dsh_store::JsonlPersistencePlugin as dsh_kernel::Plugin>::NAME)
        .and_then(|row| serde_json::from_value::<JsonlPersistenceConfig>(row.config.clone()).ok())
        .unwrap_or_else(|| JsonlPersistenceConfig::new(super::rows::sessions_root(settings)));
    files_backend(&config)
}

fn files_backend(config: &JsonlPersistenceConfig) -> JsonlBackend {
    JsonlBackend::new(JsonlConfig {
        root: config.root.clone(),
        compression: config.compression,
        pack_chunks: config.pack_chunks,
    })
}

/// The database `[store] url` (or `DSH_DATABASE_URL`) names, whatever `[store] backend`
/// says: `dsh sessions migrate`'s other side.
pub fn open_postgres(settings: &Settings) -> Result<PostgresBackend, AppError> {
    let Some(config) = settings.store.postgres_config() else {
        return Err(AppError::StoreUnavailable {
            code: "PG_STORE_URL_MISSING",
            message: format!(
                "no PostgreSQL database is configured: set [store] url in {}, or {}",
                settings.settings_path.display(),
                config::DATABASE_URL_ENV
            ),
        });
    };
    let config: PostgresPersistenceConfig =
        serde_json::from_value(config).map_err(|e| AppError::StoreUnavailable {
            code: "PG_STORE_URL_INVALID",
            message: e.to_string(),
        })?;
    open_postgres_with(settings, &config)
}

fn open_postgres_with(
    settings: &Settings,
    config: &PostgresPersistenceConfig,
) -> Result<PostgresBackend, AppError> {
    let opened = config
        .pg_config()
        .and_then(PostgresBackend::open)
        .map_err(|error| store_error(settings, &error))?;
    let (backend, report) = opened;
    if report.applied() {
        crate::commands::stderr_line(format_args!(
            "dsh: migrated the PostgreSQL session store at {} from schema version {} to {}",
            backend.target(),
            report.from,
            report.to
        ));
    }
    Ok(backend)
}

/// A PostgreSQL store that cannot be opened, with the setting to fix named (never the
/// password).
pub fn store_error(settings: &Settings, error: &PgStoreError) -> AppError {
    let store = &settings.store;
    let hint = match error {
        PgStoreError::InvalidUrl { .. } => format!("fix {}", store.url_origin()),
        PgStoreError::Connect { reason, .. } if is_auth_failure(reason) => format!(
            "check the user in {} and the password from {}",
            store.url_origin(),
            store.password_origin()
        ),
        PgStoreError::Connect { .. } => format!(
            "is the server running and reachable? The database is named by {}",
            store.url_origin()
        ),
        PgStoreError::SchemaTooNew { .. } => format!("the database is {}", store.url_origin()),
        _ => format!("the database is named by {}", store.url_origin()),
    };
    AppError::StoreUnavailable {
        code: error.code(),
        message: format!("{error}; {hint}"),
    }
}

/// Whether a connection failure is the server refusing the credentials (SQLSTATE 28xxx:
/// invalid authorization, or a password the client could not supply).
fn is_auth_failure(reason: &str) -> bool {
    reason.contains("(28P01)")
        || reason.contains("(28000)")
        || reason.contains("password missing")
        || reason.contains("password authentication")
}

/// [`AppError::Mount`] of a persistence row that failed to open its database, turned into
/// the same named-setting error the session commands give.
pub fn explain_mount_error(settings: &Settings, error: dsh_kernel::KernelError) -> AppError {
    if settings.store.backend.value == StoreBackend::Postgres {
        if let dsh_kernel::KernelError::PluginFailed { id, source } = &error {
            if id == config::PERSISTENCE_ROW {
                if let Some(pg) = source.downcast_ref::<PgStoreError>() {
                    return store_error(settings, pg);
                }
            }
        }
    }
    AppError::Mount(error)
}
