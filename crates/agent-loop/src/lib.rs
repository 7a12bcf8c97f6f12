//! The ReAct driver: turns of steps, each one model request plus the tool calls it asked for.
//!
//! - [`ReactLoopAgent`] implements `dsh_agent::Agent` with the exact turn/step machine of the
//!   spec (synchronous turn open, wake latch, pre-step gate, in-place retry, max-tokens
//!   stickiness, typed turn-end reasons) and a model-ordered tool-call scheduler.
//! - [`AgentLoop`] (plugin [`AgentLoopPlugin`], name `agent-loop`) is the factory behind
//!   `AgentRegistry::create`/`resume`: it prepares the driver, runs the publication
//!   transaction with rollback, and owns each agent's ordered teardown.
//! - [`RetryPlugin`] (name `llm-retry`) is the loop's retry policy: an `agent/request-error`
//!   listener that re-issues retryable model failures with the serving registration's
//!   [`dsh_llm::ResolvedRetryPolicy`], logging `llm/retry` and `llm/retry-started`. It lives
//!   beside the loop, not in a model adapter, so an adapter knows nothing about agents.
//!
//! Every await of a turn is raced against the turn's abort signal, and every boundary the
//! loop opens is closed by a guard, so cancellation at any point leaves a balanced log.
//!
//! Mounting by hand (a composition does the same through the plugins):
//!
//! ```no_run
//! use std::sync::Arc;
//! use dsh_agent::{AgentOptions, AgentRegistry, CreateAgentOptions};
//! use dsh_agent_loop::{AgentLoop, AgentLoopConfig};
//! use dsh_kernel::Context;
//! use dsh_llm::LlmRuntime;
//! use dsh_prompt::{SystemPromptConfig, SystemPromptPlugin};
//! use dsh_protocol::Message;
//! use dsh_session::SessionStore;
//! use dsh_tools::ToolRuntime;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let root = Context::root();
//! root.plugin::<SystemPromptPlugin>(SystemPromptConfig::default())?;
//! root.provide(Arc::new(SessionStore::new(&root)))?.forget();
//! let llm = LlmRuntime::install(&root)?;
//! root.provide(ToolRuntime::new(&root))?.forget();
//! let agents = AgentRegistry::install(&root)?;
//! AgentLoop::install(&root.child("agent-loop")?, AgentLoopConfig::default())?;
//! // llm.register_adapter(&root, ["deepseek-official"], adapter, policy)?;
//! # let _ = llm;
//! let handle = agents
//!     .create(&root, CreateAgentOptions {
//!         agent_options: AgentOptions::new("deepseek-official", "deepseek-v4-flash"),
//!         ..Default::default()
//!     })
//!     .await?;
//! handle.agent().followup(Message::user_text("hello"))?;
//! handle.agent().when_idle().await;
//! handle.dispose().await;
//! # Ok(())
//! # }
//! ```

mod agent;
mod config;
mod driver;
mod error;
mod factory;
mod phase;
mod request;
mod retry;
mod runtime_context;
mod step;
mod teardown;
mod tool_calls;

pub use agent::ReactLoopAgent;
pub use config::{AgentLoopConfig, ConfiguredAgent, DEFAULT_MAX_PARALLEL_TOOL_CALLS};
pub use error::LoopError;
pub use factory::{AgentLoop, AgentLoopPlugin};
pub use retry::{RetryPlugin, RetryPluginConfig};
