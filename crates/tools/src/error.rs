//! Failures a tool (or a hook around it) reports, and registry errors.

use dsh_kernel::KernelError;
use serde::{Deserialize, Serialize};

/// Stable error codes that appear in `tool/result` events (`error.code`).
pub mod codes {
    /// The named tool is not visible to the calling scope.
    pub const UNKNOWN_TOOL: &str = "UNKNOWN_TOOL";
    /// The arguments were not a JSON object or did not match the tool's schema.
    pub const INVALID_TOOL_ARGUMENTS: &str = "INVALID_TOOL_ARGUMENTS";
    /// The tool returned a value that does not survive a JSON round trip.
    pub const INVALID_TOOL_OUTPUT: &str = "INVALID_TOOL_OUTPUT";
    /// The tool ran longer than its timeout.
    pub const TOOL_TIMEOUT: &str = "TOOL_TIMEOUT";
    /// The call was cancelled while its body ran.
    pub const ABORTED: &str = "ABORTED";
    /// The call was cancelled before its body started.
    pub const ABORTED_BEFORE_DISPATCH: &str = "ABORTED_BEFORE_DISPATCH";
    /// A pre-execute hook, the approval answerer or a guard refused the call.
    pub const TOOL_DENIED: &str = "TOOL_DENIED";
    /// A post-execute hook blocked the result.
    pub const TOOL_BLOCKED: &str = "TOOL_BLOCKED";
    /// A hook listener (or a tool callback) failed; the failure became this result.
    pub const HOOK_FAILED: &str = "HOOK_FAILED";
    /// A tool body panicked.
    pub const TOOL_PANICKED: &str = "TOOL_PANICKED";
}

/// The `{name, code}` pair recorded as a `tool/result` event's `error`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    pub name: String,
    pub code: String,
}

/// What a tool body (or a hook) reports instead of a value. The model sees
/// `Error: <message>`; `info` is kept for the log and for programs reading it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ToolFailure {
    pub message: String,
    pub info: Option<ErrorInfo>,
}

impl ToolFailure {
    /// A failure without a machine-readable code.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            info: None,
        }
    }

    /// A failure with an error class name and a stable code.
    pub fn coded(
        name: impl Into<String>,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            message: message.into(),
            info: Some(ErrorInfo {
                name: name.into(),
                code: code.into(),
            }),
        }
    }

    /// The stable code, when there is one.
    pub fn code(&self) -> Option<&str> {
        self.info.as_ref().map(|info| info.code.as_str())
    }

    pub(crate) fn unknown_tool(name: &str) -> Self {
        Self::coded(
            "ToolNotFoundError",
            codes::UNKNOWN_TOOL,
            format!("unknown tool \"{name}\""),
        )
    }

    pub(crate) fn invalid_arguments(message: String) -> Self {
        Self::coded(
            "InvalidToolArgumentsError",
            codes::INVALID_TOOL_ARGUMENTS,
            message,
        )
    }

    pub(crate) fn aborted() -> Self {
        Self::coded("AbortError", codes::ABORTED, "tool call aborted")
    }

    pub(crate) fn aborted_before_dispatch() -> Self {
        Self::coded(
            "AbortError",
            codes::ABORTED_BEFORE_DISPATCH,
            "tool call aborted before dispatch",
        )
    }

    pub(crate) fn denied(reason: String) -> Self {
        Self::coded("ToolDeniedError", codes::TOOL_DENIED, reason)
    }

    pub(crate) fn hook_failed(stage: &str, error: &dyn std::fmt::Display) -> Self {
        Self::coded(
            "HookError",
            codes::HOOK_FAILED,
            format!("{stage} hook failed: {error}"),
        )
    }
}

/// Why a registration, restriction or guard was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    #[error("invalid tool name {name:?}: use 1-64 characters from [A-Za-z0-9_-]")]
    InvalidName { name: String },
    #[error("tool {name:?} has an unusable parameter schema: {reason}")]
    InvalidParameters { name: String, reason: String },
    #[error("tool {name:?} has a zero timeout; use None for no limit")]
    InvalidTimeout { name: String },
    #[error("tool name {name:?} is reserved")]
    ReservedName { name: String },
    #[error("a tool named {name:?} is already registered in this layer")]
    Duplicate { name: String },
    #[error("restrict() needs a scoped context; the global layer cannot be restricted")]
    UnscopedRestriction,
    #[error("cannot restrict unknown tool {name:?}")]
    UnknownTool { name: String },
    #[error(transparent)]
    Kernel(#[from] KernelError),
}

impl RegistryError {
    /// A stable code for logs and programs.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidName { .. } => "INVALID_TOOL_NAME",
            Self::InvalidParameters { .. } => "INVALID_TOOL_SCHEMA",
            Self::InvalidTimeout { .. } => "INVALID_TOOL_TIMEOUT",
            Self::ReservedName { .. } => "RESERVED_TOOL_NAME",
            Self::Duplicate { .. } => "DUPLICATE_TOOL",
            Self::UnscopedRestriction => "UNSCOPED_RESTRICTION",
            Self::UnknownTool { .. } => codes::UNKNOWN_TOOL,
            Self::Kernel(error) => error.code(),
        }
    }
}
