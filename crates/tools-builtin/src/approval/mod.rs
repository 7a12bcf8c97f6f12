//! Approval: which tool calls a person must allow, how they are asked, and what is remembered.
//!
//! - Each session has a policy ([`ApprovalPolicy`]): `untrusted`, `ask` (the default) or
//!   `never`. Under `ask` the sandbox is the boundary: commands and file changes run inside
//!   it unasked, and a person is asked when a call would leave it (an [`escalation`],
//!   or any command while the sandbox is off). `untrusted` asks before every command and
//!   file change except [read-only commands](READ_ONLY_COMMANDS); `never` asks nothing.
//! - Settings hold allow/ask/deny [rules](ApprovalRule) by tool name, bash command prefix or
//!   workspace path glob; a matching deny always wins, then ask, then allow.
//! - Reads and bookkeeping (`read`, `glob`, `grep`, `todo_write`) are asked only by rule;
//!   web fetches are asked under `ask` and `untrusted` (no sandbox confines the network).
//! - [`Approvals`] is the service: its `tools/pre-execute` listener gives the verdict, and it
//!   implements `dsh_tools::ApprovalService`, putting questions to an [`ApprovalAnswerer`]
//!   (the TUI, a web client). Without an answerer, calls that need approval are refused with a
//!   message that says how to allow them; nothing ever waits for a person who is not there.
//! - Every ask and answer is a session event ([`events`]), each a typed `PluginEvent` declared
//!   here ([`EVENT_TYPES`]); grants and policy are rebuilt from the log on resume, and
//!   [`pending_approvals`] finds questions a crash left unanswered.

mod command;
mod controller;
pub mod escalation;
pub mod events;
mod facts;
mod plugin;
mod policy;
mod rules;
mod verdict;

use dsh_protocol::{CallId, SessionId};
use futures_util::future::BoxFuture;

pub use command::{is_read_only_command, READ_ONLY_COMMANDS};
pub use controller::{ApprovalSettings, Approvals};
pub use events::{
    close_pending_approvals, fold_session_grants, fold_session_safety, log_session_safety,
    pending_approvals, ApprovalAsked, ApprovalDecided, ApprovalPolicySet, DecisionKind, GrantScope,
    PendingApproval, PermissionPresetSet, SafetyFold, SandboxEscalation, SandboxModeSet,
    SessionGrant, EVENT_TYPES,
};
pub use plugin::{install_pre_execute, ApprovalPlugin};
pub use policy::{ApprovalPolicy, PermissionPreset, SessionSafety};
pub use rules::{decide, ApprovalRule, CallFacts, RuleAction, RuleError, RuleMatcher};

/// One question for a person: may this call run?
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalQuestion {
    /// The session the call belongs to (an answerer may serve several).
    pub session_id: SessionId,
    pub call_id: CallId,
    pub tool: String,
    /// What the call does: the command, or the path and a short diff summary.
    pub summary: String,
    /// Why it is being asked.
    pub reason: Option<String>,
    /// What "allow for this session" would remember, to show beside that choice; `None`
    /// when the answer cannot be remembered (an escalation covers one call only).
    pub grant: Option<SessionGrant>,
    /// Set when the call asks to leave its sandbox mode: the mode and the model's reason.
    pub escalation: Option<SandboxEscalation>,
}

/// A person's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// Run this call; ask again next time.
    AllowOnce,
    /// Run this call and, for the rest of the session, calls the question's `grant` covers
    /// (only this call when the question has no grant).
    AllowForSession,
    /// Do not run it; the feedback reaches the model in the error result.
    Deny { feedback: Option<String> },
}

/// Whoever answers approval questions (the TUI, a web or ACP client).
///
/// The future is dropped when the turn is cancelled while the question is open; the log then
/// records the ask as cancelled (`approval/decided` with `"decision": "cancelled"`), which is
/// how a surface rendering from session events knows to take the prompt down.
pub trait ApprovalAnswerer: Send + Sync + 'static {
    fn answer(&self, question: ApprovalQuestion) -> BoxFuture<'_, ApprovalDecision>;
}
