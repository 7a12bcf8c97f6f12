//! `GET /api/events`: the host event stream (docs/web-api.md "The host event stream").

use super::{query, AppState};
use crate::error::ApiError;
use crate::roster::Cursor;
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

/// `GET /api/events[?after=CURSOR]` (or `Last-Event-ID`)
pub async fn events(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let params = query(raw.as_deref());
    let given = params.get("after").map(String::as_str).or_else(|| {
        headers
            .get("last-event-id")
            .and_then(|value| value.to_str().ok())
    });
    let after = match given {
        None => None,
        Some(text) => Some(Cursor::parse(text).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "the cursor must be an `id:` of this stream (LAUNCH.REV), not {text:?}"
            ))
        })?),
    };
    let hub = state.hub.clone();
    let now = tokio::task::spawn_blocking(move || hub.list(None))
        .await
        .map_err(|e| ApiError::Internal(format!("listing the sessions failed: {e}")))??;
    let roster = state.hub.roster().clone();
    let (start, feed) = roster.join(now, after.as_ref());
    Ok(crate::roster::events(roster, start, feed, state.closing.clone()).into_response())
}
