use serde::{Deserialize, Serialize};
use std::fmt;

/// Stable failure codes used across the model layer.
///
/// Codes are open-ended strings on the wire (`HTTP_<status>` and upper-cased unknown finish
/// reasons also occur), so these are constants rather than an enum.
pub mod codes {
    pub const NO_ADAPTER: &str = "NO_ADAPTER";
    pub const INVALID_PREPARED_CALL: &str = "INVALID_PREPARED_CALL";
    pub const REGISTRATION_DISPOSED: &str = "REGISTRATION_DISPOSED";
    pub const UNSUPPORTED_REASONING_EFFORT: &str = "UNSUPPORTED_REASONING_EFFORT";
    pub const INVALID_MODEL_ID: &str = "INVALID_MODEL_ID";
    pub const INVALID_MODEL_MAX_TOKENS: &str = "INVALID_MODEL_MAX_TOKENS";
    pub const INVALID_CATALOG: &str = "INVALID_CATALOG";
    pub const CONTEXT_WINDOW_EXCEEDED: &str = "CONTEXT_WINDOW_EXCEEDED";
    pub const QUOTA: &str = "QUOTA";
    pub const EMPTY_RESPONSE: &str = "EMPTY_RESPONSE";
    pub const INVALID_CREDENTIAL: &str = "INVALID_CREDENTIAL";
    pub const AUTH: &str = "AUTH";
    pub const RATE_LIMIT: &str = "RATE_LIMIT";
    pub const SERVER: &str = "SERVER";
    pub const TIMEOUT: &str = "TIMEOUT";
    pub const TRANSPORT: &str = "TRANSPORT";
    /// The server's TLS certificate was refused (unknown issuer, expired, wrong name). Not a
    /// transport hiccup: the same server presents the same certificate to every retry, so
    /// the default retry policy leaves it out and the person sees what to fix at once.
    pub const TLS_CERTIFICATE: &str = "TLS_CERTIFICATE";
    pub const ABORTED: &str = "ABORTED";
    pub const STREAM_CLOSED: &str = "STREAM_CLOSED";
    pub const MALFORMED_RESPONSE: &str = "MALFORMED_RESPONSE";
    /// A response over one of the adapter's size limits (a line, an event, or the whole
    /// body); the rest of it was not read.
    pub const RESPONSE_TOO_LARGE: &str = "RESPONSE_TOO_LARGE";
    /// The provider reported an error inside a stream without saying what kind (no status,
    /// no `type` or `code` dsh knows).
    pub const STREAM_ERROR: &str = "STREAM_ERROR";
    pub const INVALID_REQUEST: &str = "INVALID_REQUEST";
    pub const UNSUPPORTED_CONTENT: &str = "UNSUPPORTED_CONTENT";
    pub const UNKNOWN: &str = "UNKNOWN";
}

/// The facts of one failed model call, as recorded in the log (`finish {error|aborted}`,
/// `turn/end {error}`, `llm/retry`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmFailure {
    pub message: String,
    pub code: String,
    /// HTTP status, when the failure came from an HTTP response (100..=599).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Provider's `Retry-After`, in milliseconds (> 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_retry_after_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl LlmFailure {
    /// A failure with just a message and a code.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: code.into(),
            status: None,
            provider_retry_after_ms: None,
            request_id: None,
        }
    }
}

impl fmt::Display for LlmFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}
