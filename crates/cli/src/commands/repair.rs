//! `dsh sessions repair ID`: an explicit, backed-up repair of one stored log.
//!
//! The original file is first copied next to itself (`<file>.bak-<epoch ms>`). Then:
//! 1. damage a crash cannot explain (a bad record before a committed `turn/end`, a bad
//!    checksum) is cut off: the log is truncated at the damaged line (plain JSONL) or frame
//!    (zstd), keeping the readable prefix, and the command says exactly what was dropped;
//! 2. the store's own resume repair runs: a torn tail left by a crash is cut and a turn left
//!    open is closed with the deterministic closers, exactly what resuming would do.
//!
//! When nothing needed repair, the backup is removed again. Resuming never does step 1: it
//! only happens on this explicit request, with the backup kept.

use super::exit;
use super::sessions::Store;
use dsh_protocol::SessionId;
use dsh_store::{read_log, Compression, SessionPersistence, StoreError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Truncations before giving up (each one cuts strictly earlier, so this is a safety net).
const MAX_CUTS: usize = 64;

fn backup(path: &Path) -> anyhow::Result<PathBuf> {
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".bak-{stamp}"));
    let backup = PathBuf::from(name);
    std::fs::copy(path, &backup)
        .map_err(|e| anyhow::anyhow!("cannot back up {} first: {e}", path.display()))?;
    Ok(backup)
}

pub(super) fn repair(store: &Store, query: &str, out: &mut dyn Write) -> anyhow::Result<u8> {
    let id = store.resolve(query)?;
    let path = store.backend.locate(&id)?;
    let inspection = store.backend.inspect(&id);
    if let Ok(inspection) = &inspection {
        if !inspection.needs_repair() {
            writeln!(out, "{}: nothing to repair", id.as_str())?;
            return Ok(exit::SUCCESS);
        }
    }
    let backup = backup(&path)?;
    let compression = store.backend.layout().compression();
    match cut_damage(&path, compression, &id) {
        Ok(cuts) => {
            for cut in cuts {
                writeln!(out, "{cut}")?;
            }
        }
        Err(error) => {
            restore(&backup, &path);
            return Err(error.context(format!("cannot repair {}", path.display())));
        }
    }
    let prepared = store.backend.prepare(&id);
    store.backend.release(&id);
    match prepared {
        Ok(prepared) => {
            if let Some(tail) = &prepared.torn_tail {
                writeln!(out, "cut a torn tail from {} ({:?})", tail.at, tail.reason)?;
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
        Err(error) => {
            restore(&backup, &path);
            Err(anyhow::Error::new(error)
                .context(format!("cannot repair {}; it is unchanged", path.display())))
        }
    }
}

/// Puts the original back (the repair failed part-way) and drops the copy.
fn restore(backup: &Path, path: &Path) {
    if std::fs::copy(backup, path).is_ok() {
        let _ = std::fs::remove_file(backup);
    }
}

/// Truncates the log at each damaged record the reader reports, until it reads; returns a
/// line per cut saying what was dropped.
fn cut_damage(
    path: &Path,
    compression: Compression,
    id: &SessionId,
) -> anyhow::Result<Vec<String>> {
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
        let file = std::fs::OpenOptions::new().write(true).open(path)?;
        file.set_len(offset)?;
        file.sync_all()?;
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
