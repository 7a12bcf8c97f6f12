//! The anonymous installation id: `$DSH_HOME/.anonymous-user-id`, a random v4 UUID that lets
//! the provider correlate requests (and feedback) from one installation without knowing who
//! it is.
//!
//! The id is a nicety, never a requirement: every failure here ends in `None` (logged at
//! debug) and the run goes on without the header.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use uuid::Uuid;

/// The id file's name inside `$DSH_HOME`.
pub const ANONYMOUS_USER_ID_FILE: &str = ".anonymous-user-id";

/// The installation's anonymous id, creating the file on first use.
///
/// A file that exists but does not hold a UUID is left alone (it is the user's file) and
/// yields `None`.
pub fn anonymous_user_id(home: &Path) -> Option<String> {
    let path = home.join(ANONYMOUS_USER_ID_FILE);
    match read_id_file(&path) {
        Ok(text) => parse(&text, &path),
        Err(error) if error.is_not_found() => match create(home) {
            Ok(id) => Some(id),
            Err(error) => {
                tracing::debug!(path = %path.display(), %error, "could not create the anonymous user id");
                None
            }
        },
        Err(error) => {
            tracing::debug!(path = %path.display(), %error, "could not read the anonymous user id");
            None
        }
    }
}

/// [`anonymous_user_id`] for the boot path, which must not wait on a disk: an existing id
/// is read (one small file), while a first run's id is made here and written to the file by
/// a background thread (its `fsync` cost a first `session/new` milliseconds). Join the
/// returned handle before the process exits, so the write is not cut short.
///
/// Should another first run link its file first, this run's requests carry the id made
/// here and later runs the winner's: the id differs for that one run, nothing worse.
pub fn anonymous_user_id_without_waiting(
    home: &Path,
) -> (Option<String>, Option<std::thread::JoinHandle<()>>) {
    let path = home.join(ANONYMOUS_USER_ID_FILE);
    match read_id_file(&path) {
        Ok(text) => (parse(&text, &path), None),
        Err(error) if error.is_not_found() => {
            let id = Uuid::new_v4().hyphenated().to_string();
            let (dir, made) = (home.to_path_buf(), id.clone());
            let writer = std::thread::Builder::new()
                .name("dsh-anonymous-id".into())
                .spawn(move || {
                    if let Err(error) = create_with(&dir, &made) {
                        tracing::debug!(home = %dir.display(), %error, "could not create the anonymous user id");
                    }
                });
            match writer {
                Ok(writer) => (Some(id), Some(writer)),
                // No thread to be had: write it here, as `anonymous_user_id` does.
                Err(_) => (anonymous_user_id(home), None),
            }
        }
        Err(error) => {
            tracing::debug!(path = %path.display(), %error, "could not read the anonymous user id");
            (None, None)
        }
    }
}

/// An id is 37 bytes; anything much larger (or not a regular file) is not an id file.
const ID_FILE_MAX_BYTES: u64 = 4096;

fn read_id_file(path: &Path) -> Result<String, dsh_store::ReadFileError> {
    dsh_store::read_regular_text(path, ID_FILE_MAX_BYTES)
}

fn parse(text: &str, path: &Path) -> Option<String> {
    match Uuid::parse_str(text.trim()) {
        Ok(id) => Some(id.hyphenated().to_string()),
        Err(_) => {
            tracing::debug!(path = %path.display(), "the anonymous user id file does not hold a UUID");
            None
        }
    }
}

/// Writes a fresh id to a private temp file and links it into place, so no reader ever sees
/// a half-written file and a concurrent first run cannot be overwritten: whoever links first
/// wins, and the loser adopts the winner's id.
fn create(home: &Path) -> io::Result<String> {
    create_with(home, &Uuid::new_v4().hyphenated().to_string())
}

/// [`create`] with the id already made.
fn create_with(home: &Path, id: &str) -> io::Result<String> {
    fs::create_dir_all(home)?;
    let target = home.join(ANONYMOUS_USER_ID_FILE);
    let temp = home.join(format!(
        "{ANONYMOUS_USER_ID_FILE}.{}.tmp",
        Uuid::new_v4().simple()
    ));
    let written = write_private(&temp, id).and_then(|()| fs::hard_link(&temp, &target));
    let _ = fs::remove_file(&temp);
    match written {
        Ok(()) => Ok(id.to_owned()),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
            let text = read_id_file(&target).map_err(io::Error::other)?;
            parse(&text, &target)
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not a UUID"))
        }
        Err(error) => Err(error),
    }
}

fn write_private(path: &Path, id: &str) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(format!("{id}\n").as_bytes())?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn created_once_private_and_reused() {
        let home = tempfile::tempdir().unwrap();
        let first = anonymous_user_id(home.path()).unwrap();
        let parsed = Uuid::parse_str(&first).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
        let path = home.path().join(ANONYMOUS_USER_ID_FILE);
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(fs::read_to_string(&path).unwrap(), format!("{first}\n"));
        assert_eq!(anonymous_user_id(home.path()), Some(first));
        // No temp files are left behind.
        let names: Vec<_> = fs::read_dir(home.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec![ANONYMOUS_USER_ID_FILE.to_owned()]);
    }

    #[test]
    fn the_boot_path_makes_a_first_id_at_once_and_writes_it_behind() {
        let home = tempfile::tempdir().unwrap();
        let (id, writer) = anonymous_user_id_without_waiting(home.path());
        let id = id.unwrap();
        assert_eq!(Uuid::parse_str(&id).unwrap().get_version_num(), 4);
        writer
            .expect("a first run writes in the background")
            .join()
            .unwrap();
        let path = home.path().join(ANONYMOUS_USER_ID_FILE);
        assert_eq!(fs::read_to_string(&path).unwrap(), format!("{id}\n"));
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // The next boot reads it and starts no thread.
        let (again, writer) = anonymous_user_id_without_waiting(home.path());
        assert_eq!(again, Some(id.clone()));
        assert!(writer.is_none());
        assert_eq!(anonymous_user_id(home.path()), Some(id));
        // A garbled file is still left alone, and nothing is written behind.
        fs::write(&path, "not-a-uuid\n").unwrap();
        let (none, writer) = anonymous_user_id_without_waiting(home.path());
        assert_eq!((none, writer.is_none()), (None, true));
        assert_eq!(fs::read_to_string(&path).unwrap(), "not-a-uuid\n");
    }

    #[test]
    fn an_existing_id_is_adopted() {
        let home = tempfile::tempdir().unwrap();
        let id = "0b9a4f4e-6f58-4c2e-9d7e-3f1f2a9c8b7d";
        fs::write(
            home.path().join(ANONYMOUS_USER_ID_FILE),
            format!("  {id}\n"),
        )
        .unwrap();
        assert_eq!(anonymous_user_id(home.path()).as_deref(), Some(id));
    }

    #[test]
    fn unreadable_or_garbled_files_yield_none_and_are_kept() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join(ANONYMOUS_USER_ID_FILE);
        fs::write(&path, "not-a-uuid\n").unwrap();
        assert_eq!(anonymous_user_id(home.path()), None);
        assert_eq!(fs::read_to_string(&path).unwrap(), "not-a-uuid\n");

        // A directory in the file's place cannot be read as text (root ignores mode bits,
        // so this stands in for a permission failure).
        let odd = tempfile::tempdir().unwrap();
        fs::create_dir(odd.path().join(ANONYMOUS_USER_ID_FILE)).unwrap();
        assert_eq!(anonymous_user_id(odd.path()), None);

        // A file without read permission (only observable when not running as root).
        let locked = tempfile::tempdir().unwrap();
        let path = locked.path().join(ANONYMOUS_USER_ID_FILE);
        fs::write(&path, "0b9a4f4e-6f58-4c2e-9d7e-3f1f2a9c8b7d\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
        if fs::read(&path).is_err() {
            assert_eq!(anonymous_user_id(locked.path()), None);
        }
    }

    #[test]
    fn a_fifo_or_a_device_in_the_id_file_s_place_is_never_read() {
        let fifo = tempfile::tempdir().unwrap();
        let path = fifo.path().join(ANONYMOUS_USER_ID_FILE);
        let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `name` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        // Reading a FIFO without a writer used to block here forever.
        assert_eq!(anonymous_user_id(fifo.path()), None);
        let zero = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/dev/zero", zero.path().join(ANONYMOUS_USER_ID_FILE)).unwrap();
        assert_eq!(anonymous_user_id(zero.path()), None);
    }

    #[test]
    fn an_unwritable_home_yields_none() {
        let home = tempfile::tempdir().unwrap();
        // The home path is a regular file: nothing can be created under it.
        let blocked = home.path().join("file");
        fs::write(&blocked, "").unwrap();
        assert_eq!(anonymous_user_id(&blocked), None);
    }
}
