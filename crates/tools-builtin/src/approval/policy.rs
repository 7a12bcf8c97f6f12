//! The per-session safety knobs: approval policy, sandbox mode and the preset that names a
//! common pair of them.

use serde::{Deserialize, Serialize};

use crate::sandbox::SandboxMode;

/// When a person is asked before a call that needs approval runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalPolicy {
    /// Calls that need approval are asked unless an allow rule or a session grant covers them.
    #[default]
    Ask,
    /// Never ask: calls that would need approval run (deny rules still apply).
    Never,
    /// Allow rules decide; anything they do not cover is asked, as under `ask`.
    Auto,
}

impl ApprovalPolicy {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::Never => "never",
            Self::Auto => "auto",
        }
    }

    /// Whether calls that need approval may be put to a person under this policy.
    pub(crate) fn asks(self) -> bool {
        !matches!(self, Self::Never)
    }
}

impl std::fmt::Display for ApprovalPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A named pair of sandbox mode and approval policy (the `/permission` choices).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionPreset {
    /// Read-only sandbox, ask before risky calls.
    ReadOnly,
    /// Workspace-write sandbox, ask before risky calls.
    #[default]
    WorkspaceWrite,
    /// No confinement and no questions.
    DangerFullAccess,
}

impl PermissionPreset {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::DangerFullAccess => "danger-full-access",
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
    }
}
