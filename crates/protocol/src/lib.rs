//! The vocabulary shared by the session log and the model layer.
//!
//! Messages, content blocks, stream chunks, token usage and model failures are recorded in
//! the session log *and* sent to or received from models, so they live here, below both
//! `dsh-session` and `dsh-llm`, to keep the dependency graph acyclic.
//!
//! Every type serializes to the exact JSON shape the original dsh writes (camelCase fields,
//! kebab-case tags), and every "merge-extensible" union has an `Other` variant that carries
//! values this build does not know through unchanged, so logs written by newer builds or by
//! plugins stay loadable.
//!
//! [`words`] is the pattern for closed word sets (sandbox modes, approval policies, gateway
//! switches): each is declared once with [`word_enum!`] where its concept is owned.

mod failure;
mod ids;
pub mod json;
mod message;
mod request;
mod stream;
mod tagged;
pub mod words;

pub use failure::{codes, LlmFailure};
pub use ids::{CallId, MessageId, SessionId};
pub use json::RawJson;
pub use message::{
    ContentBlock, Message, MessageShape, MessageSource, Role, TokenUsage, SYSTEM_PROMPT_PLUGIN,
};
pub use request::{AdapterDefaults, EpochHeader, LlmCallConfig, ToolSchema};
pub use stream::{BlockType, FinishReason, StreamChunk};
pub use words::{UnknownWord, Word};
