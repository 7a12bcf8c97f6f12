//! The full-text index: one SQLite file with an FTS5 table of event texts and a table of
//! sessions (workspace, title, parent, how far each log is indexed).
//!
//! The index is a cache of the logs, never the truth. Each session row records the seq the
//! next indexed event must carry; [`MemoryIndex::sync`] compares it with the store's listing
//! and reads only the missing tail of each log, so catching up after another process wrote
//! (or after events the live indexer skipped) is cheap, and a log that shrank (a repair cut a
//! torn tail) is indexed again from the start. Every write happens in one `IMMEDIATE`
//! transaction that re-reads that seq first, so two processes indexing the same session never
//! store an event twice. A file that is not a readable index of this version is replaced
//! (with a notice) and rebuilt from the logs.
//!
//! An event's rowid is its session's key (assigned in the order sessions are first indexed)
//! in the high 32 bits and its seq in the low 32, so a session's rows are one rowid range
//! (dropped, shadowed and searched without a scan) and a search can group matches by session
//! and take the newest first without reading any row's stored columns. The workspace is a
//! token of its own column (`scope`), so FTS5 narrows a search to one workspace itself.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use dsh_session::{EventData, SessionEvent};
use dsh_store::{SessionPersistence, SessionSummary};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use serde::Serialize;

use crate::error::MemoryError;
use crate::text::{clip, event_text, one_line};

mod search;

pub use search::{ROWS_PER_SESSION, WINDOW_ROWS};

/// File name of the index under `$DSH_HOME/memory`.
pub const INDEX_FILE: &str = "index.sqlite";
/// Bumped when the schema or what is indexed changes: an older file is rebuilt.
const SCHEMA_VERSION: &str = "2";
/// Marks a match inside a snippet: start and end (control characters, so no log text can
/// spell them; surfaces turn them into bold or brackets).
pub const MARK_START: char = '\u{2}';
pub const MARK_END: char = '\u{3}';
const TITLE_CHARS: usize = 200;

/// What a search hit says about its session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRow {
    pub id: String,
    pub cwd: Option<String>,
    pub title: Option<String>,
    pub created_at: u64,
    pub updated_at: u64,
    pub parent_session: Option<String>,
    /// Events indexed (the next seq expected).
    pub indexed_events: u64,
}

/// The best-matching event of one session.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHit {
    pub session: SessionRow,
    #[serde(flatten)]
    pub event: EventHit,
}

/// One matching event.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventHit {
    pub seq: u64,
    #[serde(rename = "type")]
    pub event_type: String,
    /// The turn the event belongs to (0 before the first turn).
    pub turn: u64,
    pub time: u64,
    /// `current`, `shadowed` or `log-only`.
    pub surface: String,
    /// The matching passage, matches between [`MARK_START`] and [`MARK_END`].
    pub snippet: String,
    /// BM25 score; lower is better.
    pub rank: f64,
}

/// Which sessions a search looks at.
#[derive(Clone, Debug, Default)]
pub struct SessionFilter {
    /// Only sessions recorded with this workspace (`None`: every workspace).
    pub cwd: Option<String>,
    /// Only these sessions.
    pub ids: Option<Vec<String>>,
    /// Never this session (the caller's own).
    pub exclude: Option<String>,
    /// Only sessions created in this range (epoch ms, inclusive).
    pub created_from: Option<u64>,
    pub created_to: Option<u64>,
    /// Only sessions whose parent is one of these (`None` in the list: root sessions).
    pub parents: Option<Vec<Option<String>>>,
}

/// Which events of one session a search looks at.
#[derive(Clone, Debug, Default)]
pub struct EventFilter {
    pub seq_from: Option<u64>,
    pub seq_to: Option<u64>,
    pub time_from: Option<u64>,
    pub time_to: Option<u64>,
    pub types: Option<Vec<String>>,
    /// `current` (on the model's surface), `shadowed` (compacted away) or `log-only`.
    pub surfaces: Option<Vec<String>>,
}

/// What a [`MemoryIndex::sync`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncReport {
    pub sessions: usize,
    pub events_indexed: u64,
    pub sessions_dropped: usize,
    /// Sessions whose logs could not be read (`id: reason`); they stay as indexed.
    pub unreadable: Vec<String>,
}

/// Index size figures.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexStats {
    pub sessions: u64,
    pub rows: u64,
    pub bytes: u64,
}

/// The index; cheap to share (`Arc`), one connection behind a lock.
///
/// A [`lazy`](Self::lazy) index touches no file until its first use: the plugin opens it
/// that way, so booting a surface (an editor's `session/new`, `dsh run`, the TUI) never pays
/// for creating the file on a fresh `$DSH_HOME` (its schema, WAL and fsyncs); the live
/// indexer's thread creates it with the first event, or a search does, which then syncs.
#[derive(Debug)]
pub struct MemoryIndex {
    path: PathBuf,
    conn: OnceLock<Mutex<Connection>>,
    /// Held while the file is being opened, so two first uses open it once.
    opening: Mutex<()>,
    /// The ranking window of the running search (see [`search`]).
    window: search::SharedWindow,
}

/// Header facts of a session being indexed live.
#[derive(Clone, Debug, Default)]
pub struct SessionMeta {
    pub id: String,
    pub cwd: Option<String>,
    pub created_at: u64,
    pub parent_session: Option<String>,
}

impl SessionMeta {
    fn of_summary(summary: &SessionSummary) -> Self {
        Self {
            id: summary.id.clone(),
            cwd: summary.cwd.clone(),
            created_at: summary.created_at,
            parent_session: summary.parent_session.clone(),
        }
    }
}

fn lock(conn: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    conn.lock().unwrap_or_else(PoisonError::into_inner)
}

const SCHEMA: &str = "
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    key INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    cwd TEXT,
    title TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    parent TEXT,
    next_seq INTEGER NOT NULL,
    turn INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_cwd ON sessions(cwd);
CREATE INDEX IF NOT EXISTS sessions_parent ON sessions(parent);
CREATE VIRTUAL TABLE IF NOT EXISTS events USING fts5(
    text, scope, type UNINDEXED, turn UNINDEXED, time UNINDEXED, surface UNINDEXED,
    tokenize = 'unicode61 remove_diacritics 2'
);
";

impl MemoryIndex {
    /// Opens (creating) the index at `path`. A file that cannot be read as an index of this
    /// version is moved aside and replaced by an empty one; the notice says so, and the next
    /// [`sync`](Self::sync) rebuilds it from the logs.
    pub fn open(path: &Path) -> Result<(Self, Option<String>), MemoryError> {
        let window = search::SharedWindow::default();
        let (conn, notice) = connect(path, &window)?;
        Ok((
            Self {
                path: path.to_path_buf(),
                conn: OnceLock::from(Mutex::new(conn)),
                opening: Mutex::new(()),
                window,
            },
            notice,
        ))
    }

    /// The index at `path`, opened (created, or replaced if unreadable: the notice is logged
    /// as a warning) by its first use; see the type's docs.
    pub fn lazy(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            conn: OnceLock::new(),
            opening: Mutex::new(()),
            window: search::SharedWindow::default(),
        }
    }

    /// Whether the file has been opened (a lazy index before its first use has not).
    pub fn is_open(&self) -> bool {
        self.conn.get().is_some()
    }

    /// The connection, opening the file on the first call.
    fn conn(&self) -> Result<MutexGuard<'_, Connection>, MemoryError> {
        if let Some(conn) = self.conn.get() {
            return Ok(lock(conn));
        }
        let _opening = self.opening.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(conn) = self.conn.get() {
            return Ok(lock(conn));
        }
        let (conn, notice) = connect(&self.path, &self.window)?;
        if let Some(notice) = notice {
            tracing::warn!("{notice}");
        }
        Ok(lock(self.conn.get_or_init(|| Mutex::new(conn))))
    }

    /// Where the index lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self) -> impl FnOnce(rusqlite::Error) -> MemoryError + '_ {
        MemoryError::index(&self.path)
    }

    /// Indexes `events` of one session, skipping those already indexed. Events must follow
    /// on from what is indexed: a batch that starts past the next expected seq (a gap) is
    /// left for [`sync`](Self::sync), which reads the log. Returns the events indexed.
    pub fn index_events(
        &self,
        meta: &SessionMeta,
        events: &[Arc<SessionEvent>],
    ) -> Result<u64, MemoryError> {
        let mut conn = self.conn()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(self.err())?;
        let count = write_events(&tx, meta, events).map_err(self.err())?;
        tx.commit().map_err(self.err())?;
        Ok(count)
    }

    /// Brings the index up to the store: indexes what each log has past its indexed seq,
    /// re-indexes a log that shrank, drops sessions no longer stored.
    pub fn sync(&self, persistence: &dyn SessionPersistence) -> Result<SyncReport, MemoryError> {
        let listed = persistence.list().map_err(|e| MemoryError::Session {
            id: "(listing)".into(),
            message: e.to_string(),
        })?;
        self.sync_listed(persistence, &listed, &HashSet::new())
    }

    /// [`sync`](Self::sync) against a listing already read; the `live` sessions (this
    /// process is writing them, their logs may not exist yet) are never dropped.
    pub fn sync_listed(
        &self,
        persistence: &dyn SessionPersistence,
        listed: &[SessionSummary],
        live: &HashSet<String>,
    ) -> Result<SyncReport, MemoryError> {
        let indexed = self.indexed_seqs()?;
        let mut report = SyncReport {
            sessions: listed.len(),
            ..SyncReport::default()
        };
        let stored: HashSet<&str> = listed.iter().map(|s| s.id.as_str()).collect();
        let gone: Vec<&String> = indexed
            .keys()
            .filter(|id| !stored.contains(id.as_str()) && !live.contains(id.as_str()))
            .collect();
        for id in gone {
            self.drop_session(id)?;
            report.sessions_dropped += 1;
        }
        // Sessions met for the first time get their keys oldest first, so a rebuilt index
        // orders its rows as the live one does (a search looks at the newest matches first).
        let mut in_order: Vec<&SessionSummary> = listed.iter().collect();
        in_order.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        for summary in in_order {
            let next = indexed.get(&summary.id).copied();
            let from = match next {
                // Up to date: nothing to read, nothing to write. A live session ahead of
                // its log is the live indexer being ahead of the write-behind.
                Some(next) if next == summary.events => continue,
                Some(next) if next > summary.events && live.contains(&summary.id) => continue,
                Some(next) if next < summary.events => next,
                // Shrunk (or replaced): start again.
                Some(_) => {
                    self.drop_session(&summary.id)?;
                    0
                }
                None => 0,
            };
            match persistence.read_from(&dsh_protocol::SessionId::new(summary.id.clone()), from) {
                Ok(events) => {
                    let meta = SessionMeta::of_summary(summary);
                    report.events_indexed += self.index_events(&meta, &events)?;
                    self.refresh_meta(summary)?;
                }
                Err(err) => report.unreadable.push(format!("{}: {err}", summary.id)),
            }
        }
        Ok(report)
    }

    /// Empties the index; the next [`sync`](Self::sync) rebuilds it from the logs.
    pub fn clear(&self) -> Result<(), MemoryError> {
        self.conn()?
            .execute_batch("DELETE FROM events; DELETE FROM sessions;")
            .map_err(self.err())
    }

    fn drop_session(&self, id: &str) -> Result<(), MemoryError> {
        let mut conn = self.conn()?;
        let tx = conn.transaction().map_err(self.err())?;
        let key: Option<i64> = tx
            .query_row("SELECT key FROM sessions WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(self.err())?;
        if let Some(key) = key {
            let (first, last) = rowid_range(key);
            tx.execute(
                "DELETE FROM events WHERE rowid BETWEEN ?1 AND ?2",
                [first, last],
            )
            .map_err(self.err())?;
            tx.execute("DELETE FROM sessions WHERE key = ?1", [key])
                .map_err(self.err())?;
        }
        tx.commit().map_err(self.err())
    }

    fn refresh_meta(&self, summary: &SessionSummary) -> Result<(), MemoryError> {
        self.conn()?
            .execute(
                "UPDATE sessions SET title = coalesce(title, ?2), updated_at = max(updated_at, ?3),
                 cwd = ?4, parent = ?5 WHERE id = ?1",
                params![
                    summary.id,
                    summary
                        .title
                        .as_deref()
                        .map(|t| clip(&one_line(t), TITLE_CHARS)),
                    to_sql(summary.updated_at),
                    summary.cwd,
                    summary.parent_session,
                ],
            )
            .map(drop)
            .map_err(self.err())
    }

    fn indexed_seqs(&self) -> Result<HashMap<String, u64>, MemoryError> {
        let conn = self.conn()?;
        let mut stmt = conn
            .prepare_cached("SELECT id, next_seq FROM sessions")
            .map_err(self.err())?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .map_err(self.err())?;
        rows.map(|row| row.map(|(id, seq)| (id, from_sql(seq))))
            .collect::<Result<_, _>>()
            .map_err(self.err())
    }

    /// One indexed session.
    pub fn session(&self, id: &str) -> Result<Option<SessionRow>, MemoryError> {
        let conn = self.conn()?;
        conn.query_row(
            &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1"),
            [id],
            session_row,
        )
        .optional()
        .map_err(self.err())
    }

    /// Sessions whose recorded parent is `id`, oldest first.
    pub fn children(&self, id: &str) -> Result<Vec<SessionRow>, MemoryError> {
        let conn = self.conn()?;
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {SESSION_COLUMNS} FROM sessions WHERE parent = ?1 ORDER BY created_at, id"
            ))
            .map_err(self.err())?;
        let rows = stmt.query_map([id], session_row).map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }

    /// Sessions of `cwd` (every workspace for `None`), most recently updated first.
    pub fn sessions(
        &self,
        cwd: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SessionRow>, MemoryError> {
        let conn = self.conn()?;
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {SESSION_COLUMNS} FROM sessions WHERE (?1 IS NULL OR cwd = ?1)
                 ORDER BY updated_at DESC LIMIT ?2"
            ))
            .map_err(self.err())?;
        let rows = stmt
            .query_map(params![cwd, to_sql(limit as u64)], session_row)
            .map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }

    /// Sessions and rows indexed, and the file's size (with its WAL).
    pub fn stats(&self) -> Result<IndexStats, MemoryError> {
        let conn = self.conn()?;
        let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0));
        let sessions = count("SELECT count(*) FROM sessions").map_err(self.err())?;
        let rows = count("SELECT count(*) FROM events").map_err(self.err())?;
        let size = |suffix: &str| {
            std::fs::metadata(format!("{}{suffix}", self.path.display())).map_or(0, |m| m.len())
        };
        Ok(IndexStats {
            sessions: from_sql(sessions),
            rows: from_sql(rows),
            bytes: size("") + size("-wal"),
        })
    }

    /// Writes the WAL back into the main file (a size measurement, or before a copy).
    pub fn checkpoint(&self) -> Result<(), MemoryError> {
        self.conn()?
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .map_err(self.err())
    }
}

/// Opens (creating) the index file; see [`MemoryIndex::open`].
fn connect(
    path: &Path,
    window: &search::SharedWindow,
) -> Result<(Connection, Option<String>), MemoryError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| MemoryError::Note(format!("cannot create {}: {e}", dir.display())))?;
    }
    let registered = |conn: Connection| {
        search::register_window(&conn, window.clone())
            .map(|()| conn)
            .map_err(MemoryError::index(path))
    };
    match open_checked(path) {
        Ok(conn) => Ok((registered(conn)?, None)),
        Err(problem) => {
            for suffix in ["", "-wal", "-shm"] {
                let file = PathBuf::from(format!("{}{suffix}", path.display()));
                let _ = std::fs::remove_file(file);
            }
            let index = open_checked(path).map_err(|e| match e {
                OpenProblem::Sqlite(source) => MemoryError::Index {
                    path: path.display().to_string(),
                    source,
                },
                OpenProblem::Version(v) => MemoryError::InvalidInput(v),
            })?;
            let notice = format!(
                "the memory index {} was unreadable ({problem}); it is rebuilt from the \
                 session logs",
                path.display()
            );
            Ok((registered(index)?, Some(notice)))
        }
    }
}

fn open_checked(path: &Path) -> Result<Connection, OpenProblem> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.execute_batch(SCHEMA)?;
    let version: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'version'", [], |r| {
            r.get(0)
        })
        .optional()?;
    match version.as_deref() {
        None => {
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('version', ?1)",
                [SCHEMA_VERSION],
            )?;
        }
        Some(SCHEMA_VERSION) => {}
        Some(other) => {
            return Err(OpenProblem::Version(format!(
                "schema version {other}, this build writes {SCHEMA_VERSION}"
            )))
        }
    }
    // A damaged FTS table shows up here rather than in the middle of a search.
    conn.query_row("SELECT count(*) FROM events WHERE rowid = 1", [], |r| {
        r.get::<_, i64>(0)
    })?;
    Ok(conn)
}

#[derive(Debug)]
enum OpenProblem {
    Sqlite(rusqlite::Error),
    Version(String),
}

impl From<rusqlite::Error> for OpenProblem {
    fn from(e: rusqlite::Error) -> Self {
        Self::Sqlite(e)
    }
}

impl std::fmt::Display for OpenProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sqlite(e) => write!(f, "{e}"),
            Self::Version(v) => f.write_str(v),
        }
    }
}

const SESSION_COLUMNS: &str = "id, cwd, title, created_at, updated_at, parent, next_seq";

fn session_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        id: r.get(0)?,
        cwd: r.get(1)?,
        title: r.get(2)?,
        created_at: from_sql(r.get(3)?),
        updated_at: from_sql(r.get(4)?),
        parent_session: r.get(5)?,
        indexed_events: from_sql(r.get(6)?),
    })
}

/// Writes the events past the session's indexed seq, inside the caller's transaction.
fn write_events(
    tx: &rusqlite::Transaction<'_>,
    meta: &SessionMeta,
    events: &[Arc<SessionEvent>],
) -> rusqlite::Result<u64> {
    type Known = (i64, i64, i64, Option<String>, Option<String>);
    let known: Option<Known> = tx
        .query_row(
            "SELECT key, next_seq, turn, title, cwd FROM sessions WHERE id = ?1",
            [&meta.id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .optional()?;
    let (key, mut next, mut turn, mut title, cwd) = match known {
        Some((key, next, turn, title, cwd)) => (key, from_sql(next), from_sql(turn), title, cwd),
        None => {
            tx.execute(
                "INSERT INTO sessions (id, cwd, title, created_at, updated_at, parent, next_seq, turn)
                 VALUES (?1, ?2, NULL, ?3, ?3, ?4, 0, 0)",
                params![
                    meta.id,
                    meta.cwd,
                    to_sql(meta.created_at),
                    meta.parent_session
                ],
            )?;
            (tx.last_insert_rowid(), 0, 0, None, meta.cwd.clone())
        }
    };
    let scope = cwd.as_deref().map(scope_token).unwrap_or_default();
    let mut insert = tx.prepare_cached(
        "INSERT INTO events (rowid, text, scope, type, turn, time, surface)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    let mut shadow =
        tx.prepare_cached("UPDATE events SET surface = 'shadowed' WHERE rowid = ?1")?;
    let mut count = 0;
    let mut updated = 0;
    for event in events {
        if event.seq < next {
            continue;
        }
        if event.seq > next {
            // A gap: what is missing is in the log, and sync reads it from there.
            break;
        }
        if let EventData::TurnStart(start) = &event.data {
            turn = start.turn;
        }
        for seq in shadowed_seqs(event) {
            if let Some(rowid) = rowid_of(key, seq) {
                shadow.execute([rowid])?;
            }
        }
        if let Some(named) = title_event(event) {
            title = Some(clip(&one_line(named), TITLE_CHARS));
        }
        // A seq past 2^32 has no rowid (no log gets there); the event is left out.
        if let (Some(text), Some(rowid)) = (event_text(event), rowid_of(key, event.seq)) {
            if title.is_none() {
                if let EventData::UserMessage(_) = &event.data {
                    title = Some(clip(&one_line(&text), TITLE_CHARS));
                }
            }
            insert.execute(params![
                rowid,
                text,
                scope,
                event.type_name(),
                to_sql(turn),
                to_sql(event.time),
                if event.data.is_surface() {
                    "current"
                } else {
                    "log-only"
                },
            ])?;
            count += 1;
        }
        updated = updated.max(event.time);
        next = event.seq + 1;
    }
    tx.execute(
        "UPDATE sessions SET next_seq = ?2, turn = ?3, title = coalesce(?4, title),
         updated_at = max(updated_at, ?5) WHERE id = ?1",
        params![meta.id, to_sql(next), to_sql(turn), title, to_sql(updated)],
    )?;
    Ok(count)
}

/// The title a `session/title` event (the original's, or a plugin's) names.
fn title_event(event: &SessionEvent) -> Option<&str> {
    match &event.data {
        EventData::Other { type_name, data } if type_name.ends_with("/title") => {
            data.get("title").and_then(serde_json::Value::as_str)
        }
        _ => None,
    }
}

/// The message events a compaction summary takes off the surface.
fn shadowed_seqs(event: &SessionEvent) -> Vec<u64> {
    match &event.data {
        EventData::Other { type_name, data } if type_name == "compaction/summary" => data
            .get("shadowedSeqs")
            .and_then(serde_json::Value::as_array)
            .map(|seqs| seqs.iter().filter_map(serde_json::Value::as_u64).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Bits of a rowid that hold the event's seq; the session's key is above them.
const SEQ_BITS: u32 = 32;
const SEQ_MASK: i64 = (1 << SEQ_BITS) - 1;

/// The rowid of event `seq` of the session with `key`.
fn rowid_of(key: i64, seq: u64) -> Option<i64> {
    let seq = i64::try_from(seq).ok().filter(|s| *s <= SEQ_MASK)?;
    Some(key.checked_mul(1 << SEQ_BITS)? | seq)
}

/// The first and last rowid a session's events can have.
fn rowid_range(key: i64) -> (i64, i64) {
    let first = key.saturating_mul(1 << SEQ_BITS);
    (first, first | SEQ_MASK)
}

/// The token a workspace's rows carry in the `scope` column: a 64-bit FNV-1a hash of its
/// recorded path, so any path (spaces, punctuation, non-ASCII) is one plain token. A search
/// limited to a workspace still compares the recorded path, so a collision costs only time.
fn scope_token(cwd: &str) -> String {
    let hash = cwd.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("ws{hash:016x}")
}

fn to_sql(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn from_sql(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fts5_is_compiled_in() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE VIRTUAL TABLE t USING fts5(x);")
            .unwrap();
    }

    #[test]
    fn a_file_that_is_not_an_index_is_replaced_with_a_notice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(INDEX_FILE);
        std::fs::write(&path, b"this is not a database, just bytes ............").unwrap();
        let (index, notice) = MemoryIndex::open(&path).unwrap();
        assert!(notice.unwrap().contains("rebuilt from the session logs"));
        assert_eq!(index.stats().unwrap().sessions, 0);
        drop(index);
        let (_, notice) = MemoryIndex::open(&path).unwrap();
        assert_eq!(notice, None);
    }
}
