//! Reading events straight from JSON text.
//!
//! Resuming a long session parses every line of its log. Going through a
//! `serde_json::Value` first builds (and then frees) a map per object and parses every
//! payload twice, which dominated resume time. The fast reader here deserializes the typed
//! payload directly as soon as it has seen `type`, which every writer puts before `data`.
//!
//! It is deliberately narrow: data before type, duplicate or unknown envelope keys, the
//! types whose reading has special rules (legacy records, headers, the seed marker, types
//! this build does not model) and every error take the general path instead, so the fast
//! path only ever returns what the general path would have returned.

use crate::error::SessionError;
use crate::event::{EventData, SessionEvent, SurfaceOp};
use crate::event_types as types;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;

impl SessionEvent {
    /// Parses one serialized event from JSON text (one log line), with typed errors.
    ///
    /// Equivalent to [`SessionEvent::from_json`]; faster on the common shapes.
    pub fn from_json_slice(text: &[u8]) -> Result<Self, SessionError> {
        // A line checked as UTF-8 once parses as `str`, which spares serde_json checking
        // every string and key again (on a long log that check was a sixth of the parse).
        // Text that is not UTF-8 cannot be an event; the general path says why.
        let fast = std::str::from_utf8(text)
            .ok()
            .and_then(|text| serde_json::from_str::<FastEvent>(text).ok());
        match fast {
            Some(FastEvent(event)) => Ok(event),
            None => crate::event::parse_envelope_slice(text),
        }
    }
}

/// An event read by the fast path; any error means "use the general path".
struct FastEvent(SessionEvent);

impl<'de> Deserialize<'de> for FastEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EnvelopeVisitor)
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum Key {
    Type,
    Seq,
    Time,
    Data,
    Ignorable,
    SurfaceOp,
    SourceEventSeqs,
}

struct EnvelopeVisitor;

fn duplicate<E: de::Error>(key: &'static str) -> E {
    E::duplicate_field(key)
}

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = FastEvent;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a session event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FastEvent, A::Error> {
        let mut type_name: Option<Cow<'de, str>> = None;
        let mut seq: Option<u64> = None;
        let mut time: Option<u64> = None;
        let mut data: Option<EventData> = None;
        let mut ignorable: Option<Option<bool>> = None;
        let mut surface_op: Option<Option<SurfaceOp>> = None;
        let mut sources: Option<Option<Vec<u64>>> = None;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Type => {
                    if type_name.is_some() {
                        return Err(duplicate("type"));
                    }
                    type_name = Some(map.next_value::<TypeName<'de>>()?.0);
                }
                Key::Seq => {
                    if seq.replace(map.next_value()?).is_some() {
                        return Err(duplicate("seq"));
                    }
                }
                Key::Time => {
                    if time.replace(map.next_value()?).is_some() {
                        return Err(duplicate("time"));
                    }
                }
                Key::Data => {
                    let Some(type_name) = type_name.as_deref() else {
                        return Err(de::Error::custom("data before type"));
                    };
                    if data.is_some() {
                        return Err(duplicate("data"));
                    }
                    data = Some(map.next_value_seed(DataSeed(type_name))?);
                }
                Key::Ignorable => {
                    if ignorable.replace(map.next_value()?).is_some() {
                        return Err(duplicate("ignorable"));
                    }
                }
                Key::SurfaceOp => {
                    if surface_op.replace(map.next_value()?).is_some() {
                        return Err(duplicate("surfaceOp"));
                    }
                }
                Key::SourceEventSeqs => {
                    if sources.replace(map.next_value()?).is_some() {
                        return Err(duplicate("sourceEventSeqs"));
                    }
                }
            }
        }
        let (Some(type_name), Some(seq), Some(time), Some(data)) = (type_name, seq, time, data)
        else {
            return Err(de::Error::custom("incomplete envelope"));
        };
        if type_name.is_empty() {
            return Err(de::Error::custom("empty type"));
        }
        Ok(FastEvent(SessionEvent {
            seq,
            time,
            data,
            ignorable: ignorable.flatten().unwrap_or(false),
            surface_op: surface_op.flatten(),
            source_event_seqs: sources.flatten(),
        }))
    }
}

/// A string, borrowed from the input when it has no escapes.
struct TypeName<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for TypeName<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TypeName<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(TypeName(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(TypeName(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(TypeName(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(V)
    }
}

/// Deserializes `data` for a known `type`.
struct DataSeed<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for DataSeed<'_> {
    type Value = EventData;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<EventData, D::Error> {
        // The typed payloads read the same from text as from a `Value`: they ignore unknown
        // fields and have no rules outside their `Deserialize` impls. Types with extra rules
        // in `EventData::from_wire` go through it.
        Ok(match self.0 {
            types::TURN_START => EventData::TurnStart(Deserialize::deserialize(d)?),
            types::TURN_END => EventData::TurnEnd(Deserialize::deserialize(d)?),
            types::STEP_START => EventData::StepStart(Deserialize::deserialize(d)?),
            types::STEP_END => EventData::StepEnd(Deserialize::deserialize(d)?),
            types::USER_MESSAGE => EventData::UserMessage(Deserialize::deserialize(d)?),
            types::ASSISTANT_CHUNK => EventData::AssistantChunk(Deserialize::deserialize(d)?),
            types::ASSISTANT_MESSAGE => EventData::AssistantMessage(Deserialize::deserialize(d)?),
            types::TOOL_CALL => EventData::ToolCall(Deserialize::deserialize(d)?),
            types::TOOL_RESULT => EventData::ToolResult(Deserialize::deserialize(d)?),
            types::TODO_WRITE => EventData::TodoWrite(Deserialize::deserialize(d)?),
            types::REQUEST_CONTEXT => EventData::RequestContext(Deserialize::deserialize(d)?),
            types::INBOX_SPLICED => EventData::InboxSpliced(Deserialize::deserialize(d)?),
            types::LLM_RETRY => EventData::LlmRetry(Deserialize::deserialize(d)?),
            types::LLM_RETRY_STARTED => EventData::LlmRetryStarted(Deserialize::deserialize(d)?),
            other => {
                let value = serde_json::Value::deserialize(d)?;
                EventData::from_wire(other, &value).map_err(de::Error::custom)?
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn fast(value: &Value) -> Option<SessionEvent> {
        serde_json::from_slice::<FastEvent>(&serde_json::to_vec(value).unwrap())
            .ok()
            .map(|e| e.0)
    }

    #[test]
    fn the_fast_path_agrees_with_the_general_one() {
        for raw in [
            json!({"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1, "trigger": {}}}),
            json!({"type": "assistant/chunk", "seq": 1, "time": 2, "data": {"turn": 1, "step": 1,
                "chunk": {"type": "text-delta", "index": 0, "text": "h\u{e9}\"llo\n"}}}),
            json!({"type": "user/message", "seq": 2, "time": 3, "surfaceOp": "append",
                "data": {"id": "u", "role": "user", "content": [{"type": "text", "text": "hi"}],
                    "source": {"kind": "user", "extra": [1, 2.5]}}}),
            json!({"type": "future/thing", "seq": 3, "time": 4, "data": [1, {"a": null}], "ignorable": true}),
            json!({"type": "session/end-seed", "seq": 4, "time": 5, "data": {"x": 1}}),
            json!({"type": "turn/end", "seq": 5, "time": 6, "ignorable": null,
                "data": {"turn": 1, "reason": {"kind": "new-kind", "extra": true}}}),
        ] {
            let general = SessionEvent::from_value(&raw).unwrap();
            assert_eq!(fast(&raw), Some(general.clone()), "{raw}");
            let text = serde_json::to_vec(&raw).unwrap();
            assert_eq!(SessionEvent::from_json_slice(&text).unwrap(), general);
        }
    }

    /// Every line the original wrote parses on the fast path, to the general path's value.
    #[test]
    fn every_fixture_event_parses_fast_and_identically() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/fixtures/dsh-0.1.0");
        let mut lines = 0;
        for scenario in std::fs::read_dir(&root).unwrap() {
            let sessions = scenario.unwrap().path().join("jsonl/sessions");
            for project in std::fs::read_dir(&sessions).into_iter().flatten() {
                for session in std::fs::read_dir(project.unwrap().path()).unwrap() {
                    let text =
                        std::fs::read_to_string(session.unwrap().path().join("session.jsonl"))
                            .unwrap();
                    for line in text.lines().skip(1) {
                        let value: Value = serde_json::from_str(line).unwrap();
                        let general = SessionEvent::from_value(&value).unwrap();
                        let fast = serde_json::from_str::<FastEvent>(line).map(|e| e.0);
                        assert_eq!(fast.ok().as_ref(), Some(&general), "{line}");
                        lines += 1;
                    }
                }
            }
        }
        assert!(lines > 100, "only {lines} fixture lines found");
    }

    #[test]
    fn unusual_shapes_take_the_general_path() {
        for text in [
            // data before type
            r#"{"seq":0,"time":1,"data":{"turn":1},"type":"turn/start"}"#,
            // duplicate keys: the general reader refuses them as well
            r#"{"type":"turn/start","seq":0,"seq":1,"time":1,"data":{"turn":1}}"#,
            // special-cased types
            r#"{"type":"request/header-delta","seq":0,"time":1,"data":{}}"#,
        ] {
            assert!(serde_json::from_str::<FastEvent>(text).is_err(), "{text}");
            let general: Result<SessionEvent, _> =
                crate::event::parse_envelope_slice(text.as_bytes());
            assert_eq!(
                SessionEvent::from_json_slice(text.as_bytes()).map_err(|e| e.code()),
                general.map_err(|e| e.code()),
                "{text}"
            );
        }
        assert_eq!(
            SessionEvent::from_json_slice(
                br#"{"seq":0,"time":1,"data":{"turn":1},"type":"turn/start"}"#
            )
            .unwrap()
            .seq,
            0
        );
    }
}
