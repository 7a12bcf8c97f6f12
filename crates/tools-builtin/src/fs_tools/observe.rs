//! The read-before-edit guard.
//!
//! Every successful `read` (and every write or edit the tools make themselves) records what
//! the file looked like. `write` and `edit` refuse to touch an existing file unless an
//! observation exists and still matches the disk, so the model never overwrites changes it has
//! not seen — its own earlier edits, a formatter's, or the user's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use crate::error::ToolError;

/// What a file looked like when the session last saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation {
    pub modified: Option<SystemTime>,
    pub size: u64,
    /// FNV-1a of the content: catches same-size rewrites within one mtime tick.
    pub hash: u64,
}

impl Observation {
    /// An observation of `content` as it now stands at `path`.
    pub fn of(path: &Path, content: &[u8]) -> Self {
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        Self {
            modified,
            size: content.len() as u64,
            hash: content_hash(content),
        }
    }
}

/// 64-bit FNV-1a; stable across builds, which `DefaultHasher` does not promise.
pub fn content_hash(bytes: &[u8]) -> u64 {
    let mut hasher = ContentHasher::new();
    hasher.update(bytes);
    hasher.finish()
}

/// Incremental form of [`content_hash`], for files read in pieces.
#[derive(Clone, Copy, Debug)]
pub struct ContentHasher(u64);

impl ContentHasher {
    pub fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    pub fn update(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    pub fn finish(self) -> u64 {
        self.0
    }
}

impl Default for ContentHasher {
    fn default() -> Self {
        Self::new()
    }
}

/// Per-session observations, keyed by resolved path.
#[derive(Debug, Default)]
pub struct ObservationStore {
    entries: Mutex<HashMap<PathBuf, Observation>>,
}

impl ObservationStore {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn record(&self, path: &Path, observation: Observation) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(path.to_path_buf(), observation);
        }
    }

    pub fn get(&self, path: &Path) -> Option<Observation> {
        self.entries
            .lock()
            .ok()
            .and_then(|entries| entries.get(path).cloned())
    }

    pub fn forget(&self, path: &Path) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(path);
        }
    }

    /// Checks that an existing file whose current content is `current` may be replaced:
    /// it must have been observed, and must not have changed since.
    pub fn check_fresh(&self, path: &Path, current: &[u8]) -> Result<(), ToolError> {
        let Some(seen) = self.get(path) else {
            return Err(ToolError::NotReadFirst {
                path: path.to_path_buf(),
            });
        };
        if seen.size != current.len() as u64 || seen.hash != content_hash(current) {
            return Err(ToolError::ChangedOnDisk {
                path: path.to_path_buf(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_reference_values() {
        assert_eq!(content_hash(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(content_hash(b"a"), 0xaf63_dc4c_8601_ec8c);
        let mut h = ContentHasher::new();
        h.update(b"hel");
        h.update(b"lo");
        assert_eq!(h.finish(), content_hash(b"hello"));
    }

    #[test]
    fn freshness_requires_an_unchanged_observation() {
        let store = ObservationStore::new();
        let path = Path::new("/w/a.txt");
        assert_eq!(
            store.check_fresh(path, b"x").map_err(|e| e.code()),
            Err("FILE_NOT_READ")
        );
        store.record(
            path,
            Observation {
                modified: None,
                size: 1,
                hash: content_hash(b"x"),
            },
        );
        assert!(store.check_fresh(path, b"x").is_ok());
        assert_eq!(
            store.check_fresh(path, b"y").map_err(|e| e.code()),
            Err("FILE_CHANGED")
        );
    }
}
