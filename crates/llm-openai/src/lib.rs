//! DeepSeek / OpenAI-compatible chat-completions adapter for the dsh model layer.
//!
//! [`OpenAiAdapter`] serves one provider route ([`RouteConfig`]): it maps a harness
//! [`LlmRequest`](dsh_llm::LlmRequest) to a streaming `POST /chat/completions` body
//! ([`wire`]), parses the `text/event-stream` reply ([`sse`]) and translates it into harness
//! stream chunks ([`translate`]), classifying HTTP failures into stable codes ([`status`]).
//! [`register_routes`] puts one adapter per configured route on the
//! [`LlmRuntime`](dsh_llm::LlmRuntime), and [`OpenAiPlugin`] does so from a composition. The built-in routes are `deepseek-official`
//! (`DEEPSEEK_API_KEY`, `DEEPSEEK_BASE_URL`) and `openai-compatible` (`OPENAI_API_KEY`,
//! `OPENAI_BASE_URL`); environment lookups go through an injectable [`EnvLookup`].
//! Every request says who is calling ([`USER_AGENT`], `dsh-rs/<version>`) and which session
//! it serves (`x-deepseek-harness-session-id`); the installation's anonymous id
//! ([`OpenAiConfig::user_id`]) goes out as `x-deepseek-harness-user-id` only on the DeepSeek
//! route unless a route opts in ([`RouteConfig::send_user_id`]).
//!
//! The adapter knows nothing about agents or sessions: the loop's retry policy for failed
//! requests (`llm-retry`) is `dsh_agent_loop::RetryPlugin`, which reads the
//! [`dsh_llm::ResolvedRetryPolicy`] each route registers with.

mod adapter;
mod config;
pub mod images;
mod plugin;
pub mod sse;
pub mod status;
pub mod translate;
pub mod wire;

pub use adapter::{
    client_builder, register_routes, LazyClient, OpenAiAdapter, COMPACT_HEADER, INVALID_CONFIG,
    USER_AGENT,
};
pub use config::{
    check_base_url, Compat, EnvLookup, MaxTokensField, ModelCatalog, ModelDefaults, ModelEntry,
    OpenAiConfig, ProcessEnv, ReasoningReplay, RouteConfig, Thinking, DEEPSEEK_ROUTE,
    DEFAULT_GUESSED_CONTEXT_WINDOW, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_MAX_SSE_LINE_BYTES,
    DEFAULT_STREAM_IDLE_TIMEOUT_MS, OPENAI_COMPATIBLE_ROUTE,
};
pub use plugin::{EnvSource, OpenAiPlugin};
