//! Read-only carve-outs inside a writable workspace, the way bubblewrap makes them.
//!
//! Landlock can only grant access, so it cannot keep `.git` read-only inside a writable
//! workspace. The child therefore enters a private user + mount namespace, bind-mounts each
//! protected path onto itself and remounts the bind read-only. The mounts live only in the
//! child's namespace; the host never sees them. Landlock, applied afterwards, forbids the child
//! from changing its mounts again, so even a root shell cannot undo the remount.
//!
//! Everything that allocates (paths, map contents, mount flags) is prepared in the parent by
//! [`NamespacePlan::new`]; [`NamespacePlan::enter`] runs between fork and exec and makes only
//! raw system calls.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// One path to protect and the flags its remount must keep.
#[derive(Debug)]
struct ReadOnlyBind {
    path: CString,
    /// Flags of the mount the path lives on that an unprivileged remount may not drop
    /// (nosuid, nodev, noexec, atime flags); the kernel refuses the remount otherwise.
    locked_flags: libc::c_ulong,
}

/// Everything the child needs to enter its namespace, computed before fork.
#[derive(Debug)]
pub(crate) struct NamespacePlan {
    /// Tried first: the identity map of every id (possible when the parent is root).
    full_uid_map: CString,
    full_gid_map: CString,
    /// The fallback: map only our own ids (always allowed after `setgroups` is denied).
    own_uid_map: CString,
    own_gid_map: CString,
    binds: Vec<ReadOnlyBind>,
}

impl NamespacePlan {
    /// Plans read-only binds for those of `read_only` that exist.
    pub(crate) fn new(read_only: &[PathBuf]) -> io::Result<Self> {
        // SAFETY: these getters cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let binds = read_only
            .iter()
            .filter(|path| path.exists())
            .map(|path| {
                Ok(ReadOnlyBind {
                    path: c_path(path)?,
                    locked_flags: locked_mount_flags(path)?,
                })
            })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Self {
            full_uid_map: c_string("0 0 4294967295\n")?,
            full_gid_map: c_string("0 0 4294967295\n")?,
            own_uid_map: c_string(&format!("{uid} {uid} 1\n"))?,
            own_gid_map: c_string(&format!("{gid} {gid} 1\n"))?,
            binds,
        })
    }

    /// Whether there is anything to protect; without binds the namespace is pointless.
    pub(crate) fn has_binds(&self) -> bool {
        !self.binds.is_empty()
    }

    /// Enters a private user + mount namespace and applies the read-only binds.
    ///
    /// # Safety
    /// Call only in a freshly forked, single-threaded child (a `pre_exec` hook): it changes the
    /// calling process's namespaces and mounts. It performs only async-signal-safe system calls.
    pub(crate) unsafe fn enter(&self) -> io::Result<()> {
        // SAFETY (whole block): plain system calls on NUL-terminated buffers owned by `self`.
        unsafe {
            check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS))?;
            // A failed map write leaves the map unset, so the fallback can still be written.
            if write_file(c"/proc/self/uid_map", self.full_uid_map.as_bytes()).is_err() {
                write_file(c"/proc/self/uid_map", self.own_uid_map.as_bytes())?;
            }
            if write_file(c"/proc/self/gid_map", self.full_gid_map.as_bytes()).is_err() {
                // An unprivileged gid map is only accepted once setgroups is disabled.
                write_file(c"/proc/self/setgroups", b"deny")?;
                write_file(c"/proc/self/gid_map", self.own_gid_map.as_bytes())?;
            }
            // Keep our mounts from propagating back to the host.
            check(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            for bind in &self.binds {
                check(libc::mount(
                    bind.path.as_ptr(),
                    bind.path.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ))?;
                check(libc::mount(
                    std::ptr::null(),
                    bind.path.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | bind.locked_flags,
                    std::ptr::null(),
                ))?;
            }
        }
        Ok(())
    }
}

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// open + write + close with raw calls (no allocation, no buffering).
unsafe fn write_file(path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated; `data` is a valid buffer for its length.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let result = if written == data.len() as isize {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        };
        libc::close(fd);
        result
    }
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

fn c_string(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL byte"))
}

/// The mount flags of the file system holding `path` that a remount has to repeat.
fn locked_mount_flags(path: &Path) -> io::Result<libc::c_ulong> {
    let c = c_path(path)?;
    // SAFETY: `stat` is plain old data; statvfs fills it or fails.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid NUL-terminated path and a valid out pointer.
    check(unsafe { libc::statvfs(c.as_ptr(), &mut stat) })?;
    let pairs: [(libc::c_ulong, libc::c_ulong); 6] = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    Ok(pairs
        .iter()
        .filter(|(st, _)| stat.f_flag & st != 0)
        .fold(0, |acc, (_, ms)| acc | ms))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn plan_skips_missing_paths_and_reads_mount_flags() {
        let dir = tempfile::tempdir().unwrap();
        let plan =
            NamespacePlan::new(&[dir.path().to_path_buf(), dir.path().join("missing")]).unwrap();
        assert_eq!(plan.binds.len(), 1);
        assert!(plan.has_binds());
        assert!(plan.own_uid_map.to_str().unwrap().ends_with(" 1\n"));
    }
}
