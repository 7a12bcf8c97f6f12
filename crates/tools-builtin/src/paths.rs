//! Turning a model-supplied path into the real file it names.
//!
//! Writes are checked against the sandbox roots *after* every symlink on the way has been
//! followed, so a link inside the workspace that points outside it cannot be used to write
//! there. The check and the later write are separate system calls; a process racing to swap a
//! directory for a symlink in between is outside this guard (the bash sandbox does not share
//! that gap, because the kernel enforces it).

use std::io;
use std::path::{Component, Path, PathBuf};

use crate::env::ToolEnv;
use crate::error::ToolError;

/// How many symlinks one resolution may follow before giving up (the kernel's own limit).
const MAX_SYMLINK_HOPS: usize = 40;

/// Makes `raw` absolute against `base` without touching the file system.
pub(crate) fn absolutize(base: &Path, raw: &str) -> PathBuf {
    let path = Path::new(raw);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

/// Resolves `path` as the kernel would: every existing component has its symlinks followed;
/// components that do not exist yet are appended as written (`.` dropped, `..` popped).
pub(crate) fn resolve(path: &Path) -> io::Result<PathBuf> {
    let mut hops = MAX_SYMLINK_HOPS;
    resolve_with_budget(path, &mut hops)
}

fn resolve_with_budget(path: &Path, hops: &mut usize) -> io::Result<PathBuf> {
    let mut resolved = PathBuf::new();
    let mut exists = true;
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => resolved.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => {
                let candidate = resolved.join(name);
                if !exists {
                    resolved = candidate;
                    continue;
                }
                match std::fs::symlink_metadata(&candidate) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        if *hops == 0 {
                            return Err(io::Error::other("too many levels of symbolic links"));
                        }
                        *hops -= 1;
                        let target = std::fs::read_link(&candidate)?;
                        let joined = if target.is_absolute() {
                            target
                        } else {
                            resolved.join(target)
                        };
                        resolved = resolve_with_budget(&joined, hops)?;
                        exists = resolved.exists();
                    }
                    Ok(_) => resolved = candidate,
                    Err(err) if err.kind() == io::ErrorKind::NotFound => {
                        exists = false;
                        resolved = candidate;
                    }
                    Err(err) => return Err(err),
                }
            }
        }
    }
    Ok(resolved)
}

/// The file a read refers to: absolute, symlinks followed. Reads are not confined.
pub(crate) fn resolve_for_read(env: &ToolEnv, raw: &str) -> Result<PathBuf, ToolError> {
    let absolute = absolutize(env.workspace(), raw);
    resolve(&absolute).map_err(|e| ToolError::io("resolving", absolute, e))
}

/// The file a write refers to, after checking the session's sandbox policy.
pub(crate) fn resolve_for_write(env: &ToolEnv, raw: &str) -> Result<PathBuf, ToolError> {
    let resolved = resolve_for_read(env, raw)?;
    let policy = env.sandbox();
    policy
        .check_write(&resolved)
        .map_err(|reason| ToolError::SandboxDenied {
            path: resolved.clone(),
            mode: policy.mode(),
            reason,
        })?;
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn follows_symlinks_in_existing_prefix_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        assert_eq!(
            resolve(&root.join("link/new/file.txt")).unwrap(),
            root.join("real/new/file.txt")
        );
        assert_eq!(
            resolve(&root.join("real/./x/../y")).unwrap(),
            root.join("real/y")
        );
    }

    #[test]
    fn dangling_symlink_resolves_to_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::os::unix::fs::symlink("/nonexistent-dsh-target/f", root.join("dangling")).unwrap();
        assert_eq!(
            resolve(&root.join("dangling")).unwrap(),
            PathBuf::from("/nonexistent-dsh-target/f")
        );
    }

    #[test]
    fn symlink_loops_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(root.join("b"), root.join("a")).unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("b")).unwrap();
        assert!(resolve(&root.join("a/x")).is_err());
    }
}
