//! Payload rules shared by `append` and seed construction.
//!
//! One rule set for both paths means any log the session accepts live can be constructed
//! again from its events (resume, fork), which is what makes the log the truth.
//!
//! Lossless checks walk only the parts of a payload that can hold a value JSON text cannot
//! carry (free-form JSON and floats), so a small event is checked in a few nanoseconds.

use crate::error::SessionError;
use crate::event::EventData;
use crate::event_types as types;
use crate::plugin_event::declared_event_type;
use crate::vocabulary::TurnEndReason;
use dsh_protocol::json::{check_lossless, LosslessError};
use dsh_protocol::{ContentBlock, Message, MessageShape, MessageSource, StreamChunk};
use serde_json::Value;
use std::any::TypeId;

/// Largest integer JavaScript readers of the log can hold exactly.
pub(crate) const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// JSON equality where numbers compare by value (`1` equals `1.0`), as they do for the
/// JavaScript writers and readers of the format; object key order is irrelevant.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if x.is_f64() || y.is_f64() {
                x.as_f64() == y.as_f64()
            } else {
                x == y
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// How an event reaches a log, which decides which rules of a plugin declaration run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// [`Session::append`](crate::Session::append) of raw data: every rule.
    Append,
    /// [`Session::append_typed`](crate::Session::append_typed): the payload type's own rules
    /// already ran on the typed value.
    Typed(TypeId),
    /// A constructor seed (a stored log, a fork prefix): a declaration's rules run only when
    /// it asks for that ([`PluginEvent::CHECK_STORED`](crate::PluginEvent::CHECK_STORED)).
    Seed,
}

/// Checks one event before it may enter a log: reserved and legacy types, lossless JSON, the
/// per-type shape rules, plugin declarations, and that a required type is known.
pub(crate) fn check_event(
    data: &EventData,
    ignorable: bool,
    admission: Admission,
) -> Result<(), SessionError> {
    match data {
        EventData::Other { type_name, data } => check_other(type_name, data, ignorable, admission),
        core => check_core(core),
    }
}

/// A type outside the core: carried verbatim, checked against its declaration if one is
/// registered, and refused when required but unknown, since a reader that skipped it
/// would rebuild a wrong session.
fn check_other(
    type_name: &str,
    data: &Value,
    ignorable: bool,
    admission: Admission,
) -> Result<(), SessionError> {
    if type_name.is_empty() {
        return Err(SessionError::data(
            type_name,
            "event type must not be empty",
        ));
    }
    if type_name == types::LEGACY_REQUEST_HEADER_DELTA {
        return Err(SessionError::LegacyFormat {
            type_name: type_name.to_owned(),
            detail: "header deltas were replaced by full request/header snapshots".into(),
        });
    }
    if types::is_core_event_type(type_name) {
        return Err(SessionError::data(
            type_name,
            "this type has a typed payload; build it with its EventData variant",
        ));
    }
    check_lossless(data).map_err(|e| SessionError::data(type_name, e.to_string()))?;
    let declaration = declared_event_type(type_name);
    if let Some(declaration) = declaration {
        let run = match admission {
            Admission::Append => true,
            Admission::Typed(rust_type) => declaration.rust_type() != rust_type,
            Admission::Seed => declaration.checks_stored(),
        };
        if run {
            declaration.check(data)?;
        }
    }
    if !ignorable && declaration.is_none() && !types::is_original_plugin_event_type(type_name) {
        return Err(SessionError::UnknownEventType {
            type_name: type_name.to_owned(),
        });
    }
    Ok(())
}

/// The shape rules of the core types.
fn check_core(data: &EventData) -> Result<(), SessionError> {
    let type_name = data.type_name();
    let lossless =
        |r: Result<(), LosslessError>| r.map_err(|e| SessionError::data(type_name, e.to_string()));
    match data {
        EventData::Other { .. } => Ok(()),
        EventData::UserMessage(m) => message(type_name, m, MessageShape::User),
        EventData::AssistantMessage(a) => message(type_name, &a.message, MessageShape::Assistant),
        EventData::ToolResult(r) => {
            message(type_name, &r.message, MessageShape::ToolResult)?;
            if let Some(meta) = &r.meta {
                lossless(meta.check_lossless())?;
            }
            Ok(())
        }
        EventData::InboxSpliced(s) => {
            for m in &s.inserted {
                message(type_name, m, MessageShape::User)?;
            }
            Ok(())
        }
        EventData::AssistantChunk(c) => match &c.chunk {
            StreamChunk::BlockEnd { block, .. } => lossless(block_lossless(block)),
            StreamChunk::Finish {
                replay_state: Some(state),
                ..
            } => lossless(check_lossless(state)),
            _ => Ok(()),
        },
        EventData::RequestHeader(h) => {
            let config = &h.header.config;
            if config.provider.is_empty() || config.model.is_empty() {
                return Err(SessionError::data(
                    type_name,
                    "header config lacks provider/model",
                ));
            }
            if config.reasoning_effort.as_deref() == Some("") {
                return Err(SessionError::data(
                    type_name,
                    "reasoningEffort must not be empty",
                ));
            }
            if let Some(t) = config.temperature {
                lossless(float(t))?;
            }
            for tool in h.header.tools.iter().flatten() {
                lossless(check_lossless(&tool.parameters))?;
            }
            Ok(())
        }
        EventData::LlmRetry(r) => lossless(float(r.delay_ms)),
        EventData::TurnEnd(t) => match &t.reason {
            TurnEndReason::Other(map) => {
                if map.get("kind").and_then(Value::as_str).is_none() {
                    return Err(SessionError::data(
                        type_name,
                        "turn/end reason needs a kind",
                    ));
                }
                lossless(check_lossless(&Value::Object(map.clone())))
            }
            _ => Ok(()),
        },
        EventData::TurnStart(_)
        | EventData::StepStart(_)
        | EventData::StepEnd(_)
        | EventData::ToolCall(_)
        | EventData::TodoWrite(_)
        | EventData::RequestContext(_)
        | EventData::EndSeed
        | EventData::LlmRetryStarted(_) => Ok(()),
    }
}

fn message(type_name: &str, m: &Message, shape: MessageShape) -> Result<(), SessionError> {
    m.check_shape(shape)
        .map_err(|reason| SessionError::data(type_name, reason))?;
    message_lossless(m).map_err(|e| SessionError::data(type_name, e.to_string()))
}

fn message_lossless(m: &Message) -> Result<(), LosslessError> {
    match &m.source {
        MessageSource::User { extra } | MessageSource::Plugin { extra, .. } => map_lossless(extra)?,
        MessageSource::Model {
            replay_state: Some(state),
            ..
        } => check_lossless(state)?,
        MessageSource::Other(map) => map_lossless(map)?,
        _ => {}
    }
    m.content.iter().try_for_each(block_lossless)
}

fn block_lossless(block: &ContentBlock) -> Result<(), LosslessError> {
    match block {
        ContentBlock::Image { attachment } => check_lossless(attachment),
        ContentBlock::ToolResult { content, .. } => content.iter().try_for_each(block_lossless),
        ContentBlock::Other(map) => map_lossless(map),
        _ => Ok(()),
    }
}

fn map_lossless(map: &serde_json::Map<String, Value>) -> Result<(), LosslessError> {
    map.values().try_for_each(check_lossless)
}

fn float(f: f64) -> Result<(), LosslessError> {
    let reason = if !f.is_finite() {
        "non-finite number"
    } else if f == 0.0 && f.is_sign_negative() {
        "negative zero"
    } else {
        return Ok(());
    };
    Err(LosslessError {
        path: String::new(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_compare_by_value_and_objects_ignore_order() {
        assert!(json_eq(
            &json!({"a": 1, "b": [2.0]}),
            &json!({"b": [2], "a": 1.0})
        ));
        assert!(!json_eq(&json!({"a": 1}), &json!({"a": 1, "b": null})));
        assert!(!json_eq(&json!([1, 2]), &json!([2, 1])));
    }

    #[test]
    fn tool_result_meta_is_checked_for_lossless_numbers() {
        let result = |meta: &str| {
            let text = format!(
                r#"{{"turn":1,"step":1,"message":{{"id":"m","role":"user","content":[{{"type":"tool-result","toolCallId":"c","content":[]}}],"source":{{"kind":"tool","callId":"c"}}}},"meta":{meta}}}"#
            );
            EventData::ToolResult(serde_json::from_str(&text).unwrap())
        };
        assert!(check_core(&result(r#"{"lines":["-0"],"n":[1,-2.5,0]}"#)).is_ok());
        let err = check_core(&result(r#"{"x":{"y":-0.0}}"#)).unwrap_err();
        assert_eq!(err.code(), "INVALID_EVENT_DATA");
        assert!(err.to_string().contains("/x/y"), "{err}");
    }

    #[test]
    fn non_finite_and_negative_zero_floats_are_refused() {
        assert!(float(f64::NAN).is_err());
        assert!(float(f64::INFINITY).is_err());
        assert!(float(-0.0).is_err());
        assert!(float(0.5).is_ok());
    }
}
