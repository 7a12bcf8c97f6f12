//! The file tools: `read`, `write` and `edit`, and the observation store behind the
//! read-before-edit guard.
//!
//! All three resolve paths with symlinks followed; `write` and `edit` then check the result
//! against the session's sandbox policy before touching the disk, and replace files atomically
//! (write a sibling temp file, then rename) so a crash never leaves half a file behind.
//! When the session's [`ToolEnv`] carries [`WorkspaceFiles`] (an editor's buffers), the text
//! is read and written through them instead, after the same checks.

mod edit;
mod files;
mod observe;
mod read;
mod similar;
mod write;

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{json, Value};

pub use edit::{Edit, EditArgs};
pub use files::{LocalFiles, WorkspaceFiles};
pub use observe::{content_hash, ContentHasher, Observation, ObservationStore};
pub use read::{Read, ReadArgs};
pub use write::{Write, WriteArgs};

use crate::env::ToolEnv;
use crate::error::ToolError;

/// Diff texts larger than this (old + new) are left out of result metadata to keep the log lean.
const MAX_DIFF_META_BYTES: usize = 256 * 1024;

/// Replaces `path` with `bytes` atomically, keeping the old file's permissions.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ToolError> {
    replace_file(path, bytes).map_err(|e| ToolError::io("writing", path, e))
}

/// [`write_atomic`]'s body: a sibling temp file, synced, then renamed over `path`.
fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let parent = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no parent directory"))?;
    std::fs::create_dir_all(parent)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = parent.join(format!(".{name}.dsh-{}.tmp", uuid::Uuid::new_v4().simple()));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        if let Ok(meta) = std::fs::metadata(path) {
            file.set_permissions(std::fs::Permissions::from_mode(meta.permissions().mode()))?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// Records what the tools themselves just wrote, so a follow-up edit needs no re-read.
fn observe_written(env: &ToolEnv, path: &Path, bytes: &[u8]) {
    env.observations()
        .record(path, Observation::of(path, bytes));
}

/// The UI diff metadata: whole-file texts before and after (without the final newline, as the
/// original writes them), omitted for very large files.
fn diff_meta(display_path: &str, old: &str, new: &str) -> Value {
    if old.len() + new.len() > MAX_DIFF_META_BYTES {
        return json!({"diffs": [], "diffOmitted": true});
    }
    let trim = |s: &str| s.strip_suffix('\n').unwrap_or(s).to_string();
    json!({"diffs": [{"path": display_path, "oldText": trim(old), "newText": trim(new)}]})
}

/// [`read_guarded`] through `files`: the same size cap and observation guard, on the text
/// `files` holds.
async fn read_guarded_via(
    files: &dyn WorkspaceFiles,
    env: &ToolEnv,
    path: &Path,
) -> Result<Vec<u8>, ToolError> {
    if path.is_dir() {
        return Err(ToolError::IsDirectory {
            path: path.to_path_buf(),
        });
    }
    let text = files
        .read_text(path)
        .await
        .map_err(|e| ToolError::io("reading", path, e))?;
    let limit = env.limits().edit_max_file_bytes;
    if text.len() as u64 > limit {
        return Err(ToolError::FileTooLarge {
            path: path.to_path_buf(),
            size: text.len() as u64,
            limit,
        });
    }
    env.observations().check_fresh(path, text.as_bytes())?;
    Ok(text.into_bytes())
}

/// Reads an existing file for modification, enforcing the size cap and the observation guard.
fn read_guarded(env: &ToolEnv, path: &Path) -> Result<Vec<u8>, ToolError> {
    let meta = std::fs::metadata(path).map_err(|e| ToolError::io("reading", path, e))?;
    if meta.is_dir() {
        return Err(ToolError::IsDirectory {
            path: path.to_path_buf(),
        });
    }
    let limit = env.limits().edit_max_file_bytes;
    if meta.len() > limit {
        return Err(ToolError::FileTooLarge {
            path: path.to_path_buf(),
            size: meta.len(),
            limit,
        });
    }
    let current = std::fs::read(path).map_err(|e| ToolError::io("reading", path, e))?;
    env.observations().check_fresh(path, &current)?;
    Ok(current)
}
