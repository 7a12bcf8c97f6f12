//! The per-session safety knobs: approval policy, sandbox mode and the preset that names a
//! common pair of them.

use crate::sandbox::SandboxMode;

dsh_protocol::word_enum! {
    /// When a person is asked before a call runs. The words of `[approval] policy`,
    /// `--approval` and the `approval/policy` event; change the set here.
    ///
    /// The sandbox is the first line: under `ask` a person is asked only when a call would
    /// leave it (an escalation, or any command while the sandbox is off). `untrusted` asks
    /// before every command and file change whatever the sandbox; `never` asks nothing.
    /// Deny rules apply under every policy.
    #[derive(Default)]
    pub enum ApprovalPolicy {
        /// Every command and file change is asked, except a short list of read-only
        /// commands (`ls`, `cat`, `git status`, ...) and calls an allow rule or a session
        /// grant covers.
        Untrusted = "untrusted",
        /// Commands and file changes run inside the session's sandbox without a prompt. A
        /// person is asked to let one command out of it (an escalation), for calls an `ask`
        /// rule or a hook sends to approval, and, when the sandbox is off
        /// (`danger-full-access`), for commands and file changes as under `untrusted`.
        #[default]
        Ask = "ask",
        /// Never ask: calls run in the sandbox as it is, an escalation request is refused
        /// (the sandbox mode is fixed for the session), and so is a call an `ask` rule or a
        /// hook would put to a person.
        Never = "never",
    }
}

impl ApprovalPolicy {
    /// Whether calls may be put to a person under this policy.
    pub(crate) fn asks(self) -> bool {
        !matches!(self, Self::Never)
    }

    /// How much this policy lets run without a person: `untrusted` < `ask` < `never`. A
    /// resumed session keeps its recorded policy only when that is not wider than the one
    /// the run would choose.
    pub fn openness(self) -> u8 {
        match self {
            Self::Untrusted => 0,
            Self::Ask => 1,
            Self::Never => 2,
        }
    }
}

dsh_protocol::word_enum! {
    /// A named pair of sandbox mode and approval policy (the `/permission` choices).
    #[derive(Default)]
    pub enum PermissionPreset {
        /// Read-only sandbox; a person is asked to let a command out of it.
        ReadOnly = "read-only",
        /// Workspace-write sandbox; a person is asked to let a command out of it.
        #[default]
        WorkspaceWrite = "workspace-write",
        /// No confinement and no questions.
        DangerFullAccess = "danger-full-access",
    }
}

impl PermissionPreset {
    /// The preset named after `mode` (each mode has one).
    pub fn for_sandbox(mode: SandboxMode) -> Self {
        match mode {
            SandboxMode::ReadOnly => Self::ReadOnly,
            SandboxMode::WorkspaceWrite => Self::WorkspaceWrite,
            SandboxMode::DangerFullAccess => Self::DangerFullAccess,
        }
    }

    pub fn sandbox_mode(self) -> SandboxMode {
        match self {
            Self::ReadOnly => SandboxMode::ReadOnly,
            Self::WorkspaceWrite => SandboxMode::WorkspaceWrite,
            Self::DangerFullAccess => SandboxMode::DangerFullAccess,
        }
    }

    pub fn approval_policy(self) -> ApprovalPolicy {
        match self {
            Self::ReadOnly | Self::WorkspaceWrite => ApprovalPolicy::Ask,
            Self::DangerFullAccess => ApprovalPolicy::Never,
        }
    }
}

/// The safety state a session starts with (and that a preset switch changes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionSafety {
    pub preset: PermissionPreset,
    pub sandbox: SandboxMode,
    pub policy: ApprovalPolicy,
}

impl SessionSafety {
    /// The preset's own sandbox mode and policy.
    pub fn from_preset(preset: PermissionPreset) -> Self {
        Self {
            preset,
            sandbox: preset.sandbox_mode(),
            policy: preset.approval_policy(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn presets_imply_their_pairs() {
        assert_eq!(
            SessionSafety::from_preset(PermissionPreset::DangerFullAccess),
            SessionSafety {
                preset: PermissionPreset::DangerFullAccess,
                sandbox: SandboxMode::DangerFullAccess,
                policy: ApprovalPolicy::Never
            }
        );
        assert_eq!(
            SessionSafety::default(),
            SessionSafety::from_preset(PermissionPreset::WorkspaceWrite)
        );
        assert_eq!(
            serde_json::to_value(PermissionPreset::ReadOnly).unwrap(),
            serde_json::json!("read-only")
        );
        for mode in SandboxMode::ALL {
            assert_eq!(PermissionPreset::for_sandbox(*mode).sandbox_mode(), *mode);
        }
    }
}
