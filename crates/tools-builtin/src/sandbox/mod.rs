//! Confining the commands bash runs, and the policy the file tools share with it.
//!
//! Modes: `read-only`, `workspace-write` (default) and `danger-full-access`; only changes to
//! the file system are confined (contents and metadata), never reads. On Linux a command is
//! confined in-binary, in its own forked child, before exec, by two independent layers:
//! 1. a private user + mount namespace in which the whole host file system is read-only, the
//!    writable roots are mounted read-write on top and the workspace's `.git` read-only again
//!    ([`namespace`]); this is what stops metadata changes (`chmod`, `chown`, `touch -d`,
//!    xattrs), which Landlock does not cover;
//! 2. a Landlock ruleset granting writes beneath the writable roots only ([`landlock`]), which
//!    also forbids the command from changing its mounts.
//!
//! Both layers are required: when either cannot be built the mode is unavailable and bash
//! fails closed (`SANDBOX_UNAVAILABLE`) unless the caller chose to run unconfined.
//!
//! The private TMPDIR is a root of its own; `/tmp` as a whole is never granted, so a workspace
//! that itself lies under `/tmp` is confined just like any other.

mod landlock;
mod namespace;
mod policy;
mod probe;

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub use policy::{SandboxMode, SandboxPolicy, UnconfinedFallback, WRITABLE_DEVICES};
pub use probe::{Enforcement, LandlockSupport, NamespaceSupport, SandboxNotice, SandboxProbe};

use crate::error::ToolError;

/// How one command will run, decided before it is spawned.
pub(crate) struct Confinement {
    pub enforcement: Enforcement,
    /// Shown once per session when the kernel falls short of the requested mode.
    pub notice: Option<SandboxNotice>,
    /// The work the forked child does before exec; `None` when running unconfined.
    pub child: Option<ChildSetup>,
}

impl Confinement {
    /// A short label for result metadata.
    pub fn label(&self) -> &'static str {
        match &self.child {
            None => "none",
            Some(_) => "landlock+namespace",
        }
    }
}

/// Prepared in the parent, applied in the child.
pub(crate) struct ChildSetup {
    namespace: namespace::NamespacePlan,
    ruleset: Option<::landlock::RulesetCreated>,
    /// Re-entered after the mounts so the working directory is the new view (the writable
    /// clone, or the read-only `.git`), not the mount underneath.
    cwd: CString,
}

impl ChildSetup {
    /// Applies the namespace and the ruleset to the calling process.
    ///
    /// # Safety
    /// Only in a forked child before exec (a `pre_exec` hook); performs raw system calls.
    pub(crate) unsafe fn apply(&mut self) -> io::Result<()> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.namespace.enter()? };
        // SAFETY: `cwd` is a valid NUL-terminated path.
        if unsafe { libc::chdir(self.cwd.as_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        match self.ruleset.take() {
            Some(ruleset) => landlock::restrict_self(ruleset),
            // A second call (the hook is FnMut) must not pass as confined.
            None => Err(io::Error::from_raw_os_error(libc::EALREADY)),
        }
    }
}

/// Decides how a command in `cwd` runs under `policy` on a kernel described by `probe`.
pub(crate) fn prepare(
    policy: &SandboxPolicy,
    probe: &SandboxProbe,
    cwd: &Path,
) -> Result<Confinement, ToolError> {
    let mode = policy.mode();
    let enforcement = probe.enforcement(mode);
    let notice = probe.notice(mode);
    match enforcement {
        Enforcement::Unconfined => {
            return Ok(Confinement {
                enforcement,
                notice,
                child: None,
            })
        }
        Enforcement::Unavailable => {
            return match policy.fallback() {
                UnconfinedFallback::Allow => Ok(Confinement {
                    enforcement,
                    notice,
                    child: None,
                }),
                UnconfinedFallback::Refuse => Err(ToolError::SandboxUnavailable {
                    notice: notice.map(|n| n.message).unwrap_or_default(),
                }),
            };
        }
        Enforcement::Full => {}
    }
    let sandbox_failed = |reason: String| ToolError::SandboxFailed { reason };
    let ruleset = landlock::build_ruleset(policy).map_err(sandbox_failed)?;
    // In read-only mode nothing goes on top of the read-only host, .git included.
    let (writable, read_only) = match mode {
        SandboxMode::WorkspaceWrite => (policy.writable_roots(), policy.read_only_paths()),
        _ => (&[][..], &[][..]),
    };
    let namespace = namespace::NamespacePlan::new(writable, read_only)
        .map_err(|e| sandbox_failed(format!("preparing the mounts: {e}")))?;
    let cwd = CString::new(cwd.as_os_str().as_bytes())
        .map_err(|_| sandbox_failed("the working directory contains a NUL byte".to_string()))?;
    Ok(Confinement {
        enforcement,
        notice,
        child: Some(ChildSetup {
            namespace,
            ruleset: Some(ruleset),
            cwd,
        }),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::path::PathBuf;

    fn policy(mode: SandboxMode, fallback: UnconfinedFallback, ws: &Path) -> SandboxPolicy {
        SandboxPolicy::new(mode, ws, &ws.join("tmp"), &[], fallback)
    }

    fn probe(landlock: bool, namespaces: bool) -> SandboxProbe {
        SandboxProbe {
            landlock: if landlock {
                LandlockSupport::Available { abi: 3 }
            } else {
                LandlockSupport::NotImplemented
            },
            namespaces: if namespaces {
                NamespaceSupport::Available
            } else {
                NamespaceSupport::Unavailable {
                    reason: "EPERM".into(),
                }
            },
        }
    }

    #[test]
    fn no_landlock_refuses_by_default_with_the_notice() {
        let ws = PathBuf::from("/w");
        let p = policy(SandboxMode::WorkspaceWrite, UnconfinedFallback::Refuse, &ws);
        let err = prepare(&p, &probe(false, true), &ws).err().unwrap();
        assert_eq!(err.code(), "SANDBOX_UNAVAILABLE");
        assert!(err
            .to_string()
            .starts_with("Sandbox unavailable: this Linux kernel does not provide Landlock"));
    }

    #[test]
    fn no_landlock_with_allowed_fallback_runs_unconfined_and_says_so() {
        let ws = PathBuf::from("/w");
        let p = policy(SandboxMode::WorkspaceWrite, UnconfinedFallback::Allow, &ws);
        let c = prepare(&p, &probe(false, true), &ws).unwrap();
        assert_eq!(
            (c.enforcement, c.child.is_none(), c.label()),
            (Enforcement::Unavailable, true, "none")
        );
        assert!(c.notice.unwrap().message.starts_with("Sandbox unavailable"));
    }

    #[test]
    fn missing_namespaces_fail_closed_in_both_confined_modes() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join("tmp")).unwrap();
        for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
            let p = policy(mode, UnconfinedFallback::Refuse, &ws);
            let err = prepare(&p, &probe(true, false), &ws).err().unwrap();
            assert_eq!(err.code(), "SANDBOX_UNAVAILABLE", "{mode}");
            assert!(err.to_string().contains("(EPERM)"), "{err}");
            let allowed = p.with_fallback(UnconfinedFallback::Allow);
            let c = prepare(&allowed, &probe(true, false), &ws).unwrap();
            assert_eq!(
                (c.enforcement, c.label()),
                (Enforcement::Unavailable, "none")
            );
            let full = prepare(&p, &probe(true, true), &ws).unwrap();
            assert_eq!(
                (full.enforcement, full.label(), full.notice),
                (Enforcement::Full, "landlock+namespace", None)
            );
        }
    }

    #[test]
    fn full_access_needs_nothing() {
        let ws = PathBuf::from("/w");
        let p = policy(
            SandboxMode::DangerFullAccess,
            UnconfinedFallback::Refuse,
            &ws,
        );
        let c = prepare(&p, &probe(false, false), &ws).unwrap();
        assert_eq!(
            (c.enforcement, c.label(), c.notice),
            (Enforcement::Unconfined, "none", None)
        );
    }
}
