//! Extractors the handlers share: the path's session, held or only named, and a JSON body.
//! Each refuses with an [`ApiError`], so a handler's signature says what it needs and its
//! body is only what it does.

use super::{session_id, AppState};
use crate::body;
use crate::error::ApiError;
use crate::hub::LiveSession;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::request::Parts;
use dsh_protocol::SessionId;
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::sync::Arc;

/// The path's `{id}`, checked against dsh's alphabet; the session need not exist.
pub struct SessionPath(pub SessionId);

impl FromRequestParts<AppState> for SessionPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let Path(params) = Path::<HashMap<String, String>>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::BadRequest(e.body_text()))?;
        let raw = params
            .get("id")
            .ok_or_else(|| ApiError::Internal("this route names no session".into()))?;
        session_id(raw).map(Self)
    }
}

/// The path's session, held by this server: resumed from the store (crash repair
/// included) when only stored; 404 `session_not_found` when neither.
pub struct Held(pub Arc<LiveSession>);

impl FromRequestParts<AppState> for Held {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let SessionPath(id) = SessionPath::from_request_parts(parts, state).await?;
        state.hub.session(&id).await.map(Self)
    }
}

/// A JSON request body: 415 / 413 / 400 as [`body::read`]; an empty body reads as `{}`.
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let (parts, body) = request.into_parts();
        body::read(&parts.headers, body, state.config.max_body)
            .await
            .map(Self)
    }
}
