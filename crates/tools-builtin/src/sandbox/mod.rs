//! Confining the commands bash runs, and the policy the file tools share with it.
//!
//! Modes: `read-only`, `workspace-write` (default) and `danger-full-access`; only writes are
//! confined. On Linux a command is confined in-binary, in its own forked child, before exec:
//! 1. optionally a private user + mount namespace with `.git` bind-mounted read-only
//!    ([`namespace`]), since Landlock alone cannot carve a read-only hole out of a writable tree;
//! 2. a Landlock ruleset granting writes beneath the writable roots only ([`landlock`]).
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
pub use probe::{
    Enforcement, LandlockSupport, NamespaceSupport, NoticeSeverity, SandboxNotice, SandboxProbe,
};

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
            Some(setup) if setup.namespace.is_some() => "landlock+namespace",
            Some(_) => "landlock",
        }
    }
}

/// Prepared in the parent, applied in the child.
pub(crate) struct ChildSetup {
    namespace: Option<namespace::NamespacePlan>,
    ruleset: Option<::landlock::RulesetCreated>,
    /// Re-entered after the mounts so a working directory inside a protected path sees the
    /// read-only view, not the mount underneath.
    cwd: CString,
}

impl ChildSetup {
    /// Applies the namespace and the ruleset to the calling process.
    ///
    /// # Safety
    /// Only in a forked child before exec (a `pre_exec` hook); performs raw system calls.
    pub(crate) unsafe fn apply(&mut self) -> io::Result<()> {
        if let Some(plan) = &self.namespace {
            // SAFETY: forwarded from the caller's contract.
            unsafe { plan.enter()? };
            // SAFETY: `cwd` is a valid NUL-terminated path.
            if unsafe { libc::chdir(self.cwd.as_ptr()) } != 0 {
                return Err(io::Error::last_os_error());
            }
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
        Enforcement::Full | Enforcement::LandlockOnly => {}
    }
    let sandbox_failed = |reason: String| ToolError::SandboxFailed { reason };
    let ruleset = landlock::build_ruleset(policy).map_err(sandbox_failed)?;
    let namespace = if mode == SandboxMode::WorkspaceWrite && enforcement == Enforcement::Full {
        let plan = namespace::NamespacePlan::new(policy.read_only_paths())
            .map_err(|e| sandbox_failed(format!("preparing read-only mounts: {e}")))?;
        plan.has_binds().then_some(plan)
    } else {
        None
    };
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
        assert_eq!(
            c.notice.map(|n| n.severity),
            Some(NoticeSeverity::Unavailable)
        );
    }

    #[test]
    fn missing_namespaces_degrade_to_landlock_only() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        std::fs::create_dir_all(ws.join("tmp")).unwrap();
        let p = policy(SandboxMode::WorkspaceWrite, UnconfinedFallback::Refuse, &ws);
        let c = prepare(&p, &probe(true, false), &ws).unwrap();
        assert_eq!(
            (c.enforcement, c.label()),
            (Enforcement::LandlockOnly, "landlock")
        );
        assert_eq!(c.notice.map(|n| n.severity), Some(NoticeSeverity::Degraded));
        let full = prepare(&p, &probe(true, true), &ws).unwrap();
        assert_eq!(
            (full.enforcement, full.label(), full.notice),
            (Enforcement::Full, "landlock+namespace", None)
        );
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
