//! The model layer: how the harness talks to models.
//!
//! Adapters ([`LlmAdapter`]) turn provider wire protocols into [`StreamChunk`]s; the
//! [`BlockAssembler`] folds chunks back into message content; the [`LlmRuntime`] service keeps
//! the adapter registry keyed by provider route, resolves and validates call configs
//! ([`LlmRuntime::prepare_call`]) and dispatches every request through the `llm/stream`
//! middleware chain ([`LlmStream`]), whose innermost step guarantees each call ends in exactly
//! one `finish` chunk. Retry policies ([`ResolvedRetryPolicy`]) travel with each registration.
//!
//! [`StreamChunk`]: dsh_protocol::StreamChunk

mod adapter;
mod assembler;
pub mod boundary;
mod error;
mod events;
mod plugin;
mod retry;
mod runtime;

pub use adapter::{
    ChunkStream, LlmAdapter, LlmRequest, Modality, ModelInfo, ReasoningInfo, RequestPurpose,
};
pub use assembler::{AssembleError, Assembled, BlockAssembler};
pub use error::{error_chain, normalize_failure, BoxError, LlmError};
pub use events::{AdaptersUpdated, AdaptersUpdatedPayload, LlmStream};
pub use plugin::{LlmPlugin, LlmPluginConfig};
pub use retry::{Backoff, NormalRetry, ResolvedRetryPolicy};
pub use runtime::{AdapterHandle, LlmRuntime, PreparedCall, DUPLICATE_ROUTE};
