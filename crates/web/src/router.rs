//! The route table (docs/web-api.md "Routes") and the layers every request passes: the
//! trust fence first, then the token on `/api/`.

use crate::api::{control, goal, info, roster, sessions, AppState};
use crate::error::ApiError;
use crate::{auth, body, fence, page};
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

/// Every route, behind the fence and the token.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/api/host", get(info::host))
        .route("/api/workspaces", get(info::workspaces))
        .route("/api/models", get(info::models))
        .route("/api/settings", get(info::settings))
        .route("/api/events", get(roster::events))
        .route("/api/sessions", get(sessions::list).post(sessions::create))
        .route("/api/sessions/{id}", get(sessions::get))
        .route("/api/sessions/{id}/history", get(sessions::history))
        .route("/api/sessions/{id}/events", get(sessions::events))
        .route("/api/sessions/{id}/prompt", post(control::prompt))
        .route("/api/sessions/{id}/cancel", post(control::cancel))
        .route(
            "/api/sessions/{id}/approvals/{approval}",
            post(control::approval),
        )
        .route(
            "/api/sessions/{id}/questions/{question}",
            post(control::question),
        )
        .route("/api/sessions/{id}/fork", post(control::fork))
        .route("/api/sessions/{id}/compact", post(control::compact))
        .route("/api/sessions/{id}/model", post(control::model))
        .route("/api/sessions/{id}/permission", post(control::permission))
        .route("/api/sessions/{id}/title", post(control::title))
        .route("/api/sessions/{id}/goal", post(goal::goal));
    let mut pages = Router::new()
        .route("/", get(index))
        .route("/app.css", get(|| async { page::style() }));
    for (path, body) in page::SCRIPTS {
        pages = pages.route(path, get(move || async move { page::script(body) }));
    }
    pages
        .merge(api)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// The fence on every request; the token on everything under `/api/`.
async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if let Err(refusal) = fence::check(request.headers(), &state.config.trusted) {
        return ApiError::Forbidden(refusal.message()).into_response();
    }
    let path = request.uri().path();
    let api = path == "/api" || path.starts_with("/api/");
    if api && !auth::authorized(request.headers(), &state.config.token) {
        return ApiError::Unauthorized.into_response();
    }
    // Before any handler runs (a stored session is resumed by its extractor): no
    // cross-site "simple" form post reaches one.
    if api && request.method() == Method::POST && !body::is_json(request.headers()) {
        return ApiError::UnsupportedMediaType.into_response();
    }
    next.run(request).await
}

/// `GET /`: the page; `?token=T` trades the token for the cookie and drops it from the URL.
async fn index(State(state): State<AppState>, request: Request) -> Response {
    let params = crate::api::query(request.uri().query());
    let Some(token) = params.get("token") else {
        return page::index();
    };
    if !auth::same_secret(token, &state.config.token) {
        return ApiError::Unauthorized.into_response();
    }
    let Some(cookie) = auth::cookie(&state.config.token) else {
        return ApiError::Internal("the token cannot be a cookie".into()).into_response();
    };
    (
        StatusCode::SEE_OTHER,
        [
            (header::LOCATION, header::HeaderValue::from_static("/")),
            (header::SET_COOKIE, cookie),
            (
                header::CACHE_CONTROL,
                header::HeaderValue::from_static("no-store"),
            ),
        ],
    )
        .into_response()
}

async fn not_found(request: Request) -> Response {
    ApiError::NotFound(request.uri().path().to_owned()).into_response()
}

async fn method_not_allowed(request: Request) -> Response {
    ApiError::MethodNotAllowed(request.method().to_string()).into_response()
}
