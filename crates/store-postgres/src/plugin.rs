//! The `session-persistence-postgres` plugin: [`PostgresBackend`] mounted with the same
//! write coordinator, resume source and listeners as the file backend
//! ([`dsh_store::mount_persistence`]), so checkpoints keep their meaning.

use std::sync::Arc;
use std::time::Duration;

use dsh_kernel::{BoxError, Context, Plugin};
use serde::Deserialize;

use crate::backend::PostgresBackend;
use crate::config::PgConfig;

/// The plugin's configuration (`[store]` in settings maps onto it).
#[derive(Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PostgresPersistenceConfig {
    /// A `postgres://` URL or `key=value` connection string.
    pub url: String,
    /// The environment variable holding the password, overriding one in the URL.
    #[serde(default)]
    pub password_env: Option<String>,
    #[serde(default = "default_write_delay")]
    pub write_batch_max_delay_ms: u64,
}

impl std::fmt::Debug for PostgresPersistenceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresPersistenceConfig")
            .field("url", &"<hidden>")
            .field("password_env", &self.password_env)
            .field("write_batch_max_delay_ms", &self.write_batch_max_delay_ms)
            .finish()
    }
}

fn default_write_delay() -> u64 {
    200
}

impl PostgresPersistenceConfig {
    /// The connection target, with the password from `password_env` when set.
    pub fn pg_config(&self) -> Result<PgConfig, crate::PgStoreError> {
        let password = match &self.password_env {
            Some(var) => Some(
                std::env::var(var).map_err(|_| crate::PgStoreError::InvalidUrl {
                    reason: format!("[store] password_env names {var}, which is not set"),
                })?,
            ),
            None => None,
        };
        PgConfig::parse(&self.url, password)
    }
}

/// Mounts PostgreSQL session persistence with write-behind.
#[derive(Debug)]
pub struct PostgresPersistencePlugin;

impl Plugin for PostgresPersistencePlugin {
    const NAME: &'static str = "session-persistence-postgres";
    type Config = PostgresPersistenceConfig;

    fn apply(ctx: &Context, config: PostgresPersistenceConfig) -> Result<(), BoxError> {
        let (backend, report) = PostgresBackend::open(config.pg_config()?)?;
        if report.applied() {
            tracing::info!(
                target = backend.target(),
                from = report.from,
                to = report.to,
                "migrated the PostgreSQL session store"
            );
        }
        dsh_store::mount_persistence(
            ctx,
            Arc::new(backend),
            Duration::from_millis(config.write_batch_max_delay_ms),
        )
    }
}
