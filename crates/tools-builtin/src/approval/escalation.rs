//! Escalation: one bash command run in a wider sandbox mode than its session's, because a
//! person said yes to exactly that run.
//!
//! The model asks by retrying a command the sandbox just denied with `sandbox_permissions`
//! (the wider mode) and a `justification`. The request is judged in this order, and every
//! refusal is a result the model reads, with nothing run:
//! 1. the two fields go together, the mode is one of [`ESCALATION_TARGETS`] and strictly
//!    wider than the call's current mode;
//! 2. the session's policy is not `never` (under `never` the sandbox is fixed);
//! 3. no person rejected escalating this command earlier in the same turn (a rejection is
//!    final);
//! 4. the last run of this exact command in the session was denied by the sandbox (the log
//!    says so: its `tool/result` carries `sandboxDenied`), so a request is never speculative;
//! 5. someone can answer (a headless run cannot).
//!
//! Then the person is asked, seeing the command, the mode and the justification; the
//! `approval/asked` event records all three. An approval covers that one call and is never
//! remembered: the next run of the command is confined again.

use std::sync::Arc;

use dsh_protocol::ContentBlock;
use dsh_session::{EventData, SessionEvent};
use serde_json::Value;

use dsh_tools::ToolExecution;

use super::controller::{Answer, Approvals};
use super::events::{ApprovalAsked, ApprovalDecided, DecisionKind, SandboxEscalation};
use super::facts::CallView;
use super::{ApprovalDecision, ApprovalQuestion};
use crate::error::ToolError;
use crate::sandbox::SandboxMode;

/// The modes a call may escalate to, narrowest first: the bash schema's enum. Whether a
/// target is wider than the call's own mode is checked per call.
pub const ESCALATION_TARGETS: &[SandboxMode] =
    &[SandboxMode::WorkspaceWrite, SandboxMode::DangerFullAccess];

/// How much a mode lets commands write: `read-only` < `workspace-write` <
/// `danger-full-access`. An escalation must go up; a resumed session keeps its recorded
/// mode only when that is not wider than the run's.
pub fn sandbox_reach(mode: SandboxMode) -> u8 {
    match mode {
        SandboxMode::ReadOnly => 0,
        SandboxMode::WorkspaceWrite => 1,
        SandboxMode::DangerFullAccess => 2,
    }
}

/// A well-formed escalation request of one bash call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EscalationRequest {
    /// The mode the command asks to run in.
    pub mode: SandboxMode,
    /// The model's one sentence for the person.
    pub justification: String,
}

impl EscalationRequest {
    /// The request in a bash call's arguments, if it makes one: `Ok(None)` without
    /// `sandbox_permissions`, an error (phrased for the model) when the fields are malformed.
    pub fn from_arguments(args: &Value) -> Result<Option<Self>, String> {
        let field = |name: &str| args.get(name).filter(|v| !v.is_null());
        let (mode, justification) = match (field("sandbox_permissions"), field("justification")) {
            (None, None) => return Ok(None),
            (Some(_), None) => {
                return Err("sandbox_permissions requires a justification".into());
            }
            (None, Some(_)) => {
                return Err("justification is only valid together with sandbox_permissions".into());
            }
            (Some(mode), Some(justification)) => (mode, justification),
        };
        let targets: Vec<&str> = ESCALATION_TARGETS.iter().map(|m| m.as_str()).collect();
        let mode = mode
            .as_str()
            .and_then(|word| word.parse::<SandboxMode>().ok())
            .filter(|mode| ESCALATION_TARGETS.contains(mode))
            .ok_or_else(|| {
                format!(
                    "sandbox_permissions must be one of {}, not {mode}",
                    targets.join(", ")
                )
            })?;
        let justification = justification
            .as_str()
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .ok_or("justification must be a non-empty sentence")?
            .to_owned();
        Ok(Some(Self {
            mode,
            justification,
        }))
    }
}

/// Why an escalation was refused (each is its own `code()` in the call's error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EscalationRefusal {
    /// The fields are malformed, or the mode is not wider than the call's own.
    Invalid,
    /// The policy is `never`: the sandbox is fixed for the session.
    Disabled,
    /// The command's last run was not a sandbox denial: nothing to retry.
    NotARetry,
    /// No one can be asked (a headless run, a call without a session).
    Unavailable,
    /// A person said no, now or earlier in the turn.
    Rejected,
}

impl EscalationRefusal {
    pub fn code(self) -> &'static str {
        match self {
            Self::Invalid => "ESCALATION_INVALID",
            Self::Disabled => "ESCALATION_DISABLED",
            Self::NotARetry => "ESCALATION_NOT_A_RETRY",
            Self::Unavailable => "ESCALATION_UNAVAILABLE",
            Self::Rejected => "ESCALATION_REJECTED",
        }
    }
}

/// What the session's log says about earlier runs of one command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CommandHistory {
    /// The last earlier run of the command (one that has a result) was denied by the sandbox.
    pub last_run_denied: bool,
    /// A person rejected escalating the command earlier in the same turn.
    pub rejected_this_turn: bool,
}

struct Call {
    id: String,
    turn: u64,
    command: Option<String>,
}

impl CommandHistory {
    /// Reads `events` for runs of `command` other than call `current`. The turn is the one
    /// `current`'s `tool/call` belongs to (every turn, when the log has no such call).
    pub fn of(events: &[Arc<SessionEvent>], current: &str, command: &str) -> Self {
        let command = command.trim();
        let mut calls: Vec<Call> = Vec::new();
        let mut denied: Vec<(String, bool)> = Vec::new();
        let mut escalations: Vec<String> = Vec::new();
        let mut rejected: Vec<String> = Vec::new();
        for event in events {
            match &event.data {
                EventData::ToolCall(call) if call.name == crate::bash::Bash::NAME => {
                    calls.push(Call {
                        id: call.call_id.to_string(),
                        turn: call.turn,
                        command: serde_json::from_str::<Value>(&call.arguments)
                            .ok()
                            .and_then(|args| args.get("command")?.as_str().map(str::to_owned)),
                    });
                }
                EventData::ToolResult(result) => {
                    if let Some(id) = result_call_id(&result.message.content) {
                        let flag = result
                            .meta
                            .as_ref()
                            .map(|meta| meta.to_value())
                            .and_then(|meta| meta.get("sandboxDenied")?.as_bool())
                            .unwrap_or(false);
                        denied.push((id, flag));
                    }
                }
                _ => {
                    if let Some(Ok(asked)) = event.decode::<ApprovalAsked>() {
                        if asked.escalation.is_some() {
                            escalations.push(asked.call_id);
                        }
                    } else if let Some(Ok(decided)) = event.decode::<ApprovalDecided>() {
                        if decided.decision == DecisionKind::Deny {
                            rejected.push(decided.call_id);
                        }
                    }
                }
            }
        }
        let turn = calls.iter().find(|c| c.id == current).map(|c| c.turn);
        let same = |call: &&Call| {
            call.id != current && call.command.as_deref().map(str::trim) == Some(command)
        };
        let last_run_denied = calls
            .iter()
            .filter(same)
            .filter_map(|call| denied.iter().find(|(id, _)| *id == call.id))
            .next_back()
            .is_some_and(|(_, flag)| *flag);
        let rejected_this_turn = calls
            .iter()
            .filter(same)
            .filter(|call| turn.is_none_or(|turn| call.turn == turn))
            .any(|call| escalations.contains(&call.id) && rejected.contains(&call.id));
        Self {
            last_run_denied,
            rejected_this_turn,
        }
    }
}

fn result_call_id(content: &[ContentBlock]) -> Option<String> {
    content.iter().find_map(|block| match block {
        ContentBlock::ToolResult { tool_call_id, .. } => Some(tool_call_id.to_string()),
        _ => None,
    })
}

/// Whether a denied command can ask to leave the sandbox, for the line that follows the
/// denial marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Availability {
    /// A person can be asked.
    Available,
    /// The policy is `never`: the sandbox is fixed for the session.
    Fixed,
    /// Nobody can answer approval prompts (a headless run).
    Headless,
    /// No approval service is mounted.
    Unsupported,
}

impl Availability {
    /// The line after `[sandbox: file access denied ...]`, telling the model what it may do.
    pub fn hint(self) -> &'static str {
        match self {
            Self::Available => {
                "[sandbox: escalation available — retry this exact command once with \
                 sandbox_permissions (the narrowest wider mode that suffices) + justification; \
                 the approval prompt asks the user]"
            }
            Self::Fixed => {
                "[sandbox: the sandbox mode is fixed for this session (approval policy never); \
                 the denial is final — do not set sandbox_permissions]"
            }
            Self::Headless => {
                "[sandbox: escalating needs a person's approval and no one can answer approval \
                 prompts in this session; do not set sandbox_permissions — tell the user what \
                 you needed]"
            }
            Self::Unsupported => {
                "[sandbox: escalation is not available in this configuration; the denial is \
                 final — do not set sandbox_permissions]"
            }
        }
    }
}

impl Approvals {
    /// Whether a command the sandbox denied in `exec`'s session could ask to leave it.
    pub(crate) fn escalation_availability(&self, exec: &ToolExecution) -> Availability {
        let Some(caller) = exec.caller() else {
            return Availability::Headless;
        };
        let session = caller.session();
        if !self.policy(session).asks() {
            Availability::Fixed
        } else if self.answerer_for(session).is_none() {
            Availability::Headless
        } else {
            Availability::Available
        }
    }

    /// Judges one bash escalation and, when it may go ahead, asks a person (in the order
    /// the module docs give). `Ok(mode)`: this one call runs in `mode`. Every refusal is
    /// phrased for the model, and nothing has run.
    pub(crate) async fn escalate(
        &self,
        exec: &ToolExecution,
        command: &str,
        current: SandboxMode,
        request: &EscalationRequest,
    ) -> Result<SandboxMode, ToolError> {
        let mode = request.mode;
        let refuse =
            |refusal, message: String| Err(ToolError::EscalationRefused { refusal, message });
        if sandbox_reach(mode) <= sandbox_reach(current) {
            return refuse(
                EscalationRefusal::Invalid,
                format!(
                    "sandbox escalation to \"{mode}\" is not wider than this call's current \
                     \"{current}\" mode; run the command without sandbox_permissions"
                ),
            );
        }
        let Some(caller) = exec.caller() else {
            return refuse(
                EscalationRefusal::Unavailable,
                format!(
                    "sandbox escalation to \"{mode}\" needs a person's approval, but this call \
                     has no session to ask in; the command was not run"
                ),
            );
        };
        let session = caller.session();
        if !self.policy(session).asks() {
            return refuse(
                EscalationRefusal::Disabled,
                format!(
                    "the command was not run: approval prompts are off in this session \
                     (approval policy never), so its \"{current}\" sandbox mode is fixed and \
                     the sandbox's denial is final. Do not set sandbox_permissions again; tell \
                     the user what you needed and why."
                ),
            );
        }
        let history = CommandHistory::of(&session.events(), exec.call_id().as_str(), command);
        if history.rejected_this_turn {
            return refuse(
                EscalationRefusal::Rejected,
                "the command was not run: the user already rejected escalating this command in \
                 this turn, and that is final. Do not retry it or work around it; stop and tell \
                 the user what you needed."
                    .into(),
            );
        }
        if !history.last_run_denied {
            return refuse(
                EscalationRefusal::NotARetry,
                "the command was not run: sandbox_permissions is only valid as a retry of a \
                 command the sandbox just denied in this session, and the last run of this exact \
                 command was not denied. Run it without sandbox_permissions; escalate only if \
                 the sandbox denies it. Never escalate speculatively."
                    .into(),
            );
        }
        let Some(answerer) = self.answerer_for(session) else {
            return refuse(
                EscalationRefusal::Unavailable,
                format!(
                    "the command was not run: running it in the \"{mode}\" sandbox mode needs a \
                     person's approval, and no one can answer approval prompts in this session \
                     (a headless run). Do not retry it; tell the user what you needed and why \
                     (they can rerun with `--sandbox {mode}`, or approve it in the interactive \
                     UI)."
                ),
            );
        };
        let view = CallView::of(exec);
        let escalation = SandboxEscalation {
            from: current,
            mode,
            justification: request.justification.clone(),
        };
        let reason = format!("escalate sandbox to {mode}: {}", request.justification);
        let asked = ApprovalAsked {
            call_id: exec.call_id().to_string(),
            tool: view.tool.clone(),
            summary: view.summary.clone(),
            reason: Some(reason.clone()),
            escalation: Some(escalation.clone()),
        };
        let question = ApprovalQuestion {
            session_id: session.id().clone(),
            call_id: exec.call_id().clone(),
            tool: view.tool,
            summary: view.summary,
            reason: Some(reason),
            grant: None,
            escalation: Some(escalation),
        };
        match self.put(exec, session, answerer, asked, question).await {
            Answer::Decided(ApprovalDecision::Deny { feedback }) => {
                let said = feedback
                    .map(|f| format!(" (they said: {f})"))
                    .unwrap_or_default();
                refuse(
                    EscalationRefusal::Rejected,
                    format!(
                        "the user rejected escalating this command to \"{mode}\"{said}; it was \
                         not run. This is final for this command in this turn: do not retry it \
                         or work around it; explain what you needed."
                    ),
                )
            }
            Answer::Decided(_) => Ok(mode),
            Answer::Cancelled => Err(ToolError::Cancelled),
            Answer::NotRecorded => refuse(
                EscalationRefusal::Unavailable,
                "the command was not run: its approval request could not be recorded".into(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_pair_both_fields_and_name_a_wider_target() {
        let parse = |args: Value| EscalationRequest::from_arguments(&args);
        assert_eq!(parse(json!({"command": "ls"})), Ok(None));
        assert_eq!(
            parse(
                json!({"sandbox_permissions": "danger-full-access", "justification": " needs ~/.cache "})
            ),
            Ok(Some(EscalationRequest {
                mode: SandboxMode::DangerFullAccess,
                justification: "needs ~/.cache".into()
            }))
        );
        for (args, error) in [
            (
                json!({"sandbox_permissions": "workspace-write"}),
                "sandbox_permissions requires a justification",
            ),
            (
                json!({"justification": "x"}),
                "justification is only valid together with sandbox_permissions",
            ),
            (
                json!({"sandbox_permissions": "read-only", "justification": "x"}),
                "sandbox_permissions must be one of workspace-write, danger-full-access, not \"read-only\"",
            ),
            (
                json!({"sandbox_permissions": "workspace-write", "justification": "  "}),
                "justification must be a non-empty sentence",
            ),
        ] {
            assert_eq!(parse(args), Err(error.to_string()));
        }
    }

    #[test]
    fn reach_orders_the_modes() {
        let reach: Vec<u8> = SandboxMode::ALL.iter().map(|m| sandbox_reach(*m)).collect();
        assert_eq!(reach, [0, 1, 2]);
    }
}
