//! How a child's run ended, read from its own log, and how that reads to its parent.

use dsh_agent::fold_consumed_work;
use dsh_protocol::{ContentBlock, SessionId};
use dsh_session::{EventData, SessionEvent, TurnEndReason};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The outcome of one run (one-shot) or one epoch (continuable) of a child.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    Completed,
    Aborted,
    MaxTokens,
    Refusal,
    Error,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Aborted => "aborted",
            Self::MaxTokens => "max-tokens",
            Self::Refusal => "refusal",
            Self::Error => "error",
        }
    }
}

/// What a child's events since `from` say about how its work ended.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOutcome {
    pub stop: StopReason,
    /// The content of the last non-empty assistant message (text blocks only).
    pub output: Vec<ContentBlock>,
    /// The failure's message, when the turn ended with a model error.
    pub diagnostic: Option<String>,
}

impl RunOutcome {
    /// The output's text blocks joined.
    pub fn text(&self) -> String {
        blocks_text(&self.output)
    }
}

pub(crate) fn blocks_text(blocks: &[ContentBlock]) -> String {
    let mut out = String::new();
    for block in blocks {
        if let ContentBlock::Text { text } = block {
            out.push_str(text);
        }
    }
    out
}

/// Folds a child's own events. `continuable` follows the continuable mapping (an interrupted
/// or absent turn is not a failure there); `cancelled` says the parent cancelled the run.
pub fn fold_outcome(
    events: &[Arc<SessionEvent>],
    continuable: bool,
    cancelled: bool,
) -> RunOutcome {
    let work = fold_consumed_work(events);
    let mut diagnostic = None;
    let mut stop = match work.turn_end.as_ref().map(|t| &t.reason) {
        Some(TurnEndReason::Completed) => StopReason::Completed,
        Some(TurnEndReason::MaxTokens) => StopReason::MaxTokens,
        Some(TurnEndReason::Aborted { .. }) => StopReason::Aborted,
        Some(TurnEndReason::Interrupted) if continuable => StopReason::Aborted,
        Some(TurnEndReason::Blocked) => StopReason::Refusal,
        Some(TurnEndReason::Error { error }) => {
            diagnostic = Some(error.message.clone());
            StopReason::Error
        }
        None if continuable => {
            if work.dropped_unrun {
                StopReason::Aborted
            } else {
                StopReason::Completed
            }
        }
        _ => StopReason::Error,
    };
    if cancelled && stop != StopReason::Completed {
        stop = StopReason::Aborted;
    }
    RunOutcome {
        stop,
        output: last_output(events),
        diagnostic,
    }
}

/// The text of the last assistant message that has any.
fn last_output(events: &[Arc<SessionEvent>]) -> Vec<ContentBlock> {
    events
        .iter()
        .rev()
        .find_map(|event| match &event.data {
            EventData::AssistantMessage(m) => {
                let text: Vec<ContentBlock> = m
                    .message
                    .content
                    .iter()
                    .filter(|b| matches!(b, ContentBlock::Text { text } if !text.is_empty()))
                    .cloned()
                    .collect();
                (!text.is_empty()).then_some(text)
            }
            _ => None,
        })
        .unwrap_or_default()
}

/// The errored result text of a foreground run that did not complete.
pub fn foreground_failure_text(outcome: &RunOutcome) -> String {
    let mut text = match outcome.stop {
        StopReason::Aborted => "subagent run was cancelled".to_owned(),
        StopReason::Error => "subagent run failed".to_owned(),
        StopReason::MaxTokens => "subagent run hit its token limit before finishing".to_owned(),
        StopReason::Refusal => "subagent declined the task".to_owned(),
        StopReason::Completed => "subagent run ended abnormally (completed)".to_owned(),
    };
    if let Some(diagnostic) = &outcome.diagnostic {
        text.push_str("\nDiagnostic: ");
        text.push_str(diagnostic);
    }
    let partial = outcome.text();
    if !partial.is_empty() {
        text.push_str("\nPartial output before the run ended:\n");
        text.push_str(&partial);
    }
    text
}

/// The summary line of a settlement notice.
pub fn settlement_summary(id: &SessionId, stop: StopReason) -> String {
    match stop {
        StopReason::Completed => format!(
            "Background subagent {id} finished and will do no further work unless you send it more."
        ),
        StopReason::Aborted => format!("Background subagent {id} was stopped before it finished."),
        StopReason::MaxTokens => {
            format!("Background subagent {id} ran out of room before it finished.")
        }
        StopReason::Refusal => format!("Background subagent {id} declined the task."),
        StopReason::Error => format!("Background subagent {id} failed before it finished."),
    }
}
