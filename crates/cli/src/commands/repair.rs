//! `dsh sessions repair ID`: an explicit, backed-up repair of one stored log.
//!
//! The log's writer lock is taken first and held to the end, so a session that a running
//! `dsh` is writing is refused before anything is read, copied or cut (the writer holds the
//! lock for as long as its session is open), and no writer can start in the middle of a
//! repair. Then the original file is copied next to itself (`<file>.bak-<epoch ms>`), and:
//! 1. damage a crash cannot explain (a bad record before a committed `turn/end`, a bad
//!    checksum) is cut off: the log is truncated at the damaged line (plain JSONL) or frame
//!    (zstd), keeping the readable prefix, and the command says exactly what was dropped;
//! 2. the store's own resume repair runs: a torn tail left by a crash is cut and a turn left
//!    open is closed with the deterministic closers, exactly what resuming would do.
//!
//! When nothing needed repair, no backup is made. Resuming never does step 1: it only
//! happens on this explicit request, with the backup kept. A failure part-way puts the
//! original bytes back, still under the lock.

use super::exit;
use super::sessions::Store;
use crate::app::OpenedStore;
use dsh_protocol::SessionId;
use dsh_store::{read_log, Compression, LogLock, SessionPersistence, StoreError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Truncations before giving up (each one cuts strictly earlier, so this is a safety net).
const MAX_CUTS: usize = 64;

/// Copies the log next to itself; returns the copy's path and the original bytes.
fn backup(path: &Path) -> anyhow::Result<(PathBuf, Vec<u8>)> {
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".bak-{stamp}"));
    let backup = PathBuf::from(name);
    let original = std::fs::read(path)
        .map_err(|e| anyhow::anyhow!("cannot back up {} first: {e}", path.display()))?;
    std::fs::write(&backup, &original)
        .map_err(|e| anyhow::anyhow!("cannot back up {} first: {e}", path.display()))?;
    Ok((backup, original))
}

/// The writer lock of `id`'s log, or a refusal that says who holds it.
fn lock(id: &SessionId, path: &Path) -> anyhow::Result<LogLock> {
    LogLock::acquire(path).map_err(|error| match error {
        StoreError::Locked { .. } => anyhow::anyhow!(
            "session {} is open for writing in another process (a running `dsh`); \
             {} was not touched. Let that process finish or stop it, then repair",
            id.as_str(),
            path.display()
        ),
        other => anyhow::Error::new(other).context(format!("cannot repair {}", path.display())),
    })
}

pub(super) fn repair(store: &Store, query: &str, out: &mut dyn Write) -> anyhow::Result<u8> {
    let id = store.resolve(query)?;
    let files = match &store.backend {
        OpenedStore::Files(files) => files,
        OpenedStore::Postgres(_) => return repair_in_database(store, &id, out),
    };
    let path = files.locate(&id)?;
    let held = lock(&id, &path)?;
    let inspection = files.inspect(&id);
    if let Ok(inspection) = &inspection {
        if !inspection.needs_repair() {
            writeln!(out, "{}: nothing to repair", id.as_str())?;
            return Ok(exit::SUCCESS);
        }
    }
    let (backup, original) = backup(&path)?;
    let compression = Compression::of_path(&path).unwrap_or_default();
    match cut_damage(&held, compression, &id) {
        Ok(cuts) => {
            for cut in cuts {
                writeln!(out, "{cut}")?;
            }
        }
        Err(error) => return Err(error.context(restore(&held, &original, &backup))),
    }
    let prepared = files.prepare_locked(&id, &held);
    files.release(&id);
    match prepared {
        Ok(prepared) => {
            if let Some(tail) = &prepared.torn_tail {
                writeln!(out, "cut a torn tail from {} ({})", tail.at, tail.reason)?;
            }
            if !prepared.closers.is_empty() {
                writeln!(
                    out,
                    "closed the open turn with {} events",
                    prepared.closers.len()
                )?;
            }
            writeln!(
                out,
                "{}: repaired {}; the original is at {}",
                id.as_str(),
                path.display(),
                backup.display()
            )?;
            Ok(exit::SUCCESS)
        }
        Err(error) => Err(anyhow::Error::new(error).context(restore(&held, &original, &backup))),
    }
}

/// The repair of a session in a database: transactions leave no torn tail and no damaged
/// record to cut, so it is the resume repair alone (closing a turn a crash left open),
/// taken under the session's writer lock like a resume. It only appends, so no backup.
fn repair_in_database(store: &Store, id: &SessionId, out: &mut dyn Write) -> anyhow::Result<u8> {
    let persistence = store.persistence();
    if !persistence.inspect(id)?.needs_repair() {
        writeln!(out, "{}: nothing to repair", id.as_str())?;
        return Ok(exit::SUCCESS);
    }
    let prepared = persistence.prepare(id);
    persistence.release(id);
    let prepared = prepared.map_err(|error| match error {
        StoreError::Locked { .. } => anyhow::anyhow!(
            "session {} is open for writing in another process (a running `dsh`); it was \
             not touched. Let that process finish or stop it, then repair",
            id.as_str()
        ),
        other => anyhow::Error::new(other).context(format!("cannot repair {}", id.as_str())),
    })?;
    writeln!(
        out,
        "closed the open turn with {} events",
        prepared.closers.len()
    )?;
    writeln!(
        out,
        "{}: repaired in {}",
        id.as_str(),
        store.backend.describe()
    )?;
    Ok(exit::SUCCESS)
}

/// Puts the original bytes back (the repair failed part-way) and drops the copy; the copy
/// stays when the original could not be put back. Returns what to tell the person.
fn restore(held: &LogLock, original: &[u8], backup: &Path) -> String {
    let path = held.path().display();
    match held.rewrite(original) {
        Ok(()) => {
            let _ = std::fs::remove_file(backup);
            format!("cannot repair {path}; it is unchanged")
        }
        Err(error) => format!(
            "cannot repair {path}, nor put it back ({error}); the original is at {}",
            backup.display()
        ),
    }
}

/// Truncates the log at each damaged record the reader reports, until it reads; returns a
/// line per cut saying what was dropped.
fn cut_damage(
    held: &LogLock,
    compression: Compression,
    id: &SessionId,
) -> anyhow::Result<Vec<String>> {
    let path = held.path();
    let mut cuts = Vec::new();
    for _ in 0..MAX_CUTS {
        let (at, reason) = match read_log(path, compression, Some(id.as_str())) {
            Ok(_) => return Ok(cuts),
            Err(StoreError::Corruption { at, reason, .. }) if at.line > 1 => (at, reason),
            Err(other) => return Err(other.into()),
        };
        let offset = match (at.frame, compression) {
            (Some(frame), _) => frame.offset,
            (None, Compression::None) => line_offset(path, at.line)?,
            (None, Compression::Zstd) => {
                anyhow::bail!("damage at {at} has no frame to cut at: {reason}")
            }
        };
        held.truncate(offset)?;
        cuts.push(format!(
            "dropped everything from {at} on (byte {offset}): {reason}"
        ));
    }
    anyhow::bail!("the log is still damaged after {MAX_CUTS} cuts")
}

/// The byte offset where 1-based `line` of a plain log starts.
fn line_offset(path: &Path, line: u64) -> anyhow::Result<u64> {
    let bytes = std::fs::read(path)?;
    let mut seen = 1u64;
    for (i, byte) in bytes.iter().enumerate() {
        if seen == line {
            return Ok(i as u64);
        }
        if *byte == b'\n' {
            seen += 1;
        }
    }
    Ok(bytes.len() as u64)
}
