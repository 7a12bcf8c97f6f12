//! The model layer's error type and helpers to render and normalize failures.

use dsh_protocol::{codes, LlmFailure};
use std::error::Error as StdError;
use std::fmt;

/// A boxed error that can cross tasks (the kernel's one alias).
pub use dsh_kernel::BoxError;

/// A failed model-layer operation, carrying the [`LlmFailure`] facts that get logged.
///
/// The failure's `code` is open-ended (`HTTP_<status>`, upper-cased finish reasons), which is
/// why it is a string inside the failure rather than an enum variant here.
#[derive(thiserror::Error)]
pub struct LlmError {
    pub failure: LlmFailure,
    /// What caused this, when it came from another error (kept for [`error_chain`]).
    #[source]
    pub source: Option<BoxError>,
}

impl LlmError {
    /// An error with `code` and `message`.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            failure: LlmFailure::new(code, message),
            source: None,
        }
    }

    /// An error carrying `failure` as is.
    pub fn from_failure(failure: LlmFailure) -> Self {
        Self {
            failure,
            source: None,
        }
    }

    /// Attaches the error that caused this one.
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The failure code (`NO_ADAPTER`, `RATE_LIMIT`, `HTTP_418`, ...).
    pub fn code(&self) -> &str {
        &self.failure.code
    }

    /// True for the cancellation code.
    pub fn is_aborted(&self) -> bool {
        self.failure.code == codes::ABORTED
    }

    /// Turns any boxed error into an `LlmError`.
    ///
    /// An `LlmError` inside is trusted as is (its failure already has a code); anything else
    /// becomes `UNKNOWN` with its rendered cause chain as the message, and is kept as the source.
    pub fn from_boxed(error: BoxError) -> Self {
        match error.downcast::<LlmError>() {
            Ok(llm) => *llm,
            Err(other) => {
                let message = error_chain(other.as_ref());
                Self::new(codes::UNKNOWN, message).with_source(other)
            }
        }
    }
}

impl fmt::Display for LlmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.failure.message)
    }
}

impl fmt::Debug for LlmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("LlmError");
        debug.field("failure", &self.failure);
        if let Some(source) = &self.source {
            // Render the chain rather than the source's own Debug: the chain is what a
            // person reads, and it keeps foreign Debug impls out of our output.
            debug.field("source", &error_chain(source.as_ref()));
        }
        debug.finish()
    }
}

/// Makes an adapter-reported failure safe to log: a code is always present, an HTTP status is
/// kept only inside 100..=599 and a retry hint only when positive.
pub fn normalize_failure(mut failure: LlmFailure) -> LlmFailure {
    if failure.code.trim().is_empty() {
        failure.code = codes::UNKNOWN.to_string();
    }
    if failure.message.is_empty() {
        failure.message = failure.code.clone();
    }
    failure.status = failure.status.filter(|s| (100..=599).contains(s));
    failure.provider_retry_after_ms = failure.provider_retry_after_ms.filter(|ms| *ms > 0);
    failure
}

/// Renders an error and its causes as `outer: cause: root`.
///
/// Wrapper errors often repeat their cause's text in their own message (`"request failed:
/// connection refused"` over `"connection refused"`); a cause whose text is already part of
/// the text rendered so far is skipped so the line says everything once.
pub fn error_chain(error: &(dyn StdError + 'static)) -> String {
    let mut out = error.to_string();
    let mut current = error.source();
    while let Some(cause) = current {
        let text = cause.to_string();
        if !text.is_empty() && !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
        current = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{text}")]
    struct Layer {
        text: String,
        #[source]
        inner: Option<Box<Layer>>,
    }

    fn layers(texts: &[&str]) -> Layer {
        let mut inner: Option<Box<Layer>> = None;
        for text in texts.iter().rev() {
            inner = Some(Box::new(Layer {
                text: text.to_string(),
                inner,
            }));
        }
        match inner {
            Some(layer) => *layer,
            None => Layer {
                text: String::new(),
                inner: None,
            },
        }
    }

    #[test]
    fn chain_joins_causes_and_skips_repeated_wrapper_text() {
        let plain = layers(&["request failed", "connect error", "connection refused"]);
        assert_eq!(
            error_chain(&plain),
            "request failed: connect error: connection refused"
        );
        let repeating = layers(&["send: connection refused", "connection refused"]);
        assert_eq!(error_chain(&repeating), "send: connection refused");
    }

    #[test]
    fn boxed_llm_errors_are_trusted_and_others_become_unknown() {
        let llm: BoxError = Box::new(LlmError::new(codes::RATE_LIMIT, "slow down"));
        let back = LlmError::from_boxed(llm);
        assert_eq!(
            back.failure,
            LlmFailure::new(codes::RATE_LIMIT, "slow down")
        );

        let other: BoxError = Box::new(layers(&["outer", "inner"]));
        let back = LlmError::from_boxed(other);
        assert_eq!(
            back.failure,
            LlmFailure::new(codes::UNKNOWN, "outer: inner")
        );
        assert_eq!(error_chain(&back), "outer: inner");
    }

    #[test]
    fn failures_are_normalized() {
        let raw = LlmFailure {
            message: String::new(),
            code: " ".into(),
            status: Some(42),
            provider_retry_after_ms: Some(0),
            request_id: Some("r".into()),
        };
        let expected = LlmFailure {
            message: "UNKNOWN".into(),
            code: "UNKNOWN".into(),
            status: None,
            provider_retry_after_ms: None,
            request_id: Some("r".into()),
        };
        assert_eq!(normalize_failure(raw), expected);
    }

    #[test]
    fn code_and_display() {
        let err = LlmError::new("HTTP_418", "teapot");
        assert_eq!(err.code(), "HTTP_418");
        assert_eq!(err.to_string(), "teapot");
        assert!(!err.is_aborted());
        assert!(LlmError::new(codes::ABORTED, "x").is_aborted());
    }
}
