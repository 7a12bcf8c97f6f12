//! How a turn is interrupted: aborted (the signal fired) or failed (anything else).

use dsh_agent::Aborted;
use dsh_llm::{error_chain, LlmError};
use dsh_protocol::{codes, LlmFailure};
use std::error::Error as StdError;
use std::sync::Arc;

/// Errors the loop itself raises (as opposed to errors from the layers it calls).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoopError {
    /// The request config has no provider or no model after `agent/request`.
    #[error("the model request has no {field}; set it in the agent options or an agent/request listener")]
    MissingRoute { field: &'static str },
}

impl LoopError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::MissingRoute { .. } => "MISSING_ROUTE",
        }
    }
}

/// A non-abort failure with the facts logged in `turn/end {error}`.
#[derive(Clone)]
pub(crate) struct Failure {
    pub(crate) failure: LlmFailure,
    pub(crate) error: Arc<dyn StdError + Send + Sync>,
}

/// Why the turn body stopped early.
pub(crate) enum Interrupt {
    Aborted,
    Failed(Failure),
}

impl From<Aborted> for Interrupt {
    fn from(_: Aborted) -> Self {
        Interrupt::Aborted
    }
}

/// `failure(e)` of the spec: an `LlmError`'s own facts, else `UNKNOWN` with the cause chain.
pub(crate) fn fail(error: impl Into<Box<dyn StdError + Send + Sync>>) -> Interrupt {
    let error: Box<dyn StdError + Send + Sync> = error.into();
    let failure = match error.downcast_ref::<LlmError>() {
        Some(llm) => llm.failure.clone(),
        None => LlmFailure::new(codes::UNKNOWN, error_chain(error.as_ref())),
    };
    Interrupt::Failed(Failure {
        failure,
        error: Arc::from(error),
    })
}

/// Same as [`fail`], for results.
pub(crate) trait OrFail<T> {
    fn or_fail(self) -> Result<T, Interrupt>;
}

impl<T, E: Into<Box<dyn StdError + Send + Sync>>> OrFail<T> for Result<T, E> {
    fn or_fail(self) -> Result<T, Interrupt> {
        self.map_err(fail)
    }
}
