//! Finding every log under a store root, with the stamp the listing index compares.
//!
//! A listing of a store with thousands of sessions is mostly `stat` calls, and most of a
//! `stat` is the kernel walking the path. On Unix each log is therefore looked up relative
//! to its already open project directory (two path components instead of the whole path
//! from `/`), and one lookup tells both that it is a file and its size and mtime.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::StoreError;
use crate::index::LogStamp;
use crate::paths::{Compression, StoreLayout};

/// One log found under a store root.
pub(crate) struct FoundLog {
    /// `<project>/<session>/<file>`, `/`-separated: the listing index's key.
    pub rel: String,
    pub stamp: LogStamp,
    pub compression: Compression,
    /// The path, kept only when the names are not UTF-8 (and `rel` is lossy); otherwise
    /// it is the root joined with `rel`, built only for the few logs that are read.
    exact: Option<PathBuf>,
}

impl FoundLog {
    pub(crate) fn path(&self, root: &Path) -> PathBuf {
        self.exact.clone().unwrap_or_else(|| root.join(&self.rel))
    }
}

/// Every log file under the root, in either encoding. Unreadable directories and entries
/// are skipped: a listing shows what it can.
///
/// The configured encoding is looked up first, so a store written in it pays one lookup per
/// session; a directory holding both files is listed by that one (opening the session then
/// reports the duplicate).
pub(crate) fn discover_logs(layout: &StoreLayout) -> Result<Vec<FoundLog>, StoreError> {
    let root = layout.root();
    let preferred = layout.compression();
    let projects = match fs::read_dir(root) {
        Ok(dir) => dir,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(StoreError::io("list", root, err)),
    };
    let mut logs = Vec::new();
    for project in projects.flatten() {
        if !project.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let project_path = project.path();
        let project_name = project.file_name().to_string_lossy().into_owned();
        let Ok(sessions) = fs::read_dir(&project_path) else {
            continue;
        };
        let lookup = ProjectDir::open(&project_path);
        for session in sessions.flatten() {
            let session_name = session.file_name();
            let found = [preferred, preferred.other()]
                .into_iter()
                .find_map(|c| Some((c, lookup.log_stamp(&session_name, c.file_name())?)));
            let Some((compression, stamp)) = found else {
                continue;
            };
            let file_name = compression.file_name();
            let exact = match (project.file_name().to_str(), session_name.to_str()) {
                (Some(_), Some(_)) => None,
                _ => Some(project_path.join(&session_name).join(file_name)),
            };
            let session_name = session_name.to_string_lossy();
            logs.push(FoundLog {
                rel: format!("{project_name}/{session_name}/{file_name}"),
                stamp,
                compression,
                exact,
            });
        }
    }
    Ok(logs)
}

/// A project directory, open for lookups relative to it where the platform allows.
struct ProjectDir {
    path: PathBuf,
    #[cfg(unix)]
    handle: Option<fs::File>,
}

impl ProjectDir {
    fn open(path: &std::path::Path) -> Self {
        ProjectDir {
            path: path.to_owned(),
            #[cfg(unix)]
            handle: fs::File::open(path).ok(),
        }
    }

    /// The stamp of `<session>/<file_name>` if it is a regular file (symlinks followed).
    fn log_stamp(&self, session: &std::ffi::OsStr, file_name: &str) -> Option<LogStamp> {
        #[cfg(unix)]
        if let Some(dir) = &self.handle {
            return unix::stamp_at(dir, session, file_name);
        }
        let meta = fs::metadata(self.path.join(session).join(file_name)).ok()?;
        meta.is_file().then(|| LogStamp::from_metadata(&meta))
    }
}

#[cfg(unix)]
mod unix {
    use std::ffi::{CString, OsStr};
    use std::fs::File;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::AsRawFd;

    use crate::index::LogStamp;

    /// `fstatat(dir, "<session>/<file_name>")`, following symlinks like `fs::metadata`.
    pub(super) fn stamp_at(dir: &File, session: &OsStr, file_name: &str) -> Option<LogStamp> {
        let mut rel = Vec::with_capacity(session.len() + file_name.len() + 1);
        rel.extend_from_slice(session.as_bytes());
        rel.push(b'/');
        rel.extend_from_slice(file_name.as_bytes());
        let rel = CString::new(rel).ok()?;
        let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: `dir` keeps its descriptor open for the call, `rel` is a NUL-terminated
        // string that outlives it, and `stat` points to writable memory of the right type.
        let rc = unsafe { libc::fstatat(dir.as_raw_fd(), rel.as_ptr(), stat.as_mut_ptr(), 0) };
        if rc != 0 {
            return None;
        }
        // SAFETY: fstatat returned 0, so it filled the whole struct.
        let stat = unsafe { stat.assume_init() };
        if stat.st_mode & libc::S_IFMT != libc::S_IFREG {
            return None;
        }
        // The same value `LogStamp::from_metadata` computes from `modified()`: nanoseconds
        // since the epoch, 0 before it.
        let mtime_ns = u64::try_from(stat.st_mtime)
            .ok()
            .and_then(|secs| u64::try_from(stat.st_mtime_nsec).ok().map(|ns| (secs, ns)))
            .map_or(0, |(secs, ns)| {
                secs.saturating_mul(1_000_000_000).saturating_add(ns)
            });
        Some(LogStamp {
            size: u64::try_from(stat.st_size).unwrap_or(0),
            mtime_ns,
        })
    }
}
