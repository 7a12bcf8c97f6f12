//! [`PostgresBackend`]: the persistence seam over two tables.
//!
//! Each session being written has its own connection, which holds the session's
//! session-level advisory lock for as long as this process writes it: a second writer
//! anywhere gets [`StoreError::Locked`], and a writer that dies loses its connection and
//! with it the lock. Reads and listing use one shared connection.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use dsh_kernel::sync::lock;
use dsh_protocol::SessionId;
use dsh_session::{
    interrupted_turn_closers, SeedSource, Session, SessionBuilder, SessionEvent, SessionHeader,
};
use dsh_store::{
    Inspection, LogHeader, SessionPersistence, SessionPreparation, SessionSummary, StoreError,
    StoredSession,
};
use tokio_postgres::{Client, NoTls};

use crate::append::{append_tx, new_row, Batch};
use crate::bridge::Bridge;
use crate::config::PgConfig;
use crate::error::PgStoreError;
use crate::schema::{migrate, MigrationReport};

const BACKEND: &str = "postgres";

/// A driver error in one line, with the server's SQLSTATE when there is one.
pub(crate) fn describe_pg(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => match std::error::Error::source(e) {
            Some(source) => format!("{e}: {source}"),
            None => e.to_string(),
        },
    }
}

pub(crate) fn backend_error(op: &'static str) -> impl Fn(tokio_postgres::Error) -> StoreError {
    move |e| StoreError::Backend {
        backend: BACKEND,
        op,
        reason: describe_pg(&e),
    }
}

fn gone(op: &'static str) -> impl Fn(crate::bridge::BridgeGone) -> StoreError {
    move |_| StoreError::Backend {
        backend: BACKEND,
        op,
        reason: "the store's runtime thread is gone".into(),
    }
}

/// How messages name a session's stored log (there is no file).
pub(crate) fn log_path(id: &str) -> PathBuf {
    PathBuf::from(format!("postgres:dsh_sessions/{id}"))
}

/// A session's advisory lock key: the server's 64-bit text hash, namespaced.
const LOCK_KEY_SQL: &str = "hashtextextended('dsh-session:' || $1, 0)";

/// One session's writer state; the slot's mutex serializes every operation on it.
#[derive(Default)]
struct Slot {
    /// Created here and not stored yet (nothing is written until the first append).
    pending: Option<SessionHeader>,
    writer: Option<Writer>,
    /// The last append failed in a way that may have committed (a cut connection): the
    /// next append may find its own rows stored already, which then counts as done.
    uncertain: bool,
}

struct Writer {
    /// The connection holding the session's advisory lock.
    client: Arc<Client>,
    next_seq: u64,
    summary: SessionSummary,
}

/// Sessions in one PostgreSQL database.
pub struct PostgresBackend {
    bridge: Bridge,
    config: PgConfig,
    shared: Mutex<Option<Arc<Client>>>,
    slots: Mutex<HashMap<SessionId, Arc<Mutex<Slot>>>>,
}

impl std::fmt::Debug for PostgresBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresBackend")
            .field("target", &self.config.target())
            .finish_non_exhaustive()
    }
}

async fn connect(config: tokio_postgres::Config) -> Result<Client, tokio_postgres::Error> {
    let (client, connection) = config.connect(NoTls).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "postgres connection ended");
        }
    });
    Ok(client)
}

impl PostgresBackend {
    /// Connects, applies pending migrations (or refuses a newer schema) and returns the
    /// backend with what migrating did.
    pub fn open(config: PgConfig) -> Result<(PostgresBackend, MigrationReport), PgStoreError> {
        let bridge = Bridge::start().map_err(PgStoreError::Runtime)?;
        let target = config.target().to_owned();
        let inner = config.inner.clone();
        let bridge_gone = || PgStoreError::Connect {
            target: target.clone(),
            reason: "the store's runtime thread is gone".into(),
        };
        let (client, report) = bridge
            .run({
                let target = target.clone();
                async move {
                    let client = connect(inner).await.map_err(|e| PgStoreError::Connect {
                        target: target.clone(),
                        reason: describe_pg(&e),
                    })?;
                    let report = migrate(&client, &target).await?;
                    Ok::<_, PgStoreError>((client, report))
                }
            })
            .map_err(|_| bridge_gone())??;
        Ok((
            PostgresBackend {
                bridge,
                config,
                shared: Mutex::new(Some(Arc::new(client))),
                slots: Mutex::new(HashMap::new()),
            },
            report,
        ))
    }

    /// `user@host:port/dbname`.
    pub fn target(&self) -> &str {
        self.config.target()
    }

    fn slot(&self, id: &SessionId) -> Arc<Mutex<Slot>> {
        Arc::clone(lock(&self.slots).entry(id.clone()).or_default())
    }

    /// The shared connection for reads, reconnecting if the server dropped it.
    fn shared(&self) -> Result<Arc<Client>, StoreError> {
        let mut shared = lock(&self.shared);
        if let Some(client) = shared.as_ref().filter(|c| !c.is_closed()) {
            return Ok(Arc::clone(client));
        }
        let inner = self.config.inner.clone();
        let client = self
            .bridge
            .run(connect(inner))
            .map_err(gone("connect"))?
            .map_err(backend_error("connect"))?;
        let client = Arc::new(client);
        *shared = Some(Arc::clone(&client));
        Ok(client)
    }

    fn run<F, T>(&self, op: &'static str, work: F) -> Result<T, StoreError>
    where
        F: std::future::Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        self.bridge.run(work).map_err(gone(op))?
    }

    /// The stored header and events, checked to be contiguous from 0.
    fn read_stored(
        &self,
        id: &SessionId,
        from_seq: u64,
    ) -> Result<(SessionHeader, Vec<Arc<SessionEvent>>, u64), StoreError> {
        let client = self.shared()?;
        let key = id.as_str().to_owned();
        let from = i64::try_from(from_seq).unwrap_or(i64::MAX);
        let (header, size, rows) = self.run("read", async move {
            let Some(row) = client
                .query_opt(
                    "SELECT header, size FROM dsh_sessions WHERE id = $1",
                    &[&key],
                )
                .await
                .map_err(backend_error("read"))?
            else {
                return Err(StoreError::NotFound { id: key });
            };
            let header: String = row.get(0);
            let size: i64 = row.get(1);
            let rows = client
                .query(
                    "SELECT seq, data FROM dsh_events WHERE session_id = $1 AND seq >= $2 \
                     ORDER BY seq",
                    &[&key, &from],
                )
                .await
                .map_err(backend_error("read"))?;
            let rows: Vec<(i64, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
            Ok((header, size, rows))
        })?;
        let path = log_path(id.as_str());
        let header = parse_header(&path, &header)?;
        let mut events = Vec::with_capacity(rows.len());
        for (position, (seq, data)) in rows.into_iter().enumerate() {
            let expected = from_seq + position as u64;
            let event = SessionEvent::from_json(&data).map_err(|source| StoreError::Rejected {
                path: path.clone(),
                source,
            })?;
            if seq as u64 != expected || event.seq != expected {
                return Err(StoreError::Corruption {
                    path,
                    at: dsh_store::RecordLocation {
                        line: expected + 2,
                        frame: None,
                    },
                    reason: format!("expected seq {expected}, found row {seq}"),
                });
            }
            events.push(Arc::new(event));
        }
        Ok((header, events, size.max(0) as u64))
    }

    /// Opens (or reopens after a lost connection) the slot's writer: a new connection that
    /// takes the session's advisory lock, then the stored next seq.
    fn ensure_writer<'a>(
        &self,
        id: &SessionId,
        slot: &'a mut Slot,
    ) -> Result<&'a mut Writer, StoreError> {
        if slot.writer.as_ref().is_some_and(|w| w.client.is_closed()) {
            slot.writer = None;
        }
        if slot.writer.is_none() {
            let inner = self.config.inner.clone();
            let key = id.as_str().to_owned();
            let pending = slot.pending.is_some();
            let (client, stored) = self.run("open for writing", async move {
                let client = connect(inner).await.map_err(backend_error("connect"))?;
                let locked: bool = client
                    .query_one(
                        &format!("SELECT pg_try_advisory_lock({LOCK_KEY_SQL})"),
                        &[&key],
                    )
                    .await
                    .map_err(backend_error("lock"))?
                    .get(0);
                if !locked {
                    return Err(StoreError::Locked {
                        path: log_path(&key),
                    });
                }
                let row = client
                    .query_opt(
                        "SELECT next_seq, workspace_path, title, created_at, updated_at, turns, \
                         events, size, last_outcome, parent_session, delegation_depth \
                         FROM dsh_sessions WHERE id = $1",
                        &[&key],
                    )
                    .await
                    .map_err(backend_error("open for writing"))?;
                if row.is_none() && !pending {
                    return Err(StoreError::NotFound { id: key });
                }
                let stored = row.map(|row| {
                    let next_seq: i64 = row.get(0);
                    (next_seq.max(0) as u64, summary_of(&key, &row, 1))
                });
                Ok((client, stored))
            })?;
            let writer = match (stored, &slot.pending) {
                (Some((next_seq, summary)), _) => {
                    // The row exists: a create that committed before a lost connection.
                    slot.pending = None;
                    Writer {
                        client: Arc::new(client),
                        next_seq,
                        summary,
                    }
                }
                (None, Some(header)) => Writer {
                    client: Arc::new(client),
                    next_seq: 0,
                    summary: new_summary(header),
                },
                (None, None) => {
                    return Err(StoreError::NotFound {
                        id: id.as_str().to_owned(),
                    })
                }
            };
            slot.writer = Some(writer);
        }
        slot.writer.as_mut().ok_or(StoreError::NotFound {
            id: id.as_str().to_owned(),
        })
    }

    fn append_locked(
        &self,
        slot: &mut Slot,
        id: &SessionId,
        events: &[Arc<SessionEvent>],
    ) -> Result<(), StoreError> {
        let Some(first) = events.first() else {
            return Ok(());
        };
        let path = log_path(id.as_str());
        for (i, event) in events.iter().enumerate() {
            if event.seq != first.seq + i as u64 {
                return Err(StoreError::SeqMismatch {
                    path,
                    expected: first.seq + i as u64,
                    found: event.seq,
                });
            }
        }
        let create = match &slot.pending {
            Some(header) => Some(new_row(header)?),
            None => None,
        };
        let writer = self.ensure_writer(id, slot)?;
        let mut summary = writer.summary.clone();
        let mut seqs = Vec::with_capacity(events.len());
        let mut types = Vec::with_capacity(events.len());
        let mut times = Vec::with_capacity(events.len());
        let mut datas = Vec::with_capacity(events.len());
        for (position, event) in events.iter().enumerate() {
            let data = serde_json::to_string(&**event).map_err(|e| StoreError::InvalidEvent {
                position,
                reason: e.to_string(),
            })?;
            summary.apply_event(event);
            summary.size += data.len() as u64 + 1;
            seqs.push(event.seq as i64);
            types.push(event.type_name().to_owned());
            times.push(event.time as i64);
            datas.push(data);
        }
        let client = Arc::clone(&writer.client);
        let key = id.as_str().to_owned();
        let first_seq = first.seq;
        let next = first_seq + events.len() as u64;
        let update = summary.clone();
        let replay = slot.uncertain;
        let outcome = self.run("append", async move {
            let batch = Batch {
                first_seq,
                seqs,
                types,
                times,
                datas,
            };
            append_tx(&client, &key, create, &batch, &update, replay).await
        });
        match outcome {
            Ok(()) => {
                slot.pending = None;
                slot.uncertain = false;
                if let Some(writer) = slot.writer.as_mut() {
                    writer.next_seq = next;
                    writer.summary = summary;
                }
                Ok(())
            }
            Err(err) => {
                // Reread the stored state before the next try (the commit may have landed
                // before the connection was cut; the retry then finds its own rows).
                slot.writer = None;
                slot.uncertain = matches!(err, StoreError::Backend { .. });
                Err(err)
            }
        }
    }
}

fn new_summary(header: &SessionHeader) -> SessionSummary {
    SessionSummary {
        id: header.id.as_str().to_owned(),
        cwd: header.cwd.clone(),
        created_at: header.created_at,
        updated_at: header.created_at,
        parent_session: header
            .parent_session
            .as_ref()
            .map(|p| p.as_str().to_owned()),
        delegation_depth: header.delegation_depth.filter(|d| *d > 0),
        ..SessionSummary::default()
    }
}

/// A summary from a row whose columns from `at` on are workspace_path, title, created_at,
/// updated_at, turns, events, size, last_outcome, parent_session, delegation_depth.
fn summary_of(id: &str, row: &tokio_postgres::Row, at: usize) -> SessionSummary {
    let n = |i: usize| row.get::<_, i64>(at + i).max(0) as u64;
    SessionSummary {
        id: id.to_owned(),
        cwd: row.get(at),
        title: row.get(at + 1),
        created_at: n(2),
        updated_at: n(3),
        turns: n(4),
        events: n(5),
        size: n(6),
        last_outcome: row.get(at + 7),
        parent_session: row.get(at + 8),
        delegation_depth: row.get::<_, Option<i64>>(at + 9).map(|d| d.max(0) as u64),
        problem: None,
    }
}

fn parse_header(path: &std::path::Path, text: &str) -> Result<SessionHeader, StoreError> {
    let rejected = |reason: String| StoreError::Rejected {
        path: path.to_owned(),
        source: dsh_session::SessionError::InvalidHeader { reason },
    };
    let header: SessionHeader = serde_json::from_str(text).map_err(|e| rejected(e.to_string()))?;
    header.validate().map_err(|source| StoreError::Rejected {
        path: path.to_owned(),
        source,
    })?;
    Ok(header)
}

fn seed_with_closers(
    header: SessionHeader,
    mut events: Vec<Arc<SessionEvent>>,
    closers: &[SessionEvent],
    path: &std::path::Path,
) -> Result<Session, StoreError> {
    events.extend(closers.iter().cloned().map(Arc::new));
    SessionBuilder::new(header)
        .seed(events, SeedSource::Persistence)
        .build()
        .map_err(|source| StoreError::Rejected {
            path: path.to_path_buf(),
            source,
        })
}

fn log_header(header: &SessionHeader) -> Result<LogHeader, StoreError> {
    let value = serde_json::to_value(header).map_err(|e| StoreError::InvalidSession {
        source: dsh_session::SessionError::InvalidHeader {
            reason: e.to_string(),
        },
    })?;
    let field = |name: &str| {
        value
            .get(name)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    let mut extra = serde_json::Map::new();
    if let serde_json::Value::Object(map) = &value {
        for (k, v) in map {
            if !matches!(
                k.as_str(),
                "type"
                    | "version"
                    | "id"
                    | "createdAt"
                    | "cwd"
                    | "parentSession"
                    | "seedLength"
                    | "origin"
                    | "delegationDepth"
                    | "agentPreset"
            ) {
                extra.insert(k.clone(), v.clone());
            }
        }
    }
    Ok(LogHeader {
        id: header.id.as_str().to_owned(),
        created_at: header.created_at,
        cwd: header.cwd.clone(),
        parent_session: header
            .parent_session
            .as_ref()
            .map(|p| p.as_str().to_owned()),
        seed_length: header.seed_length,
        origin: field("origin"),
        delegation_depth: header.delegation_depth.unwrap_or(0),
        agent_preset: header.agent_preset.clone(),
        extra,
    })
}

impl SessionPersistence for PostgresBackend {
    fn create(&self, header: &SessionHeader) -> Result<(), StoreError> {
        header
            .validate()
            .map_err(|source| StoreError::InvalidSession { source })?;
        let slot = self.slot(&header.id);
        let mut slot = lock(&slot);
        let path = log_path(header.id.as_str());
        if slot.pending.is_some() || slot.writer.is_some() {
            return Err(StoreError::AlreadyExists { path });
        }
        let client = self.shared()?;
        let key = header.id.as_str().to_owned();
        let exists = self.run("create", async move {
            client
                .query_opt("SELECT 1 FROM dsh_sessions WHERE id = $1", &[&key])
                .await
                .map(|row| row.is_some())
                .map_err(backend_error("create"))
        })?;
        if exists {
            return Err(StoreError::AlreadyExists { path });
        }
        slot.pending = Some(header.clone());
        Ok(())
    }

    fn next_seq(&self, id: &SessionId) -> Result<u64, StoreError> {
        let slot = self.slot(id);
        let slot = lock(&slot);
        if let Some(writer) = slot.writer.as_ref().filter(|w| !w.client.is_closed()) {
            return Ok(writer.next_seq);
        }
        if slot.pending.is_some() {
            return Ok(0);
        }
        let client = self.shared()?;
        let key = id.as_str().to_owned();
        self.run("next seq", async move {
            match client
                .query_opt("SELECT next_seq FROM dsh_sessions WHERE id = $1", &[&key])
                .await
                .map_err(backend_error("next seq"))?
            {
                Some(row) => Ok(row.get::<_, i64>(0).max(0) as u64),
                None => Err(StoreError::NotFound { id: key }),
            }
        })
    }

    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), StoreError> {
        let slot = self.slot(id);
        let mut slot = lock(&slot);
        self.append_locked(&mut slot, id, events)
    }

    fn prepare(&self, id: &SessionId) -> Result<SessionPreparation, StoreError> {
        let slot = self.slot(id);
        let mut slot = lock(&slot);
        // Take the lock first, so nothing writes between the read and the repair.
        self.ensure_writer(id, &mut slot)?;
        let (header, events, _) = self.read_stored(id, 0)?;
        let path = log_path(id.as_str());
        let closers = interrupted_turn_closers(&events);
        let stored = events.len();
        let session = seed_with_closers(header, events, &closers, &path)?;
        let session_events = session.events();
        if let Some(writer) = slot.writer.as_mut() {
            writer.next_seq = stored as u64;
        }
        self.append_locked(
            &mut slot,
            id,
            &session_events[stored..stored + closers.len()],
        )?;
        Ok(SessionPreparation {
            session,
            torn_tail: None,
            closers,
        })
    }

    fn load(&self, id: &SessionId) -> Result<StoredSession, StoreError> {
        let (header, events, _) = self.read_stored(id, 0)?;
        Ok(StoredSession {
            header,
            events,
            torn_tail: None,
        })
    }

    fn inspect(&self, id: &SessionId) -> Result<Inspection, StoreError> {
        let (header, events, size) = self.read_stored(id, 0)?;
        let path = log_path(id.as_str());
        let pending_closers = interrupted_turn_closers(&events);
        let count = events.len() as u64;
        let stored_header = log_header(&header)?;
        seed_with_closers(header, events, &pending_closers, &path)?;
        Ok(Inspection {
            path,
            header: stored_header,
            events: count,
            size,
            torn_tail: None,
            pending_closers,
        })
    }

    fn read_from(
        &self,
        id: &SessionId,
        from_seq: u64,
    ) -> Result<Vec<Arc<SessionEvent>>, StoreError> {
        Ok(self.read_stored(id, from_seq)?.1)
    }

    fn list(&self) -> Result<Vec<SessionSummary>, StoreError> {
        let client = self.shared()?;
        self.run("list", async move {
            let rows = client
                .query(
                    "SELECT id, workspace_path, title, created_at, updated_at, turns, events, \
                     size, last_outcome, parent_session, delegation_depth FROM dsh_sessions \
                     ORDER BY updated_at DESC, id",
                    &[],
                )
                .await
                .map_err(backend_error("list"))?;
            Ok(rows
                .iter()
                .map(|row| summary_of(row.get(0), row, 1))
                .collect())
        })
    }

    fn release(&self, id: &SessionId) {
        let Some(slot) = lock(&self.slots).remove(id) else {
            return;
        };
        let writer = lock(&slot).writer.take();
        if let Some(writer) = writer {
            let key = id.as_str().to_owned();
            // Unlock explicitly so another machine can take the session at once; the
            // connection closes when the client drops either way.
            let _ = self.bridge.run(async move {
                let _ = writer
                    .client
                    .execute(
                        &format!("SELECT pg_advisory_unlock({LOCK_KEY_SQL})"),
                        &[&key],
                    )
                    .await;
            });
        }
    }
}

impl PostgresBackend {
    /// A session's header and events as stored, as JSON values (the header in the file
    /// format's line-1 shape): what `dsh sessions export` writes, equal to the file
    /// backend's export of the same session.
    pub fn raw_log(
        &self,
        id: &SessionId,
    ) -> Result<(serde_json::Value, Vec<serde_json::Value>), StoreError> {
        let client = self.shared()?;
        let key = id.as_str().to_owned();
        let (header, rows) = self.run("read", async move {
            let Some(row) = client
                .query_opt("SELECT header FROM dsh_sessions WHERE id = $1", &[&key])
                .await
                .map_err(backend_error("read"))?
            else {
                return Err(StoreError::NotFound { id: key });
            };
            let header: String = row.get(0);
            let rows = client
                .query(
                    "SELECT data FROM dsh_events WHERE session_id = $1 ORDER BY seq",
                    &[&key],
                )
                .await
                .map_err(backend_error("read"))?;
            let rows: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
            Ok((header, rows))
        })?;
        let path = log_path(id.as_str());
        let header = log_header(&parse_header(&path, &header)?)?.to_value();
        let events = rows
            .iter()
            .enumerate()
            .map(|(seq, data)| {
                serde_json::from_str(data).map_err(|e| StoreError::Corruption {
                    path: path.clone(),
                    at: dsh_store::RecordLocation {
                        line: seq as u64 + 2,
                        frame: None,
                    },
                    reason: e.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((header, events))
    }
}
