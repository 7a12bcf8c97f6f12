//! The event envelope and its typed payload.
//!
//! A [`SessionEvent`] serializes to the original's envelope
//! `{type, seq, time, data, sourceEventSeqs?, surfaceOp?, ignorable?}`. The `type` comes from
//! the payload ([`EventData::type_name`]); types this build does not know are carried as
//! [`EventData::Other`] with their data untouched.

use crate::error::SessionError;
use crate::event_types as types;
use crate::vocabulary::*;
use dsh_protocol::Message;
use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// One frozen log entry. Shared as `Arc<SessionEvent>` once accepted.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionEvent {
    /// Index in the log, contiguous from 0.
    pub seq: u64,
    /// Epoch milliseconds at acceptance.
    pub time: u64,
    pub data: EventData,
    /// A reader that does not know the type may skip it. Written only when set.
    pub ignorable: bool,
    /// How a message-producing event joins the surface; only on surface types.
    pub surface_op: Option<SurfaceOp>,
    /// The events this one derives from (chunk seqs, the tool/call, shadowed nodes).
    pub source_event_seqs: Option<Vec<u64>>,
}

impl SessionEvent {
    /// The wire `type`.
    pub fn type_name(&self) -> &str {
        self.data.type_name()
    }

    /// Parses one serialized event, with typed errors.
    pub fn from_value(value: &Value) -> Result<Self, SessionError> {
        let raw = RawEnvelope::deserialize(value).map_err(|e| SessionError::InvalidEnvelope {
            reason: e.to_string(),
        })?;
        raw.into_event()
    }

    /// Parses one line of JSON text, with typed errors.
    pub fn from_json(text: &str) -> Result<Self, SessionError> {
        Self::from_json_slice(text.as_bytes())
    }

    /// The message this event contributes to model history, if it is a message event.
    /// (Whether it is *on* the surface is the fold's business.)
    pub fn message(&self) -> Option<&Arc<Message>> {
        match &self.data {
            EventData::UserMessage(m) => Some(m),
            EventData::AssistantMessage(a) => Some(&a.message),
            EventData::ToolResult(r) => Some(&r.message),
            _ => None,
        }
    }
}

/// How a surface event enters the ordered surface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SurfaceOp {
    /// Push onto the tail. Wire: `"append"`.
    Append,
    /// Replace the nodes from `start` to `end` (inclusive, by surface position) with this
    /// event. Wire: `{op: "replace", start, end}`.
    Replace { start: u64, end: u64 },
}

impl Serialize for SurfaceOp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Append => serializer.serialize_str("append"),
            Self::Replace { start, end } => {
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("op", "replace")?;
                map.serialize_entry("start", start)?;
                map.serialize_entry("end", end)?;
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for SurfaceOp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Replace {
            op: String,
            start: u64,
            end: u64,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Name(String),
            Replace(Replace),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Name(name) if name == "append" => Ok(Self::Append),
            Raw::Replace(r) if r.op == "replace" => Ok(Self::Replace {
                start: r.start,
                end: r.end,
            }),
            _ => Err(de::Error::custom(
                "surfaceOp must be \"append\" or {op: \"replace\", start, end}",
            )),
        }
    }
}

/// The typed payload of an event; its variant decides the wire `type`.
#[derive(Clone, Debug, PartialEq)]
pub enum EventData {
    TurnStart(TurnStart),
    TurnEnd(TurnEnd),
    StepStart(StepBoundary),
    StepEnd(StepBoundary),
    /// The data *is* the user message.
    UserMessage(Arc<Message>),
    AssistantChunk(AssistantChunk),
    AssistantMessage(AssistantMessage),
    ToolCall(ToolCall),
    ToolResult(ToolResult),
    TodoWrite(TodoWrite),
    /// Boxed, as is `LlmRetry`: both are rare and large, and every event in memory is as
    /// big as the largest variant inline.
    RequestHeader(Box<RequestHeader>),
    RequestContext(RequestContext),
    /// `session/end-seed` `{}`: marks where a constructor seed ended.
    EndSeed,
    InboxSpliced(InboxSplice),
    LlmRetry(Box<LlmRetry>),
    LlmRetryStarted(LlmRetryStarted),
    /// Any other type (plugin-owned, or unknown to this build), kept verbatim. A plugin's
    /// declared types are built with [`EventData::plugin`] and read with
    /// [`EventData::decode`] rather than by matching this variant.
    Other {
        type_name: String,
        data: Value,
    },
}

impl EventData {
    /// A payload of a type this crate does not model.
    pub fn other(type_name: impl Into<String>, data: Value) -> Self {
        Self::Other {
            type_name: type_name.into(),
            data,
        }
    }

    /// The wire `type`.
    pub fn type_name(&self) -> &str {
        match self {
            Self::TurnStart(_) => types::TURN_START,
            Self::TurnEnd(_) => types::TURN_END,
            Self::StepStart(_) => types::STEP_START,
            Self::StepEnd(_) => types::STEP_END,
            Self::UserMessage(_) => types::USER_MESSAGE,
            Self::AssistantChunk(_) => types::ASSISTANT_CHUNK,
            Self::AssistantMessage(_) => types::ASSISTANT_MESSAGE,
            Self::ToolCall(_) => types::TOOL_CALL,
            Self::ToolResult(_) => types::TOOL_RESULT,
            Self::TodoWrite(_) => types::TODO_WRITE,
            Self::RequestHeader(_) => types::REQUEST_HEADER,
            Self::RequestContext(_) => types::REQUEST_CONTEXT,
            Self::EndSeed => types::END_SEED,
            Self::InboxSpliced(_) => types::INBOX_SPLICED,
            Self::LlmRetry(_) => types::LLM_RETRY,
            Self::LlmRetryStarted(_) => types::LLM_RETRY_STARTED,
            Self::Other { type_name, .. } => type_name,
        }
    }

    /// Whether the type produces model messages (and so must carry a `surfaceOp`).
    pub fn is_surface(&self) -> bool {
        matches!(
            self,
            Self::UserMessage(_) | Self::AssistantMessage(_) | Self::ToolResult(_)
        )
    }

    /// The `data` object as JSON.
    pub fn to_value(&self) -> Value {
        // Serializing these types cannot fail: every map key is a string.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Builds a payload from a wire `type` and `data`.
    ///
    /// Reading is lenient on purpose: logs outlive builds, and a session that no longer opens
    /// is the worst failure a harness can have. Fields of a modelled type that this build does
    /// not know (written by a newer build or a plugin, or legacy fields such as the old
    /// `turn/start` trigger) are dropped from the in-memory value; the stored file is never
    /// rewritten, so nothing on disk is lost. Missing or mistyped fields are still errors.
    pub fn from_wire(type_name: &str, data: &Value) -> Result<Self, SessionError> {
        fn typed<T>(type_name: &str, data: &Value) -> Result<T, SessionError>
        where
            T: for<'de> Deserialize<'de>,
        {
            T::deserialize(data).map_err(|e| SessionError::data(type_name, e.to_string()))
        }
        if type_name == types::LEGACY_REQUEST_HEADER_DELTA {
            return Err(SessionError::LegacyFormat {
                type_name: type_name.to_owned(),
                detail: "header deltas were replaced by full request/header snapshots".into(),
            });
        }
        if type_name == types::REQUEST_HEADER
            && data.get("reason").and_then(Value::as_str) == Some("fallback")
        {
            return Err(SessionError::LegacyFormat {
                type_name: type_name.to_owned(),
                detail: "header reason \"fallback\" is no longer written or read".into(),
            });
        }
        Ok(match type_name {
            types::TURN_START => Self::TurnStart(typed(type_name, data)?),
            types::TURN_END => Self::TurnEnd(typed(type_name, data)?),
            types::STEP_START => Self::StepStart(typed(type_name, data)?),
            types::STEP_END => Self::StepEnd(typed(type_name, data)?),
            types::USER_MESSAGE => Self::UserMessage(typed(type_name, data)?),
            types::ASSISTANT_CHUNK => Self::AssistantChunk(typed(type_name, data)?),
            types::ASSISTANT_MESSAGE => Self::AssistantMessage(typed(type_name, data)?),
            types::TOOL_CALL => Self::ToolCall(typed(type_name, data)?),
            types::TOOL_RESULT => Self::ToolResult(typed(type_name, data)?),
            types::TODO_WRITE => Self::TodoWrite(typed(type_name, data)?),
            types::REQUEST_HEADER => Self::RequestHeader(typed(type_name, data)?),
            types::REQUEST_CONTEXT => Self::RequestContext(typed(type_name, data)?),
            types::END_SEED => match data {
                Value::Object(_) => Self::EndSeed,
                _ => return Err(SessionError::data(type_name, "data must be an object")),
            },
            types::INBOX_SPLICED => Self::InboxSpliced(typed(type_name, data)?),
            types::LLM_RETRY => Self::LlmRetry(typed(type_name, data)?),
            types::LLM_RETRY_STARTED => Self::LlmRetryStarted(typed(type_name, data)?),
            other => Self::Other {
                type_name: other.to_owned(),
                data: data.clone(),
            },
        })
    }
}

impl Serialize for EventData {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::TurnStart(d) => d.serialize(serializer),
            Self::TurnEnd(d) => d.serialize(serializer),
            Self::StepStart(d) | Self::StepEnd(d) => d.serialize(serializer),
            Self::UserMessage(d) => d.serialize(serializer),
            Self::AssistantChunk(d) => d.serialize(serializer),
            Self::AssistantMessage(d) => d.serialize(serializer),
            Self::ToolCall(d) => d.serialize(serializer),
            Self::ToolResult(d) => d.serialize(serializer),
            Self::TodoWrite(d) => d.serialize(serializer),
            Self::RequestHeader(d) => d.serialize(serializer),
            Self::RequestContext(d) => d.serialize(serializer),
            Self::EndSeed => serializer.serialize_map(Some(0))?.end(),
            Self::InboxSpliced(d) => d.serialize(serializer),
            Self::LlmRetry(d) => d.serialize(serializer),
            Self::LlmRetryStarted(d) => d.serialize(serializer),
            Self::Other { data, .. } => data.serialize(serializer),
        }
    }
}

impl Serialize for SessionEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", self.type_name())?;
        map.serialize_entry("seq", &self.seq)?;
        map.serialize_entry("time", &self.time)?;
        map.serialize_entry("data", &self.data)?;
        if let Some(seqs) = &self.source_event_seqs {
            map.serialize_entry("sourceEventSeqs", seqs)?;
        }
        if let Some(op) = &self.surface_op {
            map.serialize_entry("surfaceOp", op)?;
        }
        if self.ignorable {
            map.serialize_entry("ignorable", &true)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for SessionEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        RawEnvelope::deserialize(deserializer)?
            .into_event()
            .map_err(de::Error::custom)
    }
}

/// The envelope as it appears on the wire; only the seven known keys are allowed.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawEnvelope {
    #[serde(rename = "type")]
    type_name: String,
    seq: u64,
    time: u64,
    data: Value,
    #[serde(default)]
    ignorable: Option<bool>,
    #[serde(default)]
    surface_op: Option<SurfaceOp>,
    #[serde(default)]
    source_event_seqs: Option<Vec<u64>>,
}

/// The general reader of one event's JSON text (see `wire` for the fast one).
pub(crate) fn parse_envelope_slice(text: &[u8]) -> Result<SessionEvent, SessionError> {
    let raw: RawEnvelope =
        serde_json::from_slice(text).map_err(|e| SessionError::InvalidEnvelope {
            reason: e.to_string(),
        })?;
    raw.into_event()
}

impl RawEnvelope {
    fn into_event(self) -> Result<SessionEvent, SessionError> {
        if self.type_name.is_empty() {
            return Err(SessionError::InvalidEnvelope {
                reason: "type must not be empty".into(),
            });
        }
        Ok(SessionEvent {
            seq: self.seq,
            time: self.time,
            data: EventData::from_wire(&self.type_name, &self.data)?,
            ignorable: self.ignorable.unwrap_or(false),
            surface_op: self.surface_op,
            source_event_seqs: self.source_event_seqs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every event in memory is as large as the largest payload variant inline, and a long
    /// log is mostly small chunks: a large rare variant left inline (a failure, a block, a
    /// header) made each of them 312 bytes, which was a third of a 100k-event session's
    /// memory. Box new large variants rather than raise these bounds.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn events_stay_small_whatever_their_rare_variants_hold() {
        use std::mem::size_of;
        assert!(size_of::<dsh_protocol::StreamChunk>() <= 80);
        assert!(size_of::<AssistantChunk>() <= 96);
        assert!(size_of::<EventData>() <= 104);
        assert!(size_of::<SessionEvent>() <= 176);
    }

    #[test]
    fn envelope_round_trips_with_surface_metadata() {
        let raw = json!({"type": "assistant/message", "seq": 5, "time": 7,
            "data": {"turn": 1, "step": 1, "message": {"id": "a", "role": "assistant",
                "content": [{"type": "text", "text": "hi"}],
                "source": {"kind": "model", "provider": "p", "model": "m"}}},
            "sourceEventSeqs": [3, 4], "surfaceOp": "append"});
        let event: SessionEvent = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(event.source_event_seqs, Some(vec![3, 4]));
        assert_eq!(serde_json::to_value(&event).unwrap(), raw);

        let replace = json!({"type": "user/message", "seq": 9, "time": 7,
            "data": {"id": "u", "role": "user", "content": [], "source": {"kind": "user"}},
            "surfaceOp": {"op": "replace", "start": 1, "end": 3}, "sourceEventSeqs": [1, 3]});
        let event = SessionEvent::from_value(&replace).unwrap();
        assert_eq!(
            event.surface_op,
            Some(SurfaceOp::Replace { start: 1, end: 3 })
        );
        assert_eq!(serde_json::to_value(&event).unwrap(), replace);
    }

    #[test]
    fn unknown_types_are_kept_with_their_ignorable_flag() {
        let raw = json!({"type": "future/thing", "seq": 0, "time": 1, "data": [1, {"a": null}], "ignorable": true});
        let event = SessionEvent::from_value(&raw).unwrap();
        assert!(event.ignorable);
        assert_eq!(
            event.data,
            EventData::other("future/thing", json!([1, {"a": null}]))
        );
        assert_eq!(serde_json::to_value(&event).unwrap(), raw);
    }

    #[test]
    fn malformed_envelopes_are_refused() {
        for raw in [
            json!({"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}, "extra": 1}),
            json!({"type": "turn/start", "seq": 0, "time": 1}),
            json!({"type": "turn/start", "seq": -1, "time": 1, "data": {"turn": 1}}),
            json!({"type": "", "seq": 0, "time": 1, "data": {}}),
            json!({"type": "user/message", "seq": 0, "time": 1, "data": {}, "surfaceOp": "prepend"}),
            json!({"type": "user/message", "seq": 0, "time": 1, "data": {},
                "surfaceOp": {"op": "replace", "start": 0, "end": 0, "x": 1}}),
        ] {
            let err = SessionEvent::from_value(&raw).unwrap_err();
            assert_eq!(err.code(), "INVALID_ENVELOPE", "{raw}");
        }
    }

    #[test]
    fn known_types_with_foreign_fields_load_trimmed() {
        // The old `turn/start` trigger is dropped on import, as the original's legacy reader does.
        let raw =
            json!({"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1, "trigger": {}}});
        let event = SessionEvent::from_value(&raw).unwrap();
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            json!({"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}})
        );
        let raw = json!({"type": "session/end-seed", "seq": 0, "time": 1, "data": {"x": 1}});
        assert_eq!(
            SessionEvent::from_value(&raw).unwrap().data,
            EventData::EndSeed
        );
        // Missing required fields are still refused.
        let raw = json!({"type": "turn/start", "seq": 0, "time": 1, "data": {}});
        assert_eq!(
            SessionEvent::from_value(&raw).unwrap_err().code(),
            "INVALID_EVENT_DATA"
        );
    }

    #[test]
    fn legacy_header_records_are_refused() {
        let delta = json!({"type": "request/header-delta", "seq": 0, "time": 1, "data": {}});
        assert_eq!(
            SessionEvent::from_value(&delta).unwrap_err().code(),
            "LEGACY_FORMAT"
        );
        let fallback = json!({"type": "request/header", "seq": 0, "time": 1, "data": {"reason": "fallback",
            "header": {"config": {"provider": "p", "model": "m"}}}});
        assert_eq!(
            SessionEvent::from_value(&fallback).unwrap_err().code(),
            "LEGACY_FORMAT"
        );
    }

    #[test]
    fn whole_numbers_written_by_javascript_compare_equal_to_floats() {
        // `temperature: 1` parses into an f64 and is written back as 1.0; both mean the same.
        let raw = json!({"type": "request/header", "seq": 0, "time": 1, "data": {"reason": "initial",
            "header": {"config": {"provider": "p", "model": "m", "temperature": 1}}}});
        let event = SessionEvent::from_value(&raw).unwrap();
        assert!(matches!(event.data, EventData::RequestHeader(_)));
    }
}
