//! JSON request bodies: `Content-Type: application/json` or 415, at most the configured
//! cap or 413 (by `Content-Length` and by counting), JSON of the route's shape or 400.

use crate::error::ApiError;
use axum::body::Body;
use axum::http::{header, HeaderMap};
use serde::de::DeserializeOwned;

/// Whether the media type (parameters aside) is `application/json`.
pub fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// Reads and parses a POST body; an empty body reads as `{}`.
pub async fn read<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Body,
    cap: usize,
) -> Result<T, ApiError> {
    if !is_json(headers) {
        return Err(ApiError::UnsupportedMediaType);
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > cap as u64) {
        return Err(ApiError::BodyTooLarge(cap));
    }
    let bytes = axum::body::to_bytes(body, cap)
        .await
        .map_err(|_| ApiError::BodyTooLarge(cap))?;
    let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        &bytes
    };
    serde_json::from_slice(text)
        .map_err(|e| ApiError::BadRequest(format!("the body is not valid: {e}")))
}
