//! The seam between the harness and a model provider.

use crate::error::LlmError;
use dsh_protocol::{LlmCallConfig, Message, SessionId, StreamChunk, ToolSchema};
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A model's reply as it streams in. After the runtime's adapter boundary every item is `Ok`
/// and the last one is a `finish` chunk; middleware may still yield errors of its own.
pub type ChunkStream = BoxStream<'static, Result<StreamChunk, LlmError>>;

/// One model request: the call configuration plus everything the model is shown.
#[derive(Clone, Debug)]
pub struct LlmRequest {
    pub config: LlmCallConfig,
    pub messages: Vec<Arc<Message>>,
    /// Shared with the request header it came from (see [`dsh_protocol::EpochHeader`]).
    pub system: Option<Arc<str>>,
    pub tools: Option<Vec<ToolSchema>>,
    pub session_id: Option<SessionId>,
    /// Why the request is made. Not part of the model input: an adapter may tell its provider
    /// (DeepSeek's route sends `x-deepseek-harness-compact: 1` for a compaction).
    pub purpose: RequestPurpose,
    /// Cancelled when the caller gives up; adapters stop and drop their connection.
    pub cancel: CancellationToken,
}

dsh_protocol::word_enum! {
    /// What a model request is for.
    #[derive(Default)]
    pub enum RequestPurpose {
        /// A step of an agent turn (the loop's requests).
        #[default]
        Step = "step",
        /// A session title.
        Title = "title",
        /// A compaction summary of earlier history.
        Compaction = "compaction",
    }
}

impl LlmRequest {
    /// A request with `config` and `messages` and nothing else.
    pub fn new(config: LlmCallConfig, messages: Vec<Arc<Message>>) -> Self {
        Self {
            config,
            messages,
            system: None,
            tools: None,
            session_id: None,
            purpose: RequestPurpose::Step,
            cancel: CancellationToken::new(),
        }
    }
}

dsh_protocol::word_enum! {
    /// A kind of input a model accepts (the words of a model entry's `input` list).
    pub enum Modality {
        Text = "text",
        Image = "image",
    }
}

dsh_protocol::word_enum! {
    /// Where a model's context window figure comes from, so a surface can say how far to
    /// trust it (the TUI marks a guessed window).
    pub enum ContextWindowSource {
        /// Published for this model (a built-in catalogue entry or provider default).
        Known = "known",
        /// Written in the settings for this deployment.
        Configured = "configured",
        /// A conservative default for a model nothing describes.
        Guessed = "guessed",
    }
}

/// The reasoning efforts a model accepts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningInfo {
    /// Accepted effort names (`off`, `low`, `high`, `max`, ...), in the provider's order.
    pub efforts: Vec<String>,
    /// The effort used when a request names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_effort: Option<String>,
}

/// What an adapter knows about one model, used to fill in and validate call configs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    /// Tokens of context the model accepts, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Where `context_window` comes from; `None` when the window is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window_source: Option<ContextWindowSource>,
    /// Output cap used when a request sets none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_max_tokens: Option<u64>,
    /// The largest output cap the model accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// `None` for models without reasoning controls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningInfo>,
    pub input_modalities: Vec<Modality>,
}

impl Default for ModelInfo {
    fn default() -> Self {
        Self {
            context_window: None,
            context_window_source: None,
            default_max_tokens: None,
            max_output_tokens: None,
            reasoning: None,
            input_modalities: vec![Modality::Text],
        }
    }
}

impl ModelInfo {
    /// Whether the context window is a default guess rather than a known or configured
    /// figure.
    pub fn context_window_guessed(&self) -> bool {
        self.context_window_source == Some(ContextWindowSource::Guessed)
    }

    /// Whether the model accepts image input.
    pub fn accepts_images(&self) -> bool {
        self.input_modalities.contains(&Modality::Image)
    }
}

/// A model provider, registered on the [`LlmRuntime`](crate::LlmRuntime) under one or more
/// provider routes.
///
/// Adapters may fail with an `Err` from [`stream`](Self::stream) or mid-stream; the runtime
/// turns either into a terminal `finish` chunk, so the log always records how a call ended.
pub trait LlmAdapter: Send + Sync + 'static {
    /// Starts one model call.
    fn stream(&self, request: Arc<LlmRequest>) -> BoxFuture<'_, Result<ChunkStream, LlmError>>;

    /// Exact facts about the model a config names (`INVALID_MODEL_ID` when unknown).
    fn resolve_model<'a>(
        &'a self,
        config: &'a LlmCallConfig,
    ) -> BoxFuture<'a, Result<ModelInfo, LlmError>>;
}
