//! The `session-persistence-jsonl` plugin: durable storage mounted on a kernel context.
//!
//! It provides the [`SessionPersistence`] service, a [`WriteCoordinator`] and the agent
//! layer's `dyn ResumeSource` (a [`crate::StoreResumeSource`]), and follows
//! the session store's events: `session/created` registers a session (an error, such as a
//! log already on disk, vetoes the creation), `session/event` arms the batching window,
//! `session/flush` drains it, and `session/disposed` writes what is left and lets the log go.
//! Unloading the plugin flushes every session it still holds.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use dsh_kernel::{BoxError, Context, Plugin};
use dsh_session::{SessionCreated, SessionDisposed, SessionEventPublished, SessionFlush};
use serde::Deserialize;

use crate::backend::{JsonlBackend, JsonlConfig};
use crate::coordinator::{WriteBehindConfig, WriteCoordinator};
use crate::paths::Compression;
use crate::persistence::SessionPersistence;

/// Configuration, with the original's keys and defaults.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JsonlPersistenceConfig {
    /// The sessions root; required (the original has no default either).
    pub root: PathBuf,
    #[serde(default)]
    pub compression: Compression,
    #[serde(default = "default_pack_chunks")]
    pub pack_chunks: bool,
    #[serde(default = "default_write_delay")]
    pub write_batch_max_delay_ms: u64,
    /// Accepted for compatibility with the original's configuration; this backend does not
    /// cache prepared sessions.
    #[serde(default)]
    pub prepared_session_cache_size: Option<u64>,
}

fn default_pack_chunks() -> bool {
    true
}

fn default_write_delay() -> u64 {
    200
}

impl JsonlPersistenceConfig {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        JsonlPersistenceConfig {
            root: root.into(),
            compression: Compression::Zstd,
            pack_chunks: true,
            write_batch_max_delay_ms: default_write_delay(),
            prepared_session_cache_size: None,
        }
    }
}

fn boxed(err: crate::error::StoreError) -> BoxError {
    Box::new(err)
}

/// Mounts JSONL/zstd session persistence with write-behind.
#[derive(Debug)]
pub struct JsonlPersistencePlugin;

impl Plugin for JsonlPersistencePlugin {
    const NAME: &'static str = "session-persistence-jsonl";
    type Config = JsonlPersistenceConfig;

    fn apply(ctx: &Context, config: JsonlPersistenceConfig) -> Result<(), BoxError> {
        let backend = JsonlBackend::new(JsonlConfig {
            root: config.root,
            compression: config.compression,
            pack_chunks: config.pack_chunks,
        });
        mount_persistence(
            ctx,
            Arc::new(backend),
            Duration::from_millis(config.write_batch_max_delay_ms),
        )
    }
}

/// Mounts any [`SessionPersistence`] backend the way this plugin mounts the file backend:
/// the service itself, a [`WriteCoordinator`] with write-behind batching, the agent layer's
/// resume source, and the session-store listeners. Other backends' plugins (PostgreSQL)
/// call this, so the coordinator and checkpoints sit on the seam unchanged.
pub fn mount_persistence(
    ctx: &Context,
    persistence: Arc<dyn SessionPersistence>,
    max_delay: Duration,
) -> Result<(), BoxError> {
    let coordinator =
        WriteCoordinator::new(Arc::clone(&persistence), WriteBehindConfig { max_delay });
    ctx.provide::<dyn SessionPersistence>(persistence)?.forget();
    ctx.provide(Arc::new(coordinator.clone()))?.forget();
    let resume: Arc<dyn dsh_agent::ResumeSource> =
        Arc::new(crate::resume::StoreResumeSource::new(coordinator.clone()));
    ctx.provide::<dyn dsh_agent::ResumeSource>(resume)?.forget();

    let c = coordinator.clone();
    ctx.on::<SessionCreated>(move |session| c.register(session).map_err(boxed))?
        .forget();
    let c = coordinator.clone();
    ctx.on::<SessionEventPublished>(move |published| {
        c.notify(published.session.id());
        Ok(())
    })?
    .forget();
    let c = coordinator.clone();
    ctx.on_parallel::<SessionFlush, _, _>(move |session| {
        let c = c.clone();
        async move { c.flush(session.id()).await.map_err(boxed) }
    })?
    .forget();
    let c = coordinator.clone();
    ctx.on::<SessionDisposed>(move |session| {
        c.release_detached(session.id());
        Ok(())
    })?
    .forget();
    ctx.effect("flush sessions on unload", move || {
        if let Err(err) = coordinator.flush_all_blocking() {
            tracing::warn!(code = err.code(), %err, "sessions not flushed on unload");
        }
    })?
    .forget();
    Ok(())
}
