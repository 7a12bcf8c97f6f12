//! The JSONL/zstd backend: [`SessionPersistence`] over the original's on-disk format.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dsh_protocol::SessionId;
use dsh_session::{
    interrupted_turn_closers, SeedLog, SeedSource, Session, SessionBuilder, SessionEvent,
    SessionHeader,
};

use crate::error::StoreError;
use crate::file::{LogFormat, LogLock, LogWriter};
use crate::header::LogHeader;
use crate::index::{LogStamp, SessionIndex, SessionSummary};
use crate::paths::{existing_log, session_dir_name, Compression, StoreLayout};
use crate::persistence::{Inspection, SessionPersistence, SessionPreparation, StoredSession};
use crate::reader::{read_log, StoredLog};
use crate::typed_log::{read_typed, read_typed_into, TypedLog};

/// Where and how the backend stores logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonlConfig {
    /// The sessions root (`$DSH_HOME/sessions`).
    pub root: PathBuf,
    /// The encoding of new logs.
    pub compression: Compression,
    /// Store runs of deltas as packed rows.
    pub pack_chunks: bool,
}

impl JsonlConfig {
    /// The original's defaults: zstd frames with packed rows.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        JsonlConfig {
            root: root.into(),
            compression: Compression::Zstd,
            pack_chunks: true,
        }
    }
}

/// One session's writer; its mutex serializes every operation on that session.
#[derive(Debug, Default)]
struct Slot {
    writer: Option<LogWriter>,
    /// The stored header, for index updates.
    header: Option<LogHeader>,
}

/// Session logs under one root. New logs are written in the configured encoding; existing
/// logs are read, resumed and appended to in the one they were written in.
#[derive(Debug)]
pub struct JsonlBackend {
    layout: StoreLayout,
    pack_chunks: bool,
    slots: Mutex<HashMap<SessionId, Arc<Mutex<Slot>>>>,
    index: SessionIndex,
}

use dsh_kernel::sync::lock;

/// The encoding of a log [`JsonlBackend::locate`] found (its name is one of the two).
fn encoding_of(path: &Path) -> Compression {
    Compression::of_path(path).unwrap_or_default()
}

fn typed_events(log: &StoredLog) -> Result<Vec<Arc<SessionEvent>>, StoreError> {
    log.events
        .iter()
        .map(|value| {
            SessionEvent::from_value(value)
                .map(Arc::new)
                .map_err(|source| StoreError::Rejected {
                    path: log.path.clone(),
                    source,
                })
        })
        .collect()
}

fn session_header(path: &Path, stored: &LogHeader) -> Result<SessionHeader, StoreError> {
    let rejected = |source| StoreError::Rejected {
        path: path.to_owned(),
        source,
    };
    let header: SessionHeader = serde_json::from_value(stored.to_value()).map_err(|e| {
        rejected(dsh_session::SessionError::InvalidHeader {
            reason: e.to_string(),
        })
    })?;
    header.validate().map_err(rejected)?;
    Ok(header)
}

/// Builds a session from a stored log's seed plus its crash-repair closers: the one
/// validation both resume and inspection run, so a clean inspection means the log will
/// load. The closers are returned too.
fn seed_with_closers(
    header: SessionHeader,
    mut seed: SeedLog,
    path: &Path,
) -> Result<(Session, Vec<SessionEvent>), StoreError> {
    let closers = interrupted_turn_closers(seed.events());
    seed.extend(closers.iter().cloned().map(Arc::new));
    let session = SessionBuilder::new(header)
        .seed_log(seed)
        .build()
        .map_err(|source| StoreError::Rejected {
            path: path.to_path_buf(),
            source,
        })?;
    Ok((session, closers))
}

fn log_header(header: &SessionHeader) -> Result<LogHeader, StoreError> {
    header
        .validate()
        .map_err(|source| StoreError::InvalidSession { source })?;
    let invalid = |reason: String| StoreError::InvalidSession {
        source: dsh_session::SessionError::InvalidHeader { reason },
    };
    let value = serde_json::to_value(header).map_err(|e| invalid(e.to_string()))?;
    crate::header::LogHeader::from_value(value).map_err(|e| invalid(format!("{e:?}")))
}

impl JsonlBackend {
    pub fn new(config: JsonlConfig) -> Self {
        let layout = StoreLayout::new(config.root, config.compression);
        JsonlBackend {
            index: SessionIndex::new(layout.clone()),
            layout,
            pack_chunks: config.pack_chunks,
            slots: Mutex::new(HashMap::new()),
        }
    }

    pub fn layout(&self) -> &StoreLayout {
        &self.layout
    }

    /// Why the listing index is unusable, if it is ([`SessionIndex::problem`]).
    pub fn index_problem(&self) -> Option<String> {
        self.index.problem()
    }

    fn format(&self) -> LogFormat {
        LogFormat {
            compression: self.layout.compression(),
            pack_chunks: self.pack_chunks,
        }
    }

    fn slot(&self, id: &SessionId) -> Arc<Mutex<Slot>> {
        Arc::clone(lock(&self.slots).entry(id.clone()).or_default())
    }

    /// Finds the stored log of `id`, in whichever encoding it was written: from the
    /// index's workspace if known, else by looking for the session directory in every
    /// project directory. [`Compression::of_path`] tells the encoding of the result.
    pub fn locate(&self, id: &SessionId) -> Result<PathBuf, StoreError> {
        let dir_name = session_dir_name(id.as_str())?;
        let mut candidates = Vec::new();
        if let Some(cwd) = self.index.cwd_of(id.as_str()) {
            candidates.push(self.layout.project_dir(cwd.as_deref()).join(&dir_name));
        }
        if let Ok(projects) = std::fs::read_dir(self.layout.root()) {
            candidates.extend(projects.flatten().map(|p| p.path().join(&dir_name)));
        }
        for dir in candidates {
            if let Some(log) = existing_log(&dir)? {
                return Ok(log);
            }
        }
        Err(StoreError::NotFound {
            id: id.as_str().to_owned(),
        })
    }

    /// Reads a log, checking both identities: the header names this session, and the
    /// header's workspace leads to the directory the log was found in.
    fn read(&self, id: &SessionId) -> Result<StoredLog, StoreError> {
        let path = self.locate(id)?;
        let log = read_log(&path, encoding_of(&path), Some(id.as_str()))?;
        self.check_placement(id, path, &log.header)?;
        Ok(log)
    }

    /// [`read`](Self::read) into typed events, with the session's header. The first event
    /// the session model refuses is reported after the format and header checks, as typing
    /// a general read would report it.
    fn read_typed(&self, id: &SessionId) -> Result<(TypedLog, SessionHeader), StoreError> {
        let path = self.locate(id)?;
        let read = read_typed(&path, encoding_of(&path), Some(id.as_str()))?;
        self.checked(id, path, read)
    }

    /// [`read_typed`](Self::read_typed) with every event handed to a [`SeedLog`] as it is
    /// typed, so the session model checks the log while the file is still being decoded
    /// rather than in a pass after it (the decoding thread takes up more of the typing
    /// meanwhile). The log comes back without its events: the seed holds them. Errors come
    /// in the same order: the format's and the header's, then an event the model refuses
    /// to type, and the seed's own refusal only when the session is built.
    fn read_seeded(
        &self,
        id: &SessionId,
    ) -> Result<(TypedLog, SessionHeader, SeedLog), StoreError> {
        let path = self.locate(id)?;
        let mut seed = SeedLog::new(SeedSource::Persistence);
        let read = read_typed_into(&path, encoding_of(&path), Some(id.as_str()), &mut seed)?;
        let (log, header) = self.checked(id, path, read)?;
        Ok((log, header, seed))
    }

    /// The placement and header checks after a typed read, then its refused event.
    fn checked(
        &self,
        id: &SessionId,
        path: PathBuf,
        (log, refused): (TypedLog, Option<dsh_session::SessionError>),
    ) -> Result<(TypedLog, SessionHeader), StoreError> {
        self.check_placement(id, path, &log.header)?;
        let header = session_header(&log.path, &log.header)?;
        if let Some(source) = refused {
            return Err(StoreError::Rejected {
                path: log.path,
                source,
            });
        }
        Ok((log, header))
    }

    /// Checks that the header's workspace leads to the directory the log was found in.
    fn check_placement(
        &self,
        id: &SessionId,
        path: PathBuf,
        header: &LogHeader,
    ) -> Result<(), StoreError> {
        let expected = self
            .layout
            .session_dir(header.cwd.as_deref(), id.as_str())?;
        if path.parent() != Some(expected.as_path()) {
            return Err(StoreError::Corruption {
                path,
                at: crate::error::RecordLocation {
                    line: 1,
                    frame: None,
                },
                reason: format!(
                    "the header's workspace {:?} belongs under {}",
                    header.cwd,
                    expected.display()
                ),
            });
        }
        Ok(())
    }

    /// [`SessionPersistence::prepare`] under the writer lock `held`, which the caller took
    /// before it looked at the log (`dsh sessions repair` does, so that nothing can write
    /// between its backup and its repair). The lock must be the located log's.
    pub fn prepare_locked(
        &self,
        id: &SessionId,
        held: &LogLock,
    ) -> Result<SessionPreparation, StoreError> {
        self.prepare_with(id, Some(held))
    }

    /// [`SessionPersistence::inspect`], handing the session the log seeded to `keep`
    /// instead of dropping it. Freeing a long session's events costs about as much as a
    /// quarter of reading them; a one-shot command that exits right after (`dsh sessions
    /// verify`) can pass [`std::mem::forget`] and let the process exit return the memory.
    pub fn inspect_into(
        &self,
        id: &SessionId,
        keep: impl FnOnce(Session),
    ) -> Result<Inspection, StoreError> {
        let (log, header, seed) = self.read_seeded(id)?;
        let event_count = seed.events().len() as u64;
        // The same validation a resume runs, so a clean inspection means it will load.
        let (session, pending_closers) = seed_with_closers(header, seed, &log.path)?;
        keep(session);
        Ok(Inspection {
            pending_closers,
            events: event_count,
            size: log.file_len,
            torn_tail: log.torn_tail,
            header: log.header,
            path: log.path,
        })
    }

    fn prepare_with(
        &self,
        id: &SessionId,
        held: Option<&LogLock>,
    ) -> Result<SessionPreparation, StoreError> {
        let slot = self.slot(id);
        let mut slot = lock(&slot);
        // Our own open writer holds the log's lock; the log is re-read from disk anyway.
        slot.writer = None;
        let (mut log, header, seed) = self.read_seeded(id)?;
        if held.is_some_and(|held| held.path() != log.path) {
            let err = std::io::Error::other("the writer lock held is another log's");
            return Err(StoreError::io("prepare", log.path, err));
        }
        let stored = seed.events().len();
        // Build first: a log the session model refuses is reported, never modified.
        let (session, closers) = seed_with_closers(header, seed, &log.path)?;
        // The writer may have to rewrite the stored tail of a cut frame: give the events back.
        let session_events = session.events();
        log.events = session_events[..stored].to_vec();
        let writer = LogWriter::open_typed_with(&log, self.pack_chunks, held)?;
        if log.torn_tail.is_some() {
            self.index.invalidate(&log.path);
        }
        slot.header = Some(log.header.clone());
        slot.writer = Some(writer);
        self.append_events(
            &mut slot,
            id,
            &session_events[stored..stored + closers.len()],
        )?;
        Ok(SessionPreparation {
            session,
            torn_tail: log.torn_tail,
            closers,
        })
    }

    /// Opens the stored log for appending (cutting a torn tail) if the slot has no writer.
    fn ensure_writer<'a>(
        &self,
        id: &SessionId,
        slot: &'a mut Slot,
    ) -> Result<&'a mut LogWriter, StoreError> {
        if slot.writer.is_none() {
            let log = self.read(id)?;
            let writer = LogWriter::open(&log, self.pack_chunks)?;
            if log.torn_tail.is_some() {
                self.index.invalidate(&log.path);
            }
            slot.header = Some(log.header);
            slot.writer = Some(writer);
        }
        slot.writer.as_mut().ok_or(StoreError::NotFound {
            id: id.as_str().to_owned(),
        })
    }

    fn append_events(
        &self,
        slot: &mut Slot,
        id: &SessionId,
        events: &[Arc<SessionEvent>],
    ) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        self.ensure_writer(id, slot)?;
        let Slot { writer, header } = slot;
        let Some(writer) = writer.as_mut() else {
            return Err(StoreError::NotFound {
                id: id.as_str().to_owned(),
            });
        };
        let size_before = writer.durable_len();
        writer.append_events(events)?;
        if let (Some(header), Ok(stamp)) = (header.as_ref(), LogStamp::of(writer.path())) {
            self.index
                .record_append_events(writer.path(), header, size_before, events, stamp);
        }
        Ok(())
    }
}

impl SessionPersistence for JsonlBackend {
    fn create(&self, header: &SessionHeader) -> Result<(), StoreError> {
        let stored = log_header(header)?;
        let path = self
            .layout
            .session_file(stored.cwd.as_deref(), header.id.as_str())?;
        let slot = self.slot(&header.id);
        let mut slot = lock(&slot);
        if slot.writer.is_some() || path.exists() {
            return Err(StoreError::AlreadyExists { path });
        }
        // A log of this id in the other encoding is this session too.
        let other = path.with_file_name(self.layout.compression().other().file_name());
        if other.exists() {
            return Err(StoreError::AlreadyExists { path: other });
        }
        slot.writer = Some(LogWriter::create_lazy(path, self.format(), stored.clone()));
        slot.header = Some(stored);
        Ok(())
    }

    fn next_seq(&self, id: &SessionId) -> Result<u64, StoreError> {
        let slot = self.slot(id);
        let slot = lock(&slot);
        match &slot.writer {
            Some(writer) => Ok(writer.next_seq()),
            None => Ok(self.read(id)?.next_seq()),
        }
    }

    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), StoreError> {
        let slot = self.slot(id);
        let mut slot = lock(&slot);
        self.append_events(&mut slot, id, events)
    }

    fn prepare(&self, id: &SessionId) -> Result<SessionPreparation, StoreError> {
        self.prepare_with(id, None)
    }

    fn load(&self, id: &SessionId) -> Result<StoredSession, StoreError> {
        let (log, header) = self.read_typed(id)?;
        Ok(StoredSession {
            header,
            events: log.events,
            torn_tail: log.torn_tail,
        })
    }

    fn inspect(&self, id: &SessionId) -> Result<Inspection, StoreError> {
        self.inspect_into(id, drop)
    }

    fn read_from(
        &self,
        id: &SessionId,
        from_seq: u64,
    ) -> Result<Vec<Arc<SessionEvent>>, StoreError> {
        let mut log = self.read(id)?;
        let start = usize::try_from(from_seq).unwrap_or(usize::MAX);
        log.events = log.events.split_off(start.min(log.events.len()));
        typed_events(&log)
    }

    fn list(&self) -> Result<Vec<SessionSummary>, StoreError> {
        self.index.list()
    }

    fn release(&self, id: &SessionId) {
        let slot = lock(&self.slots).remove(id);
        // The listing index may hold this log's latest entry back (see `index`).
        if let Some(slot) = slot {
            if let Some(writer) = &lock(&slot).writer {
                self.index.write_behind(writer.path());
            }
        }
    }
}
