//! What this kernel can enforce, found out once per process.
//!
//! The probe never blocks and never panics: it reports, as typed values, whether Landlock and
//! unprivileged user namespaces work, and turns a shortfall into a notice that says exactly
//! what is lost and what the user can do about it.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde::Serialize;

use super::namespace::NamespacePlan;
use super::policy::SandboxMode;

/// Landlock support of the running kernel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum LandlockSupport {
    /// Available; `abi` is the kernel's Landlock ABI version.
    Available { abi: u32 },
    /// Built into the kernel but not enabled at boot (not in the `lsm=` list).
    NotEnabled,
    /// Not built into the kernel (older than 5.13, or configured out).
    NotImplemented,
}

/// Whether a child can enter a private user + mount namespace and remount a path read-only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum NamespaceSupport {
    Available,
    Unavailable { reason: String },
}

/// How a command will actually be confined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Enforcement {
    /// `danger-full-access`: nothing to enforce.
    Unconfined,
    /// Landlock, plus read-only binds for `.git` where the mode needs them.
    Full,
    /// Landlock without the namespace: writes stay inside the roots, but `.git` is writable.
    LandlockOnly,
    /// The kernel cannot confine this mode at all.
    Unavailable,
}

/// How serious a notice is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoticeSeverity {
    /// Confinement works, minus one guarantee.
    Degraded,
    /// No confinement is possible in the requested mode.
    Unavailable,
}

/// A message for the user about a sandbox shortfall.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SandboxNotice {
    pub severity: NoticeSeverity,
    pub message: String,
}

/// The probe result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SandboxProbe {
    pub landlock: LandlockSupport,
    pub namespaces: NamespaceSupport,
}

static PROBE: OnceLock<SandboxProbe> = OnceLock::new();

impl SandboxProbe {
    /// The cached result for this process (probing on first use, which forks one short-lived
    /// `/bin/sh`).
    pub fn current() -> &'static SandboxProbe {
        PROBE.get_or_init(Self::detect)
    }

    /// Probes now, without the cache.
    pub fn detect() -> SandboxProbe {
        SandboxProbe {
            landlock: detect_landlock(),
            namespaces: detect_namespaces(),
        }
    }

    /// How a command in `mode` will be confined on this kernel.
    pub fn enforcement(&self, mode: SandboxMode) -> Enforcement {
        let landlock = matches!(self.landlock, LandlockSupport::Available { .. });
        let namespaces = self.namespaces == NamespaceSupport::Available;
        match mode {
            SandboxMode::DangerFullAccess => Enforcement::Unconfined,
            _ if !landlock => Enforcement::Unavailable,
            SandboxMode::ReadOnly => Enforcement::Full,
            SandboxMode::WorkspaceWrite if namespaces => Enforcement::Full,
            SandboxMode::WorkspaceWrite => Enforcement::LandlockOnly,
        }
    }

    /// The notice to show for `mode`, if this kernel falls short of it.
    pub fn notice(&self, mode: SandboxMode) -> Option<SandboxNotice> {
        match self.enforcement(mode) {
            Enforcement::Unconfined | Enforcement::Full => None,
            Enforcement::LandlockOnly => {
                let reason = match &self.namespaces {
                    NamespaceSupport::Unavailable { reason } => reason.as_str(),
                    NamespaceSupport::Available => "unknown",
                };
                Some(SandboxNotice {
                    severity: NoticeSeverity::Degraded,
                    message: format!(
                        "Sandbox degraded: unprivileged user namespaces are unavailable ({reason}), so \
                         the workspace's .git directory cannot be made read-only for commands. Landlock \
                         still limits command writes to the workspace and the session temp dir, and the \
                         file tools still refuse to write into .git; only bash commands can modify .git. \
                         To restore the guarantee, enable unprivileged user namespaces (for example \
                         `sysctl kernel.unprivileged_userns_clone=1` or \
                         `sysctl kernel.apparmor_restrict_unprivileged_userns=0`), or use --sandbox read-only."
                    ),
                })
            }
            Enforcement::Unavailable => {
                let why = match self.landlock {
                    LandlockSupport::NotEnabled => {
                        "this Linux kernel has Landlock built in but not enabled at boot"
                    }
                    _ => {
                        "this Linux kernel does not provide Landlock (it needs Linux 5.13 or newer)"
                    }
                };
                Some(SandboxNotice {
                    severity: NoticeSeverity::Unavailable,
                    message: format!(
                        "Sandbox unavailable: {why}, so dsh cannot confine bash commands to {mode} mode. \
                         Consequence: bash commands are refused with SANDBOX_UNAVAILABLE rather than run \
                         unconfined (the file tools still enforce {mode} themselves). Your choices: \
                         restart with --sandbox danger-full-access to run commands without confinement; \
                         approve commands one at a time (each approved command runs unconfined); or \
                         enable Landlock (add `landlock` to the kernel's `lsm=` boot parameter)."
                    ),
                })
            }
        }
    }
}

fn detect_landlock() -> LandlockSupport {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the documented way to query the ABI version: null attr, zero size, VERSION flag.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if version > 0 {
        return LandlockSupport::Available {
            abi: u32::try_from(version).unwrap_or(u32::MAX),
        };
    }
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::EOPNOTSUPP) => LandlockSupport::NotEnabled,
        _ => LandlockSupport::NotImplemented,
    }
}

/// Runs `/bin/sh` in a namespace with a read-only bind over a scratch directory and checks that
/// a write there is refused: the whole mechanism, end to end.
fn detect_namespaces() -> NamespaceSupport {
    match try_namespaces() {
        Ok(()) => NamespaceSupport::Available,
        Err(reason) => NamespaceSupport::Unavailable { reason },
    }
}

fn try_namespaces() -> Result<(), String> {
    let scratch = std::env::temp_dir().join(format!("dsh-ns-probe-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir(&scratch).map_err(|e| format!("creating a probe directory: {e}"))?;
    let result = run_probe_child(&scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn run_probe_child(scratch: &std::path::Path) -> Result<(), String> {
    let plan = NamespacePlan::new(&[scratch.to_path_buf()])
        .map_err(|e| format!("preparing the namespace: {e}"))?;
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        // A subshell: a failed redirection on a special builtin would end the whole shell.
        .arg("if (echo x > \"$1/probe\") 2>/dev/null; then exit 3; fi; exit 0")
        .arg("sh")
        .arg(scratch)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: `enter` performs only async-signal-safe system calls on memory prepared above.
    unsafe {
        command.pre_exec(move || plan.enter());
    }
    let status = command
        .status()
        .map_err(|e| format!("entering a user namespace failed: {e}"))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(3) => Err("a read-only bind mount did not stop writes".to_string()),
        _ => Err(format!("the probe command failed ({status})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(landlock: LandlockSupport, namespaces: NamespaceSupport) -> SandboxProbe {
        SandboxProbe {
            landlock,
            namespaces,
        }
    }

    #[test]
    fn enforcement_matrix() {
        let full = probe(
            LandlockSupport::Available { abi: 7 },
            NamespaceSupport::Available,
        );
        let no_ns = probe(
            LandlockSupport::Available { abi: 7 },
            NamespaceSupport::Unavailable {
                reason: "EPERM".into(),
            },
        );
        let none = probe(LandlockSupport::NotImplemented, NamespaceSupport::Available);
        use Enforcement::*;
        use SandboxMode::*;
        let table = [
            (&full, WorkspaceWrite, Full),
            (&full, ReadOnly, Full),
            (&full, DangerFullAccess, Unconfined),
            (&no_ns, WorkspaceWrite, LandlockOnly),
            (&no_ns, ReadOnly, Full),
            (&none, WorkspaceWrite, Unavailable),
            (&none, ReadOnly, Unavailable),
            (&none, DangerFullAccess, Unconfined),
        ];
        for (p, mode, expected) in table {
            assert_eq!(p.enforcement(mode), expected, "{mode}");
        }
        assert_eq!(full.notice(WorkspaceWrite), None);
        assert_eq!(
            no_ns.notice(WorkspaceWrite).map(|n| n.severity),
            Some(NoticeSeverity::Degraded)
        );
        let unavailable = none.notice(ReadOnly).map(|n| n.message).unwrap_or_default();
        assert!(unavailable.contains("--sandbox danger-full-access"));
        assert!(unavailable.contains("read-only mode"));
    }

    #[test]
    fn detection_does_not_panic_and_is_cached() {
        let first = SandboxProbe::current();
        assert!(std::ptr::eq(first, SandboxProbe::current()));
    }
}
