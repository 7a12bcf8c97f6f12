//! `dsh sessions repair ID`: an explicit, backed-up repair of one stored log.
//!
//! The original file is first copied next to itself (`<file>.bak-<epoch ms>`). Then the
//! store's own resume repair runs: a torn tail left by a crash is cut and a turn left open
//! is closed with the deterministic closers, exactly what resuming would do. When nothing
//! needed repair, the backup is removed again.

use super::exit;
use super::sessions::Store;
use dsh_store::SessionPersistence;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

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
            // Nothing was changed (the store checks before it writes); drop the copy.
            let _ = std::fs::remove_file(&backup);
            Err(anyhow::Error::new(error).context(format!(
                "cannot repair {}: the damage is not crash residue",
                path.display()
            )))
        }
    }
}
