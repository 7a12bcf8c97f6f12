//! The coding tools, the sandbox that confines them, secret scrubbing, and approval.
//!
//! Each tool is a unit struct implementing `dsh_tools::TypedTool` directly: a model-facing
//! name, description and JSON schema, typed arguments with the original parameter names, and
//! an inherent async `run` body that takes the session's [`ToolEnv`] and a cancellation token.
//! The [`ToolEnv`] comes from the execution's extensions or, for a call made for an agent,
//! from [`ToolEnvs`], where the agent's setup registered it for the agent's scope. The
//! [`BuiltinToolsPlugin`] (`tools-builtin`) registers the configured set on the tool runtime
//! and provides [`ToolEnvs`].
//! The [`approval`] module decides which calls a person must allow (under the default `ask`
//! policy: only those that would leave the sandbox) and asks them through the
//! [`ApprovalAnswerer`] seam, including a bash command's request to escalate out of its
//! sandbox mode; [`ApprovalPlugin`] (`approval`) mounts it.
//!
//! | tool | concurrency | module |
//! |---|---|---|
//! | `bash` | exclusive | [`bash`] |
//! | `read`, `write`, `edit` | read parallel, others exclusive | [`fs_tools`] (text through [`WorkspaceFiles`] when a surface installs one) |
//! | `glob`, `grep` | parallel | [`search`] |
//! | `todo_write` | exclusive | [`todo`] |
//! | `web_fetch` | parallel | [`web_fetch`] |
//!
//! Safety is layered: every file tool checks writes against the session's [`SandboxPolicy`]
//! itself (after resolving symlinks), and bash commands are confined by the kernel (Landlock
//! plus a private mount namespace that keeps `.git` read-only), with credentials scrubbed from
//! their environment and known secret values scrubbed from their output.

pub mod approval;
pub mod bash;
mod bash_background;
mod env;
mod envs;
mod error;
pub mod fs_tools;
mod html;
mod lifeline;
mod output;
mod paths;
mod plugin;
mod process;
pub mod sandbox;
pub mod scrub;
pub mod search;
pub mod todo;
mod tool;
pub mod web_fetch;

pub use approval::{
    ApprovalAnswerer, ApprovalDecision, ApprovalPlugin, ApprovalPolicy, ApprovalQuestion,
    ApprovalRule, ApprovalSettings, Approvals, PermissionPreset, SessionSafety,
};
pub use bash::{Bash, BashArgs};
pub use env::{Limits, SessionFacts, ToolEnv, ToolEnvBuilder, WebFetchConfig};
pub use envs::ToolEnvs;
pub use error::{EditCandidate, ToolError};
pub use fs_tools::{Edit, EditArgs, LocalFiles, Read, ReadArgs, WorkspaceFiles, Write, WriteArgs};
pub use plugin::{
    builtin_tool, register_builtin_tools, BuiltinToolsConfig, BuiltinToolsError,
    BuiltinToolsPlugin, ToolSelection, WebFetchSettings, BUILTIN_TOOL_NAMES,
};
pub use sandbox::{SandboxMode, SandboxPolicy, SandboxProbe, UnconfinedFallback};
pub use search::{Glob, GlobArgs, Grep, GrepArgs};
pub use todo::{Todo, TodoStatus, TodoWrite, TodoWriteArgs};
pub use tool::{to_failure, ToolOutput, TOOL_ENV_MISSING};
pub use web_fetch::{WebFetch, WebFetchArgs};
