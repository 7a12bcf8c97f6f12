//! Whole-log views: the full JSON with times dropped and random ids numbered, and a
//! compact one-line-per-event outline.

use dsh_protocol::{ContentBlock, Message};
use dsh_session::{EventData, Session, SurfaceOp, TurnEndReason};
use serde_json::Value;
use std::collections::HashMap;

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

fn map_ids(value: &mut Value, ids: &mut HashMap<String, String>) {
    match value {
        Value::String(s) if is_uuid(s) => {
            let n = ids.len() + 1;
            *s = ids
                .entry(s.clone())
                .or_insert_with(|| format!("<id-{n}>"))
                .clone();
        }
        Value::Array(items) => items.iter_mut().for_each(|v| map_ids(v, ids)),
        Value::Object(map) => map.values_mut().for_each(|v| map_ids(v, ids)),
        _ => {}
    }
}

/// The log as JSON: no `time`, random ids as `<id-N>` by first appearance.
pub fn log_json(session: &Session) -> Value {
    let mut ids = HashMap::new();
    let events = session
        .events()
        .iter()
        .map(|event| {
            let mut value = serde_json::to_value(&**event).unwrap();
            value.as_object_mut().unwrap().remove("time");
            map_ids(&mut value, &mut ids);
            value
        })
        .collect();
    Value::Array(events)
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
                let inner: Vec<String> = content
                    .iter()
                    .filter_map(|b| b.as_text().map(str::to_owned))
                    .collect();
                format!(
                    "{}{}",
                    if *is_error == Some(true) { "ERR " } else { "" },
                    inner.join("")
                )
            }
            _ => "<block>".into(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn reason(reason: &TurnEndReason) -> String {
    let value = serde_json::to_value(reason).unwrap();
    match reason {
        TurnEndReason::Aborted { .. } => {
            format!("aborted {}", value["reason"]["kind"].as_str().unwrap())
        }
        TurnEndReason::Error { error } => format!("error {}", error.code),
        _ => value["kind"].as_str().unwrap().to_string(),
    }
}

/// One line per event, with the facts tests care about.
pub fn outline(session: &Session) -> Vec<String> {
    session
        .events()
        .iter()
        .map(|e| {
            let cites = e
                .source_event_seqs
                .as_ref()
                .map(|s| format!(" cites {s:?}"))
                .unwrap_or_default();
            let op = match e.surface_op {
                Some(SurfaceOp::Replace { .. }) => " (replace)",
                _ => "",
            };
            let line = match &e.data {
                EventData::TurnStart(t) => format!("turn/start {}", t.turn),
                EventData::TurnEnd(t) => format!("turn/end {} {}", t.turn, reason(&t.reason)),
                EventData::StepStart(s) => format!("step/start {}.{}", s.turn, s.step),
                EventData::StepEnd(s) => format!("step/end {}.{}", s.turn, s.step),
                EventData::UserMessage(m) => format!("user: {}", text_of(m)),
                EventData::AssistantChunk(c) => {
                    let value = serde_json::to_value(&c.chunk).unwrap();
                    format!("chunk {}", value["type"].as_str().unwrap())
                }
                EventData::AssistantMessage(a) => format!(
                    "assistant{}: {}{}",
                    if a.interrupted { " (interrupted)" } else { "" },
                    text_of(&a.message),
                    if a.usage.is_some() { " +usage" } else { "" }
                ),
                EventData::ToolCall(c) => {
                    format!("tool/call {} {} {}", c.call_id, c.name, c.arguments)
                }
                EventData::ToolResult(r) => format!(
                    "tool/result {}{}",
                    text_of(&r.message),
                    r.error
                        .as_ref()
                        .map(|e| format!(" [{}]", e.code))
                        .unwrap_or_default()
                ),
                EventData::RequestHeader(h) => {
                    format!("request/header {:?}", h.reason).to_lowercase()
                }
                EventData::RequestContext(c) => {
                    format!("request/context {}/{}", c.provider, c.model)
                }
                EventData::InboxSpliced(s) => {
                    let target = serde_json::to_value(s.target).unwrap();
                    let inserted: Vec<String> = s.inserted.iter().map(|m| m.text()).collect();
                    format!(
                        "splice {} @{} -{} +{:?}{}",
                        target.as_str().unwrap(),
                        s.start,
                        s.removed_count,
                        inserted,
                        if s.outcome.is_some() { " canceled" } else { "" }
                    )
                }
                other => other.type_name().to_string(),
            };
            format!("{line}{op}{cites}")
        })
        .collect()
}
