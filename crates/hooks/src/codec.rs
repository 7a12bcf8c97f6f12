//! What one hook's exit status and output mean.
//!
//! Exit 2 blocks, with trimmed stderr as the reason, and stdout is not read. Exit 0 with
//! stdout starting `{` is a JSON decision. Any other exit, a kill, or exit 0 with other
//! stdout decides nothing — except that plain stdout on exit 0 of `SessionStart` and
//! `UserPromptSubmit` is context for the model, as in Claude Code and Codex.

use crate::event::HookEvent;
use serde_json::{Map, Value};

/// A single hook's decision, as it wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawDecision {
    Approve,
    Allow,
    Block,
    Deny,
    Ask,
}

impl RawDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Allow => "allow",
            Self::Block => "block",
            Self::Deny => "deny",
            Self::Ask => "ask",
        }
    }

    /// deny/block 3, ask 2, allow/approve 1.
    pub fn rank(self) -> u8 {
        match self {
            Self::Block | Self::Deny => 3,
            Self::Ask => 2,
            Self::Approve | Self::Allow => 1,
        }
    }
}

/// What one hook said.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HookOutcome {
    pub decision: Option<RawDecision>,
    pub reason: Option<String>,
    /// `continue: false`.
    pub stop: bool,
    pub stop_reason: Option<String>,
    pub system_message: Option<String>,
    pub additional_context: Option<String>,
    /// `hookSpecificOutput.hookEventName`, whatever it was.
    pub hook_event_name: Option<String>,
    pub updated_input: Option<Value>,
}

impl HookOutcome {
    /// The `decision` of a `hook/result` record.
    pub fn record_decision(&self) -> &'static str {
        match (self.decision, self.stop) {
            (Some(decision), _) => decision.as_str(),
            (None, true) => "stop",
            (None, false) => "pass",
        }
    }
}

/// Decodes one run. `exit_code` is `None` for a kill, a timeout or a failure to start.
pub fn decode(event: HookEvent, exit_code: Option<i32>, stdout: &str, stderr: &str) -> HookOutcome {
    let stdout = stdout.trim();
    let stderr = stderr.trim();
    let mut outcome = HookOutcome::default();
    match exit_code {
        Some(2) => {
            outcome.decision = Some(RawDecision::Block);
            outcome.reason = non_empty(stderr);
        }
        Some(0) => {
            let json = stdout
                .starts_with('{')
                .then(|| serde_json::from_str::<Value>(stdout).ok())
                .flatten();
            match json {
                Some(Value::Object(object)) => read_json(event, &object, &mut outcome),
                _ if takes_plain_context(event) => {
                    outcome.additional_context = non_empty(stdout);
                }
                _ => {}
            }
        }
        _ => {}
    }
    outcome
}

fn takes_plain_context(event: HookEvent) -> bool {
    matches!(event, HookEvent::SessionStart | HookEvent::UserPromptSubmit)
}

fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}

fn string(object: &Map<String, Value>, key: &str) -> Option<String> {
    object.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn read_json(event: HookEvent, object: &Map<String, Value>, outcome: &mut HookOutcome) {
    outcome.stop = object.get("continue") == Some(&Value::Bool(false));
    outcome.stop_reason = string(object, "stopReason");
    outcome.system_message = string(object, "systemMessage");
    outcome.decision = match object.get("decision").and_then(Value::as_str) {
        Some("approve") => Some(RawDecision::Approve),
        Some("block") => Some(RawDecision::Block),
        _ => None,
    };
    outcome.reason = string(object, "reason");
    let Some(specific) = object.get("hookSpecificOutput").and_then(Value::as_object) else {
        return;
    };
    outcome.hook_event_name = string(specific, "hookEventName");
    if outcome.hook_event_name.as_deref() != Some(event.as_str()) {
        return;
    }
    match specific.get("permissionDecision").and_then(Value::as_str) {
        Some("allow") => outcome.decision = Some(RawDecision::Allow),
        Some("deny") => outcome.decision = Some(RawDecision::Deny),
        Some("ask") => outcome.decision = Some(RawDecision::Ask),
        _ => {}
    }
    if let Some(reason) = string(specific, "permissionDecisionReason") {
        outcome.reason = Some(reason);
    }
    if let Some(context) = string(specific, "additionalContext") {
        outcome.additional_context = Some(context);
    }
    outcome.updated_input = specific
        .get("updatedInput")
        .filter(|v| v.is_object())
        .cloned();
}
