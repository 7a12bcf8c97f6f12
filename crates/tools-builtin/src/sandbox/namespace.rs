//! The host's file system read-only, the writable roots on top: a private mount view built
//! the way bubblewrap builds one, for the command alone.
//!
//! Landlock confines opening, creating, removing and renaming files, but not metadata:
//! `chmod`, `chown`, `utimes` (`touch -d`), extended attributes and ACLs, and inode flags
//! change files anywhere Landlock lets a command merely look. A read-only mount stops all of
//! them, so the child enters a private user + mount namespace and, before exec:
//!
//! 1. clones each writable root's mount subtree (`open_tree`), while everything is still
//!    writable;
//! 2. marks every mount it can see read-only in one recursive `mount_setattr` (this covers
//!    `/proc`, `/sys` and `/dev` too, and needs no list of mount points; device nodes such as
//!    `/dev/null` stay writable, since a read-only mount does not stop writes to a device);
//! 3. attaches the writable clones over their own paths (`move_mount`);
//! 4. binds each protected path (the workspace's `.git`) onto itself and marks that read-only;
//! 5. drops `CAP_SYS_ADMIN` from the bounding set, so a command running as root in the
//!    namespace cannot clear the read-only flags with `mount_setattr` (Landlock, applied
//!    afterwards, stops `mount`, `umount` and `move_mount`, but has no hook for
//!    `mount_setattr`).
//!
//! Setting a flag is always allowed, even on mounts the kernel locks in a user namespace (it
//! locks them against *clearing* flags and against unmounting), so no mount is left writable
//! for want of privilege. `mount_setattr` exists since Linux 5.12, older than Landlock (5.13).
//! Everything lives in the child's namespace; the host never sees these mounts.
//!
//! Everything that allocates (paths, map contents, the slots for the clones) is prepared in
//! the parent by [`NamespacePlan::new`]; [`NamespacePlan::enter`] runs between fork and exec
//! and makes only raw system calls.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Not in the libc crate (capability numbers live in `linux/capability.h`).
const CAP_SYS_ADMIN: libc::c_ulong = 21;

/// Everything the child needs to enter its namespace, computed before fork.
#[derive(Debug)]
pub(crate) struct NamespacePlan {
    /// Tried first: the identity map of every id (possible when the parent is root).
    full_uid_map: CString,
    full_gid_map: CString,
    /// The fallback: map only our own ids (always allowed after `setgroups` is denied).
    own_uid_map: CString,
    own_gid_map: CString,
    /// Mounted read-write over the read-only host, outermost first.
    writable: Vec<CString>,
    /// One slot per writable root for its cloned mount tree, filled in the child.
    clones: Vec<libc::c_int>,
    /// Made read-only again inside the writable roots.
    read_only: Vec<CString>,
}

impl NamespacePlan {
    /// Plans a read-only host with `writable` on top and `read_only` carved out of those;
    /// paths that do not exist are left out (there is nothing to bind).
    pub(crate) fn new(writable: &[PathBuf], read_only: &[PathBuf]) -> io::Result<Self> {
        // SAFETY: these getters cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let mut roots: Vec<&PathBuf> = writable.iter().filter(|p| p.exists()).collect();
        // A root inside another must be attached after it, or the outer one would hide it;
        // paths order component by component, so an ancestor sorts before what it contains.
        roots.sort();
        roots.dedup();
        let writable = roots
            .into_iter()
            .map(|p| c_path(p))
            .collect::<io::Result<Vec<_>>>()?;
        let read_only = read_only
            .iter()
            .filter(|p| p.exists())
            .map(|p| c_path(p))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Self {
            full_uid_map: c_string("0 0 4294967295\n")?,
            full_gid_map: c_string("0 0 4294967295\n")?,
            own_uid_map: c_string(&format!("{uid} {uid} 1\n"))?,
            own_gid_map: c_string(&format!("{gid} {gid} 1\n"))?,
            clones: vec![-1; writable.len()],
            writable,
            read_only,
        })
    }

    /// Enters a private user + mount namespace and builds the read-only view.
    ///
    /// # Safety
    /// Call only in a freshly forked, single-threaded child (a `pre_exec` hook): it changes the
    /// calling process's namespaces and mounts. It performs only async-signal-safe system calls
    /// and writes only into memory `self` already owns.
    pub(crate) unsafe fn enter(&mut self) -> io::Result<()> {
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
            // Keep our mounts from propagating back to the host (this also makes unbindable
            // mounts cloneable).
            check(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            for (root, slot) in self.writable.iter().zip(self.clones.iter_mut()) {
                *slot = open_tree_clone(root)?;
            }
            set_read_only(c"/")?;
            for (root, fd) in self.writable.iter().zip(self.clones.iter()) {
                let attached = check_long(libc::syscall(
                    libc::SYS_move_mount,
                    *fd,
                    c"".as_ptr(),
                    libc::AT_FDCWD,
                    root.as_ptr(),
                    libc::MOVE_MOUNT_F_EMPTY_PATH,
                ));
                libc::close(*fd);
                attached?;
            }
            for path in &self.read_only {
                check(libc::mount(
                    path.as_ptr(),
                    path.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ))?;
                set_read_only(path)?;
            }
            check(libc::prctl(libc::PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0))?;
        }
        Ok(())
    }
}

/// A detached copy of the mount tree at `path` (with everything mounted below it).
unsafe fn open_tree_clone(path: &CString) -> io::Result<libc::c_int> {
    // SAFETY: `path` is NUL-terminated; the flags ask for a new, close-on-exec descriptor.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC | libc::AT_RECURSIVE as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    libc::c_int::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))
}

/// Marks the mount at `path` and every mount below it read-only, leaving their other flags
/// (locked or not) as they are.
unsafe fn set_read_only(path: &std::ffi::CStr) -> io::Result<()> {
    let attr = libc::mount_attr {
        attr_set: libc::MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `path` is NUL-terminated; `attr` lives across the call and its size is passed.
    check_long(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::AT_RECURSIVE,
            &attr as *const libc::mount_attr,
            std::mem::size_of::<libc::mount_attr>(),
        )
    })
}

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn check_long(ret: libc::c_long) -> io::Result<()> {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn plan_skips_missing_paths_and_attaches_outer_roots_first() {
        let dir = tempfile::tempdir().unwrap();
        let outer = dir.path().to_path_buf();
        let inner = outer.join("inner");
        std::fs::create_dir(&inner).unwrap();
        let plan = NamespacePlan::new(
            &[
                inner.clone(),
                outer.clone(),
                outer.join("missing"),
                outer.clone(),
            ],
            &[inner.join(".git"), outer.clone()],
        )
        .unwrap();
        assert_eq!(
            plan.writable,
            vec![c_path(&outer).unwrap(), c_path(&inner).unwrap()]
        );
        assert_eq!(plan.clones, vec![-1, -1]);
        assert_eq!(plan.read_only, vec![c_path(&outer).unwrap()]);
        assert!(plan.own_uid_map.to_str().unwrap().ends_with(" 1\n"));
    }
}
