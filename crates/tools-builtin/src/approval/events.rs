//! The approval vocabulary of the session log, how to write it and how to fold it back.
//!
//! Everything approval remembers lives in the log: the policy (`approval/policy`), each
//! question (`approval/asked`) and each answer (`approval/decided`, whose `remembered` is the
//! session grant an "allow for this session" created). A resumed session rebuilds its grants
//! and policy from these events, and an ask without an answer is visible as pending.
//!
//! Each event is a [`PluginEvent`] declared here, the crate that owns its meaning: writers
//! append the typed payload, readers decode it (`event.decode::<ApprovalDecided>()`), and
//! [`EVENT_TYPES`] is what a binary registers so raw appends of these types are validated.
//! The names are also the original's, so logs holding them load without the registration;
//! their stored records are not re-checked on load (`CHECK_STORED` stays off), because the
//! original's answers use other words (`allowed-once`, `rejected`, ...) and its other records
//! need not match these shapes — such a record simply does not decode, and the folds below
//! skip it. Fields the original adds (the `source` of a
//! delegated child's `approval/policy`) are ignored on decode and kept in the log.

use std::sync::Arc;

use dsh_session::{EventDeclaration, PluginEvent, Session, SessionError, SessionEvent};
use serde::{Deserialize, Serialize};

use super::policy::{ApprovalPolicy, PermissionPreset, SessionSafety};
use crate::sandbox::SandboxMode;

/// The approval event types, for `dsh_session::register_event_types`.
pub static EVENT_TYPES: &[EventDeclaration] = &[
    EventDeclaration::of::<ApprovalAsked>(),
    EventDeclaration::of::<ApprovalDecided>(),
    EventDeclaration::of::<ApprovalPolicySet>(),
    EventDeclaration::of::<SandboxModeSet>(),
    EventDeclaration::of::<PermissionPresetSet>(),
];

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
    /// Set when the call asks to run outside its sandbox mode (a bash escalation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<SandboxEscalation>,
}

/// A request to run one command in a wider sandbox mode, as the person is shown it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxEscalation {
    /// The mode the call would run in without approval.
    pub from: SandboxMode,
    /// The mode it asks for.
    pub mode: SandboxMode,
    /// The model's reason, verbatim.
    pub justification: String,
}

impl PluginEvent for ApprovalAsked {
    const TYPE: &'static str = "approval/asked";
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

impl DecisionKind {
    /// The wire name (`allow-once`, `allow-session`, `deny`, `cancelled`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AllowOnce => "allow-once",
            Self::AllowSession => "allow-session",
            Self::Deny => "deny",
            Self::Cancelled => "cancelled",
        }
    }
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

impl PluginEvent for ApprovalDecided {
    const TYPE: &'static str = "approval/decided";

    /// A session grant exists exactly when the answer was "allow for this session": resume
    /// rebuilds grants from `remembered`, so a grant on any other answer would widen what
    /// runs unasked.
    fn validate(&self) -> Result<(), String> {
        match (self.decision, &self.remembered) {
            (DecisionKind::AllowSession, None) => {
                Err("an allow-session decision must name the grant it remembers".into())
            }
            (decision, Some(_)) if decision != DecisionKind::AllowSession => Err(format!(
                "only allow-session remembers a grant, not {}",
                decision.as_str()
            )),
            _ => Ok(()),
        }
    }
}

/// `approval/policy`: the session's approval policy from here on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalPolicySet {
    pub policy: ApprovalPolicy,
}

impl PluginEvent for ApprovalPolicySet {
    const TYPE: &'static str = "approval/policy";
}

/// `sandbox/mode`: the session's sandbox mode from here on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxModeSet {
    pub mode: SandboxMode,
}

impl PluginEvent for SandboxModeSet {
    const TYPE: &'static str = "sandbox/mode";
}

/// `permission/preset`: the preset the session's knobs were last set from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionPresetSet {
    pub preset: PermissionPreset,
}

impl PluginEvent for PermissionPresetSet {
    const TYPE: &'static str = "permission/preset";
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

/// Logs `approval/asked`.
pub fn log_asked(
    session: &Session,
    asked: &ApprovalAsked,
) -> Result<Arc<SessionEvent>, SessionError> {
    session.append_typed(asked)
}

/// Logs `approval/decided`.
pub fn log_decided(
    session: &Session,
    decided: &ApprovalDecided,
) -> Result<Arc<SessionEvent>, SessionError> {
    session.append_typed(decided)
}

/// Logs `approval/policy`.
pub fn log_policy(
    session: &Session,
    policy: ApprovalPolicy,
) -> Result<Arc<SessionEvent>, SessionError> {
    session.append_typed(&ApprovalPolicySet { policy })
}

/// Logs `sandbox/mode`.
pub fn log_sandbox_mode(
    session: &Session,
    mode: SandboxMode,
) -> Result<Arc<SessionEvent>, SessionError> {
    session.append_typed(&SandboxModeSet { mode })
}

/// Logs `permission/preset`.
pub fn log_permission_preset(
    session: &Session,
    preset: PermissionPreset,
) -> Result<Arc<SessionEvent>, SessionError> {
    session.append_typed(&PermissionPresetSet { preset })
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

/// The event as `T`, if it is one and decodes (records shaped by another writer are skipped).
fn decoded<T: PluginEvent>(event: &SessionEvent) -> Option<T> {
    event.decode::<T>()?.ok()
}

/// The last recorded preset, sandbox mode and approval policy.
pub fn fold_session_safety(events: &[Arc<SessionEvent>]) -> SafetyFold {
    let mut fold = SafetyFold::default();
    for event in events {
        if let Some(PermissionPresetSet { preset }) = decoded(event) {
            fold.preset = Some(preset);
        } else if let Some(SandboxModeSet { mode }) = decoded(event) {
            fold.sandbox = Some(mode);
        } else if let Some(ApprovalPolicySet { policy }) = decoded(event) {
            fold.policy = Some(policy);
        }
    }
    fold
}

/// The grants "allow for this session" created, in the order they were made (no repeats).
pub fn fold_session_grants(events: &[Arc<SessionEvent>]) -> Vec<SessionGrant> {
    let mut grants: Vec<SessionGrant> = Vec::new();
    for event in events {
        if let Some(decided) = decoded::<ApprovalDecided>(event) {
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
        if let Some(asked) = decoded::<ApprovalAsked>(event) {
            pending.retain(|p| p.asked.call_id != asked.call_id);
            pending.push(PendingApproval {
                seq: event.seq,
                asked,
            });
        } else if let Some(decided) = decoded::<ApprovalDecided>(event) {
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
    use serde_json::json;

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

    #[test]
    fn decision_names_are_the_wire_names() {
        for kind in [
            DecisionKind::AllowOnce,
            DecisionKind::AllowSession,
            DecisionKind::Deny,
            DecisionKind::Cancelled,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), json!(kind.as_str()));
        }
    }

    #[test]
    fn only_allow_session_remembers_a_grant() {
        let grant = SessionGrant {
            tool: "bash".into(),
            scope: GrantScope::Command("ls".into()),
        };
        let decided = |decision, remembered| ApprovalDecided {
            call_id: "c".into(),
            decision,
            remembered,
            feedback: None,
        };
        assert!(decided(DecisionKind::AllowSession, Some(grant.clone()))
            .validate()
            .is_ok());
        assert!(decided(DecisionKind::AllowOnce, None).validate().is_ok());
        assert!(decided(DecisionKind::AllowSession, None)
            .validate()
            .is_err());
        assert!(decided(DecisionKind::Deny, Some(grant)).validate().is_err());
    }
}
