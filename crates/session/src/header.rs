//! The session header: creation metadata kept beside the log, not in it.

use crate::error::SessionError;
use crate::validate::MAX_SAFE_INTEGER;
use dsh_protocol::SessionId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The only format version this build reads and writes.
pub const SESSION_FORMAT_VERSION: u32 = 0;

/// Creation metadata of a session.
///
/// Serializes to the header line of the on-disk format (`{"type":"session", ...}`); the
/// `type` tag is accepted but not required when reading.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type", rename = "session")]
pub struct SessionHeader {
    pub version: u32,
    pub id: SessionId,
    /// Epoch milliseconds.
    pub created_at: u64,
    /// Absolute working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The session this one was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<SessionId>,
    /// Length of the inherited prefix of a fork (the durable lineage boundary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_length: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<SessionOrigin>,
    /// Nesting depth of delegated sub-agents; 0 for a top-level session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegation_depth: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_preset: Option<Value>,
}

/// Who created a session, when not a person.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SessionOrigin {
    Subagent,
    #[serde(untagged)]
    Other(String),
}

impl SessionHeader {
    /// A version-0 header with no optional fields.
    pub fn new(id: SessionId, created_at: u64) -> Self {
        Self {
            version: SESSION_FORMAT_VERSION,
            id,
            created_at,
            cwd: None,
            parent_session: None,
            seed_length: None,
            origin: None,
            delegation_depth: None,
            agent_preset: None,
        }
    }

    /// Checks the header's fields.
    pub fn validate(&self) -> Result<(), SessionError> {
        let fail = |reason: String| Err(SessionError::InvalidHeader { reason });
        if self.version != SESSION_FORMAT_VERSION {
            return fail(format!(
                "version must be {SESSION_FORMAT_VERSION}, got {}",
                self.version
            ));
        }
        if self.id.as_str().is_empty() {
            return fail("id must not be empty".into());
        }
        for (name, value) in [
            ("createdAt", Some(self.created_at)),
            ("seedLength", self.seed_length),
            ("delegationDepth", self.delegation_depth),
        ] {
            if value.is_some_and(|v| v > MAX_SAFE_INTEGER) {
                return fail(format!("{name} must be a safe integer"));
            }
        }
        if let Some(cwd) = &self.cwd {
            if !is_absolute(cwd) {
                return fail(format!("cwd must be an absolute path, got \"{cwd}\""));
            }
        }
        if let Some(preset) = &self.agent_preset {
            dsh_protocol::json::check_lossless(preset).map_err(|e| {
                SessionError::InvalidHeader {
                    reason: format!("agentPreset: {e}"),
                }
            })?;
        }
        Ok(())
    }
}

/// POSIX absolute paths, and Windows drive or UNC paths for logs written there.
fn is_absolute(path: &str) -> bool {
    let bytes = path.as_bytes();
    path.starts_with('/')
        || path.starts_with("\\\\")
        || (bytes.len() >= 3
            && bytes[0].is_ascii_alphabetic()
            && bytes[1] == b':'
            && (bytes[2] == b'\\' || bytes[2] == b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn header_line_round_trips() {
        let raw = json!({"type": "session", "version": 0, "id": "s-1", "createdAt": 17,
            "cwd": "/home/user/project", "delegationDepth": 0, "origin": "subagent"});
        let header: SessionHeader = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(header.origin, Some(SessionOrigin::Subagent));
        assert_eq!(serde_json::to_value(&header).unwrap(), raw);
        header.validate().unwrap();
    }

    #[test]
    fn the_type_tag_is_optional_when_reading() {
        let header: SessionHeader =
            serde_json::from_value(json!({"version": 0, "id": "s", "createdAt": 1})).unwrap();
        assert_eq!(header, SessionHeader::new("s".into(), 1));
    }

    #[test]
    fn bad_headers_are_refused() {
        let mut header = SessionHeader::new("s".into(), 1);
        header.cwd = Some("relative/dir".into());
        assert_eq!(header.validate().unwrap_err().code(), "INVALID_HEADER");
        let mut header = SessionHeader::new("s".into(), 1);
        header.version = 1;
        assert_eq!(header.validate().unwrap_err().code(), "INVALID_HEADER");
        assert!(SessionHeader::new("".into(), 1).validate().is_err());
        let mut header = SessionHeader::new("s".into(), 1);
        header.cwd = Some("C:\\work".into());
        header.validate().unwrap();
    }
}
