//! Reading a small file whole, safely: only a regular file, only up to a limit.
//!
//! Configuration, instructions and the listing index are read whole into memory. A path that
//! names `/dev/zero` would fill memory, and a FIFO would block the read (and `open` itself)
//! forever; a huge file is a mistake, not something to parse. So the file is opened without
//! blocking and *then* checked with `fstat` on the open descriptor, which leaves no window
//! between the check and the read in which the path could be swapped.

use std::fs::{File, FileType, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Why a small file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadFileError {
    /// Nothing exists at the path (a dangling symlink included).
    #[error("{path} does not exist")]
    NotFound { path: PathBuf },
    /// The path names a directory, a FIFO, a device or a socket.
    #[error("{path} is a {kind}, not a regular file")]
    NotRegular { path: PathBuf, kind: &'static str },
    /// The file is larger than the limit for its kind.
    #[error("{path} is larger than the limit of {limit} bytes for this file")]
    TooLarge { path: PathBuf, limit: u64 },
    /// The operating system refused to open or read it.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl ReadFileError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            ReadFileError::NotFound { .. } => "FILE_NOT_FOUND",
            ReadFileError::NotRegular { .. } => "FILE_NOT_REGULAR",
            ReadFileError::TooLarge { .. } => "FILE_TOO_LARGE",
            ReadFileError::Io { .. } => "FILE_UNREADABLE",
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadFileError::NotFound { .. })
    }

    /// Whether the path names a directory.
    pub fn is_directory(&self) -> bool {
        matches!(self, ReadFileError::NotRegular { kind, .. } if *kind == DIRECTORY)
    }

    /// What is wrong, without the path (for messages that name the file already).
    pub fn reason(&self) -> String {
        match self {
            ReadFileError::NotFound { .. } => "it does not exist".to_owned(),
            ReadFileError::NotRegular { kind, .. } => format!("it is a {kind}, not a regular file"),
            ReadFileError::TooLarge { limit, .. } => {
                format!("it is larger than the limit of {limit} bytes for this file")
            }
            ReadFileError::Io { source, .. } => source.to_string(),
        }
    }
}

/// The whole content of the regular file at `path` (symlinks followed), at most `limit`
/// bytes; anything else is an error that names the path.
pub fn read_regular_file(path: &Path, limit: u64) -> Result<Vec<u8>, ReadFileError> {
    let io_error = |source: io::Error| match source.kind() {
        io::ErrorKind::NotFound => ReadFileError::NotFound {
            path: path.to_owned(),
        },
        _ => ReadFileError::Io {
            path: path.to_owned(),
            source,
        },
    };
    let file = open_nonblocking(path).map_err(io_error)?;
    let meta = file.metadata().map_err(io_error)?;
    if !meta.is_file() {
        return Err(ReadFileError::NotRegular {
            path: path.to_owned(),
            kind: kind_of(meta.file_type()),
        });
    }
    let too_large = || ReadFileError::TooLarge {
        path: path.to_owned(),
        limit,
    };
    if meta.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // The file may grow after the fstat; reading one byte past the limit tells.
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// [`read_regular_file`] as UTF-8 text.
pub fn read_regular_text(path: &Path, limit: u64) -> Result<String, ReadFileError> {
    String::from_utf8(read_regular_file(path, limit)?).map_err(|e| ReadFileError::Io {
        path: path.to_owned(),
        source: io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()),
    })
}

/// Opens for reading without waiting: a FIFO without a writer opens at once instead of
/// blocking, and a terminal device does not become the controlling terminal. Neither flag
/// changes how a regular file reads.
fn open_nonblocking(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NONBLOCK | libc::O_NOCTTY,
    );
    options.open(path)
}

const DIRECTORY: &str = "directory";

fn kind_of(file_type: FileType) -> &'static str {
    if file_type.is_dir() {
        return DIRECTORY;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "FIFO";
        }
        if file_type.is_char_device() {
            return "character device";
        }
        if file_type.is_block_device() {
            return "block device";
        }
        if file_type.is_socket() {
            return "socket";
        }
    }
    "special file"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_whole_up_to_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"12345").unwrap();
        assert_eq!(read_regular_file(&path, 5).unwrap(), b"12345");
        assert_eq!(read_regular_text(&path, 10).unwrap(), "12345");
        let err = read_regular_file(&path, 4).unwrap_err();
        assert_eq!(err.code(), "FILE_TOO_LARGE");
        assert_eq!(
            err.to_string(),
            format!(
                "{} is larger than the limit of 4 bytes for this file",
                path.display()
            )
        );
        let missing = read_regular_file(&dir.path().join("nope"), 4).unwrap_err();
        assert!(missing.is_not_found());
    }

    #[test]
    fn directories_devices_and_fifos_are_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_regular_file(dir.path(), 1 << 20).unwrap_err();
        assert_eq!(err.code(), "FILE_NOT_REGULAR");
        assert!(err.is_directory());
        assert!(err
            .to_string()
            .ends_with("is a directory, not a regular file"));

        // /dev/zero would never end, and a symlink to it is followed to the device.
        let link = dir.path().join("settings.toml");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let err = read_regular_file(&link, 1 << 20).unwrap_err();
        assert!(err
            .to_string()
            .ends_with("is a character device, not a regular file"));

        // A FIFO without a writer would block the open itself.
        let fifo = dir.path().join("fifo");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `name` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let err = read_regular_file(&fifo, 1 << 20).unwrap_err();
        assert!(err.to_string().ends_with("is a FIFO, not a regular file"));
    }
}
