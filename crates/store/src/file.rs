//! Writing a log: lazy, atomic creation and durable appends.
//!
//! A session that never receives an event leaves nothing on disk. The first append writes
//! the header and the first batch to a private temp file, syncs it, and publishes it with a
//! hard link, which fails rather than overwrite a log that appeared meanwhile; the directory
//! is synced so the new name survives a crash. Every later append is one write (lines, or
//! one zstd frame) followed by a sync; if either fails the file is cut back to its previous
//! length, so a failed append leaves the log exactly as it was.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use std::sync::Arc;

use dsh_session::SessionEvent;
use serde_json::Value;

use crate::chunk_rows;
use crate::error::StoreError;
use crate::frames;
use crate::header::LogHeader;
use crate::paths::Compression;
use crate::reader::StoredLog;
use crate::typed_log::TypedLog;
use crate::typed_rows;

/// How the logs of one root are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogFormat {
    pub compression: Compression,
    /// Store runs of deltas as packed rows (the original's default).
    pub pack_chunks: bool,
}

impl Default for LogFormat {
    fn default() -> Self {
        LogFormat {
            compression: Compression::Zstd,
            pack_chunks: true,
        }
    }
}

fn push_line(out: &mut Vec<u8>, record: &Value) -> Result<(), StoreError> {
    serde_json::to_writer(&mut *out, record).map_err(|e| StoreError::InvalidEvent {
        position: 0,
        reason: e.to_string(),
    })?;
    out.push(b'\n');
    Ok(())
}

fn frame_or_text(
    compression: Compression,
    text: Vec<u8>,
    path: &Path,
) -> Result<Vec<u8>, StoreError> {
    match compression {
        Compression::None => Ok(text),
        Compression::Zstd => {
            frames::encode_frame(&text).map_err(|e| StoreError::io("compress a batch for", path, e))
        }
    }
}

/// The bytes one append batch adds to a log.
pub(crate) fn encode_batch(
    format: LogFormat,
    events: &[Value],
    path: &Path,
) -> Result<Vec<u8>, StoreError> {
    let mut text = Vec::new();
    let packed;
    let records = if format.pack_chunks {
        packed = chunk_rows::pack(events);
        &packed[..]
    } else {
        events
    };
    for record in records {
        push_line(&mut text, record)?;
    }
    frame_or_text(format.compression, text, path)
}

/// The bytes one append batch of typed events adds to a log (the same bytes
/// [`encode_batch`] makes of their `Value`s).
pub(crate) fn encode_events(
    format: LogFormat,
    events: &[Arc<SessionEvent>],
    path: &Path,
) -> Result<Vec<u8>, StoreError> {
    let mut text = Vec::with_capacity(events.len() * 96);
    typed_rows::write_lines(events, format.pack_chunks, &mut text).map_err(|e| {
        StoreError::InvalidEvent {
            position: 0,
            reason: e.to_string(),
        }
    })?;
    frame_or_text(format.compression, text, path)
}

fn encode_header(
    compression: Compression,
    header: &LogHeader,
    path: &Path,
) -> Result<Vec<u8>, StoreError> {
    let mut text = Vec::new();
    push_line(&mut text, &header.to_value())?;
    frame_or_text(compression, text, path)
}

/// Checks that `events` continue a log whose next seq is `next_seq`.
fn check_continuation(events: &[Value], next_seq: u64, path: &Path) -> Result<(), StoreError> {
    for (position, event) in events.iter().enumerate() {
        if !event.get("type").is_some_and(Value::is_string) {
            return Err(StoreError::InvalidEvent {
                position,
                reason: "an event needs a string type".into(),
            });
        }
        let Some(seq) = event.get("seq").and_then(Value::as_u64) else {
            return Err(StoreError::InvalidEvent {
                position,
                reason: "an event needs a non-negative integer seq".into(),
            });
        };
        let expected = next_seq + position as u64;
        if seq != expected {
            return Err(StoreError::SeqMismatch {
                path: path.to_owned(),
                expected,
                found: seq,
            });
        }
    }
    Ok(())
}

/// [`check_continuation`] for typed events.
fn check_event_continuation(
    events: &[Arc<SessionEvent>],
    next_seq: u64,
    path: &Path,
) -> Result<(), StoreError> {
    for (position, event) in events.iter().enumerate() {
        let expected = next_seq + position as u64;
        if event.seq != expected {
            return Err(StoreError::SeqMismatch {
                path: path.to_owned(),
                expected,
                found: event.seq,
            });
        }
    }
    Ok(())
}

/// The file operations an append needs; a seam so tests can make them fail.
pub(crate) trait Sink: Send {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()>;
    fn sync(&mut self) -> io::Result<()>;
    fn truncate(&mut self, len: u64) -> io::Result<()>;
}

impl Sink for File {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        self.seek(SeekFrom::Start(offset))?;
        self.write_all(bytes)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.sync_data()
    }

    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.set_len(len)
    }
}

/// Writes `bytes` at `len` and syncs; on failure cuts the file back to `len`.
///
/// The error says whether the cut (and its sync) succeeded: if not, the file's state is
/// unknown and the caller must stop writing to it.
pub(crate) fn durable_append(
    sink: &mut dyn Sink,
    len: u64,
    bytes: &[u8],
) -> Result<u64, (io::Error, bool)> {
    match sink.write_at(len, bytes).and_then(|()| sink.sync()) {
        Ok(()) => Ok(len + bytes.len() as u64),
        Err(err) => {
            let restored = sink.truncate(len).and_then(|()| sink.sync()).is_ok();
            Err((err, restored))
        }
    }
}

enum State {
    /// Not on disk yet; the header waits for the first append.
    Pending {
        header: Box<LogHeader>,
    },
    Open {
        sink: Box<dyn Sink>,
        len: u64,
    },
    /// A failed write could not be undone.
    Poisoned,
}

/// The single writer of one session log.
pub struct LogWriter {
    path: PathBuf,
    format: LogFormat,
    state: State,
    next_seq: u64,
}

impl std::fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWriter")
            .field("path", &self.path)
            .field("format", &self.format)
            .field("next_seq", &self.next_seq)
            .field("materialized", &self.is_materialized())
            .finish()
    }
}

impl LogWriter {
    /// A writer for a new log at `path`; nothing is written until the first append.
    pub fn create_lazy(path: impl Into<PathBuf>, format: LogFormat, header: LogHeader) -> Self {
        LogWriter {
            path: path.into(),
            format,
            state: State::Pending {
                header: Box::new(header),
            },
            next_seq: 0,
        }
    }

    /// Opens a log that was just read, taking the writer lock.
    ///
    /// A torn tail is cut off here and the records of a cut zstd frame are written again,
    /// so that appends continue right after the durable prefix.
    pub fn open(log: &StoredLog, pack_chunks: bool) -> Result<Self, StoreError> {
        let file = open_locked(&log.path)?;
        let mut writer =
            Self::open_at(file, &log.path, log.compression, log.file_len, pack_chunks)?;
        writer.next_seq = log.next_seq();
        if let Some(tail) = &log.torn_tail {
            writer.cut_to(tail.truncate_to)?;
            let start = usize::try_from(tail.rewrite_from).unwrap_or(usize::MAX);
            if let Some(rewrite) = log.events.get(start..).filter(|r| !r.is_empty()) {
                writer.next_seq = tail.rewrite_from;
                writer.append(rewrite)?;
            }
        }
        Ok(writer)
    }

    /// [`open`](Self::open) for a log read with [`read_typed_log`](crate::read_typed_log).
    pub fn open_typed(log: &TypedLog, pack_chunks: bool) -> Result<Self, StoreError> {
        Self::open_typed_with(log, pack_chunks, None)
    }

    /// [`open_typed`](Self::open_typed), under `lock` when given (the caller took the writer
    /// lock before it read the log) instead of taking the lock anew.
    pub(crate) fn open_typed_with(
        log: &TypedLog,
        pack_chunks: bool,
        lock: Option<&LogLock>,
    ) -> Result<Self, StoreError> {
        let file = match lock {
            Some(lock) => lock.shared_file()?,
            None => open_locked(&log.path)?,
        };
        let mut writer =
            Self::open_at(file, &log.path, log.compression, log.file_len, pack_chunks)?;
        writer.next_seq = log.next_seq();
        if let Some(tail) = &log.torn_tail {
            writer.cut_to(tail.truncate_to)?;
            let start = usize::try_from(tail.rewrite_from).unwrap_or(usize::MAX);
            if let Some(rewrite) = log.events.get(start..).filter(|r| !r.is_empty()) {
                writer.next_seq = tail.rewrite_from;
                writer.append_events(rewrite)?;
            }
        }
        Ok(writer)
    }

    /// A writer on the locked `file`, which must still be `file_len` bytes long.
    fn open_at(
        file: File,
        path: &Path,
        compression: Compression,
        file_len: u64,
        pack_chunks: bool,
    ) -> Result<Self, StoreError> {
        let path = path.to_owned();
        let current = file
            .metadata()
            .map_err(|e| StoreError::io("stat", &path, e))?
            .len();
        if current != file_len {
            // Someone wrote after we read; what we parsed is stale.
            return Err(StoreError::Locked { path });
        }
        Ok(LogWriter {
            path,
            format: LogFormat {
                compression,
                pack_chunks,
            },
            state: State::Open {
                sink: Box::new(file),
                len: file_len,
            },
            next_seq: 0,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn format(&self) -> LogFormat {
        self.format
    }

    /// The seq the next appended event must carry.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Whether the log exists on disk.
    pub fn is_materialized(&self) -> bool {
        !matches!(self.state, State::Pending { .. })
    }

    /// The log's durable length in bytes, once it exists.
    pub fn durable_len(&self) -> Option<u64> {
        match self.state {
            State::Open { len, .. } => Some(len),
            _ => None,
        }
    }

    /// Appends one batch durably: when this returns `Ok`, the events survive a crash.
    ///
    /// The first event's seq must equal [`next_seq`](Self::next_seq) and the batch must be
    /// contiguous. An empty batch writes nothing (and does not materialize the log).
    pub fn append(&mut self, events: &[Value]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        check_continuation(events, self.next_seq, &self.path)?;
        let batch = encode_batch(self.format, events, &self.path)?;
        self.append_encoded(&batch, events.len())
    }

    /// [`append`](Self::append) for typed events, without converting them to `Value`s.
    pub fn append_events(&mut self, events: &[Arc<SessionEvent>]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        check_event_continuation(events, self.next_seq, &self.path)?;
        let batch = encode_events(self.format, events, &self.path)?;
        self.append_encoded(&batch, events.len())
    }

    /// Writes one encoded batch of `count` checked events durably.
    fn append_encoded(&mut self, batch: &[u8], count: usize) -> Result<(), StoreError> {
        match &mut self.state {
            State::Poisoned => {
                return Err(StoreError::Poisoned {
                    path: self.path.clone(),
                })
            }
            State::Pending { header } => {
                let mut bytes = encode_header(self.format.compression, header, &self.path)?;
                bytes.extend_from_slice(batch);
                let file = publish(&self.path, &bytes)?;
                self.state = State::Open {
                    sink: Box::new(file),
                    len: bytes.len() as u64,
                };
            }
            State::Open { sink, len } => match durable_append(sink.as_mut(), *len, batch) {
                Ok(new_len) => *len = new_len,
                Err((err, restored)) => {
                    if !restored {
                        self.state = State::Poisoned;
                    }
                    return Err(StoreError::io("append to", &self.path, err));
                }
            },
        }
        self.next_seq += count as u64;
        Ok(())
    }

    fn cut_to(&mut self, new_len: u64) -> Result<(), StoreError> {
        let State::Open { sink, len } = &mut self.state else {
            return Ok(());
        };
        match sink.truncate(new_len).and_then(|()| sink.sync()) {
            Ok(()) => {
                *len = new_len;
                Ok(())
            }
            Err(err) => {
                self.state = State::Poisoned;
                Err(StoreError::io("truncate the torn tail of", &self.path, err))
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn with_sink(
        path: &Path,
        format: LogFormat,
        sink: Box<dyn Sink>,
        len: u64,
        next_seq: u64,
    ) -> Self {
        LogWriter {
            path: path.to_owned(),
            format,
            state: State::Open { sink, len },
            next_seq,
        }
    }
}

/// Opens a log for appending and takes its writer lock.
fn open_locked(path: &Path) -> Result<File, StoreError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| StoreError::io("open for append", path, e))?;
    lock_exclusive(&file, path)?;
    Ok(file)
}

/// The writer lock of one stored log, held without writing.
///
/// An explicit repair holds it from before its first look at the log to after its last
/// change, so a running writer (which holds the lock for as long as its session is open) is
/// refused up front, and no writer can start between a backup and a restore. The lock is
/// the advisory `flock` every [`LogWriter`] takes; it is released when the last handle of
/// this open file is dropped (a writer opened under it shares the handle).
#[derive(Debug)]
pub struct LogLock {
    file: File,
    path: PathBuf,
}

impl LogLock {
    /// Takes the writer lock of the log at `path`; [`StoreError::Locked`] when another
    /// writer (in any process) holds it.
    pub fn acquire(path: &Path) -> Result<Self, StoreError> {
        Ok(LogLock {
            file: open_locked(path)?,
            path: path.to_owned(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Cuts the log to `len` bytes, durably.
    pub fn truncate(&self, len: u64) -> Result<(), StoreError> {
        self.file
            .set_len(len)
            .and_then(|()| self.file.sync_all())
            .map_err(|e| StoreError::io("truncate", &self.path, e))
    }

    /// Replaces the log's content with `bytes` in place (same file, so the lock stays),
    /// durably.
    pub fn rewrite(&self, bytes: &[u8]) -> Result<(), StoreError> {
        let mut file = &self.file;
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)).map(drop))
            .and_then(|()| file.write_all(bytes))
            .and_then(|()| file.sync_all())
            .map_err(|e| StoreError::io("rewrite", &self.path, e))
    }

    /// Another handle of the locked file, for a writer that works under this lock.
    fn shared_file(&self) -> Result<File, StoreError> {
        self.file
            .try_clone()
            .map_err(|e| StoreError::io("open for append", &self.path, e))
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Creates `dir` and its missing ancestors, private to the user.
pub(crate) fn create_private_dir(dir: &Path) -> Result<(), StoreError> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|e| StoreError::io("create directory", dir, e))
}

/// Writes a complete new log next to `path` and links it into place.
fn publish(path: &Path, bytes: &[u8]) -> Result<File, StoreError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(
        ".{file_name}.{}.{}.tmp",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = write_and_link(&temp, path, bytes);
    // The temp name is only a staging handle; the linked name (if any) keeps the inode.
    let _ = fs::remove_file(&temp);
    let file = result?;
    sync_dir(dir)?;
    Ok(file)
}

fn write_and_link(temp: &Path, path: &Path, bytes: &[u8]) -> Result<File, StoreError> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(temp)
        .map_err(|e| StoreError::io("create", temp, e))?;
    lock_exclusive(&file, path)?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| StoreError::io("write", temp, e))?;
    fs::hard_link(temp, path).map_err(|e| {
        if e.kind() == io::ErrorKind::AlreadyExists {
            StoreError::AlreadyExists {
                path: path.to_owned(),
            }
        } else {
            StoreError::io("publish", path, e)
        }
    })?;
    Ok(file)
}

fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    #[cfg(unix)]
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io("sync directory", dir, e))?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Takes the advisory writer lock of a log; a second writer (in any process) is refused.
fn lock_exclusive(file: &File, path: &Path) -> Result<(), StoreError> {
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: flock only reads the descriptor number, which `file` keeps open for the
        // whole call; the lock is released when the last descriptor of the file closes.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = io::Error::last_os_error();
            return Err(if err.kind() == io::ErrorKind::WouldBlock {
                StoreError::Locked {
                    path: path.to_owned(),
                }
            } else {
                StoreError::io("lock", path, err)
            });
        }
    }
    #[cfg(not(unix))]
    let _ = (file, path);
    Ok(())
}

#[cfg(test)]
mod tests;
