//! The host, its workspaces, the model catalog and the settings.

use super::{json, AppState};
use crate::error::ApiError;
use crate::fence;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::json as value;
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// `GET /api/host`
pub async fn host(State(state): State<AppState>) -> Response {
    json(
        StatusCode::OK,
        &value!({
            "version": state.config.version,
            "cwd": state.hub.default_cwd(),
            "pid": std::process::id(),
            "remote": !state.config.addr.ip().is_loopback(),
        }),
    )
}

/// `GET /api/workspaces`: every directory with sessions, and the server's own.
pub async fn workspaces(State(state): State<AppState>) -> Result<Response, ApiError> {
    let sessions = state.hub.list(None)?;
    let mut by_cwd: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    by_cwd.insert(state.hub.default_cwd().display().to_string(), (0, 0));
    for session in &sessions {
        let Some(cwd) = &session.cwd else { continue };
        let entry = by_cwd.entry(cwd.clone()).or_default();
        entry.0 += 1;
        if session.status == "running" {
            entry.1 += 1;
        }
    }
    let list: Vec<_> = by_cwd
        .into_iter()
        .map(|(cwd, (sessions, running))| value!({ "cwd": cwd, "sessions": sessions, "running": running }))
        .collect();
    Ok(json(StatusCode::OK, &value!({ "workspaces": list })))
}

/// `GET /api/models`
pub async fn models(State(state): State<AppState>) -> Response {
    let models = state.hub.host().models();
    json(
        StatusCode::OK,
        &value!({
            "current": { "provider": models.provider, "model": models.model },
            "providers": models.providers,
        }),
    )
}

/// `GET /api/settings`: loopback clients only; secrets removed by the host.
pub async fn settings(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    fence::check_loopback(&headers, peer.ip()).map_err(|r| ApiError::Forbidden(r.message()))?;
    Ok(json(StatusCode::OK, &state.hub.host().settings_view()))
}
