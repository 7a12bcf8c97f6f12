//! The route handlers (docs/web-api.md "Routes").
//!
//! - [`info`]: the host, workspaces, models and settings;
//! - [`sessions`]: list, create, one session, its history and its event stream;
//! - [`roster`]: the host event stream (sessions appearing, changing, leaving);
//! - [`control`]: prompt, cancel, answers, fork, compact, model, permission and rename;
//! - [`goal`]: the session's goal, as the TUI's `/goal`;
//! - [`extract`]: the path's session and the JSON body, as extractors.

pub mod control;
pub mod extract;
pub mod goal;
pub mod info;
pub mod roster;
pub mod sessions;

use crate::config::WebConfig;
use crate::error::ApiError;
use crate::hub::Hub;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use dsh_protocol::SessionId;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::watch;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<WebConfig>,
    pub hub: Hub,
    /// Flips to `true` when the server shuts down (ends the event streams).
    pub closing: watch::Receiver<bool>,
}

/// A JSON response with `status`.
pub fn json<T: Serialize>(status: StatusCode, value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => (status, [(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => ApiError::Internal(format!("encoding the answer failed: {e}")).into_response(),
    }
}

/// A session id from a path: dsh's alphabet only, so nothing else reaches the store.
pub fn session_id(raw: &str) -> Result<SessionId, ApiError> {
    let fits = !raw.is_empty()
        && raw.len() <= 128
        && !raw.starts_with('.')
        && raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if fits {
        Ok(SessionId::new(raw.to_owned()))
    } else {
        Err(ApiError::SessionNotFound(raw.to_owned()))
    }
}

/// A query string's parameters, percent-decoded (`+` is a space).
pub fn query(raw: Option<&str>) -> HashMap<String, String> {
    raw.unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |b: u8| (b as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(high), Some(low)) => {
                        out.push((high * 16 + low) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A numeric query parameter; 400 when present and not a number.
pub fn number<T: std::str::FromStr>(
    params: &HashMap<String, String>,
    name: &str,
) -> Result<Option<T>, ApiError> {
    match params.get(name) {
        None => Ok(None),
        Some(text) => text.parse().map(Some).map_err(|_| {
            ApiError::BadRequest(format!(
                "the `{name}` parameter must be a number, not {text:?}"
            ))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode() {
        let q = query(Some("cwd=%2Ftmp%2Fa+b&limit=5&x"));
        assert_eq!(q.get("cwd").map(String::as_str), Some("/tmp/a b"));
        assert_eq!(q.get("limit").map(String::as_str), Some("5"));
        assert_eq!(q.get("x").map(String::as_str), Some(""));
        assert_eq!(decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn session_ids_are_checked() {
        assert!(session_id("session-1b2c").is_ok());
        for bad in ["", "../x", ".hidden", "a/b", "a b"] {
            assert!(session_id(bad).is_err());
        }
    }
}
