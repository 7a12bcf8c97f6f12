//! The first line of every log: who the session is, kept outside the event sequence.

use serde_json::{Map, Value};

/// The only on-disk format version this build reads and writes.
pub const SESSION_FORMAT_VERSION: u64 = 0;

/// The stored session header (`{type:"session", version, id, createdAt, …}`).
///
/// Fields this build does not know are kept in `extra` and written back after the known
/// ones, so a header written by a newer build survives a repair by this one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogHeader {
    pub id: String,
    /// Epoch milliseconds.
    pub created_at: u64,
    /// Absolute working directory of the session's workspace.
    pub cwd: Option<String>,
    pub parent_session: Option<String>,
    pub seed_length: Option<u64>,
    /// `"subagent"` for sessions created by a delegating agent.
    pub origin: Option<String>,
    /// 0 for a top-level session; always written.
    pub delegation_depth: u64,
    pub agent_preset: Option<Value>,
    pub extra: Map<String, Value>,
}

/// Why a header line was refused.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum HeaderError {
    /// The line is not a session header or a known field has the wrong type.
    Malformed(String),
    /// A well-formed header of another format version (the version as JSON text).
    Unsupported(String),
}

const KNOWN_KEYS: [&str; 10] = [
    "type",
    "version",
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "seedLength",
    "origin",
    "delegationDepth",
    "agentPreset",
];

impl LogHeader {
    /// A header for a new top-level session.
    pub fn new(id: impl Into<String>, created_at: u64) -> Self {
        LogHeader {
            id: id.into(),
            created_at,
            ..LogHeader::default()
        }
    }

    /// The header as the JSON object written on line 1, keys in the original's order.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("type".into(), Value::from("session"));
        map.insert("version".into(), Value::from(SESSION_FORMAT_VERSION));
        map.insert("id".into(), Value::from(self.id.as_str()));
        map.insert("createdAt".into(), Value::from(self.created_at));
        if let Some(cwd) = &self.cwd {
            map.insert("cwd".into(), Value::from(cwd.as_str()));
        }
        if let Some(parent) = &self.parent_session {
            map.insert("parentSession".into(), Value::from(parent.as_str()));
        }
        if let Some(seed_length) = self.seed_length {
            map.insert("seedLength".into(), Value::from(seed_length));
        }
        if let Some(origin) = &self.origin {
            map.insert("origin".into(), Value::from(origin.as_str()));
        }
        map.insert("delegationDepth".into(), Value::from(self.delegation_depth));
        if let Some(preset) = &self.agent_preset {
            map.insert("agentPreset".into(), preset.clone());
        }
        for (key, value) in &self.extra {
            if !KNOWN_KEYS.contains(&key.as_str()) {
                map.insert(key.clone(), value.clone());
            }
        }
        Value::Object(map)
    }

    /// Reads a header record. The version is checked before anything else so that a log
    /// from a newer format is reported as such rather than as damage.
    pub(crate) fn from_value(value: Value) -> Result<LogHeader, HeaderError> {
        let Value::Object(mut map) = value else {
            return Err(HeaderError::Malformed(
                "the first record is not an object".into(),
            ));
        };
        if map.get("type").and_then(Value::as_str) != Some("session") {
            return Err(HeaderError::Malformed(
                "the first record is not a session header (type must be \"session\")".into(),
            ));
        }
        match map.get("version") {
            None => return Err(HeaderError::Malformed("the header has no version".into())),
            Some(v) if v.as_u64() == Some(SESSION_FORMAT_VERSION) => {}
            Some(v) => return Err(HeaderError::Unsupported(v.to_string())),
        }
        let id = take_string(&mut map, "id")?
            .ok_or_else(|| HeaderError::Malformed("the header has no id".into()))?;
        let created_at = take_u64(&mut map, "createdAt")?
            .ok_or_else(|| HeaderError::Malformed("the header has no createdAt".into()))?;
        let header = LogHeader {
            id,
            created_at,
            cwd: take_string(&mut map, "cwd")?,
            parent_session: take_string(&mut map, "parentSession")?,
            seed_length: take_u64(&mut map, "seedLength")?,
            origin: take_string(&mut map, "origin")?,
            // Older writers may omit it; absent means a top-level session.
            delegation_depth: take_u64(&mut map, "delegationDepth")?.unwrap_or(0),
            agent_preset: map.remove("agentPreset"),
            extra: {
                map.remove("type");
                map.remove("version");
                map
            },
        };
        Ok(header)
    }
}

fn take_string(map: &mut Map<String, Value>, key: &str) -> Result<Option<String>, HeaderError> {
    match map.remove(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(HeaderError::Malformed(format!(
            "header field {key} must be a string, found {other}"
        ))),
    }
}

fn take_u64(map: &mut Map<String, Value>, key: &str) -> Result<Option<u64>, HeaderError> {
    match map.remove(key) {
        None => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            HeaderError::Malformed(format!(
                "header field {key} must be a non-negative integer, found {v}"
            ))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_keys_in_the_original_order() {
        let header = LogHeader {
            cwd: Some("/home/user/project".into()),
            ..LogHeader::new("session-1", 1796012141966)
        };
        assert_eq!(
            serde_json::to_string(&header.to_value()).unwrap(),
            r#"{"type":"session","version":0,"id":"session-1","createdAt":1796012141966,"cwd":"/home/user/project","delegationDepth":0}"#
        );
    }

    #[test]
    fn round_trips_every_field_and_unknown_ones() {
        let value = json!({
            "type": "session", "version": 0, "id": "child", "createdAt": 5,
            "cwd": "/w", "parentSession": "parent", "seedLength": 12, "origin": "subagent",
            "delegationDepth": 2, "agentPreset": {"name": "explore"}, "futureField": [1]
        });
        let header = LogHeader::from_value(value.clone()).unwrap();
        assert_eq!(
            header,
            LogHeader {
                id: "child".into(),
                created_at: 5,
                cwd: Some("/w".into()),
                parent_session: Some("parent".into()),
                seed_length: Some(12),
                origin: Some("subagent".into()),
                delegation_depth: 2,
                agent_preset: Some(json!({"name": "explore"})),
                extra: json!({"futureField": [1]}).as_object().unwrap().clone(),
            }
        );
        assert_eq!(
            serde_json::to_string(&header.to_value()).unwrap(),
            serde_json::to_string(&value).unwrap()
        );
    }

    #[test]
    fn other_versions_are_unsupported_not_malformed() {
        let err = LogHeader::from_value(json!({"type": "session", "version": 3, "id": "x"}));
        assert_eq!(err, Err(HeaderError::Unsupported("3".into())));
        let err = LogHeader::from_value(json!({"type": "session", "version": "1"}));
        assert_eq!(err, Err(HeaderError::Unsupported("\"1\"".into())));
    }

    #[test]
    fn malformed_headers_are_refused() {
        for value in [
            json!([]),
            json!({"type": "turn/start", "version": 0, "id": "x", "createdAt": 1}),
            json!({"type": "session", "id": "x", "createdAt": 1}),
            json!({"type": "session", "version": 0, "createdAt": 1}),
            json!({"type": "session", "version": 0, "id": "x"}),
            json!({"type": "session", "version": 0, "id": "x", "createdAt": -1}),
            json!({"type": "session", "version": 0, "id": "x", "createdAt": 1, "cwd": 3}),
        ] {
            assert!(
                matches!(
                    LogHeader::from_value(value.clone()),
                    Err(HeaderError::Malformed(_))
                ),
                "{value}"
            );
        }
    }

    #[test]
    fn missing_delegation_depth_means_top_level() {
        let header = LogHeader::from_value(
            json!({"type": "session", "version": 0, "id": "x", "createdAt": 1}),
        )
        .unwrap();
        assert_eq!(header, LogHeader::new("x", 1));
    }
}
