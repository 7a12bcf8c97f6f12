//! Invariant 5: every tool call the model made gets one `tool/call` and one `tool/result`.

use super::{turn_outcomes, Invariant, Violation};
use dsh_protocol::{CallId, ContentBlock, Message, MessageSource};
use dsh_session::{EventData, SessionEvent, SurfaceOp, TurnEndReason};
use std::borrow::Borrow;
use std::collections::HashMap;

struct Requested {
    id: CallId,
    name: String,
    arguments: String,
    message_seq: u64,
}

struct LoggedCall {
    id: CallId,
    seq: u64,
    name: String,
    arguments: String,
}

struct LoggedResult {
    id: Option<CallId>,
    seq: u64,
    sources: Option<Vec<u64>>,
}

#[derive(Default)]
struct StepRecord {
    requested: Vec<Requested>,
    calls: Vec<LoggedCall>,
    results: Vec<LoggedResult>,
}

pub(super) fn check<E: Borrow<SessionEvent>>(events: &[E]) -> Vec<Violation> {
    let outcomes = turn_outcomes(events);
    let mut steps: HashMap<(u64, u64), StepRecord> = HashMap::new();
    let mut found = Vec::new();
    for event in events.iter().map(Borrow::borrow) {
        let seq = event.seq;
        match &event.data {
            EventData::AssistantMessage(m) if !m.interrupted => {
                let record = steps.entry((m.turn, m.step)).or_default();
                record
                    .requested
                    .extend(
                        m.message
                            .tool_calls()
                            .map(|(id, name, arguments)| Requested {
                                id: id.clone(),
                                name: name.to_owned(),
                                arguments: arguments.to_owned(),
                                message_seq: seq,
                            }),
                    );
            }
            EventData::ToolCall(c) => {
                steps
                    .entry((c.turn, c.step))
                    .or_default()
                    .calls
                    .push(LoggedCall {
                        id: c.call_id.clone(),
                        seq,
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                    });
            }
            EventData::ToolResult(r)
                if !matches!(event.surface_op, Some(SurfaceOp::Replace { .. })) =>
            {
                steps
                    .entry((r.turn, r.step))
                    .or_default()
                    .results
                    .push(LoggedResult {
                        id: result_call_id(&r.message),
                        seq,
                        sources: event.source_event_seqs.clone(),
                    });
            }
            EventData::StepEnd(s) => {
                if let Some(record) = steps.remove(&(s.turn, s.step)) {
                    evaluate(&record, seq, outcomes.get(&s.turn), &mut found);
                }
            }
            _ => {}
        }
    }
    found
}

fn result_call_id(message: &Message) -> Option<CallId> {
    if let MessageSource::Tool { call_id } = &message.source {
        return Some(call_id.clone());
    }
    message.content.iter().find_map(|block| match block {
        ContentBlock::ToolResult { tool_call_id, .. } => Some(tool_call_id.clone()),
        _ => None,
    })
}

fn evaluate(
    record: &StepRecord,
    step_end: u64,
    outcome: Option<&TurnEndReason>,
    found: &mut Vec<Violation>,
) {
    let mut flag = |seq: u64, message: String| {
        found.push(Violation::at(Invariant::ToolPairing, seq, message));
    };
    // A scheduler failure ends the turn `error` without closing its calls; an open turn may
    // still end that way.
    let may_lack_pairs = matches!(outcome, None | Some(TurnEndReason::Error { .. }));
    // Crash repair answers calls that never logged a `tool/call`, citing nothing.
    let repaired = matches!(outcome, Some(TurnEndReason::Interrupted));
    let requested = |id: &CallId| record.requested.iter().any(|r| &r.id == id);

    for call in record.calls.iter().filter(|c| !requested(&c.id)) {
        flag(
            call.seq,
            format!(
                "tool/call {} was not requested by the step's assistant message",
                call.id
            ),
        );
    }
    for result in &record.results {
        match &result.id {
            Some(id) if requested(id) => {}
            Some(id) => flag(
                result.seq,
                format!(
                    "tool/result {id} answers a call the step's assistant message did not make"
                ),
            ),
            None => flag(result.seq, "tool/result names no call id".into()),
        }
    }

    let mut call_seqs = Vec::new();
    let mut result_seqs = Vec::new();
    for req in &record.requested {
        let calls: Vec<&LoggedCall> = record.calls.iter().filter(|c| c.id == req.id).collect();
        let results: Vec<&LoggedResult> = record
            .results
            .iter()
            .filter(|r| r.id.as_ref() == Some(&req.id))
            .collect();
        if calls.len() > 1 {
            flag(
                calls[1].seq,
                format!("call {} has {} tool/call events", req.id, calls.len()),
            );
        }
        if results.len() > 1 {
            flag(
                results[1].seq,
                format!("call {} has {} tool/result events", req.id, results.len()),
            );
        }
        match (calls.first(), results.first()) {
            (Some(call), Some(result)) => {
                if result.sources.as_deref() != Some(&[call.seq][..]) {
                    flag(
                        result.seq,
                        format!(
                            "tool/result {} cites {:?}, expected [{}] (its tool/call)",
                            req.id, result.sources, call.seq
                        ),
                    );
                }
                call_seqs.push(call.seq);
                result_seqs.push(result.seq);
            }
            (Some(call), None) if !may_lack_pairs => flag(
                call.seq,
                format!(
                    "tool/call {} has no tool/result before step/end (seq {step_end})",
                    req.id
                ),
            ),
            (Some(call), None) => call_seqs.push(call.seq),
            (None, Some(result)) if repaired && result.sources.is_none() => {
                result_seqs.push(result.seq);
            }
            (None, Some(result)) => flag(
                result.seq,
                format!("tool/result {} has no tool/call in its step", req.id),
            ),
            (None, None) if !may_lack_pairs => flag(
                step_end,
                format!(
                    "tool call {} requested at seq {} got neither tool/call nor tool/result",
                    req.id, req.message_seq
                ),
            ),
            (None, None) => {}
        }
        if let Some(call) = calls.first() {
            if call.name != req.name || call.arguments != req.arguments {
                flag(
                    call.seq,
                    format!(
                        "tool/call {} logs {}({}) but the model asked for {}({})",
                        req.id, call.name, call.arguments, req.name, req.arguments
                    ),
                );
            }
        }
    }
    for (kind, seqs) in [("tool/call", &call_seqs), ("tool/result", &result_seqs)] {
        if let Some(pair) = seqs.windows(2).find(|w| w[0] > w[1]) {
            flag(
                pair[0],
                format!(
                    "{kind} events are not in model order (seq {} comes before seq {} in the assistant message)",
                    pair[0], pair[1]
                ),
            );
        }
    }
}
