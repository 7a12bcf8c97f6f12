//! Crash repair: deterministic closers for a turn a crash left open.
//!
//! A model provider refuses a history where an assistant tool call has no result, and the
//! loop refuses to resume inside an open turn, so a reloaded log whose last turn is open
//! gets: an error result for every call still pending (in the order the assistant asked for
//! them), a `step/end` if a step is open, and `turn/end {interrupted}`. Seqs continue the log
//! and every closer reuses the last event's time, so repairing twice gives the same events.

use crate::event::{EventData, SessionEvent, SurfaceOp};
use crate::vocabulary::{StepBoundary, ToolErrorInfo, ToolResult, TurnEnd, TurnEndReason};
use dsh_protocol::{CallId, ContentBlock, Message, MessageId, MessageSource, Role};
use std::sync::Arc;

/// Error code of a call that was recorded as started but has no recorded outcome.
pub const TOOL_OUTCOME_UNKNOWN: &str = "TOOL_OUTCOME_UNKNOWN";
/// Error code of a call the assistant asked for that never started.
pub const TOOL_NOT_STARTED: &str = "TOOL_NOT_STARTED";

/// Model-visible text of a [`TOOL_OUTCOME_UNKNOWN`] result (wire text of the format).
pub const TOOL_OUTCOME_UNKNOWN_TEXT: &str = "The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly.";
/// Model-visible text of a [`TOOL_NOT_STARTED`] result (wire text of the format).
pub const TOOL_NOT_STARTED_TEXT: &str =
    "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed.";

struct PendingCall {
    id: CallId,
    step: u64,
    call_seq: Option<u64>,
}

/// The events that close the open tail turn of `events` (a log in seq order); empty when
/// the log is empty or balanced.
pub fn interrupted_turn_closers(events: &[Arc<SessionEvent>]) -> Vec<SessionEvent> {
    let mut open_turn: Option<u64> = None;
    let mut open_step: Option<u64> = None;
    // Insertion-ordered; re-registering an id keeps its place but forgets its call seq.
    let mut pending: Vec<PendingCall> = Vec::new();
    // A turn boundary resets everything below, so only the events from the last one on
    // can leave a turn open: a long log is not walked from its start.
    let last_boundary = events
        .iter()
        .rposition(|e| matches!(e.data, EventData::TurnStart(_) | EventData::TurnEnd(_)))
        .unwrap_or(0);
    for event in &events[last_boundary..] {
        match &event.data {
            EventData::TurnStart(t) => {
                open_turn = Some(t.turn);
                open_step = None;
                pending.clear();
            }
            EventData::TurnEnd(_) => {
                open_turn = None;
                open_step = None;
                pending.clear();
            }
            EventData::StepStart(s) => open_step = Some(s.step),
            EventData::StepEnd(_) => {
                open_step = None;
                pending.clear();
            }
            EventData::AssistantMessage(a) => {
                for (id, _, _) in a.message.tool_calls() {
                    match pending.iter_mut().find(|p| &p.id == id) {
                        Some(p) => {
                            p.step = a.step;
                            p.call_seq = None;
                        }
                        None => pending.push(PendingCall {
                            id: id.clone(),
                            step: a.step,
                            call_seq: None,
                        }),
                    }
                }
            }
            EventData::ToolCall(c) => {
                if let Some(p) = pending.iter_mut().find(|p| p.id == c.call_id) {
                    p.call_seq = Some(event.seq);
                }
            }
            EventData::ToolResult(r) => {
                if let MessageSource::Tool { call_id } = &r.message.source {
                    pending.retain(|p| &p.id != call_id);
                }
            }
            _ => {}
        }
    }
    let (Some(turn), Some(last)) = (open_turn, events.last()) else {
        return Vec::new();
    };
    let time = last.time;
    let mut seq = last.seq + 1;
    let mut closers = Vec::with_capacity(pending.len() + 2);
    for call in pending {
        let started = call.call_seq.is_some();
        let (text, name, code) = if started {
            (
                TOOL_OUTCOME_UNKNOWN_TEXT,
                "ToolOutcomeUnknownError",
                TOOL_OUTCOME_UNKNOWN,
            )
        } else {
            (
                TOOL_NOT_STARTED_TEXT,
                "ToolNotStartedError",
                TOOL_NOT_STARTED,
            )
        };
        let message = Message {
            id: MessageId::new(format!("interrupted-tool-result-{}-{seq}", call.id)),
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_call_id: call.id.clone(),
                content: vec![ContentBlock::text(text)],
                is_error: Some(true),
            }],
            source: MessageSource::Tool { call_id: call.id },
        };
        closers.push(SessionEvent {
            seq,
            time,
            data: EventData::ToolResult(ToolResult {
                turn,
                step: call.step,
                message: Arc::new(message),
                error: Some(ToolErrorInfo {
                    name: name.into(),
                    code: code.into(),
                }),
                meta: None,
            }),
            ignorable: false,
            surface_op: Some(SurfaceOp::Append),
            source_event_seqs: call.call_seq.map(|s| vec![s]),
        });
        seq += 1;
    }
    if let Some(step) = open_step {
        closers.push(closer(
            seq,
            time,
            EventData::StepEnd(StepBoundary { turn, step }),
        ));
        seq += 1;
    }
    closers.push(closer(
        seq,
        time,
        EventData::TurnEnd(TurnEnd {
            turn,
            reason: TurnEndReason::Interrupted,
        }),
    ));
    closers
}

fn closer(seq: u64, time: u64, data: EventData) -> SessionEvent {
    SessionEvent {
        seq,
        time,
        data,
        ignorable: false,
        surface_op: None,
        source_event_seqs: None,
    }
}
