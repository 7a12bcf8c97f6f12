//! What may be written where: the per-session policy both enforcers read.
//!
//! The in-process file tools check every write against [`SandboxPolicy::check_write`], and the
//! bash spawner turns the same roots into a Landlock ruleset plus read-only bind mounts, so the
//! two can never disagree about which directories are writable.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

dsh_protocol::word_enum! {
    /// How much of the file system a session may write to. Reads, network and process
    /// visibility are never confined; only writes are. Settings, `DSH_PERMISSION_MODE`,
    /// `--sandbox` and the log all use these words.
    #[derive(Default)]
    pub enum SandboxMode {
        /// Nothing is writable except `/dev/null` and friends.
        ReadOnly = "read-only",
        /// The workspace and the session's private temp dir are writable; the workspace's
        /// `.git` stays read-only.
        #[default]
        WorkspaceWrite = "workspace-write",
        /// No confinement at all.
        DangerFullAccess = "danger-full-access",
    }
}

/// What bash does when the kernel cannot confine a command in the requested mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnconfinedFallback {
    /// Fail closed: the call fails with `SANDBOX_UNAVAILABLE` and an explanation.
    #[default]
    Refuse,
    /// Run the command without confinement (the user chose this, e.g. by approving the call);
    /// the result still carries a one-time notice.
    Allow,
}

/// Device files that stay writable in every confined mode, because ordinary commands
/// (`> /dev/null`, `tty`, `head -c N /dev/zero`) expect to open them for writing.
pub const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// The resolved write policy of one session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxPolicy {
    mode: SandboxMode,
    writable_roots: Vec<PathBuf>,
    read_only_paths: Vec<PathBuf>,
    fallback: UnconfinedFallback,
}

impl SandboxPolicy {
    /// The policy for a workspace. All paths must already be canonical (symlinks resolved):
    /// `workspace` and `temp_dir` become the writable roots, `extra_writable` are added as-is,
    /// and `<workspace>/.git` is kept read-only.
    pub fn new(
        mode: SandboxMode,
        workspace: &Path,
        temp_dir: &Path,
        extra_writable: &[PathBuf],
        fallback: UnconfinedFallback,
    ) -> Self {
        let mut writable_roots = vec![workspace.to_path_buf(), temp_dir.to_path_buf()];
        writable_roots.extend(extra_writable.iter().cloned());
        writable_roots.dedup();
        Self {
            mode,
            writable_roots,
            read_only_paths: vec![workspace.join(".git")],
            fallback,
        }
    }

    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    pub fn fallback(&self) -> UnconfinedFallback {
        self.fallback
    }

    /// Directories under which writes are allowed in `workspace-write` mode.
    pub fn writable_roots(&self) -> &[PathBuf] {
        &self.writable_roots
    }

    /// Paths inside the writable roots that stay read-only (the workspace's `.git`).
    pub fn read_only_paths(&self) -> &[PathBuf] {
        &self.read_only_paths
    }

    /// The same policy in another mode (an approved escalation, or a preset switch).
    pub fn with_mode(&self, mode: SandboxMode) -> Self {
        Self {
            mode,
            ..self.clone()
        }
    }

    pub fn with_fallback(&self, fallback: UnconfinedFallback) -> Self {
        Self {
            fallback,
            ..self.clone()
        }
    }

    /// Whether a directory may serve as a command's working directory: anywhere when
    /// unconfined, otherwise inside one of the writable roots.
    pub fn allows_workdir(&self, dir: &Path) -> bool {
        self.mode == SandboxMode::DangerFullAccess
            || self.writable_roots.iter().any(|root| dir.starts_with(root))
    }

    /// Checks a write to `path`, which must be fully resolved (see `paths::resolve_for_write`).
    /// The error is the reason, phrased for the model.
    pub fn check_write(&self, path: &Path) -> Result<(), String> {
        if self.mode == SandboxMode::DangerFullAccess {
            return Ok(());
        }
        if WRITABLE_DEVICES
            .iter()
            .any(|device| path == Path::new(device))
        {
            return Ok(());
        }
        if self.mode == SandboxMode::ReadOnly {
            return Err("nothing is writable in read-only mode".to_string());
        }
        if let Some(protected) = self.read_only_paths.iter().find(|p| path.starts_with(p)) {
            return Err(format!(
                "{} is read-only (git metadata is protected in workspace-write mode)",
                protected.display()
            ));
        }
        if self
            .writable_roots
            .iter()
            .any(|root| path.starts_with(root))
        {
            return Ok(());
        }
        let roots: Vec<String> = self
            .writable_roots
            .iter()
            .map(|r| r.display().to_string())
            .collect();
        Err(format!(
            "only paths under {} are writable",
            roots.join(" and ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(mode: SandboxMode) -> SandboxPolicy {
        SandboxPolicy::new(
            mode,
            Path::new("/w"),
            Path::new("/t/s1"),
            &[],
            UnconfinedFallback::Refuse,
        )
    }

    #[test]
    fn workspace_write_allows_workspace_and_temp_only() {
        let p = policy(SandboxMode::WorkspaceWrite);
        assert_eq!(p.check_write(Path::new("/w/src/a.rs")), Ok(()));
        assert_eq!(p.check_write(Path::new("/t/s1/x")), Ok(()));
        assert_eq!(p.check_write(Path::new("/dev/null")), Ok(()));
        assert_eq!(
            p.check_write(Path::new("/t/other")),
            Err("only paths under /w and /t/s1 are writable".to_string())
        );
        // a sibling that merely shares a string prefix is not inside the root
        assert!(p.check_write(Path::new("/wx/a")).is_err());
    }

    #[test]
    fn git_dir_stays_read_only() {
        let p = policy(SandboxMode::WorkspaceWrite);
        assert_eq!(
            p.check_write(Path::new("/w/.git/config")),
            Err(
                "/w/.git is read-only (git metadata is protected in workspace-write mode)"
                    .to_string()
            )
        );
        assert_eq!(p.check_write(Path::new("/w/.github/x")), Ok(()));
    }

    #[test]
    fn read_only_and_full_access() {
        assert!(policy(SandboxMode::ReadOnly)
            .check_write(Path::new("/w/a"))
            .is_err());
        assert_eq!(
            policy(SandboxMode::ReadOnly).check_write(Path::new("/dev/null")),
            Ok(())
        );
        assert_eq!(
            policy(SandboxMode::DangerFullAccess).check_write(Path::new("/etc/x")),
            Ok(())
        );
    }

    #[test]
    fn mode_wire_names() {
        assert_eq!(
            serde_json::to_value(SandboxMode::WorkspaceWrite).ok(),
            Some("workspace-write".into())
        );
        let parsed: Option<SandboxMode> = serde_json::from_str("\"danger-full-access\"").ok();
        assert_eq!(parsed, Some(SandboxMode::DangerFullAccess));
    }
}
