//! Whole-value log assertions: a log as JSON with the nondeterministic parts made stable.
//!
//! Event times and random identifiers (message ids, retry ids, session ids: anything holding
//! a UUID) differ on every run. [`log_json`] drops the envelope `time` and replaces each
//! distinct UUID with `<id-N>`, numbered by first appearance, so a test can compare a whole
//! log with one `assert_eq!` and still see that two events share an id. [`request_json`] does
//! the same for a model request (what the scripted adapter recorded).
//!
//! ```
//! use dsh_testkit::normalize::normalize_json;
//! use serde_json::json;
//! let a = "0b8a3c4e-9f1d-4c2b-8e7a-1234567890ab";
//! let b = "ffffffff-9f1d-4c2b-8e7a-1234567890ab";
//! assert_eq!(
//!     normalize_json(json!([{"id": a}, {"id": b, "parent": a, "session": format!("session-{b}")}])),
//!     json!([{"id": "<id-1>"}, {"id": "<id-2>", "parent": "<id-1>", "session": "session-<id-2>"}])
//! );
//! ```
//!
//! [`outline`] renders a log as one short line per event, for assertions about order.

mod outline;

pub use outline::outline;

use dsh_llm::LlmRequest;
use dsh_session::SessionEvent;
use serde::Serialize;
use serde_json::{Map, Value};
use std::borrow::Borrow;
use std::collections::HashMap;

/// The log as a JSON array with envelope `time` removed and UUIDs replaced by `<id-N>`.
pub fn log_json<E: Borrow<SessionEvent>>(events: &[E]) -> Value {
    Normalizer::new().events(events)
}

/// `value` with every UUID replaced by `<id-N>` (numbered by first appearance).
pub fn normalize_json(value: Value) -> Value {
    Normalizer::new().value(value)
}

/// What a model request shows the model, as JSON (`config`, `messages`, `system`, `tools`,
/// `sessionId`; absent fields omitted), with UUIDs replaced. The cancellation token is left out.
pub fn request_json(request: &LlmRequest) -> Value {
    Normalizer::new().request(request)
}

/// Keeps one UUID → placeholder mapping across several values, so a log and, say, the
/// requests a model saw can be normalized consistently.
#[derive(Debug, Default)]
pub struct Normalizer {
    ids: HashMap<String, usize>,
}

impl Normalizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Events as a JSON array, each without its `time`.
    pub fn events<E: Borrow<SessionEvent>>(&mut self, events: &[E]) -> Value {
        Value::Array(
            events
                .iter()
                .map(|event| {
                    let mut value = serde_json::to_value(event.borrow()).unwrap_or(Value::Null);
                    if let Value::Object(envelope) = &mut value {
                        envelope.remove("time");
                    }
                    self.value(value)
                })
                .collect(),
        )
    }

    /// One request as [`request_json`] renders it, sharing this normalizer's numbering.
    pub fn request(&mut self, request: &LlmRequest) -> Value {
        let mut out = Map::new();
        let mut put = |key: &str, value: Value| {
            if !value.is_null() {
                out.insert(key.to_owned(), value);
            }
        };
        put("config", to_json(&request.config));
        put("messages", to_json(&request.messages));
        put("system", to_json(&request.system));
        put("tools", to_json(&request.tools));
        put("sessionId", to_json(&request.session_id));
        self.value(Value::Object(out))
    }

    /// `value` with UUIDs in string values replaced (object keys are left alone).
    pub fn value(&mut self, value: Value) -> Value {
        match value {
            Value::String(text) => Value::String(self.text(&text)),
            Value::Array(items) => Value::Array(items.into_iter().map(|v| self.value(v)).collect()),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (k, self.value(v)))
                    .collect::<Map<_, _>>(),
            ),
            other => other,
        }
    }

    /// `text` with each UUID replaced by its placeholder.
    pub fn text(&mut self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = find_uuid(rest) {
            out.push_str(&rest[..start]);
            let uuid = &rest[start..start + UUID_LEN];
            let next = self.ids.len() + 1;
            let n = *self.ids.entry(uuid.to_ascii_lowercase()).or_insert(next);
            out.push_str(&format!("<id-{n}>"));
            rest = &rest[start + UUID_LEN..];
        }
        out.push_str(rest);
        out
    }
}

fn to_json<T: Serialize>(value: &T) -> Value {
    // Message and config types serialize infallibly (string keys only).
    serde_json::to_value(value).unwrap_or(Value::Null)
}

const UUID_LEN: usize = 36;

/// Byte offset of the first UUID (8-4-4-4-12 hex digits) not glued to other hex digits.
fn find_uuid(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.len() < UUID_LEN {
        return None;
    }
    (0..=bytes.len() - UUID_LEN).find(|&start| {
        let candidate = &bytes[start..start + UUID_LEN];
        let shaped = candidate.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        });
        let before_ok = start == 0 || !bytes[start - 1].is_ascii_hexdigit();
        let after_ok = bytes
            .get(start + UUID_LEN)
            .is_none_or(|b| !b.is_ascii_hexdigit());
        shaped && before_ok && after_ok
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_render_what_the_model_sees() {
        use dsh_protocol::{LlmCallConfig, Message};
        use std::sync::Arc;
        let config = LlmCallConfig {
            provider: "p".into(),
            model: "m".into(),
            ..Default::default()
        };
        let mut request = LlmRequest::new(config, vec![Arc::new(Message::user_text("hi"))]);
        request.system = Some("sys".into());
        assert_eq!(
            request_json(&request),
            json!({"config": {"provider": "p", "model": "m"},
                "messages": [{"id": "<id-1>", "role": "user",
                    "content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}],
                "system": "sys"})
        );
    }

    #[test]
    fn uuids_are_found_only_whole() {
        let id = "2dc6b1ba-5658-48d8-9345-1d6f75018d4c";
        assert_eq!(find_uuid(id), Some(0));
        assert_eq!(find_uuid(&format!("session-{id}")), Some(8));
        assert_eq!(find_uuid(&format!("a{id}")), None);
        assert_eq!(find_uuid(&format!("{id}0")), None);
        assert_eq!(find_uuid("2dc6b1ba-5658-48d8-9345"), None);
        assert_eq!(find_uuid("call_0_0_66bbf6e4"), None);
    }

    #[test]
    fn the_same_id_maps_to_the_same_placeholder_across_values() {
        let a = "2DC6B1BA-5658-48d8-9345-1d6f75018d4c";
        let b = "92903035-66d2-4f0d-98be-19440d7a600c";
        let mut n = Normalizer::new();
        assert_eq!(
            n.value(json!({"x": [b, a, 3], a: "k"})),
            json!({"x": ["<id-1>", "<id-2>", 3], a: "k"})
        );
        assert_eq!(
            n.text(&format!("{b}/{}", a.to_lowercase())),
            "<id-1>/<id-2>"
        );
    }
}
