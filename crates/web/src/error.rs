//! [`ApiError`]: every refusal and failure as an HTTP status plus
//! `{"error":{"code","message"}}` with a stable code (docs/web-api.md "Errors").

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Why a request was not served.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("a valid token is required: open the URL `dsh web` printed, or send Authorization: Bearer <token>")]
    Unauthorized,
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("no such route: {0}")]
    NotFound(String),
    #[error("no session has the id {0}")]
    SessionNotFound(String),
    #[error("no open approval {0} on this session (answered, withdrawn or never asked)")]
    ApprovalNotFound(String),
    #[error("no open question {0} on this session (answered, withdrawn or never asked)")]
    QuestionNotFound(String),
    #[error("this route does not take {0}")]
    MethodNotAllowed(String),
    #[error("the session is running; wait for its turn to end or cancel it first")]
    SessionBusy,
    #[error("{0}")]
    GoalRefused(String),
    #[error("the body is over the {0}-byte cap")]
    BodyTooLarge(usize),
    #[error("the body must be JSON with Content-Type: application/json")]
    UnsupportedMediaType,
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    Internal(String),
    #[error("{0}")]
    WorkspaceBoot(String),
}

impl ApiError {
    /// The stable code in the body.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadRequest(_) => "bad_request",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden(_) => "forbidden",
            Self::NotFound(_) => "not_found",
            Self::SessionNotFound(_) => "session_not_found",
            Self::ApprovalNotFound(_) => "approval_not_found",
            Self::QuestionNotFound(_) => "question_not_found",
            Self::MethodNotAllowed(_) => "method_not_allowed",
            Self::SessionBusy => "session_busy",
            Self::GoalRefused(_) => "goal_refused",
            Self::BodyTooLarge(_) => "body_too_large",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::Unsupported(_) => "unsupported",
            Self::Internal(_) => "internal",
            Self::WorkspaceBoot(_) => "workspace_boot_failed",
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_)
            | Self::SessionNotFound(_)
            | Self::ApprovalNotFound(_)
            | Self::QuestionNotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            Self::SessionBusy | Self::GoalRefused(_) => StatusCode::CONFLICT,
            Self::BodyTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Unsupported(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::WorkspaceBoot(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

impl From<dsh_acp::HostError> for ApiError {
    fn from(error: dsh_acp::HostError) -> Self {
        match error {
            dsh_acp::HostError::NotFound(id) => Self::SessionNotFound(id),
            dsh_acp::HostError::Boot(why) => Self::WorkspaceBoot(why),
            dsh_acp::HostError::Agent(why) => Self::Internal(why),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({ "error": { "code": self.code(), "message": self.to_string() } });
        let mut response = (
            self.status(),
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response();
        if matches!(self, Self::Unauthorized) {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}
