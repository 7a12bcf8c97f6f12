//! A log as one short line per event: the facts loop tests compare, without the noise.
//!
//! A whole-log assertion in JSON (see [`log_json`](super::log_json)) pins every field; an
//! outline pins the order of events and the facts a reader scans for (turn and step
//! numbers, message text, tool names and error codes, citations, splice shapes), so a test
//! of ordering can compare the complete sequence without restating every chunk's payload.

use dsh_protocol::{ContentBlock, Message};
use dsh_session::{EventData, SessionEvent, SurfaceOp, TurnEndReason};
use serde::Serialize;
use serde_json::Value;
use std::borrow::Borrow;

/// One line per event of `events`, in order:
///
/// | event | line |
/// |---|---|
/// | `turn/start`, `turn/end` | `turn/start 1`, `turn/end 1 completed` / `… aborted user` / `… error CODE` |
/// | `step/start`, `step/end` | `step/start 1.2` |
/// | `user/message` | `user: <text>` |
/// | `assistant/chunk` | `chunk <chunk type>` |
/// | `assistant/message` | `assistant: <text> +usage` (`assistant (interrupted): …`) |
/// | `tool/call` | `tool/call <call id> <name> <arguments>` |
/// | `tool/result` | `tool/result <text>` (`ERR ` before error text, ` [CODE]` after) |
/// | `request/header`, `request/context` | `request/header initial`, `request/context <provider>/<model>` |
/// | `agent/inbox/spliced` | `splice <target> @<start> -<removed> +[<texts>]` (` canceled`) |
/// | anything else | its type |
///
/// Every line ends with ` (replace)` for a surface replace and ` cites [seqs]` when the event
/// cites others. Message content renders as its text; reasoning as `(thinking …)`, tool
/// calls as `<call id name>`, other blocks as `<block>`.
pub fn outline<E: Borrow<SessionEvent>>(events: &[E]) -> Vec<String> {
    events.iter().map(|e| line(e.borrow())).collect()
}

fn line(event: &SessionEvent) -> String {
    let cites = event
        .source_event_seqs
        .as_ref()
        .map(|s| format!(" cites {s:?}"))
        .unwrap_or_default();
    let op = match event.surface_op {
        Some(SurfaceOp::Replace { .. }) => " (replace)",
        _ => "",
    };
    let body = match &event.data {
        EventData::TurnStart(t) => format!("turn/start {}", t.turn),
        EventData::TurnEnd(t) => format!("turn/end {} {}", t.turn, reason(&t.reason)),
        EventData::StepStart(s) => format!("step/start {}.{}", s.turn, s.step),
        EventData::StepEnd(s) => format!("step/end {}.{}", s.turn, s.step),
        EventData::UserMessage(m) => format!("user: {}", text_of(m)),
        EventData::AssistantChunk(c) => format!("chunk {}", wire_str(&c.chunk, "type")),
        EventData::AssistantMessage(a) => format!(
            "assistant{}: {}{}",
            if a.interrupted { " (interrupted)" } else { "" },
            text_of(&a.message),
            if a.usage.is_some() { " +usage" } else { "" }
        ),
        EventData::ToolCall(c) => format!("tool/call {} {} {}", c.call_id, c.name, c.arguments),
        EventData::ToolResult(r) => format!(
            "tool/result {}{}",
            text_of(&r.message),
            r.error
                .as_ref()
                .map(|e| format!(" [{}]", e.code))
                .unwrap_or_default()
        ),
        EventData::RequestHeader(h) => format!("request/header {:?}", h.reason).to_lowercase(),
        EventData::RequestContext(c) => format!("request/context {}/{}", c.provider, c.model),
        EventData::InboxSpliced(s) => {
            let inserted: Vec<String> = s.inserted.iter().map(|m| m.text()).collect();
            format!(
                "splice {} @{} -{} +{:?}{}",
                wire(&s.target).as_str().unwrap_or("?"),
                s.start,
                s.removed_count,
                inserted,
                if s.outcome.is_some() { " canceled" } else { "" }
            )
        }
        other => other.type_name().to_owned(),
    };
    format!("{body}{op}{cites}")
}

fn wire<T: Serialize>(value: &T) -> Value {
    // Log vocabulary types serialize infallibly (string keys only).
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn wire_str<T: Serialize>(value: &T, key: &str) -> String {
    wire(value)[key].as_str().unwrap_or("?").to_owned()
}

fn reason(reason: &TurnEndReason) -> String {
    match reason {
        TurnEndReason::Aborted { .. } => {
            format!(
                "aborted {}",
                wire(reason)["reason"]["kind"].as_str().unwrap_or("?")
            )
        }
        TurnEndReason::Error { error } => format!("error {}", error.code),
        _ => wire_str(reason, "kind"),
    }
}

fn text_of(message: &Message) -> String {
    message
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.clone(),
            ContentBlock::Reasoning { text } => format!("(thinking {text})"),
            ContentBlock::ToolCall { id, name, .. } => format!("<call {id} {name}>"),
            ContentBlock::ToolResult {
                content, is_error, ..
            } => {
                let inner: String = content.iter().filter_map(|b| b.as_text()).collect();
                let marker = if *is_error == Some(true) { "ERR " } else { "" };
                format!("{marker}{inner}")
            }
            _ => "<block>".into(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}
