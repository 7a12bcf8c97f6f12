//! The approval vocabulary of the session log, how to write it and how to fold it back.
//!
//! Everything approval remembers lives in the log: the policy (`approval/policy`), each
//! question (`approval/asked`) and each answer (`approval/decided`, whose `remembered` is the
//! session grant an "allow for this session" created). A resumed session rebuilds its grants
//! and policy from these events, and an ask without an answer is visible as pending.

use std::sync::Arc;

use dsh_session::{AppendOptions, EventData, Session, SessionError, SessionEvent};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::policy::{ApprovalPolicy, PermissionPreset, SessionSafety};
use crate::sandbox::SandboxMode;

pub const APPROVAL_ASKED: &str = "approval/asked";
pub const APPROVAL_DECIDED: &str = "approval/decided";
pub const APPROVAL_POLICY: &str = "approval/policy";
pub const SANDBOX_MODE: &str = "sandbox/mode";
pub const PERMISSION_PRESET: &str = "permission/preset";

/// `approval/asked`: a person was asked whether a call may run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalAsked {
    pub call_id: String,
    pub tool: String,
    /// What the call does, for the prompt (the command, or the path and a short diff summary).
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How an ask was settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecisionKind {
    AllowOnce,
    AllowSession,
    Deny,
    /// The turn was cancelled (or the ask abandoned) before anyone answered; the call did not run.
    Cancelled,
}

/// `approval/decided`: the answer to an ask.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalDecided {
    pub call_id: String,
    pub decision: DecisionKind,
    /// The grant an "allow for this session" created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remembered: Option<SessionGrant>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
}

/// What "allow for this session" covers: one tool, narrowed to a command prefix, an exact
/// command, a path, a host, or (for other tools) the exact arguments.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionGrant {
    pub tool: String,
    #[serde(flatten)]
    pub scope: GrantScope,
}

/// The narrowing part of a [`SessionGrant`] (wire: one camelCase key beside `tool`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum GrantScope {
    /// Simple commands starting with these words.
    CommandPrefix(String),
    /// Exactly this command text.
    Command(String),
    /// This file (workspace-relative, absolute outside the workspace).
    Path(String),
    /// URLs on this host.
    Host(String),
    /// Exactly these raw arguments.
    Arguments(String),
}

impl std::fmt::Display for SessionGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.scope {
            GrantScope::CommandPrefix(prefix) => write!(f, "{} `{prefix} …`", self.tool),
            GrantScope::Command(command) => write!(f, "{} `{command}` (exactly)", self.tool),
            GrantScope::Path(path) => write!(f, "{} {path}", self.tool),
            GrantScope::Host(host) => write!(f, "{} on {host}", self.tool),
            GrantScope::Arguments(_) => write!(f, "{} with these arguments", self.tool),
        }
    }
}

/// An ask that has no answer in the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingApproval {
    /// The seq of the `approval/asked` event.
    pub seq: u64,
    pub asked: ApprovalAsked,
}

fn append(
    session: &Session,
    type_name: &str,
    data: serde_json::Value,
) -> Result<Arc<SessionEvent>, SessionError> {
    session.append(EventData::other(type_name, data), AppendOptions::log_only())
}

fn to_value(value: &impl Serialize) -> serde_json::Value {
    // Plain structs of strings and enums always serialize.
    serde_json::to_value(value).unwrap_or_default()
}

/// Logs `approval/asked`.
pub fn log_asked(
    session: &Session,
    asked: &ApprovalAsked,
) -> Result<Arc<SessionEvent>, SessionError> {
    append(session, APPROVAL_ASKED, to_value(asked))
}

/// Logs `approval/decided`.
pub fn log_decided(
    session: &Session,
    decided: &ApprovalDecided,
) -> Result<Arc<SessionEvent>, SessionError> {
    append(session, APPROVAL_DECIDED, to_value(decided))
}

/// Logs `approval/policy`.
pub fn log_policy(
    session: &Session,
    policy: ApprovalPolicy,
) -> Result<Arc<SessionEvent>, SessionError> {
    append(session, APPROVAL_POLICY, json!({ "policy": policy }))
}

/// Logs `sandbox/mode`.
pub fn log_sandbox_mode(
    session: &Session,
    mode: SandboxMode,
) -> Result<Arc<SessionEvent>, SessionError> {
    append(session, SANDBOX_MODE, json!({ "mode": mode }))
}

/// Logs `permission/preset`.
pub fn log_permission_preset(
    session: &Session,
    preset: PermissionPreset,
) -> Result<Arc<SessionEvent>, SessionError> {
    append(session, PERMISSION_PRESET, json!({ "preset": preset }))
}

/// Logs the safety state a session starts with, in the original's order: `permission/preset`,
/// `sandbox/mode`, `approval/policy`. Also used for a preset switch.
pub fn log_session_safety(session: &Session, safety: &SessionSafety) -> Result<(), SessionError> {
    log_permission_preset(session, safety.preset)?;
    log_sandbox_mode(session, safety.sandbox)?;
    log_policy(session, safety.policy)?;
    Ok(())
}

/// The safety state as the log last recorded it; `None` for knobs never logged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SafetyFold {
    pub preset: Option<PermissionPreset>,
    pub sandbox: Option<SandboxMode>,
    pub policy: Option<ApprovalPolicy>,
}

fn field<T: DeserializeOwned>(event: &SessionEvent, type_name: &str, key: &str) -> Option<T> {
    if event.type_name() != type_name {
        return None;
    }
    match &event.data {
        EventData::Other { data, .. } => serde_json::from_value(data.get(key)?.clone()).ok(),
        _ => None,
    }
}

fn payload<T: DeserializeOwned>(event: &SessionEvent, type_name: &str) -> Option<T> {
    if event.type_name() != type_name {
        return None;
    }
    match &event.data {
        EventData::Other { data, .. } => serde_json::from_value(data.clone()).ok(),
        _ => None,
    }
}

/// The last recorded preset, sandbox mode and approval policy.
pub fn fold_session_safety(events: &[Arc<SessionEvent>]) -> SafetyFold {
    let mut fold = SafetyFold::default();
    for event in events {
        if let Some(preset) = field(event, PERMISSION_PRESET, "preset") {
            fold.preset = Some(preset);
        } else if let Some(mode) = field(event, SANDBOX_MODE, "mode") {
            fold.sandbox = Some(mode);
        } else if let Some(policy) = field(event, APPROVAL_POLICY, "policy") {
            fold.policy = Some(policy);
        }
    }
    fold
}

/// The grants "allow for this session" created, in the order they were made (no repeats).
pub fn fold_session_grants(events: &[Arc<SessionEvent>]) -> Vec<SessionGrant> {
    let mut grants: Vec<SessionGrant> = Vec::new();
    for event in events {
        if let Some(decided) = payload::<ApprovalDecided>(event, APPROVAL_DECIDED) {
            if let Some(grant) = decided.remembered {
                if !grants.contains(&grant) {
                    grants.push(grant);
                }
            }
        }
    }
    grants
}

/// Asks that have no `approval/decided` for their call id, in log order. After a crash these
/// are the questions that were on screen when the process died.
pub fn pending_approvals(events: &[Arc<SessionEvent>]) -> Vec<PendingApproval> {
    let mut pending: Vec<PendingApproval> = Vec::new();
    for event in events {
        if let Some(asked) = payload::<ApprovalAsked>(event, APPROVAL_ASKED) {
            pending.retain(|p| p.asked.call_id != asked.call_id);
            pending.push(PendingApproval {
                seq: event.seq,
                asked,
            });
        } else if let Some(decided) = payload::<ApprovalDecided>(event, APPROVAL_DECIDED) {
            pending.retain(|p| p.asked.call_id != decided.call_id);
        }
    }
    pending
}

/// Closes every pending ask as cancelled (`approval/decided` with `"decision": "cancelled"`),
/// for a resumed session whose calls will not run again. Returns what was closed.
pub fn close_pending_approvals(session: &Session) -> Result<Vec<PendingApproval>, SessionError> {
    let pending = pending_approvals(&session.events());
    for ask in &pending {
        log_decided(
            session,
            &ApprovalDecided {
                call_id: ask.asked.call_id.clone(),
                decision: DecisionKind::Cancelled,
                remembered: None,
                feedback: None,
            },
        )?;
    }
    Ok(pending)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn grants_serialize_as_one_key_beside_the_tool() {
        let grant = SessionGrant {
            tool: "bash".into(),
            scope: GrantScope::CommandPrefix("git status".into()),
        };
        assert_eq!(
            serde_json::to_value(&grant).unwrap(),
            json!({"tool": "bash", "commandPrefix": "git status"})
        );
        let back: SessionGrant =
            serde_json::from_value(json!({"tool": "write", "path": "src/a.rs"})).unwrap();
        assert_eq!(back.scope, GrantScope::Path("src/a.rs".into()));
        assert_eq!(grant.to_string(), "bash `git status …`");
    }

    #[test]
    fn decided_omits_absent_fields() {
        let decided = ApprovalDecided {
            call_id: "c1".into(),
            decision: DecisionKind::AllowOnce,
            remembered: None,
            feedback: None,
        };
        assert_eq!(
            serde_json::to_value(&decided).unwrap(),
            json!({"callId": "c1", "decision": "allow-once"})
        );
    }
}
