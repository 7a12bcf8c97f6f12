//! The per-session safety knobs: approval policy, sandbox mode and the preset that names a
//! common pair of them.

use crate::sandbox::SandboxMode;

dsh_protocol::word_enum! {
    /// When a person is asked before a call that needs approval runs. The words of
    /// `[approval] policy`, `--approval` and the `approval/policy` event; change the set here.
    #[derive(Default)]
    pub enum ApprovalPolicy {
        /// Calls that need approval are asked unless an allow rule or a session grant covers
        /// them.
        #[default]
        Ask = "ask",
        /// Never ask: calls that would need approval run (deny rules still apply; meant for
        /// full access).
        Never = "never",
        /// Allow rules decide; anything they do not cover is asked, as under `ask`, so nothing
        /// is refused for want of a rule.
        Auto = "auto",
    }
}

impl ApprovalPolicy {
    /// Whether calls that need approval may be put to a person under this policy.
    pub(crate) fn asks(self) -> bool {
        !matches!(self, Self::Never)
    }
}

dsh_protocol::word_enum! {
    /// A named pair of sandbox mode and approval policy (the `/permission` choices).
    #[derive(Default)]
    pub enum PermissionPreset {
        /// Read-only sandbox, ask before risky calls.
        ReadOnly = "read-only",
        /// Workspace-write sandbox, ask before risky calls.
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
