//! [`WorkspaceFiles`]: where `read`, `write` and `edit` get and put a file's text.
//!
//! By default the tools use the disk directly (reads streamed a window at a time, writes
//! replaced atomically). A surface whose client holds the files (an editor over ACP, with
//! unsaved buffers) installs its own implementation on an agent's [`ToolEnv`]
//! ([`ToolEnv::with_files`](crate::ToolEnv::with_files)). Either way every path is first
//! resolved and checked against the session's sandbox policy by the tool; an implementation
//! only sees paths the tool already allowed, so it can never widen the sandbox. Directories
//! are always listed from the disk.

use std::io;
use std::path::Path;

use futures_util::future::BoxFuture;

/// Text access to the files of a workspace.
pub trait WorkspaceFiles: Send + Sync + 'static {
    /// The whole current text of `path` (absolute, resolved, allowed). A missing file is an
    /// error of kind [`io::ErrorKind::NotFound`].
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, io::Result<String>>;

    /// Replaces the text of `path` (absolute, resolved, inside the sandbox's writable roots),
    /// creating it when missing.
    fn write_text<'a>(&'a self, path: &'a Path, text: &'a str) -> BoxFuture<'a, io::Result<()>>;
}

/// The local filesystem as [`WorkspaceFiles`]: whole-file reads, atomic replacement. For an
/// implementation that serves only one direction itself and leaves the other to the disk.
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalFiles;

impl WorkspaceFiles for LocalFiles {
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, io::Result<String>> {
        let path = path.to_path_buf();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || std::fs::read_to_string(path))
                .await
                .map_err(io::Error::other)?
        })
    }

    fn write_text<'a>(&'a self, path: &'a Path, text: &'a str) -> BoxFuture<'a, io::Result<()>> {
        let path = path.to_path_buf();
        let text = text.to_owned();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || super::replace_file(&path, text.as_bytes()))
                .await
                .map_err(io::Error::other)?
        })
    }
}
