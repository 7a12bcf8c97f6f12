//! What this kernel can enforce, found out once per process.
//!
//! The probe never blocks and never panics: it reports, as typed values, whether Landlock and
//! unprivileged user namespaces work, and turns a shortfall into a notice that says exactly
//! what is lost and what the user can do about it.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::Path;
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

/// Whether a child can enter a private user + mount namespace and build the read-only view of
/// the host with a writable root on top.
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
    /// Both layers: the read-only namespace and Landlock.
    Full,
    /// This system cannot build one of the layers, so the mode cannot be kept. There is no
    /// half-confined middle: Landlock alone would leave metadata (`chmod`, `touch -d`) outside
    /// the workspace and all of `.git` open to commands that nobody approved.
    Unavailable,
}

/// A message for the user about why commands cannot be confined, and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SandboxNotice {
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
            _ if landlock && namespaces => Enforcement::Full,
            _ => Enforcement::Unavailable,
        }
    }

    /// The notice to show for `mode`, if this kernel falls short of it.
    pub fn notice(&self, mode: SandboxMode) -> Option<SandboxNotice> {
        if self.enforcement(mode) != Enforcement::Unavailable {
            return None;
        }
        // Landlock first: enabling namespaces alone would not help without it.
        let (why, remedy) = match (&self.landlock, &self.namespaces) {
            (LandlockSupport::NotEnabled, _) => (
                "this Linux kernel has Landlock built in but not enabled at boot".to_string(),
                "enable Landlock (add `landlock` to the kernel's `lsm=` boot parameter)",
            ),
            (LandlockSupport::NotImplemented, _) => (
                "this Linux kernel does not provide Landlock (it needs Linux 5.13 or newer)"
                    .to_string(),
                "enable Landlock (add `landlock` to the kernel's `lsm=` boot parameter)",
            ),
            (LandlockSupport::Available { .. }, NamespaceSupport::Unavailable { reason }) => (
                format!(
                    "dsh cannot build the private mount namespace that makes the rest of the \
                     file system read-only for commands ({reason}); Landlock alone would leave \
                     chmod, chown and touch outside the workspace, and writes into .git, \
                     unconfined"
                ),
                "allow unprivileged user namespaces (for example \
                 `sysctl kernel.apparmor_restrict_unprivileged_userns=0` on Ubuntu, or \
                 `sysctl kernel.unprivileged_userns_clone=1` on older Debian kernels; in a \
                 container, a seccomp profile that permits `unshare` and `mount`)",
            ),
            (LandlockSupport::Available { .. }, NamespaceSupport::Available) => return None,
        };
        Some(SandboxNotice {
            message: format!(
                "Sandbox unavailable: {why}, so dsh cannot confine bash commands to {mode} mode. \
                 Consequence: bash commands are refused with SANDBOX_UNAVAILABLE rather than run \
                 unconfined (the file tools still enforce {mode} themselves). Your choices: \
                 restart with --sandbox danger-full-access to run commands without confinement; \
                 approve commands one at a time (each approved command runs unconfined); or \
                 {remedy}."
            ),
        })
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

/// Runs `/bin/sh` in the namespace a command would get, with a scratch directory laid out
/// like a workspace, and checks every promise of the view: the writable root is writable,
/// the carve-out inside it is not, and neither the contents nor the metadata of the host
/// outside can change. The whole mechanism, end to end, without Landlock.
fn detect_namespaces() -> NamespaceSupport {
    match try_namespaces() {
        Ok(()) => NamespaceSupport::Available,
        Err(reason) => NamespaceSupport::Unavailable { reason },
    }
}

fn try_namespaces() -> Result<(), String> {
    let scratch = std::env::temp_dir().join(format!("dsh-ns-probe-{}", uuid::Uuid::new_v4()));
    let result = std::fs::create_dir_all(scratch.join("rw/ro"))
        .and_then(|()| std::fs::write(scratch.join("host"), b""))
        .map_err(|e| format!("creating a probe directory: {e}"))
        .and_then(|()| run_probe_child(&scratch));
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn run_probe_child(scratch: &Path) -> Result<(), String> {
    let mut plan = NamespacePlan::new(&[scratch.join("rw")], &[scratch.join("rw/ro")])
        .map_err(|e| format!("preparing the namespace: {e}"))?;
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        // Subshells: a failed redirection on a special builtin would end the whole shell.
        .arg(concat!(
            "(echo x > \"$1/rw/ok\") 2>/dev/null || exit 4; ",
            "if (echo x > \"$1/rw/ro/x\") 2>/dev/null; then exit 3; fi; ",
            "if (echo x > \"$1/host\") 2>/dev/null; then exit 5; fi; ",
            "if chmod 600 \"$1/host\" 2>/dev/null; then exit 6; fi; ",
            "exit 0",
        ))
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
        .map_err(|e| format!("building the namespace failed: {e}"))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(3) => Err("a read-only bind mount did not stop writes".to_string()),
        Some(4) => Err("the writable root was not writable in the namespace".to_string()),
        Some(5) => Err("the read-only host mounts did not stop writes".to_string()),
        Some(6) => Err("the read-only host mounts did not stop chmod".to_string()),
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
            (&no_ns, WorkspaceWrite, Unavailable),
            (&no_ns, ReadOnly, Unavailable),
            (&no_ns, DangerFullAccess, Unconfined),
            (&none, WorkspaceWrite, Unavailable),
            (&none, ReadOnly, Unavailable),
            (&none, DangerFullAccess, Unconfined),
        ];
        for (p, mode, expected) in table {
            assert_eq!(p.enforcement(mode), expected, "{mode}");
        }
        assert_eq!(full.notice(WorkspaceWrite), None);
        assert_eq!(no_ns.notice(DangerFullAccess), None);
        let unavailable = none.notice(ReadOnly).map(|n| n.message).unwrap_or_default();
        assert!(unavailable.contains("--sandbox danger-full-access"));
        assert!(unavailable.contains("read-only mode"));
        assert!(unavailable.contains("Landlock"));
        let no_ns = no_ns
            .notice(WorkspaceWrite)
            .map(|n| n.message)
            .unwrap_or_default();
        assert!(
            no_ns.starts_with(
                "Sandbox unavailable: dsh cannot build the private mount namespace that makes \
                 the rest of the file system read-only for commands (EPERM)"
            ),
            "{no_ns}"
        );
        assert!(
            no_ns.contains("refused with SANDBOX_UNAVAILABLE"),
            "{no_ns}"
        );
        assert!(
            no_ns.contains("allow unprivileged user namespaces"),
            "{no_ns}"
        );
    }

    #[test]
    fn detection_does_not_panic_and_is_cached() {
        let first = SandboxProbe::current();
        assert!(std::ptr::eq(first, SandboxProbe::current()));
    }
}
