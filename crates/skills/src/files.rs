//! Bounded reads of skill and command files.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The largest skill or command file read; a bigger one is skipped with a notice.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// The most entries looked at in one root; the rest are skipped with a notice.
pub const MAX_ROOT_ENTRIES: usize = 1024;

/// Reads a small text file: opened without blocking (a FIFO in its place cannot hang us),
/// checked to be a regular file on the open descriptor, and capped at [`MAX_FILE_BYTES`].
pub fn read_text(path: &Path) -> Result<String, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("cannot open: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("cannot stat: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file".to_owned());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{} bytes is over the {MAX_FILE_BYTES}-byte limit",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    Read::take(&file as &File, MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("over the {MAX_FILE_BYTES}-byte limit"));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())
}

/// The entries of a directory sorted by name, at most [`MAX_ROOT_ENTRIES`]; `None` when
/// the directory does not exist or cannot be listed. The flag says whether some were cut.
pub fn sorted_entries(dir: &Path) -> Option<(Vec<std::fs::DirEntry>, bool)> {
    let reader = std::fs::read_dir(dir).ok()?;
    let mut entries: Vec<_> = reader
        .filter_map(Result::ok)
        .take(MAX_ROOT_ENTRIES + 1)
        .collect();
    let cut = entries.len() > MAX_ROOT_ENTRIES;
    entries.truncate(MAX_ROOT_ENTRIES);
    entries.sort_by_key(|e| e.file_name());
    Some((entries, cut))
}
