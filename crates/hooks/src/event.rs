//! The hook events dsh supports, and what their matchers match against.

use crate::config::Dialect;

/// A hook event, by its Claude Code / Codex name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    Stop,
    SubagentStart,
    SubagentStop,
}

impl HookEvent {
    pub const ALL: [HookEvent; 7] = [
        Self::SessionStart,
        Self::UserPromptSubmit,
        Self::PreToolUse,
        Self::PostToolUse,
        Self::Stop,
        Self::SubagentStart,
        Self::SubagentStop,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::SessionStart => "SessionStart",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::Stop => "Stop",
            Self::SubagentStart => "SubagentStart",
            Self::SubagentStop => "SubagentStop",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|event| event.as_str() == name)
    }

    /// Whether `dialect` defines this event (Codex has no subagent events).
    pub fn supported_by(self, dialect: Dialect) -> bool {
        match dialect {
            Dialect::ClaudeCode => true,
            Dialect::Codex => !matches!(self, Self::SubagentStart | Self::SubagentStop),
        }
    }

    /// Whether a group's `matcher` means anything for this event (it is ignored for
    /// `UserPromptSubmit` and `Stop`).
    pub fn has_matcher(self) -> bool {
        !matches!(self, Self::UserPromptSubmit | Self::Stop)
    }
}
