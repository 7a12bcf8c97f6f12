//! The process's private temp area, and the sweep of areas that dead runs left behind.
//!
//! Each run works in `$TMPDIR/dsh-<pid>-<8 hex digits>` (tool output spills, each session's
//! `$TMPDIR`) and removes it on the way out. A run killed with SIGKILL cannot, so at start-up
//! a background thread removes the areas whose owner is certainly gone. "Certainly" is the
//! whole difficulty, so an area is removed only when every one of these holds:
//! - its name is exactly the shape this module creates (never `dsh-ns-probe-…` or a person's
//!   `dsh-notes`), and not this process's own;
//! - it is a real directory owned by this user (never a symlink, never another user's);
//! - no process with its pid exists (a live process of another user counts as existing);
//! - no process holds the lock on its `.owner` file. Every run holds that lock for as long
//!   as it lives, which covers what the pid cannot: a run in another pid namespace that
//!   shares `/tmp`. (Areas of older builds have no lock file; the pid decides alone.)
//!
//! A reused pid keeps a dead run's area for another day: the safe way to be wrong. The
//! removal never follows a symlink (`remove_dir_all` removes links, not their targets).

use super::error::AppError;
use std::fs::{self, File};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The name prefix of every area.
const PREFIX: &str = "dsh-";
/// The lock file inside an area; its lock is held by the owning process while it lives.
pub(crate) const OWNER_LOCK: &str = ".owner";
/// How long shutdown waits for a sweep still running (a huge leftover), before leaving it.
const SWEEP_JOIN_LIMIT: Duration = Duration::from_secs(2);

/// This process's temp area, locked for as long as the value lives.
#[derive(Debug)]
pub(crate) struct TempRoot {
    pub path: PathBuf,
    _owner: File,
}

/// Creates `$TMPDIR/dsh-<pid>-<random>`, private to this process, and takes its owner lock.
pub(crate) fn create_temp_root() -> Result<TempRoot, AppError> {
    let name = format!(
        "{PREFIX}{}-{}",
        std::process::id(),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let path = std::env::temp_dir().join(name);
    let failed = |source| AppError::TempDir {
        path: path.clone(),
        source,
    };
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&path)
        .map_err(failed)?;
    let owner = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path.join(OWNER_LOCK))
        .and_then(|file| lock(&file).map(|()| file));
    match owner {
        Ok(owner) => Ok(TempRoot {
            path,
            _owner: owner,
        }),
        Err(error) => {
            let _ = fs::remove_dir_all(&path);
            Err(failed(error))
        }
    }
}

fn lock(file: &File) -> std::io::Result<()> {
    // SAFETY: flock only reads the descriptor number, which `file` keeps open for the call.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Sweeps `dir` (the temp directory) on a background thread, so start-up never waits.
pub(crate) fn spawn_sweep(dir: PathBuf) -> Option<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("dsh-temp-sweep".into())
        .spawn(move || {
            let removed = sweep(&dir);
            if removed > 0 {
                tracing::debug!(removed, dir = %dir.display(), "removed temp areas of dead runs");
            }
        })
        .ok()
}

/// Waits a little for a sweep (or another start-up task behind the boot, such as the
/// anonymous id's write) that is still running; one cut short by the exit is done again by
/// the next run.
pub(crate) fn finish_sweep(sweep: Option<JoinHandle<()>>) {
    let Some(sweep) = sweep else { return };
    let started = Instant::now();
    while !sweep.is_finished() && started.elapsed() < SWEEP_JOIN_LIMIT {
        std::thread::sleep(Duration::from_millis(5));
    }
    if sweep.is_finished() {
        let _ = sweep.join();
    }
}

/// Removes every area under `dir` whose owner is gone; returns how many.
pub(crate) fn sweep(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let own = std::process::id();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(area_pid) else {
            continue;
        };
        if pid == own {
            continue;
        }
        let path = entry.path();
        if is_abandoned(&path, pid) && fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The pid in an area's name, if the name is exactly `dsh-<pid>-<8 lowercase hex>`.
fn area_pid(name: &str) -> Option<u32> {
    let (pid, suffix) = name.strip_prefix(PREFIX)?.split_once('-')?;
    let hex = suffix.len() == 8
        && suffix
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let digits = !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit());
    (hex && digits).then(|| pid.parse().ok()).flatten()
}

fn is_abandoned(path: &Path, pid: u32) -> bool {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return false;
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !meta.file_type().is_dir() || meta.uid() != me {
        return false;
    }
    !process_exists(pid) && !owner_lock_held(path)
}

fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    // EPERM: it exists, under another user. Anything but ESRCH: assume it exists.
    std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Whether a live process holds the area's owner lock. An area without the file (an older
/// build's) is not held; one whose file cannot be checked counts as held.
fn owner_lock_held(area: &Path) -> bool {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(area.join(OWNER_LOCK));
    match file {
        Ok(file) => lock(&file).is_err(),
        Err(error) => error.kind() != std::io::ErrorKind::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_of_the_exact_shape_are_areas() {
        assert_eq!(area_pid("dsh-1234-0123abcd"), Some(1234));
        for name in [
            "dsh-1234-0123ABCD",
            "dsh-1234-0123abc",
            "dsh-1234-0123abcde",
            "dsh--0123abcd",
            "dsh-12a4-0123abcd",
            "dsh-ns-probe-0123abcd",
            "dsh-1234",
            "xdsh-1234-0123abcd",
        ] {
            assert_eq!(area_pid(name), None, "{name}");
        }
    }

    #[test]
    fn an_area_is_locked_by_its_owner_while_it_lives() {
        let tmp = tempfile::tempdir().unwrap();
        let area = tmp.path().join("dsh-1-0123abcd");
        fs::create_dir(&area).unwrap();
        assert!(!owner_lock_held(&area), "no lock file: not held");
        let owner = File::create(area.join(OWNER_LOCK)).unwrap();
        assert!(!owner_lock_held(&area), "an unlocked file: not held");
        lock(&owner).unwrap();
        assert!(owner_lock_held(&area));
        drop(owner);
        assert!(!owner_lock_held(&area));
    }
}
